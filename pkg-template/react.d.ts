// gatehouse-agent/react: React hooks and components over the package's Agent and its ui kit
// (React >= 18 and react-dom, peer dependencies).
import type { CSSProperties, ReactNode } from "react";
import type {
  Agent, AgentOptions, AgentState, Decisions, GatehouseError, Message, StorageOptions, ThreadStatus,
  PendingToolEntry, ThreadSummary, ToolEntry, ToolPolicy, ToolPolicyUpdate,
  ElicitationAnswer, PendingElicitation,
} from "./gatehouse.js";
import type { CardDecision, ToolDisplay } from "./ui/index.js";

/** The options of `Agent.open`, and how many messages a page of `messages` holds. */
export interface UseAgentOptions extends AgentOptions {
  /** Messages per page of `messages` (default 50). */
  pageSize?: number;
}

/** What `useAgent` returns: the thread's view (re-rendered after every change to it, here or in
 *  another tab) and its actions.
 *
 *  The actions never reject: each resolves to its result, or to `undefined` (`false` for
 *  `setToolPolicy`) when it failed; then `error` says why and `failedCalls` names the calls the
 *  action concerned. The components show such an error on the card of that call, whichever
 *  code made the decision. */
export interface UseAgent {
  /** True once the thread is open and its newest page of messages read. */
  ready: boolean;
  /** `agent.status()`; `"loading"` while the thread opens, `"error"` when it could not open. */
  status: ThreadStatus | "loading" | "error";
  /** The open agent (null until `ready`), for what the hook does not cover. Disposed by the
   *  hook: do not keep it past an unmount or a thread switch. */
  agent: Agent | null;
  /** The newest messages, oldest first: the newest page when the thread opens, and every
   *  message since, live (this hook's calls, another `Agent`, another tab). */
  messages: Message[];
  /** Older messages exist than `messages[0]`: `loadOlder()` reads the page before it. */
  hasOlder: boolean;
  loadOlder(): Promise<void>;
  lastMessage: Message | null;
  /** The text of the answer being written (from `text_delta` events); `""` otherwise. */
  streamingText: string;
  /** Calls waiting for a decision (`agent.pendingTools()`). */
  pendingTools: PendingToolEntry[];
  /** External calls waiting for their result (`agent.pendingToolResults()`). */
  pendingToolResults: ToolEntry[];
  /** Questions MCP servers ask while their calls run (`agent.pendingElicitations()`). */
  pendingElicitations: PendingElicitation[];
  /** This thread's effective policy per tool (`agent.toolPolicies()`). */
  toolPolicies: Record<string, ToolPolicy>;
  /** A call of this hook is running. */
  busy: boolean;
  /** Why the last action (or opening the thread) failed; cleared when an action starts. */
  error: GatehouseError | null;
  /** The `callId`s the failed action concerned (its decisions or tool results); `[]` otherwise. */
  failedCalls: string[];
  /** Sends a user message (`agent.chat`). */
  send(text: string): Promise<AgentState | undefined>;
  /** The same as `send`. */
  chat(text: string): Promise<AgentState | undefined>;
  /** Decisions keyed by `callId`; partial submissions are kept (`submitDecisions`). */
  decide(decisions: Decisions): Promise<AgentState | undefined>;
  submitToolResults(results: Record<string, unknown>): Promise<AgentState | undefined>;
  retry(): Promise<AgentState | undefined>;
  /** Aborts the running call (the thread stays consistent; `retry()` continues it). */
  stop(): void;
  /** This thread's policy for one tool (`agent.setToolPolicy`): resolves to true once stored. */
  setToolPolicy(name: string, policy: ToolPolicyUpdate): Promise<boolean>;
  /** Answers questions by id (`agent.submitElicitations`): true when sent; a refused map
   *  answers none and sets `error` (`unknown_elicitation`, `invalid_elicitation_answer`). */
  answerElicitations(answers: Record<string, ElicitationAnswer>): boolean;
}

/** Opens `options.threadId` once per thread (also under StrictMode), disposes the agent on
 *  unmount or when `threadId` changes, and re-renders on every change to the thread. Other
 *  options are read when the thread opens. */
export declare function useAgent(options: UseAgentOptions): UseAgent;

export interface UseThreads {
  /** `Agent.listThreads(storage)`: newest first. */
  threads: ThreadSummary[];
  loading: boolean;
  error: GatehouseError | null;
  /** Reads the list again. */
  refresh(): Promise<void>;
  /** Deletes a thread; resolves to true once deleted (never rejects: `error` says why not). */
  deleteThread(threadId: string): Promise<boolean>;
}

/** The threads of a database for a sidebar, kept up to date as threads are created, change
 *  status or are deleted, here or in another tab. */
export declare function useThreads(storage?: StorageOptions): UseThreads;

/** Draws the approval card of one tool's calls. `decide` goes through the same path as the
 *  default card's buttons (resolves to true once stored; a failure shows on the card). */
export type ApprovalRenderer = (
  call: ToolEntry,
  decide: (decision: CardDecision) => Promise<boolean>,
  state: { busy: boolean },
) => ReactNode;

/** Per-tool approval cards, by tool name; the other tools get the default card. */
export type ApprovalRenderers = Record<string, ApprovalRenderer>;

interface ChatProps {
  /** The tool definitions (their `label`, `allowedDecisions`, argument descriptions). */
  tools?: readonly ToolDisplay[];
  /** More display names, by tool name. */
  labels?: Record<string, string>;
  /** Messages offered as buttons on an empty thread. */
  suggestions?: string[];
  /** Text shown on an empty thread. */
  intro?: string;
  /** After every run. */
  onChange?: () => void;
  onBusy?: (busy: boolean) => void;
  /** With it, a key the server refused shows "Open settings". */
  onOpenSettings?: () => void;
  approvalRenderers?: ApprovalRenderers;
  /** More "Always allow" buttons on the cards: "for me" (`"user"`), "for everyone" (`"app"`),
   *  each a remembered grant of that scope (README "Remembered grants"). Default none. */
  grantScopes?: readonly ("user" | "app")[];
  className?: string;
  style?: CSSProperties;
}

/** The whole chat over `useAgent`'s result: the transcript (streamed answers as Markdown, tool
 *  calls and results), the approval cards, the error banner with Retry and the composer. Every
 *  call goes through the hook. */
export declare function Thread(props: ChatProps & { chat: UseAgent }): ReactNode;

/** The same chat over an `Agent` you opened (it makes its calls on the agent itself and never
 *  disposes it). */
export declare function ChatView(props: ChatProps & { agent: Agent | null }): ReactNode;

/** The approval cards alone, for a layout of your own. */
export declare function ApprovalCards(props: {
  chat: UseAgent;
  tools?: readonly ToolDisplay[];
  labels?: Record<string, string>;
  approvalRenderers?: ApprovalRenderers;
  /** "Always allow in this conversation" on the cards (default true). */
  alwaysAllow?: boolean;
  /** With `alwaysAllow`, "Always allow for me" (`"user"`) and "for everyone" (`"app"`):
   *  remembered grants of that scope (README "Remembered grants"). Default none. */
  grantScopes?: readonly ("user" | "app")[];
  /** "Approve all" / "Deny all" when several calls wait (default true). */
  bulk?: boolean;
  className?: string;
  style?: CSSProperties;
}): ReactNode;

/** The message box alone: sends through the hook, Stop while it runs, locked while a call waits. */
export declare function Composer(props: { chat: UseAgent; className?: string; style?: CSSProperties }): ReactNode;
