// Edit, then approve, and allowed decisions per tool, through the JS API (README "Approval
// semantics" 3 and 4): the inputs the tool receives, the text the model reads, the stored rows,
// and refusals that store nothing.

import { after, test } from 'node:test';
import assert from 'node:assert/strict';
import { run, setup, textOf, uid } from './harness.mjs';

const h = await setup();
after(() => h.close());

const T = { timeout: 60_000 };

/** The documented text for an edited call (README "Approval semantics" 4). */
const edited = (proposed, inputs, result) =>
  'TOOL EXECUTED WITH EDITED ARGUMENTS. The user changed the arguments before approving this action. ' +
  `You proposed: ${JSON.stringify(proposed)}. It ran with: ${JSON.stringify(inputs)}. Result: ${result}`;

const rowsOf = (dump, thread) =>
  dump.stores.messages.rows.filter((x) => x.thread === thread).map((x) => JSON.parse(x.json));

test('edit, then approve: the tool gets the edited inputs, the model the documented text, IndexedDB the edited entry', T, async (t) => {
  const { page } = await h.open(t);
  const sc = await h.scenario([
    { text: 'Deleting.', toolCalls: [{ id: 'call_e', name: 'delete_file', arguments: { path: '/var/log' } }] },
    { text: 'Deleted the old logs only.' },
  ]);
  const db = uid('db');
  const r = await run(page, async ({ model, db }) => {
    const { gh } = window;
    const agent = await gh.Agent.open({
      threadId: 't', model, storage: { database: db },
      tools: [gh.tool('delete_file', { approvalPolicy: (inputs) => { gh.policyCalls.push(inputs); return 'Deleting is irreversible'; } })],
    });
    const first = await agent.chat('Clean up the logs');
    const policyCallsBefore = gh.policyCalls.length;
    const decided = await agent.submitDecisions({ call_e: ['edit', { path: '/var/log/old' }] });
    return {
      first, decided, policyCallsBefore, policyCalls: gh.policyCalls, calls: gh.calls,
      messages: await agent.messages(), dump: await gh.dumpDb(db),
    };
  }, { model: sc.openai(), db });

  assert.equal(r.first.status, 'awaiting_approval');
  assert.equal(r.decided.status, 'completed');
  assert.equal(textOf(r.decided.message), 'Deleted the old logs only.');
  // execute ran once, with the human's inputs; the policy was not asked about them.
  assert.deepEqual(r.calls, [{ tool: 'delete_file', callId: 'call_e', threadId: 't', inputs: { path: '/var/log/old' } }]);
  assert.deepEqual(r.policyCalls, [{ path: '/var/log' }]);
  assert.equal(r.policyCallsBefore, 1);

  const [, call, result] = r.messages;
  const note = edited({ path: '/var/log' }, { path: '/var/log/old' }, JSON.stringify({ done: 'delete_file', path: '/var/log/old' }));
  assert.deepEqual(call.tools[0], {
    callId: 'call_e', name: 'delete_file', description: 'The delete_file tool', parameters: [],
    inputs: { path: '/var/log/old' }, result: null, approval: 'approved',
    approvalReason: 'Deleting is irreversible', rejectReason: null, proposedInputs: { path: '/var/log' },
  });
  assert.deepEqual(Object.keys(call.tools[0]).slice(-2), ['rejectReason', 'proposedInputs']);
  assert.equal(result.type, 'tool_call_result');
  assert.deepEqual(result.tools[0].inputs, { path: '/var/log/old' });
  assert.equal(result.tools[0].result, note);

  // The stored rows are these messages, edited entry included; the journal is closed.
  assert.deepEqual(rowsOf(r.dump, 't'), r.messages);
  assert.equal(r.dump.stores.threads.rows.find((x) => x.id === 't').run, null);

  // The model's next request: the call with the inputs that ran, and the text as the tool result.
  const reqs = await sc.requests();
  assert.equal(reqs.length, 2);
  assert.deepEqual(reqs[1].body.messages.slice(1), [
    { role: 'assistant', content: 'Deleting.', tool_calls: [
      { id: 'call_e', type: 'function', function: { name: 'delete_file', arguments: JSON.stringify({ path: '/var/log/old' }) } }] },
    { role: 'tool', tool_call_id: 'call_e', content: note },
  ]);
});

