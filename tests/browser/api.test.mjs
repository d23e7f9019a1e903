// The API's edges (README "The JS API", "Errors"): configuration errors, storage errors, handle() bodies, the result
// string of unusual tool return values, and an empty user message.

import { after, test } from 'node:test';
import assert from 'node:assert/strict';
import { run, setup, uid } from './harness.mjs';

const h = await setup();
after(() => h.close());

const T = { timeout: 60_000 };

test('invalid configuration is a GatehouseError with code invalid_config, and opens nothing', T, async (t) => {
  const { page } = await h.open(t);
  const r = await run(page, async () => {
    const { gh } = window;
    const A = gh.Agent;
    const memory = { kind: 'memory' };
    const agent = await A.open({ threadId: 'ok', storage: memory });
    return {
      noOptions: await gh.error(() => A.open()),
      noThread: await gh.error(() => A.open({ storage: memory })),
      blankThread: await gh.error(() => A.open({ threadId: '  ', storage: memory })),
      badKind: await gh.error(() => A.open({ threadId: 't', storage: { kind: 'localStorage' } })),
      listBadKind: await gh.error(() => A.listThreads({ kind: 'localStorage' })),
      deleteBadKind: await gh.error(() => A.deleteThread('ok', { kind: 'localStorage' })),
      noModelName: await gh.error(() => A.open({ threadId: 't', model: { provider: 'openai' }, storage: memory })),
      badProvider: await gh.error(() => A.open({ threadId: 't', model: { provider: 'gemini', model: 'x' }, storage: memory })),
      customNoCall: await gh.error(() => A.open({ threadId: 't', model: { provider: 'custom' }, storage: memory })),
      dupTools: await gh.error(() => A.open({ threadId: 't', tools: [{ name: 'a' }, { name: 'a' }], storage: memory })),
      badExecute: await gh.error(() => A.open({ threadId: 't', tools: [{ name: 'a', execute: 'nope' }], storage: memory })),
      badMaxSteps: await gh.error(() => A.open({ threadId: 't', maxSteps: 0, storage: memory })),
      chatNumber: await gh.error(() => agent.chat(42)),
      badSignal: await gh.error(() => agent.chat('x', { signal: 'nope' })),
      handleEmpty: await gh.error(() => agent.handle({})),
      decisionsNotSuspended: await gh.error(() => agent.submitDecisions({ x: 'approve' })),
      resultsNotSuspended: await gh.error(() => agent.submitToolResults({ x: 1 })),
      nothingToRetry: await gh.error(() => agent.retry()),
      messages: await agent.messages(),
    };
  });
  for (const k of ['noOptions', 'noThread', 'blankThread', 'badKind', 'listBadKind', 'deleteBadKind', 'noModelName', 'badProvider', 'customNoCall',
    'dupTools', 'badExecute', 'badMaxSteps', 'chatNumber', 'badSignal', 'handleEmpty']) {
    assert.equal(r[k]?.isError, true, `${k}: a real Error`);
    assert.equal(r[k].name, 'GatehouseError', k);
    assert.equal(r[k].code, 'invalid_config', k);
    assert.equal(r[k].retryable, false, k);
    assert.ok(r[k].message.length > 10, k);
  }
  assert.equal(r.decisionsNotSuspended?.code, 'not_suspended');
  assert.equal(r.resultsNotSuspended?.code, 'not_suspended');
  assert.equal(r.nothingToRetry?.code, 'nothing_to_retry');
  assert.deepEqual(r.messages, [], 'no refused call stored anything');
});

test('a database that is not Gatehouse\'s (other stores, newer version) is a storage error, not a crash', T, async (t) => {
  const { page } = await h.open(t);
  const r = await run(page, async ({ db }) => {
    const { gh } = window;
    const make = (name, version, stores) => new Promise((resolve, reject) => {
      const req = indexedDB.open(name, version);
      req.onupgradeneeded = () => stores.forEach((s) => req.result.createObjectStore(s));
      req.onsuccess = () => { req.result.close(); resolve(); };
      req.onerror = () => reject(req.error);
    });
    await make(`${db}-foreign`, 1, ['something_else']);
    await make(`${db}-newer`, 4, ['threads', 'messages']);
    return {
      foreign: await gh.error(() => gh.Agent.open({ threadId: 't', storage: { database: `${db}-foreign` } })),
      newer: await gh.error(() => gh.Agent.open({ threadId: 't', storage: { database: `${db}-newer` } })),
      stillWorks: (await (await gh.Agent.open({ threadId: 't', storage: { database: db } })).chat('hello demo')).status,
    };
  }, { db: uid('db') });
  for (const k of ['foreign', 'newer']) {
    assert.equal(r[k]?.name, 'GatehouseError', k);
    assert.equal(r[k].code, 'storage', k);
  }
  assert.match(r.foreign.message, /threads/);
  assert.equal(r.stillWorks, 'completed');
});

