import type { AgentDefinition, NamedSearchStrategy } from '../../shared/domain/index.js';
import type { Logger } from '../../shared/platform/index.js';
import type { AgentMode } from '../../shared/protocol/index.js';
import type { ConceptTracker } from '../concepts/concept-tracker.js';
import type { MemoryConsolidator } from '../consolidation/memory-consolidator.js';
import type { AgentModels } from '../llm/agent-models.js';
import type { AgentMemory } from '../memory/agent-memory.js';
import type { MemoryStore } from '../memory/memory-store.js';
import type { AgentBehavior } from './agent-behavior.js';

/** What an agent's runtime is made with. */
export interface AgentRuntimeOptions {
  id: string;
  definition: AgentDefinition;
  defined: boolean;
  mode: AgentMode;
  port: number;
  memory: AgentMemory;
  store: MemoryStore;
  behavior: AgentBehavior;
  logger: Logger;
  /** The agent's concepts, when `[memory] concepts` is on. */
  concepts?: ConceptTracker | undefined;
  consolidator?: MemoryConsolidator | undefined;
  /** The domain's named search strategies. */
  searchStrategies?: Readonly<Record<string, NamedSearchStrategy>>;
  /** Consolidate what is new when the agent goes from active to listening. @default false */
  consolidateOnPassivate?: boolean;
  /** The models of dialogue, reasoning, … (offline when unset). */
  models: AgentModels;
  /** Think and decide about each world event heard live while active. @default false */
  reasonOnEvents?: boolean;
}
