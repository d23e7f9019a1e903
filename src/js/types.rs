//! TypeScript declarations for everything the JS API takes and returns. The message and entry
//! types mirror `crate::thread` (their serde impls are hand-written for the exact key order, so
//! they cannot be derived), the events `crate::event`; `tests/types/` compiles the golden JSON
//! fixtures that Rust writes (messages, one event of each kind) against these types with
//! `tsc`, so the two cannot drift apart silently.

use wasm_bindgen::prelude::*;

#[wasm_bindgen(typescript_custom_section)]
const TS_TYPES: &'static str = r#"
/** A text block; other block kinds (reasoning, image, file...) are passed through as stored. */
export interface TextBlock { type: "text"; content: string; meta: [] | Record<string, unknown>; }
export type ContentBlock = TextBlock | { type: string; [key: string]: unknown };

export interface Usage {
  input_tokens: number; output_tokens: number; cached_input_tokens: number; reasoning_tokens: number;
}

/** `"expired"`: nobody decided before the tool's `approvalTimeout` ran out; the call never
 *  ran. Only calls of tools with an `approvalTimeout` can expire. */
export type ApprovalState = "pending" | "approved" | "rejected" | "expired";

/** One tool call. The three approval keys are present only on gated entries. */
/** A pending call, as `pendingTools()` gives it: the tail's entry, and how far it is on the
 *  store handler's approver rules (README "Approver rules"): the approvals counted toward its
 *  quorum, how many it needs (1 where no rule applies), and why the signed-in user may not
 *  decide it (null: they may). */
export type PendingToolEntry = ToolEntry & {
  approvals: { by: string | null; at: number }[];
  needed: number;
  blocked: "not_an_approver" | "self_approval" | null;
};

export interface ToolEntry {
  callId: string;
  name: string;
  description: string | null;
  /** Provider-specific extra keys of the tool definition; `[]` when none. */
  parameters: [] | Record<string, unknown>;
  inputs: Record<string, unknown>;
  /** `null` until the tool ran; then a string (non-string outputs JSON-encoded). */
  result: string | null;
  approval?: ApprovalState;
  /** Why the tool asks (the policy's string), or null. */
  approvalReason?: string | null;
  /** The human's reason, set only when rejected. */
  rejectReason?: string | null;
  /** Only on an entry a human edited (`["edit", inputs]`): the model's own arguments, while
   *  `inputs` holds the edited ones, which are what runs. */
  proposedInputs?: Record<string, unknown>;
  /** Only while an MCP server's question about this running call waits for the user, on the
   *  copies the agent that runs it hands out (`lastMessage()`, `messages()`, `subscribe`);
   *  never stored: the `PendingElicitation` to answer with `submitElicitations`. */
  elicitation?: PendingElicitation;
}

/** A question an MCP server asks the user while one of its tool calls runs (MCP
 *  `elicitation/create`, revision 2025-11-25), as `pendingElicitations()` lists it.
 *  `"form"`: fields to fill in, described by `requestedSchema` (a flat object of strings,
 *  numbers, integers, booleans, enums and multi-selects). `"url"`: a page to open, for input
 *  that must not pass through the agent (show its host; never open it without the user). */
export type PendingElicitation = {
  /** This agent's id of the question: the key of its answer. */
  id: string;
  /** The tool call whose server asks. */
  callId: string;
  server: string;
  message: string;
} & (
  | { mode: "form"; requestedSchema: ElicitationSchema }
  | { mode: "url"; url: string; elicitationId: string }
);

/** The form of a `"form"` elicitation (MCP's restricted JSON Schema). */
export interface ElicitationSchema {
  type: "object";
  properties: Record<string, {
    type: "string" | "number" | "integer" | "boolean" | "array";
    title?: string; description?: string; default?: unknown;
    enum?: string[]; enumNames?: string[]; oneOf?: { const: string; title?: string }[];
    items?: { type?: "string"; enum?: string[]; anyOf?: { const: string; title?: string }[] };
    minLength?: number; maxLength?: number; format?: "email" | "uri" | "date" | "date-time";
    minimum?: number; maximum?: number; minItems?: number; maxItems?: number;
  }>;
  required?: string[];
}

/** An answer to one question: `"accept"` (a URL the user agreed to open, or a form without
 *  required fields), `"decline"`, `"cancel"`, or MCP's own result: `{ action: "accept",
 *  content }` with the form's fields. */
