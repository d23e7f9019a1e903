// Injected model-server faults (README "Approval semantics" 8, "Errors"): 429 with Retry-After, 5xx until the retries are
// used up and retry() afterwards, dropped and truncated streams, error events mid-stream,
// non-retryable errors. Every case checks the thread stays consistent.

import { after, test } from 'node:test';
import assert from 'node:assert/strict';
import { run, setup, textOf, uid } from './harness.mjs';

const h = await setup();
after(() => h.close());

const T = { timeout: 60_000 };

/** Opens an agent on `model` and chats `text` with events; returns state or error, and the thread. */
function chatOnce(page, model, { text = 'hello', db = uid('db') } = {}) {
  return run(page, async ({ model, db, text }) => {
    const { gh } = window;
    const agent = await gh.Agent.open({ threadId: 't', model, storage: { database: db } });
    window.agent = agent;
    const events = gh.events();
    const t0 = performance.now();
    let state = null;
    const error = await gh.error(async () => { state = await agent.chat(text, { onEvent: events.onEvent }); });
    return { state, error, ms: performance.now() - t0, events: events.list, status: agent.status(),
      last: agent.lastMessage(), messages: await agent.messages(), rows: (await gh.dumpDb(db)).stores.messages.rows.length };
  }, { model, db, text });
}

/** agent.retry() on the agent chatOnce left in the page. */
const retryOnce = (page) => run(page, async () => {
  const state = await window.agent.retry();
  return { state, messages: await window.agent.messages(), status: window.agent.status() };
});

test('429 with Retry-After: a retry event, the same request sent twice, then the answer', T, async (t) => {
  const { page } = await h.open(t);
  const sc = await h.scenario([{ fault: { status: 429, retryAfter: '1' } }, { text: 'After the rate limit.' }]);
  const r = await chatOnce(page, sc.openai());
  assert.equal(r.error, null);
  assert.equal(r.state.status, 'completed');
  assert.equal(textOf(r.state.message), 'After the rate limit.');
  const retries = r.events.filter((e) => e.type === 'retry');
  assert.equal(retries.length, 1);
  assert.equal(retries[0].attempt, 1);
  assert.equal(retries[0].delayMs, 1000, 'Retry-After: 1 is honoured');
  assert.equal(retries[0].error.code, 'provider');
  assert.ok(r.ms >= 950, `waited ${r.ms} ms`);
  const reqs = await sc.requests();
  assert.deepEqual(reqs.map((x) => x.outcome), ['http-429', 'completed']);
  assert.deepEqual(reqs[1].body, reqs[0].body, 'the same request again');
  assert.deepEqual(r.messages.map(textOf), ['hello', 'After the rate limit.']);
});

test('500 until the retries are used up: provider error with status and body, message kept; retry() answers without duplicating it', T, async (t) => {
  const { page } = await h.open(t);
  const sc = await h.scenario([{ fault: { status: 500 } }], { repeat: true });
  const r = await chatOnce(page, sc.openai({ maxRetries: 2 }), { text: 'please answer' });
  assert.equal(r.state, null);
  assert.equal(r.error.name, 'GatehouseError');
  assert.equal(r.error.code, 'provider');
  assert.equal(r.error.status, 500);
  assert.equal(r.error.retryable, true);
  assert.match(r.error.body, /server_error/);
  assert.ok(r.error.body.length <= 500);
  assert.deepEqual(r.events.filter((e) => e.type === 'retry').map((e) => e.attempt), [1, 2]);
  assert.deepEqual((await sc.requests()).map((x) => x.outcome), ['http-500', 'http-500', 'http-500']);
  assert.equal(r.status, 'interrupted');
  assert.equal(r.rows, 1, 'the user message is stored');
  assert.deepEqual(r.messages.map((m) => [m.role, textOf(m)]), [['user', 'please answer']]);
  assert.deepEqual(r.last, r.messages[0]);

  await sc.script([{ text: 'Recovered.' }]);
  const again = await retryOnce(page);
  assert.equal(again.state.status, 'completed');
  assert.equal(again.status, 'idle');
  assert.deepEqual(again.messages.map((m) => [m.role, textOf(m)]), [['user', 'please answer'], ['assistant', 'Recovered.']]);
  assert.equal(again.messages[0].__id, r.messages[0].__id);
  const reqs = await sc.requests();
  assert.equal(reqs.length, 1);
  assert.deepEqual(reqs[0].body.messages, [{ role: 'user', content: 'please answer' }], 'no duplicated user message');
  const nothing = await run(page, () => window.gh.error(() => window.agent.retry()));
  assert.equal(nothing?.code, 'nothing_to_retry');
});

test('a 400 is not retried: provider error, one request', T, async (t) => {
  const { page } = await h.open(t);
  const sc = await h.scenario([{ fault: { status: 400, message: 'bad things in the request' } }, { text: 'never' }]);
  const r = await chatOnce(page, sc.openai());
  assert.equal(r.error?.code, 'provider');
  assert.equal(r.error.status, 400);
  assert.equal(r.error.retryable, false);
  assert.match(r.error.message, /bad things in the request/);
  assert.equal(r.events.filter((e) => e.type === 'retry').length, 0);
  assert.equal((await sc.requests()).length, 1);
  assert.equal(r.status, 'interrupted');
});

