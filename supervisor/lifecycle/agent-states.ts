import type { LifecycleState } from '../../shared/domain/index.js';

/** Order of the states from least to most running. */
export const STATE_RANK: Readonly<Record<LifecycleState, number>> = Object.freeze({ archived: 0, dormant: 1, listening: 2, active: 3 });

/** Active and Listening agents have a process. */
export const RUNNING = (s: LifecycleState): boolean => s === 'active' || s === 'listening';
