// Exactly once across tabs (docs/design.md, "Run ownership", "The decision journal"): each
// defect found with several tabs, lost storage, hung tools, edited or foreign stored data,
// reproduced with real tabs (pages of one context), real IndexedDB and Web Locks — and, where
// the protocol has a second path, again without Web Locks (plain http on an intranet host).

import { after, test } from 'node:test';
import assert from 'node:assert/strict';
import { rejection, run, setup, textOf, uid } from './harness.mjs';

const h = await setup();
after(() => h.close());

const T = { timeout: 60_000 };
const gated = (id, path = '/x') => ({ toolCalls: [{ id, name: 'delete_file', arguments: { path } }] });

/**
 * Two tabs of one context; `locks: false` removes Web Locks as an insecure context has none;
 * `live: false` removes BroadcastChannel, so a stale view stays stale until it writes (the
 * version check; tests/browser/live.test.mjs covers views that follow notices).
 */
async function tabs(t, { locks = true, live = true } = {}) {
  const context = await h.newContext();
  t.after(() => context.close().catch(() => {}));
  if (!locks) await context.addInitScript(() => { delete Navigator.prototype.locks; });
  if (!live) await context.addInitScript(() => { delete globalThis.BroadcastChannel; });
  const { page: a } = await h.open(t, { context });
  const { page: b } = await h.open(t, { context });
  return { a, b, context };
}

/** In a tab: an agent on thread `t` whose delete_file blocks until `window.release()`. */
const openBlocking = async ({ model, db }) => {
  const { gh } = window;
  let release;
  window.gate = new Promise((r) => { release = r; });
  window.release = release;
  const tool = gh.tool('delete_file', {
    requireApproval: true,
    execute: async (i, ctx) => { gh.calls.push(ctx.callId); await window.gate; return `ran:${ctx.callId}`; },
  });
  window.agent = await gh.Agent.open({ threadId: 't', model, storage: { database: db }, tools: [tool] });
  return { hasLocks: 'locks' in navigator };
};

/** In a tab: an agent on thread `t` with an ordinary gated delete_file. */
const openPlain = async ({ model, db }) => {
  const { gh } = window;
  window.agent = await gh.Agent.open({ threadId: 't', model, storage: { database: db }, tools: [gh.tool('delete_file', { requireApproval: true })] });
  return { status: window.agent.status(), pending: window.agent.pendingTools() };
};

