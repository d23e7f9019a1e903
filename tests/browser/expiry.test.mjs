// Approval expiry through the JS API (README "Approval semantics" 11): a call expires on
// Agent.open after a reload, by the timer while the page is open, and a decision after the
// deadline is refused with `expired`; each checks the stored rows, the model's next request and
// that the tool never ran. No assertion is on elapsed time: deadlines are passed by shifting
// `Date.now` (the SDK reads the time only through it) or by waiting for the expiry to be seen.

import { after, test } from 'node:test';
import assert from 'node:assert/strict';
import { run, setup, textOf, uid } from './harness.mjs';

const h = await setup();
after(() => h.close());

const T = { timeout: 60_000 };

/** The documented text for an expired call (README "Approval semantics" 11). */
const EXPIRED = 'TOOL NOT EXECUTED. The approval request for this action expired before anyone approved ' +
  'or rejected it, so it did not run. The user did not reject it. Do not assume it took effect; ask ' +
  'the user before trying it again.';

const rowsOf = (dump, thread) =>
  dump.stores.messages.rows.filter((x) => x.thread === thread).map((x) => JSON.parse(x.json));
const recordOf = (dump, thread) => dump.stores.threads.rows.find((x) => x.id === thread);

/** The model's request after the expiry: the call, then the expiry text as its result. */
function assertModelTold(reqs, callId) {
  assert.equal(reqs.length, 2);
  const last = reqs[1].body.messages.at(-1);
  assert.deepEqual(last, { role: 'tool', tool_call_id: callId, content: EXPIRED });
}

test('a call expires on Agent.open after a reload past its deadline: stored as expired, the model told, the tool never run', T, async (t) => {
  const { page } = await h.open(t);
  const sc = await h.scenario([
    { text: 'Deleting.', toolCalls: [{ id: 'call_x', name: 'delete_file', arguments: { path: '/var/log' } }] },
    { text: 'The request expired; tell me if you still want it.' },
  ]);
  const db = uid('db');
  const first = await run(page, async ({ model, db }) => {
    const { gh } = window;
    const agent = await gh.Agent.open({
      threadId: 't', model, storage: { database: db }, approvalTimeout: 60_000,
      tools: [gh.tool('delete_file', { requireApproval: true })],
    });
    const state = await agent.chat('Clean up the logs');
    return { state, dump: await gh.dumpDb(db) };
  }, { model: sc.openai(), db });
  assert.equal(first.state.status, 'awaiting_approval');
  const pending = recordOf(first.dump, 't');
  assert.equal(pending.run.deadlines.length, 1);
  assert.equal(pending.run.deadlines[0].callId, 'call_x');
  const { at } = pending.run.deadlines[0];
  assert.equal(rowsOf(first.dump, 't')[1].tools[0].approval, 'pending');

  await h.load(page, true);
  const r = await run(page, async ({ model, db, at }) => {
    const { gh } = window;
    // This page's clock is past the deadline; the thread was written by the page before.
    const real = Date.now;
    Date.now = () => Math.max(real(), at + 1000);
    const agent = await gh.Agent.open({
      threadId: 't', model, storage: { database: db }, approvalTimeout: 60_000,
      tools: [gh.tool('delete_file', { requireApproval: true })],
    });
    return {
      pending: agent.pendingTools(), status: agent.status(), messages: await agent.messages(),
      calls: gh.calls, dump: await gh.dumpDb(db),
      late: await gh.error(() => agent.submitDecisions({ call_x: 'approve' })),
    };
  }, { model: sc.openai(), db, at });

  assert.deepEqual(r.calls, [], 'the tool never ran');
  assert.deepEqual(r.pending, []);
  assert.equal(r.status, 'idle');
  const [, call, result, answer] = r.messages;
  assert.equal(call.tools[0].approval, 'expired');
  assert.equal(call.tools[0].rejectReason, null);
  assert.equal(call.tools[0].result, null);
  assert.equal(result.type, 'tool_call_result');
  assert.equal(result.tools[0].approval, 'expired');
  assert.equal(result.tools[0].result, EXPIRED);
  assert.equal(textOf(answer), 'The request expired; tell me if you still want it.');
  assert.deepEqual(rowsOf(r.dump, 't'), r.messages, 'IndexedDB holds exactly these messages');
  assert.equal(recordOf(r.dump, 't').run, null, 'the journal is closed');
  assertModelTold(await sc.requests(), 'call_x');
  // A decision arriving now names a call that expired: `expired`, and nothing runs.
  assert.equal(r.late.code, 'expired');
  assert.equal(r.late.callId, 'call_x');
});

