// Vercel AI SDK side of the benchmark (ai 7 + @ai-sdk/openai-compatible). bench/run.mjs
// bundles this file with esbuild (esm, browser, minified) into /ai.js; '/common.js' stays
// external so the page shares one fetch interceptor with it.
import { generateText, streamText, tool, jsonSchema, stepCountIs } from 'ai';
import { createOpenAICompatible } from '@ai-sdk/openai-compatible';
import { get as idbGet, set as idbSet } from 'idb-keyval';
import { net, now, settle, cannedCompletion, phases } from '/common.js';

export { net };

export function model(baseUrl) {
  return createOpenAICompatible({ name: 'bench', baseURL: baseUrl, apiKey: 'bench' }).chatModel('bench-model');
}

// The same two tools as the Gatehouse side: `lookup` runs freely, `delete_file` needs approval.
export const tools = {
  lookup: tool({
    description: 'Look up a fact',
    inputSchema: jsonSchema({ type: 'object', properties: { q: { type: 'string' } }, required: ['q'] }),
    execute: async ({ q }) => { phases.mark('tool'); const r = { q, answer: 'sunny', temperatureC: 21 }; phases.mark('toolDone'); return r; },
  }),
  delete_file: tool({
    description: 'Delete a file from the filesystem',
    inputSchema: jsonSchema({ type: 'object', properties: { path: { type: 'string' } }, required: ['path'] }),
    needsApproval: true,
    execute: async ({ path }) => { phases.mark('tool'); const r = { deleted: path }; phases.mark('toolDone'); return r; },
  }),
};

const STOP = stepCountIs(5);

/**
 * The persisting app (bench/README.md, "The two AI SDK apps"): what a reader of the AI SDK's
 * message-persistence guide builds in a browser. The guide saves the chat's whole message list
 * in a callback of the call (`onFinish`; `onStepFinish`, renamed `onStepEnd` in ai 7, for
 * every step) with `saveChat({ chatId, messages })`, a file per chat; in a page that is
 * idb-keyval's `set(chatId, messages)` (one IndexedDB key per chat, the whole list each time),
 * and `get(chatId)` on load. Every step's save is awaited by the SDK before the call goes on.
 * `s.chatId` unset: the in-memory app (no persistence).
 */
function callOptions(s) {
  const opts = { model: s.model, messages: s.messages, tools, stopWhen: STOP };
  if (!s.chatId) return opts;
  const saved = [...s.messages];
  s.saved = saved;
  opts.onStepEnd = async (step) => {
    saved.push(...step.response.messages);
    s.saves = (s.saves ?? 0) + 1;
    await (s.saving = idbSet(s.chatId, saved));
  };
  return opts;
}

/** After a call: the persisting app's last save is done and holds the whole list. */
async function afterCall(s) {
  if (!s.chatId) return;
  await s.saving;
  if (s.saved.length !== s.messages.length) {
    // A message the steps did not carry (none seen so far): saved at the end, as onFinish would.
    await (s.saving = idbSet(s.chatId, s.messages));
    s.extraSaves = (s.extraSaves ?? 0) + 1;
  }
}

export const question = (i) => `Question ${i}: what is the weather like in Lisbon today?`;

const sessions = new Map();

/**
 * The same conversation as Gatehouse's turns: the app keeps the message list in memory and
 * appends each call's responseMessages (tool call, tool result, answer). In blocks.
 */
export async function turnsStart({ key, baseUrl, stream, persist }) {
  sessions.set(key, { model: model(baseUrl), messages: [], i: 0, deltas: 0, stream, chatId: persist });
  if (persist) await idbSet(persist, []);
  return { messageCount: 0, persist: persist ?? null };
}