for (const locks of [true, false]) {
  const mode = locks ? 'with Web Locks' : 'without Web Locks (lease only)';

  test(`a tab opening the thread while another runs its approved tool sees "running", and cannot retry, chat or re-gate it (${mode})`, T, async (t) => {
    const { a, b } = await tabs(t, { locks });
    const sc = await h.scenario([gated('call_live', '/pay'), { text: 'Paid once.' }]);
    const args = { model: sc.openai(), db: uid('db') };
    assert.deepEqual(await run(a, openBlocking, args), { hasLocks: locks });
    await run(a, async () => {
      await window.agent.chat('pay');
      window.decided = window.agent.submitDecisions({ call_live: 'approve' }).then((s) => s.status, (e) => window.gh.errorInfo(e).code);
      return window.gh.until(() => window.gh.calls.length === 1);
    });
    const inB = await run(b, async (args) => {
      const opened = await window.gh.error(() => window.gh.Agent.open({ threadId: 't', model: args.model, storage: { database: args.db }, tools: [window.gh.tool('delete_file', { requireApproval: true })] }));
      const agent = await window.gh.Agent.open({ threadId: 't', model: args.model, storage: { database: args.db }, tools: [window.gh.tool('delete_file', { requireApproval: true })] });
      const view = { status: agent.status(), pending: agent.pendingTools(), tail: agent.lastMessage() };
      const retry = await window.gh.error(() => agent.retry());
      const chat = await window.gh.error(() => agent.chat('meanwhile'));
      const decide = await window.gh.error(() => agent.submitDecisions({ call_live: 'approve' }));
      const policy = await window.gh.error(() => agent.setToolPolicy('delete_file', { autoApprove: true }));
      return { opened, view, retry, chat, decide, policy, calls: window.gh.calls.length, statusAfter: agent.status() };
    }, args);
    assert.equal(inB.opened, null, 'Agent.open never fails (no conflict) while another tab runs');
    assert.equal(inB.view.status, 'running');
    assert.deepEqual(inB.view.pending, [], 'the running call is not pending approval again');
    assert.equal(inB.view.tail.tools[0].approval, 'approved');
    assert.equal(inB.retry?.code, 'busy', 'retry() in another tab never takes over a running tool');
    assert.equal(inB.retry.retryable, true);
    assert.equal(inB.chat?.code, 'busy');
    assert.ok(['busy', 'not_suspended'].includes(inB.decide?.code), inB.decide?.code);
    assert.equal(inB.policy?.code, 'busy');
    assert.equal(inB.calls, 0);
    const r = await run(a, async () => {
      window.release();
      const outcome = await window.decided;
      return { outcome, calls: window.gh.calls.length, messages: await window.agent.messages() };
    });
    assert.equal(r.outcome, 'completed', 'the owner\'s result is never refused');
    assert.equal(r.calls, 1);
    assert.deepEqual(r.messages.map((m) => m.type ?? m.role), ['user', 'tool_call', 'tool_call_result', 'assistant']);
    assert.equal(r.messages[2].tools[0].result, 'ran:call_live');
    assert.equal(textOf(r.messages[3]), 'Paid once.');
    const reqs = await sc.requests();
    assert.equal(reqs.length, 2, 'B sent nothing to the model');
    assert.ok(!JSON.stringify(reqs).includes('meanwhile'));
  });

  test(`chat() in one tab while another waits for the model: busy, nothing stored; the first never gets conflict after storing (${mode})`, T, async (t) => {
    const { a, b } = await tabs(t, { locks, live: false });
    const sc = await h.scenario([{ text: 'slow answer', delayMs: 800 }, { text: 'second answer' }]);
    const args = { model: sc.openai(), db: uid('db') };
    await run(a, openPlain, args);
    await run(b, openPlain, args);
    await run(a, () => {
      window.first = window.agent.chat('from A').then((s) => s.status, (e) => window.gh.errorInfo(e).code);
    });
    // A stored its message and lease before it asked the model.
    while ((await sc.requests()).length === 0) await new Promise((r) => setTimeout(r, 10));
    const inB = await run(b, async () => ({
      status: (await window.agent.refresh(), window.agent.status()),
      chat: await window.gh.error(() => window.agent.chat('from B')),
    }));
    assert.equal(inB.status, 'running');
    assert.equal(inB.chat?.code, 'busy');
    assert.equal(await run(a, () => window.first), 'completed');
    // B's view is stale once A finished: conflict (and reloaded), then B's message goes through.
    const final = await run(b, async () => {
      const first = await window.agent.chat('from B').then((x) => x.status, (e) => window.gh.errorInfo(e).code);
      if (first === 'conflict') await window.agent.chat('from B');
      return { first, texts: (await window.agent.messages()).map((m) => m.content[0]?.content) };
    });
    assert.equal(final.first, 'conflict');
    const final2 = final.texts;
    assert.deepEqual(final2, ['from A', 'slow answer', 'from B', 'second answer'], 'no message lost or doubled');
  });
}

test('retry() from a stale view is a conflict that sends nothing to the model', T, async (t) => {
  const { a, b } = await tabs(t, { live: false });
  const sc = await h.scenario([{ fault: { status: 400, body: '{"error":{"message":"bad"}}' } }, { text: 'answered' }]);
  const args = { model: { ...sc.openai(), maxRetries: 0 }, db: uid('db') };
  await run(a, openPlain, args);
  assert.equal((await run(a, () => window.agent.chat('hello').catch((e) => e.code))), 'provider');
  await run(b, openPlain, args);
  assert.equal(await run(b, async () => (await window.agent.retry()).status), 'completed');
  const stale = await run(a, async () => ({ status: window.agent.status(), err: await window.gh.error(() => window.agent.retry()), after: window.agent.status() }));
  assert.equal(stale.status, 'interrupted');
  assert.equal(stale.err?.code, 'conflict');
  assert.equal(stale.after, 'idle', 'the view was reloaded');
  assert.equal((await sc.requests()).length, 2, 'the stale retry sent nothing');
});

