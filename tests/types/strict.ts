// What must compile and what must not, against the built pkg/gatehouse.d.ts (make test-types).
// Every `@ts-expect-error` line must be an error: when one stops being one, tsc fails with
// TS2578 ("Unused '@ts-expect-error' directive"). Type equalities are checked with `same`.
import * as pkg from "../../pkg/gatehouse.js";
import init, {
  Agent,
  GatehouseError,
  defineTool,
  initRemote,
  initSync,
  isGatehouseError,
  type AgentState,
  type AuditRecord,
  type DecisionFor,
  type Decisions,
  type FromSchema,
  type GatehouseErrorCode,
  type Message,
  type ThreadChange,
  type ThreadListChange,
  type ThreadStatus,
  type ThreadSummary,
  type ToolEntry,
} from "../../pkg/gatehouse.js";

type Equal<A, B> = (<T>() => T extends A ? 1 : 2) extends <T>() => T extends B ? 1 : 2 ? true : false;
function same<T extends true>(): T | void {}

declare const agent: Agent;

// --- Async methods resolve to their value, not to a promise of it.
export const chained = agent.chat("Clean up").then((s) => s.status);
export const threads = Agent.listThreads().then((list) => list.map((t) => t.threadId));
export const count = agent.messages({ limit: 5 }).then((m: Message[]) => m.length);
const afterDecisions: () => Promise<AgentState> = () => agent.submitDecisions({ a: "approve" });
const afterResults: () => Promise<AgentState> = () => agent.submitToolResults({ c: { ok: 1 } });
const afterRetry: () => Promise<AgentState> = () => agent.retry();
const chat: (message: string) => Promise<AgentState> = (m) => agent.chat(m);
const handled: Promise<AgentState | { status: "conflict"; error: string }> = agent.handle({ message: "hi" });
const policy: Promise<void> = agent.setToolPolicy("search", { autoApprove: true });
const opened: Promise<Agent> = Agent.open({ threadId: "t" });
const disposed: Promise<void> = agent.dispose();
const ready: Promise<void> = init();
const readyFrom: Promise<void> = init({ module_or_path: new URL("https://cdn.example/gatehouse_bg.wasm") });
const sync: (bytes: Uint8Array) => void = (bytes) => initSync({ module: bytes });
const remoteReady: Promise<void> = initRemote();
const remoteFrom: Promise<void> = initRemote({ module_or_path: "/assets/gatehouse_remote_bg.wasm" });
// @ts-expect-error: the wasm's location, not a storage
initRemote({ kind: "remote" });
export const promises = [afterDecisions, afterResults, afterRetry, chat, handled, policy, opened, disposed, ready, readyFrom, sync, remoteReady, remoteFrom];
same<Equal<Awaited<ReturnType<Agent["chat"]>>, AgentState>>();
same<Equal<Awaited<ReturnType<Agent["messages"]>>, Message[]>>();
same<Equal<Awaited<ReturnType<typeof Agent.listThreads>>, ThreadSummary[]>>();
// Synchronous ones are not promises.
const pending: ToolEntry[] = agent.pendingTools();
const status: ThreadStatus = agent.status();
export const sync2 = [pending, status];

// --- The audit trail.
export const trail = agent.audit({ limit: 10 }).then((r: AuditRecord[]) => r.map((a) => a.outcome));
same<Equal<AuditRecord["decision"], "approved" | "edited" | "rejected" | "expired" | null>>();
export const byWhom = agent.submitDecisions({ a: "approve" }, { by: "user-42" });
export const byHandle = agent.handle({ decisions: { a: "approve" }, by: "user-42" });
// @ts-expect-error `by` names the decider with a string
agent.submitDecisions({ a: "approve" }, { by: 42 });

// --- Arguments.
// @ts-expect-error the message is a string
agent.chat(42);
// @ts-expect-error the message is required
agent.chat();
// @ts-expect-error a decision is "approve", "reject", ["reject", reason] or ["edit", inputs]
export const maybe: Decisions = { toolu_01: "maybe" };
// @ts-expect-error an approval takes no comment
export const noted: Decisions = { toolu_01: ["approve", "fine"] };
export const good: Decisions = {
  a: "approve", b: "reject", c: ["reject", "Not this file"], d: ["edit", { path: "/tmp/x" }],
};
// @ts-expect-error the edited inputs are an object
export const editedText: Decisions = { a: ["edit", "/tmp/x"] };
// @ts-expect-error an edit carries the inputs
export const editedNothing: Decisions = { a: ["edit"] };