export async function turnsMore({ key, k }) {
  const s = sessions.get(key);
  const perTurn = new Array(k);
  await settle();
  const turnPhases = new Array(k);
  for (let j = 0; j < k; j++) {
    const t = now();
    phases.start();
    s.messages.push({ role: 'user', content: question(++s.i) });
    if (s.stream) {
      const r = streamText(callOptions(s));
      for await (const _ of r.textStream) s.deltas++;
      s.messages.push(...(await r.responseMessages));
    } else {
      const r = await generateText(callOptions(s));
      if (r.finishReason !== 'stop') throw new Error(`turn ${s.i}: ${r.finishReason}`);
      s.messages.push(...r.responseMessages);
    }
    await afterCall(s);
    perTurn[j] = now() - t;
    phases.mark('end');
    turnPhases[j] = phases.take();
  }
  return { perTurn, phases: turnPhases, messageCount: s.messages.length, lastRequestChars: net.last?.bodyChars ?? null, deltas: s.deltas, saves: s.saves ?? 0, extraSaves: s.extraSaves ?? 0 };
}

export async function runTurns(args) {
  await turnsStart({ key: 'run', ...args });
  const t0 = now();
  const r = await turnsMore({ key: 'run', k: args.n });
  r.totalMs = now() - t0;
  return r;
}

function approvalResponse(r) {
  const reqs = r.content.filter((p) => p.type === 'tool-approval-request');
  if (!reqs.length) throw new Error(`no approval request (finish: ${r.finishReason})`);
  return { role: 'tool', content: reqs.map((p) => ({ type: 'tool-approval-response', approvalId: p.approvalId, approved: true })) };
}

/** The approval round trip: generateText with the approval response → next request issued. */
export async function approvalsStart({ key, baseUrl, persist }) {
  sessions.set(key, { model: model(baseUrl), messages: [], i: 0, chatId: persist });
  if (persist) await idbSet(persist, []);
}

export async function approvalsMore({ key, k }) {
  const s = sessions.get(key);
  const out = [];
  for (let j = 0; j < k; j++) {
    const i = s.i++;
    s.messages.push({ role: 'user', content: `Delete /tmp/file-${i}.log please` });
    const r = await generateText(callOptions(s));
    s.messages.push(...r.responseMessages);
    await afterCall(s);
    const decision = approvalResponse(r);
    await settle();
    let issued = 0;
    net.onIssue = (rec) => { if (!issued) issued = rec.issuedAt; };
    const pageT0 = now();
    const wallT0 = performance.timeOrigin + pageT0;
    phases.start();
    s.messages.push(decision);
    const r2 = await generateText(callOptions(s));
    s.messages.push(...r2.responseMessages);
    await afterCall(s);
    const resolved = now();
    phases.mark('end');
    const marks = phases.take();
    net.onIssue = null;
    if (r2.finishReason !== 'stop') throw new Error(`approval ${i}: ${r2.finishReason}`);
    out.push({ toIssueMs: issued - pageT0, toResolveMs: resolved - pageT0, wallT0, requestIndex: net.count, phases: marks });
  }
  return out;
}

/** One streamed answer with streamText; the last textStream chunk is the last delta. */
export async function streamOnce({ baseUrl, track = true, persist }) {
  const m = model(baseUrl);
  const s = { model: m, messages: [{ role: 'user', content: 'Write a long essay.' }], chatId: persist };
  let firstDeltaAt = 0, lastDeltaAt = 0, deltas = 0, chars = 0;
  await settle();
  net.trackBody = track;
  const t0 = now();
  const r = streamText(callOptions(s));
  for await (const d of r.textStream) {
    const t = now();
    if (!firstDeltaAt) firstDeltaAt = t;
    lastDeltaAt = t;
    deltas++;
    chars += d.length;
  }
  s.messages.push(...(await r.responseMessages));
  await afterCall(s);
  const resolvedAt = now();
  net.trackBody = false;
  const rec = net.last;
  return {
    status: await r.finishReason, deltas, chars, bytes: rec.bytes, chunks: rec.chunks,
    issuedMs: rec.issuedAt - t0, headersMs: rec.headersAt - t0, firstChunkMs: rec.firstChunkAt - t0,
    lastChunkMs: rec.lastChunkAt - t0, firstDeltaMs: firstDeltaAt - t0, lastDeltaMs: lastDeltaAt - t0,
    resolvedMs: resolvedAt - t0,
  };
}

