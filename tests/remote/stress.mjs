// The device stress on one remote thread (docs/design.md, "Across devices"), shared by the
// stress test (handler restarts, tests/remote/stress.test.mjs) and the failover test (the
// primary killed, tests/failover/failover.test.mjs): 3 devices (browser contexts: their own
// IndexedDB, no shared Web Locks or BroadcastChannel) × 2 tabs each chat, approve, reject,
// retry and refresh for `seconds`, while devices go offline and come back and the caller's
// `disrupt` breaks the other side. Then every device comes back online, a fresh device
// finishes the thread, and what the tools recorded is compared with the thread as the handler
// keeps it. Counted, each must be 0: double executions, results lost (a tool returned and the
// thread has no `ran:<id>` for it), messages lost or stored twice (a chat that resolved must
// be stored exactly once), decisions lost (a `submitDecisions` that resolved, and no decision
// in the audit trail for its calls), invalid model requests (the model server's generated
// scenario validates every request), unexpected errors.

import assert from 'node:assert/strict';
import { run, uid } from '../browser/harness.mjs';

export const DEVICES = 3;
const TABS = 2;
/** Codes a racing tab may get: another device ran first, the handler or its database was
 *  down (`storage`), the model could not be reached from a device that went offline
 *  (`network`). */
const EXPECTED = new Set(['conflict', 'busy', 'not_suspended', 'unknown_call_id', 'nothing_to_retry', 'storage', 'network']);
export const sleep = (ms) => new Promise((r) => setTimeout(r, ms));
export const rnd = (lo, hi) => lo + Math.floor(Math.random() * (hi - lo + 1));

/** In a page: opens `window.S.agent` on the thread with the tool, reporting executions. */
async function openTab({ url, threadId, model, device, tab }) {
  const { gh } = window;
  window.S = { device, tab };
  const tool = {
    name: 'delete_file',
    description: 'Delete a file',
    parameters: { type: 'object', properties: { path: { type: 'string' } }, required: ['path'] },
    requireApproval: true,
    execute: async (inputs, ctx) => {
      await window.ghExec({ callId: ctx.callId, device, tab });
      await new Promise((r) => setTimeout(r, Math.random() * 200));
      return `ran:${ctx.callId}`;
    },
  };
  window.S.agent = await gh.Agent.open({
    threadId, model, tools: [tool],
    storage: { kind: 'remote', url, headers: { authorization: `Bearer ${device}` } },
  });
  return window.S.agent.status();
}

/** In a page: one action; `{ outcome, status }` (outcome `ok:<status>` or `err:<code>`). */
async function act({ kind, text }) {
  const a = window.S.agent;
  const codeOf = (e) => (e?.name === 'GatehouseError' ? e.code : `not a GatehouseError: ${e?.message ?? e}`);
  try {
    let r;
    if (kind === 'chat') r = await a.chat(text);
    else if (kind === 'retry') r = await a.retry();
    else if (kind === 'refresh') { await a.refresh(); r = { status: 'refreshed' }; }
    else {
      const pending = a.pendingTools();
      if (!pending.length) return { outcome: 'skip', status: a.status() };
      const decisions = {};
      for (const e of pending) {
        decisions[e.callId] = e.approvalReason != null || Math.random() < 0.25 ? ['reject', 'no'] : 'approve';
      }
      r = await a.submitDecisions(decisions);
      return { outcome: `ok:${r.status}`, status: a.status(), decided: Object.keys(decisions) };
    }
    return { outcome: `ok:${r.status}`, status: a.status() };
  } catch (e) {
    return { outcome: `err:${codeOf(e)}`, status: a.status() };
  }
}

/** What a tab at `status` does next. */
function next(status) {
  if (status === 'awaiting_approval') return Math.random() < 0.8 ? 'decide' : 'refresh';
  if (status === 'interrupted') return Math.random() < 0.7 ? 'retry' : 'chat';
  if (status === 'idle') return Math.random() < 0.85 ? 'chat' : 'refresh';
  return 'refresh';
}

/**
 * Runs the stress in test `t` on harness `h` against the handler at `url()` (read at each
 * open: the handler may move). `disrupt(stopped)` runs beside the devices until `stopped()`;
 * `describe()` says what it did, for the log; `check()` returns the caller's own problems;
 * `onAction({ name, kind, start, end, outcome })` hears each tab's every action.
 */
