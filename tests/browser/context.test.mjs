// The context window through the JS API (README "The context window"): what each request
// carries in a thread longer than the window, the calibration by the usage the provider
// reports, and the turns that cannot fit — refused before anything is stored or sent.

import { after, test } from 'node:test';
import assert from 'node:assert/strict';
import { run, setup, uid } from './harness.mjs';

const h = await setup();
after(() => h.close());

const T = { timeout: 60_000 };

/** A sentence of about `n` characters for turn `i`. */
const say = (i, n = 400) => `turn ${i}: ` + 'lorem ipsum dolor sit amet '.repeat(Math.ceil(n / 27)).slice(0, n);

test('a thread longer than the window: each request carries the newest turns that fit, from a user message', T, async (t) => {
  const { page } = await h.open(t);
  const turns = 16;
  // The server reports the input tokens as the prompt's characters / 4 (its default).
  const sc = await h.scenario(Array.from({ length: turns }, (_, i) => ({ text: say(i) })));
  const r = await run(page, async ({ model, turns, texts }) => {
    const { gh } = window;
    const agent = await gh.Agent.open({ threadId: 'long', model, storage: { kind: 'memory' } });
    for (let i = 0; i < turns; i++) await agent.chat(texts[i]);
    return { count: agent.messageCount };
  }, { model: sc.openai({ contextWindow: 1_500 }), turns, texts: Array.from({ length: turns }, (_, i) => say(i)) });
  assert.equal(r.count, turns * 2);
  const reqs = await sc.requests();
  assert.equal(reqs.length, turns);
  const sizes = reqs.map((q) => q.body.messages.length);
  // Early requests carry the whole thread; once it outgrows the window they stop growing.
  assert.deepEqual(sizes.slice(0, 3), [1, 3, 5]);
  const last = reqs.at(-1).body.messages;
  assert.ok(last.length < turns * 2 - 1 && last.length >= 1, `sizes ${sizes}`);
  assert.ok(Math.max(...sizes.slice(-5)) <= Math.max(...sizes.slice(0, 8)), `the window stops growing: ${sizes}`);
  for (const q of reqs) {
    const m = q.body.messages;
    assert.equal(m[0].role, 'user', 'a request starts at a user message');
    assert.ok(JSON.stringify(m).length / 4 <= 1_500, 'and fits the window');
  }
  assert.equal(last.at(-1).content, say(turns - 1), 'the newest message is always sent');
});

test('the estimate is calibrated by the usage the provider reports: a heavier count sends fewer messages', T, async (t) => {
  const { page } = await h.open(t);
  const sizesWith = async (input) => {
    const turns = 10;
    const sc = await h.scenario(Array.from({ length: turns }, (_, i) => ({ text: say(i, 200), usage: { input, output: 10 } })));
    await run(page, async ({ model, turns, texts }) => {
      const agent = await window.gh.Agent.open({ threadId: 'cal', model, storage: { kind: 'memory', database: `m${Math.random()}` } });
      for (let i = 0; i < turns; i++) await agent.chat(texts[i]);
    }, { model: sc.openai({ contextWindow: 2_000 }), turns, texts: Array.from({ length: turns }, (_, i) => say(i, 200)) });
    return (await sc.requests()).map((q) => q.body.messages.length);
  };
  // The provider says each request was 1 token (far below the estimate; bounded at ½) or
  // 100,000 tokens (far above; bounded at 4×).
  const light = await sizesWith(1);
  const heavy = await sizesWith(100_000);
  assert.ok(light.at(-1) > heavy.at(-1), `light ${light} vs heavy ${heavy}`);
  assert.ok(heavy.at(-1) >= 1);
});

test('a message too large for the window is refused before it is stored or sent; a tool result too large stops the run with nothing sent', T, async (t) => {
  const { page } = await h.open(t);
  const sc = await h.scenario([
    { text: 'small answer' },
    { toolCalls: [{ id: 'c_big', name: 'dump', arguments: { path: '/huge' } }] },
    { text: 'never sent' },
  ]);
  const r = await run(page, async ({ model }) => {
    const { gh } = window;
    const dump = { ...gh.tool('dump'), execute: (inputs) => { gh.calls.push(inputs); return 'z'.repeat(40_000); } };
    const agent = await gh.Agent.open({ threadId: 'big', model, storage: { kind: 'memory' }, tools: [dump] });
    const tooLarge = await gh.error(() => agent.chat('x'.repeat(20_000)));
    const after = { count: agent.messageCount, status: agent.status() };
    const ok = await agent.chat('hello');
    const toolTurn = await gh.error(() => agent.chat('dump it'));
    const stopped = { status: agent.status(), count: agent.messageCount, calls: gh.calls.length };
    const retried = await gh.error(() => agent.retry());
    return { tooLarge, after, ok: ok.status, toolTurn, stopped, retried, callsAfterRetry: gh.calls.length };
  }, { model: sc.openai({ contextWindow: 4_000 }) });
  assert.equal(r.tooLarge?.code, 'context_overflow');
  assert.equal(r.tooLarge.retryable, false);
  assert.match(r.tooLarge.message, /context window of 4000 tokens/);
  assert.deepEqual(r.after, { count: 0, status: 'idle' }, 'nothing was stored');
  assert.equal(r.ok, 'completed');
  // The tool ran once; its result is stored; the request that would carry it is refused.
  assert.equal(r.toolTurn?.code, 'context_overflow');
  assert.deepEqual(r.stopped, { status: 'interrupted', count: 5, calls: 1 });
  assert.equal(r.retried?.code, 'context_overflow', 'retry() is refused the same way');
  assert.equal(r.callsAfterRetry, 1, 'and never runs the tool again');
  assert.equal((await sc.requests()).length, 2, 'only the requests that fit were sent');
});

