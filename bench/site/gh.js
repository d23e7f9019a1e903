// Gatehouse side of the benchmark: runs in the page, driven by bench/run.mjs through
// page.evaluate. Uses only the package's public API, plus raw IndexedDB to read the stored
// shape of a real thread and to seed big threads in that shape.
import { net, now, settle, cannedCompletion, wasmMemoryBytes, phases } from './common.js';

let mod = null;
export let wasm = null;

export async function init() {
  const t0 = now();
  mod = await import('/pkg/gatehouse.js');
  const t1 = now();
  await mod.default();
  const t2 = now();
  // The wasm's exports (for its memory size only): the package's init() resolves to nothing,
  // and wasm-bindgen's own init, already done, hands them back at once.
  wasm = await (await import('/pkg/gatehouse_wasm.js')).default();
  globalThis.__wasm = wasm;
  return { importMs: t1 - t0, initMs: t2 - t1 };
}

export const TOOLS = () => [
  {
    name: 'lookup',
    description: 'Look up a fact',
    parameters: { type: 'object', properties: { q: { type: 'string' } }, required: ['q'] },
    execute: async ({ q }) => { phases.mark('tool'); const r = { q, answer: 'sunny', temperatureC: 21 }; phases.mark('toolDone'); return r; },
  },
  {
    name: 'delete_file',
    description: 'Delete a file from the filesystem',
    parameters: { type: 'object', properties: { path: { type: 'string' } }, required: ['path'] },
    execute: async ({ path }) => { phases.mark('tool'); const r = { deleted: path }; phases.mark('toolDone'); return r; },
    requireApproval: true,
  },
];

export function open({ threadId, baseUrl, storage = 'indexeddb', database = 'gh-bench', stream = true }) {
  if (!mod) throw new Error('init() first');
  return mod.Agent.open({
    threadId,
    model: { provider: 'openai', baseUrl, apiKey: 'bench', model: 'bench-model', stream },
    tools: TOOLS(),
    storage: { kind: storage, database },
  });
}

export const question = (i) => `Question ${i}: what is the weather like in Lisbon today?`;

// ---------------------------------------------------------------------------------------
// Raw IndexedDB (the stored shape: src/store/indexeddb.rs)

function req(r) {
  return new Promise((resolve, reject) => { r.onsuccess = () => resolve(r.result); r.onerror = () => reject(r.error); });
}
function txDone(tx) {
  return new Promise((resolve, reject) => { tx.oncomplete = resolve; tx.onerror = () => reject(tx.error); tx.onabort = () => reject(tx.error ?? new Error('aborted')); });
}
async function rawOpen(database) {
  const r = indexedDB.open(database);
  return req(r);
}

/** The stored record and rows of a thread, as the SDK wrote them. */
export async function readRaw(database, threadId) {
  const db = await rawOpen(database);
  const tx = db.transaction(['threads', 'messages'], 'readonly');
  const record = await req(tx.objectStore('threads').get(threadId));
  const rows = await req(tx.objectStore('messages').getAll(IDBKeyRange.bound([threadId, 0], [threadId, Infinity])));
  db.close();
  return { record, rows };
}

/**
 * Builds a real template thread through the SDK: one completed turn (the model calls the
 * non-gated `lookup`, then answers) and one turn that waits for approval of `delete_file`.
 * Returns its raw stored record and rows (6 messages).
 */
export async function makeTemplate({ baseUrl, database, threadId }) {
  const agent = await open({ threadId, baseUrl, database, stream: false });
  const a = await agent.chat(question(0));
  const b = await agent.chat('Delete /tmp/old.log please');
  if (a.status !== 'completed' || b.status !== 'awaiting_approval') throw new Error(`template: ${a.status} / ${b.status}`);
  agent.free?.();
  return readRaw(database, threadId);
}

/**
 * A copied template message without `usage`: the template's usage counts its own two-message
 * request, and in a long seeded thread it would tell the context window's calibration that a
 * request carrying thousands of messages was a few dozen tokens (README "The context window").
 */
