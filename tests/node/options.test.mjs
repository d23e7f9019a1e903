// A misspelled option is refused, not ignored: an unknown key in the options of `Agent.open`,
// a tool, the model or the storage is `invalid_config` naming it and the likely intended key.
// (A tool with `requireAproval: true` used to open, and its call ran ungated.)
import { test } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../..');
const { initSync, Agent } = await import(path.join(root, 'pkg/gatehouse.js'));
initSync({ module: fs.readFileSync(path.join(root, 'pkg/gatehouse_bg.wasm')) });

let n = 0;
const storage = () => ({ kind: 'memory', database: `options-${process.pid}-${++n}` });
const deleteFile = (calls, extra) => ({
  name: 'delete_file',
  description: 'Delete a file',
  parameters: { type: 'object', properties: { path: { type: 'string' } }, required: ['path'] },
  execute: async ({ path }) => { calls.push(path); return { deleted: path }; },
  ...extra,
});

async function refused(open, unknown, meant) {
  let e;
  try { await open(); } catch (err) { e = err; }
  assert.ok(e, `\`${unknown}\` was accepted`);
  assert.equal(e.name, 'GatehouseError');
  assert.equal(e.code, 'invalid_config');
  assert.ok(e.message.includes(`\`${unknown}\``), e.message);
  if (meant) assert.ok(e.message.includes(`did you mean \`${meant}\`?`), e.message);
  else assert.ok(!e.message.includes('did you mean'), e.message);
  return e;
}

test('a tool with `requireAproval` is refused, and nothing runs', async () => {
  const calls = [];
  await refused(
    () => Agent.open({ threadId: 't', storage: storage(), tools: [deleteFile(calls, { requireAproval: true })] }),
    'requireAproval', 'requireApproval',
  );
  assert.deepEqual(calls, []);
  // Spelled right, the call waits for a decision (the demo model calls the tool).
  const agent = await Agent.open({ threadId: 't', storage: storage(), tools: [deleteFile(calls, { requireApproval: true })] });
  assert.equal((await agent.chat('delete C:/old_logs.txt')).status, 'awaiting_approval');
  assert.deepEqual(calls, []);
});

test('an unknown key of Agent.open, the model or the storage names the key it is close to', async () => {
  await refused(() => Agent.open({ threadId: 't', storage: storage(), aprovalTimeout: 5 }), 'aprovalTimeout', 'approvalTimeout');
  await refused(() => Agent.open({ threadID: 't', storage: storage() }), 'threadID', 'threadId');
  await refused(
    () => Agent.open({ threadId: 't', storage: storage(), model: { provider: 'demo', contextWindw: 4000 } }),
    'contextWindw', 'contextWindow',
  );
  await refused(
    () => Agent.open({ threadId: 't', storage: storage(), model: { provider: 'openai', model: 'm', max_retries: 1 } }),
    'max_retries', 'maxRetries',
  );
  await refused(() => Agent.open({ threadId: 't', storage: { kind: 'memory', databse: 'x' } }), 'databse', 'database');
  await refused(() => Agent.listThreads({ kind: 'memory', datbase: 'x' }), 'datbase', 'database');
  // Nothing close: the key, and the keys there are.
  await refused(() => Agent.open({ threadId: 't', storage: storage(), colour: 'red' }), 'colour');
});

test('every documented key is accepted', async () => {
  const agent = await Agent.open({
    threadId: 't',
    storage: storage(),
    model: {
      provider: 'custom', model: 'm', baseUrl: 'http://127.0.0.1:1', apiKey: 'k', maxTokens: 100,
      temperature: 0, stream: false, headers: { 'x-a': '1' }, maxRetries: 0, contextWindow: 8000,
      call: async () => ({ text: 'hi' }),
    },
    instructions: 'Be brief.',
    tools: [deleteFile([], {
      label: 'Delete', requireApproval: true, approvalReason: 'r', approvalPolicy: () => true,
      enabled: true, autoApprove: false, idempotent: false, allowedDecisions: ['approve', 'reject'],
      approvalTimeout: 60_000, providerOptions: { strict: true },
    })],
    maxSteps: 5,
    historyLimit: 50,
    approvalTimeout: 120_000,
  });
  assert.equal((await agent.chat('hello')).status, 'completed');
  // The README's quick start (its model points at a server that is not here: it only opens).
  await Agent.open({
    threadId: 'thread_42',
    storage: storage(),
    model: { provider: 'openai', baseUrl: 'https://my-app.example/llm/v1', model: 'gpt-4o-mini' },
    tools: [{
      name: 'delete_file',
      description: 'Delete a file from the filesystem',
      parameters: { type: 'object', properties: { path: { type: 'string' } }, required: ['path'] },
      approvalPolicy: ({ path }) => !path.startsWith('/tmp/'),
      execute: async ({ path }) => ({ deleted: path }),
    }],
  });
});

test('the options of the calls on an open agent are checked the same way, and refused ones change nothing', async () => {
  const calls = [];
  const agent = await Agent.open({ threadId: 'calls', storage: storage(), tools: [deleteFile(calls, { requireApproval: true })] });
  await refused(() => agent.chat('delete C:/a.txt', { onEvnt: () => {} }), 'onEvnt', 'onEvent');
  assert.equal(agent.messageCount, 0, 'the refused chat stored nothing');
  await refused(() => agent.handle({ mesage: 'hello' }), 'mesage', 'message');
  await refused(() => agent.messages({ limt: 1 }), 'limt', 'limit');
  await refused(() => agent.setToolPolicy('delete_file', { autoAprove: true }), 'autoAprove', 'autoApprove');
  assert.deepEqual(agent.toolPolicies(), { delete_file: { enabled: true, autoApprove: false } }, 'the misspelled policy did not apply');
  const state = await agent.chat('delete C:/a.txt', { onEvent: () => {} });
  assert.equal(state.status, 'awaiting_approval', 'with no policy set, the call still asks');
  await refused(() => agent.submitDecisions({ [agent.pendingTools()[0].callId]: 'approve' }, { bye: 'me' }), 'bye', 'by');
  assert.deepEqual(calls, [], 'nothing ran');
});

test("a custom model's tool call with a misspelled key is a provider error, not a call with no inputs", async () => {
  for (const key of ['inputs', 'args', 'argument']) {
    const calls = [];
    const agent = await Agent.open({
      threadId: 't', storage: storage(), tools: [deleteFile(calls, { parameters: { type: 'object', properties: { path: { type: 'string' } } } })],
      model: { provider: 'custom', call: () => ({ toolCalls: [{ id: 'c1', name: 'delete_file', [key]: { path: '/etc' } }] }) },
    });
    let e;
    try { await agent.chat('delete /etc'); } catch (err) { e = err; }
    assert.equal(e?.code, 'provider', `${key}: ${e?.message}`);
    assert.ok(e.message.includes(key), e.message);
    assert.equal(agent.pendingTools().length, 0, 'no call to approve');
    assert.equal(agent.status(), 'interrupted', 'the user message waits for retry()');
    assert.deepEqual(calls, []);
    await agent.dispose();
  }
  // Spelled right, it is the call.
  const agent = await Agent.open({
    threadId: 't', storage: storage(), tools: [deleteFile([], { requireApproval: true })],
    model: { provider: 'custom', call: () => ({ toolCalls: [{ id: 'c1', name: 'delete_file', arguments: { path: '/etc' } }] }) },
  });
  await agent.chat('delete /etc');
  assert.deepEqual(agent.pendingTools().map((t) => t.inputs), [{ path: '/etc' }]);
  await agent.dispose();
});
