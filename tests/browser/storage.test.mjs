// Durability (README "Approval semantics" 8, docs/design.md "Stored data"): reload mid-approval, a page that died mid-tool (re-gating,
// idempotent tools), a 100,000-message thread seeded in the stored schema, paging, thread lists.

import { after, test } from 'node:test';
import assert from 'node:assert/strict';
import { run, setup, textOf, uid } from './harness.mjs';

const h = await setup();
after(() => h.close());

const T = { timeout: 60_000 };

test('reload mid-approval: pendingTools() answers synchronously right after open; the flow finishes there', T, async (t) => {
  const { page } = await h.open(t);
  const sc = await h.scenario([
    { toolCalls: [{ id: 'call_rl', name: 'delete_file', arguments: { path: '/reload/me' } }] },
    { text: 'Deleted after the reload.' },
  ]);
  const args = { model: sc.openai(), db: uid('db') };
  const before = await run(page, async ({ model, db }) => {
    const { gh } = window;
    const agent = await gh.Agent.open({ threadId: 'rl', model, storage: { database: db }, tools: [gh.tool('delete_file', { requireApproval: true })] });
    return agent.chat('delete /reload/me');
  }, args);
  assert.equal(before.status, 'awaiting_approval');

  await h.load(page, true);
  const r = await run(page, async ({ model, db }) => {
    const { gh } = window;
    const agent = await gh.Agent.open({ threadId: 'rl', model, storage: { database: db }, tools: [gh.tool('delete_file', { requireApproval: true })] });
    const pending = agent.pendingTools(); // no await: synchronous, from the loaded tail
    const out = { isArray: Array.isArray(pending), pending, status: agent.status(), last: agent.lastMessage(), count: agent.messageCount };
    out.done = await agent.submitDecisions({ call_rl: 'approve' });
    out.calls = gh.calls;
    return out;
  }, args);
  assert.equal(r.isArray, true, 'pendingTools() returns an array, not a promise');
  assert.deepEqual(r.pending, before.message.tools.map((e) => ({ ...e, approvals: [], needed: 1, blocked: null })));
  assert.equal(r.status, 'awaiting_approval');
  assert.deepEqual(r.last, before.message);
  assert.equal(r.count, 2);
  assert.equal(r.done.status, 'completed');
  assert.equal(textOf(r.done.message), 'Deleted after the reload.');
  assert.deepEqual(r.calls.map((c) => [c.callId, c.inputs]), [['call_rl', { path: '/reload/me' }]]);
  const reqs = await sc.requests();
  assert.equal(reqs.length, 2);
  assert.equal(reqs[1].body.messages.at(-1).tool_call_id, 'call_rl');
});

test('reload while external results are partly in: the staged result survives, the rest is submitted after open', T, async (t) => {
  const { page } = await h.open(t);
  const sc = await h.scenario([
    { toolCalls: [{ id: 'e1', name: 'lookup', arguments: { path: '/1' } }, { id: 'e2', name: 'lookup', arguments: { path: '/2' } }] },
    { text: 'Both in.' },
  ]);
  const args = { model: sc.openai(), db: uid('db') };
  const openExternal = async ({ model, db }) => {
    const { execute, ...lookup } = window.gh.tool('lookup');
    window.agent = await window.gh.Agent.open({ threadId: 'ext', model, storage: { database: db }, tools: [lookup] });
    return { status: window.agent.status(), waiting: window.agent.pendingToolResults().map((e) => e.callId) };
  };
  assert.deepEqual(await run(page, openExternal, args), { status: 'idle', waiting: [] });
  const partial = await run(page, async () => {
    await window.agent.chat('look both up');
    return (await window.agent.submitToolResults({ e1: 'first result' })).status;
  });
  assert.equal(partial, 'awaiting_tool_results');
  await h.load(page, true);
  assert.deepEqual(await run(page, openExternal, args), { status: 'awaiting_tool_results', waiting: ['e2'] });
  const r = await run(page, async () => {
    const state = await window.agent.submitToolResults({ e2: 'second result' });
    return { state, results: (await window.agent.messages())[2].tools.map((e) => e.result) };
  });
  assert.equal(r.state.status, 'completed');
  assert.deepEqual(r.results, ['first result', 'second result']);
});

