// The `local` provider end to end in headless Chromium (docs/design.md, "A model in the page"):
// the real package, its local/ module, wllama's wasm in its worker and the SmolLM2-135M test
// model (`make setup`), served by server.mjs. One browser, steps in order: the model is
// downloaded once, then everything after it reads it from Cache Storage, offline too.
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { MODEL_BYTES, start } from './harness.mjs';

const MODEL = { provider: 'local', url: '/models/test.gguf', maxTokens: 24 };
let h;

before(async () => {
  h = await start();
  await h.goto();
  // Once the service worker controls the page, a reload fetches the page and the package
  // through it, so they are cached for the offline steps.
  await h.page.waitForFunction(() => !!navigator.serviceWorker.controller, null, { timeout: 10_000 });
  await h.goto();
});

after(async () => {
  if (process.env.GATEHOUSE_E2E_VERBOSE) console.log(h?.log.join('\n'));
  await h?.close();
});

const events = (threadId, type) => h.page.evaluate(([id, type]) =>
  window.t.events.filter((e) => e.threadId === id && (!type || e.type === type)), [threadId, type]);
const text = (m) => m.content.filter((b) => b.type === 'text').map((b) => b.content).join('');
const modelRequests = () => h.server.requests.filter((p) => p === '/models/test.gguf').length;

test('misspelled or wrong local options are invalid_config, before anything loads', async () => {
  for (const model of [
    { provider: 'local', urll: '/models/test.gguf' },
    { provider: 'local' },
    { provider: 'local', url: 42 },
    { provider: 'local', url: '/models/test.gguf', sha256: 'abc' },
    { provider: 'local', url: '/models/test.gguf', toolChoice: 'always' },
    { provider: 'local', url: '/models/test.gguf', device: 'gpu' },
  ]) {
    const code = await h.page.evaluate((model) =>
      window.t.open(`bad-${Math.random()}`, model).then(() => 'opened', (e) => e.code), model);
    assert.equal(code, 'invalid_config', JSON.stringify(model));
  }
  assert.equal(modelRequests(), 0);
});

test('loads the model from a local URL with progress events; the answer streams and is stored', { timeout: 240_000 }, async () => {
  await h.page.evaluate((m) => window.t.open('first', m), MODEL);
  const r = await h.page.evaluate(() => window.t.chat('first', 'What is the capital of France?'));
  assert.equal(r.error, undefined, JSON.stringify(r.error));
  assert.equal(r.status, 'completed');
  const progress = await events('first', 'model_progress');
  const download = progress.filter((e) => e.phase === 'download');
  assert.ok(download.length >= 10, `download progress in steps: ${download.length}`);
  assert.equal(download.at(-1).loaded, MODEL_BYTES);
  assert.equal(download.at(-1).total, MODEL_BYTES);
  assert.deepEqual(progress.filter((e) => e.phase === 'load').map((e) => e.loaded), [0, MODEL_BYTES]);
  const deltas = await events('first', 'text_delta');
  assert.ok(deltas.length >= 2, `streamed in deltas: ${deltas.length}`);
  // Where it ran, said once, before the first token: this page is cross-origin isolated
  // (server.mjs), so on threads; this Chromium runs with --disable-gpu: no WebGPU adapter.
  const [runtime, ...more] = await events('first', 'model_runtime');
  assert.equal(more.length, 0);
  const cores = await h.page.evaluate(() => navigator.hardwareConcurrency);
  const threads = Math.min(4, cores);
  assert.deepEqual({ ...runtime, at: undefined, threadId: undefined }, {
    type: 'model_runtime', device: 'cpu', threads, cpuReason: 'no_webgpu', at: undefined, threadId: undefined,
    ...(threads === 1 ? { singleThreadReason: 'one_core' } : {}),
  });
  assert.ok(runtime.at < deltas[0].at, 'model_runtime comes before the first token');
  const stored = (await h.page.evaluate(() => window.t.messages('first'))).at(-1);
  assert.equal(stored.role, 'assistant');
  assert.ok(text(stored).trim().length > 0);
  assert.equal(deltas.map((e) => e.delta).join(''), text(stored), 'the deltas are the stored answer');
  assert.ok(stored.usage.input_tokens > 0 && stored.usage.output_tokens > 0, JSON.stringify(stored.usage));
  assert.equal(modelRequests(), 1);
});