const withoutUsage = (json) => {
  const m = JSON.parse(json);
  delete m.usage;
  return JSON.stringify(m);
};

/**
 * Writes a thread of `n` messages (n even, n >= 2) straight into IndexedDB in the template's
 * shape (copies carry no `usage`, see withoutUsage): [user, tool_call(lookup), tool_call_result, assistant] blocks (plus one
 * [user, assistant] pair when needed), then the template's pending [user, tool_call] tail.
 */
export async function seed({ database, threadId, n, template }) {
  if (n % 2 || n < 2) throw new Error('n must be even and >= 2');
  const t = template.rows.map((r) => withoutUsage(r.json));
  const [user, call, result, answer, tailUser, tailCall] = t;
  const body = n - 2;
  const blocks = Math.floor(body / 4);
  const pair = (body % 4) / 2; // 0 or 1
  const seq = [];
  for (let i = 0; i < blocks; i++) seq.push(user, call, result, answer);
  if (pair) seq.push(user, answer);
  const tailId = BigInt(JSON.parse(tailCall).__id.slice(4));
  const db = await rawOpen(database);
  const t0 = now();
  let bytes = 0;
  const BATCH = 5000;
  for (let start = 0; start < seq.length; start += BATCH) {
    const tx = db.transaction('messages', 'readwrite');
    const store = tx.objectStore('messages');
    for (let i = start; i < Math.min(seq.length, start + BATCH); i++) {
      const m = JSON.parse(seq[i]);
      m.__id = 'msg_' + (tailId - BigInt((seq.length - i + 1) * 1000)).toString();
      if (Array.isArray(m.tools)) for (const e of m.tools) e.callId = `call_seed_${(i >> 2) + 1}`;
      const json = JSON.stringify(m);
      bytes += json.length;
      store.put({ thread: threadId, seq: i + 1, json });
    }
    await txDone(tx);
  }
  const tx = db.transaction(['threads', 'messages'], 'readwrite');
  tx.objectStore('messages').put({ thread: threadId, seq: seq.length + 1, json: tailUser });
  tx.objectStore('messages').put({ thread: threadId, seq: seq.length + 2, json: tailCall });
  bytes += tailUser.length + tailCall.length;
  const record = { ...structuredClone(template.record), id: threadId, messageCount: n, version: n };
  tx.objectStore('threads').put(record);
  await txDone(tx);
  db.close();
  return { seedMs: now() - t0, jsonChars: bytes };
}

/** Puts a seeded thread back as seed() left it (after an approval changed its tail). */
export async function restore({ database, threadId, n, template }) {
  const db = await rawOpen(database);
  const tx = db.transaction(['threads', 'messages'], 'readwrite');
  const messages = tx.objectStore('messages');
  messages.delete(IDBKeyRange.bound([threadId, n + 1], [threadId, Infinity]));
  messages.put({ thread: threadId, seq: n, json: withoutUsage(template.rows[5].json) });
  tx.objectStore('threads').put({ ...structuredClone(template.record), id: threadId, messageCount: n, version: n });
  await txDone(tx);
  db.close();
}

// ---------------------------------------------------------------------------------------
// Measurements

const sessions = new Map();

/**
 * Turns of a conversation, in blocks (so two SDKs can be interleaved): turnsStart opens the
 * agent, each turnsMore runs `k` turns of chat(question) → model calls `lookup` → tool runs →
 * model answers, and returns the wall time of each turn (ms).
 */
export async function turnsStart({ key, baseUrl, storage, database, threadId, stream, withEvents }) {
  const agent = await open({ threadId, baseUrl, storage, database, stream });
  const s = { agent, i: 0, deltas: 0 };
  s.opts = withEvents ? { onEvent: (e) => { if (e.type === 'text_delta') s.deltas++; } } : undefined;
  sessions.set(key, s);
  return { messageCount: agent.messageCount };
}