// A live notice makes a view reload itself (not while it runs). The reload reads the thread,
// which takes a moment; a run started in that moment applies its input to the view it has and
// is admitted by its own read of the record. The reload must then give way: applied mid-run,
// it would swap the state under the run (the run's admission then sees a current view, and
// sends the other tab's thread to the model). Made deterministic with read-write transactions
// that hold the reload back until the run took its input, and the run's read after the reload.
test('a run started while a live notice\'s reload reads the thread is not overtaken by it: a stale retry() sends nothing', T, async (t) => {
  const { page } = await h.open(t);
  const sc = await h.scenario([{ fault: { status: 400, body: '{"error":{"message":"bad"}}' } }, { text: 'answered by B' }, { text: 'never asked' }]);
  const r = await run(page, async ({ model, db }) => {
    const { gh } = window;
    const sleep = (ms) => new Promise((res) => setTimeout(res, ms));
    const opts = { threadId: 't', model: { ...model, maxRetries: 0 }, storage: { database: db }, tools: [] };
    // Made before A's channel, so it hears each notice first.
    const listen = new BroadcastChannel(`gatehouse:${db}:t`);
    const a = await gh.Agent.open(opts);
    const failed = await gh.error(() => a.chat('hello'));
    const b = await gh.Agent.open(opts);
    const raw = await new Promise((res, rej) => { const q = indexedDB.open(db); q.onsuccess = () => res(q.result); q.onerror = rej; });
    // Holds the stores with a read-write transaction until the returned function is called.
    const hold = () => {
      const tx = raw.transaction(['threads', 'messages', 'audit'], 'readwrite');
      let held = true;
      const spin = () => { const q = tx.objectStore('threads').get('t'); q.onsuccess = () => { if (held) spin(); }; };
      spin();
      return () => { held = false; };
    };
    const raced = new Promise((resolve) => {
      listen.onmessage = () => {
        listen.onmessage = null;
        // Transactions start in the order they were made, a read-write one after the reads
        // before it: [first] [A's reload] [second] [A's admission read], so the reload lands
        // after A took its input, and before A reads the record.
        const first = hold();
        setTimeout(async () => { // A's handler has run: its reload waits behind `first`
          const second = hold();
          const status = a.status();
          // What the refused run posts to the thread's other agents (it must post nothing).
          const quiet = new BroadcastChannel(`gatehouse:${db}:t`);
          const notices = [];
          quiet.onmessage = (e) => notices.push(e.data);
          const retried = gh.error(() => a.retry());
          await sleep(100); // A holds the lock, took the input, waits for its admission read
          first();
          await sleep(100); // the reload has read the thread
          second();
          const err = await retried;
          await sleep(100);
          quiet.close();
          resolve({ status, err, notices });
        }, 0);
      };
    });
    const bDone = await b.retry();
    const { status, err, notices } = await raced;
    raw.close();
    listen.close();
    return { failed: failed?.code, bDone: bDone.status, status, err, notices, after: a.status(), tail: a.lastMessage(), bTail: b.lastMessage() };
  }, { model: sc.openai(), db: uid('db') });
  assert.equal(r.failed, 'provider');
  assert.equal(r.bDone, 'completed');
  assert.equal(r.status, 'interrupted', 'A had not reloaded yet when it retried');
  assert.deepEqual(r.notices, [], 'a refused run posts no notice (docs/design.md "Run ownership" 2)');
  assert.equal(r.err?.code, 'conflict', `the stale retry is refused: ${JSON.stringify(r.err)}`);
  assert.equal(r.after, 'idle');
  assert.deepEqual(r.tail, r.bTail, 'A took the stored thread');
  assert.equal((await sc.requests()).length, 2, 'the stale retry sent nothing to the model');
});

/** In the page: an agent whose delete_file never settles until `window.finish(value)`; it
 *  ignores ctx.signal, as a tool stuck on something may. */
const openHanging = async ({ model, db }) => {
  const { gh } = window;
  let finish;
  const late = new Promise((r) => { finish = r; });
  window.finish = finish;
  const tool = gh.tool('delete_file', { requireApproval: true, execute: async () => { gh.calls.push(1); return late; } });
  window.agent = await gh.Agent.open({ threadId: 't', model, storage: { database: db }, tools: [tool] });
  await window.agent.chat('go');
  window.ctl = new AbortController();
  window.decided = window.agent.submitDecisions({ call_hang: 'approve' }, { signal: window.ctl.signal })
    .then(() => null, (e) => gh.errorInfo(e));
  await gh.until(() => gh.calls.length === 1);
  const runningStatus = window.agent.status();
  const t0 = performance.now();
  window.ctl.abort('user pressed stop');
  const err = await window.decided;
  return { runningStatus, err, ms: performance.now() - t0, after: window.agent.status() };
};

