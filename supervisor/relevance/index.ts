/**
 * Relevance: each agent's score from the context the application sends, from rules, a module, the agent
 * itself or its queue's work.
 */
export {
  type AskAgent,
  RelevanceEvaluator,
  type RelevanceModule,
  type RelevanceModuleInput,
  type Score,
  type ScoreSource,
} from './relevance-evaluator.js';
export { type WorkerState, WorkScores } from './work-scores.js';
