// MCP tools, gated (docs/design.md, "MCP tools"), against a real MCP server: the official
// TypeScript SDK's McpServer over Streamable HTTP (tests/mcp/server.mjs), on another origin
// than the page (CORS). What the server received comes from its own log of JSON-RPC messages.

import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { run, setup, textOf, uid, until } from './harness.mjs';
import { AUTH_TOKEN, startMcpServer } from '../mcp/server.mjs';

const h = await setup();
let mcp;
before(async () => { mcp = await startMcpServer(); });
after(async () => { await mcp?.close(); await h.close(); });

const T = { timeout: 60_000 };
const call = (...calls) => ({ toolCalls: calls.map(([id, name, args]) => ({ id, name, arguments: args })) });

/** The `tools/call`s the server handled since `from` (a log length): not those it answered
 *  with 404 for a session it forgot, which never reach a tool. */
const callsSince = (from) => mcp.log.slice(from).filter((m) => m.method === 'tools/call' && !m.rejected)
  .map((m) => ({ name: m.params.name, arguments: m.params.arguments }));

/** Defines `window.openMcp(a)` in the page: an agent on `a.thread` with the MCP server `files`. */
async function install(page) {
  await run(page, () => {
    window.openMcp = async ({ model, db, thread, url, server = {}, extra = {} }) => {
      window.agent = await window.gh.Agent.open({ threadId: thread, model, storage: { database: db },
        mcpServers: [{ name: 'files', url, ...server }], ...extra });
      return window.agent;
    };
  });
}

async function openPage(t, context) {
  const opened = await h.open(t, { context });
  await install(opened.page);
  return opened.page;
}

async function reload(page) {
  await h.load(page, true);
  await install(page);
}

test('listed and namespaced with the server\'s schemas; every MCP tool asks; approve sends one tools/call with the exact inputs', T, async (t) => {
  const page = await openPage(t);
  const path = '/tmp/ä b.txt';
  const sc = await h.scenario([call(['c1', 'files__delete_file', { path }]), { text: 'Deleted.' }]);
  const from = mcp.log.length;
  const a = { model: sc.openai(), db: uid('db'), thread: 't', url: mcp.url };
  const r = await run(page, async (a) => {
    const agent = await window.openMcp(a);
    const first = await agent.chat('delete it');
    const pending = agent.pendingTools();
    const before = window.callsBefore;
    const done = await agent.submitDecisions({ c1: 'approve' });
    const record = (await window.gh.dumpDb(a.db)).stores.threads.rows[0];
    return { first, pending, before, done, messages: await agent.messages(), record };
  }, a);
  const reqs = await sc.requests();
  const tools = reqs[0].body.tools.map((x) => x.function);
  assert.deepEqual(tools.map((f) => f.name), ['files__read_file', 'files__delete_file', 'files__fail']);
  assert.equal(tools[1].description, 'Deletes a file for good');
  assert.deepEqual(tools[1].parameters.properties, { path: { type: 'string' }, wait_ms: { type: 'number' } });
  assert.equal(r.first.status, 'awaiting_approval');
  assert.equal(r.pending.length, 1);
  assert.equal(r.pending[0].approval, 'pending');
  assert.deepEqual(r.pending[0].parameters, { mcp: { server: 'files', tool: 'delete_file',
    title: 'Delete a file', destructiveHint: true, openWorldHint: false } });
  assert.ok(!('mcp' in tools[1]), 'the hints are not sent to the model');
  // Exactly one call, with exactly the approved inputs, after the decision only.
  assert.deepEqual(callsSince(from), [{ name: 'delete_file', arguments: { path } }]);
  assert.equal(r.done.status, 'completed');
  assert.equal(textOf(r.done.message), 'Deleted.');
  const result = r.messages.find((m) => m.type === 'tool_call_result');
  assert.equal(result.tools[0].result, `deleted ${path}\n{"deleted":${JSON.stringify(path)}}`);
  // The list is stored with the thread (offline reopen), without any header.
  assert.deepEqual(Object.keys(r.record.mcpTools), ['files']);
  const stored = r.record.mcpTools.files.filter((x) => !x.name.startsWith('added_'));
  assert.deepEqual(stored.map((x) => x.name), ['read_file', 'delete_file', 'fail']);
  assert.deepEqual(stored[1].annotations, { destructiveHint: true, openWorldHint: false });
  assert.ok(!JSON.stringify(r.record).includes('Bearer'), 'no header is stored');
  // The audit trail records the MCP call like any other.
  assert.equal(r.record.auditCount, 1);
});

