// The table of bench/run.mjs: rows × (Gatehouse, AI SDK persisting, AI SDK in memory,
// GH / AI persisting, GH / AI in memory), built from one run's results (results.json's
// fields). Every comparable row also keeps its numbers (`nums`), from which the ratios and the
// chart of bench/report.mjs are made. No timing is ever asserted here.

export const median = (xs) => { const s = [...xs].sort((a, b) => a - b); const n = s.length; return n ? (n % 2 ? s[(n - 1) / 2] : (s[n / 2 - 1] + s[n / 2]) / 2) : NaN; };
export const ms = (x) => (x == null || Number.isNaN(x) ? '—' : Math.abs(x) >= 100 ? `${x.toFixed(0)} ms` : Math.abs(x) >= 10 ? `${x.toFixed(1)} ms` : `${x.toFixed(2)} ms`);
export const kb = (b) => (b == null ? '—' : b >= 1e6 ? `${(b / 1e6).toFixed(2)} MB` : `${(b / 1e3).toFixed(1)} KB`);
export const mb = (b) => (b == null ? '—' : `${(b / 1048576).toFixed(1)} MiB`);
export const medP95 = (s) => (s ? `${ms(s.median)} / ${ms(s.p95)}` : '—');
const ok = (x) => x != null && Number.isFinite(x);
export const ratioOf = (a, b) => (ok(a) && ok(b) && b ? a / b : null);
export const ratio = (a, b) => { const r = ratioOf(a, b); return r == null ? '' : r >= 10 ? `${r.toFixed(1)}×` : `${r.toFixed(2)}×`; };
const sizeCell = (s) => (s ? `${kb(s.raw)} / ${kb(s.gzip)} / ${kb(s.brotli)}` : '—');

/**
 * Builds the rows. `R` is the run's results; `CFG` its configuration. Returns { rows, notes }.
 * A row: { label, gh, aip, aim, rp, rm, nums?: { gh, aip, aim }, chart?: bool } or { section }.
 */