export type ElicitationAnswer =
  | "accept" | "decline" | "cancel"
  | { action: "accept"; content?: Record<string, string | number | boolean | string[]> }
  | { action: "decline" | "cancel" };

export interface UserMessage {
  __id: string; role: "user"; content: ContentBlock[]; usage?: Usage; type?: undefined;
  [meta: string]: unknown;
}
export interface AssistantMessage {
  __id: string; stop_reason?: string; role: "assistant"; content: ContentBlock[]; usage?: Usage;
  type?: undefined; [meta: string]: unknown;
}
export interface ToolCallMessage {
  __id: string; resume_token?: string; role: "assistant"; content: ContentBlock[]; usage?: Usage;
  type: "tool_call"; tools: ToolEntry[]; [meta: string]: unknown;
}
export interface ToolCallResultMessage {
  __id: string; role: "user"; content: ContentBlock[]; usage?: Usage;
  type: "tool_call_result"; tools: ToolEntry[]; [meta: string]: unknown;
}
export type Message = UserMessage | AssistantMessage | ToolCallMessage | ToolCallResultMessage;

export type DecisionKind = "approve" | "reject" | "edit";
/** A human decision on one gated call. `["edit", inputs]` approves the call with these inputs
 *  instead of the model's (checked against the tool's schema). `I` types the edited inputs:
 *  `DecisionFor<typeof tool>` takes them from a `defineTool` schema. */
export type Decision<I = Record<string, unknown>> =
  | "approve" | "reject" | ["reject", string] | ["edit", I];
/** The decision type of one tool, its edit typed from the tool's inputs. */
export type DecisionFor<T> = T extends Tool<infer I> ? Decision<I> : Decision;
export type Decisions = Record<string, Decision>;

export interface AgentState {
  status: "completed" | "awaiting_approval" | "awaiting_tool_results" | "awaiting_device"
    | "queued";
  message: Message | null;
  /** Set when the run stopped because it reached `maxSteps` model calls. */
  stopReason?: "max_steps";
}
export interface ConflictState { status: "conflict"; error: string; }
/** `"running"`: this agent, another tab, or another `Agent` in this page is running the thread. */
export type ThreadStatus =
  | "idle" | "awaiting_approval" | "awaiting_tool_results" | "interrupted" | "awaiting_device"
  | "queued" | "running";
export type HandleBody =
  | { message: string } | { decisions: Decisions; by?: string } | { toolResults: Record<string, unknown> };

export interface ToolContext {
  callId: string;
  threadId: string;
  signal?: AbortSignal;
  /** Set for a call a human approved (README "Approvals your backend can verify"); absent
   *  otherwise, and for `approvalPolicy`. */
  approval?: ToolApproval;
}

/** What was decided for the call about to run. `receipt` is the store handler's signed
 *  receipt (a remote thread whose handler has a `signingKey`): forward it, with the inputs,
 *  to the backend that performs the action, which checks it with `verifyApproval`. Without
 *  one (a local thread, a handler without a key) `signed` is false and `receipt` null. */
export interface ToolApproval {
  signed: boolean;
  callId: string;
  tool: string;
  decision: "approve" | "edit";
  decidedBy: string | null;
  /** Epoch ms of the decision. */
  at: number;
  receipt: ApprovalReceipt | null;
}

/** The store handler's signed receipt of a decision (`gatehouse-agent/server`'s
 *  `ApprovalReceipt`). */
export interface ApprovalReceipt {
  v: 1;
  id: string;
  thread: string;
  callId: string;
  tool: string;
  inputsSha256: string;
  decision: "approve" | "edit";
  decidedBy: string | null;
  approvals: { by: string | null; at: number }[];
  at: number;
  expiresAt: number | null;
  alg: "Ed25519";
  sig: string;
}

