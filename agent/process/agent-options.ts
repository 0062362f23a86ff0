import { readFileSync } from 'node:fs';
import { parseArgs } from 'node:util';

import { z } from 'zod';

import { AgentIdSchema } from '../../shared/domain/index.js';
import { describeIssues, ErrorCode, ThymosError } from '../../shared/errors/index.js';
import { AgentModeSchema, type AgentStartContext, AgentStartContextSchema } from '../../shared/protocol/index.js';
/** Options of `thymos agent`. */
export const AgentOptionsSchema = z.object({
  agentId: AgentIdSchema,
  port: z.coerce.number().int().min(1).max(65_535),
  mode: AgentModeSchema.default('active'),
  context: z.string().min(1).optional(),
  config: z.string().min(1).optional(),
  /** Overrides `[nats] url`: a supervisor passes the server it runs. */
  natsUrl: z.string().min(1).optional(),
});
export type AgentOptions = z.infer<typeof AgentOptionsSchema>;

export const AGENT_USAGE =
  'usage: thymos agent --agent-id ID --port N [--mode active|passive] [--context FILE] [--config FILE] [--nats-url URL]';

/** Parses `thymos agent` arguments; errors are USAGE errors that say what was expected. */
export function parseAgentArgs(argv: readonly string[]): AgentOptions {
  let values: Record<string, string | boolean | undefined>;
  try {
    ({ values } = parseArgs({
      args: [...argv],
      options: {
        'agent-id': { type: 'string' },
        port: { type: 'string' },
        mode: { type: 'string' },
        context: { type: 'string' },
        config: { type: 'string' },
        'nats-url': { type: 'string' },
      },
      strict: true,
      allowPositionals: false,
    }));
  } catch (err) {
    throw new ThymosError(ErrorCode.USAGE, `${(err as Error).message}\n${AGENT_USAGE}`, { cause: err });
  }
  const raw = {
    agentId: values['agent-id'],
    port: values.port,
    mode: values.mode,
    context: values.context,
    config: values.config,
    natsUrl: values['nats-url'],
  };
  const result = AgentOptionsSchema.safeParse(raw);
  if (!result.success) {
    const text = describeIssues(result.error, raw)
      .replace(/\bagentId\b/g, '--agent-id')
      .replace(/\bnatsUrl\b/g, '--nats-url')
      .replace(/^(port|mode|context|config)\b/gm, '--$1');
    throw new ThymosError(ErrorCode.USAGE, `${text}\n${AGENT_USAGE}`);
  }
  return result.data;
}

/** Reads and validates a `--context` file. */
export function readStartContext(file: string): AgentStartContext {
  let raw: unknown;
  try {
    raw = JSON.parse(readFileSync(file, 'utf8'));
  } catch (err) {
    throw new ThymosError(ErrorCode.USAGE, `--context ${file}: expected a readable JSON file: ${(err as Error).message}`, { cause: err });
  }
  const result = AgentStartContextSchema.safeParse(raw);
  if (!result.success) {
    throw new ThymosError(ErrorCode.USAGE, `--context ${file}: ${describeIssues(result.error, raw)}`, { location: { file } });
  }
  return result.data;
}