test('the timer expires a call while the page is open; the other, approved in time, runs', T, async (t) => {
  const { page } = await h.open(t);
  const sc = await h.scenario([
    { toolCalls: [
      { id: 'c_slow', name: 'delete_file', arguments: { path: '/a' } },
      { id: 'c_ok', name: 'move_file', arguments: { path: '/b' } },
    ] },
    { text: 'Moved /b; deleting /a expired.' },
  ]);
  const db = uid('db');
  const r = await run(page, async ({ model, db }) => {
    const { gh } = window;
    const agent = await gh.Agent.open({
      threadId: 't', model, storage: { database: db },
      tools: [
        gh.tool('delete_file', { requireApproval: true, approvalTimeout: 300 }),
        gh.tool('move_file', { requireApproval: true }),
      ],
    });
    const first = await agent.chat('tidy up');
    // The timer may fire before or after this decision (c_ok has no timeout, so it lands
    // either way); while its expiry is being written the agent is `busy`, as for any call.
    let partial;
    while (!partial) {
      const e = await gh.error(async () => { partial = await agent.submitDecisions({ c_ok: 'approve' }); });
      if (e && e.code !== 'busy') throw new Error(JSON.stringify(e));
      if (e) await gh.sleep(10);
    }
    // Wait for the expiry to be seen (bounded by the evaluation's own timeout).
    while (agent.lastMessage()?.role !== 'assistant' || agent.status() !== 'idle') await gh.sleep(25);
    return { first, partial, calls: gh.calls, messages: await agent.messages(), dump: await gh.dumpDb(db) };
  }, { model: sc.openai(), db });

  assert.equal(r.first.status, 'awaiting_approval');
  assert.ok(['awaiting_approval', 'completed'].includes(r.partial.status), r.partial.status);
  assert.deepEqual(r.calls.map((c) => c.callId), ['c_ok'], 'only the approved call ran');
  const [, call, result, answer] = r.messages;
  assert.deepEqual(call.tools.map((e) => e.approval), ['expired', 'approved']);
  assert.equal(result.tools[0].result, EXPIRED);
  assert.equal(result.tools[1].result, JSON.stringify({ done: 'move_file', path: '/b' }));
  assert.equal(textOf(answer), 'Moved /b; deleting /a expired.');
  assert.deepEqual(rowsOf(r.dump, 't'), r.messages);
  const reqs = await sc.requests();
  assert.equal(reqs.length, 2);
  assert.deepEqual(reqs[1].body.messages.slice(-2), [
    { role: 'tool', tool_call_id: 'c_slow', content: EXPIRED },
    { role: 'tool', tool_call_id: 'c_ok', content: JSON.stringify({ done: 'move_file', path: '/b' }) },
  ]);
});

