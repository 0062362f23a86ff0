import type { Persona } from '../../shared/domain/index.js';

/** A tool a model may call: a function definition, its parameters a JSON Schema. */
export interface ModelTool {
  name: string;
  description: string;
  parameters: Record<string, unknown>;
}

/** A call a model asked for: its id, the tool's name and the arguments as the model wrote them (JSON text, not yet checked). */
export interface ModelToolCall {
  id: string;
  name: string;
  arguments: string;
}

/**
 * One message of a conversation with a model: system and user text, the model's own turns
 * (with the tool calls it asked for), and each call's result in a `tool` turn.
 */
export type LlmMessage =
  | { role: 'system' | 'user'; content: string }
  | { role: 'assistant'; content: string; tool_calls?: readonly ModelToolCall[] | undefined }
  | { role: 'tool'; content: string; tool_call_id: string; name: string };

export interface GenerateRequest {
  messages: readonly LlmMessage[];
  /** 0..2. Unset: the provider's configured temperature. */
  temperature?: number | undefined;
  /** Unset: the provider's configured max tokens. */
  maxTokens?: number | undefined;
  /** Ask for a JSON object (the provider's JSON mode, where it has one). */
  json?: boolean | undefined;
  /** Aborting it cancels the call at once and stops spending: the request is closed. */
  signal?: AbortSignal | undefined;
  /**
   * The facts the messages were written from. A model reads the messages; the offline
   * provider, which has no model, composes its answer from these.
   */
  brief?: PromptBrief | undefined;
  /** Tools the model may call this time (a provider whose `capabilities.tools` is false ignores them). */
  tools?: readonly ModelTool[] | undefined;
  /** `none`: the tools are shown but may not be called (the loop's last answer). @default "auto" */
  toolChoice?: 'auto' | 'none' | undefined;
}

/** A memory as a prompt shows it: what it says and how strong it is (0..1). */
export interface BriefMemory {
  content: string;
  strength: number;
  /** Where it came from (`told`, `dialogue`, `event`, `insight`, …), when known. */
  kind?: string;
}

/** An option of a decision with how well it fits (0..1) and why. */
export interface ScoredOption {
  action: string;
  score: number;
  reason: string;
}

/** What a prompt was built from, by task. */
export type PromptBrief =
  | { task: 'dialogue'; persona: Persona; speaker: string; message: string; memories: BriefMemory[] }
  | { task: 'think'; persona: Persona; situation: string; memories: BriefMemory[]; options: string[] }
  | { task: 'decide'; persona: Persona; situation: string; options: ScoredOption[] }
  | { task: 'summarize'; sources: string[]; draft: string };

export interface TokenUsage {
  input_tokens: number;
  output_tokens: number;
}

export interface GenerateResult {
  text: string;
  model: string;
  /** `stop`, `length`, … as the provider says. */
  finish_reason: string;
  usage: TokenUsage;
  /** How many calls to the model this result adds up (repairs included). @default 1 */
  calls?: number;
  /** The structured fields could not be had and the model's prose was used as it was. */
  prose?: boolean;
  /** The calls the model asked for instead of (or beside) its answer. */
  tool_calls?: ModelToolCall[];
  /** The tool calls a loop ran before this answer, in order (see `runToolLoop`). */
  tool_steps?: ToolStep[];
  /** Tool calls the model wrote that could not be run as written (an unknown tool, arguments that are not a JSON object). */
  invalid_tool_calls?: number;
}

/** One tool call of a model's loop, as it ended. */
export interface ToolStep {
  tool: string;
  /** The governed call's id; none when the call was not made (invalid, or the budget was spent). */
  call_id?: string;
  /** `ok`, `pending`, `refused`, `failed`, … as the call's record says; `invalid` or `not_run` when it was not made. */
  status: string;
  /** The error's code when it did not end `ok` or `pending`. */
  code?: string;
  ms: number;
}

export interface LlmCapabilities {
  streaming: boolean;
  json: boolean;
  /** Whether it passes tools to its model and returns the model's tool calls. */
  tools: boolean;
}

/** Where the text of a model's answers goes as it is written: `begin` before each answer, `write` with each piece. */
export interface TextSink {
  begin(): void;
  write(piece: string): void;
}

/** A model that writes text: an HTTP endpoint, the MCP client's model, or none at all. */
export interface LlmProvider {
  readonly kind: string;
  readonly capabilities: LlmCapabilities;
  /** What it runs, for state and metrics. */
  info(): { provider: string; model: string };
  generate(request: GenerateRequest): Promise<GenerateResult>;
  /** Like generate, calling `onText` with each piece as it arrives. */
  stream(request: GenerateRequest, onText: (piece: string) => void): Promise<GenerateResult>;
}

/** One answer of the model: streamed into `sink` when one is given, else asked whole. */
export function answer(provider: LlmProvider, request: GenerateRequest, sink?: TextSink): Promise<GenerateResult> {
  if (!sink) return provider.generate(request);
  sink.begin();
  return provider.stream(request, (piece) => sink.write(piece));
}

/**
 * Text shown to a model with every `[TOOL:` written as `[tool:`: a marker in what it reads (a
 * speaker's line, a memory, a tool's result, its own earlier turn) is quoted, not written by it,
 * and only `[TOOL: …]` the model writes in its reply is acted on.
 */
export function defuseMarkers(text: string): string {
  return text.replaceAll('[TOOL:', '[tool:');
}
