// A device of the remote-thread rows (bench/remote.mjs): the package on a remote thread, in
// one browser context of its own (its own IndexedDB copy, no shared Web Locks or
// BroadcastChannel with the other device). Times are wall clock (performance.timeOrigin +
// now()), so two contexts and node compare on one machine's clock.
let mod = null;
const wall = () => performance.timeOrigin + performance.now();

export async function openDevice({ url, user, threadId, baseUrl, withTool }) {
  if (!mod) { mod = await import('/pkg/gatehouse.js'); await mod.default(); }
  globalThis.toolStarts = [];
  const tools = withTool ? [{
    name: 'delete_file',
    description: 'Delete a file from the filesystem',
    parameters: { type: 'object', properties: { path: { type: 'string' } }, required: ['path'] },
    requireApproval: true,
    execute: async ({ path }) => { globalThis.toolStarts.push(wall()); return { deleted: path }; },
  }] : [];
  globalThis.agent = await mod.Agent.open({
    threadId,
    storage: { kind: 'remote', url, headers: { authorization: `Bearer ${user}` } },
    ...(baseUrl ? { model: { provider: 'openai', baseUrl, apiKey: 'bench', model: 'bench-model', stream: false } } : {}),
    tools,
  });
  return globalThis.agent.status();
}

/** Polls `f` every 2 ms until it is true (or throws after `ms`). Resolves to the wall time. */
export async function until(f, ms = 20_000) {
  const end = performance.now() + ms;
  while (!f()) {
    if (performance.now() > end) throw new Error(`timed out: ${f} (status ${globalThis.agent?.status()})`);
    await new Promise((r) => setTimeout(r, 2));
  }
  return wall();
}

export async function chat(text) {
  const st = await globalThis.agent.chat(text);
  return st.status;
}

/** Device B: waits for the one pending call, then approves it. Resolves to when it decided. */
export async function approvePending() {
  const a = globalThis.agent;
  await until(() => a.pendingTools().length === 1);
  const decisions = Object.fromEntries(a.pendingTools().map((p) => [p.callId, 'approve']));
  const t0 = wall();
  const st = await a.submitDecisions(decisions);
  return { t0, status: st.status };
}

/** Waits until the thread has `count` messages and nothing runs; resolves to that wall time. */
export function settled(count, ms = 20_000) {
  const a = globalThis.agent;
  return until(() => a.messageCount >= count && a.status() === 'idle', ms);
}

export function state() {
  const a = globalThis.agent;
  return { status: a.status(), messageCount: a.messageCount, toolStarts: globalThis.toolStarts.length };
}

/**
 * A second agent on the same thread and device (what tests/remote/devices.test.mjs opens while
 * offline): its session start and its change stream's reconnection both send what waits in the
 * device's outbox. Replaces the previous one.
 */
export async function openReader({ url, user, threadId }) {
  globalThis.reader?.free?.();
  globalThis.reader = await mod.Agent.open({ threadId, storage: { kind: 'remote', url, headers: { authorization: `Bearer ${user}` } } });
  return globalThis.reader.status();
}

export function closeReader() {
  globalThis.reader?.free?.();
  globalThis.reader = null;
}
