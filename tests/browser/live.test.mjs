// Live threads (docs/design.md, "Live threads"): agent.subscribe(listener) hears every change
// to the thread — its own, another Agent's in the same page, another tab's — with the status
// and last message; a view another agent made stale reloads itself on the notice, so its next
// call works instead of failing with `conflict`. Real tabs (pages of one context), real
// IndexedDB and BroadcastChannel; and without BroadcastChannel, what still works.

import { after, test } from 'node:test';
import assert from 'node:assert/strict';
import { run, setup, textOf, uid } from './harness.mjs';

const h = await setup();
after(() => h.close());

const T = { timeout: 60_000 };
const gated = (id, path = '/x') => ({ toolCalls: [{ id, name: 'delete_file', arguments: { path } }] });

/** In a page: an agent on thread `t` (window.agent) that records every change it hears. */
const openListening = async ({ model, db }) => {
  const { gh } = window;
  window.heard = [];
  window.agent = await gh.Agent.open({ threadId: 't', model, storage: { database: db }, tools: [gh.tool('delete_file', { requireApproval: true })] });
  window.unsubscribe = window.agent.subscribe((c) => window.heard.push(JSON.parse(JSON.stringify(c))));
  return window.agent.status();
};

/** Waits until the page's listener heard a change with `status` (or fails after 5 s). */
const heardStatus = (page, status) => run(page, async (status) => {
  await window.gh.until(() => window.heard.some((c) => c.status === status), 5_000);
  return { heard: window.heard, status: window.agent.status(), pending: window.agent.pendingTools().map((e) => e.callId) };
}, status);

test('two tabs: each hears the other\'s changes, its view follows, and its next call works (no conflict)', T, async (t) => {
  const context = await h.newContext();
  t.after(() => context.close().catch(() => {}));
  const { page: a } = await h.open(t, { context });
  const { page: b } = await h.open(t, { context });
  const sc = await h.scenario([gated('call_1', '/live'), { text: 'Deleted.' }, { text: 'Hello from B.' }]);
  const args = { model: sc.openai(), db: uid('db') };
  assert.equal(await run(a, openListening, args), 'idle');
  assert.equal(await run(b, openListening, args), 'idle');

  const own = await run(a, async () => {
    const state = await window.agent.chat('delete /live');
    return { state: state.status, heard: window.heard };
  });
  assert.equal(own.state, 'awaiting_approval');
  assert.ok(own.heard.length >= 2, 'A hears its own writes');
  assert.equal(own.heard.at(-1).status, 'awaiting_approval', 'the last change A hears is the end of its run');
  assert.equal(own.heard.at(-1).threadId, 't');
  assert.equal(own.heard.at(-1).lastMessage.tools[0].callId, 'call_1');

  // B never called refresh(): the notice made it reload.
  const inB = await heardStatus(b, 'awaiting_approval');
  assert.equal(inB.status, 'awaiting_approval');
  assert.deepEqual(inB.pending, ['call_1']);
  assert.equal(inB.heard.at(-1).lastMessage.tools[0].approval, 'pending');

  // B decides; its call works although A wrote last, and A follows.
  const decided = await run(b, async () => (await window.agent.submitDecisions({ call_1: 'approve' })).status);
  assert.equal(decided, 'completed');
  const inA = await heardStatus(a, 'idle');
  assert.equal(inA.status, 'idle');
  assert.deepEqual(inA.pending, []);
  assert.equal(textOf(inA.heard.at(-1).lastMessage), 'Deleted.');
  assert.ok(inA.heard.some((c) => c.status === 'running'), 'A saw B running the approved tool');
  assert.equal(await run(a, () => window.gh.calls.length), 0, 'the tool ran in B only');
  assert.equal(await run(b, () => window.gh.calls.length), 1);

  // And A's next call works too.
  const next = await run(a, async () => (await window.agent.chat('hi')).status);
  assert.equal(next, 'completed');
  assert.equal((await sc.requests()).length, 3);
});

