// @ts-check
// gatehouse-agent/react: the hooks (useAgent, useThreads) and the components (ChatView,
// Thread, ApprovalCards, Composer). React and react-dom are peer dependencies (not bundled).
//
// The components wrap the framework-free ui kit (gatehouse-agent/ui): its classes own the
// markup and the behaviour (the cards' rules, the composer's lock, Markdown, the live region),
// so the DOM kit, the widget and React show one chat. React adds the hook's state and the
// per-tool card renderers, drawn with portals into the cards the kit frames.
//
// One agent per mounted hook and thread. StrictMode mounts, unmounts and mounts again at once:
// the unmount only schedules the dispose (a macrotask later), and the second mount takes the
// session back, so the thread is opened once and nothing leaks. On a real unmount (or a switch
// to another thread) the session stops listening first, then disposes the agent.
//
// One error contract: the hook's actions never reject. Each resolves to its result, or to
// `undefined` when it failed; then `error` (a GatehouseError) says why and `failedCalls` names
// the calls it concerned, which the cards show on those calls, wherever the action came from.

import { Fragment, createElement as h, useCallback, useEffect, useLayoutEffect, useRef, useState } from "react";
import { createPortal } from "react-dom";
import init, { Agent, GatehouseError, isGatehouseError } from "./gatehouse.js";
import { ApprovalCards as CardsKit, ChatView as ChatKit, Composer as ComposerKit, QuestionCards as QuestionsKit, isSuspended } from "./ui/index.js";
import { messagesAfter } from "./ui/messages.js";

const PAGE = 50; // messages per page of `messages` (`pageSize` option)
const SESSION = Symbol("gatehouse.session"); // the hook's session, for the components

const IDLE = Object.freeze({
  ready: false,
  status: "loading",
  agent: null,
  messages: [],
  hasOlder: false,
  lastMessage: null,
  pendingTools: [],
  pendingToolResults: [],
  pendingElicitations: [],
  toolPolicies: {},
  streamingText: "",
  busy: false,
  error: null,
  failedCalls: [],
});

/** A GatehouseError made here (its constructor is not the app's API: gatehouse.d.ts). */
const fault = (code, message) => new (/** @type {any} */ (GatehouseError))(code, message, false);

/** Every error the hooks report is a GatehouseError; anything else becomes one. */
function gatehouseError(e, code = "internal") {
  if (isGatehouseError(e)) return e;
  const error = fault(code, String(e?.message ?? e));
  error.cause = e;
  return error;
}

const databaseOf = (storage) => `${storage?.kind ?? "indexeddb"}:${storage?.database ?? "gatehouse"}`;

/** `page` (the newest rows) merged into `have` (a contiguous run ending at the old tail). */
function mergeTail(have, page) {
  if (page.length === 0) return have;
  const at = have.findIndex((m) => m.__id === page[0].__id);
  return at >= 0 ? have.slice(0, at).concat(page) : page;
}


/** One opened thread: the agent, its view of it, the running calls. */
class Session {
  constructor(options, onChange) {
    this.options = options;
    this.pageSize = Math.max(1, options?.pageSize ?? PAGE);
    this.onChange = onChange;
    this.state = { ...IDLE, key: null };
    this.closed = false;
    this.agent = null;
    this.unsubscribe = null;
    this.abort = null;
    this.runs = 0;
    this.first = 0; // the thread index of messages[0]
    this.reads = Promise.resolve(); // message reads, one at a time
    this.disposeTimer = null;
    this.facade = null;
    this.opening = this.#open();
  }