export function buildRows(R, CFG) {
  const rows = [];
  const notes = [];
  const section = (title) => rows.push({ section: title });
  /**
   * One row. `f` formats the numbers g (Gatehouse), p (AI SDK persisting), m (AI SDK in memory);
   * `cells` overrides a cell's text; `chart: false` keeps a comparable row out of the picture.
   */
  const row = (label, f, g, p, m, { cells = {}, chart = true, short } = {}) => {
    const cell = (x, k) => cells[k] ?? (x === undefined ? '—' : x === null ? 'error' : f ? f(x) : String(x));
    const r = { label, gh: cell(g, 'gh'), aip: cell(p, 'aip'), aim: cell(m, 'aim'), rp: ratio(g, p), rm: ratio(g, m) };
    if (ok(g) && (ok(p) || ok(m))) { r.nums = { gh: g, aip: ok(p) ? p : null, aim: ok(m) ? m : null }; r.chart = chart; r.short = short; }
    rows.push(r);
  };
  const info = (label, gh = '—', aip = '—', aim = '—') => rows.push({ label, gh, aip, aim, rp: '', rm: '' });
  const { size, reopen: ro, turns: tu, stream: st, memory: me, remote: rem } = R;

  // ------------------------------------------------------------------ 1. size
  section('1. Size: what the page downloads for a chat with one gated tool (raw / gzip -9 / brotli 11)');
  if (size) {
    const g = size.gatehouse, a = size.aisdk, p = size.aisdkPersist;
    row('JS, app bundled with esbuild (esm, browser, minified)', null, g.appJs.brotli, p?.appJs.brotli, a.appJs.brotli, { cells: { gh: sizeCell(g.appJs), aip: sizeCell(p?.appJs), aim: sizeCell(a.appJs) }, chart: false });
    if (g.appJsLazyRaw != null) info('  JS chunks loaded only on use (import(); GH: the local provider), raw, not counted', kb(g.appJsLazyRaw), kb(p?.appJsLazyRaw), kb(a.appJsLazyRaw));
    info('wasm (pkg/gatehouse_bg.wasm)', sizeCell(g.wasm));
    if (g.remoteWasm) info('  with the remote store (pkg/gatehouse_remote_bg.wasm, only for storage.kind "remote"), not counted', sizeCell(g.remoteWasm));
    row('total download, gzip -9', kb, g.total.gzip, p?.appJs.gzip, a.appJs.gzip, { short: 'download, gzip -9' });
    row('total download, brotli 11', kb, g.total.brotli, p?.appJs.brotli, a.appJs.brotli, { short: 'download, brotli' });
    row('total download, raw', kb, g.total.raw, p?.appJs.raw, a.appJs.raw, { chart: false });
    info('  as shipped in pkg/: gatehouse.js + gatehouse_wasm.js + snippets, unminified', sizeCell(g.shippedJs));
    const sec = g.wasmSections;
    info('  wasm sections: code / data / other (raw)', `${kb(sec.code)} / ${kb(sec.data ?? 0)} / ${kb(g.wasm.raw - sec.code - (sec.data ?? 0))}`);
    const top = (by) => Object.entries(by ?? {}).sort((x, y) => y[1] - x[1]).slice(0, 3).map(([k, v]) => `${k} ${kb(v)}`).join(', ');
    info('  largest inputs of the AI SDK bundles (minified)', '—', top(p?.appJsByPackage), top(a.appJsByPackage));
    const b = g.breakdown;
    if (!g.byCrate) info('  wasm by crate', 'skipped: no scripts/size-report.sh');
    // Its own reason when it has none (twiggy missing, the script failed), not its first line.
    else if (!b?.crates?.length) info('  wasm by crate', String(g.byCrate).split('\n').find((l) => /^\(|failed/.test(l.trim())) ?? 'no breakdown');
    else {
      const pct = (x) => `${((100 * x) / b.total).toFixed(1)}%`;
      info(`  wasm by crate (scripts/size-report.sh: shallow bytes of the shipped code, raw; total ${kb(b.total)})`, '');
      for (const c of b.crates.slice(0, 10)) info(`    ${c.name}`, `${kb(c.bytes)} (${pct(c.bytes)})`);
      if (b.crates.length > 10) info(`    ${b.crates.length - 10} more crates`, kb(b.crates.slice(10).reduce((x, c) => x + c.bytes, 0)));
      info('  wasm by our module (gatehouse_agent::…, raw)', '');
      for (const m of b.ours.slice(0, 14)) info(`    ${m.name.replace(/^gatehouse_agent::?/, '') || '(crate root)'}`, `${kb(m.bytes)} (${pct(m.bytes)})`);
      if (b.ours.length > 14) info(`    ${b.ours.length - 14} more modules of ours`, kb(b.ours.slice(14).reduce((x, m) => x + m.bytes, 0)));
    }
  }

  // ------------------------------------------------------------------ 2. reopen
  section(`2. Reopen to pending: fresh page load → pendingTools() answering (median / p95 of ${CFG.reopenRuns} loads; AI SDK persisting: idb-keyval get of the chat; the in-memory app keeps nothing across a reload)`);
  if (ro) {
    for (const n of CFG.sizes) {
      const g = ro.gh[n], a = ro.ai[n];
      if (!g) continue;
      const nm = n.toLocaleString('en-US');
      row(`${nm} messages: navigation start → pending known`, null, g.total.median, a?.total.median, undefined, { cells: { gh: medP95(g.total), aip: a ? medP95(a.total) : 'error', aim: 'n/a' }, short: `reopen → pending, ${nm} msgs` });
      row('  library load (GH: import glue + wasm init; AI: import bundle)', null, g.load.median, a?.load.median, undefined, { cells: { gh: medP95(g.load), aip: a ? medP95(a.load) : '—', aim: 'n/a' }, chart: false });
      info('    of which wasm fetch + compile + instantiate (init())', medP95(g.wasmInit));
      row('  thread load (GH: Agent.open = db open + record + tail; AI: get of the whole list)', null, g.open.median, a?.open.median, undefined, { cells: { gh: medP95(g.open), aip: a ? medP95(a.open) : '—', aim: 'n/a' }, chart: false });
      info('  find pending (GH: pendingTools(); AI: scan the last message)', medP95(g.pending), a ? medP95(a.pending) : '—', 'n/a');
      info('  (diagnostic) Agent.open again in the same page, code warm', medP95(g.openAgain));
      const ga = ro.approveAfterReopen.gh[n], aa = ro.approveAfterReopen.ai[n], am = ro.approveAfterReopen.aiMem?.[n];
      if (ga || aa || am) {
        row(`  then approve → model request issued (median of ${CFG.approveRuns}; history read + request built)`, null, ga?.toIssue.median ?? null, aa?.toIssue.median ?? null, am?.toIssue.median ?? null, {
          cells: { gh: ga ? `${ms(ga.toIssue.median)} (${kb(ga.requestChars)} request; wasm ${mb(ga.wasmBytes)})` : 'error', aip: aa ? `${ms(aa.toIssue.median)} (${kb(aa.requestChars)})` : 'error', aim: am ? `${ms(am.toIssue.median)} (${kb(am.requestChars)})` : 'error' },
          short: `approve → request, ${nm} msgs`,
        });
        row('  then approve → call resolved (GH and AI persisting: saved)', ms, ga?.toResolve.median ?? null, aa?.toResolve.median ?? null, am?.toResolve.median ?? null, { chart: false });
      }
    }
  }

  // ------------------------------------------------------------------ 3. per turn
  section(`3. SDK cost per turn: ${CFG.turns} turns of [user → model calls a non-gated tool → tool runs → model answers] = 2 requests per turn; the history grows (turn k carries ~4k messages). AI SDK persisting = saves the whole list after each step (idb-keyval set)`);
  if (tu) {
    const wallCell = (x) => (x ? `${ms(x.msPerTurn)} / ${ms(x.stats.median)}` : undefined);
    const W = (x) => (x ? x.stats.median : undefined);
    const C = (x) => (x ? x.cpuPerTurn : undefined);
    const B = (x) => (x ? x.busyPerTurn : undefined);
    const walls = (label, g, p, m, opts = {}) => row(label, null, W(g), W(p), W(m), { ...opts, cells: { gh: wallCell(g) ?? 'error', aip: wallCell(p) ?? 'error', aim: wallCell(m) ?? 'error' } });
    walls('wall ms per turn, mean / median: GH IndexedDB vs generateText', tu.ghIdb, tu.aiP, tu.ai, { chart: false });
    row('  main-thread CPU per turn (trace, thread time)', ms, C(tu.ghIdb), C(tu.aiP), C(tu.ai), { short: 'CPU per tool turn, IndexedDB' });
    row('  main-thread busy per turn (trace, wall time of tasks)', ms, B(tu.ghIdb), B(tu.aiP), B(tu.ai), { chart: false });
    walls('wall ms per turn, mean / median: GH memory store vs generateText', tu.ghMem, tu.aiP, tu.ai, { chart: false });
    row('  main-thread CPU per turn', ms, C(tu.ghMem), C(tu.aiP), C(tu.ai), { short: 'CPU per tool turn, GH memory store' });
    const fo = tu.idbFloor;
    if (fo) {
      const txs = fo.started?.transactions ?? [];
      const rot = txs.filter((t) => t.startsWith('readonly')).length;
      info(`IndexedDB alone: a GH tool turn's ${rot} read-only + ${txs.length - rot} read-write transactions replayed in plain JS (same values; no SDK, no fetch)`, ms(fo.cpuPerTurn));
      if (tu.ghMem) row('  floor: GH memory store + IndexedDB alone, main-thread CPU per turn', ms, tu.ghMem.cpuPerTurn + fo.cpuPerTurn, C(tu.aiP), C(tu.ai), { short: 'floor: GH memory + IndexedDB alone' });
      if (tu.ghIdb && tu.ghMem) info('  what persisting costs per turn (GH: IndexedDB − memory store; AI: persisting − in memory)', ms(tu.ghIdb.cpuPerTurn - tu.ghMem.cpuPerTurn), tu.aiP && tu.ai ? ms(tu.aiP.cpuPerTurn - tu.ai.cpuPerTurn) : '—', '0');
      if (tu.ghIdb && tu.ghMem) info("  Gatehouse's cost above its own IndexedDB floor (GH IndexedDB − (memory store + IndexedDB alone))", ms(tu.ghIdb.cpuPerTurn - tu.ghMem.cpuPerTurn - fo.cpuPerTurn));
    }
    walls('wall ms per turn, streaming: GH IndexedDB + onEvent vs streamText', tu.ghIdbStream, tu.aiPStream, tu.aiStream, { chart: false });
    row('  main-thread CPU per turn', ms, C(tu.ghIdbStream), C(tu.aiPStream), C(tu.aiStream), { short: 'CPU per tool turn, streaming' });
    const fl = (x) => (x ? `${ms(x.first)} → ${ms(x.last)}` : '—');
    if (tu.ghIdb) info(`first ${tu.ghIdb.window} → last ${tu.ghIdb.window} turns, median wall (GH IndexedDB)`, fl(tu.ghIdb), fl(tu.aiP), fl(tu.ai));
    if (tu.ghMem) info(`first ${tu.ghMem.window} → last ${tu.ghMem.window} turns, median wall (GH memory store)`, fl(tu.ghMem), fl(tu.aiP), fl(tu.ai));
    const body = (x) => (x ? `${kb(x.lastRequestChars)}, ${x.messageCount} msgs` : '—');
    info('request body at the last turn', body(tu.ghIdb), body(tu.aiP), body(tu.ai));
    const ph = (label, g, p, m) => {
      const defs = (g?.phases ?? p?.phases ?? m?.phases)?.phases;
      if (!defs) return;
      info(label, '', '', '');
      defs.forEach((d, i) => row(`  ${d.label}`, ms, g?.phases?.phases[i].median, p?.phases?.phases[i].median, m?.phases?.phases[i].median, { chart: false }));
      const tx = (x) => (x?.phases ? `${x.phases.idbRead.toFixed(1)} + ${x.phases.idbWrite.toFixed(1)}; ${ms(x.phases.idbWriteMs)}` : '—');
      info('  IndexedDB transactions (read-only + read-write); read-write creation → complete, median sum', tx(g), tx(p), tx(m));
    };
    ph('per-phase wall time of a tool turn, median (GH IndexedDB)', tu.ghIdb, tu.aiP, tu.ai);
    const I = (x) => (x ? x.toIssue.median : undefined);
    const ap = (x) => (x ? medP95(x.toIssue) : 'error');
    row(`approval round trip: submitDecisions → next request issued (page clock, median / p95 of ${CFG.approvals})`, null, I(tu.approvalGhIdb), I(tu.approvalAiP), I(tu.approvalAi), { cells: { gh: ap(tu.approvalGhIdb), aip: ap(tu.approvalAiP), aim: ap(tu.approvalAi) }, short: 'approval round trip, IndexedDB' });
    row('  same with the GH memory store', null, I(tu.approvalGhMem), I(tu.approvalAiP), I(tu.approvalAi), { cells: { gh: ap(tu.approvalGhMem), aip: ap(tu.approvalAiP), aim: ap(tu.approvalAi) }, chart: false });
    const S = (x) => (x?.toServer ? x.toServer.median : undefined);
    row('  → request fully received by the server (page vs node wall clock)', ms, S(tu.approvalGhIdb), S(tu.approvalAiP), S(tu.approvalAi), { chart: false });
    const Rv = (x) => (x ? x.toResolve.median : undefined);
    row('  → call resolved (tool ran, answer back; GH and AI persisting: saved)', ms, Rv(tu.approvalGhIdb), Rv(tu.approvalAiP), Rv(tu.approvalAi), { short: 'approval → call resolved' });
    ph('  per-phase wall time of an approval round trip, median (GH IndexedDB)', tu.approvalGhIdb, tu.approvalAiP, tu.approvalAi);
  }

  // ------------------------------------------------------------------ 4. streaming
  section(`4. Streaming one ${CFG.streamTokens.toLocaleString('en-US')}-token answer (median of ${CFG.streamRuns}; GH onEvent text_delta vs streamText textStream)`);
  if (st) {
    const g = st.gh, p = st.aiP, a = st.ai;
    const M = (x, k) => (x ? x[k]?.median : null);
    row('last byte received → last delta delivered', ms, M(g, 'lastByteToLastDelta'), M(p, 'lastByteToLastDelta'), M(a, 'lastByteToLastDelta'), { chart: false });
    row('first byte received → first delta delivered', ms, M(g, 'firstByteToFirstDelta'), M(p, 'firstByteToFirstDelta'), M(a, 'firstByteToFirstDelta'), { short: 'stream: first byte → first delta' });
    row('request issued → last byte received', ms, M(g, 'issuedToLastByte'), M(p, 'issuedToLastByte'), M(a, 'issuedToLastByte'), { chart: false });
    row('request issued → last delta delivered', ms, M(g, 'issuedToLastDelta'), M(p, 'issuedToLastDelta'), M(a, 'issuedToLastDelta'), { short: 'stream: request → last delta' });
    row('main-thread CPU per 1,000 tokens (trace, thread time)', ms, M(g, 'cpuPer1k'), M(p, 'cpuPer1k'), M(a, 'cpuPer1k'), { short: 'stream: CPU per 1,000 tokens' });
    row('  main-thread busy per 1,000 tokens (trace, wall time of tasks)', ms, M(g, 'busyPer1k'), M(p, 'busyPer1k'), M(a, 'busyPer1k'), { chart: false });
    row('last delta → call resolved (GH and AI persisting: answer saved)', ms, M(g, 'lastDeltaToResolved'), M(p, 'lastDeltaToResolved'), M(a, 'lastDeltaToResolved'), { chart: false });
    const d = (x) => (x ? `${x.deltas} / ${kb(x.bytes)} / ${x.chunks}` : '—');
    info('  deltas delivered / bytes on the wire / body chunks seen by the page', d(g), d(p), d(a));
  }

  // ------------------------------------------------------------------ 5. memory
  section('5. Memory (after a forced GC: CDP HeapProfiler.collectGarbage ×2; JS heap = performance.memory.usedJSHeapSize)');
  if (me) {
    const H = (x) => x?.jsHeapBytes;
    const tot = (x) => (x ? (x.wasmBytes ?? 0) + (x.jsHeapBytes ?? 0) : undefined);
    info('fresh page after init: wasm linear memory', mb(me.baseline.gh?.wasmBytes), 'n/a', 'n/a');
    row('fresh page after init: JS heap (both AI SDK apps: the same harness bundle)', mb, H(me.baseline.gh), H(me.baseline.ai), H(me.baseline.ai), { chart: false });
    const nm = CFG.memThread.toLocaleString('en-US');
    if (me.opened.gh || me.opened.ai) {
      row(`after opening a ${nm}-message thread: wasm + JS heap`, mb, tot(me.opened.gh), tot(me.opened.ai), undefined, { cells: { aim: 'n/a' }, chart: false });
      row('  then approve (the history loaded for the model call): wasm + JS heap', mb, tot(me.approved.gh), tot(me.approved.ai), undefined, { cells: { aim: 'n/a' }, chart: false });
    }
    const tg = me.turns?.gh?.memory, tp = me.turns?.aiP?.memory, ta = me.turns?.ai?.memory;
    const nt = CFG.memTurns.toLocaleString('en-US');
    info(`after ${nt} turns (GH memory store): wasm linear memory`, mb(tg?.wasmBytes), 'n/a', 'n/a');
    row(`after ${nt} turns: JS heap`, mb, H(tg), H(tp), H(ta), { chart: false });
    row(`after ${nt} turns: wasm + JS heap`, mb, tot(tg), tot(tp), tot(ta), { short: `memory after ${nt} turns` });
    if (me.turns?.gh) {
      const t = me.turns;
      const wc = (x) => (x ? `${ms(x.stats.median)} (${ms(x.first)} → ${ms(x.last)})` : '—');
      row(`  wall ms per turn over those turns, median (first → last ${t.gh.window})`, null, t.gh.stats.median, t.aiP?.stats.median, t.ai?.stats.median, { cells: { gh: wc(t.gh), aip: wc(t.aiP), aim: wc(t.ai) }, chart: false });
      row('  main-thread CPU per turn over those turns', ms, t.gh.cpuPerTurn, t.aiP?.cpuPerTurn, t.ai?.cpuPerTurn, { chart: false });
    }
  }

  // ------------------------------------------------------------------ 6. long threads
  section('6. Long threads (issue 13): the rows its "done when" names, from the sections above');
  {
    const ap = ro?.approveAfterReopen;
    const g1 = ap?.gh?.[1000], g100 = ap?.gh?.[100000];
    if (g1 && g100) info('approve → request / wasm memory, 100,000 vs 1,000 messages (targets ≤ 1.5× / ≤ 2×)', `${ratio(g100.toIssue.median, g1.toIssue.median)} / ${ratio(g100.wasmBytes, g1.wasmBytes)}`,
      ap.ai?.[1000] && ap.ai?.[100000] ? ratio(ap.ai[100000].toIssue.median, ap.ai[1000].toIssue.median) : '—', ap.aiMem?.[1000] && ap.aiMem?.[100000] ? ratio(ap.aiMem[100000].toIssue.median, ap.aiMem[1000].toIssue.median) : '—');
  }

  // ------------------------------------------------------------------ 7. remote threads
  if (rem) remoteRows(rem, section, info, notes);
  if (R.receipts) receiptRows(R.receipts, section, info);
  if (R.requests) requestRows(R.requests, section, info);
  if (R.hotspot) hotspotRows(R.hotspot, section, info);
  if (R.handlerCpu) handlerRows(R.handlerCpu, section, info);
  if (R.scale) scaleRows(R.scale, section, info);
  if (R.local) localRows(R.local, section, info);

  notes.push('Columns: Gatehouse; the AI SDK app that persists like Gatehouse (its message list saved to IndexedDB with idb-keyval after every step, as the AI SDK\'s message-persistence guide does in onStepFinish/onFinish); the AI SDK app that keeps its list in memory only (persists nothing).');
  notes.push('Ratios are Gatehouse / that AI SDK app, of the medians (below 1× = Gatehouse is smaller or faster). Timings are printed, never asserted.');
  notes.push('The wasm is served with Cache-Control: no-store, so every reopen compiles it (first-visit cost; no code cache).');
  return { rows, notes };
}

/** Signed approval receipts (bench/receipts.mjs): what one costs a decision. Gatehouse only. */
function receiptRows(r, section, info) {
  section('Signed approval receipts (Ed25519, Web Crypto in Node)');
  if (r.error) { info('receipts', `error: ${r.error}`); return; }
  const ms = (s) => `${s.median.toFixed(3)} / ${s.p95.toFixed(3)} ms`;
  info(`sign one receipt (median / p95 of ${r.sign.n})`, ms(r.sign));
  info(`verifyApproval (median / p95 of ${r.verify.n})`, ms(r.verify));
  info('receipt size (JSON)', `${r.bytes} B`);
  info(`decision at the handler, no key → with a key (median of ${r.decidePlain.n} each)`,
    `${r.decidePlain.median.toFixed(2)} → ${r.decideSigned.median.toFixed(2)} ms (${(r.decideSigned.median / r.decidePlain.median).toFixed(2)}×)`);
  info(`consumeApproval (median / p95 of ${r.consume.n})`, ms(r.consume));
}

/** Approval requests (bench/requests.mjs): the outbox's latency and one handler's rate. */
function requestRows(r, section, info) {
  section('Approval requests (the outbox: onApprovalRequested)');
  if (r.error) { info('requests', `error: ${r.error}`); return; }
  info(`commit → hook, one gated call at a time, p50 / p99 (${r.latency.n} calls; from the outbox row's insert in the commit)`, `${r.latency.p50} / ${r.latency.p99} ms`);
  info(`deliveries one handler sustains (${r.throughput.n} due, a hook that returns at once; the handler's start included)`, `${r.throughput.perSecond.toFixed(0)}/s (${r.throughput.seconds.toFixed(2)} s)`);
}

/** The change feed's hot spot (bench/hotspot.mjs): commits/s by devices, with and without NOTIFY. */
function hotspotRows(r, section, info) {
  section('Many devices at once (one handler, each device on its own thread; lock waits per sample)');
  if (r.error) { info('hotspot', `error: ${r.error}`); return; }
  for (const p of r) {
    info(`  ${p.devices} devices, ${p.variant}`, `${p.rate.toFixed(0)}/s · p50 ${p.p50.toFixed(1)} / p99 ${p.p99.toFixed(1)} ms · waiting on a row lock ${p.rowWaits.toFixed(2)}, on NOTIFY ${p.notifyWaits.toFixed(2)}`);
  }
}

/** Where a commit's CPU goes (bench/handler-cpu.mjs): the handler in its own process. */
function handlerRows(r, section, info) {
  section(`CPU per commit, the handler in a process of its own (${r.devices ?? '?'} devices)`);
  if (r.error) { info('handler CPU', `error: ${r.error}`); return; }
  const cpu = (x) => `${x.handlerMs.toFixed(3)} / ${x.postgresMs.toFixed(3)} / ${x.clientsMs.toFixed(3)} ms (handler ${(x.handlerMs / x.postgresMs).toFixed(2)}× Postgres) at ${x.rate.toFixed(0)} commits/s`;
  info('  handler / Postgres / the load\'s clients', cpu(r));
  if (r.pipelined?.handlerMs != null) info('  the same, the pool in pipeline mode (pg.Pool({ pipeline: true }))', cpu(r.pipelined));
  if (r.profile) {
    const share = (t) => `${((t / r.profile.total) * 100).toFixed(1)}%`;
    info('  handler self time by kind', Object.entries(r.profile.groups).map(([g, t]) => `${g} ${share(t)}`).join(', '));
    info('  socket writes by caller', Object.entries(r.profile.writes).map(([k, t]) => `${k} ${share(t)}`).join(', '));
  }
}

/** A million threads (bench/scale.mjs): the same user's calls on an empty and a full database. */
function scaleRows(r, section, info) {
  section(`A large database (${r.threads?.toLocaleString('en')} threads, ${r.messages?.toLocaleString('en')} messages of other users; the user owns 50)`);
  if (r.error) { info('scale', `error: ${r.error}`); return; }
  for (const k of ['list', 'open', 'commit', 'delete']) {
    info(`  ${k}, median: empty → full`, `${r.empty[k].p50.toFixed(2)} → ${r.full[k].p50.toFixed(2)} ms (${(r.full[k].p50 / r.empty[k].p50).toFixed(2)}×)`);
  }
  info('  filled by SQL in', `${r.fillSeconds.toFixed(0)} s (database ${r.size})`);
}

/** Section 7: remote threads (bench/remote.mjs). Gatehouse only: the AI SDK has no counterpart. */
function remoteRows(rem, section, info, notes) {
  section('7. Remote threads (issue 25): the store handler (gatehouse-agent/server) over a throwaway local Postgres 15 (fsync off), Node http; Gatehouse only');
  if (rem.error) { info('remote threads', `error: ${rem.error}`); return; }
  const c = rem.commit;
  if (c) info(`commit latency through the handler, 1 device × 1 thread, p50 / p99 (${c.n} commits in ${c.seconds} s)`, `${ms(c.p50)} / ${ms(c.p99)}`);
  if (rem.load?.length) {
    info(`handler load: N devices × M threads, each device committing as soon as answered (${rem.loadSeconds} s per point; clients in the same process)`, 'commits/s · p50 / p99');
    for (const l of rem.load) info(`  ${l.devices} devices × ${l.threads} threads`, `${l.rate.toFixed(0)}/s · ${ms(l.p50)} / ${ms(l.p99)}${l.conflicts ? ` · ${l.conflicts} conflicts` : ''}${Number.isFinite(l.pgCpuPerCommit) ? ` · CPU/commit PG ${l.pgCpuPerCommit.toFixed(2)} + node ${l.nodeCpuPerCommit.toFixed(2)} ms` : ''}`);
    const peak = rem.load.reduce((a, b) => (b.rate > a.rate ? b : a));
    info('  peak: where one Postgres (and this process) saturated on this machine in this run', `${peak.rate.toFixed(0)} commits/s at ${peak.devices} devices × ${peak.threads} threads (p99 ${ms(peak.p99)})`);
    if (rem.cpuPerCommit) info('  CPU per commit, median over the points: Postgres / node (handler + the load clients) → commits/s one core of each would hold', `${ms(rem.cpuPerCommit.postgres)} / ${ms(rem.cpuPerCommit.node)} → ${(1000 / rem.cpuPerCommit.postgres).toFixed(0)} / ${(1000 / rem.cpuPerCommit.node).toFixed(0)}`);
  }
  const d = rem.devices;
  if (d) {
    if (d.error) info('decision on device B → tool start on device A', `error: ${d.error}`);
    else info(`decision on device B → tool start on device A (two browser contexts, one remote thread; median / p95 of ${d.decisionToTool.n})`, medP95(d.decisionToTool));
    if (d.toolToResolved) info('  then tool start on A → the model\'s answer stored, seen on B (median / p95)', medP95(d.toolToResolved));
  }
  const o = rem.outbox;
  if (o) {
    if (o.error) info('offline → online outbox flush', `error: ${o.error}`);
    else {
      info(`offline → online, one agent on the device, nothing else happening: queued message sent within ${o.aloneMs / 1000} s of setOffline(false)`, `${o.alone.sent} of ${o.alone.tried}${o.alone.sent ? ` (${o.alone.toCommit.map((x) => ms(x)).join(', ')})` : ''}`);
      info(`offline → online with a second agent opened on the thread while offline (as tests/remote/devices.test.mjs): → message committed at the handler (median / p95 of ${o.toCommit.n})`, medP95(o.toCommit));
      if (o.toModel) info('  → the model request received by the model server', medP95(o.toModel));
      if (o.toIdle) info('  → the run continued: the answer stored, the agent idle (page)', medP95(o.toIdle));
      if (o.alone.sent < o.alone.tried) notes.push(`Outbox: with one agent on the device, a message queued offline was not sent within ${o.aloneMs / 1000} s of the network coming back (${o.alone.tried - o.alone.sent} of ${o.alone.tried} tries). Queuing it schedules no retry (src/driver/outbox.rs: enqueue does not call later()), and the agent's change stream, opened before going offline, is not broken by Chromium's offline emulation, so nothing sends it until another agent on the thread starts or the stream reopens.`);
    }
  }
  if (rem.loadavg) notes.push(`Remote threads: load average ${rem.loadavg.join(' ')} when that section ended; Postgres, the handler, the load clients and Chromium share the same ${rem.cores} cores.`);
}

/** The in-page model's rows (bench/local.mjs), against native llama.cpp (bench/native.mjs):
 *  Gatehouse only, there is no AI SDK column; the native numbers and the ratios are in the
 *  cells. */
function localRows(L, section, info) {
  section(`Local provider: ${L.model}, ${L.runtime}, CPU only; native: ${L.native?.runtime ?? L.native?.error ?? 'not run'}`);
  info('runtime download: wllama.wasm + local JS, raw / gzip -9 (only for provider "local")', `${kb(L.bytes.wasm + L.bytes.js)} / ${kb(L.bytes.wasmGzip + L.bytes.jsGzip)}`);
  const tps = (w) => (w.streamMs && w.outputTokens > 1 ? (w.outputTokens - 1) / (w.streamMs / 1000) : NaN);
  info('first start: download (local server) + load, ms', ms(L.cold.loadMs));
  const runsOf = (X) => X.warm.filter((w) => !w.error);
  info('later start: load from Cache Storage, median ms', ms(median(runsOf(L).map((w) => w.loadMs))));
  const native = L.native?.byThreads ?? {};
  const ratio = (a, b) => (Number.isFinite(a) && Number.isFinite(b) && b > 0 ? `${(a / b).toFixed(2)}×` : '-');
  for (const X of [L, L.isolated].filter(Boolean)) {
    const good = runsOf(X);
    const n = X.threads;
    const nat = native[n];
    const natTtft = nat ? median(nat.turns.map((t) => t.ttftMs)) : NaN;
    const natTps = nat ? median(nat.turns.map((t) => t.tps)) : NaN;
    const ttft = median(good.map((w) => w.ttftMs));
    const speed = median(good.map(tps));
    info(`${n} thread(s): time to first token (${good[0]?.inputTokens ?? '?'}-token prompt), median ms; native; Gatehouse / native`,
      `${ms(ttft)}; ${ms(natTtft)}; ${ratio(ttft, natTtft)}`);
    info(`${n} thread(s): tokens per second while streaming, median; native; Gatehouse / native`,
      `${Number.isFinite(speed) ? speed.toFixed(1) : '-'}; ${Number.isFinite(natTps) ? natTps.toFixed(1) : '-'}; ${ratio(speed, natTps)}`);
  }
  // Where the first token's time goes (1 thread, the later starts): the parts measured in the
  // page (local/index.js's User Timing) and llama.cpp's own clock for the prompt.
  const part = (X, name, key = 'ms') => median(runsOf(X).map((w) => w.parts?.[name]?.[key]).filter(Number.isFinite));
  info('first token, later start: file from Cache Storage / wllama load (worker, wasm, weights) / grammar, median ms',
    `${ms(part(L, 'file'))} / ${ms(part(L, 'load'))} / ${Number.isFinite(part(L, 'grammar')) ? ms(part(L, 'grammar')) : 'no tools'}`);
  info('first token: request → first chunk, median ms; of which llama.cpp evaluating the prompt (its clock)',
    `${ms(part(L, 'first-token'))}; ${ms(part(L, 'answer', 'promptMs'))} for ${part(L, 'answer', 'promptTokens')} tokens`);
  const again = (L.again ?? []).filter((w) => !w.error);
  if (again.length) {
    info('a second chat on the loaded model: time to first token, median ms (no load: file/load parts absent)',
      `${ms(median(again.map((w) => w.ttftMs)))} (load parts seen: ${again.filter((w) => w.parts?.load).length})`);
  }
  info('renderer peak resident memory above the page before the model (page + worker), 1 thread', mb(L.peakRendererRssAboveBase));
  const ua = L.isolated?.uaMemory;
  if (ua) {
    const scopes = [...new Set([...Object.keys(ua.before.by), ...Object.keys(ua.after.by)])];
    info('isolated page: the browser\'s own account of memory after the first answer, by scope (above before the model)',
      scopes.map((k) => `${k} ${mb(ua.after.by[k] ?? 0)} (+${mb((ua.after.by[k] ?? 0) - (ua.before.by[k] ?? 0))})`).join('; '));
  }
  if (L.isolated) info('renderer peak resident memory above the page before the model, isolated (threads)', mb(L.isolated.peakRendererRssAboveBase));
  const nat1 = native[1];
  if (nat1) info('native: resident memory the process gained by loading the model (1 thread)', mb(nat1.rssAboveBase));
  if (L.loadBefore) info('load average before / after the section (1, 5, 15 min)', `${L.loadBefore.join(' ')} / ${L.loadAfter.join(' ')}`);
}

/** The table as text (column widths fitted). */
export function formatTable(rows) {
  const head = ['', 'Gatehouse', 'AI SDK persisting', 'AI SDK in memory', 'GH / AI pers.', 'GH / AI mem.'];
  const body = rows.filter((r) => !r.section).map((r) => [r.label, r.gh, r.aip, r.aim, r.rp, r.rm]);
  const w = head.map(() => 0);
  for (const r of [head, ...body]) r.forEach((c, i) => { w[i] = Math.max(w[i], String(c).length); });
  const line = (cells) => cells.map((c, i) => (i === 0 ? String(c).padEnd(w[i]) : String(c).padStart(w[i]))).join('  ');
  const sep = '-'.repeat(w.reduce((a, b) => a + b + 2, -2));
  const out = [sep, line(head), sep];
  for (const r of rows) out.push(r.section ? r.section : line([r.label, r.gh, r.aip, r.aim, r.rp, r.rm]));
  out.push(sep);
  return out.join('\n');
}
