// The built package in Node 20 with the memory store: the same behaviour as in a browser
// (README "The JS API": `{ kind: 'memory' }` elsewhere), through the public API only.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../..');
const { initSync, Agent } = await import(path.join(root, 'pkg/gatehouse.js'));
initSync({ module: fs.readFileSync(path.join(root, 'pkg/gatehouse_bg.wasm')) });

let n = 0;
const db = () => `node-${process.pid}-${++n}`;
const deleteFile = (calls) => ({
  name: 'delete_file',
  description: 'Delete a file',
  parameters: { type: 'object', properties: { path: { type: 'string' } }, required: ['path'] },
  requireApproval: true,
  execute: async ({ path }) => { calls.push(path); return { deleted: path }; },
});
async function thrown(f) {
  try { await f(); } catch (e) { return e; }
  assert.fail('expected a GatehouseError');
}

test('without IndexedDB the default store is memory, and the approval flow works', async () => {
  const calls = [];
  const agent = await Agent.open({ threadId: 't', storage: { database: db() }, tools: [deleteFile(calls)] });
  let state = await agent.chat('delete "notes.txt"');
  assert.equal(state.status, 'awaiting_approval');
  assert.equal(state.message.tools[0].approval, 'pending');
  assert.deepEqual(state.message.tools[0].inputs, { path: 'notes.txt' });
  assert.deepEqual(calls, []);
  state = await agent.submitDecisions({ [agent.pendingTools()[0].callId]: 'approve' });
  assert.equal(state.status, 'completed');
  assert.deepEqual(calls, ['notes.txt']);
  const messages = await agent.messages();
  assert.deepEqual(messages.map((m) => m.type ?? m.role), ['user', 'tool_call', 'tool_call_result', 'assistant']);
  assert.equal(messages[2].tools[0].result, '{"deleted":"notes.txt"}');
});

test('two agents on one memory database: the stale one gets conflict and then sees the fresh state', async () => {
  const storage = { kind: 'memory', database: db() };
  const calls = [];
  const a = await Agent.open({ threadId: 't', storage, tools: [deleteFile(calls)] });
  await a.chat('delete "a.txt"');
  const b = await Agent.open({ threadId: 't', storage, tools: [deleteFile(calls)] });
  const id = a.pendingTools()[0].callId;
  assert.equal((await a.submitDecisions({ [id]: 'approve' })).status, 'completed');
  const e = await thrown(() => b.submitDecisions({ [id]: 'reject' }));
  assert.equal(e.name, 'GatehouseError');
  assert.equal(e.code, 'conflict');
  assert.equal(e.retryable, true);
  assert.deepEqual(calls, ['a.txt'], 'the tool ran once');
  assert.equal(b.status(), 'idle', 'the stale view was reloaded');
  assert.deepEqual(b.pendingTools(), []);
});

test('errors are GatehouseErrors with stable codes, and refused calls store nothing', async () => {
  assert.equal((await thrown(() => Agent.open({}))).code, 'invalid_config');
  assert.equal((await thrown(() => Agent.open({ threadId: 't', storage: { kind: 'indexeddb' } }))).code, 'invalid_config');
  const agent = await Agent.open({ threadId: 't', storage: { database: db() }, tools: [deleteFile([])] });
  assert.equal((await thrown(() => agent.submitDecisions({ x: 'approve' }))).code, 'not_suspended');
  await agent.chat('delete "b.txt"');
  const before = await agent.messages();
  for (const [payload, code] of [
    [{ nope: 'approve' }, 'unknown_call_id'],
    [{ [agent.pendingTools()[0].callId]: ['approve', 'note'] }, 'invalid_decision'],
    [{}, 'invalid_decision'],
  ]) {
    assert.equal((await thrown(() => agent.submitDecisions(payload))).code, code);
  }
  assert.equal((await thrown(() => agent.chat('hello?'))).code, 'conflict');
  assert.deepEqual(await agent.messages(), before);
  assert.deepEqual(await agent.handle({ message: 'again' }), {
    status: 'conflict',
    error: '1 tool call(s) are awaiting approval: submit decisions before sending a new message. Nothing was stored or sent.',
  });
});

test('the custom provider: the app function gets the thread and the tools', async () => {
  const seen = [];
  const agent = await Agent.open({
    threadId: 't',
    storage: { database: db() },
    model: {
      provider: 'custom',
      call: async (req) => {
        seen.push(req);
        return req.messages.at(-1).type === 'tool_call_result'
          ? { text: 'done', stopReason: 'end_turn' }
          : { toolCalls: [{ id: 'c1', name: 'delete_file', arguments: { path: 'x' } }] };
      },
    },
    tools: [{ ...deleteFile([]), requireApproval: false }],
  });
  const state = await agent.chat('go');
  assert.equal(state.status, 'completed');
  assert.equal(state.message.stop_reason, 'end_turn');
  assert.equal(seen.length, 2);
  assert.deepEqual(seen[0].tools.map((t) => t.name), ['delete_file']);
  assert.equal(seen[1].messages[2].tools[0].result, '{"deleted":"x"}');
});
