// Multi-tab stress test of the promise "a tool never runs twice, and never runs while the thread
// says it didn't" (README, Approval semantics 7 and 8): several tabs (pages of one browser
// context: one IndexedDB, one set of Web Locks, one BroadcastChannel) chat on ONE thread,
// approve, reject, retry, refresh, reopen, and get reloaded in the middle of what they do, for
// a while; then a fresh tab finishes the thread as a user would (the end phase: recover what a
// dead tab left, reject re-gated calls, approve the rest, retry, until idle), and the executions
// the tools recorded are compared with the thread as stored.
//
// The model is a generated scenario of the model server: endless turns of 1-3 gated calls with
// fresh ids, each answered by a text once its results come, and every request it receives is
// validated (a result per call, no orphan result, nothing twice...). See README.md here for
// what is counted and the environment variables of a long run.

import { after, test } from 'node:test';
import assert from 'node:assert/strict';
import { run, setup, stressConfig, uid, within } from './harness.mjs';
import { engineVersion } from './engines.mjs';

const h = await setup();
after(() => h.close());

const cfg = stressConfig();
console.log(`stress: ${cfg.tabs} tabs (GATEHOUSE_STRESS_TABS) x ${cfg.seconds} s with Web Locks (GATEHOUSE_STRESS_SECONDS), ` +
  `${cfg.nolockSeconds} s without Web Locks (GATEHOUSE_STRESS_NOLOCK_SECONDS)`);

/** Codes a racing tab may legitimately get. Anything else is an unexpected error. */
const EXPECTED_CODES = new Set(['conflict', 'busy', 'not_suspended', 'unknown_call_id', 'nothing_to_retry', 'aborted']);
/** Statuses a UI may see: the documented ones, and "running" (another tab or this agent runs the thread). */
const STATUSES = new Set(['idle', 'awaiting_approval', 'awaiting_tool_results', 'interrupted', 'running']);
const NOT_EXECUTED = 'TOOL NOT EXECUTED.';

const ACTION_MS = 20_000; // one SDK action in a tab (far above what any action should take)
const SETTLE_MS = 30_000; // after the stop signal: the tabs' last actions (and reloads) settle
const QUIET_MS = 15_000; // then: runs that went on after an abort end (the SDK waits 10 s at most)
const LEASE_WAIT_MS = 20_000; // the end phase waits this long at most for a live lease to go
const END_ROUNDS = 12; // the end phase's rounds (reopen, decide or retry) at most
// All of the above after the loops stopped share what is left of the variant's budget
// (stressConfig().variantBudget) but this much, kept for the final read and the report.
const REPORT_MS = 25_000;
/**
 * Without Web Locks a dead tab's lease is judged by its expiry only, and blocks the thread for
 * up to LEASE_MS (src/store/ownership.rs) of real time. Rather than wait that long, the end
 * phase's tab gets a clock this far ahead. The SDK reads the time only through `Date.now()`
 * (js_sys::Date::now; `performance.timeOrigin` and `new Date()` are not used), so shifting
 * `Date.now` is all it takes. With Web Locks the dead tab's lock is already released: no shift.
 */
const CLOCK_AHEAD_MS = 10 * 60_000;
const sleep = (ms) => new Promise((r) => setTimeout(r, ms));
const rnd = (lo, hi) => lo + Math.floor(Math.random() * (hi - lo + 1));
const chance = (p) => Math.random() < p;

/**
 * Installed in every document of the context (so also after each reload): the tool, and one
 * entry point per UI action. It reads the view as a UI does (status(), pendingTools(),
 * lastMessage()) and reports executions and decisions through the `ghStress` binding.
 */
