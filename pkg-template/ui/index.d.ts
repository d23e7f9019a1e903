// gatehouse-agent/ui: the approval cards, the composer, the chat view and the <gatehouse-chat>
// element (gatehouse-agent/ui/element). Importing it defines nothing.
import type {
  Agent, DecisionKind, ElicitationAnswer, GrantScope, Message, PendingElicitation, PendingToolEntry, Tool, ToolEntry,
} from "../gatehouse.js";

/** True when `message` is a tool-call message with at least one entry waiting for a decision. */
export declare function isSuspended(message: Message | null | undefined): boolean;
/** The entries of a suspended tail that get a card (those with an `approval` field). */
export declare function approvalEntries(message: Message | null | undefined): ToolEntry[];
/** Tool inputs as pretty JSON. */
export declare function prettyInputs(inputs: unknown): string;
/** A card's approver-rule line: "1 of 2 approvals: bob", and why this user may not decide. */
export declare function progressText(pending: Pick<PendingToolEntry, "approvals" | "needed" | "blocked"> | undefined): string;
/** The text of a message's content blocks. */
export declare function messageText(message: Message | null | undefined): string;
/** `h("div", { class: "x", text: "hi", onclick }, ...children)`: builds an element; never parses HTML. */
export declare function h<K extends keyof HTMLElementTagNameMap>(
  tag: K,
  props?: Record<string, unknown>,
  ...children: unknown[]
): HTMLElementTagNameMap[K];

/** One decision as `submitDecisions` takes it. */
export type CardDecision = "approve" | "reject" | ["reject", string] | ["edit", Record<string, unknown>];

/** The tool fields the cards read: the display name and the decisions a human may give. */
export type ToolDisplay = Pick<Tool, "name"> & { label?: string; allowedDecisions?: readonly DecisionKind[] };

/** What a per-tool card renderer gets besides the entry: the element to draw into (the card
 *  keeps its frame, its state and its error line around it), `decide` (through the same path
 *  as the default buttons: resolves to true when stored; a failure shows on the card) and
 *  `busy` (a decision cannot be made now). */
export interface CardRenderContext {
  el: HTMLElement;
  decide(decision: CardDecision): Promise<boolean>;
  busy: boolean;
}

/** Draws the card of one tool's calls; called on every update of the cards. */
export type CardRenderer = (entry: ToolEntry, context: CardRenderContext) => void;

export interface ApprovalCardsOptions {
  /** Stores one decision; the card shows "Saving…" until it resolves and the error if it rejects. */
  onDecide(callId: string, decision: CardDecision): Promise<unknown>;
  /** Stores several decisions at once: with it, "Approve all" and "Deny all" appear when
   *  several calls wait (each covering the calls whose tool allows that decision). */
  onDecideAll?(decisions: Record<string, CardDecision>): Promise<unknown>;
  /** With it, a card offers "Always allow in this conversation": set this thread's
   *  `autoApprove` for `entry.name` and approve the call. */
  onAlwaysAllow?(entry: ToolEntry, scope: "thread" | GrantScope): Promise<unknown>;
  /** With `onAlwaysAllow`, more "Always allow" buttons: "for me" (`"user"`) and "for
   *  everyone" (`"app"`), each a remembered grant of that scope (README "Remembered grants"). */
  grantScopes?: readonly ("user" | "app")[];
  /** The tool definitions given to `Agent.open`: their `label` and `allowedDecisions`. */
  tools?: readonly ToolDisplay[];
  /** More display names, by tool name. */
  labels?: Record<string, string>;
  /** Cards the app draws, by tool name; other tools get the default card. */
  renderers?: Record<string, CardRenderer>;
}

/** The host a URL leads to (what a URL-mode question's card shows first). */
export declare function hostOf(url: string): string;

/** Cards for the questions MCP servers ask while their calls run: a form built from the
 *  question's schema, or in URL mode the page to open, its host shown. `ChatView` and the
 *  React `ApprovalCards` include them. */
export declare class QuestionCards {
  constructor(options: {
    /** Sends one answer (`agent.submitElicitations({ [id]: answer })`); a throw or a
     *  rejection shows on the card, which can then be answered again. */
    onAnswer: (id: string, answer: ElicitationAnswer) => void | Promise<unknown>;
    /** Display names, keyed by MCP server name. */
    labels?: Record<string, string>;
  });
  readonly el: HTMLElement;
  /** Shows `agent.pendingElicitations()`: a card per new question, none for answered ones. */
  update(pending: PendingElicitation[]): void;
}

