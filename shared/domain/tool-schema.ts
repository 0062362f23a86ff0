import { isAbsolute, resolve } from 'node:path';

import { z } from 'zod';

import { type Capability, grants, parseCapability } from './capabilities.js';
import { parseUrlTemplate } from './http-url.js';
import { patternProblem } from './safe-pattern.js';

/** Names a JavaScript object keeps apart from its own keys: never the name of a tool or a field. */
const OBJECT_NAMES = ['__proto__', 'constructor', 'prototype'];

/** A tool name, as model APIs allow for function names. */
export const ToolNameSchema = z
  .string()
  .regex(/^[a-zA-Z0-9_-]{1,64}$/, 'expected a tool name: letters, digits, _ or -, at most 64')
  .refine((name) => !OBJECT_NAMES.includes(name), 'expected a tool name other than __proto__, constructor or prototype');

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

/** A field of a tool's input or output: a name a JSON object can carry as its own key. */
const FieldNameSchema = z
  .string()
  .regex(/^[A-Za-z_][A-Za-z0-9_-]{0,63}$/, 'expected a field name: a letter or _, then letters, digits, _ or -')
  .refine((name) => !OBJECT_NAMES.includes(name), 'expected a field name other than __proto__, constructor or prototype');

export const ToolFieldSchema = z
  .object({
    type: z.enum(['string', 'number', 'integer', 'boolean', 'enum']).default('string'),
    list: z.boolean().default(false),
    required: z.boolean().default(true),
    description: z.string().nullish(),
    values: z.array(z.string()).nullish(),
    pattern: z.string().min(1).nullish(),
    min: z.number().nullish(),
    max: z.number().nullish(),
    maxItems: z.number().int().min(1).default(100),
  })
  .strict();
export type ToolField = z.infer<typeof ToolFieldSchema>;

/** A value read from an environment variable when a call runs, never written anywhere. */
export const SecretSchema = z
  .object({ env: z.string().regex(/^[A-Za-z_][A-Za-z0-9_]*$/, 'expected an environment variable name'), prefix: z.string().default('') })
  .strict();
export type Secret = z.infer<typeof SecretSchema>;