test('abort() while a tool is still running: aborted at once, the run waits for the tool, its result is stored, never re-gated', T, async (t) => {
  const { page } = await h.open(t);
  const sc = await h.scenario([gated('call_hang', '/slow'), { text: 'After the result.' }]);
  const first = await run(page, openHanging, { model: sc.openai(), db: uid('db') });
  assert.equal(first.runningStatus, 'running', 'status() says running, not interrupted, while a tool runs');
  assert.equal(first.err?.code, 'aborted');
  assert.ok(first.ms < 2_000, `aborted promptly (${first.ms} ms)`);
  assert.equal(first.after, 'running', 'the run still owns the thread while the tool may finish');
  const r = await run(page, async () => {
    const { gh, agent } = window;
    const busy = await gh.error(() => agent.submitDecisions({ call_hang: 'approve' }));
    window.finish('finally done');
    await gh.until(() => agent.status() !== 'running');
    const status = agent.status();
    const pending = agent.pendingTools();
    const done = await agent.retry();
    return { busy, status, pending, done: done.status, calls: gh.calls.length, messages: await agent.messages() };
  });
  assert.equal(r.busy?.code, 'busy');
  assert.equal(r.status, 'interrupted', 'the result is stored; the model call was aborted');
  assert.deepEqual(r.pending, []);
  assert.equal(r.done, 'completed');
  assert.equal(r.calls, 1, 'never run twice');
  assert.equal(r.messages[2].tools[0].result, 'finally done');
  assert.equal(r.messages[1].tools[0].approval, 'approved');
});

test('abort() while a tool never settles: after the grace the call is re-gated; a result that comes later is kept', { timeout: 90_000 }, async (t) => {
  const { page } = await h.open(t);
  const sc = await h.scenario([gated('call_hang', '/slow'), { text: 'After the late result.' }]);
  const first = await run(page, openHanging, { model: sc.openai(), db: uid('db') });
  assert.equal(first.err?.code, 'aborted');
  assert.ok(first.ms < 2_000, `aborted promptly (${first.ms} ms)`);
  const r = await run(page, async () => {
    const { gh, agent } = window;
    await gh.until(() => agent.status() !== 'running', 20_000);
    const regated = { status: agent.status(), pending: agent.pendingTools() };
    window.finish('finally done');
    await gh.until(() => agent.status() === 'interrupted');
    const afterLate = { status: agent.status(), tail: agent.lastMessage() };
    const done = await agent.retry();
    return { regated, afterLate, done: done.status, calls: gh.calls.length, messages: await agent.messages() };
  }, undefined, 40_000);
  assert.equal(r.regated.status, 'awaiting_approval');
  assert.match(r.regated.pending[0].approvalReason, /may or may not have taken effect/);
  assert.equal(r.afterLate.tail.tools[0].approval, 'approved', 'the late result resolved the re-gated call');
  assert.equal(r.done, 'completed');
  assert.equal(r.calls, 1, 'never run twice');
  assert.equal(r.messages[2].tools[0].result, 'finally done');
});

test('an approvalPolicy that never settles: abort() ends the call, nothing of the answer is stored, retry() continues', T, async (t) => {
  const { page } = await h.open(t);
  const sc = await h.scenario([gated('call_p', '/p'), gated('call_p2', '/p'), { text: 'ok' }]);
  const r = await run(page, async ({ model, db }) => {
    const { gh } = window;
    let hang = true;
    let asked = false;
    const tool = gh.tool('delete_file', { approvalPolicy: () => { asked = true; return hang ? new Promise(() => {}) : 'ask'; } });
    const agent = await gh.Agent.open({ threadId: 't', model, storage: { database: db }, tools: [tool] });
    const ctl = new AbortController();
    const p = agent.chat('go', { signal: ctl.signal });
    await gh.until(() => asked, 5_000); // the policy hangs now
    ctl.abort();
    const err = await p.then(() => null, (e) => gh.errorInfo(e));
    const status = agent.status();
    const count = agent.messageCount;
    hang = false;
    const again = await agent.retry();
    return { err, status, count, again: again.status };
  }, { model: sc.openai(), db: uid('db') });
  assert.equal(r.err?.code, 'aborted');
  assert.equal(r.status, 'interrupted');
  assert.equal(r.count, 1, 'only the user message');
  assert.equal(r.again, 'awaiting_approval');
});

