/**
 * The public types of `thymos` and `thymos/client`, pinned. `npm run typecheck` compiles
 * this file against the built declarations through package.json's `exports` (the package
 * imports itself by name, as a user's code does), so an export that goes, or a signature
 * that changes, fails the type check here first. Change this file with the API, on purpose.
 */
import type { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { expectTypeOf } from 'expect-type';
import type * as Root from 'thymos';
import type * as Agent from 'thymos/agent';
import type * as ClientEntry from 'thymos/client';
import type * as Supervisor from 'thymos/supervisor';

type Values<M> = {
  [K in keyof M]: M[K] extends abstract new (...args: never[]) => unknown
    ? K
    : M[K] extends (...args: never[]) => unknown
      ? K
      : M[K] extends object
        ? K
        : never;
}[keyof M];

// thymos/client: its values, by name.
expectTypeOf<Values<typeof ClientEntry>>().toEqualTypeOf<
  | 'connect'
  | 'approver'
  | 'loadConfig'
  | 'loadDomainSchema'
  | 'ErrorCode'
  | 'isThymosError'
  | 'ThymosError'
  | 'ExitCode'
  | 'exitCodeFor'
  | 'exitWithError'
  | 'WorldClient'
  | 'EventDecisionSchema'
  | 'ReconcileContextSchema'
  | 'FleetStatusSchema'
  | 'ReconcileReportSchema'
>();

// connect and the fleet it returns.
expectTypeOf<typeof ClientEntry.connect>().toEqualTypeOf<
  (config: ClientEntry.ThymosConfig | string, options?: ClientEntry.ConnectOptions) => Promise<ClientEntry.Fleet>
>();
expectTypeOf<ClientEntry.ConnectOptions>().toEqualTypeOf<{ connectTimeoutMs?: number }>();
type Fleet = ClientEntry.Fleet;
expectTypeOf<keyof Fleet>().toEqualTypeOf<
  | 'reconcile'
  | 'status'
  | 'start'
  | 'stop'
  | 'archive'
  | 'restore'
  | 'publish'
  | 'world'
  | 'history'
  | 'decisions'
  | 'approvals'
  | 'agent'
  | 'agentUrl'
  | 'agentAuthorization'
  | 'talk'
  | 'jobs'
  | 'close'
>();
expectTypeOf<keyof ClientEntry.Jobs>().toEqualTypeOf<'publish' | 'list' | 'dead' | 'requeue'>();
expectTypeOf<ClientEntry.Jobs['requeue']>().toEqualTypeOf<
  (seq: number) => Promise<{ id: string; queue: string; skill: string; seq: number }>
>();
expectTypeOf<ClientEntry.ListedDeadLetter['reason']>().toEqualTypeOf<{ code: string; message: string }>();
expectTypeOf<ClientEntry.Jobs['publish']>().toEqualTypeOf<
  (queue: string, skill: string, payload: unknown, options?: { id?: string }) => Promise<{ id: string; seq: number; duplicate: boolean }>
>();
expectTypeOf<ClientEntry.Jobs['list']>().toEqualTypeOf<(queue?: string) => Promise<ClientEntry.SkillBacklog[]>>();
expectTypeOf<Fleet['talk']>().toEqualTypeOf<
  (id: string, message: string, options?: ClientEntry.TalkOptions) => Promise<ClientEntry.TalkAnswer>
>();
expectTypeOf<ClientEntry.TalkOptions>().toEqualTypeOf<{
  speaker?: string;
  onText?: (piece: string) => void;
  signal?: AbortSignal;
  timeoutMs?: number;
}>();
expectTypeOf<ClientEntry.TalkAnswer['text']>().toEqualTypeOf<string>();
expectTypeOf<Fleet['approvals']>().toEqualTypeOf<(id?: string) => Promise<ClientEntry.PendingCall[]>>();
// Deciding is the approver's, with a key of its own: not the client's.
expectTypeOf<typeof ClientEntry.approver>().toEqualTypeOf<
  (config: ClientEntry.ThymosConfig | string, options?: ClientEntry.ConnectOptions) => Promise<ClientEntry.Approver>
>();
expectTypeOf<keyof ClientEntry.Approver>().toEqualTypeOf<'approvals' | 'approve' | 'refuse' | 'close'>();
expectTypeOf<ClientEntry.Approver['approvals']>().toEqualTypeOf<Fleet['approvals']>();
expectTypeOf<ClientEntry.Approver['approve']>().toEqualTypeOf<
  (id: string, callId: string, options: { reason: string; done?: boolean }) => Promise<ClientEntry.CallDecisionReport>
>();
expectTypeOf<ClientEntry.Approver['refuse']>().toEqualTypeOf<
  (id: string, callId: string, options: { reason: string }) => Promise<ClientEntry.CallDecisionReport>
>();
expectTypeOf<Fleet['reconcile']>().toEqualTypeOf<
  (
    context: ClientEntry.ReconcileContextInput,
    options?: ClientEntry.OperationOptions & { dryRun?: boolean; strict?: boolean; returnAfterWakes?: boolean },
  ) => Promise<ClientEntry.ReconcileReport>
>();
expectTypeOf<Fleet['status']>().toEqualTypeOf<() => Promise<ClientEntry.FleetStatus>>();
expectTypeOf<Fleet['start']>().toEqualTypeOf<
  (id: string, options?: ClientEntry.OperationOptions & { mode?: ClientEntry.AgentMode }) => Promise<ClientEntry.ReconcileReport>
>();
expectTypeOf<Fleet['stop']>().toEqualTypeOf<(id: string, options?: ClientEntry.OperationOptions) => Promise<ClientEntry.ReconcileReport>>();
expectTypeOf<Fleet['archive']>().toEqualTypeOf<Fleet['stop']>();
expectTypeOf<Fleet['restore']>().toEqualTypeOf<Fleet['stop']>();
expectTypeOf<Fleet['publish']>().toEqualTypeOf<
  (event: ClientEntry.WorldEventInput) => Promise<{ id: string; seq: number; duplicate: boolean }>
>();
expectTypeOf<Fleet['world']>().toEqualTypeOf<ClientEntry.WorldClient>();
expectTypeOf<Fleet['history']>().toEqualTypeOf<(id: string, limit?: number) => Promise<ClientEntry.TransitionRecord[]>>();
expectTypeOf<Fleet['decisions']>().toEqualTypeOf<
  (onDecision: (decision: ClientEntry.EventDecision) => void, options?: { agent?: string }) => { close(): void }
>();
expectTypeOf<Fleet['agent']>().toEqualTypeOf<(id: string) => Promise<ClientEntry.AgentClient>>();
expectTypeOf<ClientEntry.AgentClient>().toEqualTypeOf<Client>();
expectTypeOf<typeof ClientEntry.loadDomainSchema>().returns.toEqualTypeOf<Promise<ClientEntry.DomainSchema>>();
expectTypeOf<ClientEntry.DomainSchema['agents'][string]>().toEqualTypeOf<ClientEntry.AgentDefinition>();
expectTypeOf<Fleet['agentUrl']>().toEqualTypeOf<(id: string) => Promise<{ url: string; port: number; pid: number | null }>>();
expectTypeOf<Fleet['agentAuthorization']>().toEqualTypeOf<(id: string) => Promise<string | null>>();
expectTypeOf<ClientEntry.OperationOptions>().toEqualTypeOf<{ onProgress?: (p: ClientEntry.ProgressMessage) => void }>();

// What the calls carry.
expectTypeOf<ClientEntry.ReconcileReport>().toEqualTypeOf<{
  started: string[];
  stopped: string[];
  upgraded: string[];
  downgraded: string[];
  archived: string[];
  restored: string[];
  unchanged: string[];
  failed: Array<{ id: string; code: string; message: string }>;
  warnings?: string[] | undefined;
  dry_run: boolean;
  duration_ms: number;
  pending?: string[] | undefined;
  settled?:
    | { stopped: string[]; downgraded: string[]; archived: string[]; failed: Array<{ id: string; code: string; message: string }> }
    | undefined;
}>();
expectTypeOf<ClientEntry.LifecycleState>().toEqualTypeOf<'active' | 'listening' | 'dormant' | 'archived'>();
expectTypeOf<ClientEntry.AgentStatusRow['state']>().toEqualTypeOf<ClientEntry.LifecycleState>();
expectTypeOf<keyof ClientEntry.AgentState>().toEqualTypeOf<
  | 'id'
  | 'name'
  | 'defined'
  | 'mode'
  | 'status'
  | 'pid'
  | 'port'
  | 'started_at'
  | 'nats'
  | 'memory_count'
  | 'conversations'
  | 'last_snapshot_at'
  | 'llm'
  | 'disposition'
>();
expectTypeOf<ClientEntry.AgentMode>().toEqualTypeOf<'active' | 'passive'>();
expectTypeOf<keyof ClientEntry.FleetStatus>().toEqualTypeOf<'supervisor' | 'counts' | 'agents'>();
expectTypeOf<keyof ClientEntry.WorldClient>().toEqualTypeOf<
  'tables' | 'get' | 'set' | 'patch' | 'delete' | 'query' | 'subscribe' | 'close'
>();
expectTypeOf<ClientEntry.WorldClient['subscribe']>().toEqualTypeOf<
  (
    filter: ClientEntry.WorldFilterInput,
    onChange: (change: ClientEntry.WorldChange) => void,
    options?: { key?: string },
  ) => Promise<ClientEntry.WorldSubscription>
>();

// Errors and how a program ends on one.
expectTypeOf<ClientEntry.ThymosError['code']>().toEqualTypeOf<ClientEntry.ErrorCode>();
expectTypeOf<typeof ClientEntry.isThymosError>().toEqualTypeOf<
  (err: unknown, code?: ClientEntry.ErrorCode) => err is ClientEntry.ThymosError
>();
expectTypeOf<typeof ClientEntry.exitWithError>().toEqualTypeOf<(err: unknown) => never>();
expectTypeOf<typeof ClientEntry.exitCodeFor>().returns.toEqualTypeOf<0 | 1 | 2 | 3 | 4 | 5>();
expectTypeOf<typeof ClientEntry.ExitCode>().toEqualTypeOf<{
  readonly OK: 0;
  readonly FAILURE: 1;
  readonly BAD_INPUT: 2;
  readonly CONFLICT: 3;
  readonly MISSING_PROGRAM: 4;
  readonly FENCED: 5;
}>();

// thymos: everything the client has, the same declarations, and the rest of today's exports.
expectTypeOf<typeof Root.connect>().toEqualTypeOf<typeof ClientEntry.connect>();
expectTypeOf<Root.Fleet>().toEqualTypeOf<ClientEntry.Fleet>();
expectTypeOf<Root.ThymosError>().toEqualTypeOf<ClientEntry.ThymosError>();
expectTypeOf<Values<typeof ClientEntry>>().toMatchTypeOf<Values<typeof Root>>();
expectTypeOf<Values<typeof Root>>().toEqualTypeOf<
  | Values<typeof ClientEntry>
  | 'AgentMemory'
  | 'agentResourceUris'
  | 'DialogueBehavior'
  | 'generateStructured'
  | 'OfflineProvider'
  | 'OpenAiCompatibleProvider'
  | 'runAgentProcess'
  | 'AgentControlReplySchema'
  | 'AgentControlRequestSchema'
  | 'AgentStateSchema'
  | 'AgentStatusMessageSchema'
  | 'configFromObject'
  | 'DEFAULT_FLEET_NAMES'
  | 'DomainSchemaSchema'
  | 'FleetNames'
  | 'ThymosConfigSchema'
  | 'unreadableByDomain'
  | 'downFleet'
  | 'upFleet'
>();
expectTypeOf<typeof Root.unreadableByDomain>().toEqualTypeOf<(config: Root.ThymosConfig) => string[]>();
expectTypeOf<typeof Root.upFleet>().toEqualTypeOf<typeof Supervisor.upFleet>();
expectTypeOf<typeof Root.upFleet>().parameters.toEqualTypeOf<[config: Root.ThymosConfig, options?: Root.LaunchOptions]>();
expectTypeOf<typeof Root.upFleet>().returns.toEqualTypeOf<Promise<Root.UpResult>>();
expectTypeOf<Root.UpResult>().toEqualTypeOf<{ alreadyRunning: boolean; natsUrl: string; supervisorPid: number | null; pm2Home: string }>();
expectTypeOf<typeof Root.runAgentProcess>().toEqualTypeOf<typeof Agent.runAgentProcess>();
expectTypeOf<typeof Supervisor.ensureNatsServer>().returns.toEqualTypeOf<Promise<{ path: string; installed: boolean }>>();
