// The audit trail through the JS API (README "Approval semantics" 12): agent.audit() after a
// mixed run, compared with the stored IndexedDB rows, after a reload, paged, and deleted with
// the thread; a page that died mid-tool; a `by` that is not a string.

import { after, test } from 'node:test';
import assert from 'node:assert/strict';
import { run, setup, uid } from './harness.mjs';

const h = await setup();
after(() => h.close());

const T = { timeout: 60_000 };

const auditRows = (dump, thread) =>
  dump.stores.audit.rows.filter((x) => x.thread === thread).map((x) => JSON.parse(x.json));

test('audit() after a mixed run: approve, reject with a reason, edit, a tool error; by whom; the stored rows; reload, pages, delete', T, async (t) => {
  const { page } = await h.open(t);
  const sc = await h.scenario([
    { text: 'Working.', toolCalls: [
      { id: 'a', name: 'delete_file', arguments: { path: '/a' } },
      { id: 'r', name: 'delete_file', arguments: { path: '/r' } },
      { id: 'e', name: 'delete_file', arguments: { path: '/e' } },
      { id: 'x', name: 'burn', arguments: { path: '/x' } },
      { id: 'l', name: 'list', arguments: { path: '/' } },
    ] },
    { text: 'Done.' },
  ]);
  const args = { model: sc.openai(), db: uid('db') };
  const r = await run(page, async ({ model, db }) => {
    const { gh } = window;
    const tools = [
      gh.tool('delete_file', { approvalPolicy: () => 'Deleting is irreversible' }),
      gh.tool('burn', { requireApproval: true, execute: () => { throw new Error('disk on fire'); } }),
      gh.tool('list'),
    ];
    const agent = await gh.Agent.open({ threadId: 't', model, storage: { database: db }, tools });
    const t0 = Date.now();
    await agent.chat('tidy up');
    const requested = await agent.audit();
    const partial = await agent.handle({ decisions: { r: ['reject', 'keep it'] }, by: 'bob' });
    const afterPartial = await agent.audit();
    const done = await agent.submitDecisions({ a: 'approve', e: ['edit', { path: '/e/old' }], x: 'approve' }, { by: 'alice' });
    return {
      t0, t1: Date.now(), requested, partial: partial.status, afterPartial, done: done.status,
      audit: await agent.audit(), last2: await agent.audit({ limit: 2 }), first: await agent.audit({ limit: 1, beforeIndex: 1 }),
      dump: await gh.dumpDb(db),
    };
  }, args);

  assert.equal(r.partial, 'awaiting_approval');
  assert.equal(r.done, 'completed');
  // Gated calls only (list runs without asking), in message order, each opened when gated.
  assert.deepEqual(r.requested.map((a) => [a.seq, a.callId, a.tool, a.decision, a.outcome]),
    [[1, 'a', 'delete_file', null, null], [2, 'r', 'delete_file', null, null], [3, 'e', 'delete_file', null, null], [4, 'x', 'burn', null, null]]);
  assert.deepEqual(Object.keys(r.requested[0]), ['seq', 'callId', 'tool', 'reason', 'proposedInputs', 'requestedAt', 'decision',
    'rejectReason', 'decidedAt', 'decidedBy', 'inputs', 'startedAt', 'endedAt', 'outcome']);
  assert.equal(r.requested[0].reason, 'Deleting is irreversible');
  assert.ok(r.requested[0].requestedAt >= r.t0 && r.requested[0].requestedAt <= r.t1);
  // The partial decision is recorded at once, and nothing has ended.
  const rejected = r.afterPartial[1];
  assert.deepEqual([rejected.decision, rejected.rejectReason, rejected.decidedBy, rejected.outcome], ['rejected', 'keep it', 'bob', null]);

  const [a, rej, e, x] = r.audit;
  assert.deepEqual([a.decision, a.decidedBy, a.outcome], ['approved', 'alice', 'ok']);
  assert.deepEqual([a.proposedInputs, a.inputs], [{ path: '/a' }, { path: '/a' }]);
  assert.ok(a.decidedAt <= a.startedAt && a.startedAt <= a.endedAt);
  assert.deepEqual([rej.decision, rej.rejectReason, rej.decidedBy, rej.inputs, rej.startedAt, rej.outcome], ['rejected', 'keep it', 'bob', null, null, 'rejected']);
  assert.deepEqual([e.decision, e.proposedInputs, e.inputs, e.outcome], ['edited', { path: '/e' }, { path: '/e/old' }, 'ok']);
  assert.deepEqual([x.decision, x.inputs, x.outcome], ['approved', { path: '/x' }, 'tool_error']);

  // The stored rows are the trail; the record counts them; nothing is left open in the journal.
  assert.deepEqual(auditRows(r.dump, 't'), r.audit);
  const rec = r.dump.stores.threads.rows.find((x) => x.id === 't');
  assert.equal(rec.auditCount, 4);
  assert.equal(rec.run, null);
  assert.deepEqual(r.last2, r.audit.slice(2));
  assert.deepEqual(r.first, r.audit.slice(0, 1));

  await h.load(page, true);
  const again = await run(page, async ({ model, db }) => {
    const { gh } = window;
    const agent = await gh.Agent.open({ threadId: 't', model, storage: { database: db } });
    const audit = await agent.audit();
    await gh.Agent.deleteThread('t', { database: db });
    return { audit, rows: (await gh.dumpDb(db)).stores.audit.rows.length };
  }, args);
  assert.deepEqual(again.audit, r.audit, 'the same trail after a reload');
  assert.equal(again.rows, 0, 'deleting the thread deleted its trail');
});

