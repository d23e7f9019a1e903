// The demo's smoke test in the engine GATEHOUSE_BROWSER names (chromium, firefox, webkit):
// open the app, chat, approve one of two gated calls, reload mid-approval, find the cards
// again from IndexedDB, approve the other, read the summary. It drives the page through the
// engine-neutral interface of tests/browser/engines.mjs (the other demo tests use Playwright's
// locators, Chromium only).
import { after, test } from 'node:test';
import assert from 'node:assert/strict';
import { startServer } from '../model-server/server.mjs';
import { engineName, engineVersion, launchBrowser } from '../browser/engines.mjs';
import { launchOptions } from '../browser/harness.mjs';

const engine = engineName();
let shared = null;
after(async () => {
  const s = await shared?.catch(() => null);
  await s?.browser.close().catch(() => {});
  await s?.server.close().catch(() => {});
});

async function start() {
  const server = await startServer({ staticDir: new URL('../..', import.meta.url).pathname, port: 0, ttlSeconds: 600, isolate: true });
  try {
    return { server, browser: await launchBrowser(engine, launchOptions()) };
  } catch (e) {
    await server.close();
    throw e;
  }
}

/** Polls `fn(arg)` in the page until it returns something truthy (10 s at most). */
async function until(page, fn, arg, what) {
  const end = Date.now() + 10_000;
  for (;;) {
    const v = await page.evaluate(fn, arg);
    if (v) return v;
    if (Date.now() > end) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 50));
  }
}

const ready = (page) => until(page, () => {
  const el = document.documentElement;
  return el.dataset.failed ? `failed: ${el.dataset.failed}` : el.dataset.ready === 'true' && 'ready';
}, null, 'the demo to open its thread');

const cards = (page) => page.evaluate(() => [...document.querySelectorAll('.gh-card')].map((c) => ({
  state: c.getAttribute('data-state'),
  name: c.querySelector('.gh-card-tech')?.textContent,
  reason: c.querySelector('.gh-card-reason')?.textContent ?? null,
})));

test(`demo in ${engine} (${engineVersion(engine)}): open, chat, approve, reload mid-approval, approve, summary`, { timeout: 90_000 }, async (t) => {
  shared ??= start();
  const { server, browser } = await shared;
  const context = await browser.newContext();
  t.after(() => context.close().catch(() => {}));
  const page = await context.newPage();
  const errors = [];
  page.on('pageerror', (e) => errors.push(String(e?.message ?? e)));
  await page.goto(`${server.url}/www/`, { timeout: 15_000 });
  assert.equal(await ready(page), 'ready');

  await until(page, () => document.querySelector('.gh-composer[data-loading="false"][data-busy="false"]'), null, 'the composer');
  await page.fill('.gh-input', 'delete a.txt and email team@example.com');
  await page.press('.gh-input', 'Enter');
  await until(page, () => document.querySelectorAll('.gh-card').length === 2, null, 'two cards');
  assert.deepEqual((await cards(page)).map((c) => [c.name, c.state]), [['delete_file', 'pending'], ['send_email', 'pending']]);

  await page.click('.gh-card[data-state="pending"] .gh-approve'); // the first: delete_file
  await until(page, () => document.querySelector('.gh-card[data-state="approved"]'), null, 'the first card approved');

  await page.reload({ timeout: 15_000 });
  assert.equal(await ready(page), 'ready');
  await until(page, () => document.querySelectorAll('.gh-card').length === 2, null, 'the cards after the reload');
  const back = await cards(page);
  assert.deepEqual(back.map((c) => [c.name, c.state]), [['delete_file', 'approved'], ['send_email', 'pending']], 'the decision survived the reload');
  assert.equal(back[1].reason, 'Sends an email to team@example.com on your behalf; it cannot be unsent.');
  assert.equal(await page.evaluate(() => document.querySelector('.gh-input').disabled), true, 'the box stays locked');
  assert.equal(await page.evaluate(() => document.querySelector('.gh-messages .gh-user')?.textContent), 'delete a.txt and email team@example.com');

  await page.click('.gh-card[data-state="pending"] .gh-approve'); // the one left: send_email
  const summary = await until(page, () => [...document.querySelectorAll('.gh-messages .gh-assistant .gh-bubble')]
    .map((b) => b.innerText).find((x) => x.includes('Tool results')), null, 'the summary');
  assert.match(summary, /delete_file returned: \{"deleted":"a.txt"\}/);
  assert.match(summary, /send_email returned/);
  assert.equal(await page.evaluate(() => document.querySelector('.gh-input').disabled), false);
  assert.deepEqual(errors, [], 'uncaught errors in the page');
});
