// The subpath exports' declarations (pkg/react.d.ts, pkg/ui/index.d.ts), used as an app would,
// under `tsc --strict` (make test-types); the @ts-expect-error lines must stay errors.
import type { AgentState, ThreadSummary, ToolEntry } from "../../pkg/gatehouse.js";
import { useAgent, useThreads, type UseAgent } from "../../pkg/react.js";
import { ApprovalCards, ChatView, GatehouseChat, approvalEntries, isSuspended } from "../../pkg/ui/index.js";

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
  return a.streamingText + (a.lastMessage?.role ?? "");
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
  return [isSuspended(widget.agent?.lastMessage()), approvalEntries(null).length, cards.visible] as const;
}
