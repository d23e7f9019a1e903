// One combination of the re-entrancy matrix (reentrancy-matrix.test.mjs), in a worker of its
// own: the run chat("delete …") → awaiting_approval → approve → completed, with `method`
// called once from inside `site` the first time it fires.
import fs from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { parentPort, workerData } from 'node:worker_threads';

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../..');
// GATEHOUSE_PKG: another build of the package (to run the matrix against an older release).
const pkg = process.env.GATEHOUSE_PKG ?? path.join(root, 'pkg');
const { initSync, Agent } = await import(path.join(pkg, 'gatehouse.js'));
initSync({ module: fs.readFileSync(path.join(pkg, 'gatehouse_bg.wasm')) });

const { site, method } = workerData;
const storage = { kind: 'memory', database: `matrix-${site}-${method}` };
const threadId = 't';
const failures = [];
const codes = [];
const pending = [];
let fired = false;
let agent = null;
let off = null;

const isGatehouseError = (e) => e?.name === 'GatehouseError' && typeof e.code === 'string' && e.code !== '';

/**
 * A result of the method: fine, or a GatehouseError (its code is counted); anything else
 * fails, and so does `internal` (a trap the package turned into an error is still a trap).
 */
function judge(what, e) {
  if (isGatehouseError(e) && e.code !== 'internal') codes.push(e.code);
  else failures.push(`${what} threw ${e?.constructor?.name ?? typeof e} ${e?.code ?? ''}: ${e?.message ?? e}`);
}

function call() {
  const a = agent;
  const calls = {
    subscribe: () => a.subscribe(() => {}),
    unsubscribe: () => off?.(),
    status: () => a.status(),
    lastMessage: () => a.lastMessage(),
    pendingTools: () => a.pendingTools(),
    pendingToolResults: () => a.pendingToolResults(),
    toolPolicies: () => a.toolPolicies(),
    messages: () => a.messages(),
    audit: () => a.audit(),
    chat: () => a.chat('and another thing'),
    submitDecisions: () => {
      const p = a.pendingTools()[0];
      return a.submitDecisions(p ? { [p.callId]: 'approve' } : { nope: 'approve' });
    },
    submitToolResults: () => a.submitToolResults({ nope: 'x' }),
    retry: () => a.retry(),
    handle: () => a.handle({ message: 'via handle' }),
    setToolPolicy: () => a.setToolPolicy('delete_file', { autoApprove: true }),
    grant: () => a.grant({ tool: 'delete_file', scope: 'thread' }),
    grants: () => a.grants(),
    revokeGrant: () => a.revokeGrant('grant_nope'),
    refresh: () => a.refresh(),
    dispose: () => a.dispose(),
    'Agent.open': () => Agent.open({ threadId, storage, model: model(), tools: [tool()] }),
    'Agent.listThreads': () => Agent.listThreads(storage),
    'Agent.deleteThread': () => Agent.deleteThread('another', storage),
    'Agent.subscribeThreads': () => Agent.subscribeThreads(storage, () => {}),
  };
  try {
    const out = calls[method]();
    if (out && typeof out.then === 'function') {
      pending.push(out.then((v) => {
        if (method === 'Agent.open') v?.dispose?.();
      }, (e) => judge(`${method} (async)`, e)));
    } else if (method === 'Agent.subscribeThreads' && typeof out === 'function') {
      out();
    }
  } catch (e) {
    judge(method, e);
  }
}

/** Calls the method the first time the site fires. */
function at(name) {
  if (name !== site || fired) return;
  fired = true;
  call();
}

function tool() {
  return {
    name: 'delete_file',
    description: 'Delete a file',
    parameters: { type: 'object', properties: { path: { type: 'string' } }, required: ['path'] },
    // Asks every time (the policy is what decides here).
    approvalPolicy: () => {
      at('approvalPolicy');
      return true;
    },
    execute: async ({ path: p }) => {
      at('execute');
      return { deleted: p };
    },
  };
}

/** A custom model (the `model` site), or for the streamed events the demo model. */
function model() {
  if (site === 'onEvent:text_delta' || site === 'onEvent:tool_call_started') return undefined;
  let n = 0;
  return {
    provider: 'custom',
    call: () => {
      at('model');
      n += 1;
      return n === 1
        ? { toolCalls: [{ id: `call_${n}`, name: 'delete_file', arguments: { path: 'C:/a.txt' } }] }
        : { text: 'Done.' };
    },
  };
}

const onEvent = (e) => at(`onEvent:${e.type}`);

async function scenario() {
  agent = await Agent.open({ threadId, storage, model: model(), tools: [tool()] });
  off = agent.subscribe(() => at('subscribe'));
  const stopList = Agent.subscribeThreads(storage, () => at('subscribeThreads'));
  try {
    await agent.chat('delete C:/a.txt', { onEvent });
    const p = agent.pendingTools()[0];
    if (p) await agent.submitDecisions({ [p.callId]: 'approve' }, { onEvent });
  } catch (e) {
    judge('the run', e);
  }
  // A thread-list notice may come a task later (a BroadcastChannel).
  for (let i = 0; i < 20 && !fired; i++) await new Promise((r) => setTimeout(r, 10));
  await Promise.all(pending);
  stopList();
}

try {
  await scenario();
} catch (e) {
  judge('open', e);
}
// The agent answers afterwards (unless the method disposed of it: then a fresh one does).
try {
  const a = method === 'dispose' ? await Agent.open({ threadId, storage, model: model(), tools: [tool()] }) : agent;
  if (typeof a.status() !== 'string') failures.push('status() is not a string afterwards');
  if (!Array.isArray(await a.messages())) failures.push('messages() is not a list afterwards');
} catch (e) {
  failures.push(`the agent does not answer afterwards: ${e?.constructor?.name}: ${e?.message ?? e}`);
}
parentPort.postMessage({ fired, failures, codes });