/** Runs a call whose execute never returns (approving it when gated), then reloads: the page "died" mid-call. */
async function dieMidTool(t, { idempotent = false, gated = true } = {}) {
  const { page } = await h.open(t);
  const sc = await h.scenario([
    { toolCalls: [{ id: 'call_cut', name: 'charge_card', arguments: { path: '/card' } }] },
    { text: 'Charged.' },
  ]);
  const args = { model: sc.openai(), db: uid('db'), idempotent, gated };
  const first = await run(page, async ({ model, db, idempotent, gated }) => {
    const { gh } = window;
    const tool = gh.tool('charge_card', { requireApproval: gated, idempotent });
    const agent = await gh.Agent.open({ threadId: 'cut', model, storage: { database: db },
      tools: [{ ...tool, execute: (i, ctx) => { gh.calls.push({ callId: ctx.callId }); return new Promise(() => {}); } }] });
    const chat = agent.chat('charge it'); // never settles when the call is not gated
    const state = gated ? await chat : null;
    if (gated) agent.submitDecisions({ call_cut: 'approve' }); // never settles
    for (let i = 0; i < 100 && gh.calls.length === 0; i++) await gh.sleep(20);
    const dump = await gh.dumpDb(db);
    return { state, calls: gh.calls.length, record: dump.stores.threads.rows[0], tail: JSON.parse(dump.stores.messages.rows.at(-1).json) };
  }, args);
  assert.equal(first.calls, 1);
  assert.equal(first.record.run.started, 'call_cut', 'the "started" mark is durable before execute runs');
  await h.load(page, true);
  return { page, args, first, sc };
}

for (const gated of [true, false]) {
  test(`a page that died mid-tool (${gated ? 'gated' : 'not gated'} call): on open it is re-gated with an explanation, never silently re-run`, T, async (t) => {
    const { page, args, first, sc } = await dieMidTool(t, { gated });
    const r = await run(page, async ({ model, db, gated }) => {
      const { gh } = window;
      const agent = await gh.Agent.open({ threadId: 'cut', model, storage: { database: db }, tools: [gh.tool('charge_card', { requireApproval: gated })] });
      const out = { calls: gh.calls.length, status: agent.status(), pending: agent.pendingTools(), tail: agent.lastMessage() };
      out.done = await agent.submitDecisions({ call_cut: 'approve' });
      out.callsAfter = gh.calls.map((c) => c.callId);
      return out;
    }, args);
    assert.equal(r.calls, 0, 'not re-run on open');
    assert.equal(r.status, 'awaiting_approval');
    assert.equal(r.pending.length, 1);
    assert.equal(r.pending[0].approval, 'pending');
    assert.match(r.pending[0].approvalReason, /may or may not have taken effect/);
    assert.equal(r.tail.__id, first.tail.__id, 'the same message, re-gated in place');
    assert.match(r.tail.resume_token, /^run_[0-9a-f]{16}$/);
    assert.equal(r.done.status, 'completed');
    assert.deepEqual(r.callsAfter, ['call_cut']);
    assert.equal((await sc.requests()).length, 2);
  });
}

test('a page that died mid-tool, idempotent tool: not re-gated; retry() runs it again', T, async (t) => {
  const { page, args } = await dieMidTool(t, { idempotent: true });
  const r = await run(page, async ({ model, db }) => {
    const { gh } = window;
    const agent = await gh.Agent.open({ threadId: 'cut', model, storage: { database: db }, tools: [gh.tool('charge_card', { requireApproval: true, idempotent: true })] });
    const out = { status: agent.status(), pending: agent.pendingTools() };
    out.done = await agent.retry();
    out.calls = gh.calls.map((c) => c.callId);
    return out;
  }, args);
  assert.deepEqual(r.pending, []);
  assert.equal(r.status, 'interrupted');
  assert.equal(r.done.status, 'completed');
  assert.deepEqual(r.calls, ['call_cut']);
});

const tailJson = (id) => JSON.stringify({
  __id: id, resume_token: 'run_00000000000000aa', role: 'assistant', content: [], type: 'tool_call',
  tools: [{ callId: 'call_big', name: 'delete_file', description: 'The delete_file tool', parameters: [],
    inputs: { path: '/big' }, result: null, approval: 'pending', approvalReason: 'Seeded', rejectReason: null }],
});

