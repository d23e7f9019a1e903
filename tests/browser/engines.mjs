// The browsers the end-to-end tests run in, behind one small driver interface: the subset of
// Playwright's Browser/BrowserContext/Page that the tests use. Chromium is driven by
// Playwright itself; Firefox ESR by puppeteer-core over WebDriver BiDi; WebKitGTK by its
// WebDriver server (classic WebDriver: this build has no BiDi), with the parts classic WebDriver
// lacks (init scripts, bindings, page errors) done through the test page and a local HTTP
// endpoint. GATEHOUSE_BROWSER (or run.mjs --browser) picks the engine; chromium by default.
//
//   browser:  newContext(), version(), close()
//   context:  newPage(), addInitScript(fn, arg), exposeBinding(name, (source, arg) => …),
//             setOffline(bool), close()
//   page:     goto(url, { timeout }), reload({ timeout }), evaluate(fn, arg),
//             waitForFunction(fn, arg, { timeout }), addInitScript(fn, arg), url(),
//             fill(selector, text), press(selector, 'Enter'), click(selector),
//             on('pageerror' | 'console' | 'request', cb), setDefaultTimeout(ms), waitForTimeout(ms),
//             close()
//
// What an engine cannot do throws `EngineUnsupported`, so a test never passes by not looking.

import { execFileSync, spawn } from 'node:child_process';
import { createServer } from 'node:http';
import net from 'node:net';

export const ENGINES = ['chromium', 'firefox', 'webkit'];

export const FIREFOX_PATH = process.env.FIREFOX_PATH || '/usr/bin/firefox-esr';
export const WEBKIT_DRIVER_PATH = process.env.WEBKIT_DRIVER_PATH || '/usr/bin/WebKitWebDriver';
export const MINIBROWSER_PATH = process.env.MINIBROWSER_PATH || '/usr/lib/x86_64-linux-gnu/webkit2gtk-4.1/MiniBrowser';

/** The engine this process tests: GATEHOUSE_BROWSER, default chromium. */
export function engineName(env = process.env) {
  const name = env.GATEHOUSE_BROWSER || 'chromium';
  if (!ENGINES.includes(name)) throw new Error(`GATEHOUSE_BROWSER must be one of ${ENGINES.join(', ')}, not "${name}"`);
  return name;
}

export class EngineUnsupported extends Error {
  constructor(engine, what) {
    super(`${what} is not available in ${engine} (tests/browser/engines.mjs)`);
    this.name = 'EngineUnsupported';
  }
}

/** "Chromium 156.0.8078.114", "Mozilla Firefox 153.8.0esr", "WebKitGTK 2.50.6": from the installed packages. */
export function engineVersion(engine, chromiumPath = process.env.CHROMIUM_PATH || '/usr/bin/chromium') {
  const run = (cmd, args) => execFileSync(cmd, args, { encoding: 'utf8', stdio: ['ignore', 'pipe', 'ignore'] }).trim();
  try {
    if (engine === 'chromium') return run(chromiumPath, ['--version']).replace(/ built on .*/, '');
    if (engine === 'firefox') return run(FIREFOX_PATH, ['--version']);
    // WebKitWebDriver has no --version; the library it drives is the engine.
    return `WebKitGTK ${run('dpkg-query', ['-W', '-f=${Version}', 'libwebkit2gtk-4.1-0']).replace(/-.*/, '')}`;
  } catch (e) {
    return `${engine} (version unknown: ${e.message.split('\n')[0]})`;
  }
}

/** Launches `engine`; Chromium with Playwright's `chromium.launch(chromiumOptions)`. */
export async function launchBrowser(engine, chromiumOptions = {}) {
  if (engine === 'firefox') return FirefoxBrowser.launch();
  if (engine === 'webkit') return WebKitBrowser.launch();
  const { chromium } = await import('playwright-core');
  return chromium.launch(chromiumOptions);
}

const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

// ---------------------------------------------------------------- Firefox: puppeteer-core over BiDi