test('a database deleted under an open agent: storage/conflict once, never busy; refresh() and the next chat work', T, async (t) => {
  const { page } = await h.open(t);
  const sc = await h.scenario([{ text: 'one' }, { text: 'two' }]);
  const r = await run(page, async ({ model, db }) => {
    const { gh } = window;
    const agent = await gh.Agent.open({ threadId: 't', model, storage: { database: db } });
    await agent.chat('first');
    await new Promise((ok, fail) => { const q = indexedDB.deleteDatabase(db); q.onsuccess = ok; q.onerror = fail; });
    const errs = [];
    for (const f of [() => agent.chat('second'), () => agent.retry(), () => agent.refresh()]) errs.push((await gh.error(f))?.code ?? 'ok');
    const next = await agent.chat('again').then((s) => s.status, (e) => gh.errorInfo(e).code);
    return { errs, next, messages: (await agent.messages()).map((m) => m.content[0]?.content) };
  }, { model: sc.openai(), db: uid('db') });
  assert.ok(!r.errs.includes('busy'), JSON.stringify(r.errs));
  assert.equal(r.errs[2], 'ok', 'refresh() works');
  assert.equal(r.next, 'completed');
  assert.deepEqual(r.messages, ['again', 'two']);
});

test('a call id "__proto__" from the model works with the README\'s plain-object approval loop', T, async (t) => {
  const { page } = await h.open(t);
  const sc = await h.scenario([gated('__proto__', '/p'), { text: 'done' }]);
  const r = await run(page, async ({ model, db }) => {
    const { gh } = window;
    const agent = await gh.Agent.open({ threadId: 't', model, storage: { database: db }, tools: [gh.tool('delete_file', { requireApproval: true })] });
    let state = await agent.chat('go');
    const ids = agent.pendingTools().map((c) => c.callId);
    while (state.status === 'awaiting_approval') {
      const decisions = {};
      for (const call of agent.pendingTools()) decisions[call.callId] = 'approve';
      state = await agent.submitDecisions(decisions);
    }
    return { ids, status: state.status, calls: gh.calls.length };
  }, { model: sc.openai(), db: uid('db') });
  assert.notEqual(r.ids[0], '__proto__');
  assert.equal(r.status, 'completed');
  assert.equal(r.calls, 1);
  const reqs = await sc.requests();
  const second = JSON.stringify(reqs[1].body);
  assert.ok(second.includes(`"tool_call_id":"${r.ids[0]}"`), 'the provider sees the same id in the call and its result');
});

test('a pending entry edited to "approved" in IndexedDB is re-gated, never executed', T, async (t) => {
  const { page } = await h.open(t);
  const sc = await h.scenario([gated('call_e', '/etc'), { text: 'done' }]);
  const r = await run(page, async ({ model, db }) => {
    const { gh } = window;
    const tools = [gh.tool('delete_file', { requireApproval: true })];
    const a = await gh.Agent.open({ threadId: 't', model, storage: { database: db }, tools });
    await a.chat('go');
    await gh.editRaw(db, 'messages', ['t', 2], (row) => {
      const m = JSON.parse(row.json);
      m.tools[0].approval = 'approved';
      return { ...row, json: JSON.stringify(m) };
    });
    const b = await gh.Agent.open({ threadId: 't', model, storage: { database: db }, tools });
    const before = b.status();
    const retried = await b.retry();
    return { before, retried, pending: b.pendingTools(), calls: gh.calls.length };
  }, { model: sc.openai(), db: uid('db') });
  assert.equal(r.before, 'interrupted');
  assert.equal(r.retried.status, 'awaiting_approval');
  assert.equal(r.pending.length, 1);
  assert.equal(r.calls, 0);
  assert.equal((await sc.requests()).length, 1);
});

