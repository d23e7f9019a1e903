// The remote store's module (docs/design.md, "The remote store's module"): the main wasm is
// built without the remote store, and the build with it loads only for `storage.kind:
// "remote"` (or initRemote()). Counted from the browser's own resource timing: which of the
// two wasm files a page fetched, and how often.

import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { gzipSync } from 'node:zlib';
import { ROOT, run, setup, uid } from '../browser/harness.mjs';
import { startRemote } from './support.mjs';

const h = await setup();
let remote;
before(async () => { remote = await startRemote(); });
after(async () => { await remote?.stop(); await h.close(); });

const T = { timeout: 60_000 };

/** A page that has loaded nothing of the package yet; `window.fetched()` counts each wasm's
 *  downloads so far. */
async function blank(t, context) {
  const ctx = context ?? await h.newContext();
  if (!context) t.after(() => ctx.close().catch(() => {}));
  const page = await ctx.newPage();
  await page.goto(`${h.url}/tests/remote/module.html`);
  await page.evaluate(() => {
    window.fetched = () => {
      const names = performance.getEntriesByType('resource').map((e) => new URL(e.name).pathname);
      return {
        main: names.filter((n) => n === '/pkg/gatehouse_bg.wasm').length,
        remote: names.filter((n) => n === '/pkg/gatehouse_remote_bg.wasm').length,
      };
    };
  });
  return page;
}

const read = (f) => readFileSync(path.join(ROOT, 'pkg', f));

