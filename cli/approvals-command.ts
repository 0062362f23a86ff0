import { approver } from '../client/approver.js';
import { connect } from '../client/fleet-client.js';
import { ErrorCode, ExitCode, ThymosError } from '../shared/errors/index.js';
import { commandNamed, usageLine } from './command-book.js';
import { parseFleetArgs, parseId } from './fleet-args.js';
import { renderTable } from './table.js';

const out = (text: string) => process.stdout.write(`${text}\n`);

/**
 * Text a caller chose, made safe to show a person deciding on it: control characters (which
 * could move the cursor and redraw the table), invisible and direction-changing characters are
 * shown as `\u{…}` escapes. Arguments are shown whole, never cut.
 */
export function printable(text: string): string {
  return text.replace(
    // eslint-disable-next-line no-control-regex -- control characters are what it finds
    /[\u0000-\u001f\u007f-\u009f\u00ad\u061c\u180e\u200b-\u200f\u2028-\u202e\u2060-\u206f\ufeff\ufff9-\ufffb]/gu,
    (c) => `\\u{${c.codePointAt(0)!.toString(16)}}`,
  );
}

/** `thymos approvals [ID]`: the tool calls that wait for a person's approval. */
export async function runApprovalsCommand(argv: string[]): Promise<number> {
  const spec = commandNamed('approvals')!;
  const args = parseFleetArgs(argv, spec, { min: 0, max: 1 });
  const id = args.positionals[0] === undefined ? undefined : parseId(args.positionals[0], usageLine(spec));
  const fleet = await connect(args.config);
  try {
    const pending = await fleet.approvals(id);
    if (args.json) out(JSON.stringify(pending, null, 2));
    else if (pending.length === 0) out(id ? `no call of ${id} waits for approval` : 'no call waits for approval');
    else
      out(
        renderTable(
          ['AGENT', 'CALL', 'TOOL', 'ARGUMENTS', 'REASON', 'CALLER', 'EXPIRES', 'INTERRUPTED'],
          pending.map((p) => [
            p.agent,
            p.call_id,
            p.tool,
            printable(JSON.stringify(p.arguments)),
            printable(p.reason ?? ''),
            printable(p.caller),
            p.expires_at,
            p.interrupted_at ?? '',
          ]),
        ),
      );
    return ExitCode.OK;
  } finally {
    await fleet.close();
  }
}

/** `thymos approve|refuse ID CALL --reason TEXT`: decides one pending call, as the fleet's approver (its own key; audited). */
export async function runDecideCommand(decision: 'approve' | 'refuse', argv: string[]): Promise<number> {
  const spec = commandNamed(decision)!;
  const usage = usageLine(spec);
  const args = parseFleetArgs(argv, spec, { min: 2, max: 2 });
  const id = parseId(args.positionals[0]!, usage);
  const callId = args.positionals[1]!;
  const reason = typeof args.values.reason === 'string' ? args.values.reason.trim() : '';
  if (!reason)
    throw new ThymosError(
      ErrorCode.USAGE,
      `--reason: say why the call is ${decision === 'approve' ? 'approved' : 'refused'}; it goes into the audit log\nusage: ${usage}`,
    );
  const desk = await approver(args.config);
  try {
    const report = await desk[decision](id, callId, {
      reason,
      ...(decision === 'approve' && args.values.done === true ? { done: true } : {}),
    });
    if (args.json) out(JSON.stringify(report));
    else
      out(
        `${report.call_id} (${report.tool} of ${report.agent}) ${report.decision}; ${report.delivered ? 'the agent has the decision' : `${report.agent} is not running: it gets the decision when it wakes`}`,
      );
    return ExitCode.OK;
  } finally {
    await desk.close();
  }
}
