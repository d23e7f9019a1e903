// Compiled with `tsc --noEmit --strict` against the built pkg/gatehouse.d.ts (make test-types).
// It uses every option, event and return type the way an app would; a type that drifts from
// the API breaks this file.
import init, {
  Agent,
  type AgentEvent,
  type AgentOptions,
  type AgentState,
  type Decisions,
  type GatehouseError,
  type Message,
  type Tool,
  type ToolEntry,
} from "../../pkg/gatehouse.js";

interface DeleteInputs { path: string }

const deleteFile: Tool<DeleteInputs> = {
  name: "delete_file",
  description: "Delete a file from the filesystem",
  parameters: { type: "object", properties: { path: { type: "string" } }, required: ["path"] },
  execute: async (inputs, ctx) => ({ deleted: inputs.path, call: ctx.callId }),
  approvalPolicy: (inputs) => (inputs.path.startsWith("/etc") ? "System files are protected" : true),
  label: "Delete file",
  enabled: true,
  autoApprove: false,
  idempotent: false,
};

const external: Tool = { name: "open_ticket", parameters: { type: "object" } };

export async function example(signal: AbortSignal): Promise<void> {
  await init();
  const options: AgentOptions = {
    threadId: "thread_42",
    model: { provider: "openai", baseUrl: "http://127.0.0.1:1/v1", apiKey: "k", model: "m", stream: true },
    instructions: "You are a careful assistant.",
    tools: [deleteFile, { ...deleteFile, name: "delete_file_2", requireApproval: false }, external],
    storage: { kind: "indexeddb", database: "gatehouse" },
    maxSteps: 8,
  };
  const agent = await Agent.open(options);
  const seen: string[] = [];
  const onEvent = (e: AgentEvent) => {
    if (e.type === "text_delta") seen.push(e.delta);
    if (e.type === "awaiting_approval" && e.message?.type === "tool_call") seen.push(e.message.tools[0].callId);
  };
  let state: AgentState = await agent.chat("Clean up the old logs", { signal, onEvent });
  const pending: ToolEntry[] = agent.pendingTools();
  const decisions: Decisions = { [pending[0].callId]: "approve", other: ["reject", "Do not email the team"] };
  state = await agent.submitDecisions(decisions);
  state = await agent.submitToolResults({ call_9: { status: "open" } });
  const last: Message | null = agent.lastMessage();
  if (last?.type === "tool_call") {
    const reasons: (string | null | undefined)[] = last.tools.map((t) => t.approvalReason);
    seen.push(String(reasons.length));
  }
  const all: Message[] = await agent.messages();
  const page: Message[] = await agent.messages({ limit: 20, beforeIndex: all.length });
  const handled = await agent.handle({ decisions: { x: "reject" } });
  if (handled.status === "conflict") seen.push(handled.error);
  await agent.setToolPolicy("delete_file", { enabled: true, autoApprove: null });
  const policies = agent.toolPolicies();
  seen.push(String(policies["delete_file"].autoApprove), agent.status(), agent.threadId, String(page.length));
  const threads = await Agent.listThreads({ database: "gatehouse" });
  seen.push(threads[0]?.threadId ?? "");
  await Agent.deleteThread("thread_42", { kind: "memory" });
  try {
    await agent.retry();
  } catch (err) {
    const e = err as GatehouseError;
    if (e.code === "nothing_to_retry" && !e.retryable) seen.push(e.message);
  }
  void state;
}
