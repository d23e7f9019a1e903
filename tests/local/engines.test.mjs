// Load and answer in another engine (GATEHOUSE_BROWSER=firefox; tests/browser/engines.mjs
// drives it): the same page and package as local.test.mjs, the model downloaded, loaded in
// wllama's worker, and a streamed answer stored.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { launchBrowser } from '../browser/engines.mjs';
import { startLocalServer } from './server.mjs';

const ENGINE = process.env.GATEHOUSE_BROWSER || 'firefox';
const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

test(`${ENGINE}: the local model loads and answers`, { timeout: 300_000 }, async (t) => {
  const server = await startLocalServer();
  const browser = await launchBrowser(ENGINE);
  try {
    const context = await browser.newContext();
    const page = await context.newPage();
    // What the page said, with the time since the start: printed if the test fails.
    const t0 = Date.now();
    const said = [];
    page.on('console', (m) => said.push(`${Date.now() - t0} ms ${m.type()}: ${m.text()}`));
    page.on('pageerror', (e) => said.push(`${Date.now() - t0} ms pageerror: ${e.message}`));
    let passed = false;
    t.after(() => { if (!passed) console.log(`page console (${ENGINE}):\n${said.join('\n')}`); });
    await page.goto(`${server.url}/tests/local/page.html`);
    await page.waitForFunction(() => window.ready === true, null, { timeout: 60_000 });
    // The chat runs in the page while the test looks in every 5 s: if it never ends (it did
    // once in CI, past 290 s, where it takes 8 s here), the failure says how far it got (the
    // events, the local provider's User Timing measures) and whether the page still answered.
    await page.evaluate(() => {
      window.run = (async () => {
        await window.t.open('engine', { provider: 'local', url: '/models/test.gguf', maxTokens: 16 });
        return window.t.chat('engine', 'What is the capital of France?');
      })().then((r) => (window.done = r), (e) => (window.done = { error: { message: String(e) } }));
    });
    const look = () => page.evaluate(() => ({
      done: window.done ?? null,
      cores: navigator.hardwareConcurrency,
      isolated: crossOriginIsolated,
      events: window.t.events.filter((e) => e.threadId === 'engine').map((e) => e.type),
      measures: performance.getEntriesByType('measure').map((m) => `${m.name} ${Math.round(m.duration)} ms`),
    }));
    const seen = [];
    let state;
    for (const end = Date.now() + 240_000; Date.now() < end;) {
      state = await Promise.race([look(), sleep(20_000).then(() => null)]);
      const types = state ? [...new Set(state.events)].map((t) => `${t}×${state.events.filter((x) => x === t).length}`) : [];
      seen.push(`${Date.now() - t0} ms: ${state ? `cores ${state.cores}, isolated ${state.isolated}; events ${types.join(' ')}; measures ${state.measures.join(', ')}` : 'the page did not answer in 20 s'}`);
      if (state?.done) break;
      await sleep(5_000);
    }
    assert.ok(state?.done, `the chat did not end in 240 s:\n${seen.join('\n')}`);
    const ev = state.done.error ? [] : await page.evaluate(() => window.t.events.filter((e) => e.threadId === 'engine'));
    const r = { ...state.done, deltas: ev.filter((e) => e.type === 'text_delta').length, progress: ev.filter((e) => e.type === 'model_progress').length };
    assert.equal(r.error, undefined, JSON.stringify(r.error));
    assert.equal(r.status, 'completed');
    assert.ok(r.deltas >= 2 && r.progress >= 3, JSON.stringify({ deltas: r.deltas, progress: r.progress }));
    const text = r.message.content.map((b) => b.content).join('');
    assert.ok(text.trim().length > 0);
    passed = true;
  } finally {
    await browser.close().catch(() => {});
    await server.close();
  }
});