test('the main wasm holds none of the remote store, the remote build holds it, and the entry imports it only on use', () => {
  const main = read('gatehouse_bg.wasm');
  const full = read('gatehouse_remote_bg.wasm');
  // Strings only the remote store's code uses (src/store/remote.rs).
  for (const s of ['the change stream', 'there is no IndexedDB here to keep what waits', '/receipts/']) {
    assert.equal(main.includes(s), false, `gatehouse_bg.wasm holds "${s}"`);
    assert.equal(full.includes(s), true, `gatehouse_remote_bg.wasm lacks "${s}"`);
  }
  const entry = read('gatehouse.js').toString();
  assert.doesNotMatch(entry, /^\s*import\s[^;]*from\s+["']\.\/gatehouse_remote\.js["']/m);
  assert.match(entry, /import\("\.\/gatehouse_remote\.js"\)/);
  const gz = (b) => gzipSync(b, { level: 9 }).length;
  console.log(`main wasm ${main.length} B raw, ${gz(main)} B gzip; with the remote store ${full.length} B raw, ${gz(full)} B gzip`);
});

const storageOf = (url, user) => ({ kind: 'remote', url, headers: { authorization: `Bearer ${user}` } });

test('a page whose threads stay in the browser never fetches the remote store', T, async (t) => {
  const page = await blank(t);
  const r = await run(page, async ({ db }) => {
    const gh = await import('/pkg/gatehouse.js');
    await gh.default();
    const agent = await gh.Agent.open({ threadId: 'local', storage: { kind: 'indexeddb', database: db } });
    const done = await agent.chat('hello');
    const list = await gh.Agent.listThreads({ database: db });
    const stop = gh.Agent.subscribeThreads({ database: db }, () => {});
    stop();
    await gh.Agent.deleteThread('local', { database: db });
    return { status: done.status, listed: list.map((s) => s.threadId), fetched: window.fetched() };
  }, { db: uid('db') });
  assert.equal(r.status, 'completed');
  assert.deepEqual(r.listed, ['local']);
  assert.deepEqual(r.fetched, { main: 1, remote: 0 });
});

test('the first remote agent loads the remote module once; local agents stay in the main one, and both throw the one GatehouseError', T, async (t) => {
  const page = await blank(t);
  const r = await run(page, async ({ storage, db }) => {
    const gh = await import('/pkg/gatehouse.js');
    await gh.default();
    const before = window.fetched();
    // Two remote agents and a list at once: one download between them.
    const [a, b, list] = await Promise.all([
      gh.Agent.open({ threadId: 'r1', storage }),
      gh.Agent.open({ threadId: 'r2', storage }),
      gh.Agent.listThreads(storage),
    ]);
    const local = await gh.Agent.open({ threadId: 'l1', storage: { kind: 'memory', database: db } });
    const localDone = await local.chat('hello');
    // An error from each module: the same class, with its code.
    const codeOf = async (f) => { try { await f(); return 'no error'; } catch (e) { return `${e instanceof gh.GatehouseError}:${e.code}`; } };
    const remoteError = await codeOf(() => gh.Agent.open({ threadId: 'r3', storage: { ...storage, headers: { authorization: 42 } } }));
    const mainError = await codeOf(() => gh.Agent.open({ threadId: 'l2', storage: { kind: 'memroy' } }));
    return {
      before, after: window.fetched(), statuses: [a.status(), b.status()], listed: list.length,
      local: localDone.status, remoteError, mainError,
    };
  }, { storage: storageOf(remote.url, 'ana'), db: uid('db') });
  assert.deepEqual(r.before, { main: 1, remote: 0 });
  assert.deepEqual(r.after, { main: 1, remote: 1 });
  assert.deepEqual(r.statuses, ['idle', 'idle']);
  assert.equal(r.listed, 0);
  assert.equal(r.local, 'completed');
  assert.equal(r.remoteError, 'true:invalid_config');
  assert.equal(r.mainError, 'true:invalid_config');
});

test('initRemote() alone: every agent runs in the remote module and the main wasm is never fetched', T, async (t) => {
  const page = await blank(t);
  const r = await run(page, async ({ storage, db }) => {
    const gh = await import('/pkg/gatehouse.js');
    await gh.initRemote();
    const local = await gh.Agent.open({ threadId: 'l1', storage: { kind: 'indexeddb', database: db } });
    const localDone = await local.chat('hello');
    const stop = gh.Agent.subscribeThreads({ database: db }, () => {});
    stop();
    const shared = await gh.Agent.open({ threadId: 'r1', storage });
    return { local: localDone.status, remote: shared.status(), fetched: window.fetched() };
  }, { storage: storageOf(remote.url, 'ana'), db: uid('db') });
  assert.equal(r.local, 'completed');
  assert.equal(r.remote, 'idle');
  assert.deepEqual(r.fetched, { main: 0, remote: 1 });
});

test('a remote module that cannot be fetched: a retryable network error, nothing opened, and the next open loads it', T, async (t) => {
  const context = await h.newContext();
  t.after(() => context.close().catch(() => {}));
  const page = await blank(t, context);
  let refused = 0;
  const remoteWasm = (u) => u.pathname === '/pkg/gatehouse_remote_bg.wasm';
  await context.route(remoteWasm, (route) => {
    refused++;
    return route.abort('internetdisconnected');
  });
  const storage = storageOf(remote.url, 'ana');
  const first = await run(page, async ({ storage }) => {
    const gh = await import('/pkg/gatehouse.js');
    await gh.default();
    try {
      await gh.Agent.open({ threadId: 'r1', storage });
      return 'opened';
    } catch (e) {
      return { isGatehouseError: e instanceof gh.GatehouseError, code: e.code, retryable: e.retryable, message: e.message };
    }
  }, { storage });
  assert.equal(refused, 1);
  assert.equal(first.isGatehouseError, true);
  assert.equal(first.code, 'network');
  assert.equal(first.retryable, true);
  assert.match(first.message, /gatehouse_remote_bg\.wasm/);
  await context.unroute(remoteWasm);
  const second = await run(page, async ({ storage }) => {
    const gh = await import('/pkg/gatehouse.js');
    const agent = await gh.Agent.open({ threadId: 'r1', storage });
    return { status: agent.status(), fetched: window.fetched() };
  }, { storage });
  assert.equal(second.status, 'idle');
  assert.equal(second.fetched.remote >= 1, true);
});

test('subscribeThreads on a remote store before its module loaded starts once it has, and a stop before that stops it', T, async (t) => {
  const page = await blank(t);
  const threadId = uid('t');
  const r = await run(page, async ({ storage, threadId }) => {
    const gh = await import('/pkg/gatehouse.js');
    await gh.default();
    const heard = [];
    const early = [];
    const stopEarly = gh.Agent.subscribeThreads(storage, (c) => early.push(c));
    stopEarly(); // before the module loaded: it never starts
    gh.Agent.subscribeThreads(storage, (c) => heard.push(c));
    const agent = await gh.Agent.open({ threadId, storage, model: { provider: 'demo' } });
    await new Promise((r) => setTimeout(r, 500)); // the change stream opens
    await agent.chat('hello');
    for (const end = Date.now() + 10_000; Date.now() < end && !heard.some((c) => c.threadId === threadId);) {
      await new Promise((r) => setTimeout(r, 50));
    }
    return { heard: heard.filter((c) => c.threadId === threadId).length, early: early.length, fetched: window.fetched() };
  }, { storage: storageOf(remote.url, 'ana'), threadId });
  assert.ok(r.heard >= 1, JSON.stringify(r));
  assert.equal(r.early, 0);
  assert.deepEqual(r.fetched, { main: 1, remote: 1 });
});