  async #open() {
    try {
      try {
        await init(); // the same promise as the app's own init(), if it called it first
      } catch (e) {
        throw gatehouseError(e, "not_initialized");
      }
      const { pageSize, ...options } = this.options;
      const agent = await Agent.open(options);
      if (this.closed) {
        agent.dispose();
        return null;
      }
      this.agent = agent;
      this.unsubscribe = agent.subscribe(() => {
        this.#read();
        this.sync();
      });
      await this.sync();
      this.#read({ ready: true, agent });
      return agent;
    } catch (e) {
      if (!this.closed) this.#set({ status: "error", error: gatehouseError(e) });
      return null;
    }
  }

  #set(patch) {
    this.state = { ...this.state, ...patch };
    if (!this.closed) this.onChange(this.state);
  }

  /** The agent's view, read after every change (its own, another agent's, another tab's). */
  #read(extra = {}) {
    const a = this.agent;
    if (!a || this.closed) return;
    this.#set({
      status: a.status(),
      lastMessage: a.lastMessage() ?? null,
      pendingTools: a.pendingTools(),
      pendingToolResults: a.pendingToolResults(),
      pendingElicitations: a.pendingElicitations(),
      toolPolicies: a.toolPolicies(),
      ...extra,
    });
  }

  #serial(read) {
    const next = this.reads.then(read).catch((e) => {
      if (!this.closed) this.#set({ error: gatehouseError(e), failedCalls: [] });
    });
    this.reads = next;
    return next;
  }

  /** Reads the newest messages: the first page, then what changed since (the old tail and
   *  everything after it), as often as the thread changed meanwhile. */
  sync() {
    return this.#serial(async () => {
      for (;;) {
        const agent = this.agent;
        if (!agent || this.closed) return;
        const count = agent.messageCount;
        const have = this.state.messages;
        const known = this.first + have.length;
        const limit = have.length === 0 || count < known ? this.pageSize : count - known + 1;
        // The page ends at `count`, the view's length: the store may already hold a newer
        // message the view has not heard of, and a page ending there would not overlap ours.
        const page = await agent.messages({ limit, beforeIndex: count });
        if (this.closed) return;
        const messages = count < known ? page : mergeTail(have, page);
        if (agent.messageCount !== count) continue; // it changed while we read: read again
        this.first = Math.max(0, count - messages.length);
        this.#set({ messages, hasOlder: this.first > 0 });
        return;
      }
    });
  }

  /** Reads the page before the oldest message shown. */
  loadOlder() {
    return this.#serial(async () => {
      const agent = this.agent;
      if (!agent || this.closed || this.first === 0) return;
      const page = await agent.messages({ beforeIndex: this.first, limit: this.pageSize });
      if (this.closed) return;
      this.first = Math.max(0, this.first - page.length);
      this.#set({ messages: page.concat(this.state.messages), hasOlder: this.first > 0 });
    });
  }

  /** Runs one call of the agent with streaming events. Resolves to its result, or (never
   *  rejecting) to undefined when it failed; `reject: true` rejects instead (the ui kit's
   *  contract). Either way a failure is `error`, with the calls it concerned in `failedCalls`.
   *  @param {string} method
   *  @param {any[]} args
   *  @param {{ signal?: AbortSignal, onEvent?: (event: any) => void, reject?: boolean,
   *    callIds?: string[] }} [options] */
  async run(method, args, { signal, onEvent, reject = false, callIds = [] } = {}) {
    const fail = (error) => {
      if (!this.closed) this.#set({ error, failedCalls: callIds });
      if (reject) throw error;
      return undefined;
    };
    const agent = await this.opening;
    if (this.closed || !agent) {
      return fail(this.closed
        ? fault("disposed", `${method}(): the component that used this agent was unmounted`)
        : this.state.error);
    }
    const abort = new AbortController();
    this.abort = abort;
    if (signal?.aborted) abort.abort();
    signal?.addEventListener("abort", () => abort.abort(), { once: true });
    this.runs++;
    this.#set({ status: "running", busy: true, error: null, failedCalls: [], streamingText: "" });
    const events = (event) => {
      onEvent?.(event);
      if (this.closed) return;
      if (event.type === "text_delta") this.#set({ streamingText: this.state.streamingText + event.delta });
      else if (event.type === "message") this.#set({ streamingText: "", messages: messagesAfter(this.state.messages, event) });
      else if (event.type === "message_updated") this.#set({ messages: messagesAfter(this.state.messages, event) });
    };
    try {
      const options = { signal: abort.signal, onEvent: events };
      if (method === "setToolPolicy") return (await agent.setToolPolicy(args[0], args[1]), true);
      if (method === "grant") return await agent.grant(args[0]);
      return await agent[method](...args, options);
    } catch (e) {
      const error = gatehouseError(e);
      // Another tab changed the thread: take its state, so the next call works.
      if (error.code === "conflict" && !this.closed) await agent.refresh().catch(() => {});
      return fail(error);
    } finally {
      this.runs--;
      if (this.abort === abort) this.abort = null;
      if (!this.closed) {
        this.#set({ busy: this.runs > 0, streamingText: "" });
        this.#read();
        this.sync();
      }
    }
  }

  /** Answers MCP servers' questions (`submitElicitations`): true when sent; a refused map
   *  answers none and becomes `error`. */
  answer(answers) {
    const a = this.agent;
    if (!a || this.closed) return false;
    try {
      a.submitElicitations(answers);
      this.#read({ error: null });
      return true;
    } catch (e) {
      this.#set({ error: gatehouseError(e) });
      return false;
    }
  }

  stop() {
    this.abort?.abort();
  }

  /** The agent as the ui kit's ChatView uses it, with its calls made through this session
   *  (they reject, as the kit expects; the hook's state follows them too). */
  view() {
    const a = this.agent;
    if (!a) return null;
    if (this.facade?.agent === a) return this.facade.view;
    const run = (method, args, options, callIds) => this.run(method, args, { ...options, reject: true, callIds });
    const view = {
      get threadId() { return a.threadId; },
      get messageCount() { return a.messageCount; },
      status: () => a.status(),
      lastMessage: () => a.lastMessage(),
      pendingTools: () => a.pendingTools(),
      pendingToolResults: () => a.pendingToolResults(),
      pendingElicitations: () => a.pendingElicitations(),
      submitElicitations: (answers) => a.submitElicitations(answers),
      toolPolicies: () => a.toolPolicies(),
      messages: (o) => a.messages(o),
      audit: (o) => a.audit(o),
      refresh: () => a.refresh(),
      subscribe: (listener) => a.subscribe(listener),
      chat: (text, o) => run("chat", [text], o),
      retry: (o) => run("retry", [], o),
      submitDecisions: (d, o) => run("submitDecisions", [d], o, Object.keys(d ?? {})),
      submitToolResults: (r, o) => run("submitToolResults", [r], o, Object.keys(r ?? {})),
      setToolPolicy: (name, policy) => run("setToolPolicy", [name, policy], {}),
      grant: (request) => run("grant", [request], {}),
      grants: () => a.grants(),
      revokeGrant: (id) => a.revokeGrant(id),
    };
    this.facade = { agent: a, view };
    return view;
  }

  /** Stops listening, then disposes the agent (after its running call, if any). */
  close() {
    if (this.closed) return;
    this.closed = true;
    this.unsubscribe?.();
    this.unsubscribe = null;
    this.agent?.dispose();
  }
}