test('a partial edit is stored with its decision record and stays revisable', T, async (t) => {
  const { page } = await h.open(t);
  const sc = await h.scenario([
    { toolCalls: [
      { id: 'c1', name: 'delete_file', arguments: { path: '/a' } },
      { id: 'c2', name: 'delete_file', arguments: { path: '/b' } },
    ] },
    { text: 'Done.' },
  ]);
  const db = uid('db');
  const r = await run(page, async ({ model, db }) => {
    const { gh } = window;
    const agent = await gh.Agent.open({ threadId: 't', model, storage: { database: db }, tools: [gh.tool('delete_file', { requireApproval: true })] });
    await agent.chat('delete /a and /b');
    const partial = await agent.submitDecisions({ c1: ['edit', { path: '/a/1' }] });
    const dumpPartial = await gh.dumpDb(db);
    const revised = await agent.submitDecisions({ c1: ['edit', { path: '/a/2' }] });
    const fin = await agent.submitDecisions({ c2: 'approve' });
    return { partial, dumpPartial, revised, fin, calls: gh.calls, messages: await agent.messages() };
  }, { model: sc.openai(), db });

  assert.equal(r.partial.status, 'awaiting_approval');
  assert.deepEqual(r.partial.message.tools[0].inputs, { path: '/a/1' });
  assert.deepEqual(r.partial.message.tools[0].proposedInputs, { path: '/a' });
  const rec = r.dumpPartial.stores.threads.rows.find((x) => x.id === 't');
  assert.deepEqual(rec.run.decisions, [{ callId: 'c1', approved: true, inputs: { path: '/a/1' } }]);
  assert.deepEqual(rowsOf(r.dumpPartial, 't').at(-1), r.partial.message);
  assert.deepEqual(r.revised.message.tools[0].inputs, { path: '/a/2' });
  assert.deepEqual(r.revised.message.tools[0].proposedInputs, { path: '/a' });
  assert.equal(r.fin.status, 'completed');
  assert.deepEqual(r.calls.map((c) => [c.callId, c.inputs.path]), [['c1', '/a/2'], ['c2', '/b']]);
  assert.equal(r.messages[2].tools[1].result, JSON.stringify({ done: 'delete_file', path: '/b' }));
  assert.ok(!('proposedInputs' in r.messages[2].tools[1]), 'an entry nobody edited keeps the documented keys');
});

test('an invalid edit and a disallowed decision are invalid_decision, and nothing is stored or sent', T, async (t) => {
  const { page } = await h.open(t);
  const sc = await h.scenario([
    { toolCalls: [
      { id: 'd1', name: 'delete_file', arguments: { path: '/a' } },
      { id: 'm1', name: 'move_file', arguments: { path: '/b' } },
    ] },
    { text: 'Done.' },
  ]);
  const db = uid('db');
  const r = await run(page, async ({ model, db }) => {
    const { gh } = window;
    const agent = await gh.Agent.open({
      threadId: 't', model, storage: { database: db },
      tools: [
        gh.tool('delete_file', { requireApproval: true, allowedDecisions: ['approve', 'reject'] }),
        gh.tool('move_file', { requireApproval: true }),
      ],
    });
    await agent.chat('tidy up');
    const before = await gh.dumpDb(db);
    const errors = {
      badType: await gh.error(() => agent.submitDecisions({ m1: ['edit', { path: 42 }] })),
      missing: await gh.error(() => agent.submitDecisions({ d1: 'approve', m1: ['edit', {}] })),
      notObject: await gh.error(() => agent.submitDecisions({ m1: ['edit', '/b/1'] })),
      disallowed: await gh.error(() => agent.submitDecisions({ m1: 'approve', d1: ['edit', { path: '/a/1' }] })),
    };
    const afterRefusals = await gh.dumpDb(db);
    const tail = agent.lastMessage();
    const fin = await agent.submitDecisions({ d1: ['reject', 'Keep it'], m1: ['edit', { path: '/b/1' }] });
    return { errors, before, afterRefusals, tail, fin, calls: gh.calls };
  }, { model: sc.openai(), db });

  for (const [k, e] of Object.entries(r.errors)) {
    assert.equal(e?.name, 'GatehouseError', k);
    assert.equal(e.code, 'invalid_decision', k);
    assert.equal(e.retryable, false, k);
  }
  assert.equal(r.errors.badType.callId, 'm1');
  assert.equal(r.errors.badType.message,
    'the edited inputs for "m1" do not match the schema of "move_file": at /path: expected string, found integer 42');
  assert.match(r.errors.missing.message, /do not match the schema of "move_file"/);
  assert.equal(r.errors.disallowed.callId, 'd1');
  assert.equal(r.errors.disallowed.message,
    '"edit" is not an allowed decision for "d1" (tool "delete_file"): its allowedDecisions are ["approve", "reject"]');
  // Nothing staged: the same rows and record, both calls still pending, no request, no run.
  assert.deepEqual(r.afterRefusals, r.before);
  assert.deepEqual(r.tail.tools.map((e) => e.approval), ['pending', 'pending']);
  // The allowed decisions still work, and only they reached the model.
  assert.equal((await sc.requests()).length, 2);
  assert.equal(r.fin.status, 'completed');
  assert.deepEqual(r.calls.map((c) => [c.callId, c.inputs.path]), [['m1', '/b/1']]);
});

test('allowedDecisions is checked at Agent.open: an unknown name or an empty list is invalid_config', T, async (t) => {
  const { page } = await h.open(t);
  const r = await run(page, async ({ db }) => {
    const { gh } = window;
    const open = (allowedDecisions) => gh.error(() => gh.Agent.open({
      threadId: 't', storage: { database: db }, tools: [gh.tool('delete_file', { allowedDecisions })],
    }));
    return {
      unknown: await open(['approve', 'respond']),
      empty: await open([]),
      notList: await open('approve'),
      ok: await open(['reject', 'edit']),
    };
  }, { db: uid('db') });
  for (const k of ['unknown', 'empty', 'notList']) assert.equal(r[k]?.code, 'invalid_config', k);
  assert.match(r.unknown.message, /tool "delete_file": unknown decision "respond" in `allowedDecisions`/);
  assert.match(r.empty.message, /`allowedDecisions` is empty/);
  assert.equal(r.ok, null);
});
