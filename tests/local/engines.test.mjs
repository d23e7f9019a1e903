// Load and answer in another engine (GATEHOUSE_BROWSER=firefox; tests/browser/engines.mjs
// drives it): the same page and package as local.test.mjs, the model downloaded, loaded in
// wllama's worker, and a streamed answer stored.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { launchBrowser } from '../browser/engines.mjs';
import { startLocalServer } from './server.mjs';

const ENGINE = process.env.GATEHOUSE_BROWSER || 'firefox';

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
    const r = await page.evaluate(async () => {
      await window.t.open('engine', { provider: 'local', url: '/models/test.gguf', maxTokens: 16 });
      const r = await window.t.chat('engine', 'What is the capital of France?');
      const ev = window.t.events.filter((e) => e.threadId === 'engine');
      return { ...r, deltas: ev.filter((e) => e.type === 'text_delta').length, progress: ev.filter((e) => e.type === 'model_progress').length };
    });
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
