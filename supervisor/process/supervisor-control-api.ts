import type { NatsConnection } from '@nats-io/transport-node';

import { ErrorCode, ThymosError } from '../../shared/errors/index.js';
import { type Logger } from '../../shared/platform/index.js';
import { type FleetNames, type FleetStatus, SupervisorRequestSchemas, SupervisorResultSchemas } from '../../shared/protocol/index.js';
import { type AgentEndpoints } from '../api/agent-endpoints.js';
import { type ApprovalBook } from '../api/approval-book.js';
import { type AuditLog } from '../api/audit-log.js';
import { ControlApi, type Requester } from '../api/control-api.js';
import { type FleetController } from '../reconcile/fleet-controller.js';
import type { JobQueues } from './job-queues.js';

const APPROVALS_PAGE_MAX_BYTES = 512 * 1024;
/** nats-server's `max_payload` when it says none. */
const DEFAULT_MAX_PAYLOAD = 1024 * 1024;

/** The control actions written to the audit log, with who asked. */
const AUDITED: ReadonlySet<string> = new Set([
  'reconcile',
  'start',
  'stop',
  'archive',
  'restore',
  'stop_all',
  'approve',
  'refuse',
  'agent_endpoint',
  'agent_access',
  'jobs_requeue',
]);

/** The supervisor's control API on `<fleet>.supervisor.<op>`: each op handed to the controller, control actions audited. */
export function supervisorControlApi(
  nc: NatsConnection,
  names: FleetNames,
  services: { controller: FleetController; approvals: ApprovalBook; endpoints: AgentEndpoints; jobs: JobQueues },
  audit: AuditLog,
  supervisor: () => FleetStatus['supervisor'],
  logger: Logger,
  placement?: (id: string) => { host: string; token: number } | undefined,
): ControlApi<typeof SupervisorRequestSchemas, typeof SupervisorResultSchemas> {
  const { controller, approvals, endpoints, jobs } = services;
  return new ControlApi(
    nc,
    {
      schemas: SupervisorRequestSchemas,
      results: SupervisorResultSchemas,
      subject: (op) => names.supervisor(op),
      // An agent's own calls come on its own subjects, so who asks is known, not claimed.
      agents: {
        subject: (id, op) => names.agentSupervisor(id, op),
        ops: new Set(['ping', 'call_pending', 'agent_endpoint', 'job_give_up']),
        only: new Set(['call_pending', 'agent_endpoint', 'job_give_up']),
      },
      // Decisions only on the approver's subjects: an identity apart from whoever calls agents' tools (the client, the agents).
      approver: {
        subject: (op) => names.approver(op),
        ops: new Set(['ping', 'approvals', 'approve', 'refuse']),
        only: new Set(['approve', 'refuse']),
      },
      contextOp: 'reconcile',
      audit: {
        log: audit,
        ops: AUDITED,
        only: { agent_endpoint: (r) => (r as { wake?: boolean }).wake === true },
        details: { agent_endpoint: (r) => ({ tool: (r as { tool?: unknown }).tool }) },
      },
      handlers: {
        reconcile: (r, onProgress) =>
          controller.reconcile(r.context, { dryRun: r.dry_run, strict: r.strict, returnAfterWakes: r.return_after_wakes, onProgress }),
        ping: async () => ({ pid: process.pid, started_at: supervisor().started_at, host: supervisor().host }),
        status: async () => {
          const fleet = await controller.status();
          const agents = placement ? fleet.agents.map((a) => ({ ...a, placement: placement(a.id) ?? null })) : fleet.agents;
          return { supervisor: supervisor(), ...fleet, agents };
        },
        start: (r, progress) => controller.operate('start', r.id, { mode: r.mode, onProgress: progress, settled: true }),
        stop: (r, progress) => controller.operate('stop', r.id, { onProgress: progress, settled: true }),
        archive: (r, progress) => controller.operate('archive', r.id, { onProgress: progress, settled: true }),
        restore: (r, progress) => controller.operate('restore', r.id, { onProgress: progress, settled: true }),
        // The fleet going down: the work relevance wakes no worker once they are stopped.
        stop_all: async (r, progress) => {
          // Asked of one host's supervisor (thymos down there): another host's, answering under placement by lease, refuses.
          if (r.host !== undefined && r.host !== supervisor().host)
            throw new ThymosError(
              ErrorCode.NOT_OWNER,
              `stop_all was asked of host ${r.host}'s supervisor; host ${supervisor().host} answered`,
            );
          await jobs.work?.stop();
          return controller.stopAll({ onProgress: progress });
        },
        history: (r) => controller.history(r.id, r.limit),
        call_pending: async (r, _progress, by) => ({ decision: await approvals.submit(ownCall(r.call, by)) }),
        approvals: async (r) => approvals.page(r.id, r.after, approvalsPageBytes(nc)),
        approve: (r, _progress, by) => approvals.decide(r.id, r.call_id, true, by, r.reason, r.done),
        refuse: (r, _progress, by) => approvals.decide(r.id, r.call_id, false, by, r.reason),
        agent_access: async (r) => endpoints.access(r.id, r.token),
        agent_endpoint: (r, progress, by) => endpoints.resolve({ ...r, from: by.agent! }, progress),
        jobs: (r) => jobs.backlog(r.queue),
        jobs_dead: (r) => jobs.dead(r.limit, r.queue),
        jobs_requeue: (r) => jobs.requeue(r.seq),
        job_give_up: (r, _progress, by) => jobs.giveUp(by.agent!, r),
      },
    },
    logger,
  );
}

/** The most one page of `approvals` holds: 512 KiB, and half what the server takes in one message (`max_payload`), so the reply always fits. */
function approvalsPageBytes(nc: NatsConnection): number {
  return Math.min(APPROVALS_PAGE_MAX_BYTES, Math.floor((nc.info?.max_payload ?? DEFAULT_MAX_PAYLOAD) / 2));
}

/** A call an agent submits for approval: its own only (`agent` is the one whose subject it came on). */
export function ownCall<C extends { agent: string }>(call: C, by: Requester): C {
  if (call.agent !== by.agent)
    throw new ThymosError(ErrorCode.UNAUTHORIZED, `call.agent: ${by.who} may submit its own calls for approval, not ${call.agent}'s`, {
      location: { path: 'call.agent' },
    });
  return call;
}
