// Tools (README "Approval semantics" 1, 6, 7): external tools, a throwing execute, approval policies (reason
// strings, async, failing), non-gated calls waiting for gated ones, per-thread tool policies.

import { after, test } from 'node:test';
import assert from 'node:assert/strict';
import { run, setup, textOf, uid } from './harness.mjs';

const h = await setup();
after(() => h.close());

const T = { timeout: 60_000 };
const call = (id, name, args) => ({ id, name, arguments: args });

test('external tool: awaiting_tool_results, partial then full submitToolResults, unknown id refused', T, async (t) => {
  const { page } = await h.open(t);
  const sc = await h.scenario([
    { toolCalls: [call('ext_1', 'lookup', { path: '/a' }), call('ext_2', 'lookup', { path: '/b' })] },
    { text: 'Both looked up.' },
  ]);
  const db = uid('db');
  const r = await run(page, async ({ model, db }) => {
    const { gh } = window;
    const { execute, ...lookup } = gh.tool('lookup');
    const agent = await gh.Agent.open({ threadId: 't', model, storage: { database: db }, tools: [lookup] });
    const out = { first: await agent.chat('look up /a and /b') };
    out.waiting = agent.pendingToolResults();
    out.pendingTools = agent.pendingTools();
    out.status = agent.status();
    out.unknown = await gh.error(() => agent.submitToolResults({ ext_1: 'x', nope: 'y' }));
    out.invalid = await gh.error(() => agent.submitToolResults({}));
    out.afterRefused = agent.pendingToolResults().map((e) => e.callId);
    out.partial = await agent.submitToolResults({ ext_1: { status: 'open', n: 1 } });
    out.waitingAfterPartial = agent.pendingToolResults().map((e) => e.callId);
    out.record = (await gh.dumpDb(db)).stores.threads.rows[0];
    out.again = await gh.error(() => agent.submitToolResults({ ext_1: 'twice' }));
    out.conflict = await gh.error(() => agent.chat('new message meanwhile'));
    out.decision = await gh.error(() => agent.submitDecisions({ ext_2: 'approve' }));
    out.full = await agent.submitToolResults({ ext_2: 'plain text result' });
    out.late = await gh.error(() => agent.submitToolResults({ ext_2: 'late' }));
    out.messages = await agent.messages();
    return out;
  }, { model: sc.openai(), db });

  assert.equal(r.first.status, 'awaiting_tool_results');
  assert.equal(r.first.message.type, 'tool_call');
  assert.ok(r.first.message.tools.every((e) => !('approval' in e)), 'external calls are not gated');
  assert.equal(r.status, 'awaiting_tool_results');
  assert.deepEqual(r.waiting, r.first.message.tools);
  assert.deepEqual(r.waiting.map((e) => [e.callId, e.inputs.path]), [['ext_1', '/a'], ['ext_2', '/b']]);
  assert.deepEqual(r.pendingTools, []);
  assert.equal(r.unknown?.code, 'unknown_call_id');
  assert.equal(r.unknown.callId, 'nope');
  assert.equal(r.invalid?.code, 'invalid_tool_results');
  assert.deepEqual(r.afterRefused, ['ext_1', 'ext_2'], 'a refused payload stages nothing');
  assert.equal(r.partial.status, 'awaiting_tool_results');
  assert.deepEqual(r.waitingAfterPartial, ['ext_2']);
  assert.deepEqual(r.record.run.results, [{ callId: 'ext_1', result: '{"status":"open","n":1}' }], 'partial result persisted');
  assert.equal(r.again?.code, 'unknown_call_id', 'an answered call is no longer waiting');
  assert.equal(r.conflict?.code, 'conflict');
  assert.ok(['not_suspended', 'unknown_call_id'].includes(r.decision?.code), `decisions while awaiting results: ${r.decision?.code}`);
  assert.equal(r.full.status, 'completed');
  assert.equal(textOf(r.full.message), 'Both looked up.');
  assert.equal(r.late?.code, 'not_suspended');
  assert.deepEqual(r.messages[2].tools.map((e) => e.result), ['{"status":"open","n":1}', 'plain text result']);
  const reqs = await sc.requests();
  assert.equal(reqs.length, 2);
  assert.deepEqual(reqs[1].body.messages.filter((m) => m.role === 'tool'), [
    { role: 'tool', tool_call_id: 'ext_1', content: '{"status":"open","n":1}' },
    { role: 'tool', tool_call_id: 'ext_2', content: 'plain text result' },
  ]);
  assert.ok(!JSON.stringify(reqs).includes('new message meanwhile'));
});

