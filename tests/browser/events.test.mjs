// Streaming events (onEvent): text deltas that add up to the stored text, tool-call deltas that
// reassemble the arguments, message / message_updated / tool_result / awaiting_approval /
// completed in a usable order, and a throwing handler that cannot break the run.

import { after, test } from 'node:test';
import assert from 'node:assert/strict';
import { run, setup, textOf, uid } from './harness.mjs';

const h = await setup();
after(() => h.close());

const T = { timeout: 60_000 };

/** Event types in order, consecutive repeats collapsed. */
const shape = (events) => events.map((e) => e.type).filter((x, i, a) => i === 0 || a[i - 1] !== x);

for (const provider of ['openai', 'anthropic']) {
  test(`${provider} stream: events of a suspended turn and of the decision`, T, async (t) => {
    const { page } = await h.open(t);
    const path = '/tmp/a b/ünïcode — "quoted".txt';
    const sc = await h.scenario([
      { text: ['Let ', 'me ', 'check ', 'that.'], toolCalls: [{ id: 'call_ev', name: 'delete_file', arguments: { path } }], argChunk: 3 },
      { text: ['All ', 'done', '.'] },
    ]);
    const r = await run(page, async ({ model, db }) => {
      const { gh } = window;
      const agent = await gh.Agent.open({ threadId: 'ev', model, storage: { database: db }, tools: [gh.tool('delete_file', { requireApproval: true })] });
      const e1 = gh.events();
      const first = await agent.chat('check it', { onEvent: e1.onEvent });
      const e2 = gh.events();
      const done = await agent.submitDecisions({ call_ev: 'approve' }, { onEvent: e2.onEvent });
      return { first, done, e1: e1.list, e2: e2.list, messages: await agent.messages() };
    }, { model: provider === 'openai' ? sc.openai() : sc.anthropic(), db: uid('db') });

    // The suspended turn.
    assert.deepEqual(shape(r.e1), ['message', 'model_call_started', 'text_delta', 'tool_call_started', 'tool_call_delta',
      'model_call_ended', 'message', 'awaiting_approval']);
    const deltas = r.e1.filter((e) => e.type === 'text_delta').map((e) => e.delta);
    assert.deepEqual(deltas, ['Let ', 'me ', 'check ', 'that.'], 'one event per streamed delta');
    assert.equal(deltas.join(''), textOf(r.first.message));
    assert.deepEqual(r.e1.find((e) => e.type === 'tool_call_started'), { type: 'tool_call_started', index: 0, callId: 'call_ev', name: 'delete_file' });
    const argDeltas = r.e1.filter((e) => e.type === 'tool_call_delta');
    assert.ok(argDeltas.length >= 5, `arguments arrive in many deltas (${argDeltas.length})`);
    assert.ok(argDeltas.every((e) => e.index === 0));
    assert.deepEqual(JSON.parse(argDeltas.map((e) => e.delta).join('')), { path });
    const [userEv, callEv] = r.e1.filter((e) => e.type === 'message');
    assert.deepEqual(userEv.message, r.messages[0]);
    assert.deepEqual(callEv.message, r.first.message);
    assert.deepEqual(r.e1.at(-1), { type: 'awaiting_approval', message: r.first.message });
    // The model call's end carries what the stored answer says of it.
    const ended = r.e1.find((e) => e.type === 'model_call_ended');
    assert.equal(ended.ok, true);
    assert.deepEqual(ended.usage, r.first.message.usage);
    assert.equal(ended.stopReason, provider === 'openai' ? 'tool_calls' : 'tool_use', "the provider's own stop reason");
    assert.deepEqual(r.e1.find((e) => e.type === 'model_call_started'), { type: 'model_call_started' });

    // The decision and the rest of the run.
    assert.deepEqual(shape(r.e2), ['message_updated', 'tool_started', 'tool_result', 'message', 'model_call_started', 'text_delta',
      'model_call_ended', 'message', 'completed']);
    const updated = r.e2.find((e) => e.type === 'message_updated').message;
    assert.equal(updated.__id, r.first.message.__id);
    assert.equal(updated.tools[0].approval, 'approved');
    assert.deepEqual(r.e2.find((e) => e.type === 'tool_started'),
      { type: 'tool_started', callId: 'call_ev', name: 'delete_file', inputs: { path } });
    assert.deepEqual(r.e2.find((e) => e.type === 'tool_result'),
      { type: 'tool_result', callId: 'call_ev', name: 'delete_file', ok: true, result: { done: 'delete_file', path } });
    const [resultEv, answerEv] = r.e2.filter((e) => e.type === 'message');
    assert.deepEqual(resultEv.message, r.messages[2]);
    assert.deepEqual(answerEv.message, r.messages[3]);
    assert.equal(r.e2.filter((e) => e.type === 'text_delta').map((e) => e.delta).join(''), 'All done.');
    assert.deepEqual(r.e2.at(-1), { type: 'completed', message: r.done.message });
    assert.deepEqual(r.done.message, r.messages[3]);
  });
}

test('a throwing onEvent handler is reported on the console and does not stop the run', T, async (t) => {
  const { page, errors } = await h.open(t);
  const sc = await h.scenario([{ text: 'Still fine.' }]);
  const r = await run(page, async ({ model }) => {
    const agent = await window.gh.Agent.open({ threadId: 't', model, storage: { kind: 'memory' } });
    let seen = 0;
    const state = await agent.chat('hi', { onEvent: () => { seen++; throw new Error('handler bug'); } });
    return { state, seen, messages: await agent.messages() };
  }, { model: sc.openai() });
  assert.equal(r.state.status, 'completed');
  assert.equal(textOf(r.state.message), 'Still fine.');
  assert.ok(r.seen >= 3);
  assert.equal(r.messages.length, 2);
  assert.ok(errors.some((e) => e.includes('onEvent handler threw')), JSON.stringify(errors));
});