test('connection dropped mid-stream: retried, the answer has nothing of the dropped attempt', T, async (t) => {
  const { page } = await h.open(t);
  const sc = await h.scenario([{ text: 'Lost words that never finish', fault: { dropAfterEvents: 3 } }, { text: 'Second try.' }]);
  const r = await chatOnce(page, sc.openai());
  assert.equal(r.error, null);
  assert.equal(textOf(r.state.message), 'Second try.');
  assert.deepEqual(r.messages.map(textOf), ['hello', 'Second try.']);
  const retry = r.events.find((e) => e.type === 'retry');
  assert.equal(retry?.error.code, 'network');
  assert.deepEqual((await sc.waitRequests((q) => q.length === 2 && q[0].outcome !== 'pending')).map((x) => x.outcome), ['dropped', 'completed']);
});

test('connection dropped with maxRetries 0: network error, thread interrupted with the user message as tail; retry() recovers', T, async (t) => {
  const { page } = await h.open(t);
  const sc = await h.scenario([{ text: 'Lost words that never finish', fault: { dropAfterEvents: 3 } }]);
  const r = await chatOnce(page, sc.openai({ maxRetries: 0 }), { text: 'keep me' });
  assert.equal(r.error?.name, 'GatehouseError');
  assert.equal(r.error.code, 'network');
  assert.equal(r.error.retryable, true);
  assert.equal(r.status, 'interrupted');
  assert.deepEqual(r.last, r.messages[0]);
  assert.deepEqual(r.messages.map((m) => [m.role, textOf(m)]), [['user', 'keep me']]);
  assert.equal(r.rows, 1);
  await sc.script([{ text: 'Back online.' }]);
  const again = await retryOnce(page);
  assert.deepEqual(again.messages.map(textOf), ['keep me', 'Back online.']);
  assert.deepEqual((await sc.requests())[0].body.messages, [{ role: 'user', content: 'keep me' }]);
});

test('truncated stream: cut before finish_reason it is retried (network error with maxRetries 0); only [DONE] missing is accepted', T, async (t) => {
  const { page } = await h.open(t);
  // truncate: 2 = the role chunk and one text chunk, then a clean end: no finish_reason, no [DONE].
  const sc = await h.scenario([{ text: 'cut short here', fault: { truncate: 2 } }, { text: 'Complete answer.' }]);
  const r = await chatOnce(page, sc.openai({ maxRetries: 1 }));
  assert.equal(r.error, null);
  assert.deepEqual(r.messages.map(textOf), ['hello', 'Complete answer.']);
  assert.equal(r.events.find((e) => e.type === 'retry')?.error.code, 'network');
  assert.deepEqual((await sc.requests()).map((x) => x.outcome), ['truncated', 'completed']);

  const sc2 = await h.scenario([{ text: 'cut short here', fault: { truncate: 2 } }]);
  const r2 = await chatOnce(page, sc2.openai({ maxRetries: 0 }));
  assert.equal(r2.error?.code, 'network');
  assert.equal(r2.error.retryable, true);
  assert.equal(r2.status, 'interrupted');
  assert.deepEqual(r2.messages.map(textOf), ['hello']);

  // Only [DONE] left out: finish_reason arrived, so the answer is complete (deliberate leniency).
  const sc3 = await h.scenario([{ text: 'all of it', fault: { truncate: true } }, { text: 'unused' }]);
  const r3 = await chatOnce(page, sc3.openai({ maxRetries: 1 }));
  assert.equal(r3.error, null);
  assert.equal(textOf(r3.state.message), 'all of it');
  assert.equal((await sc3.requests()).length, 1);
});

test('OpenAI error event mid-stream (server_error): retried, then the answer', T, async (t) => {
  const { page } = await h.open(t);
  const sc = await h.scenario([{ text: 'half of this answer', fault: { streamError: { afterEvents: 2 } } }, { text: 'Clean answer.' }]);
  const r = await chatOnce(page, sc.openai({ maxRetries: 1 }));
  assert.equal(r.error, null);
  assert.equal(textOf(r.state.message), 'Clean answer.');
  assert.equal(r.events.find((e) => e.type === 'retry')?.error.code, 'provider');
  assert.deepEqual((await sc.requests()).map((x) => x.outcome), ['stream-error', 'completed']);
});

test('Anthropic overloaded_error event mid-stream: retried; with maxRetries 0 a provider error', T, async (t) => {
  const { page } = await h.open(t);
  const sc = await h.scenario([{ text: 'partial answer here', fault: { streamError: { type: 'overloaded_error' } } }, { text: 'Recovered answer.' }]);
  const r = await chatOnce(page, sc.anthropic({ maxRetries: 1 }));
  assert.equal(r.error, null);
  assert.equal(textOf(r.state.message), 'Recovered answer.');
  assert.equal(r.events.filter((e) => e.type === 'retry').length, 1);
  assert.deepEqual((await sc.requests()).map((x) => x.outcome), ['stream-error', 'completed']);

  const sc2 = await h.scenario([{ text: 'partial answer here', fault: { streamError: { type: 'overloaded_error' } } }]);
  const r2 = await chatOnce(page, sc2.anthropic({ maxRetries: 0 }));
  assert.equal(r2.error?.code, 'provider');
  assert.equal(r2.error.retryable, true);
  assert.match(r2.error.message, /overloaded/i);
  assert.equal(r2.status, 'interrupted');
  assert.deepEqual(r2.messages.map(textOf), ['hello']);
});

test('stream: false: one JSON body, no stream flag in the request', T, async (t) => {
  const { page } = await h.open(t);
  const sc = await h.scenario([{ text: 'A non-streamed answer.' }]);
  const r = await chatOnce(page, sc.openai({ stream: false }));
  assert.equal(r.error, null);
  assert.equal(textOf(r.state.message), 'A non-streamed answer.');
  const [req] = await sc.requests();
  assert.equal(req.stream, false);
  assert.equal('stream' in req.body, false);
  assert.equal(req.headers.accept, 'application/json');
});