const sessionKey = (options) => `${databaseOf(options?.storage)}\u0000${options?.threadId}`;

/**
 * Opens the thread `options.threadId` (the options of `Agent.open`, and `pageSize`) and keeps a
 * React view of it. Opens again only when `threadId` (or the storage) changes; the other
 * options are read at that moment.
 */
export function useAgent(options) {
  const key = sessionKey(options);
  const optionsRef = useRef(options);
  optionsRef.current = options;
  const sessionRef = useRef(null);
  // The state is IDLE's fields and the `key` of the session it shows.
  const [state, setState] = useState(/** @type {Record<string, any>} */ (IDLE));

  useEffect(() => {
    let session = sessionRef.current;
    if (session && session.key === key && !session.closed) {
      // StrictMode's second mount (or a remount at once): keep the session it was about to close.
      clearTimeout(session.disposeTimer);
      session.disposeTimer = null;
      session.onChange = setState;
    } else {
      session = new Session(optionsRef.current, setState);
      session.key = key;
      session.state = { ...session.state, key };
      sessionRef.current = session;
    }
    setState(session.state);
    return () => {
      session.onChange = () => {};
      session.disposeTimer = setTimeout(() => {
        session.close();
        if (sessionRef.current === session) sessionRef.current = null;
      }, 0);
    };
  }, [key]);

  const run = useCallback((method, args, callIds) => {
    const session = sessionRef.current;
    if (!session) return Promise.resolve(undefined);
    return session.run(method, args, { callIds });
  }, []);
  const send = useCallback((text) => run("chat", [text]), [run]);
  const decide = useCallback((decisions) => run("submitDecisions", [decisions], Object.keys(decisions ?? {})), [run]);
  const submitToolResults = useCallback((results) => run("submitToolResults", [results], Object.keys(results ?? {})), [run]);
  const retry = useCallback(() => run("retry", []), [run]);
  const setToolPolicy = useCallback((name, policy) => run("setToolPolicy", [name, policy]).then((ok) => ok === true), [run]);
  const stop = useCallback(() => sessionRef.current?.stop(), []);
  const answerElicitations = useCallback((answers) => sessionRef.current?.answer(answers) ?? false, []);
  const loadOlder = useCallback(() => sessionRef.current?.loadOlder() ?? Promise.resolve(), []);

  // On the render where `threadId` changed, the hook shows nothing of the old thread: its
  // session is closed by the effect below, after this render's children let go of its agent.
  const session = sessionRef.current?.key === key ? sessionRef.current : null;
  return {
    ...(session && state.key === key ? state : IDLE),
    send, chat: send, decide, submitToolResults, retry, stop, setToolPolicy, loadOlder,
    answerElicitations,
    [SESSION]: session,
  };
}

