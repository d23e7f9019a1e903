// Conflicts and concurrency (README "Errors", docs/design.md "Run ownership"): a new message while approvals are pending,
// a second call while one runs, two Agent objects on one thread, two tabs on one thread.

import { after, test } from 'node:test';
import assert from 'node:assert/strict';
import { run, setup, textOf, uid, withoutLiveNotices } from './harness.mjs';

const h = await setup();
after(() => h.close());

const T = { timeout: 60_000 };
const gatedCall = (id, path = '/x') => ({ toolCalls: [{ id, name: 'delete_file', arguments: { path } }] });

test('conflict: a message while approvals are pending is refused, nothing persisted or sent; handle() returns it', T, async (t) => {
  const { page } = await h.open(t);
  const sc = await h.scenario([gatedCall('call_c'), { text: 'Done.' }]);
  const db = uid('db');
  const r = await run(page, async ({ model, db }) => {
    const { gh } = window;
    const agent = await gh.Agent.open({ threadId: 't', model, storage: { database: db }, tools: [gh.tool('delete_file', { requireApproval: true })] });
    await agent.chat('delete /x');
    const before = { dump: await gh.dumpDb(db), count: agent.messageCount, tail: agent.lastMessage() };
    const err = await gh.error(() => agent.chat('actually, do something else'));
    const handled = await agent.handle({ message: 'and another thing' });
    const afterConflict = { dump: await gh.dumpDb(db), count: agent.messageCount, tail: agent.lastMessage(), pending: agent.pendingTools() };
    const decided = await agent.handle({ decisions: { call_c: 'approve' } });
    return { before, err, handled, afterConflict, decided, calls: gh.calls.length };
  }, { model: sc.openai(), db });

  assert.equal(r.err.isError, true);
  assert.equal(r.err.name, 'GatehouseError');
  assert.equal(r.err.code, 'conflict');
  assert.equal(r.err.retryable, false);
  assert.deepEqual(Object.keys(r.handled), ['status', 'error']);
  assert.equal(r.handled.status, 'conflict');
  assert.equal(typeof r.handled.error, 'string');
  assert.ok(r.handled.error.length > 0);
  assert.deepEqual(r.afterConflict.dump, r.before.dump, 'IndexedDB unchanged by the refused messages');
  assert.equal(r.afterConflict.count, 2);
  assert.deepEqual(r.afterConflict.tail, r.before.tail);
  assert.equal(r.afterConflict.pending.length, 1);
  assert.equal(r.decided.status, 'completed');
  assert.equal(textOf(r.decided.message), 'Done.');
  assert.equal(r.calls, 1);
  const reqs = await sc.requests();
  assert.equal(reqs.length, 2, 'the refused messages were never sent');
  assert.ok(!JSON.stringify(reqs).includes('something else') && !JSON.stringify(reqs).includes('another thing'));
});

test('busy: a second call while one runs on the same agent is refused and sends nothing', T, async (t) => {
  const { page } = await h.open(t);
  const sc = await h.scenario([{ text: 'slow answer', delayMs: 400 }]);
  const r = await run(page, async ({ model, db }) => {
    const { gh } = window;
    const agent = await gh.Agent.open({ threadId: 't', model, storage: { database: db } });
    const first = agent.chat('first');
    const busyChat = await gh.error(() => agent.chat('second'));
    const busyRetry = await gh.error(() => agent.retry());
    const busyRefresh = await gh.error(() => agent.refresh());
    const done = await first;
    return { busyChat, busyRetry, busyRefresh, done, messages: await agent.messages() };
  }, { model: sc.openai(), db: uid('db') });
  for (const e of [r.busyChat, r.busyRetry, r.busyRefresh]) {
    assert.equal(e?.name, 'GatehouseError');
    assert.equal(e.code, 'busy');
    assert.equal(e.retryable, true);
  }
  assert.equal(r.done.status, 'completed');
  assert.deepEqual(r.messages.map(textOf), ['first', 'slow answer']);
  assert.equal((await sc.requests()).length, 1);
});

