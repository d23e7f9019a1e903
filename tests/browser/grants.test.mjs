// Remembered grants on a local (IndexedDB) thread (README "Remembered grants"): a grant
// approves covered calls as its maker, across threads and reloads; the audit trail names it;
// a call outside its pattern asks; a grant revoked in another tab before a call starts makes
// that call ask; malformed requests are refused with stable codes and store nothing; the
// stored rows; the cards' "Always allow for me".

import { after, test } from 'node:test';
import assert from 'node:assert/strict';
import { run, setup, uid } from './harness.mjs';

const h = await setup();
after(() => h.close());

const T = { timeout: 60_000 };

test('a user grant approves covered calls in every thread of the database, named in the trail; outside its pattern a call asks', T, async (t) => {
  const { page } = await h.open(t);
  const sc = await h.scenario([
    { text: 'Deleting.', toolCalls: [{ id: 'c1', name: 'delete_file', arguments: { path: '/tmp/a/b.txt' } }] },
    { text: 'Done.' },
    { text: 'Deleting.', toolCalls: [{ id: 'c2', name: 'delete_file', arguments: { path: '/home/me.txt' } }] },
  ]);
  const r = await run(page, async ({ model, db }) => {
    const { gh } = window;
    const tools = [gh.tool('delete_file', { requireApproval: true })];
    const storage = { database: db };
    const first = await gh.Agent.open({ threadId: 'one', model, storage, tools });
    const made = await first.grant({ tool: 'delete_file', scope: 'user', match: { path: '/tmp/**' }, expiresIn: 60_000 }, { by: 'ann' });
    // Another thread of the same database, opened after: the grant applies there too.
    const second = await gh.Agent.open({ threadId: 'two', model, storage, tools });
    const ran = await second.chat('clean /tmp');
    const trail = await second.audit();
    const tail = (await second.messages())[1];
    const outside = await second.chat('and my home file');
    return { made, listed: await first.grants(), ran: ran.status, trail, tail, outside: outside.status,
      pending: second.pendingTools().map((e) => e.callId), calls: gh.calls.map((c) => c.inputs.path),
      dump: await gh.dumpDb(db) };
  }, { model: sc.openai(), db: uid('db') });
  assert.equal(r.made.scope, 'user');
  assert.deepEqual(Object.keys(r.made), ['id', 'tool', 'scope', 'match', 'createdAt', 'createdBy', 'expiresAt']);
  assert.equal(r.made.createdBy, 'ann');
  assert.equal(r.made.expiresAt - r.made.createdAt, 60_000);
  assert.deepEqual(r.listed, [r.made]);
  assert.equal(r.ran, 'completed', 'the covered call ran without a card');
  assert.equal(r.tail.tools[0].approval, 'approved');
  assert.deepEqual([r.trail[0].decision, r.trail[0].grantId, r.trail[0].decidedBy, r.trail[0].outcome],
    ['approved', r.made.id, 'ann', 'ok']);
  assert.equal(r.outside, 'awaiting_approval', 'a path outside the pattern asks');
  assert.deepEqual(r.pending, ['c2']);
  assert.deepEqual(r.calls, ['/tmp/a/b.txt']);
  // Stored in the database's own `grants` store, its JSON as text.
  assert.equal(r.dump.version, 3);
  assert.deepEqual(r.dump.stores.grants.keyPath, 'id');
  assert.deepEqual(r.dump.stores.grants.rows.map((x) => [x.id, JSON.parse(x.json)]), [[r.made.id, r.made]]);
});