test('a throwing execute becomes a tool_error result for the model; the thread goes on', T, async (t) => {
  const { page } = await h.open(t);
  const sc = await h.scenario([{ toolCalls: [call('call_boom', 'explode', { path: '/x' })] }, { text: 'The tool failed, sorry.' }]);
  const r = await run(page, async ({ model, db }) => {
    const { gh } = window;
    const events = gh.events();
    const agent = await gh.Agent.open({ threadId: 't', model, storage: { database: db },
      tools: [gh.tool('explode', { execute: async () => { throw new Error('disk is full'); } })] });
    const state = await agent.chat('explode /x', { onEvent: events.onEvent });
    return { state, events: events.list, messages: await agent.messages(), status: agent.status() };
  }, { model: sc.openai(), db: uid('db') });
  assert.equal(r.state.status, 'completed');
  assert.equal(r.status, 'idle');
  const result = JSON.parse(r.messages[2].tools[0].result);
  assert.equal(result.error, 'tool_error');
  assert.match(result.message, /disk is full/);
  const ev = r.events.find((e) => e.type === 'tool_result');
  assert.equal(ev.ok, false);
  assert.equal(ev.callId, 'call_boom');
  assert.match(String(ev.result), /disk is full/);
  const reqs = await sc.requests();
  assert.equal(reqs[1].body.messages.at(-1).content, r.messages[2].tools[0].result);
});

test('approval policies: reason string, true, false, async, throwing; non-gated calls wait and run in message order', T, async (t) => {
  const { page } = await h.open(t);
  const sc = await h.scenario([
    { toolCalls: [
      call('p_tmp', 'delete_file', { path: '/tmp/cache' }), // policy -> false: not gated
      call('p_etc', 'delete_file', { path: '/etc/passwd' }), // policy -> reason string
      call('p_async', 'archive', { path: '/home/me' }), // async policy -> string after a delay
      call('p_true', 'rename', { path: '/r' }), // policy -> true
      call('p_throw', 'wipe', { path: '/w' }), // policy throws: fail closed
      call('p_flat', 'flat', { path: '/f' }), // requireApproval: false beats the policy
      call('p_auto', 'auto', { path: '/a' }), // autoApprove: true beats everything
    ] },
    { text: 'All handled.' },
  ]);
  const r = await run(page, async ({ model, db }) => {
    const { gh } = window;
    const log = (name, inputs) => gh.policyCalls.push({ tool: name, inputs });
    const agent = await gh.Agent.open({ threadId: 't', model, storage: { database: db }, tools: [
      gh.tool('delete_file', { approvalPolicy: (i) => { log('delete_file', i); return i.path.startsWith('/etc') ? 'System files are protected' : false; } }),
      gh.tool('archive', { approvalPolicy: async (i) => { log('archive', i); await gh.sleep(50); return 'Archiving takes long'; } }),
      gh.tool('rename', { approvalPolicy: () => true }),
      gh.tool('wipe', { approvalPolicy: () => { throw new Error('policy crashed'); } }),
      gh.tool('flat', { requireApproval: false, approvalPolicy: () => 'never asked' }),
      gh.tool('auto', { autoApprove: true, requireApproval: true }),
    ] });
    const state = await agent.chat('do all of it');
    const callsWhilePending = gh.calls.length;
    const pending = agent.pendingTools().map((e) => e.callId);
    const done = await agent.submitDecisions({ p_etc: 'approve', p_async: 'approve', p_true: ['reject', 'no renames'], p_throw: 'approve' });
    return { state, callsWhilePending, pending, done, calls: gh.calls.map((c) => c.callId), policyCalls: gh.policyCalls };
  }, { model: sc.openai(), db: uid('db') });

  assert.equal(r.state.status, 'awaiting_approval');
  const byId = Object.fromEntries(r.state.message.tools.map((e) => [e.callId, e]));
  assert.ok(!('approval' in byId.p_tmp), 'policy false: not gated');
  assert.deepEqual([byId.p_etc.approval, byId.p_etc.approvalReason], ['pending', 'System files are protected']);
  assert.deepEqual([byId.p_async.approval, byId.p_async.approvalReason], ['pending', 'Archiving takes long']);
  assert.deepEqual([byId.p_true.approval, byId.p_true.approvalReason], ['pending', null]);
  assert.equal(byId.p_throw.approval, 'pending', 'a throwing policy fails closed');
  assert.match(byId.p_throw.approvalReason, /policy crashed/);
  assert.ok(!('approval' in byId.p_flat), 'requireApproval: false is not gated');
  assert.ok(!('approval' in byId.p_auto), 'autoApprove is not gated');
  assert.deepEqual(r.pending, ['p_etc', 'p_async', 'p_true', 'p_throw']);
  assert.equal(r.callsWhilePending, 0, 'non-gated calls wait for the decisions');
  assert.deepEqual(r.policyCalls, [
    { tool: 'delete_file', inputs: { path: '/tmp/cache' } },
    { tool: 'delete_file', inputs: { path: '/etc/passwd' } },
    { tool: 'archive', inputs: { path: '/home/me' } },
  ]);
  assert.equal(r.done.status, 'completed');
  assert.deepEqual(r.calls, ['p_tmp', 'p_etc', 'p_async', 'p_throw', 'p_flat', 'p_auto'], 'message order, rejected one skipped');
});