test('trustReadOnlyHint: the readOnlyHint tool runs without asking, the destructive one asks; reject sends none', T, async (t) => {
  const page = await openPage(t);
  const sc = await h.scenario([
    call(['r1', 'files__read_file', { path: '/a' }], ['d1', 'files__delete_file', { path: '/a' }]),
    { text: 'Read it, did not delete.' },
  ]);
  const from = mcp.log.length;
  const a = { model: sc.openai(), db: uid('db'), thread: 't', url: mcp.url, server: { trustReadOnlyHint: true } };
  const r = await run(page, async (a) => {
    const agent = await window.openMcp(a);
    const first = await agent.chat('read then delete');
    const done = await agent.submitDecisions({ d1: ['reject', 'keep it'] });
    return { first, done, messages: await agent.messages() };
  }, a);
  const [read, del] = r.first.message.tools;
  assert.equal(read.approval, undefined, 'not gated');
  assert.equal(del.approval, 'pending');
  assert.deepEqual(callsSince(from), [{ name: 'read_file', arguments: { path: '/a' } }]);
  const results = r.messages.find((m) => m.type === 'tool_call_result').tools;
  assert.equal(results[0].result, 'contents of /a');
  assert.match(results[1].result, /^TOOL NOT EXECUTED\. The user rejected this action\. User instruction: keep it\./);
  assert.equal(r.done.status, 'completed');
});

test('edit: the tools/call carries the edited inputs; isError becomes a tool error result', T, async (t) => {
  const page = await openPage(t);
  const sc = await h.scenario([
    call(['e1', 'files__delete_file', { path: '/wrong' }], ['f1', 'files__fail', { reason: 'disk full' }]),
    { text: 'Done.' },
  ]);
  const from = mcp.log.length;
  const a = { model: sc.openai(), db: uid('db'), thread: 't', url: mcp.url };
  const r = await run(page, async (a) => {
    const agent = await window.openMcp(a);
    await agent.chat('go');
    const ev = window.gh.events();
    const done = await agent.submitDecisions({ e1: ['edit', { path: '/right' }], f1: 'approve' }, { onEvent: ev.onEvent });
    return { done, events: ev.list, messages: await agent.messages() };
  }, a);
  assert.deepEqual(callsSince(from), [
    { name: 'delete_file', arguments: { path: '/right' } },
    { name: 'fail', arguments: { reason: 'disk full' } },
  ]);
  const results = r.messages.find((m) => m.type === 'tool_call_result').tools;
  assert.match(results[0].result, /^TOOL EXECUTED WITH EDITED ARGUMENTS\./);
  assert.match(results[0].result, /deleted \/right/);
  assert.deepEqual(JSON.parse(results[1].result), { error: 'tool_error', message: 'failed: disk full' });
  const res = r.events.filter((e) => e.type === 'tool_result');
  assert.deepEqual(res.map((e) => e.ok), [true, false]);
  assert.equal(r.done.status, 'completed');
});