test('two agents in one page hear each other; unsubscribe stops it; a throwing listener does not stop the others', T, async (t) => {
  const { page } = await h.open(t);
  const sc = await h.scenario([{ text: 'one' }, { text: 'two' }]);
  const r = await run(page, async ({ model, db }) => {
    const { gh } = window;
    const open = () => gh.Agent.open({ threadId: 'p', model, storage: { database: db } });
    const a = await open();
    const b = await open();
    const inB = [];
    const bad = b.subscribe(() => { throw new Error('listener bug'); });
    const stop = b.subscribe((c) => inB.push(c.status));
    await a.chat('first');
    await gh.until(() => inB.includes('idle') && b.messageCount === 2, 5_000);
    const afterFirst = { heard: [...inB], count: b.messageCount, last: textOf(b.lastMessage()) };
    stop();
    bad();
    const before = inB.length;
    await b.chat('second'); // b's view is current: no conflict
    await a.refresh();
    return { afterFirst, heardAfterUnsubscribe: inB.length - before, aCount: a.messageCount,
      notAFunction: gh.errorInfo((() => { try { a.subscribe('nope'); } catch (e) { return e; } })()) };
    function textOf(m) { return (m?.content ?? []).filter((x) => x.type === 'text').map((x) => x.content).join(''); }
  }, { model: sc.openai(), db: uid('db') });
  assert.equal(r.afterFirst.count, 2);
  assert.equal(r.afterFirst.last, 'one');
  assert.ok(r.afterFirst.heard.includes('idle'));
  assert.equal(r.heardAfterUnsubscribe, 0);
  assert.equal(r.aCount, 4);
  assert.equal(r.notAFunction.code, 'invalid_config');
});

test('without BroadcastChannel: an agent still hears its own changes; another tab learns on its next call (conflict, then it works)', T, async (t) => {
  const context = await h.newContext();
  t.after(() => context.close().catch(() => {}));
  await context.addInitScript(() => { delete globalThis.BroadcastChannel; });
  const { page: a } = await h.open(t, { context });
  const { page: b } = await h.open(t, { context });
  const sc = await h.scenario([{ text: 'first answer' }, { text: 'second answer' }]);
  const args = { model: sc.openai(), db: uid('db') };
  await run(a, openListening, args);
  await run(b, openListening, args);
  const own = await run(a, async () => {
    await window.agent.chat('from A');
    return window.heard.map((c) => c.status);
  });
  assert.equal(own.at(-1), 'idle');
  const inB = await run(b, async () => {
    await window.gh.sleep(300);
    const heard = window.heard.length;
    const first = await window.gh.error(() => window.agent.chat('from B'));
    const second = (await window.agent.chat('from B')).status;
    return { heard, first: first?.code, second };
  });
  assert.equal(inB.heard, 0, 'nothing crosses tabs without BroadcastChannel');
  assert.equal(inB.first, 'conflict');
  assert.equal(inB.second, 'completed');
});

test('after dispose() nothing is heard, and subscribe() is `disposed`', T, async (t) => {
  const { page } = await h.open(t);
  const sc = await h.scenario([{ text: 'one' }]);
  const r = await run(page, async ({ model, db }) => {
    const { gh } = window;
    const a = await gh.Agent.open({ threadId: 'd', model, storage: { database: db } });
    const b = await gh.Agent.open({ threadId: 'd', model, storage: { database: db } });
    const heard = [];
    b.subscribe((c) => heard.push(c.status));
    await b.dispose();
    await a.chat('hello');
    await gh.sleep(300);
    return { heard, after: await gh.error(() => b.subscribe(() => {})) };
  }, { model: sc.openai(), db: uid('db') });
  assert.deepEqual(r.heard, []);
  assert.equal(r.after?.code, 'disposed');
});

