import { z } from 'zod';

/** A duration in ms between `min` and `max`, `fallback` when absent. */
export const ms = (min: number, max: number, fallback: number) => z.number().int().min(min).max(max).default(fallback);
/** A fraction 0..1, `fallback` when absent. */
export const unit = (fallback: number) => z.number().min(0).max(1).default(fallback);