export async function turnsMore({ key, k }) {
  const s = sessions.get(key);
  const perTurn = new Array(k);
  await settle();
  const turnPhases = new Array(k);
  for (let j = 0; j < k; j++) {
    const t = now();
    phases.start();
    const st = await s.agent.chat(question(++s.i), s.opts);
    perTurn[j] = now() - t;
    phases.mark('end');
    turnPhases[j] = phases.take();
    if (st.status !== 'completed') throw new Error(`turn ${s.i}: ${st.status}`);
  }
  return { perTurn, phases: turnPhases, messageCount: s.agent.messageCount, lastRequestChars: net.last?.bodyChars ?? null, deltas: s.deltas };
}

/**
 * The IndexedDB floor of a tool turn: the transactions Gatehouse makes in one turn, replayed
 * in plain JS with the same values and nothing else (no SDK, no fetch, no tool). floorStart
 * runs two real turns through the SDK and notes every transaction of the second one (mode,
 * stores, each get's key and each put's value, in order); each floorMore turn makes the same
 * transactions again, the rows and the record moved on by one turn's messages and versions,
 * each read-write one with its gets awaited before its puts and committed explicitly, as the
 * SDK does (src/store/indexeddb.rs). What no binding, however thin, can take off the
 * main thread.
 */
export async function floorStart({ key, baseUrl, database, threadId }) {
  const agent = await open({ threadId, baseUrl, database, storage: 'indexeddb', stream: false });
  let st = await agent.chat(question(0));
  const before = await readRaw(database, threadId);
  const txs = [];
  const noted = new Map();
  const note = (store, op) => {
    const tx = store.transaction;
    if (!noted.has(tx)) { const t = { mode: tx.mode, stores: [...tx.objectStoreNames], ops: [] }; noted.set(tx, t); txs.push(t); }
    noted.get(tx).ops.push(op);
  };
  const proto = IDBObjectStore.prototype;
  const { get, put } = proto;
  proto.get = function (k) { note(this, { op: 'get', store: this.name, key: structuredClone(k) }); return get.call(this, k); };
  proto.put = function (v, ...rest) { note(this, { op: 'put', store: this.name, value: structuredClone(v) }); return put.call(this, v, ...rest); };
  try { st = await agent.chat(question(1)); } finally { proto.get = get; proto.put = put; }
  agent.free?.();
  if (st.status !== 'completed') throw new Error(`floor: ${st.status}`);
  const after = await readRaw(database, threadId);
  const db = await rawOpen(database);
  sessions.set(key, {
    db, txs, i: 0,
    rows: after.record.messageCount - before.record.messageCount,
    versions: after.record.version - before.record.version,
  });
  return { transactions: txs.map((t) => `${t.mode}: ${t.ops.map((o) => `${o.op} ${o.store}`).join(', ')}`) };
}

export async function floorMore({ key, k }) {
  const s = sessions.get(key);
  const perTurn = new Array(k);
  await settle();
  for (let j = 0; j < k; j++) {
    const t0 = now();
    const n = ++s.i; // turns replayed so far, this one included
    const dRows = n * s.rows, dVersions = n * s.versions;
    for (const t of s.txs) {
      const tx = s.db.transaction(t.stores, t.mode);
      const gets = [];
      for (const o of t.ops) {
        if (o.op !== 'get') continue;
        const key = Array.isArray(o.key) ? [o.key[0], o.key[1] + dRows] : o.key;
        gets.push(req(tx.objectStore(o.store).get(key)));
      }
      await Promise.all(gets);
      if (t.mode !== 'readwrite') continue;
      for (const o of t.ops) {
        if (o.op !== 'put') continue;
        const v = o.store === 'threads'
          ? { ...o.value, messageCount: o.value.messageCount + dRows, version: o.value.version + dVersions }
          : { ...o.value, seq: o.value.seq + dRows };
        tx.objectStore(o.store).put(v);
      }
      tx.commit();
      await txDone(tx);
    }
    perTurn[j] = now() - t0;
  }
  return { perTurn, phases: [], messageCount: null, lastRequestChars: null, deltas: 0 };
}

