// A trap in the wasm (a Rust panic compiled to `unreachable`) is a GatehouseError `internal`,
// and so is every call after it, until the module is loaded again (README, "Errors"). The
// trap is made by a stand-in for the wasm agent that throws what a trap throws; this file
// runs in a process of its own, as node --test runs each file, since the SDK stays stopped.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../..');
const { initSync, Agent, isGatehouseError } = await import(path.join(root, 'pkg/gatehouse.js'));
initSync({ module: fs.readFileSync(path.join(root, 'pkg/gatehouse_bg.wasm')) });

const internal = (e) => isGatehouseError(e) && e.code === 'internal' && e.retryable === false &&
  /reload the page/.test(e.message);

test('an error that is not a trap passes through as it is, and stops nothing', async () => {
  const boom = new Error('boom');
  const odd = new Agent({ status: () => { throw boom; } });
  assert.throws(() => odd.status(), (e) => e === boom);
  const a = await Agent.open({ threadId: 'fine', storage: { kind: 'memory', database: 'internal-fine' } });
  assert.equal(a.status(), 'idle');
});

test('a trap is `internal`, and every call after it too; a working agent before it is untouched', async () => {
  const healthy = await Agent.open({ threadId: 'ok', storage: { kind: 'memory', database: 'internal-ok' } });
  assert.equal(healthy.status(), 'idle');
  const trap = () => { throw new WebAssembly.RuntimeError('unreachable'); };
  const broken = new Agent({ status: trap, pendingTools: trap, chat: async () => trap() });
  assert.throws(() => broken.status(), internal);
  // From now on every call says so, this agent's and any other's.
  assert.throws(() => broken.pendingTools(), internal);
  await assert.rejects(broken.chat('hi'), internal);
  assert.throws(() => healthy.status(), internal);
  await assert.rejects(Agent.listThreads({ kind: 'memory', database: 'internal-ok' }), internal);
  await assert.rejects(Agent.open({ threadId: 'x', storage: { kind: 'memory' } }), internal);
});
