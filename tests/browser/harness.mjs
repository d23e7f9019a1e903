// Shared helpers of the browser test files. Under run.mjs a test file attaches to the one
// Chromium and the two model servers that run.mjs started (passed in GATEHOUSE_E2E_* env vars);
// run on its own (`node --test tests/browser/x.test.mjs`) it starts its own, in process. In
// Firefox and WebKit (GATEHOUSE_BROWSER, engines.mjs) each test file launches its own browser.

import { chromium } from 'playwright-core';
import { existsSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { startServer } from '../model-server/server.mjs';
import { engineName, launchBrowser } from './engines.mjs';

export const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../..');
export const PAGE_PATH = '/tests/browser/page.html';

/** Playwright creates a fresh temporary --user-data-dir itself (and refuses one in `args`). */
export const CHROMIUM_ARGS = [
  '--headless', '--no-sandbox', '--disable-gpu', '--disable-quic', '--no-first-run',
  '--disable-background-networking', '--disable-component-update', '--disable-sync',
];

export function launchOptions() {
  return {
    executablePath: process.env.CHROMIUM_PATH || '/usr/bin/chromium',
    headless: true,
    args: CHROMIUM_ARGS,
    timeout: 30_000,
  };
}

/** The byte-exact text the model gets for a rejected call (README "Approval semantics" 5). */
export const rejection = (reason = 'No specific instruction provided.') =>
  `TOOL NOT EXECUTED. The user rejected this action. User instruction: ${reason}. ` +
  'Do not attempt this tool again. Follow the user\'s instruction or reconsider your plan.';

let counter = 0;
/** A name unique to this process and run (scenario ids, databases, threads). */
export const uid = (prefix) =>
  `${prefix}-${process.pid}-${Date.now().toString(36)}-${(++counter).toString(36)}`;

/** Rejects when `promise` has not settled within `ms`. */
export function within(promise, ms, label) {
  let timer;
  return Promise.race([
    promise,
    new Promise((_, reject) => {
      timer = setTimeout(() => reject(new Error(`timed out after ${ms} ms: ${label}`)), ms);
    }),
  ]).finally(() => clearTimeout(timer));
}

async function http(method, url, body) {
  const res = await within(fetch(url, {
    method,
    headers: body === undefined ? {} : { 'content-type': 'application/json' },
    body: body === undefined ? undefined : JSON.stringify(body),
  }), 10_000, `${method} ${url}`);
  const text = await res.text();
  if (!res.ok) throw new Error(`${method} ${url}: HTTP ${res.status}: ${text}`);
  return JSON.parse(text);
}

class Scenario {
  constructor(server, id) {
    this.server = server;
    this.id = id;
  }

  /** Replaces the turns (this also resets the turn counter and the recorded requests). */
  async script(turns, repeat = false) {
    await http('POST', `${this.server}/__scenarios`, { id: this.id, turns, repeat });
    return this;
  }

  /** The recorded model requests: `[{ headers, body, outcome, turn, ... }]`. */
  requests() {
    return http('GET', `${this.server}/__scenarios/${this.id}/requests`);
  }

  /** A generated scenario's summary and calls (`GET /__scenarios/{id}/generated`). */
  generated() {
    return http('GET', `${this.server}/__scenarios/${this.id}/generated`);
  }

  /** Polls until `pred(requests)` holds (the server records outcomes asynchronously). */
  async waitRequests(pred, ms = 5_000) {
    const end = Date.now() + ms;
    for (;;) {
      const r = await this.requests();
      if (pred(r)) return r;
      if (Date.now() > end) throw new Error(`requests never matched; last: ${JSON.stringify(r.map((x) => x.outcome))}`);
      await new Promise((res) => setTimeout(res, 50));
    }
  }

  openai(extra = {}) {
    return { provider: 'openai', baseUrl: `${this.server}/s/${this.id}/v1`, model: 'gpt-test', ...extra };
  }

  anthropic(extra = {}) {
    return { provider: 'anthropic', baseUrl: `${this.server}/s/${this.id}`, model: 'claude-test', ...extra };
  }
}

export class Harness {
  constructor({ browser, engine, url, url2, cleanup, pkgDir }) {
    this.browser = browser;
    this.engine = engine; // 'chromium' | 'firefox' | 'webkit'
    this.pkgDir = pkgDir; // GATEHOUSE_E2E_PKG: serve /pkg/* from this directory instead
    this.url = url; // serves the page and the package, and answers model requests
    this.url2 = url2; // a second origin: model requests only (CORS)
    this.cleanup = cleanup;
  }

  /** A new scenario on server `server` (default: the page's own origin). */
  async scenario(turns, { repeat = false, server = this.url } = {}) {
    return new Scenario(server, uid('sc')).script(turns, repeat);
  }

  /**
   * A fresh browser context (its own IndexedDB) with the test page loaded, closed after the
   * test. `errors` collects uncaught page errors and console errors/warnings.
   */
  async open(t, { context } = {}) {
    const ctx = context ?? await this.newContext();
    if (!context) t.after(() => ctx.close().catch(() => {}));
    const page = await ctx.newPage();
    page.setDefaultTimeout(15_000);
    const errors = [];
    page.errors = errors;
    page.on('pageerror', (e) => errors.push(`pageerror: ${e.message}`));
    page.on('console', (m) => {
      if (m.type() === 'error' || m.type() === 'warning') errors.push(`console.${m.type()}: ${m.text()}`);
      if (process.env.GATEHOUSE_E2E_VERBOSE) console.log(`[page] ${m.text()}`);
    });
    await this.load(page);
    return { page, context: ctx, errors };
  }

  /**
   * A generated scenario (model-server README, "Generated scenarios"): endless tool-call and
   * answer turns, every request validated. `spec` is the `generate` object.
   */
  async generatedScenario(spec, { server = this.url } = {}) {
    const id = uid('gen');
    await http('POST', `${server}/__scenarios`, { id, generate: spec });
    return new Scenario(server, id);
  }

  /** A browser context (own storage); with GATEHOUSE_E2E_PKG its /pkg/* comes from that dir. */
  async newContext() {
    const ctx = await this.browser.newContext();
    if (this.pkgDir && this.engine !== 'chromium') throw new Error(`--pkg needs Chromium (request routing), not ${this.engine}`);
    if (this.pkgDir) {
      await ctx.route((u) => u.pathname.startsWith('/pkg/'), (route) => {
        // Keep sub-paths: the glue imports its inline JS from /pkg/snippets/<crate>/inlineN.js.
        const rel = decodeURIComponent(new URL(route.request().url()).pathname.slice('/pkg/'.length));
        const file = path.join(this.pkgDir, rel);
        if (!file.startsWith(path.resolve(this.pkgDir) + path.sep) || !existsSync(file)) {
          return route.fulfill({ status: 404, body: 'not found' });
        }
        const type = file.endsWith('.wasm') ? 'application/wasm' : file.endsWith('.js') ? 'text/javascript' : 'text/plain';
        return route.fulfill({ status: 200, body: readFileSync(file), contentType: type, headers: { 'cache-control': 'no-store' } });
      });
    }
    return ctx;
  }

  /** (Re)loads the test page and waits until the package is initialised. */
  async load(page, reload = false) {
    if (reload) await page.reload({ timeout: 15_000 });
    else await page.goto(this.url + PAGE_PATH, { timeout: 15_000 });
    let failure;
    try {
      await page.waitForFunction(() => window.ghReady === true || window.ghInitError, null, { timeout: 15_000 });
      failure = await page.evaluate(() => window.ghInitError);
    } catch (e) {
      failure = e.message;
    }
    if (failure) {
      throw new Error(`the test page could not initialise the package: ${failure}; page errors: ${JSON.stringify(page.errors ?? [])}`);
    }
  }

  async close() {
    await this.cleanup();
  }
}

/**
 * Runs `fn(arg)` in the page, bounded by `ms`: page.evaluate itself has no timeout, so a hung
 * SDK call would otherwise hang the test until the runner's own limit.
 */
/** Waits here, in Node, until `cond()` holds (polled every 10 ms), at most `ms`; then fails
 *  saying `what` (or the condition's source). */
export async function until(cond, what = String(cond), ms = 10_000) {
  for (const end = Date.now() + ms; !cond();) {
    if (Date.now() >= end) throw new Error(`waited ${ms} ms: ${what}`);
    await new Promise((r) => setTimeout(r, 10));
  }
}

export function run(page, fn, arg, ms = 20_000) {
  return within(page.evaluate(fn, arg), ms, `page.evaluate(${fn.name || 'scenario'})`);
}

export async function setup() {
  const env = process.env;
  const pkg = env.GATEHOUSE_E2E_PKG ? path.resolve(env.GATEHOUSE_E2E_PKG) : path.join(ROOT, 'pkg');
  if (!existsSync(path.join(pkg, 'gatehouse.js'))) {
    throw new Error(`${path.join(pkg, 'gatehouse.js')} is missing: build it first with ./scripts/build-pkg.sh`);
  }
  const owned = [];
  let { GATEHOUSE_E2E_URL: url, GATEHOUSE_E2E_URL2: url2 } = env;
  if (!url || !url2) {
    const a = await startServer({ staticDir: ROOT, ttlSeconds: 600 });
    const b = await startServer({ ttlSeconds: 600 });
    owned.push(() => a.close(), () => b.close());
    url = a.url;
    url2 = b.url;
  }
  const engine = engineName(env);
  const browser = engine !== 'chromium'
    ? await launchBrowser(engine)
    : env.GATEHOUSE_E2E_WS
      ? await chromium.connect(env.GATEHOUSE_E2E_WS, { timeout: 15_000 })
      : await chromium.launch(launchOptions());
  const cleanup = async () => {
    await browser.close().catch(() => {});
    for (const c of owned) await c();
  };
  const pkgDir = env.GATEHOUSE_E2E_PKG ? path.resolve(env.GATEHOUSE_E2E_PKG) : undefined;
  return new Harness({ browser, engine, url, url2, cleanup, pkgDir });
}

/** Text of a message's text blocks. */
export const textOf = (m) => (m?.content ?? []).filter((b) => b.type === 'text').map((b) => b.content).join('');

/**
 * The stress test's size (stress.test.mjs), from the environment: tabs, seconds with Web
 * Locks, seconds without them (0 skips a variant). run.mjs reads it too, to size its deadline.
 */
export function stressConfig(env = process.env) {
  const int = (name, def, min, max) => {
    const raw = env[name];
    if (raw === undefined || raw === '') return def;
    const v = Number(raw);
    if (!Number.isInteger(v) || v < min || v > max) throw new Error(`${name} must be an integer in ${min}..${max}, not "${raw}"`);
    return v;
  };
  const tabs = int('GATEHOUSE_STRESS_TABS', 6, 1, 32);
  const seconds = int('GATEHOUSE_STRESS_SECONDS', 60, 0, 24 * 3600);
  const nolockSeconds = int('GATEHOUSE_STRESS_NOLOCK_SECONDS', 30, 0, 24 * 3600);
  /**
   * Each variant must end within its duration + 90 s (the last actions settling, the end
   * phase that finishes the thread, the final read, the report).
   */
  const variantBudget = (s) => (s > 0 ? s + 90 : 0);
  return { tabs, seconds, nolockSeconds, variantBudget, budgetSeconds: variantBudget(seconds) + variantBudget(nolockSeconds) };
}

/**
 * Removes BroadcastChannel from a page before its agents open: no live notices (as in a
 * browser without it), so a view another agent changed stays stale until its next call or
 * refresh(). The tests of the version check use it; tests/browser/live.test.mjs covers views
 * that follow notices.
 */
export const withoutLiveNotices = (page) => run(page, () => { delete globalThis.BroadcastChannel; });
