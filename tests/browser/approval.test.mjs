// The approval flow through the JS API (README "The thread JSON", "Approval semantics" 2–5): suspend, the tail JSON, approve,
// reject with and without a reason, partial decisions and revisions, invalid payloads.

import { after, test } from 'node:test';
import assert from 'node:assert/strict';
import { rejection, run, setup, textOf, uid } from './harness.mjs';

const h = await setup();
after(() => h.close());

const T = { timeout: 60_000 };
const MESSAGE_KEYS_TOOL_CALL = ['__id', 'resume_token', 'role', 'content', 'usage', 'type', 'tools'];
const GATED_ENTRY_KEYS = ['callId', 'name', 'description', 'parameters', 'inputs', 'result',
  'approval', 'approvalReason', 'rejectReason'];

test('approve: streamed tool call in small deltas, suspend, tail JSON, execute once, final answer', T, async (t) => {
  const { page } = await h.open(t);
  const path = 'C:/old logs/2024 — ünïcödé.txt';
  const sc = await h.scenario([
    { text: 'I will delete it.', toolCalls: [{ id: 'call_del_1', name: 'delete_file', arguments: { path } }], argChunk: 2 },
    { text: 'The file is deleted.' },
  ]);
  const db = uid('db');
  const r = await run(page, async ({ model, db, path }) => {
    const { gh } = window;
    const agent = await gh.Agent.open({
      threadId: 'thread_1', model, instructions: 'You are careful.',
      tools: [gh.tool('delete_file', { requireApproval: true })],
      storage: { kind: 'indexeddb', database: db },
    });
    const first = await agent.chat('Clean up the old logs');
    const pending = agent.pendingTools();
    const status = agent.status();
    const last = agent.lastMessage();
    const callsBefore = gh.calls.length;
    const dumpPending = await gh.dumpDb(db);
    const decided = await agent.submitDecisions({ call_del_1: 'approve' });
    return {
      first, pending, status, last, callsBefore, dumpPending, decided,
      statusAfter: agent.status(), calls: gh.calls, messages: await agent.messages(),
      dump: await gh.dumpDb(db), pendingAfter: agent.pendingTools(), path,
    };
  }, { model: sc.openai(), db, path });

  // The suspended tail, exactly as README "The thread JSON" shapes it.
  assert.equal(r.first.status, 'awaiting_approval');
  const tail = r.first.message;
  assert.deepEqual(Object.keys(tail), MESSAGE_KEYS_TOOL_CALL);
  assert.match(tail.__id, /^msg_[1-9]\d*$/);
  assert.ok(BigInt(tail.__id.slice(4)) < 2n ** 63n);
  assert.match(tail.resume_token, /^run_[0-9a-f]{16}$/);
  assert.equal(tail.role, 'assistant');
  assert.equal(tail.type, 'tool_call');
  assert.deepEqual(tail.content, [{ type: 'text', content: 'I will delete it.', meta: [] }]);
  assert.equal(tail.tools.length, 1);
  assert.deepEqual(Object.keys(tail.tools[0]), GATED_ENTRY_KEYS);
  assert.deepEqual(tail.tools[0], {
    callId: 'call_del_1', name: 'delete_file', description: 'The delete_file tool', parameters: [],
    inputs: { path }, result: null, approval: 'pending', approvalReason: null, rejectReason: null,
  });
  // pendingTools(): the tail's entry, and its approver-rule progress (none on a local thread:
  // one approval needed, by anyone).
  assert.deepEqual(r.pending, [{ ...tail.tools[0], approvals: [], needed: 1, blocked: null }]);
  assert.equal(r.status, 'awaiting_approval');
  assert.deepEqual(r.last, tail);
  assert.equal(r.callsBefore, 0, 'a gated tool must not run before the decision');

  // Durable before chat() returned: the stored tail row is that message, byte for byte.
  const rows = r.dumpPending.stores.messages.rows.filter((x) => x.thread === 'thread_1');
  assert.deepEqual(rows.map((x) => x.seq), [1, 2]);
  assert.equal(rows[1].json, JSON.stringify(tail));
  const rec = r.dumpPending.stores.threads.rows.find((x) => x.id === 'thread_1');
  assert.equal(rec.messageCount, 2);
  // The journal: no result yet, and the gated call needs a recorded decision to run.
  // And the open audit record: what the entry cannot tell (README "Approval semantics" 12).
  const { audit, ...journal } = rec.run;
  assert.deepEqual(journal, { callMessageId: tail.__id, results: [], gated: ['call_del_1'] });
  assert.deepEqual(audit, [{ seq: 1, callId: 'call_del_1', requestedAt: audit[0].requestedAt }]);
  assert.ok(Number.isInteger(audit[0].requestedAt));

  // Approved: executed once, with exactly the approved inputs; then the model's answer.
  assert.equal(r.decided.status, 'completed');
  assert.equal(textOf(r.decided.message), 'The file is deleted.');
  assert.equal(r.statusAfter, 'idle');
  assert.deepEqual(r.pendingAfter, []);
  assert.deepEqual(r.calls, [{ tool: 'delete_file', callId: 'call_del_1', threadId: 'thread_1', inputs: { path } }]);
  const [user, call, result, answer] = r.messages;
  assert.equal(r.messages.length, 4);
  assert.deepEqual(user.content, [{ type: 'text', content: 'Clean up the old logs', meta: [] }]);
  assert.equal(user.type, undefined);
  assert.equal(call.__id, tail.__id);
  assert.equal(call.resume_token, tail.resume_token, 'resume_token stays after the decision');
  assert.equal(call.tools[0].approval, 'approved');
  assert.equal(call.tools[0].rejectReason, null);
  assert.equal(result.type, 'tool_call_result');
  assert.equal(result.role, 'user');
  assert.deepEqual(result.content, []);
  assert.equal(result.tools[0].result, JSON.stringify({ done: 'delete_file', path }));
  assert.equal(answer.role, 'assistant');
  assert.equal(answer.stop_reason, 'stop');
  assert.deepEqual(Object.keys(answer.usage), ['input_tokens', 'output_tokens', 'cached_input_tokens', 'reasoning_tokens']);
  const ids = r.messages.map((m) => BigInt(m.__id.slice(4)));
  assert.ok(ids.every((id, i) => i === 0 || id > ids[i - 1]), 'ids are increasing');
  assert.equal(r.dump.stores.threads.rows[0].run, null);
  assert.deepEqual(r.dump.stores.messages.rows.map((x) => JSON.parse(x.json)), r.messages);

  // What the model saw.
  const reqs = await sc.requests();
  assert.equal(reqs.length, 2);
  assert.equal(reqs[0].body.stream, true);
  assert.equal(reqs[0].body.model, 'gpt-test');
  assert.deepEqual(reqs[0].body.messages, [
    { role: 'system', content: 'You are careful.' },
    { role: 'user', content: 'Clean up the old logs' },
  ]);
  assert.deepEqual(reqs[0].body.tools.map((x) => x.function.name), ['delete_file']);
  assert.deepEqual(reqs[1].body.messages.slice(2), [
    { role: 'assistant', content: 'I will delete it.', tool_calls: [
      { id: 'call_del_1', type: 'function', function: { name: 'delete_file', arguments: JSON.stringify({ path }) } }] },
    { role: 'tool', tool_call_id: 'call_del_1', content: JSON.stringify({ done: 'delete_file', path }) },
  ]);
});

