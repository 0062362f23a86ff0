import { type CommandSpec, fleetOptions } from './command-spec.js';

/** A running agent's MCP tools: its address, its tools, a call, and the calls waiting for a person. */
export const TOOL_COMMANDS: readonly CommandSpec[] = [
  {
    name: 'url',
    args: 'ID',
    summary:
      'The MCP address of a running agent (http://127.0.0.1:PORT/mcp), for an MCP client; with --header, the Authorization header it asks for',
    details:
      'An agent keeps its port across wakes while it is free; pin one with [supervisor] agent_ports. With --header, prints "Authorization: Bearer <token>" alone, read from data/agents/ID/mcp-token (with [mcp] require_token = false there is none: exit 2).',
    options: {
      header: { type: 'boolean', help: 'print the Authorization header the agent asks for instead of its address' },
      ...fleetOptions,
    },
    examples: [
      'thymos url elder_rowan',
      'npx @modelcontextprotocol/inspector --cli "$(thymos url elder_rowan)" --header "$(thymos url elder_rowan --header)" --method tools/list',
    ],
  },
  {
    name: 'tools',
    args: 'ID',
    summary: "A running agent's MCP tools: name, what it does, its arguments (* required)",
    options: fleetOptions,
    examples: ['thymos tools elder_rowan', 'thymos tools elder_rowan --json'],
  },
  {
    name: 'call',
    args: 'ID TOOL [\'{"arg":"value"}\']',
    summary: 'Call one MCP tool on a running agent and print its answer',
    details:
      "Arguments are one JSON object. A tool name the agent does not have, or arguments its schema refuses, exit 2 with what it expects (see thymos tools ID). talk_to_ID prints the reply as the agent's model writes it (not with --json).",
    options: fleetOptions,
    examples: [
      `thymos call elder_rowan talk_to_elder_rowan '{"message":"Who tends the mill?","speaker":"player"}'`,
      `thymos call bram_smith recall '{"query":"wolves"}' --json`,
    ],
  },
  {
    name: 'approvals',
    args: '[ID]',
    summary: 'The tool calls waiting for a person to approve them (tools of permission "confirm"), of one agent or all',
    details:
      'A call waits until it is approved or refused (thymos approve, thymos refuse) or its [tools] approval_timeout_s passes, counted while its agent is Dormant too; then it is refused. A call a crash cut off while it ran, or one of a job delivered again that another worker may have made, whose service does not honour its idempotency key, is listed (again) as interrupted (INTERRUPTED: when): did it take effect? Approve runs it again, approve --done records that it did, refuse leaves it. Every call is listed with its arguments whole (at most 64 KiB each), however many wait.',
    options: fleetOptions,
    examples: ['thymos approvals', 'thymos approvals billing_desk --json'],
  },
  {
    name: 'approve',
    args: 'ID CALL',
    summary: 'Approve a pending tool call: the agent runs it now, or when it next wakes',
    details:
      "Decided as the fleet's approver, with its own NATS key (<data_dir>/secrets/nats/approver.nk, made by thymos up; approver.creds with [nats] credentials), which the client's key cannot stand in for. The decision is audited as by approver, with why (<data_dir>/logs/audit.jsonl). Nobody approves a call they made: one made by this same process is TOOL_DENIED. For a call listed as interrupted, --done says it took effect: it is recorded ok and not run again.",
    options: {
      reason: { type: 'string', value: 'TEXT', required: true, help: 'why, for the audit log' },
      done: { type: 'boolean', help: 'an interrupted call took effect: record it done, do not run it again' },
      ...fleetOptions,
    },
    examples: [
      'thymos approve billing_desk 6f1c… --reason "refund checked with the customer"',
      'thymos approve billing_desk 6f1c… --done --reason "the refund shows in the bank\'s ledger"',
    ],
  },
  {
    name: 'refuse',
    args: 'ID CALL',
    summary: 'Refuse a pending tool call: it never runs, and its caller finds it refused',
    details: 'Audited like approve.',
    options: { reason: { type: 'string', value: 'TEXT', required: true, help: 'why, for the audit log and the caller' }, ...fleetOptions },
    examples: ['thymos refuse billing_desk 6f1c… --reason "over the refund limit"'],
  },
];