export async function stress(h, t, { label, seconds, url, disrupt, describe, check = () => [], onAction = null }) {

  const threadId = uid('stress');
  const sc = await h.generatedScenario({ tool: 'delete_file', idPrefix: `call_r${process.pid}`, calls: [1, 2], delayMs: [0, 100] });
  const execs = [];
  const chats = [];
  const decided = [];
  const errors = new Map();
  const unexpected = [];
  const devices = [];
  for (let d = 0; d < DEVICES; d++) {
    const context = await h.newContext();
    t.after(() => context.close().catch(() => {}));
    await context.exposeFunction('ghExec', (e) => { execs.push(e); });
    const pages = [];
    for (let k = 0; k < TABS; k++) {
      const { page } = await h.open(t, { context });
      await run(page, openTab, { url: url(), threadId, model: sc.openai(), device: `device${d}`, tab: k });
      pages.push(page);
    }
    devices.push({ context, pages });
  }

  const t0 = Date.now();
  let stop = false;
  let counter = 0;
  const counts = { actions: 0, offline: 0 };
  const tab = async (page, name) => {
    let status = 'idle';
    while (!stop) {
      const kind = next(status);
      const text = kind === 'chat' ? `msg ${name} #${++counter}` : undefined;
      let r;
      const start = Date.now();
      try {
        r = await run(page, act, { kind, text }, 30_000);
      } catch (e) {
        unexpected.push(`${name} ${kind}: ${e.message}`);
        break;
      }
      onAction?.({ name, kind, start, end: Date.now(), outcome: r.outcome });
      counts.actions++;
      status = r.status;
      if (kind === 'chat') chats.push({ text, outcome: r.outcome });
      if (r.outcome.startsWith('err:')) {
        const code = r.outcome.slice(4);
        errors.set(code, (errors.get(code) ?? 0) + 1);
        if (!EXPECTED.has(code)) unexpected.push(`${name} ${kind}: ${code}`);
      }
      await sleep(rnd(50, 400));
    }
  };
  // Devices go offline and come back, while the caller's `disrupt` breaks the other side.
  const flips = async () => {
    while (!stop) {
      await sleep(rnd(2_000, 5_000));
      if (stop) break;
      const dev = devices[rnd(0, DEVICES - 1)];
      counts.offline++;
      await dev.context.setOffline(true);
      await sleep(rnd(1_000, 4_000));
      await dev.context.setOffline(false);
    }
  };
  const loops = devices.flatMap((d, i) => d.pages.map((p, k) => tab(p, `d${i}t${k}`)));
  const chaosLoops = [flips(), disrupt(() => stop)];
  await sleep(seconds * 1000);
  stop = true;
  await Promise.all([...loops, ...chaosLoops]);
  for (const d of devices) await d.context.setOffline(false);

  // A fresh device finishes the thread as a user would, and every device's outbox drains
  // once it is online again (the change stream reopens). A message sent from an outbox is
  // answered, and may bring calls to decide: the two go on until both are done.
  const endCtx = await h.newContext();
  t.after(() => endCtx.close().catch(() => {}));
  await endCtx.exposeFunction('ghExec', (e) => { execs.push(e); });
  const { page: end } = await h.open(t, { context: endCtx });
  await run(end, openTab, { url: url(), threadId, model: sc.openai(), device: 'end', tab: 0 });
  // A tab whose outbox is being sent reports "running" (its run writes the queued input),
  // not "queued": the end waits for those too, or it reads the thread before that write.
  const queuedNow = async () => (await Promise.all(devices.flatMap((d) => d.pages.map((p) => run(p, () => window.S.agent.status())))))
    .filter((st) => st === 'queued' || st === 'running').length;
  const rounds = [];
  for (let i = 0; i < 40; i++) {
    const s = await run(end, async () => { await window.S.agent.refresh().catch(() => {}); return window.S.agent.status(); });
    const queued = await queuedNow();
    rounds.push(queued ? `${s}+${queued}q` : s);
    if (s === 'idle' && queued === 0) break;
    if (s === 'running' || s === 'idle' || s === 'queued') { await sleep(1_000); continue; }
    await run(end, act, { kind: s === 'awaiting_approval' ? 'decide' : 'retry' }, 30_000);
  }
  const final = await run(end, async () => ({
    status: window.S.agent.status(),
    messages: await window.S.agent.messages(),
    regated: (await window.S.agent.audit()).filter((r) => r.outcome === 'regated').map((r) => r.callId),
    decided: (await window.S.agent.audit()).filter((r) => r.decision != null).map((r) => r.callId),
  }), null, 30_000);

  // What Postgres keeps against what happened.
  const results = new Map();
  const userTexts = new Map();
  for (const m of final.messages) {
    if (m.type === 'tool_call_result') for (const e of m.tools) results.set(e.callId, e.result);
    if (m.role === 'user' && !m.type) {
      const text = (m.content ?? []).map((b) => b.content).join('');
      userTexts.set(text, (userTexts.get(text) ?? 0) + 1);
    }
  }
  const byCall = new Map();
  for (const e of execs) byCall.set(e.callId, (byCall.get(e.callId) ?? 0) + 1);
  const doubles = [...byCall].filter(([, n]) => n > 1).map(([id, n]) => `${id} ×${n}`);
  // A call cut off mid-flight (its device went offline, or the handler restarted, between
  // the tool's start and its result's write) is re-gated, never re-sent ("Run ownership"):
  // the audit trail says so, and whoever decides it again is told it may have run. Any other
  // execution must have its result stored.
  const regated = new Set(final.regated);
  const cutOff = [...byCall.keys()].filter((id) => results.get(id) !== `ran:${id}` && regated.has(id));
  const lost = [...byCall.keys()].filter((id) => results.get(id) !== `ran:${id}` && !regated.has(id))
    .map((id) => `${id}: ${JSON.stringify(results.get(id) ?? null)}`);
  const resolved = chats.filter((c) => c.outcome.startsWith('ok:'));
  const lostMessages = resolved.filter((c) => !userTexts.has(c.text)).map((c) => `${c.text} (${c.outcome})`);
  const twice = [...userTexts].filter(([, n]) => n > 1).map(([text, n]) => `${text} ×${n}`);
  // A decision a device was told was made is in the audit trail (the last one made, if
  // several tabs decided the same call).
  const withDecision = new Set(final.decided);
  const lostDecisions = [...new Set(decided)].filter((id) => !withDecision.has(id));
  const gen = await sc.generated();

  console.log(`${label}: ${DEVICES} devices × ${TABS} tabs × ${seconds} s: ${counts.actions} actions, ` +
    `${counts.offline} offline flips, ${describe()}; ${chats.length} chats ` +
    `(${resolved.length} resolved, ${resolved.filter((c) => c.outcome === 'ok:queued').length} queued), ` +
    `${byCall.size} calls executed (${cutOff.length} cut off and re-gated), ${final.messages.length} messages; errors ${JSON.stringify(Object.fromEntries(errors))}; ` +
    `end rounds ${rounds.join(',')}; took ${((Date.now() - t0) / 1000).toFixed(0)} s`);
  console.log(`${label} counts: double executions ${doubles.length}, results lost ${lost.length}, ` +
    `messages lost ${lostMessages.length}, messages stored twice ${twice.length}, decisions lost ${lostDecisions.length}, invalid model requests ${gen.invalidRequests}, ` +
    `unexpected errors ${unexpected.length}`);
  const problems = [];
  const must0 = (label, items) => { if (items.length) problems.push(`${label}: ${items.length}\n  ${items.slice(0, 10).join('\n  ')}`); };
  must0('double executions', doubles);
  must0('results lost', lost);
  must0('messages lost (resolved, not stored)', lostMessages);
  must0('messages stored twice', twice);
  must0('decisions lost (acknowledged, not in the audit trail)', lostDecisions);
  must0('invalid model requests', (gen.problems ?? []).map((p) => `request ${p.request}: ${p.problem}`));
  must0('unexpected errors', unexpected);
  if (final.status !== 'idle') problems.push(`the end phase left the thread ${final.status} (${rounds.join(',')})`);
  if (byCall.size < 2) problems.push(`only ${byCall.size} calls executed: too little work to mean anything`);
  for (const p of (await check()) ?? []) problems.push(p);
  assert.ok(problems.length === 0, problems.join('\n'));
}