test('reload mid-approval, then approve: one tools/call; the card data survives the reload', T, async (t) => {
  const page = await openPage(t);
  const sc = await h.scenario([call(['c1', 'files__delete_file', { path: '/r' }]), { text: 'ok' }]);
  const from = mcp.log.length;
  const a = { model: sc.openai(), db: uid('db'), thread: 't', url: mcp.url };
  await run(page, async (a) => { await (await window.openMcp(a)).chat('go'); }, a);
  await reload(page);
  const r = await run(page, async (a) => {
    const agent = await window.openMcp(a);
    const pending = agent.pendingTools();
    // The UI kit's card, from the stored message alone.
    const { ApprovalCards } = await import('/pkg/ui/cards.js');
    const cards = new ApprovalCards({ onDecide: async () => {} });
    document.body.append(cards.el);
    cards.update(agent.lastMessage());
    const card = cards.el.querySelector('.gh-card');
    const shown = { name: card.querySelector('.gh-card-name').textContent,
      tech: card.querySelector('.gh-card-tech').textContent,
      hints: card.querySelector('.gh-card-hints').textContent };
    const done = await agent.submitDecisions({ c1: 'approve' });
    return { pending, done, shown };
  }, a);
  assert.equal(r.pending[0].parameters.mcp.destructiveHint, true);
  assert.deepEqual(r.shown, { name: 'Delete a file', tech: 'files__delete_file',
    hints: 'MCP tool "delete_file" of server "files". Hints from the server (not verified): ' +
      'title "Delete a file", destructive, closed world.' });
  assert.equal(r.done.status, 'completed');
  assert.deepEqual(callsSince(from), [{ name: 'delete_file', arguments: { path: '/r' } }]);
});

// In Chromium the page dies with the call in flight. Firefox still runs the page's code as
// the reload cuts its request off (a NetworkError), which was stored as an "unreachable"
// tool error though the server had the call; a call that fails while the page is being left
// is now re-gated as well (src/driver/tools.rs, `Execution::CutOff`).
test('a page that died while its tools/call was in flight: re-gated on open, never re-sent', T, async (t) => {
  const page = await openPage(t);
  const sc = await h.scenario([call(['k1', 'files__delete_file', { path: '/k', wait_ms: 3000 }]), { text: 'ok' }]);
  const from = mcp.log.length;
  const a = { model: sc.openai(), db: uid('db'), thread: 't', url: mcp.url };
  await run(page, async (a) => {
    const agent = await window.openMcp(a);
    await agent.chat('go');
    agent.submitDecisions({ k1: 'approve' }); // cut off by the reload below
  }, a);
  await until(() => callsSince(from).length === 1);
  await reload(page);
  const r = await run(page, async (a) => {
    const agent = await window.openMcp(a);
    return { pending: agent.pendingTools(), status: agent.status() };
  }, a);
  assert.equal(r.status, 'awaiting_approval');
  assert.match(r.pending[0].approvalReason, /may or may not have taken effect/);
  await new Promise((res) => setTimeout(res, 3500)); // the first call has ended at the server
  assert.equal(callsSince(from).length, 1, 'not sent again');
  const done = await run(page, async () => window.agent.submitDecisions({ k1: ['reject', 'it ran'] }));
  assert.equal(done.status, 'completed');
  assert.equal(callsSince(from).length, 1);
});

test('the server took the tools/call and its answer broke off: re-gated with a cut_off mcp_error, never re-sent', T, async (t) => {
  const page = await openPage(t);
  const sc = await h.scenario([call(['x1', 'files__delete_file', { path: '/x', wait_ms: 1000 }]), { text: 'ok' }]);
  const from = mcp.log.length;
  const a = { model: sc.openai(), db: uid('db'), thread: 't', url: mcp.url };
  await run(page, async (a) => { await (await window.openMcp(a)).chat('go'); }, a);
  mcp.cutNextCall(200);
  const r = await run(page, async () => {
    const events = [];
    const r = await window.agent.submitDecisions({ x1: 'approve' }, { onEvent: (e) => events.push(e) });
    return { status: r.status, pending: window.agent.pendingTools(), events: events.filter((e) => e.type === 'mcp_error') };
  });
  assert.equal(r.status, 'awaiting_approval', JSON.stringify(r));
  assert.deepEqual(r.pending.map((p) => p.callId), ['x1']);
  assert.match(r.pending[0].approvalReason, /may or may not have taken effect/);
  assert.deepEqual(r.events.map((e) => [e.server, e.code]), [['files', 'cut_off']]);
  assert.match(r.events[0].message, /took the request, but its answer broke off/);
  await new Promise((res) => setTimeout(res, 1200)); // the tool has ended at the server
  assert.equal(callsSince(from).length, 1, 'sent once, not again');
  // Its human decides anew: reject reaches the model, nothing is sent.
  const done = await run(page, async () => window.agent.submitDecisions({ x1: ['reject', 'it ran'] }));
  assert.equal(done.status, 'completed');
  assert.equal(callsSince(from).length, 1);
});