/** The approvals section: one card per gated entry of the thread's last message. */
export declare class ApprovalCards {
  constructor(options: ApprovalCardsOptions);
  /** The section element; put it in the page. Hidden while nothing waits. */
  readonly el: HTMLElement;
  readonly visible: boolean;
  setTools(tools: readonly ToolDisplay[]): void;
  /** The decisions a card for this entry offers (its tool's `allowedDecisions`, default all). */
  decisionsFor(entry: ToolEntry): Set<DecisionKind>;
  /** Renders the cards for the last message, patching them in place; `busy` disables them. */
  /** `pending`: the agent's `pendingTools()`: each card shows its approver-rule progress. */
  update(message: Message | null | undefined, options?: { busy?: boolean; pending?: PendingToolEntry[] }): void;
  /** Moves focus to the section heading (never to a button). */
  focus(): void;
  /** Shows errors of decisions made elsewhere (e.g. through the React hook) on their cards,
   *  keyed by callId; `{}` clears them. */
  setErrors(errors: Record<string, Error | string>): void;
  /** Replaces the per-tool renderers. */
  setRenderers(renderers: Record<string, CardRenderer>): void;
}

/** What the thread is doing, as the composer shows it. */
export interface ComposerState {
  ready: boolean;
  loading: boolean;
  /** A call waits for a decision: the box is locked. */
  pending: boolean;
  /** A call runs: Stop instead of Send. */
  busy: boolean;
  interrupted: boolean;
  awaitingResults: boolean;
  /** The thread could not be opened. */
  failed: boolean;
}

/** The message box: a textarea, Send (Stop while a call runs) and a hint saying why it is locked. */
export declare class Composer {
  constructor(options: { onSend(text: string): unknown; onStop?(): void });
  /** The form element; put it in the page. */
  readonly el: HTMLFormElement;
  readonly input: HTMLTextAreaElement;
  canSend(): boolean;
  /** Sends the box's text (or `text`), emptying the box first. */
  submit(text?: string): unknown;
  /** Puts `text` back into the box, unless something was typed since. */
  restore(text: string): void;
  update(state?: Partial<ComposerState>): void;
  focus(): void;
}

/** What the chat view says about a failed call: the text, "error" or "notice", and whether
 *  the fix is in the model settings (a refused key). */
export declare function describeError(
  error: unknown,
  options?: { canRetry?: boolean; offline?: boolean; hasSettings?: boolean },
): { text: string; kind: "error" | "notice"; settings?: boolean };

export interface ChatViewOptions {
  /** The element the view fills (it gets the class `gh-chat`). */
  root: HTMLElement;
  tools?: readonly ToolDisplay[];
  labels?: Record<string, string>;
  /** Messages offered as buttons on an empty thread. */
  suggestions?: string[];
  /** Text shown on an empty thread. */
  intro?: string;
  /** After every run. */
  onChange?: () => void;
  /** When a run starts and ends. */
  onBusy?: (busy: boolean) => void;
  /** Opens the app's model settings: with it, a call the server refused (HTTP 401 or 403)
   *  shows "Open settings" in the error banner. */
  onOpenSettings?: () => void;
  /** Cards the app draws, by tool name (see `ApprovalCardsOptions.renderers`). */
  renderers?: Record<string, CardRenderer>;
  /** More "Always allow" buttons on the cards (see `ApprovalCardsOptions.grantScopes`). */
  grantScopes?: readonly ("user" | "app")[];
}

/** The chat: the message log with streamed answers (as sanitized Markdown), the approval
 *  cards, the error banner with Retry, and the composer (locked while anything is pending).
 *  New text is announced through a polite live region of its own. */
export declare class ChatView {
  constructor(options: ChatViewOptions);
  readonly agent: Agent | null;
  readonly cards: ApprovalCards;
  readonly composer: Composer;
  /** Shows this agent's thread (the view never disposes an agent). */
  setAgent(agent: Agent | null): Promise<void>;
  /** A thread is being opened: nothing can be sent until `setAgent`. */
  beginLoading(): void;
  setTools(tools: readonly ToolDisplay[]): void;
  send(text?: string): Promise<unknown>;
  retry(): Promise<unknown>;
  decide(callId: string, decision: CardDecision): Promise<void>;
  decideAll(decisions: Record<string, CardDecision>): Promise<void>;
  /** `setToolPolicy(entry.name, { autoApprove: true })` for this thread, then approves the call. */
  alwaysAllow(entry: ToolEntry, scope?: GrantScope): Promise<void>;
  /** Re-reads the thread (done when the page becomes visible again). */
  refresh(): Promise<void>;
  /** Shows (or, with null, hides) the banner; `settings` adds "Open settings" when the view
   *  has `onOpenSettings`. */
  setError(text: string | null, retry?: boolean, kind?: "error" | "notice", options?: { settings?: boolean }): void;
  /** Starts (the constructor does) and stops following `online`/`offline` and page visibility. */
  listen(): void;
  destroy(): void;
}

