import { type Capability, parseCapability } from './capabilities.js';
import { parseUrlTemplate } from './http-url.js';
import { patternProblem } from './safe-pattern.js';
import {
  argField,
  type HttpExecutor,
  keyFields,
  type McpExecutor,
  type SubprocessExecutor,
  type Tool,
  type ToolField,
} from './tool-schema.js';

/**
 * Names an agent's MCP endpoint has or will have for itself: its built-in tools, and those
 * intent resolution and approvals take. `talk_to_*`, `query_*_knowledge` and `get_*_state`
 * are kept too, since every agent has its own.
 */
export const RESERVED_TOOL_NAMES: readonly string[] = Object.freeze([
  'act',
  'resolve_intent',
  'get_call',
  'approve',
  'refuse',
  'remember',
  'recall',
  'consolidate',
  'think',
  'decide',
  'concepts',
  'describe_concept',
  'link',
  'causes',
  'conversation',
  'context',
  'send_message',
  'ask_agent',
  'query_world',
]);
const RESERVED_TOOL_PATTERN = /^(talk_to_.*|query_.*_knowledge|get_.*_state)$/;

/** Each problem of the domain's tools and capabilities, as `[path, message]`. */
export function toolProblems(
  tools: Record<string, Tool>,
  agents: Readonly<Record<string, { capabilities: readonly string[] }>>,
  file: string,
): Array<[string, string]> {
  return [
    ...Object.entries(tools).flatMap(([name, tool]) => oneToolProblems(name, tool, agents)),
    ...capabilityProblems(tools, agents, file),
  ];
}

/** The problems of one tool: its name, its fields, what its side effect allows, and its executor. */
function oneToolProblems(name: string, tool: Tool, agents: Readonly<Record<string, unknown>>): Array<[string, string]> {
  const problems: Array<[string, string]> = [];
  const at = `tools.${name}`;
  if (RESERVED_TOOL_NAMES.includes(name) || RESERVED_TOOL_PATTERN.test(name))
    problems.push([
      at,
      `${name} is the name of one of Thymos's own tools (${RESERVED_TOOL_NAMES.join(', ')}, talk_to_*, query_*_knowledge, get_*_state); choose another`,
    ]);
  for (const [field, spec] of Object.entries(tool.input)) problems.push(...fieldProblems(`${at}.input.${field}`, spec));
  for (const [field, spec] of Object.entries(tool.output ?? {})) problems.push(...fieldProblems(`${at}.output.${field}`, spec));
  if (tool.sideEffect === 'irreversible' && tool.permission === 'safe')
    problems.push([`${at}.permission`, 'an irreversible tool needs permission "confirm" or "admin"']);
  if (tool.keyHonoured && tool.sideEffect === 'read_only')
    problems.push([
      `${at}.keyHonoured`,
      'a read_only tool is never cut off in the middle of a side effect: keyHonoured says nothing of it; remove it',
    ]);
  if (Object.hasOwn(tool.input, 'reason'))
    problems.push([
      `${at}.input.reason`,
      '"reason" is the argument every call may give (required unless the tool is read-only); name the field otherwise',
    ]);
  for (const f of keyFields(tool.idempotencyKey ?? ''))
    if (!Object.hasOwn(tool.input, f))
      problems.push([`${at}.idempotencyKey`, `{${f}} is not an input field (${Object.keys(tool.input).join(', ') || 'none'})`]);
  if (tool.keyExpiresAfterS != null && tool.sideEffect !== 'writes_external' && tool.sideEffect !== 'irreversible') {
    problems.push([
      `${at}.keyExpiresAfterS`,
      `only a tool that writes outside the agent (writes_external, irreversible) remembers its keys; this one is ${tool.sideEffect}`,
    ]);
  }
  if (tool.executor.kind === 'http') problems.push(...httpProblems(at, tool));
  if (tool.executor.kind === 'subprocess') problems.push(...subprocessProblems(at, tool));
  if (tool.executor.kind === 'mcp') problems.push(...mcpProblems(at, tool.executor, agents));
  if (tool.executor.kind === 'script' && !/\.(m?js|cjs)$/.test(tool.executor.path))
    problems.push([
      `${at}.executor.path`,
      `expected a compiled JavaScript module (.js, .mjs or .cjs); got ${JSON.stringify(tool.executor.path)}`,
    ]);
  return problems;
}

