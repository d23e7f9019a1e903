// Cancellation by AbortSignal (README "Errors": `aborted`): while the model hangs, mid-stream, during a
// Retry-After wait, after tools ran; string abort reasons must not break the wasm instance
// (the HTTP client, gloo-net, panics on a non-Error rejection: it only ever sees the SDK's
// own signal, src/driver/fetch.rs).

import { after, test } from 'node:test';
import assert from 'node:assert/strict';
import { run, setup, textOf, uid } from './harness.mjs';

const h = await setup();
after(() => h.close());

const T = { timeout: 60_000 };
const PANIC = /panicked|unreachable|RuntimeError|recursive use/i;

/**
 * Opens an agent (kept as window.agent), starts `method(...args)` with a signal, aborts it after
 * `abortAfterMs` with `reason` (undefined: none), and reports the error and how fast it came.
 */
function abortRun(page, model, { method = 'chat', args = ['hello'], abortAfterMs = 300, reason, db = uid('db'), tools = false, preAborted = false } = {}) {
  return run(page, async ({ model, method, args, abortAfterMs, reason, db, tools, preAborted }) => {
    const { gh } = window;
    if (!window.agent) {
      window.agent = await gh.Agent.open({ threadId: 't', model, storage: { database: db },
        tools: tools ? [gh.tool('delete_file', { requireApproval: true })] : [] });
    }
    const agent = window.agent;
    if (method === 'submitDecisions') await agent.chat('delete /x');
    const ac = new AbortController();
    const abort = () => (reason === undefined ? ac.abort() : ac.abort(reason));
    if (preAborted) abort();
    const events = gh.events();
    let abortedAt = null;
    const timer = setTimeout(() => { abortedAt = performance.now(); abort(); }, abortAfterMs);
    const t0 = performance.now();
    const error = await gh.error(() => agent[method](...args, { signal: ac.signal, onEvent: events.onEvent }));
    clearTimeout(timer);
    const settled = performance.now();
    return { error, sinceAbortMs: abortedAt === null ? null : settled - abortedAt, totalMs: settled - t0,
      status: agent.status(), last: agent.lastMessage(), messages: await agent.messages(), events: events.list,
      calls: gh.calls.length };
  }, { model, method, args, abortAfterMs, reason, db, tools, preAborted });
}

const retry = (page) => run(page, async () => {
  const state = await window.agent.retry();
  return { state, messages: await window.agent.messages(), calls: window.gh.calls.length };
});

test('abort while the model hangs: aborted quickly, thread consistent, retry() resumes', T, async (t) => {
  const { page, errors } = await h.open(t);
  const sc = await h.scenario([{ fault: { hang: true } }, { text: 'Here after all.' }]);
  const r = await abortRun(page, sc.openai());
  assert.equal(r.error?.name, 'GatehouseError');
  assert.equal(r.error.code, 'aborted');
  assert.ok(r.sinceAbortMs < 1000, `rejected ${r.sinceAbortMs} ms after abort()`);
  assert.equal(r.status, 'interrupted');
  assert.deepEqual(r.messages.map((m) => [m.role, textOf(m)]), [['user', 'hello']]);
  assert.deepEqual(r.last, r.messages[0]);
  await sc.waitRequests((q) => q[0]?.outcome === 'aborted');

  const again = await retry(page);
  assert.equal(again.state.status, 'completed');
  assert.deepEqual(again.messages.map(textOf), ['hello', 'Here after all.']);
  const reqs = await sc.requests();
  assert.equal(reqs.length, 2);
  assert.deepEqual(reqs[1].body.messages, [{ role: 'user', content: 'hello' }]);
  assert.deepEqual(errors.filter((e) => PANIC.test(e)), []);
});