test('a grant revoked in another tab before its call started: the call asks a human; a human approves it', T, async (t) => {
  const { page: tab1, context } = await h.open(t);
  const { page: tab2 } = await h.open(t, { context });
  const db = uid('db');
  const sc = await h.scenario([
    // c1 is covered by the grant; c2 (send) waits for a human, so c1 waits too.
    { text: 'Two things.', toolCalls: [
      { id: 'c1', name: 'delete_file', arguments: { path: '/tmp/x' } },
      { id: 'c2', name: 'send', arguments: { path: 'bob' } },
    ] },
    { text: 'Done.' },
  ]);
  const model = sc.openai();
  const first = await run(tab1, async ({ model, db }) => {
    const { gh } = window;
    const tools = [gh.tool('delete_file', { requireApproval: true }), gh.tool('send', { requireApproval: true })];
    window.agent = await gh.Agent.open({ threadId: 't', model, storage: { database: db }, tools });
    const g = await window.agent.grant({ tool: 'delete_file', scope: 'thread' });
    const res = await window.agent.chat('go');
    return { g, status: res.status, entries: window.agent.lastMessage().tools.map((e) => [e.callId, e.approval]) };
  }, { model, db });
  assert.equal(first.status, 'awaiting_approval');
  assert.deepEqual(first.entries, [['c1', 'approved'], ['c2', 'pending']]);
  assert.equal(first.g.threadId, 't');
  // Another tab revokes it.
  const revoked = await run(tab2, async ({ db, id }) => {
    const { gh } = window;
    const other = await gh.Agent.open({ threadId: 't', storage: { database: db }, tools: [gh.tool('delete_file', { requireApproval: true }), gh.tool('send', { requireApproval: true })] });
    await other.revokeGrant(id);
    return { left: await other.grants(), again: await gh.error(() => other.revokeGrant(id)) };
  }, { db, id: first.g.id });
  assert.deepEqual(revoked.left, []);
  assert.equal(revoked.again.code, 'unknown_grant');
  const r = await run(tab1, async () => {
    const { gh } = window;
    const afterDecision = await window.agent.submitDecisions({ c2: 'approve' });
    const pending = window.agent.pendingTools().map((e) => [e.callId, e.approvalReason]);
    const ranBefore = gh.calls.map((c) => c.callId);
    const done = await window.agent.submitDecisions({ c1: 'approve' }, { by: 'carol' });
    return { afterDecision: afterDecision.status, pending, ranBefore, done: done.status,
      ran: gh.calls.map((c) => c.callId), trail: await window.agent.audit() };
  });
  assert.equal(r.afterDecision, 'awaiting_approval');
  assert.deepEqual(r.pending, [['c1', 'The grant that allowed this call was revoked or has expired before it ran, so a human must decide.']]);
  assert.deepEqual(r.ranBefore, [], 'nothing ran while c1 asked again');
  assert.equal(r.done, 'completed');
  assert.deepEqual(r.ran, ['c1', 'c2']);
  const c1 = r.trail.filter((a) => a.callId === 'c1');
  assert.deepEqual(c1.map((a) => [a.grantId ?? null, a.outcome, a.decidedBy]),
    [[first.g.id, 'regated', null], [null, 'ok', 'carol']]);
});

test('bad grants are refused with stable codes and store nothing; a tool that cannot be approved gets none', T, async (t) => {
  const { page } = await h.open(t);
  const r = await run(page, async ({ db }) => {
    const { gh } = window;
    const tools = [gh.tool('delete_file', { requireApproval: true }), gh.tool('wire', { requireApproval: true, allowedDecisions: ['reject'] })];
    const agent = await gh.Agent.open({ threadId: 't', storage: { database: db }, tools });
    const tries = {
      scope: await gh.error(() => agent.grant({ tool: 'delete_file', scope: 'session' })),
      misspelled: await gh.error(() => agent.grant({ tool: 'delete_file', scope: 'user', mach: { path: '/tmp/*' } })),
      unknownTool: await gh.error(() => agent.grant({ tool: 'nope', scope: 'user' })),
      noApprove: await gh.error(() => agent.grant({ tool: 'wire', scope: 'app' })),
      threadId: await gh.error(() => agent.grant({ tool: 'delete_file', scope: 'thread', threadId: 'other' })),
      expires: await gh.error(() => agent.grant({ tool: 'delete_file', scope: 'user', expiresIn: -1 })),
      notObject: await gh.error(() => agent.grant('delete_file')),
      option: await gh.error(() => agent.grant({ tool: 'delete_file', scope: 'user' }, { bye: 'x' })),
      revokeUnknown: await gh.error(() => agent.revokeGrant('grant_nope')),
    };
    return { tries, grants: await agent.grants() };
  }, { db: uid('db') });
  for (const [k, e] of Object.entries(r.tries)) {
    assert.equal(e?.name, 'GatehouseError', k);
    assert.equal(e.code, k === 'revokeUnknown' ? 'unknown_grant' : 'invalid_grant', `${k}: ${e.message}`);
    assert.equal(e.retryable, false, k);
  }
  assert.match(r.tries.misspelled.message, /mach/);
  assert.match(r.tries.noApprove.message, /allowedDecisions/);
  assert.deepEqual(r.grants, [], 'nothing was stored');
});