/** Each capability of each agent that does not parse, or grants no tool the domain declares. */
function capabilityProblems(
  tools: Record<string, Tool>,
  agents: Readonly<Record<string, { capabilities: readonly string[] }>>,
  file: string,
): Array<[string, string]> {
  const problems: Array<[string, string]> = [];
  for (const [id, agent] of Object.entries(agents)) {
    agent.capabilities.forEach((text, i) => {
      const path = `agents.${id}.capabilities[${i}]`;
      let c: Capability;
      try {
        c = parseCapability(text);
      } catch (err) {
        return problems.push([path, (err as Error).message]);
      }
      const known = c.scope === 'name' ? Object.keys(tools) : [...new Set(Object.values(tools).flatMap((t) => t.tags))];
      if (!known.some(c.matches)) {
        const what = c.literal
          ? `no tool ${c.scope === 'name' ? 'is named' : 'has the tag'} ${JSON.stringify(c.glob)}`
          : `${JSON.stringify(c.text)} matches no tool ${c.scope === 'name' ? 'name' : 'tag'}`;
        problems.push([path, `${what}; expected one of ${known.join(', ') || `(no tools declared in ${file})`}`]);
      }
    });
  }
  return problems;
}

function fieldProblems(at: string, f: ToolField): Array<[string, string]> {
  const out: Array<[string, string]> = [];
  if (f.type === 'enum' && !f.values?.length) out.push([`${at}.values`, 'an enum field lists its values']);
  if (f.type !== 'enum' && f.values) out.push([`${at}.values`, `values are for type "enum"; this field is ${f.type}`]);
  if (f.pattern != null) {
    if (f.type !== 'string') out.push([`${at}.pattern`, `a pattern is for strings; this field is ${f.type}`]);
    const problem = patternProblem(f.pattern);
    if (problem) out.push([`${at}.pattern`, problem]);
  }
  if (f.type === 'boolean' && (f.min != null || f.max != null)) out.push([at, 'min and max are for numbers and strings']);
  if (f.min != null && f.max != null && f.min > f.max) out.push([at, `min ${f.min} is above max ${f.max}`]);
  if (f.type === 'string' || f.type === 'enum') {
    for (const [k, v] of [
      ['min', f.min],
      ['max', f.max],
    ] as const)
      if (v != null && !(Number.isInteger(v) && v >= 0))
        out.push([`${at}.${k}`, `a string's ${k} is a length: a whole number from 0; got ${v}`]);
  }
  return out;
}

function httpProblems(at: string, tool: Tool): Array<[string, string]> {
  const http = tool.executor as HttpExecutor;
  const out: Array<[string, string]> = [];
  try {
    const template = parseUrlTemplate(http.url);
    for (const [field, where] of template.fields) {
      const spec = Object.hasOwn(tool.input, field) ? tool.input[field] : undefined;
      if (!spec) out.push([`${at}.executor.url`, `{${field}} is not an input field (${Object.keys(tool.input).join(', ') || 'none'})`]);
      else if (where === 'path' && (!spec.required || spec.list))
        out.push([`${at}.executor.url`, `{${field}} stands in the path, so it must be one required value`]);
    }
  } catch (err) {
    out.push([`${at}.executor.url`, (err as Error).message]);
  }
  for (const field of http.body ?? [])
    if (!Object.hasOwn(tool.input, field))
      out.push([`${at}.executor.body`, `${field} is not an input field (${Object.keys(tool.input).join(', ') || 'none'})`]);
  if (http.body && (http.method === 'GET' || http.method === 'DELETE'))
    out.push([`${at}.executor.body`, `a ${http.method} request has no body`]);
  return out;
}