test('two Agent objects on one thread: the stale one gets conflict, is reloaded, then sees the other\'s state', T, async (t) => {
  const { page } = await h.open(t);
  await withoutLiveNotices(page); // the version check, not live notices (live.test.mjs)
  const sc = await h.scenario([gatedCall('call_s'), { text: 'A finished.' }, { text: 'B speaks.' }, { text: 'A again.' }]);
  const r = await run(page, async ({ model, db }) => {
    const { gh } = window;
    const opts = { threadId: 'shared', model, storage: { database: db }, tools: [gh.tool('delete_file', { requireApproval: true })] };
    const a = await gh.Agent.open(opts);
    await a.chat('delete /x');
    const b = await gh.Agent.open(opts);
    const bPending = b.pendingTools();
    const aDone = await a.submitDecisions({ call_s: 'approve' });
    const bStale = await gh.error(() => b.submitDecisions({ call_s: 'approve' }));
    const bView = { status: b.status(), tail: b.lastMessage(), pending: b.pendingTools(), count: b.messageCount };
    const bAgain = await gh.error(() => b.submitDecisions({ call_s: 'approve' }));
    const bChat = await b.chat('hello from B');
    const aStale = await gh.error(() => a.chat('hello from A'));
    const aView = { tail: a.lastMessage(), count: a.messageCount };
    const aChat = await a.chat('hello from A');
    return { bPending, aDone, aTail: aDone.message, bStale, bView, bAgain, bChat, aStale, aView, aChat,
      calls: gh.calls, messages: await a.messages() };
  }, { model: sc.openai(), db: uid('db') });

  assert.equal(r.bPending.length, 1);
  assert.equal(r.aDone.status, 'completed');
  assert.equal(r.bStale?.code, 'conflict', 'a stale decision is a conflict, never a silent overwrite');
  assert.equal(r.bStale.name, 'GatehouseError');
  assert.deepEqual(r.bView, { status: 'idle', tail: r.aTail, pending: [], count: 4 }, 'B was reloaded');
  assert.equal(r.bAgain?.code, 'not_suspended');
  assert.equal(r.calls.length, 1, 'the approved tool ran exactly once');
  assert.equal(r.bChat.status, 'completed');
  assert.equal(r.aStale?.code, 'conflict');
  assert.equal(r.aView.count, 6, 'A was reloaded to B\'s state');
  assert.deepEqual(r.aView.tail, r.bChat.message);
  assert.equal(r.aChat.status, 'completed');
  assert.deepEqual(r.messages.map((m) => m.type ?? textOf(m)),
    ['delete /x', 'tool_call', 'tool_call_result', 'A finished.', 'hello from B', 'B speaks.', 'hello from A', 'A again.']);
  assert.equal((await sc.requests()).length, 4, 'the stale message was not sent');
});

test('two Agent objects, partial decisions: B\'s stale decision conflicts, then B completes from A\'s partial state', T, async (t) => {
  const { page } = await h.open(t);
  await withoutLiveNotices(page); // the version check, not live notices (live.test.mjs)
  const sc = await h.scenario([
    { toolCalls: [{ id: 'c1', name: 'delete_file', arguments: { path: '/1' } }, { id: 'c2', name: 'delete_file', arguments: { path: '/2' } }] },
    { text: 'Both ran.' },
  ]);
  const r = await run(page, async ({ model, db }) => {
    const { gh } = window;
    const opts = { threadId: 'shared', model, storage: { database: db }, tools: [gh.tool('delete_file', { requireApproval: true })] };
    const a = await gh.Agent.open(opts);
    await a.chat('delete both');
    const b = await gh.Agent.open(opts);
    const aPartial = await a.submitDecisions({ c1: 'approve' });
    const bStale = await gh.error(() => b.submitDecisions({ c2: 'approve' }));
    const bView = { tail: b.lastMessage(), pending: b.pendingTools().map((e) => e.callId) };
    const bDone = await b.submitDecisions({ c2: 'approve' });
    const aStale = await gh.error(() => a.submitDecisions({ c2: 'reject' }));
    return { aPartial, bStale, bView, bDone, aStale, aStatus: a.status(), calls: gh.calls };
  }, { model: sc.openai(), db: uid('db') });
  assert.equal(r.aPartial.status, 'awaiting_approval');
  assert.equal(r.bStale?.code, 'conflict');
  assert.deepEqual(r.bView.tail, r.aPartial.message, 'B now sees A\'s partial decision');
  assert.deepEqual(r.bView.pending, ['c2']);
  assert.equal(r.bDone.status, 'completed');
  assert.deepEqual(r.calls.map((c) => c.callId), ['c1', 'c2']);
  assert.equal(r.aStale?.code, 'conflict');
  assert.equal(r.aStatus, 'idle');
});