test('the cards offer "Always allow for me": it makes a user grant and approves the call', T, async (t) => {
  const { page } = await h.open(t);
  const sc = await h.scenario([
    { text: 'Deleting.', toolCalls: [{ id: 'c1', name: 'delete_file', arguments: { path: '/tmp/a' } }] },
    { text: 'Done.' },
  ]);
  await run(page, async ({ model, db }) => {
    const { gh } = window;
    const { ChatView } = await import('/pkg/ui/index.js');
    const root = document.createElement('div');
    document.body.append(root);
    const tools = [gh.tool('delete_file', { requireApproval: true })];
    const view = new ChatView({ root, tools, grantScopes: ['user'] });
    window.agent = await gh.Agent.open({ threadId: 't', model, storage: { database: db }, tools });
    await view.setAgent(window.agent);
    await view.send('delete it');
  }, { model: sc.openai(), db: uid('db') });
  // Read and clicked in the page (every engine's driver can evaluate; not all have locators).
  const offered = await run(page, () => [...document.querySelectorAll('.gh-card .gh-card-actions button')]
    .filter((b) => !b.hidden && b.offsetParent !== null).map((b) => b.textContent));
  assert.deepEqual(offered, ['Approve', 'Deny…', 'Edit…', 'Always allow in this conversation', 'Always allow for me']);
  await run(page, async () => {
    document.querySelector('.gh-card .gh-grant[data-scope="user"]').click();
    await window.gh.until(() => window.agent.status() === 'idle' && window.gh.calls.length === 1, 10_000);
  });
  const r = await run(page, async () => ({ grants: await window.agent.grants(), trail: await window.agent.audit() }));
  assert.deepEqual(r.grants.map((g) => [g.tool, g.scope]), [['delete_file', 'user']]);
  assert.equal(r.trail[0].decision, 'approved', 'the card approved this call itself');
  assert.equal(r.trail[0].grantId, undefined, 'a human approved it; the grant covers the next ones');
});

test('a database of the previous release (version 2) is upgraded in place: its threads stay, grants can be kept', T, async (t) => {
  const { page } = await h.open(t);
  const sc = await h.scenario([{ text: 'Hello.' }, { text: 'Hello again.' }]);
  const r = await run(page, async ({ model, db }) => {
    const { gh } = window;
    // What release N-1 made: version 2, its three stores, one thread.
    const first = await gh.Agent.open({ threadId: 'old', model, storage: { database: db } });
    await first.chat('hello');
    await first.dispose();
    const before = await gh.dumpDb(db);
    await new Promise((ok, no) => { const q = indexedDB.deleteDatabase(db); q.onsuccess = ok; q.onerror = no; });
    await new Promise((ok, no) => {
      const q = indexedDB.open(db, 2);
      q.onupgradeneeded = () => {
        const d = q.result;
        for (const [name, keyPath] of [['threads', 'id'], ['messages', ['thread', 'seq']], ['audit', ['thread', 'seq']]]) {
          const s = d.createObjectStore(name, { keyPath });
          for (const row of before.stores[name].rows) s.put(row);
        }
      };
      q.onsuccess = () => { q.result.close(); ok(); };
      q.onerror = no;
    });
    const agent = await gh.Agent.open({ threadId: 'old', model, storage: { database: db }, tools: [gh.tool('delete_file', { requireApproval: true })] });
    const g = await agent.grant({ tool: 'delete_file', scope: 'app' });
    return { status: agent.status(), count: agent.messageCount, answer: (await agent.chat('again')).status, g, after: await gh.dumpDb(db) };
  }, { model: sc.openai(), db: uid('db') });
  assert.equal(r.status, 'idle');
  assert.equal(r.count, 2, 'the thread written at version 2 is there');
  assert.equal(r.answer, 'completed');
  assert.equal(r.after.version, 3);
  assert.deepEqual(r.after.stores.grants.rows.map((x) => x.id), [r.g.id]);
});