function pageInit() {
  const sleep = (ms) => new Promise((r) => setTimeout(r, ms));
  const rnd = (lo, hi) => lo + Math.floor(Math.random() * (hi - lo + 1));
  // `agents`: every Agent opened in this document (an aborted run may still go on in one that
  // was replaced since), for the quiescence check before the end phase.
  const S = { tab: null, life: null, action: null, agent: null, agents: new Set() };
  window.stress = S;

  const report = (ev) => window.ghStress(ev);
  const codeOf = (e) => (e?.name === 'GatehouseError'
    ? String(e.code)
    : `not a GatehouseError: ${e?.name ?? typeof e}: ${String(e?.message ?? e).slice(0, 160)}`);
  const view = () => {
    const a = S.agent;
    if (!a) return null;
    const last = a.lastMessage();
    return {
      status: a.status(),
      pending: a.pendingTools().map((e) => ({ callId: e.callId, approvalReason: e.approvalReason ?? null })),
      last: last ? (last.type ?? last.role) : null,
    };
  };

  S.tool = () => ({
    name: 'delete_file',
    description: 'Delete a file',
    parameters: { type: 'object', properties: { path: { type: 'string' } }, required: ['path'] },
    requireApproval: true,
    execute: async (inputs, ctx) => {
      const rec = { callId: ctx.callId, inputs: JSON.parse(JSON.stringify(inputs)), tab: S.tab, life: S.life, action: S.action };
      await report({ type: 'exec-start', ...rec });
      await sleep(rnd(0, 300));
      await report({ type: 'exec-end', ...rec });
      return `ran:${ctx.callId}`;
    },
  });

  /** The human at this tab: never approves a re-gated entry (approvalReason set), decides some or all. */
  async function decide(agent, opts, partial) {
    const pending = agent.pendingTools();
    if (pending.length === 0) return null;
    let chosen = pending;
    if (partial && pending.length > 1) {
      chosen = pending.filter(() => Math.random() < 0.5);
      if (chosen.length === 0) chosen = [pending[rnd(0, pending.length - 1)]];
    }
    const decisions = {};
    for (const e of chosen) {
      if (e.approvalReason != null) {
        decisions[e.callId] = ['reject', 'It may have run already: not approving it again'];
      } else {
        const r = Math.random();
        decisions[e.callId] = r < 0.65 ? 'approve' : r < 0.8 ? 'reject' : ['reject', `Not ${e.inputs?.path ?? 'that'}, tab ${S.tab}`];
      }
    }
    await report({ type: 'decide', tab: S.tab, life: S.life, action: S.action, decisions });
    return agent.submitDecisions(decisions, opts);
  }

  /** One action; resolves to { outcomes: ["ok:<status>" | "err:<code>"], view }. */
  S.act = async (a) => {
    const { gh } = window;
    S.action = a.action;
    const outcomes = [];
    const settle = async (p) => {
      try {
        const r = await p;
        outcomes.push(r === null ? 'skip' : `ok:${r?.status ?? 'done'}`);
      } catch (e) {
        outcomes.push(`err:${codeOf(e)}`);
      }
    };
    const acting = S.agent;
    const ac = a.abortAfterMs != null ? new AbortController() : null;
    const opts = ac ? { signal: ac.signal } : {};
    if (ac) setTimeout(() => ac.abort(), a.abortAfterMs);
    const one = (kind) => {
      const agent = S.agent;
      switch (kind) {
        case 'open':
          return gh.Agent.open({
            threadId: a.threadId, model: a.model, storage: { database: a.db }, tools: [S.tool()],
          }).then((agent) => { S.agent = agent; S.agents.add(agent); return { status: 'opened' }; });
        case 'chat': return agent.chat(a.text, opts);
        case 'decide': return decide(agent, opts, a.partial);
        case 'retry': return agent.retry(opts);
        case 'refresh': return agent.refresh().then(() => ({ status: 'refreshed' }));
        default: throw new Error(`unknown action ${kind}`);
      }
    };
    if (a.kind === 'double') {
      // A double click: two calls on the same agent at once (the second is normally `busy`).
      await Promise.all(a.kinds.map((k) => settle(Promise.resolve().then(() => one(k)))));
    } else {
      await settle(Promise.resolve().then(() => one(a.kind)));
    }
    if (acting && outcomes.includes('err:aborted')) {
      // An abort while a tool's `execute` runs resolves at once, but the run goes on without
      // its caller (docs/design.md, "Late results") until the tool settles and its result is
      // written. Report when this agent no longer runs it: a reload of this tab before that
      // cuts the run off, as a reload mid-action does (the test classifies it so).
      (async () => {
        const t0 = performance.now();
        while (acting.status() === 'running' && performance.now() - t0 < 15_000) await sleep(5);
        await report({ type: 'run-ended', tab: S.tab, life: S.life, action: a.action, running: acting.status() === 'running' });
      })();
    }
    return { outcomes, view: view() };
  };

  /** True while an Agent of this document runs a call (refresh() is `busy` exactly then). */
  S.running = async () => {
    let n = 0;
    for (const agent of S.agents) {
      try {
        await agent.refresh();
      } catch (e) {
        if (e?.code === 'busy') n++;
      }
    }
    return n;
  };

  /**
   * The thread record's lease and run journal, read straight from IndexedDB, and whether the
   * lease is live as the SDK judges it: by the Web Lock if it was written holding it, else by
   * its expiry against `Date.now()` (which the end phase's tab may have moved ahead).
   */
  S.lease = async (a) => {
    const dump = await window.gh.dumpDb(a.db);
    const rec = dump.stores.threads?.rows.find((r) => r.id === a.threadId) ?? null;
    const lease = rec?.lease ?? null;
    let live = false;
    if (lease && lease.locked && navigator.locks) {
      const held = (await navigator.locks.query()).held.map((l) => l.name);
      live = held.includes(`gatehouse:${a.db}:${a.threadId}`);
    } else if (lease) {
      live = lease.until > Date.now();
    }
    // How far the lease's expiry is from the real time (this tab's Date.now() may be ahead).
    const realUntilIn = lease ? lease.until - (Date.now() - a.aheadMs) : null;
    return { lease, live, realUntilIn, run: rec?.run ?? null, version: rec?.version ?? null };
  };

  /**
   * One round of the end phase, as a user finishing the thread does: reopen it, then reject
   * the re-gated entries (approvalReason set), approve the other pending ones, or retry() an
   * interrupted run. Nothing else is submitted.
   */
  S.finishRound = async (a) => {
    S.action = a.action;
    const out = { before: null, after: null, did: 'open', regatedRejected: 0, approved: 0, retried: 0, error: null };
    try {
      const agent = await window.gh.Agent.open({
        threadId: a.threadId, model: a.model, storage: { database: a.db }, tools: [S.tool()],
      });
      S.agent = agent;
      S.agents.add(agent);
      out.before = agent.status();
      if (out.before === 'awaiting_approval') {
        const decisions = {};
        let regated = 0;
        for (const e of agent.pendingTools()) {
          if (e.approvalReason != null) regated++;
          decisions[e.callId] = e.approvalReason != null ? ['reject', 'It may have run already: not approving it again'] : 'approve';
        }
        out.did = 'decide';
        await report({ type: 'decide', tab: S.tab, life: S.life, action: S.action, decisions, end: true });
        await agent.submitDecisions(decisions);
        out.regatedRejected = regated;
        out.approved = Object.keys(decisions).length - regated;
      } else if (out.before === 'interrupted') {
        out.did = 'retry';
        await agent.retry();
        out.retried = 1;
      }
      out.after = agent.status();
    } catch (e) {
      out.error = codeOf(e);
    }
    return out;
  };
}