test('a page that died mid-tool: its record ends as regated, the new request gets the next one', T, async (t) => {
  const { page } = await h.open(t);
  const sc = await h.scenario([
    { toolCalls: [{ id: 'cut', name: 'charge_card', arguments: { path: '/card' } }] },
    { text: 'Charged.' },
  ]);
  const args = { model: sc.openai(), db: uid('db') };
  await run(page, async ({ model, db }) => {
    const { gh } = window;
    const tool = { ...gh.tool('charge_card', { requireApproval: true }), execute: () => { gh.calls.push(1); return new Promise(() => {}); } };
    const agent = await gh.Agent.open({ threadId: 'cut', model, storage: { database: db }, tools: [tool] });
    await agent.chat('charge it');
    agent.submitDecisions({ cut: 'approve' }, { by: 'ann' }); // never settles
    for (let i = 0; i < 100 && gh.calls.length === 0; i++) await gh.sleep(20);
  }, args);
  await h.load(page, true);
  const r = await run(page, async ({ model, db }) => {
    const { gh } = window;
    const agent = await gh.Agent.open({ threadId: 'cut', model, storage: { database: db }, tools: [gh.tool('charge_card', { requireApproval: true })] });
    const reopened = await agent.audit();
    await agent.submitDecisions({ cut: 'approve' }, { by: 'ben' });
    return { reopened, audit: await agent.audit(), rows: (await gh.dumpDb(db)).stores.audit.rows.length };
  }, args);
  const [cut, again] = r.reopened;
  assert.deepEqual([cut.decision, cut.decidedBy, cut.inputs, cut.outcome], ['approved', 'ann', { path: '/card' }, 'regated']);
  assert.ok(cut.startedAt !== null && cut.endedAt >= cut.startedAt, 'it started before the page died');
  assert.deepEqual([again.seq, again.callId, again.decision, again.outcome], [2, 'cut', null, null]);
  assert.match(again.reason, /may or may not have taken effect/);
  assert.deepEqual(r.audit.map((a) => [a.seq, a.decidedBy, a.outcome]), [[1, 'ann', 'regated'], [2, 'ben', 'ok']]);
  assert.equal(r.rows, 2);
});

test('a `by` that is not a string is invalid_config and stages nothing', T, async (t) => {
  const { page } = await h.open(t);
  const sc = await h.scenario([{ toolCalls: [{ id: 'c', name: 'delete_file', arguments: { path: '/c' } }] }]);
  const r = await run(page, async ({ model }) => {
    const { gh } = window;
    const agent = await gh.Agent.open({ threadId: 'by', model, storage: { kind: 'memory' }, tools: [gh.tool('delete_file', { requireApproval: true })] });
    await agent.chat('go');
    const err = await gh.error(() => agent.submitDecisions({ c: 'approve' }, { by: 42 }));
    return { err, audit: await agent.audit(), pending: agent.pendingTools().length };
  }, { model: sc.openai() });
  assert.equal(r.err?.code, 'invalid_config');
  assert.deepEqual([r.audit.length, r.audit[0].decision, r.pending], [1, null, 1]);
});