test('a record written by a newer release is read but never rewritten', T, async (t) => {
  const { page } = await h.open(t);
  const sc = await h.scenario([{ text: 'hi' }, { text: 'never' }]);
  const r = await run(page, async ({ model, db }) => {
    const { gh } = window;
    const a = await gh.Agent.open({ threadId: 't', model, storage: { database: db } });
    await a.chat('hello');
    await gh.editRaw(db, 'threads', 't', (rec) => ({ ...rec, schemaVersion: 99, futureField: { keep: true } }));
    const before = (await gh.dumpDb(db)).stores;
    const b = await gh.Agent.open({ threadId: 't', model, storage: { database: db } });
    const read = { count: b.messageCount, tail: b.lastMessage().content[0].content };
    const err = await gh.error(() => b.chat('again'));
    return { read, err, same: JSON.stringify(before) === JSON.stringify((await gh.dumpDb(db)).stores) };
  }, { model: sc.openai(), db: uid('db') });
  assert.deepEqual(r.read, { count: 2, tail: 'hi' });
  assert.equal(r.err?.code, 'storage');
  assert.match(r.err.message, /newer release/);
  assert.equal(r.same, true, 'nothing was written');
});

test('one unreadable thread record does not break listThreads()', T, async (t) => {
  const { page } = await h.open(t);
  const r = await run(page, async ({ db }) => {
    const { gh } = window;
    const a = await gh.Agent.open({ threadId: 'good', model: { provider: 'demo' }, storage: { database: db } });
    await a.chat('hello');
    await gh.editRaw(db, 'threads', 'bad', () => ({ id: 'bad', schemaVersion: 'x', version: 'broken' }));
    return (await gh.Agent.listThreads({ database: db })).map((s) => [s.threadId, s.status]);
  }, { db: uid('db') });
  assert.deepEqual(r, [['good', 'idle']]);
});

test('Agent.open settles with a storage error while another connection blocks a version change', T, async (t) => {
  const { page } = await h.open(t);
  const r = await run(page, async ({ db }) => {
    const { gh } = window;
    const first = await new Promise((ok) => { const q = indexedDB.open(db, 1); q.onupgradeneeded = () => { q.result.createObjectStore('threads', { keyPath: 'id' }); q.result.createObjectStore('messages', { keyPath: ['thread', 'seq'] }); }; q.onsuccess = () => ok(q.result); });
    // `first` never closes on versionchange, so this upgrade waits, and every open queues behind it.
    const upgrade = indexedDB.open(db, 2);
    upgrade.onupgradeneeded = () => {};
    const t0 = performance.now();
    const err = await gh.error(() => gh.Agent.open({ threadId: 't', storage: { database: db } }));
    const ms = performance.now() - t0;
    first.close();
    return { err, ms };
  }, { db: uid('db') }, 30_000);
  assert.equal(r.err?.code, 'storage');
  assert.ok(r.ms < 20_000, `${r.ms} ms`);
});

test('smaller edges: a lone surrogate in a reject reason, bad tool names, a lowered messageCount', T, async (t) => {
  const { page } = await h.open(t);
  const sc = await h.scenario([gated('call_s', '/s'), { text: 'ok' }, { text: 'never' }]);
  const r = await run(page, async ({ model, db }) => {
    const { gh } = window;
    const nul = await gh.error(() => gh.Agent.open({ threadId: 'x', storage: { kind: 'memory' }, tools: [gh.tool('bad\u0000name')] }));
    const huge = await gh.error(() => gh.Agent.open({ threadId: 'x', storage: { kind: 'memory' }, tools: [gh.tool('a'.repeat(1 << 20))] }));
    const agent = await gh.Agent.open({ threadId: 't', model, storage: { database: db }, tools: [gh.tool('delete_file', { requireApproval: true })] });
    await agent.chat('go');
    const rejected = await agent.submitDecisions({ call_s: ['reject', 'bad \ud800 reason'] });
    const result = (await agent.messages())[2].tools[0].result;
    await gh.editRaw(db, 'threads', 't', (rec) => ({ ...rec, messageCount: rec.messageCount - 1 }));
    const rowsBefore = (await gh.dumpDb(db)).stores.messages.rows;
    const b = await gh.Agent.open({ threadId: 't', model, storage: { database: db } });
    const lowered = await gh.error(() => b.chat('overwrite?'));
    const rowsAfter = (await gh.dumpDb(db)).stores.messages.rows;
    return { nul, huge, rejected: rejected.status, result, lowered, same: JSON.stringify(rowsBefore) === JSON.stringify(rowsAfter) };
  }, { model: sc.openai(), db: uid('db') });
  assert.equal(r.nul?.code, 'invalid_config');
  assert.equal(r.huge?.code, 'invalid_config');
  assert.ok(r.huge.message.length < 500, 'the error does not repeat a megabyte name');
  assert.equal(r.rejected, 'completed');
  assert.equal(r.result, rejection('bad \ufffd reason'));
  assert.equal(r.lowered?.code, 'storage');
  assert.equal(r.same, true, 'no row was overwritten');
});

