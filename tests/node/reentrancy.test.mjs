// A callback that calls the agent back (issue "No callback can trap the wasm"): an app that
// re-subscribes from `onEvent` when a run ends, as a React effect does. Before, `off()` and
// `subscribe` threw a raw wasm trap (`RuntimeError: unreachable`) there, the old listener
// stayed and the new one was never added: the final event was emitted while the session was
// borrowed.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../..');
const { initSync, Agent } = await import(path.join(root, 'pkg/gatehouse.js'));
initSync({ module: fs.readFileSync(path.join(root, 'pkg/gatehouse_bg.wasm')) });

const deleteFile = (calls) => ({
  name: 'delete_file',
  description: 'Delete a file',
  parameters: { type: 'object', properties: { path: { type: 'string' } }, required: ['path'] },
  requireApproval: true,
  execute: async ({ path }) => { calls.push(path); return { deleted: path }; },
});

test('re-subscribing from onEvent on awaiting_approval and completed: no trap, the new listener hears the next change', async () => {
  const calls = [];
  const agent = await Agent.open({ threadId: 't', storage: { kind: 'memory', database: `reenter-${process.pid}` },
    tools: [deleteFile(calls)] });
  const heard = { first: 0, second: 0, third: 0 };
  let off = agent.subscribe(() => heard.first++);
  const thrown = [];
  const resubscribe = (type, next) => (e) => {
    if (e.type !== type) return;
    try {
      off();
      off = agent.subscribe(() => heard[next]++);
    } catch (err) {
      thrown.push(err);
    }
  };
  const asked = await agent.chat('delete C:/a.txt', { onEvent: resubscribe('awaiting_approval', 'second') });
  assert.equal(asked.status, 'awaiting_approval');
  const callId = agent.pendingTools()[0].callId;
  const done = await agent.submitDecisions({ [callId]: 'approve' }, { onEvent: resubscribe('completed', 'third') });
  assert.equal(done.status, 'completed');
  assert.deepEqual(thrown, [], 'neither off() nor subscribe threw');
  assert.deepEqual(calls, ['C:/a.txt']);
  const before = { ...heard };
  await agent.chat('hello');
  assert.equal(heard.first, before.first, 'the first listener was removed');
  assert.equal(heard.second, before.second, 'the second listener was removed');
  assert.ok(heard.third > before.third, 'the listener added from onEvent hears the next change');
  assert.equal(agent.status(), 'idle', 'the agent answers afterwards');
});
