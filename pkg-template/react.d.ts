// gatehouse-agent/react: React hooks over the package's Agent (React >= 18, a peer dependency).
import type {
  AgentOptions, AgentState, Decisions, Message, StorageOptions, ThreadStatus, ThreadSummary, ToolEntry,
} from "./gatehouse.js";

/** What `useAgent` returns: the thread's view (re-rendered after every change to it, here or in
 *  another tab) and the calls. The calls never reject: they resolve to the call's state, or
 *  to `undefined` when it failed, and `error` says why. */
export interface UseAgent {
  /** True once the thread is open. */
  ready: boolean;
  /** `agent.status()`; `"loading"` while the thread opens, `"error"` when it could not open. */
  status: ThreadStatus | "loading" | "error";
  lastMessage: Message | null;
  /** The text of the answer being written (from `text_delta` events); `""` otherwise. */
  streamingText: string;
  /** Calls waiting for a decision (`agent.pendingTools()`). */
  pendingTools: ToolEntry[];
  /** External calls waiting for their result (`agent.pendingToolResults()`). */
  pendingToolResults: ToolEntry[];
  /** The error of the last call (or of opening the thread); cleared when a call starts. */
  error: unknown;
  chat(text: string): Promise<AgentState | undefined>;
  /** Decisions keyed by `callId`; partial submissions are kept (`submitDecisions`). */
  decide(decisions: Decisions): Promise<AgentState | undefined>;
  submitToolResults(results: Record<string, unknown>): Promise<AgentState | undefined>;
  retry(): Promise<AgentState | undefined>;
  /** Aborts the running call (the thread stays consistent; `retry()` continues it). */
  stop(): void;
}

/** Opens `options.threadId` once per thread (also under StrictMode), disposes the agent on
 *  unmount, and re-renders on every change to the thread. Other options are read when the
 *  thread opens. */
export declare function useAgent(options: AgentOptions): UseAgent;

export interface UseThreads {
  /** `Agent.listThreads(storage)`: newest first. */
  threads: ThreadSummary[];
  loading: boolean;
  error: unknown;
  /** Reads the list again. */
  refresh(): Promise<void>;
  deleteThread(threadId: string): Promise<void>;
}

/** The threads of a database for a sidebar, kept up to date as threads are created, change
 *  status or are deleted. */
export declare function useThreads(storage?: StorageOptions): UseThreads;