/** All turns in one go (the memory row). */
export async function runTurns(args) {
  await turnsStart({ key: 'run', ...args });
  const t0 = now();
  const r = await turnsMore({ key: 'run', k: args.n });
  r.totalMs = now() - t0;
  return r;
}

/**
 * Approval round trips, in blocks: chat → awaiting_approval; then submitDecisions(approve) →
 * the tool runs → the next model request is issued. Measures submitDecisions() → fetch()
 * call (page clock) and submitDecisions() → resolved.
 */
export async function approvalsStart({ key, baseUrl, storage, database, threadId }) {
  sessions.set(key, { agent: await open({ threadId, baseUrl, storage, database, stream: false }), i: 0 });
}

export async function approvalsMore({ key, k }) {
  const s = sessions.get(key);
  const out = [];
  for (let j = 0; j < k; j++) {
    const i = s.i++;
    const st = await s.agent.chat(`Delete /tmp/file-${i}.log please`);
    if (st.status !== 'awaiting_approval') throw new Error(`approval ${i}: ${st.status}`);
    const decisions = Object.fromEntries(s.agent.pendingTools().map((p) => [p.callId, 'approve']));
    await settle();
    let issued = 0;
    net.onIssue = (r) => { if (!issued) issued = r.issuedAt; };
    const pageT0 = now();
    const wallT0 = performance.timeOrigin + pageT0;
    phases.start();
    const done = await s.agent.submitDecisions(decisions);
    const resolved = now();
    phases.mark('end');
    const marks = phases.take();
    net.onIssue = null;
    if (done.status !== 'completed') throw new Error(`approval ${i} after decision: ${done.status}`);
    out.push({ toIssueMs: issued - pageT0, toResolveMs: resolved - pageT0, wallT0, requestIndex: net.count, phases: marks });
  }
  return out;
}

/** One streamed answer; timestamps of the bytes (interceptor) and of the deltas delivered. */
export async function streamOnce({ baseUrl, storage, database, threadId, track = true }) {
  const agent = await open({ threadId, baseUrl, storage, database, stream: true });
  let firstDeltaAt = 0, lastDeltaAt = 0, deltas = 0, chars = 0;
  const onEvent = (e) => {
    if (e.type !== 'text_delta') return;
    const t = now();
    if (!firstDeltaAt) firstDeltaAt = t;
    lastDeltaAt = t;
    deltas++;
    chars += e.delta.length;
  };
  await settle();
  net.trackBody = track;
  const t0 = now();
  const st = await agent.chat('Write a long essay.', { onEvent });
  const resolvedAt = now();
  net.trackBody = false;
  const r = net.last;
  agent.free?.();
  return {
    status: st.status, deltas, chars, bytes: r.bytes, chunks: r.chunks,
    issuedMs: r.issuedAt - t0, headersMs: r.headersAt - t0, firstChunkMs: r.firstChunkAt - t0,
    lastChunkMs: r.lastChunkAt - t0, firstDeltaMs: firstDeltaAt - t0, lastDeltaMs: lastDeltaAt - t0,
    resolvedMs: resolvedAt - t0,
  };
}

/** Approves the pending call of an open agent with a canned (offline) model answer. */
export async function approveCanned(agent) {
  const decisions = Object.fromEntries(agent.pendingTools().map((p) => [p.callId, 'approve']));
  net.canned = cannedCompletion('Deleted.');
  let issued = 0, rec = null;
  net.onIssue = (r) => { if (!issued) { issued = r.issuedAt; rec = r; } };
  const t0 = now();
  const st = await agent.submitDecisions(decisions);
  const t1 = now();
  net.canned = null;
  net.onIssue = null;
  return { status: st.status, toIssueMs: issued - t0, toResolveMs: t1 - t0, requestChars: rec?.bodyChars ?? 0 };
}

export function memory() {
  return { wasmBytes: wasmMemoryBytes(wasm), jsHeapBytes: performance.memory?.usedJSHeapSize ?? null };
}

export { net };
