// gatehouse-agent/ag-ui: a Gatehouse agent speaking AG-UI 1.0. The event and input types are
// the protocol's (@ag-ui/core), written here so that this module needs no AG-UI package.
import type { Agent, GatehouseErrorCode } from "./gatehouse.js";

/** AG-UI's RunAgentInput, the parts the adapter reads. */
export interface AgUiRunInput {
  threadId: string;
  runId: string;
  messages: { id: string; role: string; content?: unknown; toolCallId?: string; error?: string }[];
  /** Answers to the interrupts of the run that stopped for approvals: one per pending call. */
  resume?: AgUiResumeEntry[];
  [key: string]: unknown;
}

export interface AgUiResumeEntry {
  /** The call id (the interrupt's `id`). */
  interruptId: string;
  /** `"cancelled"` rejects the call. */
  status: "resolved" | "cancelled";
  payload?: AgUiDecision;
  metadata?: Record<string, unknown>;
}

/** The answer to an approval interrupt (its `responseSchema`, `DECISION_SCHEMA`). */
export type AgUiDecision =
  | { decision: "approve" }
  | { decision: "reject"; reason?: string }
  | { decision: "edit"; inputs: Record<string, unknown> };

/** One pending call, as an interrupt of the `interrupt` outcome. */
export interface AgUiInterrupt {
  id: string;
  reason: "tool_approval";
  message: string;
  toolCallId: string;
  responseSchema: Record<string, unknown>;
  metadata: { tool: string; inputs: Record<string, unknown>; approvals: { by: string | null; at: number }[]; needed: number; blocked: string | null };
}

export interface AgUiTokenUsage { inputTokens: number; outputTokens: number; totalTokens: number }

/** The AG-UI events the adapter sends (each also has `timestamp`, ms since the epoch). */
export type AgUiEvent = { timestamp: number } & (
  | { type: "RUN_STARTED"; threadId: string; runId: string }
  | { type: "TEXT_MESSAGE_START"; messageId: string; role: "assistant" }
  | { type: "TEXT_MESSAGE_CONTENT"; messageId: string; delta: string }
  | { type: "TEXT_MESSAGE_END"; messageId: string }
  | { type: "TOOL_CALL_START"; toolCallId: string; toolCallName: string }
  | { type: "TOOL_CALL_ARGS"; toolCallId: string; delta: string }
  | { type: "TOOL_CALL_END"; toolCallId: string }
  | { type: "TOOL_CALL_RESULT"; messageId: string; toolCallId: string; content: string; role: "tool" }
  | { type: "RUN_FINISHED"; threadId: string; runId: string; usage?: AgUiTokenUsage[];
      outcome:
        | { type: "success"; pendingToolCallIds?: string[] }
        | { type: "interrupt"; interrupts: AgUiInterrupt[] }
        | { type: "cancelled" } }
  | { type: "RUN_ERROR"; message: string; code: GatehouseErrorCode }
);

/** The JSON Schema of an approval interrupt's answer. */
export const DECISION_SCHEMA: Readonly<Record<string, unknown>>;

/**
 * Runs one AG-UI run on `agent`: a new user message (the last of `input.messages`) is
 * `chat`, `input.resume` is `submitDecisions`, trailing tool messages are
 * `submitToolResults`. Yields RUN_STARTED, the message and tool call events, then
 * RUN_FINISHED (an `interrupt` outcome when calls wait for approval; `cancelled` when
 * `signal` aborted it) or RUN_ERROR with the Gatehouse error's code. Never throws.
 */
export function agUiEvents(
  agent: Agent,
  input: AgUiRunInput,
  options?: { signal?: AbortSignal; by?: string },
): AsyncGenerator<AgUiEvent, void, undefined>;