class FirefoxBrowser {
  static async launch() {
    const { default: puppeteer } = await import('puppeteer-core');
    const browser = await puppeteer.launch({
      browser: 'firefox', executablePath: FIREFOX_PATH, headless: true, protocol: 'webDriverBiDi', timeout: 30_000,
      // One evaluate may wait for as long as a test allows (loading a model in the page took
      // over 180 s, puppeteer's default, once in a fresh-clone CI run); tests bound themselves.
      protocolTimeout: 290_000,
    });
    return new FirefoxBrowser(browser);
  }

  constructor(browser) { this.browser = browser; }
  version() { return this.browser.version(); }
  async newContext() { return new FirefoxContext(await this.browser.createBrowserContext()); }
  close() { return this.browser.close(); }
}

class FirefoxContext {
  constructor(ctx) {
    this.ctx = ctx;
    this.inits = [];
    this.bindings = [];
    this.pages = [];
    this.offline = false;
  }

  async newPage() {
    // A window each, as Playwright's pages are: a background tab is hidden, and Firefox then
    // clamps its timers to 1 s (dom.min_background_timeout_value), which is a different test.
    const page = new FirefoxPage(await this.ctx.newPage({ type: 'window' }), this);
    for (const [fn, arg] of this.inits) await page.p.evaluateOnNewDocument(fn, arg);
    for (const [name, cb] of this.bindings) await page.bind(name, cb);
    if (this.offline) await page.p.setOfflineMode(true);
    this.pages.push(page);
    return page;
  }

  async addInitScript(fn, arg) {
    this.inits.push([fn, arg]);
    for (const page of this.pages) await page.p.evaluateOnNewDocument(fn, arg);
  }

  async exposeBinding(name, cb) {
    this.bindings.push([name, cb]);
    for (const page of this.pages) await page.bind(name, cb);
  }

  async setOffline(offline) {
    this.offline = offline;
    for (const page of this.pages) await page.p.setOfflineMode(offline);
  }

  close() { return this.ctx.close(); }
}

class FirefoxPage {
  constructor(p, context) {
    this.p = p;
    this.context = context;
  }

  bind(name, cb) { return this.p.exposeFunction(name, (arg) => cb({ page: this, context: this.context }, arg)); }
  goto(url, { timeout } = {}) { return this.p.goto(url, { timeout, waitUntil: 'load' }); }
  reload({ timeout } = {}) { return this.p.reload({ timeout, waitUntil: 'load' }); }
  /**
   * The result crosses as JSON text made in the page: puppeteer's BiDi deserialiser turns an
   * object that occurs twice in a result into `undefined` the second time.
   */
  async evaluate(fn, arg) {
    const out = await this.p.evaluate(async (src, a, U, N) => {
      const enc = (key, v) => (v === undefined ? { [U]: 1 } : typeof v === 'number' && !Number.isFinite(v) ? { [N]: String(v) } : v);
      return JSON.stringify({ value: await (0, eval)(`(${src})`)(a) }, enc);
    }, fn.toString(), arg, UNDEF, NONFINITE);
    return revive(JSON.parse(out).value);
  }

  waitForFunction(fn, arg, { timeout } = {}) { return this.p.waitForFunction(fn, { timeout, polling: 50 }, arg); }
  addInitScript(fn, arg) { return this.p.evaluateOnNewDocument(fn, arg); }
  fill(selector, text) { return this.p.locator(selector).fill(text); }
  async press(selector, key) { await this.p.focus(selector); await this.p.keyboard.press(key); }
  click(selector) { return this.p.locator(selector).click(); }
  url() { return this.p.url(); }
  setDefaultTimeout(ms) { this.p.setDefaultTimeout(ms); }
  waitForTimeout(ms) { return sleep(ms); }
  close() { return this.p.close(); }

  on(event, cb) {
    if (event === 'pageerror') this.p.on('pageerror', (e) => cb(e instanceof Error ? e : new Error(String(e))));
    else if (event === 'console') {
      // Puppeteer says "warn" where Playwright says "warning".
      this.p.on('console', (m) => cb({ type: () => (m.type() === 'warn' ? 'warning' : m.type()), text: () => m.text() }));
    } else if (event === 'request') this.p.on('request', (r) => cb({ url: () => r.url() }));
    else throw new EngineUnsupported('firefox', `page.on('${event}')`);
    return this;
  }
}