test('reject without and with a reason: the model gets the exact text, the tool never runs', T, async (t) => {
  const { page } = await h.open(t);
  const sc = await h.scenario([
    { toolCalls: [{ id: 'call_a', name: 'delete_file', arguments: { path: '/a' } }] },
    { text: 'OK, I will not.' },
    { toolCalls: [{ id: 'call_b', name: 'delete_file', arguments: { path: '/b' } }] },
    { text: 'Understood.' },
  ]);
  const r = await run(page, async ({ model, db }) => {
    const { gh } = window;
    const agent = await gh.Agent.open({ threadId: 't', model, tools: [gh.tool('delete_file', { requireApproval: true })], storage: { database: db } });
    const out = [];
    out.push(await agent.chat('delete /a'));
    out.push(await agent.submitDecisions({ call_a: 'reject' }));
    out.push(await agent.chat('delete /b'));
    out.push(await agent.submitDecisions({ call_b: ['reject', 'Keep /b, archive it instead'] }));
    return { out, calls: gh.calls, messages: await agent.messages() };
  }, { model: sc.openai(), db: uid('db') });

  assert.deepEqual(r.out.map((s) => s.status), ['awaiting_approval', 'completed', 'awaiting_approval', 'completed']);
  assert.deepEqual(r.calls, []);
  const reqs = await sc.requests();
  assert.equal(reqs.length, 4);
  const toolMsg = (req) => req.body.messages.filter((m) => m.role === 'tool');
  assert.deepEqual(toolMsg(reqs[1]), [{ role: 'tool', tool_call_id: 'call_a', content:
    'TOOL NOT EXECUTED. The user rejected this action. User instruction: No specific instruction provided.. ' +
    'Do not attempt this tool again. Follow the user\'s instruction or reconsider your plan.' }]);
  assert.deepEqual(toolMsg(reqs[3]).at(-1), { role: 'tool', tool_call_id: 'call_b', content: rejection('Keep /b, archive it instead') });

  // The tails keep the final states as history; the results follow in tool_call_result.
  const calls = r.messages.filter((m) => m.type === 'tool_call');
  assert.deepEqual(calls.map((m) => [m.tools[0].approval, m.tools[0].rejectReason]),
    [['rejected', null], ['rejected', 'Keep /b, archive it instead']]);
  const results = r.messages.filter((m) => m.type === 'tool_call_result');
  assert.deepEqual(results.map((m) => m.tools[0].result), [rejection(), rejection('Keep /b, archive it instead')]);
});

