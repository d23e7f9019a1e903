// Remembered grants on a thread in the app's Postgres (README "Remembered grants"), with real
// browsers, the real handler and Postgres: a user grant made on one device approves covered
// calls on the user's other device, its audit record says who and which grant; another user's
// run is not covered by it; a revocation on the phone makes the next covered call ask on the
// desk.

import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { run, setup, uid } from '../browser/harness.mjs';
import { startRemote } from './support.mjs';

const h = await setup();
let remote;
before(async () => {
  remote = await startRemote();
});
after(async () => { await remote?.stop(); await h.close(); });

const T = { timeout: 90_000 };

const openDevice = async ({ url, user, threadId, model }) => {
  const { gh } = window;
  window.agent = await gh.Agent.open({
    threadId,
    storage: { kind: 'remote', url, headers: { authorization: `Bearer ${user}` } },
    ...(model ? { model } : {}),
    tools: [gh.tool('delete_file', { requireApproval: true })],
  });
  return window.agent.status();
};

test('a user grant made on the phone approves the desk\'s covered call; revoked on the phone, the next call asks on the desk', T, async (t) => {
  const threadId = uid('t');
  const sc = await h.scenario([
    { toolCalls: [{ id: 'c1', name: 'delete_file', arguments: { path: '/tmp/a' } }] },
    { text: 'Deleted.' },
    { toolCalls: [{ id: 'c2', name: 'delete_file', arguments: { path: '/tmp/b' } }] },
  ]);
  const { page: desk } = await h.open(t);
  const { page: phone } = await h.open(t);
  await run(desk, openDevice, { url: remote.url, user: 'ann', threadId, model: sc.openai() });
  await run(phone, openDevice, { url: remote.url, user: 'ann', threadId });
  const g = await run(phone, () => window.agent.grant({ tool: 'delete_file', scope: 'user', match: { path: '/tmp/**' } }, { by: 'ignored on a remote store' }));
  assert.equal(g.createdBy, 'ann', 'the maker is the identity the handler authorized, not the browser\'s `by`');
  const first = await run(desk, async () => ({ status: (await window.agent.chat('clean a')).status,
    ran: window.gh.calls.map((c) => c.inputs.path), trail: await window.agent.audit(), grants: await window.agent.grants() }));
  assert.equal(first.status, 'completed');
  assert.deepEqual(first.ran, ['/tmp/a']);
  assert.deepEqual(first.grants.map((x) => x.id), [g.id]);
  assert.deepEqual([first.trail[0].grantId, first.trail[0].decidedBy, first.trail[0].outcome], [g.id, 'ann', 'ok']);

  await run(phone, (id) => window.agent.revokeGrant(id), g.id);
  const second = await run(desk, async () => ({ status: (await window.agent.chat('clean b')).status,
    pending: window.agent.pendingTools().map((e) => e.callId), ran: window.gh.calls.length }));
  assert.equal(second.status, 'awaiting_approval', 'a revoked grant approves nothing on any device');
  assert.deepEqual(second.pending, ['c2']);
  assert.equal(second.ran, 1);
});

test('another user\'s run is not covered by a user grant; malformed grants are refused by the agent before the handler', T, async (t) => {
  const threadId = uid('t');
  const sc = await h.scenario([{ toolCalls: [{ id: 'c1', name: 'delete_file', arguments: { path: '/tmp/a' } }] }]);
  const { page: ann } = await h.open(t);
  const { page: bob } = await h.open(t);
  await run(ann, openDevice, { url: remote.url, user: 'ann', threadId: uid('t') });
  const g = await run(ann, () => window.agent.grant({ tool: 'delete_file', scope: 'user' }));
  await run(bob, openDevice, { url: remote.url, user: 'bob', threadId, model: sc.openai() });
  const r = await run(bob, async (id) => ({ status: (await window.agent.chat('clean')).status,
    grants: await window.agent.grants(),
    bad: await window.gh.error(() => window.agent.grant({ tool: 'delete_file', scope: 'everyone' })),
    notMine: await window.gh.error(() => window.agent.revokeGrant(id)),
    notString: await window.gh.error(() => window.agent.revokeGrant(42)) }), g.id);
  assert.equal(r.status, 'awaiting_approval');
  assert.ok(!r.grants.some((x) => x.id === g.id), 'ann\'s user grant is not listed for bob');
  assert.equal(r.bad.code, 'invalid_grant');
  assert.equal(r.notMine.code, 'unknown_grant');
  assert.equal(r.notString?.name, 'GatehouseError', JSON.stringify(r.notString));
});

test('the handler commits a grant and its answer is lost: the agent asks again with the same Idempotency-Key and gets that grant, not a second one', T, async (t) => {
  const threadId = uid('t');
  const { page } = await h.open(t);
  await run(page, openDevice, { url: remote.url, user: 'lena', threadId });
  remote.loseAnswer((method, path) => method === 'POST' && path.endsWith('/grants'));
  const lostBefore = remote.lost.length;
  const g = await run(page, () => window.agent.grant({ tool: 'delete_file', scope: 'user', match: { path: '/tmp/**' } }), null, 30_000);
  assert.equal(remote.lost.length, lostBefore + 1, 'the first answer was lost');
  assert.equal(remote.requests.filter((r) => r.method === 'POST' && r.path.endsWith('/grants') && r.user === 'lena').length, 2,
    'sent twice');
  const rows = await remote.pool.query("select id from gatehouse_grants where created_by = 'lena'");
  assert.deepEqual(rows.rows.map((r) => r.id), [g.id], 'one grant, the one the agent was answered');
  assert.deepEqual((await run(page, () => window.agent.grants())).map((x) => x.id), [g.id]);
});
