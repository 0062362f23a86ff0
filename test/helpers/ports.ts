/** A port that was free on 127.0.0.1 a moment ago (the supervisor's own helper). */
export { freePort } from '../../supervisor/pm2/free-port.js';