test('an initialize or tools/list whose answer broke off: an unreachable mcp_error that says so (not cut_off: no tool ran), asked again before the model call', T, async (t) => {
  const page = await openPage(t);
  for (const method of ['tools/list', 'initialize']) {
    const sc = await h.scenario([{ text: 'one' }]);
    const a = { model: sc.openai(), db: uid('db'), thread: 't', url: mcp.url };
    const before = mcp.count(method);
    mcp.cutNext(method, 50);
    const r = await run(page, async (a) => {
      const agent = await window.openMcp(a);
      const events = [];
      const st = await agent.chat('first', { onEvent: (e) => events.push(e) });
      return { status: st.status, events: events.filter((e) => e.type === 'mcp_error') };
    }, a);
    assert.equal(r.status, 'completed', method);
    assert.deepEqual(r.events.map((e) => [e.server, e.code]), [['files', 'unreachable']], method);
    assert.match(r.events[0].message, /broke off its answer/, method);
    assert.doesNotMatch(r.events[0].message, /may or may not/, method);
    assert.equal(mcp.count(method), before + 2, `${method}: asked again before the model call`);
    const [req] = await sc.requests();
    assert.ok(req.body.tools.some((x) => x.function.name === 'files__read_file'), method);
  }
});

test('the server restarted (its session gone, 404): initialised again transparently, one tools/call', T, async (t) => {
  const page = await openPage(t);
  const sc = await h.scenario([call(['s1', 'files__delete_file', { path: '/s' }]), { text: 'ok' }]);
  const a = { model: sc.openai(), db: uid('db'), thread: 't', url: mcp.url };
  await run(page, async (a) => { await (await window.openMcp(a)).chat('go'); }, a);
  const inits = mcp.count('initialize');
  const lists = mcp.count('tools/list');
  await mcp.restart();
  const from = mcp.log.length;
  const done = await run(page, async () => window.agent.submitDecisions({ s1: 'approve' }));
  assert.equal(done.status, 'completed');
  assert.equal(mcp.count('initialize'), inits + 1);
  assert.equal(mcp.count('tools/list'), lists + 1, 'listed again on the new session');
  assert.deepEqual(callsSince(from), [{ name: 'delete_file', arguments: { path: '/s' } }]);
  const refused = mcp.log.slice(from).filter((m) => m.rejected).map((m) => m.method);
  assert.deepEqual(refused, ['tools/call'], 'the old session\'s request was refused, then sent once more');
});

test('list_changed: the next model request offers the new list', T, async (t) => {
  const page = await openPage(t);
  const sc = await h.scenario([{ text: 'one' }, { text: 'two' }]);
  const a = { model: sc.openai(), db: uid('db'), thread: 't', url: mcp.url };
  await run(page, async (a) => { await (await window.openMcp(a)).chat('first'); }, a);
  const lists = mcp.count('tools/list');
  mcp.addTool(`added_${Date.now() % 100000}`);
  await new Promise((r) => setTimeout(r, 300)); // the notification travels on the GET stream
  await run(page, async () => { await window.agent.chat('second'); });
  const reqs = await sc.requests();
  const names = (i) => reqs[i].body.tools.map((x) => x.function.name);
  assert.ok(!names(0).some((n) => n.startsWith('files__added_')));
  assert.ok(names(1).some((n) => n.startsWith('files__added_')), names(1).join());
  assert.equal(mcp.count('tools/list'), lists + 1);
});