test('100,000 messages: open reads the tail, pendingTools() answers from it; approving sends only the context window', { timeout: 120_000 }, async (t) => {
  const { page } = await h.open(t);
  const sc = await h.scenario([{ text: 'Continued after 100k messages.' }]);
  const r = await run(page, async ({ model, db, tail10, tail100k }) => {
    const { gh } = window;
    const tools = [gh.tool('delete_file', { requireApproval: true })];
    const out = {};
    for (const [thread, n, tail] of [['small', 10, tail10], ['big', 100_000, tail100k]]) {
      const id = JSON.parse(tail).__id;
      out[thread] = { seedMs: await gh.seedThread(db, thread, n, tail, { run: { callMessageId: id, results: [] } }) };
    }
    await gh.Agent.open({ threadId: 'warm-up', model, storage: { database: db }, tools });
    for (const thread of ['small', 'big']) {
      const t0 = performance.now();
      const agent = await gh.Agent.open({ threadId: thread, model, storage: { database: db }, tools });
      out[thread].openMs = performance.now() - t0;
      out[thread].pending = agent.pendingTools();
      out[thread].status = agent.status();
      out[thread].count = agent.messageCount;
      if (thread === 'big') {
        out.page = (await agent.messages({ limit: 2, beforeIndex: 99_999 })).map((m) => m.__id);
        const memory = async () => (await (await import('/pkg/gatehouse_wasm.js')).default()).memory.buffer.byteLength;
        out.memBefore = await memory();
        const t1 = performance.now();
        out.done = await agent.submitDecisions({ call_big: 'approve' });
        out.decideMs = performance.now() - t1;
        out.memAfter = await memory();
        out.calls = gh.calls.map((c) => c.callId);
        out.countAfter = agent.messageCount;
        out.last3 = (await agent.messages({ limit: 3 })).map((m) => m.type ?? m.role);
        out.newIds = (await agent.messages({ limit: 2 })).map((m) => m.__id);
      }
    }
    return out;
  }, { model: sc.openai(), db: uid('db'), tail10: tailJson('msg_2010'), tail100k: tailJson('msg_200000') }, 110_000);
  assert.equal(r.small.count, 10);

  console.log(`100k thread: seeded in ${r.big.seedMs.toFixed(0)} ms; Agent.open took ${r.small.openMs.toFixed(1)} ms ` +
    `for 10 messages vs ${r.big.openMs.toFixed(1)} ms for 100,000; approve + model call took ${r.decideMs.toFixed(0)} ms; ` +
    `wasm memory ${(r.memBefore / 2 ** 20).toFixed(1)} MiB before the approve, ${(r.memAfter / 2 ** 20).toFixed(1)} MiB after`);
  for (const k of ['small', 'big']) {
    assert.equal(r[k].status, 'awaiting_approval', k);
    assert.deepEqual(r[k].pending.map((e) => [e.callId, e.inputs.path, e.approvalReason]), [['call_big', '/big', 'Seeded']], k);
  }
  assert.equal(r.big.count, 100_000);
  assert.deepEqual(r.page, ['msg_100998', 'msg_100999'], 'messages({ limit, beforeIndex }) pages by 0-based position');
  assert.equal(r.done.status, 'completed');
  assert.equal(textOf(r.done.message), 'Continued after 100k messages.');
  assert.deepEqual(r.calls, ['call_big']);
  assert.equal(r.countAfter, 100_002);
  assert.deepEqual(r.last3, ['tool_call', 'tool_call_result', 'assistant']);
  assert.ok(r.newIds.every((id) => BigInt(id.slice(4)) > 200_000n), `new ids sort after the seeded tail: ${r.newIds}`);
  // The request carries the newest messages that fit the default 50,000-token window (about
  // 27 estimated tokens each here), from a user message, ending with the call and its result.
  const [req] = await sc.requests();
  const msgs = req.body.messages;
  const n = msgs.length;
  assert.ok(n > 1_000 && n < 3_000, `${n} messages sent`);
  const firstSeq = 100_002 - n; // seeded texts are 1..99,999, the call 100,000, its result 100,001
  assert.deepEqual(msgs[0], { role: 'user', content: `user message ${firstSeq}` });
  assert.deepEqual(msgs[n - 3], { role: 'user', content: 'user message 99999' });
  assert.equal(msgs[n - 2].tool_calls[0].id, 'call_big');
  assert.deepEqual(msgs[n - 1], { role: 'tool', tool_call_id: 'call_big', content: JSON.stringify({ done: 'delete_file', path: '/big' }) });
  const chars = JSON.stringify(msgs).length;
  assert.ok(chars / 4 < 50_000, `about ${Math.round(chars / 4)} tokens sent`);
  // Only the window was read and parsed: 180 MiB of wasm memory before the window existed.
  assert.ok(r.memAfter < 16 * 2 ** 20, `wasm memory after the approve: ${r.memAfter} bytes`);
});

