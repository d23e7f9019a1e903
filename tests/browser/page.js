// The test page's module: loads the real package (pkg/, --target web) and exposes small helpers
// on `window.gh` for the tests, which run their scenario code with page.evaluate. Nothing here
// fakes the SDK: IndexedDB, fetch and the wasm are the real ones.

import init, { Agent } from '/pkg/gatehouse.js';

try {
  await init();
} catch (e) {
  window.ghInitError = String(e?.stack ?? e); // lets the harness fail fast instead of waiting
  throw e;
}

/** Everything about a thrown value that the tests assert on. */
function errorInfo(e) {
  if (!(e instanceof Error)) return { isError: false, value: String(e) };
  return {
    isError: true,
    name: e.name,
    code: e.code,
    retryable: e.retryable,
    message: e.message,
    status: e.status,
    body: e.body,
    retryAfter: e.retryAfter,
    callId: e.callId,
  };
}

function request(req) {
  return new Promise((resolve, reject) => {
    req.onsuccess = () => resolve(req.result);
    req.onerror = () => reject(req.error);
  });
}

function txDone(tx) {
  return new Promise((resolve, reject) => {
    tx.oncomplete = () => resolve();
    tx.onerror = () => reject(tx.error);
    tx.onabort = () => reject(tx.error ?? new Error('transaction aborted'));
  });
}

/** Opens `name` as the SDK does (version 1: `threads` keyPath id, `messages` keyPath [thread, seq]). */
function openAsSdk(name) {
  const req = indexedDB.open(name, 1);
  req.onupgradeneeded = () => {
    const db = req.result;
    db.createObjectStore('threads', { keyPath: 'id' });
    db.createObjectStore('messages', { keyPath: ['thread', 'seq'] });
  };
  return request(req);
}

const textMessage = (id, role, text) =>
  JSON.stringify({ __id: id, role, content: [{ type: 'text', content: text, meta: [] }] });

const gh = {
  Agent,
  /** Every execute() of tools made by gh.tool, in order: { tool, callId, threadId, inputs }. */
  calls: [],
  /** Every approvalPolicy() call of tools made by gh.tool: { tool, inputs }. */
  policyCalls: [],

  /** A tool taking `{ path: string }` whose execute records the call and returns an object. */
  tool(name, extra = {}) {
    return {
      name,
      description: `The ${name} tool`,
      parameters: { type: 'object', properties: { path: { type: 'string' } }, required: ['path'] },
      execute: async (inputs, ctx) => {
        gh.calls.push({ tool: name, callId: ctx.callId, threadId: ctx.threadId, inputs: structuredClone(inputs) });
        return { done: name, path: inputs.path };
      },
      ...extra,
    };
  },

  /** Awaits `fn()` and returns the error it threw (as plain data), or null if it did not throw. */
  async error(fn) {
    try {
      await fn();
    } catch (e) {
      return errorInfo(e);
    }
    return null;
  },
  errorInfo,

  /** An event collector for `onEvent`; events are deep-copied as they arrive. */
  events() {
    const list = [];
    return { list, onEvent: (e) => list.push(JSON.parse(JSON.stringify(e))) };
  },

  /** Every object store of database `name`: `{ version, stores: { [name]: { keyPath, rows } } }`. */
  async dumpDb(name) {
    const db = await request(indexedDB.open(name));
    try {
      const out = { version: db.version, stores: {} };
      const names = [...db.objectStoreNames];
      if (names.length === 0) return out;
      const tx = db.transaction(names, 'readonly');
      for (const s of names) {
        const store = tx.objectStore(s);
        out.stores[s] = { keyPath: store.keyPath, autoIncrement: store.autoIncrement, rows: await request(store.getAll()) };
      }
      return out;
    } finally {
      db.close();
    }
  },

  /**
   * Writes a thread straight into IndexedDB in the SDK's stored schema: `count - 1` alternating
   * user/assistant text messages, then `tailJson` (a message JSON string) as message `count`,
   * and the thread record (`record` fields are merged over the defaults). Returns the ms taken.
   */
  async seedThread(database, threadId, count, tailJson, record = {}) {
    const t0 = performance.now();
    const db = await openAsSdk(database);
    try {
      const tx = db.transaction(['threads', 'messages'], 'readwrite');
      const done = txDone(tx);
      const messages = tx.objectStore('messages');
      for (let seq = 1; seq < count; seq++) {
        const role = seq % 2 === 1 ? 'user' : 'assistant';
        messages.put({ thread: threadId, seq, json: textMessage(`msg_${1000 + seq}`, role, `${role} message ${seq}`) });
      }
      messages.put({ thread: threadId, seq: count, json: tailJson });
      const now = Date.now();
      tx.objectStore('threads').put({
        id: threadId, schemaVersion: 1, version: 1, createdAt: now, updatedAt: now,
        messageCount: count, title: 'user message 1', policies: {}, run: null, ...record,
      });
      await done;
    } finally {
      db.close();
    }
    return performance.now() - t0;
  },

  /** Changes stored values behind the SDK's back: `fn(value)` returns the new value of the
   *  row under `key` in `store` (a bug, a person with the devtools, another program). */
  async editRaw(database, store, key, fn) {
    const db = await request(indexedDB.open(database));
    try {
      const tx = db.transaction([store], 'readwrite');
      const done = txDone(tx);
      const os = tx.objectStore(store);
      const value = await request(os.get(key));
      os.put(fn(structuredClone(value)));
      await done;
    } finally {
      db.close();
    }
  },

  /**
   * Counts, until `stop()`, the read-only transactions that read the `messages` store (the
   * tail at open, history pages): `{ reads, stop() }`.
   */
  countMessageReads() {
    const proto = IDBDatabase.prototype;
    const original = proto.transaction;
    const counter = { reads: 0, stop: () => { proto.transaction = original; } };
    proto.transaction = function (names, mode, ...rest) {
      const list = typeof names === 'string' ? [names] : [...names];
      if ((mode ?? 'readonly') === 'readonly' && list.includes('messages')) counter.reads++;
      return original.call(this, names, mode, ...rest);
    };
    return counter;
  },

  sleep: (ms) => new Promise((r) => setTimeout(r, ms)),

  /** Polls `pred()` every 10 ms for at most `ms`; true once it held. */
  async until(pred, ms = 5_000) {
    const end = performance.now() + ms;
    while (performance.now() < end) {
      if (await pred()) return true;
      await new Promise((r) => setTimeout(r, 10));
    }
    return false;
  },
};

window.gh = gh;
window.ghReady = true;
document.getElementById('status').textContent = 'ready';