test('unreachable server, 401 and a CORS refusal: a tool error result and an mcp_error event; the thread goes on from the stored list', T, async (t) => {
  const page = await openPage(t);
  const sc = await h.scenario([
    { text: 'hi' },
    call(['u1', 'files__read_file', { path: '/u' }]), { text: 'Could not read it.' },
    call(['a1', 'files__read_file', { path: '/v' }]), { text: 'Not allowed.' },
    call(['n1', 'files__read_file', { path: '/w' }]), { text: 'Refused.' },
  ]);
  const db = uid('db');
  // First opened with the right token: the list is stored with the thread's first write.
  const authed = { model: sc.openai(), db, thread: 't', url: mcp.authUrl,
    server: { headers: { authorization: `Bearer ${AUTH_TOKEN}` } } };
  await run(page, async (a) => { await (await window.openMcp(a)).chat('hello'); }, authed);
  const dead = 'http://127.0.0.1:9/mcp'; // nothing listens on the discard port
  const from = mcp.log.length;
  const r = await run(page, async ({ a, dead }) => {
    const gh = window.gh;
    const out = {};
    let agent = await window.openMcp({ ...a, url: dead, server: {} });
    let ev = gh.events();
    out.first = await agent.chat('read /u', { onEvent: ev.onEvent });
    out.done1 = await agent.submitDecisions({ u1: 'approve' }, { onEvent: ev.onEvent });
    out.events1 = ev.list.filter((e) => e.type === 'mcp_error' || e.type === 'tool_result');
    agent = await window.openMcp({ ...a, server: { headers: { authorization: 'Bearer wrong' } } });
    ev = gh.events();
    await agent.chat('read /v', { onEvent: ev.onEvent });
    out.done2 = await agent.submitDecisions({ a1: 'approve' }, { onEvent: ev.onEvent });
    out.events2 = ev.list.filter((e) => e.type === 'mcp_error' || e.type === 'tool_result');
    agent = await window.openMcp({ ...a, url: a.noCorsUrl, server: {} });
    ev = gh.events();
    await agent.chat('read /w', { onEvent: ev.onEvent });
    out.done3 = await agent.submitDecisions({ n1: 'approve' }, { onEvent: ev.onEvent });
    out.events3 = ev.list.filter((e) => e.type === 'mcp_error' || e.type === 'tool_result');
    return out;
  }, { a: { ...authed, noCorsUrl: mcp.noCorsUrl }, dead }, 40_000);
  assert.equal(r.first.status, 'awaiting_approval', 'the stored list offered the tool');
  assert.equal(r.done1.status, 'completed');
  assert.equal(textOf(r.done1.message), 'Could not read it.');
  const unreachable = r.events1.filter((e) => e.type === 'mcp_error');
  assert.ok(unreachable.length >= 1 && unreachable.every((e) => e.code === 'unreachable' && e.server === 'files'));
  const res1 = r.events1.find((e) => e.type === 'tool_result');
  assert.equal(res1.ok, false);
  assert.match(JSON.stringify(res1.result), /unreachable/);
  assert.equal(r.done2.status, 'completed');
  const unauthorized = r.events2.filter((e) => e.type === 'mcp_error');
  assert.ok(unauthorized.length >= 1 && unauthorized.every((e) => e.code === 'unauthorized' && e.status === 401));
  assert.equal(r.events2.find((e) => e.type === 'tool_result').ok, false);
  // A server that sends no CORS headers: the browser refuses it like an unreachable one.
  assert.equal(r.done3.status, 'completed');
  const refused = r.events3.filter((e) => e.type === 'mcp_error');
  assert.ok(refused.length >= 1 && refused.every((e) => e.code === 'unreachable'));
  assert.match(refused[0].message, /CORS/);
  assert.equal(r.events3.find((e) => e.type === 'tool_result').ok, false);
  assert.deepEqual(callsSince(from), [], 'no call reached a tool');
});

test('two tabs on one thread approve the same MCP call: one tools/call', T, async (t) => {
  const context = await h.newContext();
  t.after(() => context.close().catch(() => {}));
  const pa = await openPage(t, context);
  const pb = await openPage(t, context);
  const sc = await h.scenario([call(['t1', 'files__delete_file', { path: '/two', wait_ms: 300 }]), { text: 'ok' }]);
  const from = mcp.log.length;
  const a = { model: sc.openai(), db: uid('db'), thread: 't', url: mcp.url };
  await run(pa, async (a) => { await (await window.openMcp(a)).chat('go'); }, a);
  await run(pb, async (a) => { await window.openMcp(a); }, a);
  const decide = (page) => run(page, async () => {
    try { return (await window.agent.submitDecisions({ t1: 'approve' })).status; } catch (e) { return e.code; }
  });
  const outcomes = await Promise.all([decide(pa), decide(pb)]);
  assert.ok(outcomes.includes('completed'), outcomes.join());
  assert.deepEqual(callsSince(from), [{ name: 'delete_file', arguments: { path: '/two', wait_ms: 300 } }]);
});