/**
 * The threads of a database (`Agent.listThreads(storage)`), newest first, kept up to date
 * through `Agent.subscribeThreads`. Its actions never reject either: `error` says what failed.
 */
export function useThreads(storage) {
  const key = databaseOf(storage);
  const storageRef = useRef(storage);
  storageRef.current = storage;
  const [state, setState] = useState({ threads: [], loading: true, error: null });
  const reload = useRef(() => Promise.resolve());

  useEffect(() => {
    let live = true;
    let reading = 0;
    setState((s) => ({ ...s, loading: true }));
    const read = async () => {
      const ticket = ++reading;
      try {
        await init();
        const threads = await Agent.listThreads(storageRef.current);
        if (live && ticket === reading) setState({ threads, loading: false, error: null });
      } catch (e) {
        if (live && ticket === reading) setState((s) => ({ ...s, loading: false, error: gatehouseError(e) }));
      }
    };
    reload.current = read;
    // Synchronous once init() has finished; its notices say which thread changed, and the
    // list is read again whole (titles and counts are in the records).
    const subscribed = init().then(() => (live ? Agent.subscribeThreads(storageRef.current, () => read()) : null))
      .catch((e) => {
        if (live) setState((s) => ({ ...s, error: gatehouseError(e) }));
        return null;
      });
    const unsubscribe = () => subscribed.then((stop) => stop?.());
    read();
    return () => {
      live = false;
      unsubscribe();
    };
  }, [key]);

  const deleteThread = useCallback(async (threadId) => {
    try {
      await init();
      await Agent.deleteThread(threadId, storageRef.current);
    } catch (e) {
      setState((s) => ({ ...s, error: gatehouseError(e) }));
      return false;
    }
    await reload.current();
    return true;
  }, []);
  const refresh = useCallback(() => reload.current(), []);

  return { ...state, refresh, deleteThread };
}

// ------------------------------------------------------------------------------ components

/** The latest value, for callbacks the kit keeps (it is built once). */
function useLatest(value) {
  const ref = useRef(value);
  ref.current = value;
  return ref;
}

const same = (a, b) => a === b || JSON.stringify(a) === JSON.stringify(b);

/**
 * Per-tool cards: the kit frames them and calls a renderer per update; each call is kept here
 * and drawn by React, with a portal into the card. Returns the kit's renderers and the portals.
 */
function useCardRenderers(approvalRenderers) {
  const latest = useLatest(approvalRenderers ?? {});
  const [slots, setSlots] = useState(() => new Map()); // callId -> { el, entry, decide, busy }
  const names = Object.keys(approvalRenderers ?? {}).sort().join("\u0000");
  const kit = useRef({ names: null, renderers: {} });
  if (kit.current.names !== names) {
    const renderers = {};
    for (const name of names ? names.split("\u0000") : []) {
      renderers[name] = (entry, { el, decide, busy }) => setSlots((prev) => {
        const next = new Map([...prev].filter(([, s]) => s.el.isConnected || s.el === el));
        const cur = prev.get(entry.callId);
        if (cur && cur.el === el && cur.busy === busy && same(cur.entry, entry) && next.size === prev.size) return prev;
        next.set(entry.callId, { el, entry, decide, busy });
        return next;
      });
    }
    kit.current = { names, renderers };
  }
  const portals = [];
  for (const [callId, s] of slots) {
    const render = latest.current[s.entry.name];
    if (typeof render !== "function" || !s.el.isConnected) continue;
    portals.push(createPortal(render(s.entry, s.decide, { busy: s.busy }), s.el, callId));
  }
  return { renderers: kit.current.renderers, portals };
}

