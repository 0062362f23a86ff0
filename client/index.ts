export { connect, type ConnectOptions, type Fleet, type OperationOptions } from './fleet-client.js';
