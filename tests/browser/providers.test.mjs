// Providers (README "The JS API" model options, "Errors"): Anthropic end to end (headers, wire shapes, no key in IndexedDB),
// OpenAI cross-origin through CORS, an unreachable server, the offline demo model, the custom
// provider.

import { after, test } from 'node:test';
import assert from 'node:assert/strict';
import { run, setup, textOf, uid } from './harness.mjs';

const h = await setup();
after(() => h.close());

const T = { timeout: 60_000 };

/** Every IndexedDB database of the page, every store, every row, as one string. */
const dumpAllDatabases = (page) => run(page, async () => {
  const out = {};
  for (const { name } of await indexedDB.databases()) out[name] = await window.gh.dumpDb(name);
  return JSON.stringify(out);
});

test('Anthropic happy path: browser-access and x-api-key headers, tool_use/tool_result wire shapes, key never in IndexedDB', T, async (t) => {
  const { page } = await h.open(t);
  const key = `sk-ant-e2e-${uid('SECRET')}`;
  const headerSecret = `hdr-${uid('SECRET')}`;
  const sc = await h.scenario([
    { text: 'Let me delete it.', toolCalls: [{ id: 'toolu_01A2B3C4D5E6F7', name: 'delete_file', arguments: { path: 'C:/old_logs.txt' } }], argChunk: 2, usage: { input: 120, output: 30 } },
    { text: 'Deleted C:/old_logs.txt.' },
  ]);
  const db = uid('db');
  const r = await run(page, async ({ model, db }) => {
    const { gh } = window;
    const agent = await gh.Agent.open({ threadId: 'anth', model, instructions: 'Be careful.', storage: { database: db },
      tools: [gh.tool('delete_file', { approvalPolicy: () => 'Deleting a file is irreversible' })] });
    const first = await agent.chat('Clean up the old logs');
    const done = await agent.submitDecisions({ toolu_01A2B3C4D5E6F7: 'approve' });
    return { first, done, calls: gh.calls, messages: await agent.messages() };
  }, { model: sc.anthropic({ apiKey: key, headers: { 'x-app-token': headerSecret } }), db });

  assert.equal(r.first.status, 'awaiting_approval');
  const entry = r.first.message.tools[0];
  assert.deepEqual([entry.callId, entry.approval, entry.approvalReason], ['toolu_01A2B3C4D5E6F7', 'pending', 'Deleting a file is irreversible']);
  assert.deepEqual(entry.inputs, { path: 'C:/old_logs.txt' });
  assert.equal(textOf(r.first.message), 'Let me delete it.');
  assert.equal(r.first.message.usage.input_tokens, 120);
  assert.equal(r.first.message.usage.output_tokens, 30);
  assert.equal(r.done.status, 'completed');
  assert.equal(textOf(r.done.message), 'Deleted C:/old_logs.txt.');
  assert.equal(r.done.message.stop_reason, 'end_turn');
  assert.deepEqual(r.calls.map((c) => c.inputs), [{ path: 'C:/old_logs.txt' }]);

  const reqs = await sc.requests();
  assert.equal(reqs.length, 2);
  for (const req of reqs) {
    assert.equal(req.provider, 'anthropic');
    assert.equal(req.path, `/s/${sc.id}/v1/messages`);
    assert.equal(req.headers['anthropic-dangerous-direct-browser-access'], 'true');
    assert.equal(req.headers['x-api-key'], key);
    assert.equal(req.headers['anthropic-version'], '2023-06-01');
    assert.equal(req.headers['x-app-token'], headerSecret);
    assert.equal(req.headers.authorization, undefined);
  }
  const [b0, b1] = reqs.map((x) => x.body);
  assert.equal(b0.stream, true);
  assert.equal(b0.model, 'claude-test');
  assert.equal(typeof b0.max_tokens, 'number');
  assert.ok(JSON.stringify(b0.system).includes('Be careful.'));
  assert.deepEqual(b0.tools.map((x) => [x.name, x.input_schema.required]), [['delete_file', ['path']]]);
  assert.deepEqual(b0.messages.map((m) => m.role), ['user']);
  const blocks = (m) => (typeof m.content === 'string' ? [{ type: 'text', text: m.content }] : m.content);
  const toolUse = blocks(b1.messages[1]).find((x) => x.type === 'tool_use');
  assert.deepEqual({ ...toolUse, cache_control: undefined }, { type: 'tool_use', id: 'toolu_01A2B3C4D5E6F7', name: 'delete_file', input: { path: 'C:/old_logs.txt' }, cache_control: undefined });
  const toolResult = blocks(b1.messages[2]).find((x) => x.type === 'tool_result');
  assert.equal(toolResult.tool_use_id, 'toolu_01A2B3C4D5E6F7');
  assert.equal(JSON.stringify(toolResult.content).includes('C:/old_logs.txt'), true);

  const everything = await dumpAllDatabases(page);
  assert.ok(everything.includes('Clean up the old logs'), 'the dump does contain the thread');
  assert.ok(!everything.includes(key), 'the API key is not in IndexedDB');
  assert.ok(!everything.includes(headerSecret), 'a secret extra header is not in IndexedDB');
});