/** `{ [callId]: error }` of the hook's last failed action. */
function errorsOf(chat) {
  const out = {};
  if (chat?.error) for (const id of chat.failedCalls ?? []) out[id] = chat.error;
  return out;
}

/** The kit's ChatView over `agent`, in a div React owns. */
/** @param {{ agent: any, errors?: any, tools?: any[], labels?: Record<string, string>,
 *   suggestions?: string[], intro?: string, onChange?: Function, onBusy?: Function,
 *   onOpenSettings?: Function, approvalRenderers?: object, grantScopes?: ("user" | "app")[],
 *   className?: string, style?: object }} props */
function KitChat({ agent, errors, tools, labels, suggestions, intro, onChange, onBusy, onOpenSettings, approvalRenderers, grantScopes, className, style }) {
  const root = useRef(null);
  const [view, setView] = useState(null);
  const props = useLatest({ onChange, onBusy, onOpenSettings });
  const cards = useCardRenderers(approvalRenderers);
  useLayoutEffect(() => {
    const el = root.current;
    const v = new ChatKit({
      root: el,
      tools: tools ?? [],
      labels: labels ?? {},
      suggestions: suggestions ?? [],
      intro: intro ?? "",
      renderers: cards.renderers,
      grantScopes: grantScopes ?? [],
      onChange: () => props.current.onChange?.(),
      onBusy: (busy) => props.current.onBusy?.(busy),
      onOpenSettings: onOpenSettings ? () => props.current.onOpenSettings?.() : undefined,
    });
    setView(v);
    return () => {
      v.destroy();
      v.setAgent(null).catch(() => {});
      el.replaceChildren();
    };
  }, []);
  useEffect(() => {
    if (view) view.setAgent(agent ?? null);
  }, [view, agent]);
  useEffect(() => {
    if (view && tools) view.setTools(tools);
  }, [view, tools]);
  useEffect(() => {
    if (!view) return;
    view.suggestions = suggestions ?? [];
    view.intro = intro ?? "";
  }, [view, suggestions, intro]);
  useEffect(() => {
    view?.cards.setRenderers(cards.renderers);
  }, [view, cards.renderers]);
  useEffect(() => {
    view?.cards.setErrors(errors ?? {});
  }, [view, errors]);
  return h(Fragment, null, h("div", { ref: root, className, style }), cards.portals);
}

/** The whole chat (the ui kit's ChatView) over an `Agent` it does not own: the log with
 *  streamed answers, the cards, the error banner with Retry, the composer. It makes its calls
 *  on the agent itself; `useAgent` hears them (the agent's notices). */
export function ChatView({ agent, ...props }) {
  return h(KitChat, { agent, ...props });
}

/** The whole chat over `useAgent`'s result: transcript, cards and composer, every call made
 *  through the hook (one busy state, one `error`, streaming text in the hook). */
export function Thread({ chat, ...props }) {
  const session = chat?.[SESSION];
  const agent = chat?.ready ? session?.view() ?? null : null;
  const errorKey = chat?.error ? chat.failedCalls.join() : "";
  const errors = useMemoOn(() => errorsOf(chat), [chat?.error, errorKey]);
  return h(KitChat, { agent, errors, ...props });
}

function useMemoOn(make, deps) {
  const ref = useRef({ deps: null, value: undefined });
  if (!ref.current.deps || deps.some((d, i) => d !== ref.current.deps[i])) ref.current = { deps, value: make() };
  return ref.current.value;
}

/** The approval cards of the thread `chat` (useAgent's result) shows: one per gated call of
 *  the suspended tail; decisions go through the hook, and its errors show on their cards.
 *  Under them, a card per question an MCP server asks while a call runs (its answer goes to
 *  `submitElicitations`; a refused one shows on its card). */