test('a decision after the deadline is refused with expired, stages nothing, and nothing runs', T, async (t) => {
  const { page } = await h.open(t);
  const sc = await h.scenario([
    { toolCalls: [
      { id: 'c1', name: 'delete_file', arguments: { path: '/a' } },
      { id: 'c2', name: 'move_file', arguments: { path: '/b' } },
    ] },
    { text: 'Done.' },
  ]);
  const db = uid('db');
  const r = await run(page, async ({ model, db }) => {
    const { gh } = window;
    const agent = await gh.Agent.open({
      threadId: 't', model, storage: { database: db }, approvalTimeout: 3_600_000,
      tools: [
        gh.tool('delete_file', { requireApproval: true }),
        gh.tool('move_file', { requireApproval: true, approvalTimeout: 7_200_000 }),
      ],
    });
    await agent.chat('tidy up');
    const before = await gh.dumpDb(db);
    // An hour and a minute later: c1 (the Agent.open default, one hour) is past its deadline,
    // c2 (its own two hours) is not.
    const real = Date.now;
    Date.now = () => real() + 3_660_000;
    const late = await gh.error(() => agent.submitDecisions({ c2: 'approve', c1: 'approve' }));
    const afterLate = await gh.dumpDb(db);
    const lateAgain = await gh.error(() => agent.submitDecisions({ c1: ['reject', 'too late anyway'] }));
    const callsBefore = gh.calls.length;
    const fin = await agent.submitDecisions({ c2: 'approve' });
    return {
      before, late, afterLate, lateAgain, callsBefore, fin, calls: gh.calls,
      messages: await agent.messages(), dump: await gh.dumpDb(db),
    };
  }, { model: sc.openai(), db });

  assert.equal(r.late.code, 'expired');
  assert.equal(r.late.callId, 'c1');
  assert.equal(r.late.retryable, false);
  assert.equal(r.lateAgain.code, 'expired');
  assert.equal(r.callsBefore, 0, 'nothing ran while the decisions were refused');
  // The refused payload staged nothing: c2 is still pending, with no decision recorded; the
  // write after it is the expiry of c1 alone.
  const tailAfter = rowsOf(r.afterLate, 't').at(-1);
  assert.deepEqual(tailAfter.tools.map((e) => e.approval), ['expired', 'pending']);
  const rec = recordOf(r.afterLate, 't');
  assert.deepEqual(rec.run.decisions, [{ callId: 'c1', approved: false, inputs: { path: '/a' } }]);
  assert.deepEqual(rec.run.results, [{ callId: 'c1', result: EXPIRED }]);
  assert.deepEqual(rowsOf(r.before, 't').at(-1).tools.map((e) => e.approval), ['pending', 'pending']);

  assert.equal(r.fin.status, 'completed');
  assert.deepEqual(r.calls.map((c) => c.callId), ['c2'], 'the expired call never ran');
  const [, , result] = r.messages;
  assert.equal(result.tools[0].result, EXPIRED);
  assert.deepEqual(rowsOf(r.dump, 't'), r.messages);
  const reqs = await sc.requests();
  assert.equal(reqs.length, 2);
  assert.deepEqual(reqs[1].body.messages.at(-2), { role: 'tool', tool_call_id: 'c1', content: EXPIRED });
});

test('a tool opts out of the Agent.open default with approvalTimeout: Infinity; a static approvalReason is the entry\'s reason', T, async (t) => {
  const { page } = await h.open(t);
  const sc = await h.scenario([
    { toolCalls: [
      { id: 'c_default', name: 'delete_file', arguments: { path: '/a' } },
      { id: 'c_never', name: 'archive', arguments: { path: '/b' } },
    ] },
  ]);
  const db = uid('db');
  const r = await run(page, async ({ model, db }) => {
    const { gh } = window;
    const bad = await gh.error(() => gh.Agent.open({ threadId: 'x', storage: { kind: 'memory' }, tools: [gh.tool('a', { approvalTimeout: -Infinity })] }));
    const agent = await gh.Agent.open({
      threadId: 't', model, storage: { database: db }, approvalTimeout: 60_000,
      tools: [
        gh.tool('delete_file', { requireApproval: true, approvalReason: 'Deleting cannot be undone' }),
        gh.tool('archive', { requireApproval: true, approvalTimeout: Infinity }),
      ],
    });
    const t0 = Date.now();
    await agent.chat('tidy up');
    return { bad, t0, pending: agent.pendingTools(), dump: await gh.dumpDb(db) };
  }, { model: sc.openai(), db });
  assert.equal(r.bad?.code, 'invalid_config');
  assert.deepEqual(r.pending.map((e) => [e.callId, e.approvalReason]), [['c_default', 'Deleting cannot be undone'], ['c_never', null]]);
  const { deadlines } = recordOf(r.dump, 't').run;
  assert.deepEqual(deadlines.map((d) => d.callId), ['c_default'], 'only the call of the tool that kept the default can expire');
  assert.ok(deadlines[0].at >= r.t0 + 60_000);
});
