// `ctx.approval` (README "Approvals your backend can verify"): the device that runs an approved
// call gets the store handler's signed receipt, although another device (another user) made
// the decision, and the receipt verifies in a backend for exactly the inputs that ran. On a
// local thread the decision is described, unsigned, and says so. Approver rules as devices
// see them: pendingTools() and the UI kit's card say "1 of 2 approvals", who, and why this
// user may not approve.

import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { run, setup, uid } from '../browser/harness.mjs';
import { startRemote } from './support.mjs';

const { verifyApproval } = await import('../../pkg/server.js');

const pair = await crypto.subtle.generateKey({ name: 'Ed25519' }, true, ['sign', 'verify']);
const signingKey = await crypto.subtle.exportKey('jwk', pair.privateKey);

const h = await setup();
let remote;
before(async () => {
  remote = await startRemote({ signingKey,
    approvers: { payroll: { may: (identity) => identity !== 'intern', quorum: 2 } } });
});
after(async () => { await remote?.stop(); await h.close(); });

const T = { timeout: 90_000 };

/** In a page: `window.agent` on `threadId` as `user` (remote when `url` is given); its
 *  `wire_transfer` keeps each call's `ctx.approval` in `window.approvals`. */
const openDevice = async ({ url, user, threadId, model, withTool }) => {
  const { gh } = window;
  const ANY = { type: 'object' };
  window.approvals = [];
  const transfer = { ...gh.tool('wire_transfer', { requireApproval: true, parameters: ANY }),
    execute: (inputs, ctx) => { window.approvals.push({ inputs, approval: ctx.approval ?? null }); return 'sent'; } };
  const payroll = { ...gh.tool('payroll', { requireApproval: true, parameters: ANY }),
    execute: (inputs, ctx) => { window.approvals.push({ inputs, approval: ctx.approval ?? null }); return 'paid'; } };
  window.lastModel = model;
  window.agent = await gh.Agent.open({
    threadId,
    storage: url ? { kind: 'remote', url, headers: { authorization: `Bearer ${user}` } } : { kind: 'memory' },
    ...(model ? { model } : {}),
    tools: withTool ? [transfer, payroll] : [],
  });
  return window.agent.status();
};

test('the device that runs the call forwards the signed receipt of a decision another user made on a phone', T, async (t) => {
  const threadId = uid('t');
  const inputs = { to: 'ana', amount: 100 };
  const sc = await h.scenario([{ toolCalls: [{ id: 'call_1', name: 'wire_transfer', arguments: inputs }] }, { text: 'Sent.' }]);
  const { page: desk } = await h.open(t);
  const { page: phone } = await h.open(t);
  await run(desk, openDevice, { url: remote.url, user: 'clerk', threadId, model: sc.openai(), withTool: true });
  await run(phone, openDevice, { url: remote.url, user: 'manager', threadId });
  assert.equal(await run(desk, async () => (await window.agent.chat('pay ana')).status), 'awaiting_approval');
  await run(phone, async () => {
    await window.gh.until(() => window.agent.pendingTools().length === 1, 5_000);
    await window.agent.submitDecisions({ call_1: 'approve' });
  });
  const ran = await run(desk, async () => {
    await window.gh.until(() => window.approvals.length > 0 && window.agent.status() === 'idle', 15_000);
    return window.approvals;
  }, null, 20_000);
  assert.equal(ran.length, 1);
  const { approval } = ran[0];
  assert.deepEqual([approval.signed, approval.callId, approval.tool, approval.decision, approval.decidedBy],
    [true, 'call_1', 'wire_transfer', 'approve', 'manager']);
  const receipt = await verifyApproval(approval.receipt, ran[0].inputs, pair.publicKey,
    { tool: 'wire_transfer', thread: threadId });
  assert.equal(receipt.decidedBy, 'manager', 'the identity the handler authorized');
  assert.equal(approval.at, receipt.at);
});

