// gatehouse-agent/react: useAgent and useThreads. React is a peer dependency (not bundled);
// this module imports only it and the package entry.
//
// One agent per mounted hook and thread. StrictMode mounts, unmounts and mounts again at once:
// the unmount only schedules the dispose (a macrotask later), and the second mount takes the
// session back, so the thread is opened once and nothing leaks. On a real unmount the session
// stops listening first, then disposes the agent: no call reaches it afterwards.

import { useCallback, useEffect, useRef, useState } from "react";
import init, { Agent, GatehouseError } from "./gatehouse.js";

const IDLE = Object.freeze({
  ready: false,
  status: "loading",
  lastMessage: null,
  pendingTools: [],
  pendingToolResults: [],
  streamingText: "",
  error: null,
});

const databaseOf = (storage) => `${storage?.kind ?? "indexeddb"}:${storage?.database ?? "gatehouse"}`;

// The threads hooks of this page hear their database's changes from here when
// Agent.subscribeThreads is missing: each session reports its agent's notices.
const localThreadListeners = new Map(); // database key -> Set<() => void>

function noticeThreads(storage) {
  for (const listener of localThreadListeners.get(databaseOf(storage)) ?? []) listener();
}

/** One opened thread: the agent, its view of it, the running call. */
class Session {
  constructor(options, onChange) {
    this.options = options;
    this.onChange = onChange;
    this.state = IDLE;
    this.closed = false;
    this.agent = null;
    this.unsubscribe = null;
    this.abort = null;
    this.disposeTimer = null;
    this.opening = this.#open();
  }

  async #open() {
    try {
      await init(); // the same promise as the app's own init(), if it called it first
      const agent = await Agent.open(this.options);
      if (this.closed) {
        agent.dispose();
        return null;
      }
      this.agent = agent;
      this.unsubscribe = agent.subscribe(() => {
        this.#read();
        noticeThreads(this.options.storage);
      });
      this.#read({ ready: true });
      return agent;
    } catch (error) {
      if (!this.closed) this.#set({ status: "error", error });
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
      ...extra,
    });
  }

  /** Runs one call of the agent with streaming events; resolves to its state, or to
   *  undefined when it failed (then `error` says why). */
  async run(method, args) {
    const agent = await this.opening;
    if (this.closed || !agent) {
      const error = this.closed
        ? new GatehouseError("disposed", `${method}(): the component that used this agent was unmounted`, false)
        : this.state.error;
      if (!this.closed) this.#set({ error });
      return undefined;
    }
    const abort = new AbortController();
    this.abort = abort;
    this.#set({ status: "running", error: null, streamingText: "" });
    const onEvent = (event) => {
      if (this.closed) return;
      if (event.type === "text_delta") this.#set({ streamingText: this.state.streamingText + event.delta });
      else if (event.type === "message") this.#set({ streamingText: "" });
    };
    try {
      return await agent[method](...args, { signal: abort.signal, onEvent });
    } catch (error) {
      if (!this.closed) this.#set({ error });
      return undefined;
    } finally {
      if (this.abort === abort) this.abort = null;
      if (!this.closed) {
        this.#set({ streamingText: "" });
        this.#read();
      }
    }
  }

  stop() {
    this.abort?.abort();
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
 * Opens the thread `options.threadId` (the options of `Agent.open`) and keeps a React view of
 * it. Opens again only when `threadId` (or the storage) changes; the other options are read
 * at that moment.
 */
export function useAgent(options) {
  const key = sessionKey(options);
  const optionsRef = useRef(options);
  optionsRef.current = options;
  const sessionRef = useRef(null);
  const [state, setState] = useState(IDLE);

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

  const call = useCallback((method) => (...args) => {
    const session = sessionRef.current;
    if (!session) return Promise.resolve(undefined);
    return session.run(method, args);
  }, []);
  const chat = useCallback((text) => call("chat")(text), [call]);
  const decide = useCallback((decisions) => call("submitDecisions")(decisions), [call]);
  const submitToolResults = useCallback((results) => call("submitToolResults")(results), [call]);
  const retry = useCallback(() => call("retry")(), [call]);
  const stop = useCallback(() => sessionRef.current?.stop(), []);

  return { ...state, chat, decide, submitToolResults, retry, stop };
}

/**
 * The threads of a database (`Agent.listThreads(storage)`), newest first, kept up to date:
 * through `Agent.subscribeThreads` where the package has it, else after every change made by
 * this page's `useAgent` hooks.
 */
export function useThreads(storage) {
  const key = databaseOf(storage);
  const storageRef = useRef(storage);
  storageRef.current = storage;
  const [state, setState] = useState({ threads: [], loading: true, error: null });
  const reload = useRef(() => {});

  useEffect(() => {
    let live = true;
    let reading = 0;
    const read = async () => {
      const ticket = ++reading;
      try {
        await init();
        const threads = await Agent.listThreads(storageRef.current);
        if (live && ticket === reading) setState({ threads, loading: false, error: null });
      } catch (error) {
        if (live && ticket === reading) setState((s) => ({ ...s, loading: false, error }));
      }
    };
    reload.current = read;
    let unsubscribe;
    if (typeof Agent.subscribeThreads === "function") {
      // Synchronous once init() has finished; its notices say which thread changed, and the
      // list is read again whole (titles and counts are in the records).
      const subscribed = init().then(() => (live ? Agent.subscribeThreads(storageRef.current, () => read()) : null))
        .catch((error) => {
          if (live) setState((s) => ({ ...s, error }));
          return null;
        });
      unsubscribe = () => subscribed.then((stop) => stop?.());
    } else {
      const listeners = localThreadListeners.get(key) ?? new Set();
      localThreadListeners.set(key, listeners);
      listeners.add(read);
      unsubscribe = () => {
        listeners.delete(read);
        if (listeners.size === 0) localThreadListeners.delete(key);
      };
    }
    read();
    return () => {
      live = false;
      unsubscribe();
    };
  }, [key]);

  const deleteThread = useCallback(async (threadId) => {
    await init();
    await Agent.deleteThread(threadId, storageRef.current);
    if (typeof Agent.subscribeThreads === "function") await reload.current();
    else noticeThreads(storageRef.current); // every useThreads of this database reads again
  }, []);
  const refresh = useCallback(() => reload.current(), []);

  return { ...state, refresh, deleteThread };
}