// ---------------------------------------------------------------------------------------
// Reopen: the persisting app's page load reads its chat back with idb-keyval's get (the whole
// list under one key, as saved by callOptions above).

export async function loadStored(key) {
  return (await idbGet(key)) ?? [];
}

export function pendingApprovals(messages) {
  const last = messages.at(-1);
  if (!last || last.role !== 'assistant' || !Array.isArray(last.content)) return [];
  return last.content.filter((p) => p.type === 'tool-approval-request');
}

/** A real template through the SDK: one completed lookup turn, one turn waiting for approval. */
export async function makeTemplate({ baseUrl }) {
  const m = model(baseUrl);
  const messages = [{ role: 'user', content: question(0) }];
  let r = await generateText({ model: m, messages, tools, stopWhen: STOP });
  messages.push(...r.responseMessages);
  messages.push({ role: 'user', content: 'Delete /tmp/old.log please' });
  r = await generateText({ model: m, messages, tools, stopWhen: STOP });
  messages.push(...r.responseMessages);
  if (messages.length !== 6 || !pendingApprovals(messages).length) throw new Error('unexpected AI SDK template: ' + JSON.stringify(messages));
  return messages;
}

/** `n` messages in the template's shape, the same layout as Gatehouse's seed(). */
function buildList(n, template) {
  const [user, call, result, answer, tailUser, tailCall] = template;
  const body = n - 2;
  const list = [];
  for (let i = 0; i < Math.floor(body / 4); i++) {
    const id = `call_seed_${i + 1}`;
    const c = structuredClone(call); c.content[0].toolCallId = id;
    const res = structuredClone(result); res.content[0].toolCallId = id;
    list.push(structuredClone(user), c, res, structuredClone(answer));
  }
  if (body % 4) list.push(structuredClone(user), structuredClone(answer));
  list.push(structuredClone(tailUser), structuredClone(tailCall));
  return list;
}

/** Stores `n` messages under `key`, as the persisting app would have saved them. */
export async function seedStored({ key, n, template }) {
  const list = buildList(n, template);
  const t0 = now();
  await idbSet(key, list);
  return { seedMs: now() - t0, jsonChars: JSON.stringify(list).length };
}

/** The in-memory app's page: the same `n` messages, built in memory (nothing stored). */
export function buildInMemory({ n, template }) {
  globalThis.__messages = buildList(n, template);
  return { messageCount: globalThis.__messages.length };
}

/**
 * Approves the pending call of a loaded list with a canned (offline) model answer. With
 * `persist` (the chat's key) the persisting app: its step's save runs before the call resolves.
 */
export async function approveCanned({ messages, baseUrl, persist }) {
  const s = { model: model(baseUrl), messages, chatId: persist };
  const pending = pendingApprovals(messages);
  net.canned = cannedCompletion('Deleted.');
  let issued = 0, chars = 0;
  net.onIssue = (rec) => { if (!issued) { issued = rec.issuedAt; chars = rec.bodyChars; } };
  const t0 = now();
  messages.push({ role: 'tool', content: pending.map((p) => ({ type: 'tool-approval-response', approvalId: p.approvalId, approved: true })) });
  const r = await generateText(callOptions(s));
  messages.push(...r.responseMessages);
  await afterCall(s);
  const t1 = now();
  net.canned = null;
  net.onIssue = null;
  return { status: r.finishReason, toIssueMs: issued - t0, toResolveMs: t1 - t0, requestChars: chars, saves: s.saves ?? 0, extraSaves: s.extraSaves ?? 0 };
}

export function memory() {
  return { wasmBytes: null, jsHeapBytes: performance.memory?.usedJSHeapSize ?? null };
}

/** Puts a reopened chat back as seeded (the persisting approve saved two more messages). */
export async function restoreStored({ key, n }) {
  await idbSet(key, globalThis.__messages.slice(0, n));
}