test('OpenAI cross-origin (CORS): streamed approval flow against a second origin, Authorization sent, key not stored', T, async (t) => {
  const { page, errors } = await h.open(t);
  assert.notEqual(new URL(h.url2).origin, new URL(h.url).origin);
  const key = `sk-openai-${uid('SECRET')}`;
  const sc = await h.scenario([
    { text: 'Checking.', toolCalls: [{ id: 'call_x', name: 'delete_file', arguments: { path: '/cors' } }], argChunk: 1, splitWrites: true },
    { text: ['Done ', 'across ', 'origins.'], splitWrites: true },
  ], { server: h.url2 });
  const r = await run(page, async ({ model, db }) => {
    const { gh } = window;
    const agent = await gh.Agent.open({ threadId: 'cors', model, storage: { database: db }, tools: [gh.tool('delete_file', { requireApproval: true })] });
    const first = await agent.chat('delete /cors');
    const done = await agent.submitDecisions({ call_x: 'approve' });
    return { first, done, calls: gh.calls.length };
  }, { model: sc.openai({ apiKey: key }), db: uid('db') });
  assert.equal(r.first.status, 'awaiting_approval');
  assert.deepEqual(r.first.message.tools[0].inputs, { path: '/cors' });
  assert.equal(r.done.status, 'completed');
  assert.equal(textOf(r.done.message), 'Done across origins.');
  assert.equal(r.calls, 1);
  const reqs = await sc.requests();
  assert.equal(reqs.length, 2);
  for (const req of reqs) {
    assert.equal(req.headers.origin, new URL(h.url).origin, 'sent from the page origin');
    assert.equal(req.headers.host, new URL(h.url2).host);
    assert.equal(req.headers.authorization, `Bearer ${key}`);
    assert.equal(req.stream, true);
  }
  assert.deepEqual(errors.filter((e) => /CORS|blocked/i.test(e)), []);
  assert.ok(!(await dumpAllDatabases(page)).includes(key));
});

test('an unreachable model server: network error, retryable, the user message kept', T, async (t) => {
  const { page } = await h.open(t);
  const r = await run(page, async ({ db }) => {
    const { gh } = window;
    const agent = await gh.Agent.open({ threadId: 't', storage: { database: db },
      model: { provider: 'openai', baseUrl: 'http://127.0.0.1:9/v1', model: 'm', maxRetries: 0 } });
    const error = await gh.error(() => agent.chat('anyone there?'));
    return { error, status: agent.status(), messages: (await agent.messages()).map((m) => m.role) };
  }, { db: uid('db') });
  assert.equal(r.error?.code, 'network');
  assert.equal(r.error.retryable, true);
  assert.equal(r.status, 'interrupted');
  assert.deepEqual(r.messages, ['user']);
});