/** A tool. `I` is the type of its inputs: `defineTool` infers it from `parameters`. */
export interface Tool<I = any> {
  name: string;
  description?: string;
  /** JSON Schema of the inputs, checked before gating. */
  parameters?: Record<string, unknown>;
  /** Omitted: an external tool, answered with `submitToolResults`. */
  execute?: (inputs: I, ctx: ToolContext) => unknown | Promise<unknown>;
  /** The flat override: true always asks, false never does. */
  requireApproval?: boolean;
  /** Why this tool's calls ask a human: the entry's `approvalReason` when `requireApproval` is
   *  true, or when `approvalPolicy` answers `true` rather than a string of its own. */
  approvalReason?: string;
  /** `true`/a reason string asks a human; `false` lets the call run. */
  approvalPolicy?: (inputs: I, ctx: ToolContext) => boolean | string | Promise<boolean | string>;
  label?: string;
  enabled?: boolean;
  autoApprove?: boolean;
  /** Safe to run again if a crash cut off an earlier attempt. */
  idempotent?: boolean;
  /** The decisions a human may give this tool's gated calls (default: all three); any other
   *  is refused with `invalid_decision`. */
  allowedDecisions?: readonly [DecisionKind, ...DecisionKind[]];
  /** Milliseconds a gated call may wait for a decision (default: `AgentOptions.approvalTimeout`,
   *  else forever). Then it expires: it never runs, the model is told the request expired, the
   *  entry's `approval` is `"expired"`, and a later decision is refused with `expired`.
   *  `Infinity`: never, whatever the `Agent.open` default. */
  approvalTimeout?: number;
  /** Provider-specific keys merged into the tool definition (e.g. `strict`, `cache_control`). */
  providerOptions?: Record<string, unknown>;
}

export interface CustomModelRequest {
  messages: Message[];
  tools: { name: string; description: string | null; parameters: Record<string, unknown> }[];
  instructions: string | null;
  signal?: AbortSignal;
  /** Streams a fragment of the answer's text (a `text_delta` event). */
  onText: (delta: string) => void;
  /** Reports getting or loading a model file (a `model_progress` event). */
  onProgress: (phase: "download" | "cache" | "load", loaded: number, total?: number) => void;
  /** Reports where a model that runs in the page runs (a `model_runtime` event). */
  onRuntime: (device: "cpu" | "webgpu", threads: number, singleThreadReason?: ModelSingleThreadReason | null,
    cpuReason?: ModelCpuReason | null) => void;
  /** Streams the start of the answer's tool call number `index` (a `tool_call_started`
   *  event); its `id` and `name` are the ones the answer's `toolCalls[index]` gives. */
  onToolCallStart: (index: number, id: string, name: string) => void;
  /** Streams a fragment of that call's arguments' JSON text (a `tool_call_delta` event). */
  onToolCallDelta: (index: number, delta: string) => void;
}
export interface CustomModelAnswer {
  text?: string;
  toolCalls?: { id?: string; name: string; arguments: Record<string, unknown> | string }[];
  usage?: Usage;
  stopReason?: string;
}

/** `contextWindow`: the model's context window in tokens. A request carries the instructions,
 *  the tools and the newest messages that fit (less `maxTokens`), starting at a user message;
 *  older messages are not even read. Default: the window the model name makes known
 *  (`gpt-4o*` 128,000, `gpt-4.1*` 1,047,576, `claude-*` 200,000…), else 50,000. */
export type ModelOptions =
  | { provider: "openai" | "anthropic"; model: string; baseUrl?: string; apiKey?: string;
      maxTokens?: number; temperature?: number; stream?: boolean;
      headers?: Record<string, string>; maxRetries?: number; contextWindow?: number; }
  | { provider: "demo"; model?: string; stream?: boolean; contextWindow?: number }
  | { provider: "custom"; model?: string; contextWindow?: number;
      call: (request: CustomModelRequest) => CustomModelAnswer | Promise<CustomModelAnswer> }
  /** A GGUF model run in the page by the package's `local` module, loaded only for this
   *  provider (README "A model in the page"). */
  | { provider: "local"; url: string | Blob; sha256?: string; contextWindow?: number;
      maxTokens?: number; temperature?: number; toolChoice?: "auto" | "required";
      parallelToolCalls?: boolean;
      /** Where it runs: `"auto"` (default) WebGPU when the browser gives an adapter llama.cpp
       *  can use, else the CPU; `"cpu"`; `"webgpu"` (else `webgpu_unavailable`). A
       *  `model_runtime` event says which, and on how many threads. */
      device?: "auto" | "cpu" | "webgpu" };

/** Why a model in the page runs on one thread (`model_runtime`): the page is not
 *  cross-origin isolated (README "A model in the page": two headers), the browser has no
 *  `SharedArrayBuffer`, it reports one core, or the runtime chose one. */