// --- Live threads: a listener of ThreadChange, an unsubscribe function back.
const unsubscribe: () => void = agent.subscribe((c: ThreadChange) => {
  const s: ThreadStatus = c.status;
  const last: Message | null = c.lastMessage;
  const id: string = c.threadId;
  return [s, last, id];
});
const stopList: () => void = Agent.subscribeThreads({ database: "gatehouse" }, (c: ThreadListChange) => {
  const st: ThreadStatus | null = c.status;
  return [c.threadId, c.deleted, st];
});
export const live = [unsubscribe, stopList];
// @ts-expect-error a thread-list change has no lastMessage
Agent.subscribeThreads(undefined, (c) => c.lastMessage);
// @ts-expect-error a listener is a function
agent.subscribe("on change");
// @ts-expect-error a change has no `state` field
agent.subscribe((c) => c.state);

// --- Tool inputs inferred from the schema, in execute and approvalPolicy.
export const deleteFile = defineTool({
  name: "delete_file",
  description: "Delete a file",
  parameters: {
    type: "object",
    properties: { path: { type: "string" }, force: { type: "boolean" } },
    required: ["path"],
  },
  execute: async (inputs, ctx) => {
    const path: string = inputs.path;
    const force: boolean | undefined = inputs.force;
    // @ts-expect-error not a property of the schema
    void inputs.pth;
    // @ts-expect-error `force` is not required, so it may be undefined
    const sure: boolean = inputs.force;
    return { deleted: path, force, sure, callId: ctx.callId };
  },
  approvalPolicy: (inputs) => (inputs.path.startsWith("/etc") ? "System files are protected" : false),
});

// --- An edit typed from the tool's schema; allowedDecisions.
same<
  Equal<
    DecisionFor<typeof deleteFile>,
    "approve" | "reject" | ["reject", string] | ["edit", { path: string; force?: boolean }]
  >
>();
const typedEdit: DecisionFor<typeof deleteFile> = ["edit", { path: "/tmp/old" }];
// @ts-expect-error `path` is a string
export const typedBad: DecisionFor<typeof deleteFile> = ["edit", { path: 5 }];
// @ts-expect-error `path` is required
export const typedMissing: DecisionFor<typeof deleteFile> = ["edit", { force: true }];
export const submitted = () => agent.submitDecisions({ toolu_01: typedEdit });
export const reviewed = defineTool({
  name: "send_email",
  parameters: { type: "object", properties: { to: { type: "string" } }, required: ["to"] },
  allowedDecisions: ["approve", "reject"],
  execute: (inputs) => inputs.to,
});
export const noDecisions = defineTool({
  name: "send_email",
  // @ts-expect-error at least one decision
  allowedDecisions: [],
});
export const respond = defineTool({
  name: "send_email",
  // @ts-expect-error not a decision this SDK knows
  allowedDecisions: ["approve", "respond"],
});

// --- approvalTimeout on a tool and as the Agent.open default; the "expired" state and code.
export const timed = defineTool({
  name: "send_email",
  approvalTimeout: 60_000,
  execute: () => "sent",
});
export const timedBad = defineTool({
  name: "send_email",
  // @ts-expect-error milliseconds, as a number
  approvalTimeout: "1m",
});
export const openTimed = () => Agent.open({ threadId: "t", approvalTimeout: 300_000, tools: [timed] });
same<Equal<Extract<ToolEntry["approval"], "expired">, "expired">>();
export const expiredCode: GatehouseErrorCode = "expired";

const orderSchema = {
  type: "object",
  properties: {
    sku: { type: "string" },
    qty: { type: "integer", minimum: 1 },
    size: { enum: ["S", "M", "L"] },
    note: { type: ["string", "null"] },
    tags: { type: "array", items: { type: "string" } },
    gift: { type: "object", properties: { to: { type: "string" } }, required: ["to"], additionalProperties: false },
  },
  required: ["sku", "qty", "size"],
} as const;
export const order = defineTool({
  name: "place_order",
  parameters: orderSchema,
  execute: (inputs) => {
    same<Equal<typeof inputs, FromSchema<typeof orderSchema>>>();
    // @ts-expect-error qty is a number
    inputs.qty.toUpperCase();
    // @ts-expect-error "XL" is not one of the sizes
    if (inputs.size === "XL") return null;
    return inputs.tags?.map((t) => t.toUpperCase());
  },
});
same<
  Equal<
    FromSchema<typeof orderSchema>,
    {
      sku: string;
      qty: number;
      size: "S" | "M" | "L";
      note?: string | null;
      tags?: string[];
      gift?: { to: string };
    }
  >