test('listThreads, deleteThread and paging with messages({ limit, beforeIndex })', T, async (t) => {
  const { page } = await h.open(t);
  const sc = await h.scenario([{ text: 'one' }, { text: 'two' }, { text: 'three' }]);
  const r = await run(page, async ({ model, db }) => {
    const { gh } = window;
    const storage = { kind: 'indexeddb', database: db };
    const a = await gh.Agent.open({ threadId: 'first', model, storage });
    await a.chat('hello first');
    await a.chat('again');
    const b = await gh.Agent.open({ threadId: 'second', model, storage });
    await b.chat('hello second');
    const out = {
      list: await gh.Agent.listThreads(storage),
      all: (await a.messages()).map((m) => m.__id),
      last2: (await a.messages({ limit: 2 })).map((m) => m.__id),
      before1: (await a.messages({ beforeIndex: 1 })).map((m) => m.__id),
      mid: (await a.messages({ limit: 1, beforeIndex: 2 })).map((m) => m.__id),
      none: await a.messages({ limit: 0 }),
      otherDb: await gh.Agent.listThreads({ kind: 'indexeddb', database: db + '-other' }),
    };
    await gh.Agent.deleteThread('first', storage);
    out.listAfter = (await gh.Agent.listThreads(storage)).map((x) => x.threadId);
    out.dumpAfter = await gh.dumpDb(db);
    const reopened = await gh.Agent.open({ threadId: 'first', model, storage });
    out.reopened = { count: reopened.messageCount, status: reopened.status(), last: reopened.lastMessage() };
    return out;
  }, { model: sc.openai(), db: uid('db') });
  assert.deepEqual(r.list.map((x) => [x.threadId, x.title, x.messageCount, x.status]),
    [['second', 'hello second', 2, 'idle'], ['first', 'hello first', 4, 'idle']], 'newest first');
  assert.ok(r.list.every((x) => typeof x.createdAt === 'number' && x.updatedAt >= x.createdAt));
  assert.equal(r.all.length, 4);
  assert.deepEqual(r.last2, r.all.slice(2));
  assert.deepEqual(r.before1, r.all.slice(0, 1));
  assert.deepEqual(r.mid, r.all.slice(1, 2));
  assert.deepEqual(r.none, []);
  assert.deepEqual(r.otherDb, []);
  assert.deepEqual(r.listAfter, ['second']);
  assert.ok(r.dumpAfter.stores.messages.rows.every((x) => x.thread === 'second'), 'messages deleted with the thread');
  assert.equal(r.dumpAfter.stores.messages.rows.length, 2);
  assert.deepEqual(r.reopened, { count: 0, status: 'idle', last: null });
});

test('stored schema: database version 3, stores and key paths, rows { thread, seq, json }, camelCase record', T, async (t) => {
  const { page } = await h.open(t);
  const sc = await h.scenario([{ text: 'stored' }]);
  const r = await run(page, async ({ model, db }) => {
    const agent = await window.gh.Agent.open({ threadId: 'schema', model, storage: { database: db } });
    await agent.chat('store me');
    return { dump: await window.gh.dumpDb(db), messages: await agent.messages() };
  }, { model: sc.openai(), db: uid('db') });
  const { dump } = r;
  assert.equal(dump.version, 3);
  assert.deepEqual(Object.keys(dump.stores).sort(), ['audit', 'grants', 'messages', 'threads']);
  assert.equal(dump.stores.grants.keyPath, 'id');
  assert.deepEqual(dump.stores.grants.rows, [], 'a database without grants has none');
  assert.equal(dump.stores.threads.keyPath, 'id');
  assert.deepEqual(dump.stores.audit.keyPath, ['thread', 'seq']);
  assert.deepEqual(dump.stores.audit.rows, [], 'a thread without gated calls has no trail');
  assert.deepEqual(dump.stores.messages.keyPath, ['thread', 'seq']);
  assert.deepEqual(dump.stores.messages.rows.map((x) => Object.keys(x)), [['thread', 'seq', 'json'], ['thread', 'seq', 'json']]);
  assert.deepEqual(dump.stores.messages.rows.map((x) => JSON.parse(x.json)), r.messages);
  const rec = dump.stores.threads.rows[0];
  assert.deepEqual(Object.keys(rec).sort(), ['createdAt', 'id', 'lease', 'messageCount', 'pendingApprovals', 'policies', 'requestSize', 'run', 'schemaVersion', 'status', 'title', 'updatedAt', 'version'].sort());
  // What the request that the newest answer answered carried (the context window's calibration).
  assert.deepEqual(Object.keys(rec.requestSize).sort(), ['answer', 'tokens']);
  assert.equal(rec.requestSize.answer, r.messages[1].__id);
  assert.ok(Number.isInteger(rec.requestSize.tokens) && rec.requestSize.tokens > 0, JSON.stringify(rec.requestSize));
  assert.equal(rec.schemaVersion, 3);
  assert.equal(rec.lease, null, 'the last write of a run ends its lease');
  assert.equal(rec.messageCount, 2);
  assert.equal(rec.pendingApprovals, 0);
  assert.equal(rec.version, 2, 'one commit per message');
  assert.equal(rec.title, 'store me');
});