// ---------------------------------------------------------------- WebKit: classic WebDriver

/** A free TCP port on 127.0.0.1 (WebKitWebDriver needs one on its command line). */
function freePort() {
  return new Promise((resolve, reject) => {
    const s = net.createServer();
    s.once('error', reject);
    s.listen(0, '127.0.0.1', () => { const { port } = s.address(); s.close(() => resolve(port)); });
  });
}

/** Runs `fn` with no other holder: serialises window switches with the command that follows. */
class Mutex {
  constructor() { this.tail = Promise.resolve(); }
  run(fn) {
    const result = this.tail.then(fn);
    this.tail = result.catch(() => {});
    return result;
  }
}

// Values cross WebDriver as JSON; these stand for what JSON cannot carry (Playwright keeps them).
const UNDEF = '__gh_undefined__';
const NONFINITE = '__gh_number__';
function revive(v) {
  if (Array.isArray(v)) return v.map(revive);
  if (v && typeof v === 'object') {
    if (v[UNDEF] === 1) return undefined;
    if (typeof v[NONFINITE] === 'string') return Number(v[NONFINITE]);
    for (const k of Object.keys(v)) v[k] = revive(v[k]);
  }
  return v;
}

/**
 * The script around every evaluate: runs `fn(arg)` only in the page it was meant for. The
 * function's source is part of the script (WebDriver's scripts are exempt from the page's CSP,
 * an eval inside them is not: the demo forbids it).
 */
const evaluateScript = (src) => `
const [__ghArg, __ghPageId, __ghDone] = arguments;
if (window.name !== __ghPageId) { __ghDone(JSON.stringify({ wrongPage: true })); return; }
const __ghEnc = (key, v) => v === undefined ? { ${JSON.stringify(UNDEF)}: 1 }
  : typeof v === 'number' && !Number.isFinite(v) ? { ${JSON.stringify(NONFINITE)}: String(v) } : v;
Promise.resolve().then(() => (${src})(__ghArg)).then(
  (value) => __ghDone(JSON.stringify({ ok: true, value }, __ghEnc)),
  (e) => __ghDone(JSON.stringify({ ok: false, error: String(e && e.stack ? e.message + '\\n' + e.stack : e) })));
`;

/** Starts a WebKitWebDriver; resolves to { base, process } once it answers. */
async function startWebKitDriver() {
  const port = await freePort();
  const child = spawn(WEBKIT_DRIVER_PATH, [`--port=${port}`], { stdio: ['ignore', 'ignore', 'inherit'] });
  const base = `http://127.0.0.1:${port}`;
  for (let waited = 0; ; waited += 50) {
    try {
      await fetch(`${base}/status`);
      return { base, child };
    } catch (e) {
      if (child.exitCode !== null || waited > 10_000) {
        child.kill('SIGKILL');
        throw new Error(`WebKitWebDriver did not start: ${e.message}`);
      }
      await sleep(50);
    }
  }
}

class WebKitBrowser {
  static async launch() {
    if (!process.env.DISPLAY) throw new Error('WebKitGTK needs a display: run under `xvfb-run -a` (run.mjs does)');
    const b = new WebKitBrowser();
    await b.listen();
    return b;
  }

  constructor() {
    this.contexts = new Map(); // id -> WebKitContext
    this.seq = 0;
    this.browserVersion = null;
  }

