import { isAbsolute, resolve } from 'node:path';

import { z } from 'zod';

import { grants, parseCapability } from './capabilities.js';

/** Names a JavaScript object keeps apart from its own keys: never the name of a tool or a field. */
const OBJECT_NAMES = ['__proto__', 'constructor', 'prototype'];

/** A tool name, as model APIs allow for function names. */
export const ToolNameSchema = z
  .string()
  .regex(/^[a-zA-Z0-9_-]{1,64}$/, 'expected a tool name: letters, digits, _ or -, at most 64')
  .refine((name) => !OBJECT_NAMES.includes(name), 'expected a tool name other than __proto__, constructor or prototype');

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

/** What fills one argument of a Subprocess: the input field it names, or undefined for a literal. */
export function argField(arg: string | SubprocessArg): SubprocessArg | undefined {
  if (typeof arg !== 'string') return arg;
  const m = /^\{([^{}]+)\}$/.exec(arg);
  return m ? { field: m[1]!, allowDash: false, option: null } : undefined;
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