test('an aborted run sends notifications/cancelled for its tools/call', T, async (t) => {
  const page = await openPage(t);
  const sc = await h.scenario([call(['x1', 'files__delete_file', { path: '/x', wait_ms: 2000 }]), { text: 'ok' }]);
  const from = mcp.log.length;
  const a = { model: sc.openai(), db: uid('db'), thread: 't', url: mcp.url };
  await run(page, async (a) => { await (await window.openMcp(a)).chat('go'); }, a);
  await run(page, () => {
    window.ac = new AbortController();
    window.decided = window.agent.submitDecisions({ x1: 'approve' }, { signal: window.ac.signal })
      .then((s) => s.status, (e) => e.code);
  });
  await until(() => callsSince(from).length === 1);
  const outcome = await run(page, async () => { window.ac.abort(); return window.decided; });
  assert.equal(outcome, 'aborted');
  await until(() => mcp.log.slice(from).some((m) => m.method === 'notifications/cancelled'));
  const sent = mcp.log.slice(from).find((m) => m.method === 'tools/call');
  const cancelled = mcp.log.slice(from).find((m) => m.method === 'notifications/cancelled');
  assert.equal(cancelled.params.requestId, sent.id);
});

test('a listed tool whose name collides with an app tool is skipped with a warning event', T, async (t) => {
  const page = await openPage(t);
  const sc = await h.scenario([{ text: 'hi' }]);
  const a = { model: sc.openai(), db: uid('db'), thread: 't', url: mcp.url };
  const r = await run(page, async (a) => {
    const agent = await window.openMcp({ ...a, extra: { tools: [window.gh.tool('files__read_file')] } });
    const ev = window.gh.events();
    await agent.chat('hello', { onEvent: ev.onEvent });
    return ev.list.filter((e) => e.type === 'warning');
  }, a);
  assert.equal(r.length, 1);
  assert.equal(r[0].code, 'mcp_tool_skipped');
  assert.match(r[0].message, /read_file/);
  const names = (await sc.requests())[0].body.tools.map((x) => x.function.name)
    .filter((n) => !n.startsWith('files__added_')); // added by the list_changed test
  assert.deepEqual(names, ['files__read_file', 'files__delete_file', 'files__fail']);
  const offered = (await sc.requests())[0].body.tools[0].function;
  assert.equal(offered.description, 'The files__read_file tool', 'the app\'s tool, not the server\'s');
});

test('mcpServers is checked like every option: unknown keys, names, duplicates are invalid_config', T, async (t) => {
  const { page } = await h.open(t);
  const r = await run(page, async (url) => {
    const { gh } = window;
    const open = (servers) => gh.error(() => gh.Agent.open({ threadId: 't', storage: { kind: 'memory' }, mcpServers: servers }));
    return {
      typo: await open([{ name: 'a', url, trustReadOnlyHints: true }]),
      noUrl: await open([{ name: 'a' }]),
      badName: await open([{ name: 'a__b', url }]),
      twice: await open([{ name: 'a', url }, { name: 'a', url }]),
      badHeaders: await open([{ name: 'a', url, headers: { x: 1 } }]),
      badTools: await open([{ name: 'a', url, tools: 'read_file' }]),
    };
  }, mcp.url);
  for (const [k, e] of Object.entries(r)) assert.equal(e?.code, 'invalid_config', `${k}: ${JSON.stringify(e)}`);
  assert.match(r.typo.message, /trustReadOnlyHints/);
});

test('an agent keeps one GET stream per server open until it is disposed', T, async (t) => {
  const own = await startMcpServer(); // its own server: the count is this test's alone
  t.after(() => own.close());
  const page = await openPage(t);
  const sc = await h.scenario([{ text: 'hi' }]);
  const a = { model: sc.openai(), db: uid('db'), thread: 't', url: own.url };
  await run(page, async (a) => { await window.openMcp(a); }, a);
  await until(() => own.openStreams() === 1);
  await run(page, async () => { await window.agent.dispose(); });
  await until(() => own.openStreams() === 0);
});