test('abort while a custom provider\'s call() hangs and ignores request.signal: aborted quickly, thread consistent, retry() resumes', T, async (t) => {
  const { page, errors } = await h.open(t);
  const r = await run(page, async () => {
    const { gh } = window;
    let calls = 0;
    // The first call never settles and never looks at request.signal; the second answers.
    const call = () => (++calls === 1 ? new Promise(() => {}) : { text: 'Answered on retry.' });
    const agent = await gh.Agent.open({ threadId: 'c', model: { provider: 'custom', call }, storage: { kind: 'memory' } });
    const ac = new AbortController();
    let abortedAt = 0;
    setTimeout(() => { abortedAt = performance.now(); ac.abort(); }, 200);
    const error = await gh.error(() => agent.chat('hello', { signal: ac.signal }));
    const sinceAbortMs = performance.now() - abortedAt;
    const status = agent.status();
    const state = await agent.retry();
    return { error, sinceAbortMs, status, after: state.status, messages: await agent.messages(), calls };
  });
  assert.equal(r.error?.name, 'GatehouseError');
  assert.equal(r.error.code, 'aborted');
  assert.ok(r.sinceAbortMs < 1000, `rejected ${r.sinceAbortMs} ms after abort()`);
  assert.equal(r.status, 'interrupted', 'the user message is stored, unanswered');
  assert.equal(r.after, 'completed');
  assert.equal(r.calls, 2);
  assert.deepEqual(r.messages.map(textOf), ['hello', 'Answered on retry.']);
  assert.deepEqual(errors.filter((e) => PANIC.test(e)), []);
});

test('abort("some string reason") does not crash the wasm instance; the agent keeps working', T, async (t) => {
  const { page, errors } = await h.open(t);
  const sc = await h.scenario([{ fault: { hang: true } }, { text: 'Still alive.' }, { text: 'And again.' }]);
  const r = await abortRun(page, sc.openai(), { reason: 'some string reason' });
  assert.equal(r.error?.isError, true, `a real Error, got ${JSON.stringify(r.error)}`);
  assert.equal(r.error.name, 'GatehouseError');
  assert.equal(r.error.code, 'aborted');
  const again = await retry(page);
  assert.equal(again.state.status, 'completed');
  const more = await run(page, async () => (await window.agent.chat('more')).status);
  assert.equal(more, 'completed');
  // Other non-Error reasons: a plain object and a number.
  for (const reason of [{ not: 'an error' }, 42]) {
    const sc2 = await h.scenario([{ fault: { hang: true } }]);
    const r2 = await run(page, async ({ model, reason }) => {
      const agent = await window.gh.Agent.open({ threadId: 'other', model, storage: { kind: 'memory' } });
      const ac = new AbortController();
      setTimeout(() => ac.abort(reason), 100);
      return window.gh.error(() => agent.chat('x', { signal: ac.signal }));
    }, { model: sc2.openai(), reason });
    assert.equal(r2?.code, 'aborted', JSON.stringify(reason));
  }
  assert.deepEqual(errors.filter((e) => PANIC.test(e)), []);
});

test('abort("a string") reaches no code that panics in any phase of an HTTP call, either provider', T, async (t) => {
  const { page, errors } = await h.open(t);
  // Each phase with the request in a different place: before the headers, inside the SSE body,
  // inside a JSON body read whole, and during a Retry-After wait between two attempts.
  const phases = [
    ['waiting for headers', { fault: { hang: true } }, {}],
    // 5 events: text deltas have arrived with either wire format (Anthropic's first three
    // are message_start, content_block_start and ping).
    ['mid-stream', { text: 'one two three four five six', fault: { hangAfterEvents: 5 } }, {}],
    ['reading a JSON body', { text: 'one two three four five six', fault: { hangAfterEvents: 3 } }, { stream: false }],
    ['waiting to retry', { fault: { status: 503, retryAfter: '20' } }, {}],
  ];
  for (const provider of ['openai', 'anthropic']) {
    for (const [phase, turn, extra] of phases) {
      const label = `${provider}, ${phase}`;
      const sc = await h.scenario([turn, { text: 'unused' }]);
      const r = await run(page, async ({ model, threadId }) => {
        const { gh } = window;
        const agent = await gh.Agent.open({ threadId, model, storage: { kind: 'memory' } });
        const ac = new AbortController();
        const events = gh.events();
        let abortedAt;
        setTimeout(() => { abortedAt = performance.now(); ac.abort('the user pressed stop'); }, 400);
        const error = await gh.error(() => agent.chat('hello', { signal: ac.signal, onEvent: events.onEvent }));
        return { error, sinceAbortMs: performance.now() - abortedAt, types: events.list.map((e) => e.type),
          status: agent.status(), roles: (await agent.messages()).map((m) => m.role) };
      }, { model: sc[provider](extra), threadId: uid('t') });
      assert.equal(r.error?.isError, true, `${label}: a real Error, got ${JSON.stringify(r.error)}`);
      assert.equal(r.error.code, 'aborted', `${label}: ${JSON.stringify(r.error)}`);
      assert.ok(r.sinceAbortMs < 1000, `${label}: rejected ${r.sinceAbortMs} ms after abort()`);
      assert.equal(r.status, 'interrupted', label);
      assert.deepEqual(r.roles, ['user'], label);
      if (phase === 'mid-stream') assert.ok(r.types.includes('text_delta'), `${label}: text had streamed`);
      if (phase === 'waiting to retry') assert.ok(r.types.includes('retry'), `${label}: it was waiting to retry`);
      const reqs = await sc.waitRequests((q) => q.length >= 1 && q[0].outcome !== 'pending');
      assert.equal(reqs.length, 1, `${label}: one request`);
      assert.equal(reqs[0].stream, extra.stream ?? true, label);
      if (phase !== 'waiting to retry') assert.equal(reqs[0].outcome, 'aborted', `${label}: the request itself was aborted`);
    }
  }
  // The instance is alive: a full streamed turn over HTTP still works.
  const sc = await h.scenario([{ text: 'Still here.' }]);
  const after = await run(page, async ({ model, threadId }) => {
    const agent = await window.gh.Agent.open({ threadId, model, storage: { kind: 'memory' } });
    return (await agent.chat('still there?')).message;
  }, { model: sc.openai(), threadId: uid('t') });
  assert.equal(textOf(after), 'Still here.');
  assert.deepEqual(errors.filter((e) => PANIC.test(e)), []);
});