  /** The endpoint the pages call back: init scripts, bindings, errors and console messages. */
  listen() {
    this.server = createServer((req, res) => {
      const cors = { 'access-control-allow-origin': '*', 'cache-control': 'no-store' };
      const [, kind, ctxId, pageId] = new URL(req.url, 'http://x').pathname.split('/');
      const page = this.contexts.get(ctxId)?.pages.get(pageId);
      if (!page) { res.writeHead(404, cors).end(); return; }
      if (kind === 'init') {
        res.writeHead(200, { ...cors, 'content-type': 'text/javascript' }).end(page.initSource());
        return;
      }
      let body = '';
      req.setEncoding('utf8');
      req.on('data', (c) => { body += c; });
      req.on('end', async () => {
        try {
          const msg = JSON.parse(body);
          const value = await page.fromPage(kind, msg);
          res.writeHead(200, { ...cors, 'content-type': 'application/json' }).end(JSON.stringify({ value: value ?? null }));
        } catch (e) {
          res.writeHead(500, cors).end(String(e?.message ?? e));
        }
      });
    });
    return new Promise((resolve) => this.server.listen(0, '127.0.0.1', () => {
      this.callback = `http://127.0.0.1:${this.server.address().port}`;
      resolve();
    }));
  }

  /** One WebDriver command; `ms` bounds it (null: unbounded, the caller bounds it). */
  async command(base, method, path, body, ms = 45_000) {
    const t0 = Date.now();
    const slow = process.env.GATEHOUSE_E2E_VERBOSE && setTimeout(() => console.log(`[webdriver] still waiting after 5 s: ${method} ${path}`), 5_000);
    const res = await fetch(base + path, {
      method,
      headers: { 'content-type': 'application/json' },
      body: body === undefined ? undefined : JSON.stringify(body),
      signal: ms === null ? undefined : AbortSignal.timeout(ms),
    }).catch((e) => {
      throw e.name === 'TimeoutError' ? new Error(`WebDriver ${method} ${path.replace(/^\/session\/[^/]+/, '')}: no answer in ${ms} ms`) : e;
    }).finally(() => clearTimeout(slow));
    const json = await res.json();
    if (process.env.GATEHOUSE_E2E_VERBOSE && Date.now() - t0 > 5_000) console.log(`[webdriver] ${method} ${path} took ${Date.now() - t0} ms`);
    if (!res.ok) throw new Error(`WebDriver ${method} ${path.replace(/^\/session\/[^/]+/, '')}: ${json.value?.error}: ${json.value?.message}`);
    return json.value;
  }

  version() { return `WebKitGTK ${this.browserVersion ?? '?'} (MiniBrowser)`; }

  /**
   * A WebDriver session is one MiniBrowser with its own (empty) storage: a browser context.
   * WebKitWebDriver holds one session at a time ("Maximum number of active sessions"), so each
   * context has its own driver; a session that does not start (seen under heavy load) is tried
   * once more with a fresh driver.
   */
  async newContext() {
    for (let attempt = 1; ; attempt++) {
      const driver = await startWebKitDriver();
      try {
        const s = await this.command(driver.base, 'POST', '/session', {
          capabilities: {
            alwaysMatch: {
              browserName: 'MiniBrowser',
              'webkitgtk:browserOptions': { binary: MINIBROWSER_PATH, args: ['--automation'] },
              timeouts: { script: 3_600_000, pageLoad: 30_000 },
            },
          },
        }, 30_000);
        this.browserVersion = s.capabilities.browserVersion;
        const ctx = new WebKitContext(this, `c${++this.seq}`, driver, s.sessionId);
        this.contexts.set(ctx.id, ctx);
        ctx.firstWindow = await ctx.command('GET', '/window');
        return ctx;
      } catch (e) {
        driver.child.kill('SIGKILL');
        if (attempt === 2) throw e;
        console.log(`[webkit] ${e.message}; starting another driver`);
      }
    }
  }

  async close() {
    for (const ctx of [...this.contexts.values()]) await ctx.close().catch(() => {});
    await new Promise((r) => this.server.close(r));
  }
}

class WebKitContext {
  constructor(browser, id, driver, sessionId) {
    this.browser = browser;
    this.driver = driver;
    this.id = id;
    this.session = `/session/${sessionId}`;
    this.pages = new Map(); // id -> WebKitPage
    this.inits = [];
    this.bindings = new Map();
    this.mutex = new Mutex();
    this.current = null; // the window handle commands go to
    this.firstWindow = null;
    this.seq = 0;
    this.closed = false;
  }