test('two tabs on one thread: the other tab sees the pending call, decides it; the stale tab gets conflict', T, async (t) => {
  const { page: tab1, context } = await h.open(t);
  const { page: tab2 } = await h.open(t, { context });
  await withoutLiveNotices(tab1); // the version check, not live notices (live.test.mjs)
  await withoutLiveNotices(tab2);
  const sc = await h.scenario([gatedCall('call_tab', '/tabs'), { text: 'Deleted from tab 2.' }]);
  const args = { db: uid('db'), model: sc.openai() };

  const first = await run(tab1, async ({ db, model }) => {
    const { gh } = window;
    window.agent = await gh.Agent.open({ threadId: 'tabbed', model, storage: { database: db }, tools: [gh.tool('delete_file', { requireApproval: true })] });
    return window.agent.chat('delete /tabs');
  }, args);
  assert.equal(first.status, 'awaiting_approval');

  const r2 = await run(tab2, async ({ db, model }) => {
    const { gh } = window;
    const agent = await gh.Agent.open({ threadId: 'tabbed', model, storage: { database: db }, tools: [gh.tool('delete_file', { requireApproval: true })] });
    const pending = agent.pendingTools();
    const done = await agent.submitDecisions({ call_tab: 'approve' });
    return { pending, done, calls: gh.calls };
  }, args);
  // The other tab's pendingTools(): the tail's entries, with their (local: empty) approver progress.
  assert.deepEqual(r2.pending, first.message.tools.map((e) => ({ ...e, approvals: [], needed: 1, blocked: null })));
  assert.equal(r2.done.status, 'completed');
  assert.equal(r2.calls.length, 1);

  const r1 = await run(tab1, async () => {
    const { gh, agent } = window;
    const stale = await gh.error(() => agent.submitDecisions({ call_tab: 'approve' }));
    return { stale, status: agent.status(), tail: agent.lastMessage(), calls: gh.calls.length, messages: await agent.messages() };
  });
  assert.equal(r1.stale?.code, 'conflict');
  assert.equal(r1.status, 'idle');
  assert.deepEqual(r1.tail, r2.done.message);
  assert.equal(r1.calls, 0, 'the stale tab never ran the tool');
  assert.equal(r1.messages.length, 4);
  assert.equal((await sc.requests()).length, 2);
});

test('refresh() picks up another tab\'s decision without a conflict', T, async (t) => {
  const { page: tab1, context } = await h.open(t);
  const { page: tab2 } = await h.open(t, { context });
  await withoutLiveNotices(tab1); // the version check, not live notices (live.test.mjs)
  await withoutLiveNotices(tab2);
  const sc = await h.scenario([gatedCall('call_r'), { text: 'ok' }]);
  const args = { db: uid('db'), model: sc.openai() };
  const openAndChat = async ({ db, model }) => {
    const { gh } = window;
    window.agent = await gh.Agent.open({ threadId: 't', model, storage: { database: db }, tools: [gh.tool('delete_file', { requireApproval: true })] });
    return window.agent.status() === 'idle' ? (await window.agent.chat('go')).status : window.agent.status();
  };
  assert.equal(await run(tab1, openAndChat, args), 'awaiting_approval');
  assert.equal(await run(tab2, openAndChat, args), 'awaiting_approval');
  assert.equal((await run(tab2, () => window.agent.submitDecisions({ call_r: 'approve' }))).status, 'completed');
  const r = await run(tab1, async () => {
    const before = window.agent.status();
    await window.agent.refresh();
    return { before, after: window.agent.status(), pending: window.agent.pendingTools(), count: window.agent.messageCount };
  });
  assert.deepEqual(r, { before: 'awaiting_approval', after: 'idle', pending: [], count: 4 });
});