test('demo provider, offline: the approval flow works with no network at all, deterministically', T, async (t) => {
  if (h.engine === 'webkit') return t.skip('WebKitGTK\'s WebDriver (classic) can neither take a page offline nor report its requests');
  const { page, context } = await h.open(t);
  // The demo model's module (not in the main wasm) is fetched when the first agent that uses
  // it opens, as the page's first agent does here while the network is up; from then on the
  // demo needs no network.
  await run(page, async ({ db }) => { await window.gh.Agent.open({ threadId: 'warm', storage: { database: db } }); }, { db: uid('db') });
  await page.waitForFunction(() => performance.getEntriesByType('resource').some((e) => e.name.endsWith('/demo-model/model_bg.wasm')));
  const requests = [];
  page.on('request', (req) => requests.push(req.url()));
  await context.setOffline(true);
  t.after(() => context.setOffline(false).catch(() => {}));
  const r = await run(page, async ({ db }) => {
    const { gh } = window;
    const tools = [gh.tool('delete_file', { requireApproval: true })];
    const flow = async (agent) => {
      const events = gh.events();
      const first = await agent.chat('Please delete "/tmp/demo.txt"', { onEvent: events.onEvent });
      const callId = agent.pendingTools()[0]?.callId;
      const done = await agent.submitDecisions({ [callId]: 'approve' });
      const second = await agent.chat('Now delete "/tmp/keep.txt"');
      const rejected = await agent.submitDecisions({ [agent.pendingTools()[0]?.callId]: ['reject', 'keep it'] });
      return { first, callId, done, rejected: rejected.message, second: second.status, deltas: events.list.filter((e) => e.type === 'text_delta').length };
    };
    const a = await flow(await gh.Agent.open({ threadId: 'demo-default', tools, storage: { database: db } }));
    const b = await flow(await gh.Agent.open({ threadId: 'demo-explicit', model: { provider: 'demo' }, tools, storage: { database: db } }));
    return { a, b, calls: gh.calls, online: navigator.onLine };
  }, { db: uid('db') });
  assert.equal(r.online, false, 'the page really was offline');
  assert.equal(r.a.first.status, 'awaiting_approval');
  assert.deepEqual(r.a.first.message.tools.map((e) => [e.name, e.inputs, e.approval]), [['delete_file', { path: '/tmp/demo.txt' }, 'pending']]);
  assert.ok(r.a.deltas > 0, 'the demo model streams text deltas');
  assert.equal(r.a.done.status, 'completed');
  assert.match(textOf(r.a.done.message), /^\(demo\) /);
  assert.equal(r.a.second, 'awaiting_approval');
  assert.match(textOf(r.a.rejected), /^\(demo\) /);
  assert.deepEqual(r.calls.map((c) => c.inputs.path), ['/tmp/demo.txt', '/tmp/demo.txt'], 'approved calls ran (once per thread), rejected ones never');
  const strip = (x) => JSON.parse(JSON.stringify(x, (k, v) => (k === '__id' || k === 'resume_token' ? undefined : v)));
  assert.deepEqual(strip(r.b), strip(r.a), 'deterministic: the same conversation gives the same answers');
  assert.deepEqual(requests, [], 'no request left the page');
});

test('custom provider: the app\'s function gets the thread and tools, its tool calls are gated', T, async (t) => {
  const { page } = await h.open(t);
  const r = await run(page, async ({ db }) => {
    const { gh } = window;
    const seen = [];
    const call = async (req) => {
      seen.push({ roles: req.messages.map((m) => m.type ?? m.role), tools: req.tools.map((x) => x.name), instructions: req.instructions });
      const last = req.messages.at(-1);
      if (last.type === 'tool_call_result') return { text: `result: ${last.tools[0].result}` };
      return { text: 'calling', toolCalls: [{ id: 'cu_1', name: 'delete_file', arguments: { path: '/custom' } }] };
    };
    const agent = await gh.Agent.open({ threadId: 'c', model: { provider: 'custom', call }, instructions: 'inst',
      tools: [gh.tool('delete_file', { requireApproval: true })], storage: { database: db } });
    const first = await agent.chat('go');
    const done = await agent.submitDecisions({ cu_1: 'approve' });
    const bad = await gh.error(() => gh.Agent.open({ threadId: 'c2', model: { provider: 'custom' }, storage: { kind: 'memory' } }));
    return { first, done, seen, calls: gh.calls.length, bad };
  }, { db: uid('db') });
  assert.equal(r.first.status, 'awaiting_approval');
  assert.equal(r.first.message.tools[0].callId, 'cu_1');
  assert.equal(r.done.status, 'completed');
  assert.equal(textOf(r.done.message), `result: ${JSON.stringify({ done: 'delete_file', path: '/custom' })}`);
  assert.equal(r.calls, 1);
  assert.deepEqual(r.seen, [
    { roles: ['user'], tools: ['delete_file'], instructions: 'inst' },
    { roles: ['user', 'tool_call', 'tool_call_result'], tools: ['delete_file'], instructions: 'inst' },
  ]);
  assert.equal(r.bad?.code, 'invalid_config');
});