  command(method, path, body, ms) { return this.browser.command(this.driver.base, method, this.session + path, body, ms); }

  /** Inside the mutex: makes `handle` the window that the next command goes to. */
  async focus(handle) {
    if (this.current !== handle) {
      await this.command('POST', '/window', { handle });
      this.current = handle;
    }
  }

  async newPage() {
    const handle = this.firstWindow ?? (await this.mutex.run(() => this.command('POST', '/window/new', { type: 'window' }))).handle;
    this.firstWindow = null;
    const page = new WebKitPage(this, `p${++this.seq}`, handle);
    this.pages.set(page.id, page);
    return page;
  }

  async addInitScript(fn, arg) { this.inits.push(scriptSource(fn, arg)); }
  async exposeBinding(name, cb) { this.bindings.set(name, cb); }
  async setOffline() { throw new EngineUnsupported('webkit', 'context.setOffline'); }

  async close() {
    if (this.closed) return;
    this.closed = true;
    this.browser.contexts.delete(this.id);
    await this.browser.command(this.driver.base, 'DELETE', this.session, undefined, 15_000).catch(() => {});
    this.driver.child.kill('SIGTERM');
  }
}

const scriptSource = (fn, arg) => (typeof fn === 'function' ? `(${fn})(${arg === undefined ? '' : JSON.stringify(arg)});` : String(fn));

class WebKitPage {
  constructor(context, id, handle) {
    this.context = context;
    this.id = id;
    this.handle = handle;
    this.inits = [];
    this.listeners = { pageerror: [], console: [] };
    this.current = 'about:blank';
    this.defaultTimeout = 30_000;
  }

  /**
   * What runs before the page's own scripts (page.html loads it with a synchronous request, see
   * init-scripts.js): this page's id, error and console reports, the bindings, the init scripts.
   */
  initSource() {
    const post = `(kind, body) => fetch(${JSON.stringify(`${this.context.browser.callback}/`)} + kind + ${JSON.stringify(`/${this.context.id}/${this.id}`)}, { method: 'POST', body: JSON.stringify(body), keepalive: true }).then((r) => r.json()).then((r) => r.value)`;
    const lines = [
      `window.__ghPost = ${post};`,
      `addEventListener('error', (e) => window.__ghPost('pageerror', { message: String(e.message) }));`,
      `addEventListener('unhandledrejection', (e) => window.__ghPost('pageerror', { message: String(e.reason?.message ?? e.reason) }));`,
      `for (const type of ['error', 'warn']) { const orig = console[type].bind(console); console[type] = (...a) => { orig(...a); window.__ghPost('console', { type: type === 'warn' ? 'warning' : type, text: a.map(String).join(' ') }); }; }`,
      ...[...this.context.bindings.keys()].map((name) => `window[${JSON.stringify(name)}] = (arg) => window.__ghPost('binding', { name: ${JSON.stringify(name)}, arg });`),
      ...this.context.inits,
      ...this.inits,
    ];
    return lines.join('\n');
  }

  async fromPage(kind, msg) {
    if (kind === 'binding') return this.context.bindings.get(msg.name)?.({ page: this, context: this.context }, msg.arg);
    if (kind === 'pageerror') for (const cb of this.listeners.pageerror) cb(new Error(msg.message));
    if (kind === 'console') for (const cb of this.listeners.console) cb({ type: () => msg.type, text: () => msg.text });
    return null;
  }

  /**
   * The URL with the fragment that tells init-scripts.js where this page's init source is; not
   * over a fragment of the page's own (the demo routes by it; that page then runs without).
   */
  withInit(url) {
    const u = new URL(url);
    if (u.hash) return u.href;
    u.hash = `gh-init=${encodeURIComponent(`${this.context.browser.callback}/init/${this.context.id}/${this.id}`)}`;
    return u.href;
  }

