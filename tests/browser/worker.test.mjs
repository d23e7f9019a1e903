// The package inside a dedicated module worker (no `window`, no `document`): streamed turns of
// both providers over cross-origin HTTP with CORS preflights, IndexedDB storage, and an
// abort("a string") mid-stream.

import { after, test } from 'node:test';
import assert from 'node:assert/strict';
import { run, setup, uid } from './harness.mjs';

const h = await setup();
after(() => h.close());

const T = { timeout: 60_000 };
const PANIC = /panicked|unreachable|RuntimeError|recursive use/i;

/** Runs `body` (source of an async function of `{ Agent, args }`) in a fresh module worker. */
function inWorker(page, body, args) {
  return run(page, ({ body, args }) => new Promise((resolve) => {
    const src = `import init, { Agent } from '${location.origin}/pkg/gatehouse.js';
      self.onmessage = async (e) => {
        try {
          await init();
          const result = await (${body})({ Agent, args: e.data });
          self.postMessage({ ok: true, result });
        } catch (err) {
          self.postMessage({ ok: false, error: String(err?.stack ?? err) });
        }
      };`;
    const url = URL.createObjectURL(new Blob([src], { type: 'text/javascript' }));
    const w = new Worker(url, { type: 'module' });
    w.onmessage = (e) => { w.terminate(); resolve(e.data); };
    w.onerror = (e) => { w.terminate(); resolve({ ok: false, error: `worker error: ${e.message}` }); };
    w.postMessage(args);
  }), { body: body.toString(), args });
}

test('in a worker: streamed OpenAI and Anthropic turns over cross-origin HTTP, stored in IndexedDB', T, async (t) => {
  const { page, errors } = await h.open(t);
  const sc = await h.scenario([{ text: 'Hello from a worker.', splitWrites: true }, { text: 'And again.' }], { server: h.url2 });
  const r = await inWorker(page, async ({ Agent, args }) => {
    const text = (m) => m.content.filter((b) => b.type === 'text').map((b) => b.content).join('');
    const out = { hasWindow: typeof window !== 'undefined' };
    const deltas = [];
    const agent = await Agent.open({ threadId: 't', model: args.openai, storage: { database: args.db } });
    const s1 = await agent.chat('hi', { onEvent: (e) => e.type === 'text_delta' && deltas.push(e.delta) });
    out.first = [s1.status, text(s1.message), deltas.length];
    const again = await Agent.open({ threadId: 't', model: args.anthropic, storage: { database: args.db } });
    const s2 = await again.chat('more');
    out.second = [s2.status, text(s2.message)];
    out.stored = (await again.messages()).map((m) => m.role);
    return out;
  }, { openai: sc.openai({ apiKey: 'sk-w' }), anthropic: sc.anthropic({ apiKey: 'sk-ant-w' }), db: uid('db') });
  assert.equal(r.ok, true, r.error);
  assert.equal(r.result.hasWindow, false);
  assert.equal(r.result.first[0], 'completed');
  assert.equal(r.result.first[1], 'Hello from a worker.');
  assert.ok(r.result.first[2] > 1, 'streamed in several deltas');
  assert.deepEqual(r.result.second, ['completed', 'And again.']);
  assert.deepEqual(r.result.stored, ['user', 'assistant', 'user', 'assistant']);
  const reqs = await sc.requests();
  assert.equal(reqs[0].headers.authorization, 'Bearer sk-w');
  assert.equal(reqs[1].headers['x-api-key'], 'sk-ant-w');
  assert.deepEqual(errors.filter((e) => PANIC.test(e)), []);
});

test('in a worker: abort("a string") before the headers and mid-stream is an aborted error, and the instance keeps working', T, async (t) => {
  const { page } = await h.open(t);
  const sc = await h.scenario([
    { fault: { hang: true } },
    { text: 'one two three four five', fault: { hangAfterEvents: 3 } },
    { text: 'Alive.' },
  ], { server: h.url2 });
  const r = await inWorker(page, async ({ Agent, args }) => {
    const agent = await Agent.open({ threadId: 't', model: args.model, storage: { kind: 'memory' } });
    const errors = [];
    for (const action of ['chat', 'retry']) {
      const ac = new AbortController();
      setTimeout(() => ac.abort('the user pressed stop'), 300);
      const call = action === 'chat' ? agent.chat('hi', { signal: ac.signal }) : agent.retry({ signal: ac.signal });
      try { await call; errors.push(null); } catch (e) { errors.push({ isError: e instanceof Error, code: e.code }); }
    }
    const state = await agent.retry();
    return { errors, status: state.status };
  }, { model: sc.openai() });
  assert.equal(r.ok, true, r.error);
  assert.deepEqual(r.result.errors, [{ isError: true, code: 'aborted' }, { isError: true, code: 'aborted' }]);
  assert.equal(r.result.status, 'completed');
  assert.deepEqual((await sc.requests()).map((q) => q.outcome), ['aborted', 'aborted', 'completed']);
});