/** One model turn with `toolCalls` against a gated delete_file, then a text turn; the thread. */
async function validationRun(t, toolCalls) {
  const { page } = await h.open(t);
  const sc = await h.scenario([{ toolCalls }, { text: 'I will fix my arguments.' }]);
  const r = await run(page, async ({ model, db }) => {
    const { gh } = window;
    const agent = await gh.Agent.open({ threadId: 't', model, storage: { database: db }, tools: [gh.tool('delete_file', { requireApproval: true })] });
    const state = await agent.chat('delete it');
    return { state, calls: gh.calls.length, messages: await agent.messages() };
  }, { model: sc.openai(), db: uid('db') });
  return { ...r, reqs: await sc.requests() };
}

function assertInputValidation(r, n) {
  assert.equal(r.state.status, 'completed', 'invalid inputs are never gated');
  assert.equal(r.calls, 0);
  const [, callMsg, results] = r.messages;
  assert.ok(callMsg.tools.every((e) => !('approval' in e)), 'not gated');
  assert.equal(callMsg.resume_token, undefined, 'nothing suspended');
  const parsed = results.tools.map((e) => JSON.parse(e.result));
  assert.deepEqual(parsed.map((x) => x.error), Array(n).fill('input_validation'));
  assert.equal(r.reqs.length, 2);
  assert.deepEqual(r.reqs[1].body.messages.filter((m) => m.role === 'tool').map((m) => JSON.parse(m.content).error),
    Array(n).fill('input_validation'));
  return parsed;
}

test('input validation: invalid JSON arguments or a missing required property are not gated; the model gets input_validation', T, async (t) => {
  const r = await validationRun(t, [call('bad_json', 'delete_file', '{"path": "/unterminated'), call('missing', 'delete_file', {})]);
  const [, missing] = assertInputValidation(r, 2);
  assert.ok(Array.isArray(missing.details) && missing.details.some((d) => d.includes('path')), JSON.stringify(missing));
});

test('input validation: a schema type mismatch ({ path: 42 } for a string) is not gated', {
  ...T,
}, async (t) => {
  const r = await validationRun(t, [call('bad_type', 'delete_file', { path: 42 })]);
  assertInputValidation(r, 1);
});