  /**
   * Inside the mutex, after a navigation: names the window after this page, which is how every
   * script checks where it landed (window.name outlives same-origin loads and reloads).
   */
  async mark() {
    await this.context.command('POST', '/execute/sync', { script: 'window.name = arguments[0];', args: [this.id] });
  }

  async goto(url) {
    this.current = url;
    await this.context.mutex.run(async () => {
      await this.context.focus(this.handle);
      await this.context.command('POST', '/url', { url: this.withInit(url) });
      await this.mark();
    });
  }

  async reload() {
    await this.context.mutex.run(async () => {
      await this.context.focus(this.handle);
      await this.context.command('POST', '/refresh', {});
      await this.mark();
    });
  }

  /** Inside the mutex: the WebDriver id of the first element matching `selector`. */
  async element(selector) {
    await this.context.focus(this.handle);
    const el = await this.context.command('POST', '/element', { using: 'css selector', value: selector });
    return `/element/${Object.values(el)[0]}`;
  }

  async fill(selector, text) {
    await this.context.mutex.run(async () => {
      const el = await this.element(selector);
      await this.context.command('POST', `${el}/clear`, {});
      await this.context.command('POST', `${el}/value`, { text });
    });
  }

  async press(selector, key) {
    const keys = { Enter: '\uE007' };
    if (!keys[key]) throw new EngineUnsupported('webkit', `page.press('${key}')`);
    await this.context.mutex.run(async () => {
      await this.context.command('POST', `${await this.element(selector)}/value`, { text: keys[key] });
    });
  }

  async click(selector) {
    await this.context.mutex.run(async () => {
      await this.context.command('POST', `${await this.element(selector)}/click`, {});
    });
  }

  /**
   * Classic WebDriver sends every command to "the current window", one per session, and runs
   * long scripts concurrently; so the switch and the start of the script are serialised, and
   * the script itself checks that it landed in this page (another switch may overtake it)
   * before it runs anything.
   */
  async evaluate(fn, arg) {
    const src = typeof fn === 'function' ? fn.toString() : `() => (${fn})`;
    for (let attempt = 0; ; attempt++) {
      let reply;
      await this.context.mutex.run(async () => {
        await this.context.focus(this.handle);
        reply = this.context.command('POST', '/execute/async', { script: evaluateScript(src), args: [arg ?? null, this.id] }, null);
        reply.catch(() => {});
        await sleep(5); // let the driver read the command before the next switch
      });
      const out = JSON.parse(await reply);
      if (out.wrongPage) {
        // Overtaken by another tab's switch, or this page is between two documents.
        if (attempt > 300) throw new Error(`page.evaluate: page ${this.id} never answered (is it loaded?)`);
        await sleep(attempt < 5 ? 5 : 30);
        continue;
      }
      if (!out.ok) throw new Error(`page.evaluate: ${out.error}`);
      return revive(out.value);
    }
  }

  async waitForFunction(fn, arg, { timeout = this.defaultTimeout } = {}) {
    const end = Date.now() + timeout;
    for (;;) {
      let timer;
      const left = new Promise((resolve) => { timer = setTimeout(resolve, Math.max(0, end - Date.now())); });
      const v = await Promise.race([this.evaluate(fn, arg).catch(() => undefined), left]).finally(() => clearTimeout(timer));
      if (v) return v;
      if (Date.now() > end) throw new Error(`page.waitForFunction: timed out after ${timeout} ms`);
      await sleep(50);
    }
  }

  async addInitScript(fn, arg) { this.inits.push(scriptSource(fn, arg)); }
  url() { return this.current; }
  setDefaultTimeout(ms) { this.defaultTimeout = ms; }
  waitForTimeout(ms) { return sleep(ms); }

  on(event, cb) {
    if (!this.listeners[event]) throw new EngineUnsupported('webkit', `page.on('${event}')`);
    this.listeners[event].push(cb);
    return this;
  }

  async close() {
    this.context.pages.delete(this.id);
    await this.context.mutex.run(async () => {
      await this.context.focus(this.handle);
      await this.context.command('DELETE', '/window');
      this.context.current = null;
    });
  }
}