export type ModelSingleThreadReason = "not_isolated" | "no_shared_array_buffer" | "one_core" | "runtime";
/** Why a model in the page runs on the CPU (`model_runtime`): `device: "cpu"` asked for it,
 *  there is no WebGPU adapter, or llama.cpp put no layer on the one there is (a software
 *  adapter without `shader-f16`, such as SwiftShader). */
export type ModelCpuReason = "requested" | "no_webgpu" | "webgpu_unusable";

/** Where threads live: this browser's IndexedDB (default) or memory, or the app's Postgres
 *  behind the store handler it mounted at `url` (`gatehouse-agent/server`), with the headers
 *  every request to it carries (`authorization`…): the thread follows the user to every
 *  device. `database` names the IndexedDB database (and, for a remote thread, its local
 *  copy). */
export type StorageOptions =
  | { kind?: "indexeddb" | "memory"; database?: string }
  | { kind: "remote"; url: string; headers?: Record<string, string>; database?: string };

export interface AgentOptions {
  threadId: string;
  /** Defaults to the offline `demo` model. */
  model?: ModelOptions;
  instructions?: string;
  tools?: Tool[];
  /** Defaults to IndexedDB where it exists, memory elsewhere. */
  storage?: StorageOptions;
  /** Model calls allowed per run (default 10). */
  maxSteps?: number;
  /** Send only the latest N messages to the model (default: the whole thread). The window
   *  starts at a user message, so a tool result is never sent without its call. */
  historyLimit?: number;
  /** The `approvalTimeout` (ms) of every tool that sets none. */
  approvalTimeout?: number;
  /** MCP servers whose tools are offered as `<name>__<tool>`, each asking first. */
  mcpServers?: McpServerOptions[];
  /** OpenTelemetry spans of this agent's runs, made with your tracer (README, "Telemetry").
   *  Without it nothing is traced and the telemetry module is never loaded. */
  telemetry?: TelemetryOptions;
  /** The tools this page registers with WebMCP (`document.modelContext`), offered as the MCP
   *  server `page` (README, "WebMCP"): each asks first, like every MCP tool. */
  webmcp?: boolean | { name?: string; trustReadOnlyHint?: boolean; tools?: string[] };
}

/** `Agent.open({ telemetry })`: spans following OpenTelemetry's GenAI conventions
 *  (`invoke_agent`, `chat`, `execute_tool`, and `await_approval` for a human's decision). */
export interface TelemetryOptions {
  /** Your tracer: `trace.getTracer("my-app")` of `@opentelemetry/api`. */
  tracer: {
    startSpan(name: string, options?: any, context?: any): any;
    startActiveSpan(name: string, ...rest: any[]): any;
  };
  /** Put the user's message and tools' arguments in the attributes (default false). */
  recordInputs?: boolean;
  /** Put answers and tools' results in the attributes (default false). */
  recordOutputs?: boolean;
  /** `gen_ai.agent.name` and the `invoke_agent` span's name (default "gatehouse"). */
  agentName?: string;
  /** Attributes added to every span (e.g. your app's user or tenant id). */
  attributes?: Record<string, string | number | boolean>;
}

/** An MCP server (Streamable HTTP). It must allow this page's origin with CORS and expose
 *  `Mcp-Session-Id` (README, "MCP tools"). */
export interface McpServerOptions {
  /** The tools' prefix: 1 to 32 of a-z, A-Z, 0-9, _ or -, without "__". */
  name: string;
  url: string;
  /** Sent with every request (e.g. `authorization`); kept in memory, never stored. */
  headers?: Record<string, string>;
  /** `true`: tools the server annotates `readOnlyHint: true` run without asking. */
  trustReadOnlyHint?: boolean;
  /** Only these of the server's tools (its own names). */
  tools?: string[];
}

/** What an MCP tool's entry shows under `parameters.mcp`: hints from the server, not checked. */
export interface McpToolHints {
  server: string; tool: string; title?: string;
  readOnlyHint?: boolean; destructiveHint?: boolean; openWorldHint?: boolean;
}

/** What `onEvent` receives. Mirrors the Rust `Event` enum (src/event.rs): `make test-types`
 *  checks one fixture of each variant against this union. */