test('two tabs approve at the same moment: exactly one wins and runs the tool, the other is refused (busy while the winner runs, conflict or not_suspended after)', T, async (t) => {
  const { page: tab1, context } = await h.open(t);
  const { page: tab2 } = await h.open(t, { context });
  const sc = await h.scenario([gatedCall('call_race', '/race'), { text: 'Done once.' }]);
  const args = { model: sc.openai(), db: uid('db') };
  const openAgent = async ({ model, db }) => {
    const { gh } = window;
    window.agent = await gh.Agent.open({ threadId: 'race', model, storage: { database: db }, tools: [gh.tool('delete_file', { requireApproval: true })] });
    return window.agent.status() === 'idle' ? (await window.agent.chat('delete /race')).status : window.agent.status();
  };
  assert.equal(await run(tab1, openAgent, args), 'awaiting_approval');
  assert.equal(await run(tab2, openAgent, args), 'awaiting_approval');
  const decide = async () => {
    const outcome = await window.agent.submitDecisions({ call_race: 'approve' }).then((s) => s.status, (e) => window.gh.errorInfo(e).code);
    return { outcome, calls: window.gh.calls.length };
  };
  const [a, b] = await Promise.all([run(tab1, decide), run(tab2, decide)]);
  const loser = [a.outcome, b.outcome].find((o) => o !== 'completed');
  assert.deepEqual([a.outcome, b.outcome].filter((o) => o === 'completed'), ['completed']);
  // The loser's call is refused whenever it lands: `busy` while the winner's run holds the
  // thread, `conflict` when its view is still the one from before, and `not_suspended` when the
  // winner's live notice already reloaded its view (nothing waits for approval any more).
  assert.ok(['busy', 'conflict', 'not_suspended'].includes(loser), `the other tab is refused, got ${loser}`);
  assert.equal(a.calls + b.calls, 1, 'the approved tool ran exactly once across both tabs');
  assert.equal((await sc.requests()).length, 2);
});

test('a second tab opened while the first is running an approved tool does not re-gate it or lose its result', {
  ...T,
}, async (t) => {
  const { page: tab1, context } = await h.open(t);
  const { page: tab2 } = await h.open(t, { context });
  const sc = await h.scenario([gatedCall('call_live', '/pay'), { text: 'Paid once.' }]);
  const args = { model: sc.openai(), db: uid('db') };
  const started = await run(tab1, async ({ model, db }) => {
    const { gh } = window;
    let release;
    const gate = new Promise((r) => { release = r; });
    window.release = release;
    const slow = gh.tool('delete_file', { requireApproval: true, execute: async (i, ctx) => { gh.calls.push(ctx.callId); await gate; return 'paid'; } });
    window.agent = await gh.Agent.open({ threadId: 'live', model, storage: { database: db }, tools: [slow] });
    await window.agent.chat('pay');
    window.decided = window.agent.submitDecisions({ call_live: 'approve' }).then((s) => s.status, (e) => gh.errorInfo(e).code);
    for (let i = 0; i < 200 && gh.calls.length === 0; i++) await gh.sleep(10);
    return gh.calls.length;
  }, args);
  assert.equal(started, 1, 'the tool is running in tab 1');
  const tab2View = await run(tab2, async ({ model, db }) => {
    const { gh } = window;
    const agent = await gh.Agent.open({ threadId: 'live', model, storage: { database: db }, tools: [gh.tool('delete_file', { requireApproval: true })] });
    return { status: agent.status(), pending: agent.pendingTools() };
  }, args);
  const r = await run(tab1, async () => {
    window.release();
    const outcome = await window.decided;
    return { outcome, messages: (await window.agent.messages()).map((m) => m.type ?? m.role), calls: window.gh.calls.length };
  });
  assert.deepEqual(tab2View.pending, [], 'the running call must not be pending approval again in tab 2');
  assert.equal(r.outcome, 'completed', 'tab 1 finishes its run');
  assert.deepEqual(r.messages, ['user', 'tool_call', 'tool_call_result', 'assistant'], 'the real result is kept');
  assert.equal(r.calls, 1);
});