async function stress(t, { seconds, locks }) {
  const variant = locks ? 'with Web Locks' : 'without Web Locks';
  const tag = locks ? 'stress' : 'stress-nolock';
  const t0 = Date.now();
  const endBy = t0 + cfg.variantBudget(seconds) * 1000 - REPORT_MS; // the end phase's deadline
  const left = (ms) => Math.max(0, Math.min(ms, endBy - Date.now()));
  const context = await h.newContext();
  t.after(() => context.close().catch(() => {}));
  if (!locks) await context.addInitScript(() => { delete Navigator.prototype.locks; });
  await context.addInitScript(pageInit);

  // ---- what the tools and the humans report
  const pages = new Map(); // page -> tab index
  const starts = []; // { callId, inputs, tab, life, action, t }
  const ends = [];
  const decisions = [];
  const actions = new Map(); // id -> { id, tab, life, kind, interrupted, settled, outcomes, runEndedAt }
  await context.exposeBinding('ghStress', (source, ev) => {
    const rec = { ...ev, page: pages.get(source.page) ?? null, t: performance.now() };
    if (ev.type === 'exec-start') starts.push(rec);
    else if (ev.type === 'exec-end') ends.push(rec);
    else if (ev.type === 'decide') decisions.push(rec);
    else if (ev.type === 'run-ended' && !ev.running && actions.has(ev.action)) actions.get(ev.action).runEndedAt = rec.t;
  });

  const sc = await h.generatedScenario({ tool: 'delete_file', idPrefix: `call_${locks ? 'l' : 'n'}${process.pid}`, calls: [1, 3], delayMs: [0, 200], chunkDelayMs: [0, 5], argChunk: [1, 4] });
  const shared = { threadId: 'stress-thread', db: uid('db'), model: sc.openai() };

  // ---- the tabs
  const tabs = [];
  for (let i = 0; i < cfg.tabs; i++) {
    const { page } = await h.open(t, { context });
    pages.set(page, i);
    const tab = { i, page, life: 1, agentOpen: false, view: null, chats: 0, loop: null };
    await run(page, ({ i, life }) => { window.stress.tab = i; window.stress.life = life; }, { i, life: 1 });
    tabs.push(tab);
  }

  // The tabs really share what tabs share: Web Locks (or their absence) and IndexedDB.
  const lockView = await run(tabs[0].page, async () => {
    if (!navigator.locks) return { locks: false };
    window.probeHeld = new Promise((held) => {
      navigator.locks.request('stress-probe', () => new Promise((release) => { window.probeRelease = release; held(); }));
    });
    await window.probeHeld;
    return { locks: true };
  });
  if (locks) {
    assert.deepEqual(lockView, { locks: true });
    const seen = await run(tabs.at(-1).page, async () => (await navigator.locks.query()).held.map((l) => l.name));
    assert.ok(seen.includes('stress-probe'), 'a Web Lock held in one tab is seen from another');
    await run(tabs[0].page, () => window.probeRelease());
  } else {
    for (const tab of tabs) assert.equal(await run(tab.page, () => typeof navigator.locks), 'undefined');
  }

  // ---- the loop of every tab
  const counts = { actions: 0, chats: 0, decides: 0, retries: 0, refreshes: 0, opens: 0, doubles: 0, aborts: 0, reloads: 0, interrupted: 0 };
  const codes = new Map(); // error code -> count
  const unexpected = []; // { tab, kind, what }
  const note = (tab, kind, what) => { unexpected.push({ tab: tab.i, kind, what }); };
  let actionSeq = 0;
  let stop = false;
  // Also stop if the test is cancelled (its timeout) or overruns, so no loop outlives the test.
  t.signal?.addEventListener('abort', () => { stop = true; });
  const hardStop = Date.now() + (seconds + 45) * 1000;
  const lifeEnds = new Map(); // "tab.life" -> when its reload began (performance.now())

  const reload = async (tab, action) => {
    if (action && !action.settled) { action.interrupted = true; counts.interrupted++; }
    counts.reloads++;
    lifeEnds.set(`${tab.i}.${tab.life}`, performance.now());
    tab.life++;
    tab.agentOpen = false;
    tab.view = null;
    try {
      await h.load(tab.page, true);
      await run(tab.page, ({ i, life }) => { window.stress.tab = i; window.stress.life = life; }, { i: tab.i, life: tab.life });
    } catch (e) {
      note(tab, 'reload', `reload failed: ${e.message.split('\n')[0]}`);
      await sleep(500);
    }
  };

  const choose = (tab) => {
    if (!tab.agentOpen) return { kind: 'open' };
    const r = Math.random();
    if (r < 0.05) return { kind: 'open' }; // a new Agent on the thread (another component, a route change)
    if (r < 0.10) return { kind: 'refresh' };
    if (r < 0.15) return { kind: 'retry' };
    if (r < 0.18) {
      const kinds = ['chat', 'decide', 'retry', 'refresh'];
      return { kind: 'double', kinds: [kinds[rnd(0, 3)], kinds[rnd(0, 3)]] };
    }
    const status = tab.view?.status;
    switch (status) {
      case 'idle': return { kind: 'chat' };
      case 'awaiting_approval': return { kind: 'decide', partial: chance(0.3) };
      case 'interrupted': return { kind: 'retry' };
      default: return { kind: 'refresh', pauseMs: rnd(20, 150) }; // running, awaiting_tool_results, unknown
    }
  };

  const loop = async (tab) => {
    while (!stop && Date.now() < hardStop) {
      const c = choose(tab);
      if (c.pauseMs) await sleep(c.pauseMs);
      const action = { id: ++actionSeq, tab: tab.i, life: tab.life, kind: c.kind, interrupted: false, settled: false, outcomes: null };
      actions.set(action.id, action);
      counts.actions++;
      const kinds = c.kind === 'double' ? c.kinds : [c.kind];
      if (c.kind === 'double') counts.doubles++;
      for (const k of kinds) {
        if (k === 'chat') counts.chats++;
        else if (k === 'decide') counts.decides++;
        else if (k === 'retry') counts.retries++;
        else if (k === 'refresh') counts.refreshes++;
        else if (k === 'open') counts.opens++;
      }
      const arg = {
        ...shared, ...c, action: action.id,
        text: `tab ${tab.i}.${tab.life} message ${++tab.chats}: clean up the old files`,
        abortAfterMs: ['chat', 'decide', 'retry'].includes(c.kind) && chance(0.05) ? rnd(0, 300) : undefined,
      };
      if (arg.abortAfterMs !== undefined) counts.aborts++;
      const reloadAfterMs = chance(0.05) ? rnd(0, 400) : null;
      const pending = run(tab.page, (a) => window.stress.act(a), arg, ACTION_MS).then(
        (r) => { action.settled = true; action.outcomes = r.outcomes; return r; },
        (e) => { action.settled = true; action.failure = e; return null; },
      );
      const reloading = reloadAfterMs === null ? null : sleep(reloadAfterMs).then(() => reload(tab, action));
      const r = await pending;
      if (reloading) await reloading;
      if (action.interrupted) continue; // whatever it returned, the page went away under it
      const reloaded = tab.life !== action.life; // reloaded after it settled: its view is gone
      if (!r) {
        // A timed-out action may still run in the page: its executions count as not settled.
        if (/timed out/.test(action.failure.message)) action.hung = true;
        note(tab, c.kind, `page.evaluate failed: ${action.failure.message.split('\n')[0]}`);
        await sleep(200);
        continue;
      }
      for (const o of r.outcomes) {
        if (!o.startsWith('err:')) continue;
        const code = o.slice(4);
        codes.set(code, (codes.get(code) ?? 0) + 1);
        if (!EXPECTED_CODES.has(code)) note(tab, c.kind, `error ${code}`);
      }
      if (reloaded) continue;
      if (c.kind === 'open' && r.outcomes[0]?.startsWith('ok:')) tab.agentOpen = true;
      tab.view = r.view;
      if (r.view && !STATUSES.has(r.view.status)) note(tab, c.kind, `status ${JSON.stringify(r.view.status)}`);
      await sleep(rnd(0, 150));
    }
  };

  const started = Date.now();
  for (const tab of tabs) tab.loop = loop(tab);
  await sleep(seconds * 1000);
  stop = true;
  const loopsEnded = await within(Promise.all(tabs.map((x) => x.loop)), SETTLE_MS, 'the tabs\' last actions').then(() => true, () => false);
  const ranFor = (Date.now() - started) / 1000;
  const unsettled = [...actions.values()].filter((a) => (!a.settled || a.hung) && !a.interrupted);

  // ---- quiet: runs that went on after an abort (no caller waits for them) end too
  let stillRunning = 0;
  const quietT0 = Date.now();
  for (const end = Date.now() + left(QUIET_MS); ;) {
    stillRunning = 0;
    for (const tab of tabs) stillRunning += await run(tab.page, () => window.stress.running(), null, 10_000).catch(() => 0);
    if (stillRunning === 0 || Date.now() > end) break;
    await sleep(250);
  }
  const quietS = (Date.now() - quietT0) / 1000;

  // ---- the end phase: a user finishes the thread in a fresh tab
  // The test ends at a random moment: a tab may have died mid-run a moment ago, so the thread
  // can still be "running" (without Web Locks its lease lives on until it lapses), with a call
  // left "started" and the results of the calls before it only in the record's run journal.
  // That is not a lost result until somebody has recovered the thread. So a fresh tab does what
  // a user would do: waits until no live lease remains, then reopens the thread, rejects the
  // re-gated entries, approves the other pending ones, retries an interrupted run, and nothing
  // else, until the thread is idle. Only then is the thread read and judged.
  const endT0 = Date.now();
  const aheadMs = locks ? 0 : CLOCK_AHEAD_MS;
  const reader = await context.newPage();
  reader.setDefaultTimeout(15_000);
  pages.set(reader, 'final');
  if (aheadMs) {
    await reader.addInitScript((ms) => {
      const realNow = Date.now.bind(Date);
      Date.now = () => realNow() + ms;
    }, aheadMs);
  }
  await h.load(reader);
  await run(reader, () => { window.stress.tab = 'final'; window.stress.life = 1; });
  const endPhase = { rounds: 0, regatedRejected: 0, approved: 0, retries: 0, waits: 0, errors: new Map(), statuses: [], leaseWaitS: 0, before: null, finalStatus: null, hung: 0 };
  const leaseArg = { ...shared, aheadMs };
  let leaseState = await run(reader, (a) => window.stress.lease(a), leaseArg);
  endPhase.before = leaseState;
  for (const end = Date.now() + left(LEASE_WAIT_MS); leaseState.live && Date.now() < end;) {
    await sleep(250);
    leaseState = await run(reader, (a) => window.stress.lease(a), leaseArg);
  }
  endPhase.leaseWaitS = (Date.now() - endT0) / 1000;
  endPhase.leaseLive = leaseState.live;
  const journal = leaseState.run; // what the end phase starts from (read after the lease went)
  while (endPhase.rounds < END_ROUNDS && left(ACTION_MS) > 1000) {
    const action = { id: ++actionSeq, tab: 'final', life: 1, kind: 'end', interrupted: false, settled: false, outcomes: null };
    actions.set(action.id, action);
    endPhase.rounds++;
    let r;
    try {
      r = await run(reader, (a) => window.stress.finishRound(a), { ...shared, action: action.id }, left(ACTION_MS));
    } catch (e) {
      action.hung = true;
      endPhase.hung++;
      unexpected.push({ tab: 'final', kind: 'end', what: `page.evaluate failed: ${e.message.split('\n')[0]}` });
      break;
    }
    action.settled = true;
    action.outcomes = [r.error ? `err:${r.error}` : `ok:${r.after}`];
    action.kind = `end ${r.did}`;
    endPhase.statuses.push(`${r.before ?? '?'}${r.did === 'open' ? '' : ` -${r.did}-> ${r.error ? r.error : r.after}`}`);
    endPhase.regatedRejected += r.regatedRejected;
    endPhase.approved += r.approved;
    endPhase.retries += r.retried;
    if (r.error) {
      endPhase.errors.set(r.error, (endPhase.errors.get(r.error) ?? 0) + 1);
      if (!EXPECTED_CODES.has(r.error)) unexpected.push({ tab: 'final', kind: `end ${r.did}`, what: `error ${r.error}` });
    }
    if (r.before === 'idle') break;
    if (r.before === 'running' || r.error === 'busy') { endPhase.waits++; await sleep(Math.min(500, left(500))); }
  }
  const final = await run(reader, async (a) => {
    const agent = await window.gh.Agent.open({ threadId: a.threadId, model: a.model, storage: { database: a.db }, tools: [window.stress.tool()] });
    return { messages: await agent.messages(), count: agent.messageCount, status: agent.status() };
  }, shared, 20_000);
  endPhase.finalStatus = final.status;
  const gen = await sc.generated();

  // ---- the invariants
  const stored = new Map(); // callId -> { inCalls, results: [string|null], entry (of the tool_call message) }
  const slot = (id) => {
    if (!stored.has(id)) stored.set(id, { inCalls: 0, results: [], entry: null });
    return stored.get(id);
  };
  const threadProblems = [];
  final.messages.forEach((m, i) => {
    if (m.type === 'tool_call') {
      for (const e of m.tools) { const s = slot(e.callId); s.inCalls++; s.entry = e; }
      const next = final.messages[i + 1];
      if (next) {
        const want = m.tools.map((e) => e.callId).sort().join(',');
        const got = next.type === 'tool_call_result' ? next.tools.map((e) => e.callId).sort().join(',') : `(a ${next.type ?? next.role} message)`;
        if (want !== got) threadProblems.push(`message ${i}: calls [${want}] are followed by results [${got}]`);
      }
    } else if (m.type === 'tool_call_result') {
      for (const e of m.tools) slot(e.callId).results.push(e.result);
      if (final.messages[i - 1]?.type !== 'tool_call') threadProblems.push(`message ${i}: results without their calls before them`);
    }
  });
  for (const [id, s] of stored) {
    if (s.inCalls > 1) threadProblems.push(`call ${id} is in ${s.inCalls} tool_call messages`);
    if (s.results.length > 1) threadProblems.push(`call ${id} has ${s.results.length} results`);
    if (s.inCalls === 0) threadProblems.push(`call ${id} has a result but no call`);
  }
  const resultOf = (id) => stored.get(id)?.results[0];

  const proposed = new Map(gen.calls.map((c) => [c.callId, c]));
  const byCall = new Map();
  for (const s of starts) {
    if (!byCall.has(s.callId)) byCall.set(s.callId, []);
    byCall.get(s.callId).push(s);
  }
  const endOf = (s) => ends.find((e) => e.callId === s.callId && e.tab === s.tab && e.life === s.life && e.action === s.action);

  const doubles = [...byCall].filter(([, list]) => list.length > 1).map(([id, list]) =>
    `${id} x${list.length} (${list.map((s) => {
      const a = actions.get(s.action);
      return `tab ${s.tab}.${s.life} action ${s.action} ${a?.kind ?? '?'} -> ${a?.interrupted ? 'interrupted by a reload' : a?.outcomes?.join('/') ?? '?'}`;
    }).join('; ')})`);
  const strangers = starts.filter((s) => {
    const p = proposed.get(s.callId);
    return !p || JSON.stringify(p.inputs) !== JSON.stringify(s.inputs) || s.tab !== s.page;
  }).map((s) => s.callId);

  const lost = [];
  const lostAfterCut = [];
  const notExecuted = [];
  const cutNeither = []; // cut off, yet neither its result nor a re-gate is stored
  let returned = 0;
  let cutOff = 0;
  let cutAfterAbort = 0;
  let regatedAfterCut = 0;
  for (const s of starts) {
    const end = endOf(s);
    if (end) returned++;
    const action = actions.get(s.action);
    const result = resultOf(s.callId);
    const entry = stored.get(s.callId)?.entry;
    const gate = entry ? `${entry.approval ?? 'not gated'}${entry.approvalReason != null ? ', re-gated' : ''}` : 'no call stored';
    const lifeEnd = lifeEnds.get(`${s.tab}.${s.life}`);
    const aborted = !!action?.outcomes?.includes('err:aborted');
    const afterAbort = !aborted ? '' : action.runEndedAt === undefined
      ? '; its run never ended'
      : `; its run ended ${end ? `${Math.round(action.runEndedAt - end.t)} ms after the tool returned` : 'without the tool returning'}`;
    const reloadNote = lifeEnd === undefined ? '' : `; tab reloaded ${Math.round(lifeEnd - (end ?? s).t)} ms after the tool ${end ? 'returned' : 'started'}`;
    const where = `${s.callId} (ran in tab ${s.tab}.${s.life} action ${s.action} ${action?.kind} -> ${action?.interrupted ? 'interrupted' : action?.outcomes?.join('/') ?? '?'}${afterAbort}${reloadNote}; ` +
      `stored: ${result === undefined ? 'no result' : JSON.stringify(String(result).slice(0, 40))}, ${gate})`;
    // The spec writes a call's result together with the "started" mark of the next call of the
    // run: a later call started in the same action means this one's result was durable.
    const nextStarted = end && starts.some((o) => o !== s && o.tab === s.tab && o.life === s.life && o.action === s.action && o.t > end.t);
    // An aborted action resolves at once while its run goes on until the tool settles and its
    // result is written ("run-ended"): a reload of its tab before that cuts the run off too.
    const abortCut = aborted && lifeEnd !== undefined && !(action.runEndedAt < lifeEnd);
    const cut = !action || action.interrupted || !action.settled || action.hung || abortCut;
    if (cut && !nextStarted) {
      // Cut off by our own reload before its result was known to be durable: the thread
      // either has the result (it was written after all) or re-gated the call (rejected by
      // the humans and the end phase). Anything else is a failure.
      cutOff++;
      if (abortCut && !(action.interrupted || !action.settled || action.hung)) cutAfterAbort++;
      if (entry?.approvalReason != null) regatedAfterCut++;
      else if (result !== `ran:${s.callId}`) cutNeither.push(where);
      continue;
    }
    if (end && result !== `ran:${s.callId}`) (cut ? lostAfterCut : lost).push(where);
    if (typeof result === 'string' && result.startsWith(NOT_EXECUTED)) notExecuted.push(where);
  }
  // Every result the run journal held when the end phase began must now be in the thread.
  const journalLost = (journal?.results ?? []).filter((r) => resultOf(r.callId) !== r.result).map((r) =>
    `${r.callId} (in the journal: ${JSON.stringify(r.result.slice(0, 40))}, in the thread: ${JSON.stringify(String(resultOf(r.callId) ?? 'nothing').slice(0, 40))})`);
  const seenByModel = Object.entries(gen.resultsSeen ?? {}).filter(([id, r]) => resultOf(id) !== r).map(([id, r]) =>
    `${id} (the model saw ${JSON.stringify(r.slice(0, 40))}, stored: ${JSON.stringify(String(resultOf(id) ?? 'nothing').slice(0, 40))})`);
  const ranWithoutExecution = [...stored].filter(([id, s]) => s.results.some((r) => r === `ran:${id}`) && !byCall.has(id)).map(([id]) => id);

  const loopDecisions = decisions.filter((d) => !d.end);
  const approvals = loopDecisions.reduce((n, d) => n + Object.values(d.decisions).filter((v) => v === 'approve').length, 0);
  const rejections = loopDecisions.reduce((n, d) => n + Object.values(d.decisions).filter((v) => v !== 'approve').length, 0);
  const regateRejections = loopDecisions.reduce((n, d) => n + Object.values(d.decisions).filter((v) => Array.isArray(v) && /may have run/.test(v[1])).length, 0);
  const unexpectedByKind = new Map();
  for (const u of unexpected) unexpectedByKind.set(u.what, (unexpectedByKind.get(u.what) ?? 0) + 1);

  // ---- the report: one line per count
  const say = (k, v) => console.log(`[${tag}] ${k}: ${v}`);
  say('variant', `${cfg.tabs} tabs x ${seconds} s ${variant} in ${engineVersion(h.engine)} (ran ${ranFor.toFixed(1)} s; loops ${loopsEnded ? 'settled' : 'did NOT settle'}; unsettled actions ${unsettled.length})`);
  say('model requests', gen.requests);
  say('model turns (tool-call turns / answers)', `${gen.toolTurns + gen.textTurns} (${gen.toolTurns} / ${gen.textTurns})`);
  say('calls proposed by the model', gen.callsProposed);
  const b = endPhase.before;
  const leaseSaid = !b.lease ? 'none'
    : b.lease.locked ? `locked, ${b.live ? 'live (lock held)' : 'dead (lock free)'}`
      : `unlocked, lapses in ${(b.realUntilIn / 1000).toFixed(1)} s of real time${aheadMs ? ` (${b.live ? 'live' : 'lapsed'} on the shifted clock)` : ''}`;
  say('thread after the loops', `lease ${leaseSaid}; journal ${b.run ? `${b.run.results.length} results, started ${b.run.started ?? 'none'}` : 'none'}; ` +
    `agents still running a call: ${stillRunning} (waited ${quietS.toFixed(1)} s)`);
  say('end phase', `${endPhase.rounds} rounds, ${endPhase.regatedRejected} re-gated rejected, ${endPhase.approved} approved, ${endPhase.retries} retries, ${endPhase.waits} waits` +
    `${endPhase.errors.size ? ` (errors ${[...endPhase.errors].map(([c, n]) => `${c}=${n}`).join(' ')})` : ''}; ` +
    `clock ${aheadMs ? `+${aheadMs / 1000} s` : 'real'}; lease ${endPhase.leaseLive ? 'STILL LIVE' : 'gone'} after ${endPhase.leaseWaitS.toFixed(1)} s; ` +
    `rounds: ${endPhase.statuses.join(', ') || 'none'}; took ${((Date.now() - endT0) / 1000).toFixed(1)} s`);
  say('thread messages at the end', `${final.count} (status ${final.status})`);
  say('executions started / returned', `${starts.length} / ${returned}`);
  say('executions cut off by a reload (may be re-gated) / of them after an abort / re-gated', `${cutOff} / ${cutAfterAbort} / ${regatedAfterCut}`);
  say('actions (chat/decide/retry/refresh/open/double/with abort)', `${counts.actions} (${counts.chats}/${counts.decides}/${counts.retries}/${counts.refreshes}/${counts.opens}/${counts.doubles}/${counts.aborts})`);
  say('approvals / rejections (of which re-gated entries)', `${approvals} / ${rejections} (${regateRejections})`);
  say('reloads (mid-action)', `${counts.reloads} (${counts.interrupted})`);
  say('errors by code', [...codes].sort((a, b) => b[1] - a[1]).map(([c, n]) => `${c}=${n}`).join(' ') || 'none');
  say('double executions (must be 0)', doubles.length);
  say('results lost (must be 0)', `${lost.length + lostAfterCut.length} (action completed: ${lost.length}; cut-off action after the result was written: ${lostAfterCut.length})`);
  say('journal results missing from the thread after the end phase (must be 0)', `${journalLost.length} of ${journal?.results.length ?? 0}`);
  say('cut-off executions neither stored nor re-gated (must be 0)', cutNeither.length);
  say('"not executed" stored for a call that ran (must be 0)', notExecuted.length);
  say('results the model saw, then stored differently (must be 0)', seenByModel.length);
  say('"ran" stored for a call that never ran (must be 0)', ranWithoutExecution.length);
  say('executions not matching a proposed call (must be 0)', strangers.length);
  say('thread inconsistencies (must be 0)', threadProblems.length);
  say('invalid model requests (must be 0)', `${gen.invalidRequests} (${gen.problemCount} problems)`);
  say('unexpected errors (must be 0)', `${unexpected.length}${unexpected.length ? ` (${[...unexpectedByKind].map(([w, n]) => `${w} x${n}`).join('; ')})` : ''}`);
  say('took', `${((Date.now() - t0) / 1000).toFixed(1)} s`);

  const list = (a, n = 12) => `${a.slice(0, n).join('\n  ')}${a.length > n ? `\n  ... and ${a.length - n} more` : ''}`;
  const problems = [];
  const must0 = (label, items) => { if (items.length) problems.push(`${label}: ${items.length}\n  ${list(items)}`); };
  must0('double executions', doubles);
  must0('results lost (the tool returned, the thread has no "ran:<id>" result)', [...lost, ...lostAfterCut]);
  must0('results of the run journal missing from the thread after the end phase', journalLost);
  must0('cut-off executions with neither their result nor a re-gate stored', cutNeither);
  if (final.status !== 'idle') problems.push(`the end phase did not bring the thread to idle: status ${final.status} after ${endPhase.rounds} rounds (${endPhase.statuses.join(', ')})`);
  if (endPhase.leaseLive) problems.push(`a live lease was still in the thread record ${endPhase.leaseWaitS.toFixed(1)} s after the loops stopped: ${JSON.stringify(leaseState.lease)}`);
  if (stillRunning) problems.push(`${stillRunning} agents still running a call ${quietS.toFixed(1)} s after the loops stopped`);
  must0('"TOOL NOT EXECUTED" stored for a call that ran', notExecuted);
  must0('results the model saw, then stored differently', seenByModel);
  must0('"ran" stored for a call that never started', ranWithoutExecution);
  must0('executions not matching a proposed call (or from another tab than reported)', strangers);
  must0('thread inconsistencies', threadProblems);
  must0('invalid model requests', gen.invalidRequests ? gen.problems.map((p) => `request ${p.request}: ${p.problem}`) : []);
  must0('unexpected errors', unexpected.map((u) => `tab ${u.tab} ${u.kind}: ${u.what}`));
  must0('actions that never settled', unsettled.map((a) => `tab ${a.tab}.${a.life} action ${a.id} ${a.kind}`));
  // The run did real work: enough model turns and executions that the counts mean something.
  // Without Web Locks a reload mid-run blocks the thread until the dead tab's lease lapses
  // (30 s: the documented cost of having no Web Locks), so a 30-second run may do very little
  // after an early reload; there it must only have reached the model, and says how much it did.
  // The variant with Web Locks (and a longer GATEHOUSE_STRESS_NOLOCK_SECONDS) carry the volume.
  const minWork = locks ? Math.max(3, Math.floor(seconds / 6)) : 0;
  const turns = gen.toolTurns + gen.textTurns;
  if (turns < Math.max(1, minWork)) problems.push(`only ${turns} model turns (want at least ${Math.max(1, minWork)})`);
  if (starts.length < minWork) problems.push(`only ${starts.length} executions (want at least ${minWork})`);
  if (approvals < minWork) problems.push(`only ${approvals} approvals (want at least ${minWork})`);
  if (!locks && starts.length < 2) console.log(`[${tag}] little work this time (${starts.length} executions): the thread was blocked by a dead tab's lease for most of the run`);
  if (counts.reloads === 0 && seconds >= 20) problems.push('no reload happened');
  assert.ok(problems.length === 0, `${cfg.tabs} tabs x ${seconds} s ${variant}:\n${problems.join('\n')}`);
}

const skip = (s) => (s > 0 ? false : 'duration 0');
test(`${cfg.tabs} tabs x ${cfg.seconds} s on one thread with Web Locks: no tool runs twice, no result is lost, every model request is valid`,
  { timeout: cfg.variantBudget(cfg.seconds) * 1000, skip: skip(cfg.seconds) }, (t) => stress(t, { seconds: cfg.seconds, locks: true }));

test(`${cfg.tabs} tabs x ${cfg.nolockSeconds} s on one thread without Web Locks (plain http): the same promises`,
  { timeout: cfg.variantBudget(cfg.nolockSeconds) * 1000, skip: skip(cfg.nolockSeconds) }, (t) => stress(t, { seconds: cfg.nolockSeconds, locks: false }));