export type AgentEvent =
  | { type: "text_delta"; delta: string }
  | { type: "tool_call_started"; index: number; callId: string; name: string }
  | { type: "tool_call_delta"; index: number; delta: string }
  | { type: "message"; message: Message }
  | { type: "message_updated"; message: Message }
  /** The model is asked (once per model call; a failed attempt tried again is a `retry` within it). */
  | { type: "model_call_started" }
  /** The model call ended: the answer's usage and stop reason, or the error that ended it. */
  | { type: "model_call_ended"; ok: boolean; usage?: Usage; stopReason?: string;
      error?: { code: string; message: string; status?: number } }
  /** A tool's `execute` (or an MCP server's `tools/call`) is called next for this call. */
  | { type: "tool_started"; callId: string; name: string; inputs: Record<string, unknown> }
  | { type: "tool_result"; callId: string; name: string; ok: boolean; result: unknown }
  | { type: "retry"; attempt: number; delayMs: number;
      /** `status`: the HTTP status of a provider's error (429: rate limited). */
      error: { code: string; message: string; status?: number } }
  | { type: "mcp_error"; server: string;
      code: "unreachable" | "unauthorized" | "http" | "timeout" | "protocol" | "rpc" | "aborted" | "cut_off";
      message: string; status?: number }
  | { type: "warning"; code: "mcp_tool_skipped"; message: string }
  /** An MCP server asks the user something while `elicitation.callId` runs: answer it with
   *  `submitElicitations`. (This and the next come from the package entry, not the Rust
   *  `Event`: the questions wait in its JS, docs/design.md "MCP elicitation".) */
  | { type: "elicitation_requested"; elicitation: PendingElicitation }
  /** The question no longer waits: answered, or cancelled (the run was aborted, or the server
   *  withdrew it or its call ended). */
  | { type: "elicitation_ended"; id: string; callId: string; action: "accept" | "decline" | "cancel" }
  /** A `local` model getting its file ("download": from the network, "cache": from the
   *  browser's cache) or loading it ("load"). `total` is absent when the server does not say. */
  | { type: "model_progress"; phase: "download" | "cache" | "load"; loaded: number; total?: number }
  | { type: "model_runtime"; device: "cpu" | "webgpu"; threads: number;
      singleThreadReason?: ModelSingleThreadReason; cpuReason?: ModelCpuReason }
  | { type: "completed" | "awaiting_approval" | "awaiting_tool_results" | "awaiting_device";
      message: Message | null };

export interface RunOptions {
  signal?: AbortSignal; onEvent?: (event: AgentEvent) => void;
  /** Who makes the decisions of this call (`submitDecisions`), e.g. the app's user id: kept
   *  in the audit trail as `decidedBy`. */
  by?: string;
}
/** One gated call in the audit trail (`agent.audit()`). Times are ms since the epoch; what has
 *  not happened yet is `null`. A call re-gated after its execution was cut off ends its record
 *  with `outcome: "regated"`, and the new request gets the next one. */
export interface AuditRecord {
  /** Its place in the thread's trail, from 1. */
  seq: number;
  callId: string;
  tool: string;
  /** Why a human was asked (the entry's `approvalReason` then). */
  reason: string | null;
  /** The inputs the model proposed. */
  proposedInputs: Record<string, unknown>;
  requestedAt: number;
  /** `"edited"`: approved with inputs a human changed. */
  decision: "approved" | "edited" | "rejected" | "expired" | null;
  rejectReason: string | null;
  decidedAt: number | null;
  /** The `by` passed with the decisions; for a call a remembered grant approved, the grant's
   *  maker. */
  decidedBy: string | null;
  /** Only on a call a remembered grant approved (instead of a human): the grant's id. */
  grantId?: string;
  /** The inputs it ran with; `null` if it did not run. */
  inputs: Record<string, unknown> | null;
  startedAt: number | null;
  endedAt: number | null;
  /** `null` while the call has not ended. */
  outcome: "ok" | "tool_error" | "rejected" | "expired" | "regated" | null;
}
export interface MessagesOptions { limit?: number; beforeIndex?: number; }
export interface ToolPolicy { enabled: boolean; autoApprove: boolean; }
/** Where a remembered grant applies: this thread, every thread of the user (a local store:
 *  of this database), or every thread of the app, whoever runs it. */
