// The re-entrancy matrix (issue "No callback can trap the wasm"): every public method of an
// agent, and of `Agent`, called from inside every callback the SDK calls into app code, while
// a run is under way: `onEvent` (for each event type), a `subscribe` listener, a tool's
// `execute` and `approvalPolicy`, a custom model's `call`, an `Agent.subscribeThreads`
// listener (the streamed events with the demo model, the rest with a custom one). Each combination either works or fails with a GatehouseError with a stable code;
// none traps (`RuntimeError: unreachable`) or throws another error, and the agent answers
// afterwards. Each runs in a worker of its own, with its own wasm instance, so one trap
// cannot hide the next.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { Worker } from 'node:worker_threads';

const here = path.dirname(fileURLToPath(import.meta.url));
const worker = path.join(here, 'reentrancy-worker.mjs');

export const SITES = [
  'onEvent:message', 'onEvent:message_updated', 'onEvent:text_delta', 'onEvent:tool_call_started',
  'onEvent:awaiting_approval',
  'onEvent:tool_result', 'onEvent:completed', 'subscribe', 'execute', 'approvalPolicy', 'model',
  'subscribeThreads',
];
export const METHODS = [
  'subscribe', 'unsubscribe', 'status', 'lastMessage', 'pendingTools', 'pendingToolResults',
  'toolPolicies', 'messages', 'audit', 'chat', 'submitDecisions', 'submitToolResults', 'retry',
  'handle', 'setToolPolicy', 'grant', 'grants', 'revokeGrant', 'refresh', 'dispose', 'Agent.open', 'Agent.listThreads',
  'Agent.deleteThread', 'Agent.subscribeThreads',
];

function run(site, method) {
  return new Promise((resolve) => {
    const w = new Worker(worker, { workerData: { site, method } });
    let answer = null;
    w.once('message', (m) => { answer = m; });
    w.once('error', (e) => { answer = { fired: true, failures: [`the worker died: ${e?.stack ?? e}`] }; });
    w.once('exit', () => resolve(answer ?? { fired: false, failures: ['the worker exited without an answer'] }));
  });
}

test('every method from every callback: works or a GatehouseError, never a trap, and the agent answers after', async () => {
  const combos = SITES.flatMap((site) => METHODS.map((method) => ({ site, method })));
  const results = [];
  const width = Math.max(2, Math.min(8, os.availableParallelism?.() ?? 2));
  let next = 0;
  await Promise.all(Array.from({ length: width }, async () => {
    while (next < combos.length) {
      const c = combos[next++];
      results.push({ ...c, ...(await run(c.site, c.method)) });
    }
  }));
  const notFired = results.filter((r) => !r.fired).map((r) => `${r.site} × ${r.method}`);
  const failed = results.filter((r) => r.failures?.length)
    .map((r) => `${r.site} × ${r.method}: ${r.failures.join('; ')}`);
  const codes = {};
  for (const r of results) for (const c of r.codes ?? []) codes[c] = (codes[c] ?? 0) + 1;
  console.log(`${results.length} combinations; codes returned: ${JSON.stringify(codes)}`);
  assert.deepEqual(failed, [], failed.join('\n'));
  // Every callback site fired in every combination (else it tested nothing).
  assert.deepEqual(notFired, []);
});