test('device "webgpu" in a browser without a WebGPU adapter is webgpu_unavailable, before the file is fetched; the thread stays usable', { timeout: 120_000 }, async () => {
  const before = modelRequests();
  await h.page.evaluate((m) => window.t.open('gpu-only', m), { ...MODEL, device: 'webgpu' });
  const r = await h.page.evaluate(() => window.t.chat('gpu-only', 'Hello'));
  assert.equal(r.error?.code, 'webgpu_unavailable', JSON.stringify(r));
  assert.match(r.error.message, /no WebGPU adapter/);
  assert.equal(modelRequests(), before);
  const stored = await h.page.evaluate(() => window.t.messages('gpu-only'));
  assert.deepEqual(stored.map((m) => m.role), ['user']);
});

test('a sha256 mismatch and a file that is not GGUF are clear errors; the thread stays usable', { timeout: 120_000 }, async () => {
  await h.page.evaluate(() => window.t.open('sha', { provider: 'local', url: '/models/test.gguf', sha256: '0'.repeat(64) }));
  const sha = await h.page.evaluate(() => window.t.chat('sha', 'hello'));
  assert.equal(sha.error?.code, 'model_checksum', JSON.stringify(sha));
  assert.match(sha.error.message, /SHA-256/);
  await h.page.evaluate(() => window.t.open('notgguf', { provider: 'local', url: '/tests/local/page.html' }));
  const bad = await h.page.evaluate(() => window.t.chat('notgguf', 'hello'));
  assert.equal(bad.error?.code, 'model_not_gguf', JSON.stringify(bad));
  assert.match(bad.error.message, /not a GGUF file/);
  // Nothing half-written: the user's message is kept; the thread goes on with a working model.
  const kept = await h.page.evaluate(() => window.t.messages('notgguf'));
  assert.deepEqual(kept.map((m) => m.role), ['user']);
  await h.page.evaluate(() => window.t.open('notgguf', { provider: 'demo' }));
  const ok = await h.page.evaluate(() => window.t.chat('notgguf', 'hello again'));
  assert.equal(ok.status, 'completed', JSON.stringify(ok));
});

test('a full storage quota is quota_exceeded; the thread stays usable', { timeout: 120_000 }, async () => {
  // CDP sets the origin's quota to what it uses plus 32 MiB: room for the thread, none for a
  // second copy of the model (another URL).
  const cdp = await h.context.newCDPSession(h.page);
  const origin = h.server.url;
  const { usage } = await h.page.evaluate(() => navigator.storage.estimate());
  await cdp.send('Storage.overrideQuotaForOrigin', { origin, quotaSize: usage + 32 * 1024 * 1024 });
  try {
    await h.page.evaluate(() => window.t.open('quota', { provider: 'local', url: '/models/test.gguf?copy' }));
    const r = await h.page.evaluate(() => window.t.chat('quota', 'hello'));
    assert.equal(r.error?.code, 'quota_exceeded', JSON.stringify(r));
    assert.match(r.error.message, /quota/);
    assert.deepEqual((await h.page.evaluate(() => window.t.messages('quota'))).map((m) => m.role), ['user']);
  } finally {
    await cdp.send('Storage.overrideQuotaForOrigin', { origin });
    await cdp.detach();
  }
  await h.page.evaluate(() => window.t.open('quota', { provider: 'demo' }));
  assert.equal((await h.page.evaluate(() => window.t.chat('quota', 'hello again'))).status, 'completed');
});