>();
same<Equal<FromSchema<{ anyOf: [{ type: "string" }, { type: "number" }] }>, string | number>>();
same<Equal<FromSchema<{ type: "string"; nullable: true }>, string | null>>();
same<Equal<FromSchema<{ const: 3 }>, 3>>();
same<Equal<FromSchema<{ type: "object" }>, { [key: string]: unknown }>>();
same<Equal<FromSchema<{ type: "object"; additionalProperties: { type: "number" } }>, { [key: string]: number }>>();
same<Equal<FromSchema<{ type: "array"; prefixItems: [{ type: "string" }] }>, [string, ...unknown[]]>>();
same<Equal<FromSchema<{ allOf: [{ type: "object"; properties: { a: { type: "string" } }; required: ["a"] }, { type: "object"; properties: { b: { type: "number" } } }] }>["a"], string>>();

// A tool without a schema takes any object; tools of every kind go into Agent.open.
export const ping = defineTool({ name: "ping", execute: (inputs) => Object.keys(inputs).length });
export const all = Agent.open({ threadId: "t", tools: [deleteFile, order, ping, { name: "external" }] });
defineTool({
  name: "bad_schema",
  // @ts-expect-error not a JSON Schema type name
  parameters: { type: "text" },
});

// --- Errors: a real class with a code union.
export async function errors(): Promise<string> {
  try {
    await agent.chat("hi");
  } catch (e) {
    if (e instanceof GatehouseError) {
      const code: GatehouseErrorCode = e.code;
      // @ts-expect-error not a code Gatehouse produces
      if (e.code === "timeout") return "never";
      if (e.code === "disposed" || e.code === "not_initialized" || e.code === "busy") return code;
    }
    if (isGatehouseError(e) && e.retryable) return e.message;
  }
  return "";
}
// @ts-expect-error the class is not constructed by users
new GatehouseError();

// --- Statuses: listThreads and status() share one set.
same<Equal<ThreadSummary["status"], ThreadStatus>>();
same<Equal<ThreadStatus, "idle" | "awaiting_approval" | "awaiting_tool_results" | "interrupted" | "awaiting_device" | "queued" | "running">>();
// @ts-expect-error "waiting" is not a status
export const waiting: ThreadSummary["status"] = "waiting";

// --- Disposal: `using` works, and nothing of the wasm's internals is exported.
export async function scoped(): Promise<void> {
  using a = await Agent.open({ threadId: "t" });
  await a.chat("hi");
  await using b = await Agent.open({ threadId: "u" });
  await b.chat("hi");
}
// @ts-expect-error wasm-bindgen's raw exports are not part of the API
export type Raw = pkg.InitOutput;
same<Equal<keyof typeof pkg, "Agent" | "GatehouseError" | "defineTool" | "default" | "initRemote" | "initSync" | "isGatehouseError">>();

// --- MCP servers (README "MCP tools").
export const withMcp = Agent.open({ threadId: "t", mcpServers: [{ name: "github",
  url: "https://mcp.example.com/mcp", headers: { authorization: "Bearer x" },
  trustReadOnlyHint: true, tools: ["search_issues"] }] });
// @ts-expect-error a server needs a url
export const noUrl = Agent.open({ threadId: "t", mcpServers: [{ name: "github" }] });
// @ts-expect-error headers are strings
export const badHeaders = Agent.open({ threadId: "t", mcpServers: [{ name: "g", url: "u", headers: { a: 1 } }] });
// @ts-expect-error an unknown key is refused (as it is at run time, `invalid_config`)
export const typo = Agent.open({ threadId: "t", mcpServers: [{ name: "g", url: "u", trustReadOnlyHints: true }] });
export const onMcpEvent = agent.chat("x", { onEvent: (e) => {
  if (e.type === "mcp_error") { const c: string = e.code; const s: number | undefined = e.status; return [c, s]; }
  if (e.type === "warning") return e.message;
} });

// Telemetry: the app's OpenTelemetry tracer is accepted as it is; a misspelled key is not.
import { trace } from "@opentelemetry/api";
Agent.open({ threadId: "t", telemetry: { tracer: trace.getTracer("app"), recordInputs: true, attributes: { tenant: "acme", n: 1 } } });
// @ts-expect-error: `recordInput` is not a telemetry option
Agent.open({ threadId: "t", telemetry: { tracer: trace.getTracer("app"), recordInput: true } });
// @ts-expect-error: an attribute is a string, a number or a boolean
Agent.open({ threadId: "t", telemetry: { tracer: trace.getTracer("app"), attributes: { a: { b: 1 } } } });
// @ts-expect-error: a tracer is required
Agent.open({ threadId: "t", telemetry: {} });

// WebMCP: true, or the MCP server's options for the page's tools.
Agent.open({ threadId: "t", webmcp: true });
Agent.open({ threadId: "t", webmcp: { name: "shop", trustReadOnlyHint: true, tools: ["add_to_cart"] } });
// @ts-expect-error: the page's tools have no URL of their own
Agent.open({ threadId: "t", webmcp: { url: "https://x" } });