test('setToolPolicy: persisted with the thread across a reload, inherited by no other thread', T, async (t) => {
  const { page } = await h.open(t);
  const sc = await h.scenario([
    { toolCalls: [call('pol_1', 'delete_file', { path: '/p1' })] }, { text: 'Ran without asking.' },
    { toolCalls: [call('pol_2', 'delete_file', { path: '/p2' })] },
    { toolCalls: [call('pol_3', 'delete_file', { path: '/p3' })] }, { text: 'It is disabled.' },
  ]);
  const args = { model: sc.openai(), db: uid('db') };
  const openAgent = `(db, model, thread) => window.gh.Agent.open({ threadId: thread, model, storage: { database: db },
    tools: [window.gh.tool('delete_file', { requireApproval: true }), window.gh.tool('search')] })`;
  const before = await run(page, async ({ model, db, openAgent }) => {
    const agent = await eval(openAgent)(db, model, 'A');
    const defaults = agent.toolPolicies();
    await agent.setToolPolicy('delete_file', { autoApprove: true });
    const unknown = await window.gh.error(() => agent.setToolPolicy('nope', { enabled: false }));
    return { defaults, set: agent.toolPolicies(), unknown, record: (await window.gh.dumpDb(db)).stores.threads.rows[0] };
  }, { ...args, openAgent });
  assert.deepEqual(before.defaults, { delete_file: { enabled: true, autoApprove: false }, search: { enabled: true, autoApprove: false } });
  assert.deepEqual(before.set.delete_file, { enabled: true, autoApprove: true });
  assert.equal(before.unknown?.code, 'unknown_tool');
  assert.deepEqual(before.record.policies, { delete_file: { autoApprove: true } });

  await h.load(page, true);
  const r = await run(page, async ({ model, db, openAgent }) => {
    const a = await eval(openAgent)(db, model, 'A');
    const out = { reloaded: a.toolPolicies(), aChat: await a.chat('delete /p1'), calls: window.gh.calls.length };
    const b = await eval(openAgent)(db, model, 'B');
    out.bPolicies = b.toolPolicies();
    out.bChat = await b.chat('delete /p2');
    // Disabled for thread A only: not offered to the model any more.
    await a.setToolPolicy('delete_file', { enabled: false, autoApprove: null });
    out.disabled = a.toolPolicies();
    out.aChat2 = await a.chat('delete /p3 anyway');
    out.calls2 = window.gh.calls.length;
    out.aMessages = await a.messages();
    return out;
  }, { ...args, openAgent });
  assert.deepEqual(r.reloaded.delete_file, { enabled: true, autoApprove: true }, 'persisted across the reload');
  assert.equal(r.aChat.status, 'completed', 'autoApprove ran the call without asking');
  assert.equal(r.calls, 1);
  assert.deepEqual(r.bPolicies.delete_file, { enabled: true, autoApprove: false }, 'thread B starts from the tool defaults');
  assert.equal(r.bChat.status, 'awaiting_approval');
  assert.deepEqual(r.disabled.delete_file, { enabled: false, autoApprove: false });
  const reqs = await sc.requests();
  assert.deepEqual(reqs[0].body.tools.map((x) => x.function.name), ['delete_file', 'search']);
  assert.deepEqual(reqs[3].body.tools.map((x) => x.function.name), ['search'], 'a disabled tool is not offered');
  assert.equal(r.aChat2.status, 'completed');
  assert.equal(r.calls2, 1, 'a disabled tool never runs');
  const denied = r.aMessages.at(-2);
  assert.equal(denied.type, 'tool_call_result');
  assert.equal(JSON.parse(denied.tools[0].result).error, 'tool_permission_denied');
  assert.equal(JSON.parse(reqs[4].body.messages.at(-1).content).error, 'tool_permission_denied');
});

test('a per-thread autoApprove: false replaces the tool\'s autoApprove: true (then the flat requireApproval gates it)', T, async (t) => {
  const { page } = await h.open(t);
  const sc = await h.scenario([{ toolCalls: [call('ov_1', 'delete_file', { path: '/o' })] }, { text: 'ok' }]);
  const r = await run(page, async ({ model, db }) => {
    const { gh } = window;
    const agent = await gh.Agent.open({ threadId: 'o', model, storage: { database: db },
      tools: [gh.tool('delete_file', { autoApprove: true, requireApproval: true })] });
    const before = agent.toolPolicies().delete_file;
    await agent.setToolPolicy('delete_file', { autoApprove: false });
    const state = await agent.chat('delete /o');
    return { before, after: agent.toolPolicies().delete_file, state, calls: gh.calls.length };
  }, { model: sc.openai(), db: uid('db') });
  assert.deepEqual(r.before, { enabled: true, autoApprove: true });
  assert.deepEqual(r.after, { enabled: true, autoApprove: false });
  assert.equal(r.state.status, 'awaiting_approval');
  assert.equal(r.state.message.tools[0].approval, 'pending');
  assert.equal(r.calls, 0);
});