export function ApprovalCards({ chat, tools, labels, approvalRenderers, alwaysAllow = true, grantScopes = [], bulk = true, className, style }) {
  const root = useRef(null);
  const [kit, setKit] = useState(null);
  const [questions, setQuestions] = useState(null);
  const latest = useLatest(chat);
  const cards = useCardRenderers(approvalRenderers);
  useLayoutEffect(() => {
    const session = () => latest.current?.[SESSION];
    const decide = (decisions) => {
      const s = session();
      if (!s) return Promise.reject(fault("disposed", "the thread is not open"));
      return s.run("submitDecisions", [decisions], { reject: true, callIds: Object.keys(decisions) });
    };
    const c = new CardsKit({
      tools: tools ?? [],
      labels: labels ?? {},
      renderers: cards.renderers,
      onDecide: (callId, decision) => decide({ [callId]: decision }),
      onDecideAll: bulk ? decide : undefined,
      grantScopes,
      onAlwaysAllow: alwaysAllow
        ? async (entry, scope) => {
          const s = session();
          if (scope === "thread") {
            await s.run("setToolPolicy", [entry.name, { autoApprove: true }], { reject: true, callIds: [entry.callId] });
          } else {
            await s.run("grant", [{ tool: entry.name, scope }], { reject: true, callIds: [entry.callId] });
          }
          await decide({ [entry.callId]: "approve" });
        }
        : undefined,
    });
    // The questions MCP servers ask while a call runs, under the cards.
    const q = new QuestionsKit({
      labels: labels ?? {},
      onAnswer: (id, answer) => {
        const s = session();
        if (!s) throw fault("disposed", "the thread is not open");
        s.agent.submitElicitations({ [id]: answer });
      },
    });
    root.current.append(c.el, q.el);
    setKit(c);
    setQuestions(q);
    return () => {
      c.el.remove();
      q.el.remove();
    };
  }, []);
  useLayoutEffect(() => {
    kit?.update(chat?.lastMessage, { busy: !chat?.ready || !!chat?.busy, pending: chat?.pendingTools });
  }, [kit, chat?.lastMessage, chat?.ready, chat?.busy, chat?.pendingTools]);
  useLayoutEffect(() => {
    questions?.update(chat?.pendingElicitations ?? []);
  }, [questions, chat?.pendingElicitations]);
  useEffect(() => {
    if (kit && tools) kit.setTools(tools);
  }, [kit, tools]);
  useEffect(() => {
    kit?.setRenderers(cards.renderers);
  }, [kit, cards.renderers]);
  const errorKey = chat?.error ? chat.failedCalls.join() : "";
  useEffect(() => {
    kit?.setErrors(errorsOf(latest.current));
  }, [kit, chat?.error, errorKey]);
  return h(Fragment, null, h("div", { ref: root, className, style }), cards.portals);
}

/** The message box of the thread `chat` (useAgent's result): sends through the hook, Stop
 *  while it runs, locked while a call waits for a decision. */
export function Composer({ chat, className, style }) {
  const root = useRef(null);
  const [kit, setKit] = useState(null);
  const latest = useLatest(chat);
  useLayoutEffect(() => {
    const c = new ComposerKit({
      onSend: async (text) => {
        const a = latest.current;
        const state = await a?.send(text);
        // Put the text back unless the thread has it (then Retry sends it again).
        const tail = latest.current?.[SESSION]?.agent?.lastMessage?.();
        const stored = tail?.role === "user" && !tail.type && tail.content?.some((b) => b.content === text);
        if (!state && !stored) c.restore(text);
        return state;
      },
      onStop: () => latest.current?.stop(),
    });
    root.current.append(c.el);
    setKit(c);
    return () => c.el.remove();
  }, []);
  const status = chat?.status;
  useLayoutEffect(() => {
    kit?.update({
      ready: !!chat?.ready,
      loading: !chat?.ready && status !== "error",
      pending: isSuspended(chat?.lastMessage),
      busy: !!chat?.busy,
      interrupted: status === "interrupted",
      awaitingResults: status === "awaiting_tool_results",
      failed: status === "error",
    });
  });
  return h("div", { ref: root, className, style });
}