test('a context window too large for the page\'s memory is out_of_memory; the thread stays usable', { timeout: 120_000 }, async () => {
  // SmolLM2-135M's KV cache takes about 23 KB a token (30 layers, 3 KV heads of 64, f16): a
  // million tokens is some 23 GB, past what a wasm32 page can allocate.
  await h.page.evaluate(() => window.t.open('oom', { provider: 'local', url: '/models/test.gguf', contextWindow: 1_000_000 }));
  const r = await h.page.evaluate(() => window.t.chat('oom', 'hello'));
  assert.equal(r.error?.code, 'out_of_memory', JSON.stringify(r));
  assert.match(r.error.message, /does not fit in this page's memory/);
  // llama.cpp's own error lines reach the page's console too, marked as the local provider's.
  const said = h.log.filter((l) => l.startsWith('error: [gatehouse-agent/local]'));
  assert.ok(said.some((l) => /alloc|insufficient|fail/.test(l)), h.log.slice(-20).join('\n'));
  assert.deepEqual((await h.page.evaluate(() => window.t.messages('oom'))).map((m) => m.role), ['user']);
  // The same file with a window that fits answers on the same thread.
  await h.page.evaluate((m) => window.t.open('oom', m), MODEL);
  const ok = await h.page.evaluate(() => window.t.chat('oom', 'hello again'));
  assert.equal(ok.status, 'completed', JSON.stringify(ok));
});

test('offline: reload, and the model answers from the cache; the thread is stored', { timeout: 240_000 }, async () => {
  const before = modelRequests();
  await h.context.setOffline(true);
  const reachable = await h.page.evaluate(() => fetch('/models/test.gguf', { method: 'HEAD', cache: 'no-store' }).then(() => true, () => false));
  assert.equal(reachable, false, 'the network is really off');
  await h.page.reload();
  await h.page.waitForFunction(() => window.ready === true, null, { timeout: 30_000 });
  await h.page.evaluate((m) => window.t.open('first', m), MODEL);
  const r = await h.page.evaluate(() => window.t.chat('first', 'Name one color.'));
  assert.equal(r.error, undefined, JSON.stringify(r.error));
  assert.equal(r.status, 'completed');
  const progress = await events('first', 'model_progress');
  assert.deepEqual(progress.filter((e) => e.phase === 'cache').map((e) => e.loaded), [MODEL_BYTES]);
  assert.equal(progress.filter((e) => e.phase === 'download').length, 0);
  assert.ok((await events('first', 'text_delta')).length >= 2);
  const thread = await h.page.evaluate(() => window.t.messages('first'));
  assert.deepEqual(thread.map((m) => m.role), ['user', 'assistant', 'user', 'assistant'], 'both turns are stored');
  assert.equal(modelRequests(), before);
});

test('gated tool: the constrained call validates, approve runs it once, reject reaches the model', { timeout: 300_000 }, async () => {
  await h.page.evaluate((m) => window.t.open('tools', { ...m, maxTokens: 64, toolChoice: 'required' }, { gated: true }), MODEL);
  const r = await h.page.evaluate(() => window.t.chat('tools', 'Delete the file C:/x.txt'));
  assert.equal(r.error, undefined, JSON.stringify(r.error));
  assert.equal(r.status, 'awaiting_approval');
  assert.equal(r.message.type, 'tool_call');
  const [entry] = r.message.tools;
  assert.equal(entry.name, 'delete_file');
  assert.equal(entry.approval, 'pending');
  assert.deepEqual(Object.keys(entry.inputs), ['path']);
  assert.equal(typeof entry.inputs.path, 'string');
  assert.equal(await h.page.evaluate(() => window.t.agents.get('tools').deleted.length), 0, 'nothing ran before approval');

  const approved = await h.page.evaluate((id) => window.t.decide('tools', { [id]: 'approve' }), entry.callId);
  assert.equal(approved.error, undefined, JSON.stringify(approved.error));
  assert.equal(approved.status, 'completed', 'after the result the model answers in text');
  assert.deepEqual(await h.page.evaluate(() => window.t.agents.get('tools').deleted), [entry.inputs.path], 'ran once');

  const again = await h.page.evaluate(() => window.t.chat('tools', 'Delete the file C:/y.txt'));
  assert.equal(again.status, 'awaiting_approval', JSON.stringify(again));
  const second = again.message.tools[0];
  const rejected = await h.page.evaluate((id) => window.t.decide('tools', { [id]: ['reject', 'keep that file'] }), second.callId);
  assert.equal(rejected.status, 'completed', JSON.stringify(rejected));
  assert.equal(await h.page.evaluate(() => window.t.agents.get('tools').deleted.length), 1, 'the rejected call never ran');
  const thread = await h.page.evaluate(() => window.t.messages('tools'));
  const result = thread.findLast((m) => m.type === 'tool_call_result');
  assert.match(result.tools[0].result, /rejected.*keep that file/s);
  assert.equal(thread.at(-1).role, 'assistant', 'the model was called with the rejection and answered');
  assert.ok(thread.at(-1).usage.input_tokens > 0);
});

test('a richer schema: the constrained call has every required key, enum values, integers, arrays', { timeout: 240_000 }, async () => {
  const schema = {
    type: 'object',
    properties: {
      city: { type: 'string' },
      mode: { enum: ['train', 'bus', 'bike'] },
      nights: { type: 'integer' },
      pets: { type: 'boolean' },
      stops: { type: 'array', items: { type: 'string' }, maxItems: 3 },
      budget: { type: 'object', properties: { amount: { type: 'number' }, currency: { const: 'EUR' } }, required: ['amount', 'currency'] },
      note: { type: 'string' },
    },
    required: ['city', 'mode', 'nights', 'pets', 'stops', 'budget'],
    additionalProperties: false,
  };
  await h.page.evaluate(([m, schema]) => window.t.open('schema', { ...m, maxTokens: 160, toolChoice: 'required' }, { schema }), [MODEL, schema]);
  const r = await h.page.evaluate(() => window.t.chat('schema', 'Plan a train trip to Paris for 2 nights with my dog.'));
  assert.equal(r.status, 'awaiting_approval', JSON.stringify(r));
  const { name, inputs } = r.message.tools[0];
  assert.equal(name, 'plan_trip');
  for (const k of schema.required) assert.ok(k in inputs, `${k} in ${JSON.stringify(inputs)}`);
  assert.deepEqual(Object.keys(inputs).filter((k) => !(k in schema.properties)), []);
  assert.equal(typeof inputs.city, 'string');
  assert.ok(['train', 'bus', 'bike'].includes(inputs.mode), inputs.mode);
  assert.ok(Number.isInteger(inputs.nights), String(inputs.nights));
  assert.equal(typeof inputs.pets, 'boolean');
  assert.ok(Array.isArray(inputs.stops) && inputs.stops.length <= 3 && inputs.stops.every((s) => typeof s === 'string'));
  assert.equal(typeof inputs.budget.amount, 'number');
  assert.equal(inputs.budget.currency, 'EUR');
});

test('abort mid-generation: aborted, nothing half-written stored; the next chat answers', { timeout: 240_000 }, async () => {
  await h.page.evaluate((m) => window.t.open('abort', { ...m, maxTokens: 64 }), MODEL);
  const r = await h.page.evaluate(() => window.t.chat('abort', 'Write a long story about a dragon.', { abortAfterDeltas: 2 }));
  assert.equal(r.error?.code, 'aborted', JSON.stringify(r));
  assert.ok((await events('abort', 'text_delta')).length >= 2, 'it was generating');
  const thread = await h.page.evaluate(() => window.t.messages('abort'));
  assert.deepEqual(thread.map((m) => m.role), ['user'], 'no partial answer stored');
  const next = await h.page.evaluate(() => window.t.chat('abort', 'Say hello.'));
  assert.equal(next.status, 'completed', JSON.stringify(next));
  // The page's model was loaded before: neither call loads it again, and each says where it
  // runs (one model_runtime per model call).
  assert.equal((await events('abort', 'model_progress')).length, 0, 'no load for a loaded model');
  assert.equal((await events('abort', 'model_runtime')).length, 2);
});