export type GrantScope = "thread" | "user" | "app";
/** `agent.grant(request)`: "always allow" `tool`, optionally only for inputs that `match`
 *  (each key an input's name; a string is a glob for a string input, `*` within one `/`
 *  segment, `**` across; any other value must be equal; a value with a `..` segment never
 *  matches a wildcard), and only for `expiresIn` ms. */
export interface GrantRequest {
  tool: string;
  scope: GrantScope;
  match?: Record<string, unknown>;
  expiresIn?: number;
}
/** A remembered grant in force (`agent.grants()`). */
export interface Grant {
  id: string;
  tool: string;
  scope: GrantScope;
  /** Only on a `thread` grant. */
  threadId?: string;
  match?: Record<string, unknown>;
  createdAt: number;
  /** A remote store's: the identity its handler authorized; a local store's: `grant`'s `by`. */
  createdBy: string | null;
  expiresAt: number | null;
}
export interface ToolPolicyUpdate { enabled?: boolean | null; autoApprove?: boolean | null; }
export interface ThreadSummary {
  threadId: string; title: string | null; messageCount: number; createdAt: number;
  updatedAt: number;
  /** What `agent.status()` would say, read from the thread record alone. */
  status: ThreadStatus;
}
/** What a `subscribeThreads()` listener receives: a thread of the database was created or
 *  changed (`status` as `agent.status()` said it then), or deleted (`status: null`). */
export interface ThreadListChange {
  threadId: string;
  status: ThreadStatus | null;
  deleted: boolean;
}
/** What a `subscribe()` listener receives after a change to the thread (here or elsewhere). */
export interface ThreadChange {
  threadId: string;
  /** What `agent.status()` says now. */
  status: ThreadStatus;
  lastMessage: Message | null;
}

/** The `code` of a `GatehouseError`: the Rust errors' codes (`AgentError::code`), then the
 *  codes of the package entry: lifecycle (`disposed`, `not_initialized`) and MCP
 *  elicitation's answers (`unknown_elicitation`, `invalid_elicitation_answer`). */
export type GatehouseErrorCode =
  | "conflict" | "not_suspended" | "invalid_decision" | "invalid_tool_results"
  | "unknown_call_id" | "expired" | "busy" | "network" | "provider" | "storage" | "invalid_config"
  | "aborted" | "nothing_to_retry" | "unknown_tool" | "internal" | "context_overflow"
  | "unauthorized" | "disposed" | "not_initialized"
  | "model_not_gguf" | "model_checksum" | "model_download" | "quota_exceeded" | "out_of_memory"
  | "webgpu_unavailable"
  | "invalid_grant" | "unknown_grant" | "too_many_grants" | "grant_revoked"
  | "unknown_elicitation" | "invalid_elicitation_answer";

/** Added to the class by the package entry (gatehouse.js). */
export interface Agent {
  /** Releases the agent. A call that is running finishes first (its promise settles as
   *  usual); the agent is released then, and the promise returned resolves. Every call made
   *  after `dispose()` fails with a `GatehouseError` `"disposed"`. Calling it again is a no-op.
   *  `free()` and `[Symbol.dispose]()` do the same without returning the promise. */
  dispose(): Promise<void>;
  [Symbol.asyncDispose](): Promise<void>;
  /** The questions MCP servers ask the user while their calls run here (synchronous; `[]`
   *  without `mcpServers`). */
  pendingElicitations(): PendingElicitation[];
  /** Answers questions of `pendingElicitations()`, keyed by their id. The whole map is
   *  checked first: an unknown id (`unknown_elicitation`) or an answer that does not fit its
   *  question (`invalid_elicitation_answer`) throws and answers none. */
  submitElicitations(answers: Record<string, ElicitationAnswer>): void;
  /** Remembers "always allow" for a tool: `{ tool, scope: "thread" | "user" | "app", match?,
   *  expiresIn? }`; `{ by }` names who made it on a local store (a remote store's maker is
   *  the identity its handler authorized). Refused with `invalid_grant` when malformed, or for
   *  a tool the agent lacks or whose `allowedDecisions` exclude "approve". */
  grant(request: GrantRequest, options?: { by?: string }): Promise<Grant>;
  /** The remembered grants in force for this thread (the database's or the identity's user
   *  and app grants, and the thread's own). */
  grants(): Promise<Grant[]>;
}
"#;