test('on a local thread ctx.approval describes the decision, unsigned; a call that was not gated has none', T, async (t) => {
  const sc = await h.scenario([{ toolCalls: [
    { id: 'c1', name: 'wire_transfer', arguments: { to: 'bo', amount: 3 } },
    { id: 'c2', name: 'note', arguments: { text: 'paid bo' } },
  ] }, { text: 'ok' }]);
  const { page } = await h.open(t);
  await run(page, openDevice, { threadId: uid('t'), model: sc.openai(), withTool: true });
  const r = await run(page, async () => {
    const { gh } = window;
    const ANY = { type: 'object' };
    const note = { ...gh.tool('note', { parameters: ANY }),
      execute: (inputs, ctx) => { window.approvals.push({ inputs, approval: ctx.approval ?? 'absent' }); return 'noted'; } };
    // The same thread, opened again with both tools.
    const threadId = window.agent.threadId;
    const transfer = { ...gh.tool('wire_transfer', { requireApproval: true, parameters: ANY }),
      execute: (inputs, ctx) => { window.approvals.push({ inputs, approval: ctx.approval ?? null }); return 'sent'; } };
    window.agent = await gh.Agent.open({ threadId, storage: { kind: 'memory' }, model: window.lastModel, tools: [transfer, note] });
    const first = await window.agent.chat('pay bo');
    const done = await window.agent.submitDecisions({ c1: 'approve' }, { by: 'reviewer-7' });
    return { first: first.status, done: done.status, approvals: window.approvals };
  });
  assert.deepEqual([r.first, r.done], ['awaiting_approval', 'completed']);
  const byTool = Object.fromEntries(r.approvals.map((x) => [x.inputs.text ? 'note' : 'wire_transfer', x.approval]));
  assert.equal(byTool.note, 'absent', 'a call nobody gated carries no approval');
  const a = byTool.wire_transfer;
  assert.deepEqual([a.signed, a.receipt, a.callId, a.tool, a.decision, a.decidedBy],
    [false, null, 'c1', 'wire_transfer', 'approve', 'reviewer-7']);
  assert.equal(typeof a.at, 'number');
});

test('approver rules as devices see them: 1 of 2 on every device, the requester and an outsider may not approve, the second approver runs it', T, async (t) => {
  const threadId = uid('t');
  const sc = await h.scenario([{ toolCalls: [{ id: 'pay_1', name: 'payroll', arguments: { month: 12 } }] }, { text: 'Paid.' }]);
  const pages = {};
  for (const [user, extra] of [['clerk', { model: sc.openai(), withTool: true }], ['manager', {}], ['cfo', {}], ['intern', {}]]) {
    ({ page: pages[user] } = await h.open(t));
    await run(pages[user], openDevice, { url: remote.url, user, threadId, ...extra });
  }
  assert.equal(await run(pages.clerk, async () => (await window.agent.chat('pay december')).status), 'awaiting_approval');
  // The manager approves: one of two, nothing runs.
  const first = await run(pages.manager, async () => {
    await window.gh.until(() => window.agent.pendingTools().length === 1, 5_000);
    return (await window.agent.submitDecisions({ pay_1: 'approve' })).status;
  });
  assert.equal(first, 'awaiting_approval');
  /** In a page: the pending call's progress once it shows `n` approvals, and the kit's card for it. */
  const view = (n) => async (n) => {
    await window.gh.until(() => window.agent.pendingTools()[0]?.approvals.length === n, 10_000);
    const [e] = window.agent.pendingTools();
    const { ApprovalCards } = await import('/pkg/ui/cards.js');
    const cards = new ApprovalCards({ onDecide: () => {} });
    cards.update(window.agent.lastMessage(), { pending: window.agent.pendingTools() });
    const card = cards.el.querySelector('.gh-card');
    const button = (a) => card.querySelector(`[data-action="${a}"]`).disabled;
    return { approvals: e.approvals.map((a) => a.by), needed: e.needed, blocked: e.blocked,
      line: card.querySelector('.gh-card-progress').textContent,
      disabled: { approve: button('approve'), deny: button('deny'), edit: button('edit') } };
  };
  const clerk = await run(pages.clerk, view(1), 1, 15_000);
  assert.deepEqual(clerk, { approvals: ['manager'], needed: 2, blocked: 'self_approval',
    line: '1 of 2 approvals: manager. You asked for this action, so someone else must approve it.',
    disabled: { approve: true, deny: false, edit: true } });
  const intern = await run(pages.intern, view(1), 1, 15_000);
  assert.deepEqual([intern.blocked, intern.disabled], ['not_an_approver', { approve: true, deny: true, edit: true }]);
  assert.match(intern.line, /^1 of 2 approvals: manager\. You are not one of the people who may decide this action\.$/);
  const cfo = await run(pages.cfo, view(1), 1, 15_000);
  assert.deepEqual([cfo.blocked, cfo.line, cfo.disabled.approve], [null, '1 of 2 approvals: manager.', false]);
  // The requester's own approval is refused by the handler as the card said.
  const refused = await run(pages.clerk, async () => (await window.gh.error(() => window.agent.submitDecisions({ pay_1: 'approve' }))));
  assert.equal(refused.code, 'unauthorized', JSON.stringify(refused));
  // The CFO's approval is the second: the clerk's device runs the call once, with both in the receipt.
  await run(pages.cfo, () => window.agent.submitDecisions({ pay_1: 'approve' }));
  const ran = await run(pages.clerk, async () => {
    await window.gh.until(() => window.approvals.length > 0 && window.agent.status() === 'idle', 15_000);
    return window.approvals;
  }, null, 20_000);
  assert.equal(ran.length, 1);
  assert.deepEqual(ran[0].approval.receipt.approvals.map((a) => a.by), ['manager', 'cfo']);
});