export const HttpExecutorSchema = z
  .object({
    kind: z.literal('http'),
    method: z.enum(['GET', 'POST', 'PUT', 'PATCH', 'DELETE']).default('GET'),
    url: z.string().min(1),
    headers: z
      .record(
        z.string().regex(/^[A-Za-z0-9!#$%&'*+.^_`|~-]+$/, 'expected an HTTP header name'),
        z.union([z.string().regex(/^[^\r\n]*$/, 'expected a header value on one line'), SecretSchema]),
      )
      .default({}),
    body: z.array(z.string()).nullish(),
  })
  .strict();
export type HttpExecutor = z.infer<typeof HttpExecutorSchema>;

export const ScriptExecutorSchema = z
  .object({
    kind: z.literal('script'),
    /** Absolute once the domain is read: relative paths are taken from the domain schema file's folder. */
    path: z.string().min(1),
    export: z.string().min(1).default('default'),
  })
  .strict();
export type ScriptExecutor = z.infer<typeof ScriptExecutorSchema>;

const EnvNameSchema = z.string().regex(/^[A-Za-z_][A-Za-z0-9_]*$/, 'expected an environment variable name');

/**
 * An argument filled from one input field; `allowDash` lets its value start with `-`; `option`
 * goes before each value (`--exclude a --exclude b`) and is left out with it when the field is.
 */
export const SubprocessArgSchema = z
  .object({
    field: z.string().min(1),
    allowDash: z.boolean().default(false),
    option: z
      .string()
      .regex(/^-[^\0]*$/, 'expected an option: starting with -')
      .nullish(),
  })
  .strict();
export type SubprocessArg = z.infer<typeof SubprocessArgSchema>;

export const SubprocessExecutorSchema = z
  .object({
    kind: z.literal('subprocess'),
    /** Absolute once the domain is read when it names a path (has a `/`); a bare name is looked up on the agent's PATH when a call runs. */
    command: z.string().min(1),
    args: z.array(z.union([z.string(), SubprocessArgSchema])).default([]),
    /** Absolute once the domain is read; unset, the domain schema file's folder. */
    cwd: z.string().min(1).nullish(),
    /** The agent's environment variables the program gets as they are; no other passes. */
    env: z.array(EnvNameSchema).default([]),
    /** Variables set from secrets in the agent's environment, taken out of what is recorded. */
    secrets: z.record(EnvNameSchema, SecretSchema).default({}),
    /** The input fields sent as a JSON object on standard input; unset, nothing is. */
    stdin: z.array(z.string()).nullish(),
  })
  .strict();
export type SubprocessExecutor = z.infer<typeof SubprocessExecutorSchema>;

export const McpExecutorSchema = z
  .object({
    kind: z.literal('mcp'),
    /** Another MCP server's Streamable HTTP endpoint, fixed here. */
    url: z.string().min(1).nullish(),
    /** Or another agent of the fleet, by id: its address and token come from the supervisor. */
    agent: z.string().min(1).nullish(),
    /** The tool to call there. */
    tool: z.string().min(1).max(128),
    /** A bearer token for `url`, from the agent's environment. */
    token: SecretSchema.nullish(),
    /** For `agent`: wake it (make it Active) when it is not, and wait within the timeout; unset, a Dormant agent is AGENT_NOT_ACTIVE. */
    wake: z.boolean().default(false),
  })
  .strict();
export type McpExecutor = z.infer<typeof McpExecutorSchema>;

/**
 * A record whose keys are names. A `__proto__` key is refused before the record is read: zod
 * would drop it without a word, and a field or tool declared must never vanish.
 */
function namedRecord<K extends z.ZodType<string>, V extends z.ZodType>(key: K, value: V, what: string) {
  return z
    .unknown()
    .superRefine((v, ctx) => {
      if (v !== null && typeof v === 'object' && Object.hasOwn(v, '__proto__')) {
        ctx.addIssue({
          code: 'custom',
          path: ['__proto__'],
          message: `expected ${what} names other than __proto__: a JavaScript object would not keep "__proto__" as a ${what}`,
        });
      }
    })
    .pipe(z.record(key, value));
}

/** The fields of an input or output by name. */
const fieldRecord = namedRecord(FieldNameSchema, ToolFieldSchema, 'field');

export const SIDE_EFFECTS = ['read_only', 'writes_local', 'writes_external', 'irreversible'] as const;
export const PERMISSIONS = ['safe', 'confirm', 'admin'] as const;

export const ToolSchema = z
  .object({
    description: z.string().min(1),
    tags: z.array(z.string().min(1)).default([]),
    examples: z.array(z.string().min(1)).default([]),
    input: fieldRecord.default({}),
    output: fieldRecord.nullish(),
    sideEffect: z.enum(SIDE_EFFECTS),
    permission: z.enum(PERMISSIONS).default('safe'),
    executor: z.discriminatedUnion('kind', [HttpExecutorSchema, ScriptExecutorSchema, SubprocessExecutorSchema, McpExecutorSchema]),
    timeoutMs: z.number().int().min(1).max(600_000).default(10_000),
    outputLimitBytes: z
      .number()
      .int()
      .min(1)
      .max(16 * 1024 * 1024)
      .default(65_536),
    idempotencyKey: z.string().min(1).nullish(),
    /** How long a key's outcome answers a repeat, from the end of its call; past it the key is a new call (`~2`, `~3`… appended). Unset: for as long as the agent keeps its calls. */
    keyExpiresAfterS: z.number().int().min(1).max(315_360_000).nullish(),
    /**
     * Whether the tool's service honours the call's idempotency key: a call with side effects cut
     * off by a crash then runs again by itself, under the same key; otherwise it waits for a person
     * (`thymos approvals`, as interrupted). Not for a `read_only` tool, which is never cut off.
     * @default false
     */
    keyHonoured: z.boolean().default(false),
    reasonRequired: z.boolean().nullish(),
    /** How many calls of the tool run at once in one agent; the others wait their turn within their timeout. */
    maxConcurrent: z.number().int().min(1).max(10_000).nullish(),
    /** How many calls of the tool start in any 60 s (a sliding window) in one agent. */
    ratePerMinute: z.number().int().min(1).max(1_000_000).nullish(),
  })
  .strict();
export type Tool = z.infer<typeof ToolSchema>;
export type Tools = Readonly<Record<string, Tool>>;

/** A domain's tools by name; a tool named `__proto__` is refused, not dropped. */
export const ToolsSchema = namedRecord(ToolNameSchema, ToolSchema, 'tool');

/** Whether a call of `tool` must give a reason: as declared, else for anything not read-only. */
export function needsReason(tool: Tool): boolean {
  return tool.reasonRequired ?? tool.sideEffect !== 'read_only';
}

/** The input fields an `idempotencyKey` template names. */
export function keyFields(template: string): string[] {
  return [...template.matchAll(/\{([^{}]*)\}/g)].map((m) => m[1]!);
}

/** Each problem of the domain's tools and capabilities, as `[path, message]`. */
export function toolProblems(
  tools: Record<string, Tool>,
  agents: Readonly<Record<string, { capabilities: readonly string[] }>>,
  file: string,
): Array<[string, string]> {
  const problems: Array<[string, string]> = [];
  for (const [name, tool] of Object.entries(tools)) {
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
  }
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

/** What fills one argument of a Subprocess: the input field it names, or undefined for a literal. */
export function argField(arg: string | SubprocessArg): SubprocessArg | undefined {
  if (typeof arg !== 'string') return arg;
  const m = /^\{([^{}]+)\}$/.exec(arg);
  return m ? { field: m[1]!, allowDash: false, option: null } : undefined;
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

/** Every secret a tool reads, with where it is declared (relative to the tool). */
export function toolSecrets(tool: Tool): Array<{ path: string; secret: Secret }> {
  const e = tool.executor;
  if (e.kind === 'http')
    return Object.entries(e.headers).flatMap(([h, v]) => (typeof v === 'string' ? [] : [{ path: `executor.headers.${h}`, secret: v }]));
  if (e.kind === 'subprocess') return Object.entries(e.secrets).map(([name, secret]) => ({ path: `executor.secrets.${name}`, secret }));
  if (e.kind === 'mcp' && e.token) return [{ path: 'executor.token', secret: e.token }];
  return [];
}

/** Makes each Script's path, and each Subprocess's command path and folder, absolute from the folder of the domain schema file. */
export function resolveScriptPaths(tools: Record<string, Tool>, baseDir: string): void {
  for (const tool of Object.values(tools)) {
    const e = tool.executor;
    if (e.kind === 'script' && !isAbsolute(e.path)) e.path = resolve(baseDir, e.path);
    if (e.kind === 'subprocess') {
      if (e.command.includes('/') && !isAbsolute(e.command)) e.command = resolve(baseDir, e.command);
      e.cwd = e.cwd ? resolve(baseDir, e.cwd) : baseDir;
    }
  }
}

/** The tools `capabilities` grant, by name. */
export function grantedTools(tools: Tools, capabilities: readonly string[]): Record<string, Tool> {
  const parsed = capabilities.map((c) => parseCapability(c));
  return Object.fromEntries(Object.entries(tools).filter(([name, tool]) => grants(parsed, { name, scopes: { tag: tool.tags } })));
}