test('tool return values become result strings: undefined/null → "null", numbers and dates JSON, non-JSON → tool_error', T, async (t) => {
  const { page } = await h.open(t);
  const ids = ['undef', 'nul', 'num', 'str', 'obj', 'date', 'bigint', 'cycle'];
  const sc = await h.scenario([{ toolCalls: ids.map((id) => ({ id, name: id, arguments: {} })) }, { text: 'ok' }]);
  const r = await run(page, async ({ model, db }) => {
    const cycle = {};
    cycle.self = cycle;
    const values = { undef: undefined, nul: null, num: 42, str: 'plain "text"', obj: { a: [1, { b: null }] }, date: new Date(0), bigint: 10n, cycle };
    const tools = Object.entries(values).map(([name, v]) => ({ name, execute: async () => v }));
    const agent = await window.gh.Agent.open({ threadId: 't', model, storage: { database: db }, tools });
    const state = await agent.chat('run them all');
    return { state: state.status, results: Object.fromEntries((await agent.messages())[2].tools.map((e) => [e.name, e.result])) };
  }, { model: sc.openai(), db: uid('db') });
  assert.equal(r.state, 'completed');
  assert.equal(r.results.undef, 'null');
  assert.equal(r.results.nul, 'null');
  assert.equal(r.results.num, '42');
  assert.equal(r.results.str, 'plain "text"', 'strings are kept as they are');
  assert.equal(r.results.obj, '{"a":[1,{"b":null}]}');
  assert.equal(r.results.date, '1970-01-01T00:00:00.000Z');
  for (const k of ['bigint', 'cycle']) assert.equal(JSON.parse(r.results[k]).error, 'tool_error', k);
  const [, req] = await sc.requests();
  assert.deepEqual(req.body.messages.filter((m) => m.role === 'tool').map((m) => m.content), ids.map((id) => r.results[id]));
});

test('an empty user message never reaches the model as an empty conversation', {
  ...T,
}, async (t) => {
  const { page } = await h.open(t);
  const sc = await h.scenario([{ text: 'ok' }], { repeat: true });
  const r = await run(page, async ({ model, db }) => {
    const agent = await window.gh.Agent.open({ threadId: 't', model, storage: { database: db } });
    const error = await window.gh.error(() => agent.chat(''));
    return { error, messages: await agent.messages() };
  }, { model: sc.openai(), db: uid('db') });
  const reqs = await sc.requests();
  assert.ok(reqs.every((q) => q.body.messages.length > 0), `requests sent: ${JSON.stringify(reqs.map((q) => q.body.messages))}`);
  if (r.error) assert.deepEqual(r.messages, [], 'a refused message is not stored');
});

test('values across the boundary: integers beyond 2^53 arrive rounded (not null), ctx and policy updates typed, bad storage kinds refused', T, async (t) => {
  const { page } = await h.open(t);
  // Arguments as the model wrote them: JSON text with integers JS numbers cannot hold exactly.
  const args = '{"path": "/big", "id": 12345678901234567890, "neg": -9007199254740993}';
  const sc = await h.scenario([{ toolCalls: [{ id: 'big_1', name: 'lookup', arguments: args }] }, { text: 'ok' }]);
  const r = await run(page, async ({ model, db }) => {
    const { gh } = window;
    const seen = {};
    const lookup = gh.tool('lookup', {
      parameters: { type: 'object' },
      approvalPolicy: (inputs, ctx) => { seen.policy = { inputs, ctx: { ...ctx } }; return true; },
      execute: (inputs, ctx) => { seen.execute = { inputs, keys: Object.keys(ctx), signal: ctx.signal instanceof AbortSignal, approval: ctx.approval }; return 'done'; },
    });
    const agent = await gh.Agent.open({ threadId: 't', model, storage: { database: db }, tools: [lookup] });
    const events = gh.events();
    const first = await agent.chat('look it up', { onEvent: events.onEvent });
    const pending = agent.pendingTools();
    const last = agent.lastMessage();
    const done = await agent.submitDecisions({ big_1: 'approve' }, { signal: new AbortController().signal });
    // setToolPolicy: left out and undefined keep a field, null resets it, a string is refused.
    await agent.setToolPolicy('lookup', { enabled: false, autoApprove: true });
    await agent.setToolPolicy('lookup', { enabled: undefined });
    const kept = agent.toolPolicies().lookup;
    await agent.setToolPolicy('lookup', { autoApprove: null });
    const reset = agent.toolPolicies().lookup;
    const badPolicy = await gh.error(() => agent.setToolPolicy('lookup', { enabled: 'yes' }));
    const badKind = await gh.error(() => gh.Agent.listThreads({ kind: 'localStorage' }));
    const badLimit = await gh.error(() => agent.messages({ limit: 'ten' }));
    return { seen, first: first.status, pending, last, done: done.status, events: events.list.filter((e) => !e.type.startsWith('tool_call_')).map((e) => e.type), kept, reset, badPolicy, badKind, badLimit };
  }, { model: sc.openai(), db: uid('db') });
  const want = { path: '/big', id: 12345678901234567890, neg: -9007199254740993 };
  assert.equal(r.first, 'awaiting_approval');
  assert.deepEqual(r.seen.policy.inputs, want, 'the policy gets the numbers as JSON.parse reads them');
  assert.deepEqual(r.seen.policy.ctx, { callId: 'big_1', threadId: 't' }, 'a policy gets no signal');
  assert.deepEqual(r.pending[0].inputs, want);
  assert.deepEqual(r.last.tools[0].inputs, want);
  assert.equal(r.done, 'completed');
  // An approved call's ctx says what was decided (README "Approvals your backend can verify"):
  // unsigned on a local thread.
  const { approval } = r.seen.execute;
  assert.deepEqual(r.seen.execute, { inputs: want, keys: ['callId', 'threadId', 'signal', 'approval'], signal: true, approval });
  assert.deepEqual({ ...approval, at: typeof approval.at },
    { signed: false, callId: 'big_1', tool: 'lookup', decision: 'approve', decidedBy: null, at: 'number', receipt: null });
  assert.deepEqual(r.events, ['message', 'model_call_started', 'model_call_ended', 'message', 'awaiting_approval']);
  assert.deepEqual(r.kept, { enabled: false, autoApprove: true });
  assert.deepEqual(r.reset, { enabled: false, autoApprove: false });
  for (const k of ['badPolicy', 'badKind', 'badLimit']) assert.equal(r[k]?.code, 'invalid_config', k);
  assert.match(r.badKind.message, /localStorage/);
});