function subprocessProblems(at: string, tool: Tool): Array<[string, string]> {
  const exec = tool.executor as SubprocessExecutor;
  const fields = Object.keys(tool.input).join(', ') || 'none';
  const out: Array<[string, string]> = [];
  if (exec.command.includes('\0') || /^\{.*\}$/.test(exec.command))
    out.push([`${at}.executor.command`, 'the command is fixed: a path or a program name, never filled from input']);
  exec.args.forEach((arg, i) => {
    const filled = argField(arg);
    if (filled && !Object.hasOwn(tool.input, filled.field))
      out.push([`${at}.executor.args[${i}]`, `{${filled.field}} is not an input field (${fields})`]);
    const before = i > 0 ? exec.args[i - 1] : undefined;
    const spec = filled && Object.hasOwn(tool.input, filled.field) ? tool.input[filled.field] : undefined;
    // "-o", "{out}" with out absent would leave -o to take the next argument; a list would give -o only its first value.
    if (spec && !filled!.option && (!spec.required || spec.list) && typeof before === 'string' && before.startsWith('-')) {
      out.push([
        `${at}.executor.args[${i}]`,
        `{${filled!.field}} is ${spec.list ? 'a list' : 'optional'}, so it cannot follow the option ${JSON.stringify(before)} as its own argument: write new Arg { option = ${JSON.stringify(before)}; field = ${JSON.stringify(filled!.field)} } in place of both`,
      ]);
    } else if (!filled && typeof arg === 'string' && /\{[A-Za-z_][A-Za-z0-9_-]*\}/.test(arg))
      out.push([
        `${at}.executor.args[${i}]`,
        `input fills whole arguments only: write ${JSON.stringify(arg)} as two arguments, the option and "{field}"`,
      ]);
    if (typeof arg === 'string' && arg.includes('\0')) out.push([`${at}.executor.args[${i}]`, 'an argument cannot hold a NUL character']);
  });
  for (const field of exec.stdin ?? [])
    if (!Object.hasOwn(tool.input, field)) out.push([`${at}.executor.stdin`, `${field} is not an input field (${fields})`]);
  for (const name of Object.keys(exec.secrets))
    if (exec.env.includes(name))
      out.push([`${at}.executor.secrets.${name}`, `${name} is passed through by env as well; name it in one of the two`]);
  for (const name of [...exec.env, ...Object.keys(exec.secrets)])
    if (name.startsWith('THYMOS_'))
      out.push([
        `${at}.executor.env`,
        `${name}: THYMOS_ variables are Thymos's own (THYMOS_IDEMPOTENCY_KEY, THYMOS_CALL_ID, THYMOS_TOOL, THYMOS_AGENT)`,
      ]);
  return out;
}

function mcpProblems(at: string, exec: McpExecutor, agents: Readonly<Record<string, unknown>>): Array<[string, string]> {
  const out: Array<[string, string]> = [];
  if ((exec.url == null) === (exec.agent == null))
    return [
      [
        `${at}.executor`,
        'an Mcp executor names either url (another MCP server) or agent (another agent of the fleet), not both or neither',
      ],
    ];
  if (exec.url != null) {
    let url: URL | undefined;
    try {
      url = new URL(exec.url);
    } catch {
      out.push([`${at}.executor.url`, `expected an http(s) URL; got ${JSON.stringify(exec.url)}`]);
    }
    if (url && (!/^https?:$/.test(url.protocol) || url.username || url.password || url.hash || /[{}]/.test(exec.url)))
      out.push([
        `${at}.executor.url`,
        'expected an http(s) URL without user, password, fragment or placeholders: the endpoint is fixed in the schema',
      ]);
    if (exec.wake) out.push([`${at}.executor.wake`, 'wake is for another agent of the fleet (agent), not a url']);
  } else {
    if (!Object.hasOwn(agents, exec.agent!))
      out.push([
        `${at}.executor.agent`,
        `no agent ${JSON.stringify(exec.agent)} in the domain; expected one of ${Object.keys(agents).join(', ') || '(none)'}`,
      ]);
    if (exec.token) out.push([`${at}.executor.token`, "another agent's token comes from the supervisor; a token is for a url"]);
  }
  return out;
}