test('Agent.subscribeThreads: another tab hears a thread created, its status changes and its deletion; unsubscribe stops it', T, async (t) => {
  const context = await h.newContext();
  t.after(() => context.close().catch(() => {}));
  const { page: a } = await h.open(t, { context });
  const { page: b } = await h.open(t, { context });
  const sc = await h.scenario([gated('call_l', '/list'), { text: 'Done.' }]);
  const db = uid('db');
  await run(b, ({ db }) => {
    window.listHeard = [];
    window.stopList = window.gh.Agent.subscribeThreads({ database: db }, (c) => window.listHeard.push(c));
  }, { db });
  await run(a, async ({ model, db }) => {
    const { gh } = window;
    const agent = await gh.Agent.open({ threadId: 'listed', model, storage: { database: db }, tools: [gh.tool('delete_file', { requireApproval: true })] });
    await agent.chat('delete /list');
    await agent.submitDecisions({ call_l: 'approve' });
  }, { model: sc.openai(), db });
  const heard = await run(b, async () => {
    await window.gh.until(() => window.listHeard.some((c) => c.status === 'idle'), 5_000);
    return window.listHeard;
  });
  assert.ok(heard.every((c) => c.threadId === 'listed' && c.deleted === false));
  const statuses = heard.map((c) => c.status);
  assert.ok(statuses.includes('awaiting_approval'), statuses.join());
  assert.ok(statuses.includes('running'), statuses.join());
  assert.equal(statuses.at(-1), 'idle');
  // The list it would show agrees.
  const listed = await run(b, ({ db }) => window.gh.Agent.listThreads({ database: db }), { db });
  assert.deepEqual(listed.map((x) => [x.threadId, x.status]), [['listed', 'idle']]);

  await run(a, ({ db }) => window.gh.Agent.deleteThread('listed', { database: db }), { db });
  const deleted = await run(b, async () => {
    await window.gh.until(() => window.listHeard.some((c) => c.deleted), 5_000);
    return window.listHeard.at(-1);
  });
  assert.deepEqual(deleted, { threadId: 'listed', status: null, deleted: true });

  // Unsubscribed: a new thread is not heard.
  const after = await run(b, async ({ model, db }) => {
    window.stopList();
    const n = window.listHeard.length;
    const other = await window.gh.Agent.open({ threadId: 'other', model, storage: { database: db } });
    await other.chat('hello').catch(() => {});
    await window.gh.sleep(300);
    return window.listHeard.length - n;
  }, { model: sc.openai(), db });
  assert.equal(after, 0);
  const bad = await run(b, () => window.gh.error(() => window.gh.Agent.subscribeThreads({}, 'nope')));
  assert.equal(bad?.code, 'invalid_config');
});

test('a thread-list subscription whose unsubscribe function was dropped and collected keeps listening', T, async (t) => {
  if (h.engine !== 'chromium') return t.skip('forces a garbage collection through CDP');
  const { page, context, errors } = await h.open(t);
  const db = uid('db');
  await run(page, (db) => {
    window.heardList = [];
    // The returned unsubscribe function is not kept: the garbage collector frees it.
    window.gh.Agent.subscribeThreads({ database: db }, (c) => window.heardList.push(c.threadId));
  }, db);
  const cdp = await context.newCDPSession(page);
  for (let i = 0; i < 3; i++) {
    await cdp.send('HeapProfiler.collectGarbage');
    await run(page, () => new Promise((r) => setTimeout(r, 50)));
  }
  const heard = await run(page, async (db) => {
    const { gh } = window;
    const agent = await gh.Agent.open({ threadId: 'gc', storage: { database: db } });
    await agent.chat('hello');
    await gh.until(() => window.heardList.includes('gc'), 5_000);
    return window.heardList;
  }, db);
  assert.ok(heard.includes('gc'), 'the listener still hears');
  assert.deepEqual(errors.filter((e) => /closure invoked/.test(e)), [], 'no call of a freed closure');
});
