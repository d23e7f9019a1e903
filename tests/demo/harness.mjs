// Shared setup for the demo's end-to-end tests: one static + model server (the repository
// root, on a free port) and one headless Chromium for the whole process, each test in its
// own browser context (fresh IndexedDB, localStorage and service workers). Closed by a
// root-level `after` hook, so `node tests/demo/run.mjs` and `node --test tests/demo/`
// both clean up.

import { after } from 'node:test';
import assert from 'node:assert/strict';
import { existsSync, mkdirSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { chromium } from 'playwright-core';
import { startServer } from '../model-server/server.mjs';

export const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../..');
export const OUT = path.join(ROOT, 'test-output/demo');
const CHROMIUM = process.env.CHROMIUM_PATH || '/usr/bin/chromium';
export const WAIT = 10_000; // the longest any single UI expectation waits

let shared = null;

async function start() {
  for (const f of ['pkg/gatehouse.js', 'pkg/gatehouse_bg.wasm']) {
    if (!existsSync(path.join(ROOT, f))) throw new Error(`${f} is missing: run ./scripts/build-pkg.sh first`);
  }
  if (!existsSync(CHROMIUM)) throw new Error(`no Chromium at ${CHROMIUM}: run ./scripts/setup-browser.sh (or set CHROMIUM_PATH)`);
  mkdirSync(OUT, { recursive: true });
  // Isolated, as `make demo` serves it (scripts/serve-demo.sh --isolate).
  const server = await startServer({ staticDir: ROOT, port: 0, ttlSeconds: 600, isolate: true });
  // launch() always starts from a fresh temporary profile (Playwright's own --user-data-dir).
  let browser;
  try {
    browser = await chromium.launch({
      executablePath: CHROMIUM,
      headless: true,
      timeout: 30_000,
      args: [
        '--headless', '--no-sandbox', '--disable-gpu', '--disable-quic', '--no-first-run',
        '--disable-background-networking', '--disable-component-update', '--disable-sync',
      ],
    });
  } catch (e) {
    await server.close();
    throw e;
  }
  return {
    server,
    browser,
    url: server.url,
    async close() {
      await browser.close().catch(() => {});
      await server.close().catch(() => {});
    },
  };
}

/** The shared server and browser, started on first use. */
export function harness() {
  shared ??= start();
  return shared;
}

after(async () => {
  const h = await shared?.catch(() => null); // a failed start was already reported by the test
  await h?.close();
});

/**
 * A fresh browser context and page. Uncaught page errors are collected in `errors`;
 * `done()` closes the context and fails the test if there were any.
 */
export async function newPage({ viewport = { width: 1200, height: 800 }, colorScheme = 'light', bypassCSP = false } = {}) {
  const h = await harness();
  const context = await h.browser.newContext({ viewport, deviceScaleFactor: 1, colorScheme, bypassCSP });
  context.setDefaultTimeout(WAIT);
  const page = await context.newPage();
  const errors = [];
  page.on('pageerror', (e) => errors.push(String(e?.stack ?? e)));
  page.on('console', (m) => {
    if (process.env.DEMO_TEST_VERBOSE) console.log(`[page ${m.type()}] ${m.text()}`);
  });
  return {
    h,
    context,
    page,
    errors,
    async done() {
      await context.close().catch(() => {});
      assert.deepEqual(errors, [], 'uncaught errors in the page');
    },
  };
}

/** Waits until the app (or a widget) has opened its thread; fails fast if it could not start. */
export async function waitReady(page, selector = 'html') {
  await page.locator(`${selector}[data-ready="true"], ${selector}[data-failed]`).first().waitFor();
  const failed = await page.locator(selector).first().getAttribute('data-failed');
  if (failed !== null) throw new Error(`the demo did not start: ${failed}`);
}

/** Opens the demo app and waits until it has opened a thread. */
export async function openDemo(page, hash = '') {
  const h = await harness();
  await page.goto(`${h.url}/www/${hash}`);
  await waitReady(page);
}

/** Types a message in the composer and presses Enter. */
export async function send(page, text, root = page) {
  // Wait until the view has a thread open and nothing runs (then Enter sends).
  await root.locator('.gh-composer[data-loading="false"][data-busy="false"]').waitFor();
  const input = root.locator('.gh-input');
  await input.fill(text);
  await input.press('Enter');
}

/** The text of the last assistant bubble once it contains `needle`. */
export async function waitForAssistant(root, needle) {
  const bubble = root.locator('.gh-messages .gh-assistant .gh-bubble', { hasText: needle }).last();
  await bubble.waitFor();
  return bubble.innerText();
}

/** Saves a screenshot to test-output/demo/<name>.png. */
export async function shot(page, name) {
  await page.screenshot({ path: path.join(OUT, `${name}.png`) });
}

/** Creates a model-server scenario; returns the OpenAI-style base URL for it. */
export async function scenario(id, turns) {
  const h = await harness();
  const res = await fetch(`${h.url}/__scenarios`, {
    method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ id, turns }),
  });
  assert.equal(res.status, 200, await res.text());
  return `${h.url}/s/${id}/v1`;
}

export async function scenarioRequests(id) {
  const h = await harness();
  return (await fetch(`${h.url}/__scenarios/${id}/requests`)).json();
}

/** Makes the demo app use the model server at `baseUrl` (OpenAI wire format) from its first load. */
export async function useModel(page, baseUrl) {
  await page.addInitScript((url) => {
    localStorage.setItem('gatehouse-demo.settings', JSON.stringify({
      provider: 'openai', rememberKey: false,
      openai: { baseUrl: url, model: 'mock-model' }, anthropic: { baseUrl: 'https://api.anthropic.com', model: 'm' },
    }));
  }, baseUrl);
}

/**
 * Counts the characters that enter the live regions under `rootSelector` (elements with
 * `aria-live` other than "off", or role log, status or alert — in the document or an open
 * shadow root): text of inserted nodes and growth of changed text nodes. Read it with
 * `announced(page)`.
 */
export async function countAnnouncements(page, host = null) {
  await page.evaluate((hostSel) => {
    const root = hostSel ? document.querySelector(hostSel).shadowRoot : document;
    const live = (node) => {
      const el = node.nodeType === 1 ? node : node.parentElement;
      return el?.closest('[aria-live]:not([aria-live="off"]), [role="log"], [role="status"], [role="alert"]');
    };
    window.__announced = { chars: 0, texts: [] };
    const count = (text) => {
      window.__announced.chars += text.length;
      if (text.trim()) window.__announced.texts.push(text);
    };
    new MutationObserver((records) => {
      for (const r of records) {
        if (r.type === 'childList' && live(r.target)) {
          for (const n of r.addedNodes) count(n.textContent ?? '');
        } else if (r.type === 'characterData' && live(r.target)) {
          count(r.target.data.slice(Math.min(r.oldValue?.length ?? 0, r.target.data.length)));
        }
      }
    }).observe(root, { subtree: true, childList: true, characterData: true, characterDataOldValue: true });
  }, host);
}

export async function announced(page) {
  return page.evaluate(() => window.__announced);
}
