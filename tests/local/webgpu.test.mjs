// The `local` provider's device choice with a WebGPU adapter present (docs/design.md, "A model
// in the page"): headless Chromium with a software adapter (SwiftShader, which Debian's
// Chromium ships: Vulkan on the CPU), so that CI runs the detection and the fallback. What it
// shows: an adapter is found; llama.cpp (wllama 3.8.1) puts no layer on this one (it offers no
// `shader-f16`); `auto` then runs on the CPU and says why (`webgpu_unusable`), `webgpu` is
// refused with `webgpu_unavailable` and the thread stays usable, `cpu` does not ask. What only
// a real GPU can show: the model running on WebGPU, and its speed. The page is not
// cross-origin isolated here, so the event also says why one thread.
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { ARGS, start } from './harness.mjs';

const GPU_ARGS = [...ARGS.filter((a) => a !== '--disable-gpu'), '--enable-unsafe-webgpu', '--use-webgpu-adapter=swiftshader'];
const MODEL = { provider: 'local', url: '/models/test.gguf', maxTokens: 8, contextWindow: 512 };
let h;

before(async () => {
  h = await start({ args: GPU_ARGS, isolated: false });
  await h.goto();
});
after(async () => {
  if (process.env.GATEHOUSE_E2E_VERBOSE) console.log(h?.log.join('\n'));
  await h?.close();
});

const runtimeOf = (threadId) => h.page.evaluate((id) =>
  window.t.events.filter((e) => e.threadId === id && e.type === 'model_runtime').map(({ at, threadId, ...e }) => e), threadId);
const chat = async (id, model) => {
  await h.page.evaluate(([id, m]) => window.t.open(id, m), [id, model]);
  return h.page.evaluate((id) => window.t.chat(id, 'Say hello.'), id);
};

test('the browser gives a software WebGPU adapter (SwiftShader), without shader-f16', async () => {
  const adapter = await h.page.evaluate(async () => {
    const a = await navigator.gpu?.requestAdapter();
    return a ? { architecture: a.info?.architecture ?? null, f16: a.features.has('shader-f16') } : null;
  });
  assert.deepEqual(adapter, { architecture: 'swiftshader', f16: false });
});

test('device "auto": llama.cpp cannot use this adapter, so the CPU answers, and model_runtime says why', { timeout: 300_000 }, async () => {
  const r = await chat('gpu-auto', { ...MODEL, device: 'auto' });
  assert.equal(r.error, undefined, JSON.stringify(r.error));
  assert.equal(r.status, 'completed');
  assert.deepEqual(await runtimeOf('gpu-auto'), [{ type: 'model_runtime', device: 'cpu', threads: 1, singleThreadReason: 'not_isolated', cpuReason: 'webgpu_unusable' }]);
});

test('device "webgpu": refused with webgpu_unavailable, which names the adapter; the thread stays usable', { timeout: 300_000 }, async () => {
  const r = await chat('gpu-only', { ...MODEL, device: 'webgpu' });
  assert.equal(r.error?.code, 'webgpu_unavailable', JSON.stringify(r));
  assert.match(r.error.message, /no layer on this browser's WebGPU adapter \(.*swiftshader.*without shader-f16\)/);
  assert.deepEqual(await runtimeOf('gpu-only'), []);
  const stored = await h.page.evaluate(() => window.t.messages('gpu-only'));
  assert.deepEqual(stored.map((m) => m.role), ['user']);
  // The same thread with the CPU answers.
  const again = await chat('gpu-only', { ...MODEL, device: 'cpu' });
  assert.equal(again.error, undefined, JSON.stringify(again.error));
});

test('device "cpu": the CPU, said to be asked for', { timeout: 300_000 }, async () => {
  const r = await chat('gpu-cpu', { ...MODEL, device: 'cpu' });
  assert.equal(r.error, undefined, JSON.stringify(r.error));
  assert.deepEqual(await runtimeOf('gpu-cpu'), [{ type: 'model_runtime', device: 'cpu', threads: 1, singleThreadReason: 'not_isolated', cpuReason: 'requested' }]);
});