test('the grants\' module cannot be fetched: grant() is a retryable network error and stores nothing; a stored grant approves nothing, the call asks', T, async (t) => {
  if (h.engine !== 'chromium') return t.skip('aborts the module\'s requests with Playwright\'s page.route: Chromium only');
  const db = uid('db');
  const tools = ['delete_file', { requireApproval: true }];
  // A tab that has the module makes a grant.
  const { page: online, context } = await h.open(t);
  const g = await run(online, async ({ db, tools }) => {
    const { gh } = window;
    const agent = await gh.Agent.open({ threadId: 'one', storage: { database: db }, tools: [gh.tool(...tools)] });
    return agent.grant({ tool: 'delete_file', scope: 'user' });
  }, { db, tools });
  // Another tab of the same profile, where every file of the module fails to load (offline,
  // not cached).
  const { page } = await h.open(t, { context });
  await page.route('**/grants/**', (route) => route.abort('internetdisconnected'));
  const sc = await h.scenario([{ toolCalls: [{ id: 'c1', name: 'delete_file', arguments: { path: '/tmp/a' } }] }]);
  const r = await run(page, async ({ db, tools, model }) => {
    const { gh } = window;
    const agent = await gh.Agent.open({ threadId: 'two', model, storage: { database: db }, tools: [gh.tool(...tools)] });
    const refused = await gh.error(() => agent.grant({ tool: 'delete_file', scope: 'app' }));
    const listed = await gh.error(() => agent.grants());
    const chat = await agent.chat('clean');
    return { refused, listed, status: chat.status, pending: agent.pendingTools().map((e) => e.callId),
      ran: gh.calls.length, rows: (await gh.dumpDb(db)).stores.grants.rows.length };
  }, { db, tools, model: sc.openai() });
  assert.deepEqual([r.refused.name, r.refused.code, r.refused.retryable], ['GatehouseError', 'network', true], JSON.stringify(r));
  assert.equal(r.listed.code, 'network', 'the store holds a grant it cannot read');
  assert.equal(r.status, 'awaiting_approval', 'fail closed: the grant it cannot read approves nothing');
  assert.deepEqual(r.pending, ['c1']);
  assert.equal(r.ran, 0);
  assert.equal(r.rows, 1, `only ${g.id}: nothing more was stored`);
});

test('deleting a thread deletes its thread grants, in IndexedDB and in memory: a new thread of that id is not covered by them', T, async (t) => {
  const { page } = await h.open(t);
  const r = await run(page, async ({ db }) => {
    const { gh } = window;
    const tools = [gh.tool('delete_file', { requireApproval: true }), gh.tool('send', { requireApproval: true })];
    const out = {};
    for (const storage of [{ database: db }, { kind: 'memory', database: db }]) {
      const a = await gh.Agent.open({ threadId: 't', storage, tools });
      const own = await a.grant({ tool: 'delete_file', scope: 'thread' });
      const user = await a.grant({ tool: 'send', scope: 'user' });
      const other = await gh.Agent.open({ threadId: 'u', storage, tools });
      const kept = await other.grant({ tool: 'delete_file', scope: 'thread' });
      await a.dispose();
      await gh.Agent.deleteThread('t', storage);
      const again = await gh.Agent.open({ threadId: 't', storage, tools });
      out[storage.kind ?? 'indexeddb'] = { own: own.id, user: user.id, kept: kept.id,
        listed: (await again.grants()).map((g) => g.id), otherListed: (await other.grants()).map((g) => g.id),
        rows: storage.kind ? null : (await gh.dumpDb(db)).stores.grants.rows.map((x) => x.id).sort() };
    }
    return out;
  }, { db: uid('db') });
  for (const [kind, x] of Object.entries(r)) {
    assert.deepEqual(x.listed, [x.user], `${kind}: the new thread sees only the user grant`);
    assert.deepEqual(x.otherListed.sort(), [x.user, x.kept].sort(), `${kind}: another thread's grant stays`);
  }
  assert.deepEqual(r.indexeddb.rows, [r.indexeddb.user, r.indexeddb.kept].sort(), 'the row is gone');
});