test('abort mid-stream: aborted, no partial assistant message stored', T, async (t) => {
  const { page } = await h.open(t);
  const sc = await h.scenario([{ text: 'one two three four five six', fault: { hangAfterEvents: 3 } }]);
  const r = await abortRun(page, sc.openai(), { abortAfterMs: 400 });
  assert.equal(r.error?.code, 'aborted');
  assert.ok(r.events.some((e) => e.type === 'text_delta'), 'some text had streamed before the abort');
  assert.ok(r.sinceAbortMs < 1000, `rejected ${r.sinceAbortMs} ms after abort()`);
  assert.equal(r.status, 'interrupted');
  assert.deepEqual(r.messages.map((m) => m.role), ['user']);
});

test('abort during a Retry-After wait: aborted at once, no second request', T, async (t) => {
  const { page } = await h.open(t);
  const sc = await h.scenario([{ fault: { status: 429, retryAfter: '20' } }, { text: 'too late' }]);
  const r = await abortRun(page, sc.openai(), { abortAfterMs: 500 });
  assert.equal(r.error?.code, 'aborted');
  assert.ok(r.events.some((e) => e.type === 'retry'), 'it was waiting to retry');
  assert.ok(r.sinceAbortMs < 1000, `rejected ${r.sinceAbortMs} ms after abort()`);
  assert.equal((await sc.requests()).length, 1);
});

test('an already aborted signal: aborted, nothing sent to the model', T, async (t) => {
  const { page } = await h.open(t);
  const sc = await h.scenario([{ text: 'never' }]);
  const r = await abortRun(page, sc.openai(), { preAborted: true, abortAfterMs: 60_000 });
  assert.equal(r.error?.code, 'aborted');
  assert.ok(r.totalMs < 1000);
  assert.equal((await sc.requests()).length, 0);
  assert.ok(['idle', 'interrupted'].includes(r.status), r.status);
});

test('abort after the approved tool ran: its result is kept, retry() calls the model without re-running it', T, async (t) => {
  const { page } = await h.open(t);
  const sc = await h.scenario([
    { toolCalls: [{ id: 'call_ab', name: 'delete_file', arguments: { path: '/x' } }] },
    { fault: { hang: true } },
    { text: 'Finished.' },
  ]);
  const r = await abortRun(page, sc.openai(), { method: 'submitDecisions', args: [{ call_ab: 'approve' }], tools: true, abortAfterMs: 400 });
  assert.equal(r.error?.code, 'aborted');
  assert.equal(r.calls, 1);
  assert.equal(r.status, 'interrupted');
  assert.deepEqual(r.messages.map((m) => m.type ?? m.role), ['user', 'tool_call', 'tool_call_result']);
  const again = await retry(page);
  assert.equal(again.state.status, 'completed');
  assert.equal(again.calls, 1, 'the tool did not run again');
  assert.deepEqual(again.messages.map((m) => m.type ?? m.role), ['user', 'tool_call', 'tool_call_result', 'assistant']);
  const reqs = await sc.requests();
  assert.equal(reqs.length, 3);
  assert.deepEqual(reqs[2].body.messages, reqs[1].body.messages, 'the same history again');
  assert.equal(reqs[2].body.messages.at(-1).role, 'tool');
});
