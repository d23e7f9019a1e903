// The subpath exports' declarations (pkg/react.d.ts, pkg/ui/index.d.ts), used as an app would,
// under `tsc --strict` (make test-types); the @ts-expect-error lines must stay errors.
import type { AgentState, ThreadSummary, ToolEntry } from "../../pkg/gatehouse.js";
import type { GatehouseErrorCode, Message } from "../../pkg/gatehouse.js";
import { ApprovalCards as Cards, ChatView as View, Composer as Box, Thread, useAgent, useThreads, type ApprovalRenderers, type UseAgent } from "../../pkg/react.js";
import { ApprovalCards, ChatView, Composer, approvalEntries, isSuspended } from "../../pkg/ui/index.js";
import { GatehouseChat, defineGatehouseChat } from "../../pkg/ui/element.js";
// @ts-expect-error: the element is not in gatehouse-agent/ui (importing that must define nothing)
import { defineGatehouseChat as define } from "../../pkg/ui/index.js";

export function Chat(threadId: string): string {
  const a: UseAgent = useAgent({ threadId, storage: { database: "app" } });
  const pending: ToolEntry[] = a.pendingTools;
  if (a.status === "awaiting_approval") {
    const done: Promise<AgentState | undefined> = a.decide({ [pending[0].callId]: ["edit", { path: "/tmp/x" }] });
    void done;
  }
  // @ts-expect-error: a status the hook never reports
  if (a.status === "done") return "";
  // @ts-expect-error: decisions are keyed by callId
  void a.decide("approve");
  // @ts-expect-error: useAgent needs a threadId
  useAgent({ storage: { database: "app" } });
  a.stop();
  // The error is a GatehouseError, never unknown.
  const code: GatehouseErrorCode | undefined = a.error?.code;
  const failed: string[] = a.failedCalls;
  const page: Message[] = a.messages;
  void a.loadOlder();
  const stored: Promise<boolean> = a.setToolPolicy("delete_file", { autoApprove: true });
  // @ts-expect-error: a policy has no such field
  void a.setToolPolicy("delete_file", { always: true });
  void [code, failed, page, stored, a.hasOlder, a.toolPolicies.delete_file?.autoApprove, a.agent?.threadId, a.busy];
  return a.streamingText + (a.lastMessage?.role ?? "");
}

export function Components(chat: UseAgent) {
  const renderers: ApprovalRenderers = {
    delete_file: (call, decide, { busy }) => (busy ? null : String(call.inputs.path) + String(decide(["edit", { path: "/tmp" }]))),
  };
  // @ts-expect-error: decide takes a decision, not a map
  const wrong: ApprovalRenderers = { t: (_call, decide) => String(decide({ x: "approve" })) };
  return [
    Thread({ chat, approvalRenderers: renderers, style: { flex: 1 } }),
    View({ agent: chat.agent, suggestions: ["hi"] }),
    Cards({ chat, alwaysAllow: false }),
    Box({ chat }),
    wrong,
  ];
}

export function Sidebar(): ThreadSummary[] {
  const { threads, deleteThread } = useThreads({ database: "app" });
  void deleteThread(threads[0].threadId);
  return threads;
}

export async function mount(root: HTMLElement) {
  const view = new ChatView({ root, tools: [{ name: "delete_file", label: "Delete", allowedDecisions: ["approve", "reject"] }] });
  // @ts-expect-error: not a decision
  new ApprovalCards({ onDecide: async () => {}, tools: [{ name: "t", allowedDecisions: ["maybe"] }] });
  const cards = new ApprovalCards({ onDecide: (id, d) => view.decide(id, d) });
  cards.update(view.agent?.lastMessage());
  const widget: GatehouseChat = document.createElement("gatehouse-chat");
  const defined: typeof GatehouseChat = defineGatehouseChat("my-chat");
  const box = new Composer({ onSend: (text) => view.send(text) });
  box.update({ pending: true });
  cards.setErrors({ call_1: "refused" });
  new ApprovalCards({ onDecide: async () => {}, renderers: { t: (entry, { el, decide }) => { el.textContent = entry.name; void decide("approve"); } } });
  return [isSuspended(widget.agent?.lastMessage()), approvalEntries(null).length, cards.visible, defined, define, box.el] as const;
}

// gatehouse-agent/local and the `local` provider's options.
import { forgetModel, localModel, type LocalModelOptions } from "../../pkg/local/index.js";
import type { AgentEvent, AgentOptions } from "../../pkg/gatehouse.js";
export const localOptions: AgentOptions = {
  threadId: "t",
  model: { provider: "local", url: "/m.gguf", sha256: "0".repeat(64), toolChoice: "required", maxTokens: 64 },
};
export const fromBlob: LocalModelOptions = { provider: "local", url: new Blob([]) };
// @ts-expect-error: the URL is required
export const noUrl: LocalModelOptions = { provider: "local" };
// @ts-expect-error: toolChoice is "auto" or "required"
export const badChoice: AgentOptions = { threadId: "t", model: { provider: "local", url: "/m.gguf", toolChoice: "any" } };
export const made = localModel(fromBlob, (m) => new Error(m)).provider satisfies "custom";
export const forgot: Promise<void> = forgetModel("/m.gguf");
export function progress(e: AgentEvent): number {
  return e.type === "model_progress" ? e.loaded / (e.total ?? 1) : 0;
}

// gatehouse-agent/ag-ui: the events are typed by `type`, the outcome by its own `type`.
import { agUiEvents, type AgUiEvent } from "../../pkg/ag-ui.js";
import type { Agent as GatehouseAgent } from "../../pkg/gatehouse.js";
export async function interrupts(agent: GatehouseAgent): Promise<string[]> {
  const ids: string[] = [];
  for await (const e of agUiEvents(agent, { threadId: "t", runId: "r", messages: [{ id: "u", role: "user", content: "hi" }] })) {
    const event: AgUiEvent = e;
    if (event.type === "RUN_FINISHED" && event.outcome.type === "interrupt") ids.push(...event.outcome.interrupts.map((i) => i.toolCallId));
    // @ts-expect-error: RUN_ERROR carries a Gatehouse error code, not any string
    if (event.type === "RUN_ERROR" && event.code === "oops") ids.push("");
  }
  // @ts-expect-error: a resume entry's payload is a decision
  agUiEvents(agent, { threadId: "t", runId: "r", messages: [], resume: [{ interruptId: "c", status: "resolved", payload: { decision: "yes" } }] });
  return ids;
}