test('a tool result too big for the storage quota is stored as result_not_stored; the tool ran once and is not re-gated', T, async (t) => {
  if (h.engine !== 'chromium') return t.skip('the quota is shrunk through CDP (Storage.overrideQuotaForOrigin): Chromium only');
  const { page, context } = await h.open(t);
  const sc = await h.scenario([gated('call_q', '/q'), { text: 'ok' }]);
  const cdp = await context.newCDPSession(page);
  const origin = new URL(page.url()).origin;
  await cdp.send('Storage.overrideQuotaForOrigin', { origin, quotaSize: 2 << 20 });
  t.after(() => cdp.send('Storage.overrideQuotaForOrigin', { origin }).catch(() => {}));
  const r = await run(page, async ({ model, db }) => {
    const { gh } = window;
    const tool = gh.tool('delete_file', { requireApproval: true, execute: async () => { gh.calls.push(1); return 'x'.repeat(8 << 20); } });
    window.agent = await gh.Agent.open({ threadId: 't', model, storage: { database: db }, tools: [tool] });
    return (await window.agent.chat('go')).status;
  }, { model: sc.openai(), db: uid('db') });
  assert.equal(r, 'awaiting_approval');
  const done = await run(page, async () => {
    const { gh, agent } = window;
    const s = await agent.submitDecisions({ call_q: 'approve' }).then((x) => x.status, (e) => gh.errorInfo(e));
    return { s, status: agent.status(), calls: gh.calls.length, messages: await agent.messages() };
  });
  assert.equal(done.s, 'completed', JSON.stringify(done.s));
  assert.equal(done.calls, 1);
  const result = JSON.parse(done.messages[2].tools[0].result);
  assert.equal(result.error, 'result_not_stored');
  assert.equal(done.status, 'idle');
});

test('a tool that fails while the page is being left (after pagehide) is re-gated, not a tool error; after pageshow a failure is a tool error again', T, async (t) => {
  const { page } = await h.open(t);
  const sc = await h.scenario([{ toolCalls: [{ id: 'call_leave', name: 'flaky', arguments: { path: '/p' } }] }, { text: 'ok' }]);
  const r = await run(page, async ({ model, db }) => {
    const { gh } = window;
    let leave = true;
    // Its request is cut off as the page goes: in a real navigation, the browser does it.
    const flaky = gh.tool('flaky', {
      execute: async () => {
        gh.calls.push('flaky');
        if (leave) window.dispatchEvent(new PageTransitionEvent('pagehide', { persisted: true }));
        throw new TypeError('Failed to fetch');
      },
    });
    const agent = await gh.Agent.open({ threadId: 't', model, storage: { database: db }, tools: [flaky] });
    const first = await agent.chat('go');
    const pending = agent.pendingTools();
    // Back from the back-forward cache: the page is not being left any more.
    leave = false;
    window.dispatchEvent(new PageTransitionEvent('pageshow', { persisted: true }));
    const done = await agent.submitDecisions({ call_leave: 'approve' });
    return { first: first.status, pending, done: done.status, calls: gh.calls.length, messages: await agent.messages() };
  }, { model: sc.openai(), db: uid('db') });
  assert.equal(r.first, 'awaiting_approval');
  assert.deepEqual(r.pending.map((p) => p.callId), ['call_leave']);
  assert.match(r.pending[0].approvalReason, /may or may not have taken effect/);
  assert.equal(r.done, 'completed');
  assert.equal(r.calls, 2, 'run again only once a person approved it');
  const result = r.messages.find((m) => m.type === 'tool_call_result').tools[0].result;
  assert.match(result, /tool_error/, 'a failure after pageshow is the tool\'s error');
  assert.match(result, /Failed to fetch/);
});