// With the Web Lock held, a run is admitted by its first write, inside that write's
// transaction (docs/design.md "Run ownership", 2): no read of its own before it.
test('a run makes no read before its first write: a tool turn is 4 read-write transactions, a stale view\'s first write is refused whole', T, async (t) => {
  const { page } = await h.open(t);
  await withoutLiveNotices(page); // the version check, not live notices (live.test.mjs)
  const sc = await h.scenario([
    { toolCalls: [{ id: 'c1', name: 'lookup', arguments: { path: '/a' } }] }, { text: 'one' },
    { toolCalls: [{ id: 'c2', name: 'lookup', arguments: { path: '/b' } }] }, { text: 'two' },
    { text: 'from B' },
  ]);
  const r = await run(page, async ({ model, db }) => {
    const { gh } = window;
    const txs = [];
    const real = IDBDatabase.prototype.transaction;
    IDBDatabase.prototype.transaction = function (stores, mode, ...rest) {
      const tx = real.call(this, stores, mode, ...rest);
      txs.push(`${mode}:${[].concat(stores).join(',')}`);
      return tx;
    };
    const opts = { threadId: 'shared', model, storage: { database: db }, tools: [gh.tool('lookup')] };
    const a = await gh.Agent.open(opts);
    const b = await gh.Agent.open(opts);
    await a.chat('first');
    txs.length = 0;
    const second = await a.chat('second');
    const turn = [...txs];
    const stored = await a.messages();
    txs.length = 0;
    const bStale = await gh.error(() => b.chat('from B'));
    const refused = [...txs];
    const bView = { count: b.messageCount, tail: b.lastMessage() };
    const bChat = await b.chat('from B');
    return { second, turn, stored: stored.length, calls: gh.calls.length, bStale, refused, bView, bChat, aTail: second.message };
  }, { model: sc.openai(), db: uid('db') });
  assert.equal(r.second.status, 'completed');
  assert.equal(r.stored, 8);
  assert.equal(r.calls, 2);
  assert.deepEqual(r.turn, Array(4).fill('readwrite:threads,messages,audit'),
    'the user message; the call with its start mark; the result; the answer — and no read-only admission read');
  assert.equal(r.bStale?.code, 'conflict', 'the stale view\'s first write is refused in its transaction');
  assert.deepEqual(r.bView, { count: 8, tail: r.aTail }, 'B took the stored thread');
  assert.equal(r.refused[0], 'readwrite:threads,messages,audit', 'the refused run\'s only write attempt');
  assert.ok(!r.refused.slice(1).some((x) => x.startsWith('readwrite')), `nothing else was written (no lease to clear): ${r.refused}`);
  assert.equal(r.bChat.status, 'completed');
  assert.equal((await sc.requests()).length, 5, 'the refused message was not sent');
});

test('a stale view whose old state refuses the input gets conflict, not that state\'s error', T, async (t) => {
  const { page } = await h.open(t);
  await withoutLiveNotices(page);
  const sc = await h.scenario([gatedCall('call_p'), { text: 'done' }]);
  const r = await run(page, async ({ model, db }) => {
    const { gh } = window;
    const opts = { threadId: 'shared', model, storage: { database: db }, tools: [gh.tool('delete_file', { requireApproval: true })] };
    const a = await gh.Agent.open(opts);
    const b = await gh.Agent.open(opts);
    const asked = await a.chat('delete /x');
    // B's view is still the empty thread: to it, nothing waits for a decision.
    const bStale = await gh.error(() => b.submitDecisions({ call_p: 'approve' }));
    const bView = { status: b.status(), pending: b.pendingTools().map((p) => p.callId) };
    const bDone = await b.submitDecisions({ call_p: 'approve' });
    return { asked: asked.status, bStale, bView, bDone: bDone.status, calls: gh.calls.length };
  }, { model: sc.openai(), db: uid('db') });
  assert.equal(r.asked, 'awaiting_approval');
  assert.equal(r.bStale?.code, 'conflict', 'not not_suspended: the view was stale');
  assert.deepEqual(r.bView, { status: 'awaiting_approval', pending: ['call_p'] }, 'B was reloaded');
  assert.equal(r.bDone, 'completed');
  assert.equal(r.calls, 1);
});