test('once the window is full, later turns read no older messages again (the history is kept between calls)', T, async (t) => {
  const { page } = await h.open(t);
  const turns = 16;
  // The reported input tokens swing between far below and far above the estimate, so the
  // calibrated window shrinks and grows from one call to the next (bounded at ½× and 4×).
  const sc = await h.scenario(Array.from({ length: turns }, (_, i) => ({ text: say(i), usage: { input: i % 2 ? 100_000 : 1 } })));
  const r = await run(page, async ({ model, db, turns, texts }) => {
    const { gh } = window;
    // History pages, opens and reloads.
    const counter = gh.countMessageReads();
    try {
      const agent = await gh.Agent.open({ threadId: 'kept', model, storage: { database: db } });
      const perTurn = [];
      for (let i = 0; i < turns; i++) {
        const before = counter.reads;
        await agent.chat(texts[i]);
        perTurn.push(counter.reads - before);
      }
      return { perTurn };
    } finally {
      counter.stop();
    }
  }, { model: sc.openai({ contextWindow: 3_000 }), db: uid('db'), turns, texts: Array.from({ length: turns }, (_, i) => say(i)) });
  const sizes = (await sc.requests()).map((q) => q.body.messages.length);
  assert.ok(sizes.some((n, i) => i > 0 && n < sizes[i - 1]), `the window shrank at least once: request sizes ${sizes}`);
  // This view wrote the whole thread itself: what it trimmed did not fit, and a later
  // calibration that would make room again does not make it read those messages back.
  assert.deepEqual(r.perTurn, Array(turns).fill(0), `reads per turn ${r.perTurn}, request sizes ${sizes}`);
});

test('a reopened thread waiting for approval has its history read in the background: approving reads no messages, and approving at once reads them once', T, async (t) => {
  const { page } = await h.open(t);
  const chats = 4;
  const gated = (id) => ({ toolCalls: [{ id, name: 'delete_file', arguments: { path: `/${id}` } }] });
  const sc = await h.scenario([
    ...Array.from({ length: chats }, (_, i) => ({ text: say(i, 100) })), gated('call_a'),
    ...Array.from({ length: chats }, (_, i) => ({ text: say(i, 100) })), gated('call_b'),
    { text: 'Deleted a.' }, { text: 'Deleted b.' },
  ]);
  const r = await run(page, async ({ model, db, chats, texts }) => {
    const { gh } = window;
    const options = (threadId) => ({ threadId, model, tools: [gh.tool('delete_file', { requireApproval: true })], storage: { database: db } });
    for (const id of ['a', 'b']) {
      const agent = await gh.Agent.open(options(id));
      for (let i = 0; i < chats; i++) await agent.chat(texts[i]);
      const st = await agent.chat('delete it');
      if (st.status !== 'awaiting_approval') throw new Error(`not suspended: ${st.status}`);
      agent.free();
    }
    const counter = gh.countMessageReads();
    try {
      // Thread a: opened, the approval card shown for a while, then approved.
      const a = await gh.Agent.open(options('a'));
      const afterOpenA = counter.reads;
      await gh.sleep(300);
      const inBackground = counter.reads - afterOpenA;
      const beforeApprove = counter.reads;
      const stA = await a.submitDecisions({ call_a: 'approve' });
      const whileApprovingA = counter.reads - beforeApprove;
      const totalA = counter.reads;
      // Thread b: approved the moment it is open, while the background read is under way.
      const beforeB = counter.reads;
      const b = await gh.Agent.open(options('b'));
      const stB = await b.submitDecisions({ call_b: 'approve' });
      const totalB = counter.reads - beforeB;
      return { inBackground, whileApprovingA, totalA, totalB, statuses: [stA.status, stB.status] };
    } finally {
      counter.stop();
    }
  }, { model: sc.openai(), db: uid('db'), chats, texts: Array.from({ length: chats }, (_, i) => say(i, 100)) });
  assert.deepEqual(r.statuses, ['completed', 'completed']);
  assert.ok(r.inBackground >= 1, `the history was read after open, before any approval: ${JSON.stringify(r)}`);
  assert.equal(r.whileApprovingA, 0, `approving read no messages: ${JSON.stringify(r)}`);
  assert.equal(r.totalB, r.totalA, `approving at once waits for the read under way rather than reading again: ${JSON.stringify(r)}`);
  // Both requests after the approval carry the whole thread: 4 turns, the gated turn, the result.
  const reqs = (await sc.requests()).slice(-2);
  for (const q of reqs) {
    const roles = q.body.messages.map((m) => m.role);
    assert.deepEqual(roles, [...Array(chats).fill(['user', 'assistant']).flat(), 'user', 'assistant', 'tool'], JSON.stringify(roles));
  }
});