test('partial decisions on two gated calls: tail rewritten in place, revisable, then both run in message order', T, async (t) => {
  const { page } = await h.open(t);
  const sc = await h.scenario([
    { toolCalls: [
      { id: 'call_1', name: 'delete_file', arguments: { path: '/one' } },
      { id: 'call_2', name: 'move_file', arguments: { path: '/two' } },
    ] },
    { text: 'Both done.' },
  ]);
  const db = uid('db');
  const r = await run(page, async ({ model, db }) => {
    const { gh } = window;
    const agent = await gh.Agent.open({
      threadId: 't', model, storage: { database: db },
      tools: [gh.tool('delete_file', { requireApproval: true }), gh.tool('move_file', { requireApproval: true })],
    });
    const snap = async (label, state) => ({
      label, status: state?.status, tail: agent.lastMessage(), pending: agent.pendingTools().map((e) => e.callId),
      count: agent.messageCount, stored: (await gh.dumpDb(db)).stores.messages.rows.length, calls: gh.calls.length,
    });
    const steps = [await snap('chat', await agent.chat('tidy up'))];
    steps.push(await snap('approve 1', await agent.submitDecisions({ call_1: 'approve' })));
    steps.push(await snap('revise 1 to reject', await agent.submitDecisions({ call_1: ['reject', 'not that one'] })));
    steps.push(await snap('revise 1 to approve', await agent.submitDecisions({ call_1: 'approve' })));
    // Refused payloads stage nothing: an unknown id, an "approve with comment".
    const unknown = await gh.error(() => agent.submitDecisions({ call_2: 'approve', call_9: 'approve' }));
    const invalid = await gh.error(() => agent.submitDecisions({ call_2: 'approve', call_1: ['approve', 'note'] }));
    const empty = await gh.error(() => agent.submitDecisions({}));
    steps.push(await snap('after refused payloads'));
    steps.push(await snap('final', await agent.submitDecisions({ call_2: 'approve', call_1: 'approve' })));
    const late = await gh.error(() => agent.submitDecisions({ call_1: 'approve' }));
    return { steps, unknown, invalid, empty, late, calls: gh.calls, messages: await agent.messages() };
  }, { model: sc.openai(), db });

  const [chat, a1, rev, back, refused, fin] = r.steps;
  assert.equal(chat.status, 'awaiting_approval');
  assert.deepEqual(chat.pending, ['call_1', 'call_2']);
  for (const s of [a1, rev, back, refused]) {
    assert.equal(s.tail.__id, chat.tail.__id, `${s.label}: same __id`);
    assert.equal(s.tail.resume_token, chat.tail.resume_token, `${s.label}: same resume_token`);
    assert.equal(s.count, 2, `${s.label}: message count unchanged`);
    assert.equal(s.stored, 2, `${s.label}: no row appended`);
    assert.equal(s.calls, 0, `${s.label}: nothing ran`);
    assert.deepEqual(s.pending, ['call_2'], s.label);
  }
  for (const s of [a1, rev, back]) assert.equal(s.status, 'awaiting_approval', s.label);
  assert.deepEqual(a1.tail.tools.map((e) => [e.approval, e.rejectReason]), [['approved', null], ['pending', null]]);
  assert.deepEqual(rev.tail.tools.map((e) => [e.approval, e.rejectReason]), [['rejected', 'not that one'], ['pending', null]]);
  assert.deepEqual(back.tail.tools.map((e) => [e.approval, e.rejectReason]), [['approved', null], ['pending', null]]);
  assert.deepEqual(refused.tail, back.tail, 'refused payloads staged nothing');

  assert.equal(r.unknown.name, 'GatehouseError');
  assert.equal(r.unknown.code, 'unknown_call_id');
  assert.equal(r.unknown.callId, 'call_9');
  assert.equal(r.invalid.code, 'invalid_decision');
  assert.equal(r.invalid.callId, 'call_1');
  assert.equal(r.empty.code, 'invalid_decision');

  assert.equal(fin.status, 'completed');
  assert.deepEqual(r.calls.map((c) => [c.callId, c.inputs.path]), [['call_1', '/one'], ['call_2', '/two']]);
  assert.deepEqual(r.messages.map((m) => m.type ?? m.role), ['user', 'tool_call', 'tool_call_result', 'assistant']);
  assert.deepEqual(r.messages[2].tools.map((e) => e.callId), ['call_1', 'call_2']);
  assert.equal(r.late.code, 'not_suspended');
  const reqs = await sc.requests();
  assert.equal(reqs.length, 2, 'partial decisions call no model');
  assert.deepEqual(reqs[1].body.messages.filter((m) => m.role === 'tool').map((m) => m.tool_call_id), ['call_1', 'call_2']);
});
