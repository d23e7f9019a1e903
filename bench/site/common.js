// Shared by the Gatehouse and the AI SDK harnesses (plain ES module, served as is).
//
// A fetch interceptor that timestamps model requests on the page's clock: when `fetch()` is
// called (the request "leaves the page"), when the headers arrive, and — with `trackBody` —
// when each body chunk arrives. The body is pumped eagerly (not on the consumer's demand), so
// `lastChunkAt` is the first moment page JS could see the last byte, however slow the SDK
// is at consuming it. `canned` answers without touching the network (used where only the
// moment a request is issued matters and its body would be tens of MB).

const MODEL_PATH = /\/chat\/completions$/;
const realFetch = globalThis.fetch.bind(globalThis);

export const net = {
  count: 0,
  last: null, // the latest model request record
  trackBody: false,
  canned: null, // { body: string, contentType: string }
  onIssue: null, // (record) => void
  // Per-phase timestamps of the current turn (see `phases` below); null when not recording.
  marks: null,
  reset() { this.count = 0; this.last = null; this.trackBody = false; this.canned = null; this.onIssue = null; this.marks = null; },
};

/**
 * Phase marks of one turn, on the page clock: the harness calls `phases.start()` when the turn
 * begins and `phases.mark('end')` when it resolves; the fetch interceptor adds `req1`, `resp1`,
 * `req2`, … (request issued, response headers handed to the SDK); the tools add `tool` and
 * `toolDone` (their `execute` called and returning); the IndexedDB wrapper counts
 * transactions. Only the first occurrence of a name is kept.
 */
export const phases = {
  start() { net.marks = { t0: performance.now(), reqs: 0, idbRead: 0, idbWrite: 0, idbWriteMs: 0 }; },
  mark(name) { const m = net.marks; if (m && m[name] == null) m[name] = performance.now() - m.t0; },
  take() { const m = net.marks; net.marks = null; return m; },
};

// Counts IndexedDB transactions per turn, and how long the read-write ones took from creation
// to `complete` (the durability waits).
if (globalThis.IDBDatabase) {
  const realTx = IDBDatabase.prototype.transaction;
  IDBDatabase.prototype.transaction = function benchTransaction(stores, mode, ...rest) {
    const tx = realTx.call(this, stores, mode, ...rest);
    const m = net.marks;
    if (m) {
      if (mode === 'readwrite') {
        m.idbWrite++;
        const t = performance.now();
        tx.addEventListener('complete', () => { m.idbWriteMs += performance.now() - t; });
      } else {
        m.idbRead++;
      }
    }
    return tx;
  };
}

// gloo-net hands fetch a Request whose body is the JSON text. Its length is noted when the
// Request is made (a subclass of the page's own Request, which wasm-bindgen's glue looks up
// at each call), not read back from a clone: cloning and reading the body cost ~1.9 ms of
// main-thread CPU per tool turn, charged to Gatehouse alone.
const requestChars = new WeakMap();
if (globalThis.Request) {
  const RealRequest = globalThis.Request;
  globalThis.Request = class Request extends RealRequest {
    constructor(input, init) {
      super(input, init);
      if (typeof init?.body === 'string') requestChars.set(this, init.body.length);
    }
  };
}

globalThis.fetch = function benchFetch(input, init) {
  const url = typeof input === 'string' ? input : input instanceof URL ? input.href : input.url;
  const method = init?.method ?? (typeof input === 'object' && 'method' in input ? input.method : 'GET');
  if (method !== 'POST' || !MODEL_PATH.test(new URL(url, location.href).pathname)) return realFetch(input, init);
  const rec = {
    issuedAt: performance.now(),
    bodyChars: typeof init?.body === 'string' ? init.body.length : -1,
    headersAt: 0, firstChunkAt: 0, lastChunkAt: 0, doneAt: 0, chunks: 0, bytes: 0,
  };
  if (rec.bodyChars < 0 && typeof input === 'object') rec.bodyChars = requestChars.get(input) ?? -1;
  net.count++;
  net.last = rec;
  const marks = net.marks;
  const k = marks ? ++marks.reqs : 0;
  if (marks) phases.mark(`req${k}`);
  net.onIssue?.(rec);
  if (net.canned) {
    const c = net.canned;
    return Promise.resolve(new Response(c.body, { status: 200, headers: { 'content-type': c.contentType } }));
  }
  const track = net.trackBody;
  return realFetch(input, init).then((resp) => {
    rec.headersAt = performance.now();
    if (marks && net.marks === marks) phases.mark(`resp${k}`);
    if (!track || !resp.body) return resp;
    const reader = resp.body.getReader();
    let ctrl;
    const out = new ReadableStream({
      start(c) { ctrl = c; },
      cancel(reason) { return reader.cancel(reason).catch(() => {}); },
    });
    (async () => {
      try {
        for (;;) {
          const { done, value } = await reader.read();
          if (done) { rec.doneAt = performance.now(); try { ctrl.close(); } catch {} return; }
          const t = performance.now();
          if (!rec.firstChunkAt) rec.firstChunkAt = t;
          rec.lastChunkAt = t;
          rec.chunks++;
          rec.bytes += value.byteLength;
          try { ctrl.enqueue(value); } catch { /* the consumer cancelled: keep timing the bytes */ }
        }
      } catch (e) {
        try { ctrl.error(e); } catch {}
      }
    })();
    return new Response(out, { status: resp.status, statusText: resp.statusText, headers: resp.headers });
  });
};

/** A canned non-streamed OpenAI Chat Completions answer. */
export function cannedCompletion(text = 'ok') {
  return {
    contentType: 'application/json',
    body: JSON.stringify({
      id: 'chatcmpl-bench', object: 'chat.completion', created: 0, model: 'bench',
      choices: [{ index: 0, message: { role: 'assistant', content: text }, finish_reason: 'stop' }],
      usage: { prompt_tokens: 1, completion_tokens: 1, total_tokens: 2 },
    }),
  };
}

export const now = () => performance.now();

/** Lets queued tasks (IndexedDB callbacks, lock grants) settle before timing the next thing. */
export const settle = () => new Promise((r) => setTimeout(r, 0));

export function wasmMemoryBytes(exports) {
  return exports?.memory?.buffer?.byteLength ?? null;
}
