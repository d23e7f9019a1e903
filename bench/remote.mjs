// Remote threads (issue 25) for bench/run.mjs: the store handler (gatehouse-agent/server, from
// pkg/) over a throwaway Postgres that this section starts and removes
// (tests/support/store-server.mjs → tests/support/postgres.mjs, fsync off), in a Node http
// server in this process. Rows:
//
// - commit latency: one device committing on one thread, one commit after another (the
//   commits of tests/server/fixtures/long-chat.json's first message, each from the version
//   the last answer gave), p50 / p99;
// - handler load: N devices × M threads, every device committing as soon as it is answered,
//   a short sweep; commits/s (successful ones) and p50 / p99 per point, where one Postgres
//   saturates on this machine (the peak), and the CPU per commit of Postgres and of this process. The clients run in
//   this process, so they share the CPU with the handler (and Postgres, and anything else);
// - decision on device B → tool start on device A: two Chromium browser contexts (separate
//   IndexedDB, Web Locks, BroadcastChannel) on one remote thread; A has the tool and the
//   model, B neither; B approves, A hears it on the change stream and runs the tool;
// - offline → online outbox flush: A is taken offline (context.setOffline), a message is
//   queued, A goes online: time until the handler has committed it, the model server has
//   the request, and the answer is stored (A idle).
//
// Numbers are printed, never asserted. A scenario that cannot run returns { error } and the
// caller counts it.
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { startStoreServer } from '../tests/support/store-server.mjs';

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
const wall = () => performance.timeOrigin + performance.now();
const sorted = (xs) => [...xs].sort((a, b) => a - b);
const q = (xs, p) => { const s = sorted(xs); return s.length ? s[Math.min(s.length - 1, Math.ceil(p * s.length) - 1)] : NaN; };
const median = (xs) => q(xs, 0.5);
const summary = (xs) => ({ n: xs.length, median: q(xs, 0.5), p95: q(xs, 0.95), p99: q(xs, 0.99), min: Math.min(...xs), max: Math.max(...xs) });

/** CPU time (ms, user + system) of the cluster's processes: the postmaster and its children. */
export function postgresCpuMs(cluster) {
  const pm = cluster.pid();
  if (!pm) return NaN;
  const tick = 1000 / 100; // USER_HZ
  let total = 0;
  for (const e of fs.readdirSync('/proc')) {
    if (!/^\d+$/.test(e)) continue;
    try {
      const st = fs.readFileSync(`/proc/${e}/stat`, 'utf8');
      const f = st.slice(st.lastIndexOf(')') + 2).split(' ');
      const pid = Number(e), ppid = Number(f[1]);
      if (pid === pm || ppid === pm) total += (Number(f[11]) + Number(f[12])) * tick;
    } catch { /* gone */ }
  }
  return total;
}
const nodeCpuMs = () => { const u = process.cpuUsage(); return (u.user + u.system) / 1000; };

/**
 * `chromium`: playwright-core's; `launchOptions`: how to start it; `modelServer`: bench/run.mjs's
 * (serves the site with pkg/ and bench/site/remote.js, and scripted model scenarios).
 */
export async function measureRemote({ quick, chromium, launchOptions, modelServer: srv, log, errors }) {
  const out = { cores: os.cpus().length };
  const [first] = JSON.parse(fs.readFileSync(path.join(root, 'tests/server/fixtures/long-chat.json'), 'utf8')).commits;
  const s = await startStoreServer({ poolSize: 20 });
  // When the handler answered each POST (a commit, a lease, …): res 'finish' on the Node server.
  const answered = [];
  s.server.on('request', (req, res) => {
    if (req.method === 'POST') res.on('finish', () => answered.push({ at: wall(), url: req.url, status: res.statusCode }));
  });
  try {
    // ---------------------------------------------------------------- commits
    async function device(thread, owner, until, lat, counts) {
      let version = 0;
      let n = 0;
      while (performance.now() < until) {
        const body = { ...first, commitId: `${owner}:${n++}`, expectedVersion: version, owner, keep: false };
        const t = performance.now();
        const r = await fetch(`${s.url}/threads/${encodeURIComponent(thread)}/commit`, {
          method: 'POST', body: JSON.stringify(body),
          headers: { authorization: 'Bearer alice', 'content-type': 'application/json' },
        });
        const answer = await r.json();
        lat.push(performance.now() - t);
        if (r.status === 200) { version = answer.record.version; counts.ok++; } else if (answer.error?.code === 'conflict') { version = answer.error.found; counts.conflicts++; } else throw new Error(`commit: HTTP ${r.status} ${JSON.stringify(answer).slice(0, 200)}`);
      }
    }
    const seconds = quick ? 1 : 3;
    await device('alice:bench-warm', 'dw', performance.now() + 500, [], { ok: 0, conflicts: 0 }); // JIT, pool, wasm core warm
    {
      const lat = [], counts = { ok: 0, conflicts: 0 };
      await device('alice:bench-seq', 'd0', performance.now() + seconds * 1000, lat, counts);
      out.commit = { seconds, n: lat.length, p50: q(lat, 0.5), p99: q(lat, 0.99), rate: counts.ok / seconds };
      log(`remote: commit latency p50 ${out.commit.p50.toFixed(2)} ms, p99 ${out.commit.p99.toFixed(2)} ms (${lat.length} commits)`);
    }
    out.loadSeconds = quick ? 1 : 2;
    out.load = [];
    const points = quick ? [[1, 1], [4, 4], [16, 16]] : [[1, 1], [2, 2], [4, 4], [8, 8], [16, 16], [32, 32], [64, 32]];
    for (const [devices, threads] of points) {
      const lat = [], counts = { ok: 0, conflicts: 0 };
      const until = performance.now() + out.loadSeconds * 1000;
      const t0 = performance.now();
      const pg0 = postgresCpuMs(s.postgres), node0 = nodeCpuMs();
      await Promise.all(Array.from({ length: devices }, (_, d) => device(`alice:bench-${devices}x${threads}-${d % threads}`, `d${d}`, until, lat, counts)));
      const elapsed = (performance.now() - t0) / 1000;
      const answers = counts.ok + counts.conflicts;
      const p = { devices, threads, rate: counts.ok / elapsed, conflicts: counts.conflicts, p50: q(lat, 0.5), p99: q(lat, 0.99), n: lat.length,
        // CPU per answered commit: less sensitive to other load on the machine than the rates.
        pgCpuPerCommit: (postgresCpuMs(s.postgres) - pg0) / answers, nodeCpuPerCommit: (nodeCpuMs() - node0) / answers };
      out.load.push(p);
      log(`remote: ${devices} devices × ${threads} threads: ${p.rate.toFixed(0)} commits/s, p50 ${p.p50.toFixed(1)} ms, p99 ${p.p99.toFixed(1)} ms, ${p.conflicts} conflicts; CPU per commit: Postgres ${p.pgCpuPerCommit.toFixed(2)} ms, node (handler + clients) ${p.nodeCpuPerCommit.toFixed(2)} ms`);
    }
    const peak = out.load.reduce((x, y) => (y.rate > x.rate ? y : x));
    out.saturation = `${peak.rate.toFixed(0)} commits/s at ${peak.devices} devices × ${peak.threads} threads (p99 ${peak.p99.toFixed(0)} ms)`;
    // What the CPU per commit says one core could hold, whatever else ran meanwhile.
    const cpu = out.load.filter((l) => Number.isFinite(l.pgCpuPerCommit));
    if (cpu.length) {
      out.cpuPerCommit = { postgres: median(cpu.map((l) => l.pgCpuPerCommit)), node: median(cpu.map((l) => l.nodeCpuPerCommit)) };
    }

    // ---------------------------------------------------------------- devices
    const browser = await chromium.launch(launchOptions);
    try {
      const ctxA = await browser.newContext();
      const ctxB = await browser.newContext();
      const open = async (ctx) => {
        const page = await ctx.newPage();
        page.on('pageerror', (e) => log('remote pageerror:', String(e)));
        await page.goto(`${srv.url}/index.html`);
        return page;
      };
      const call = (page, fn, ...args) => page.evaluate(`(async () => (await import('/remote.js')).${fn}(${args.map((x) => JSON.stringify(x)).join(', ')}))()`);
      const runs = quick ? 3 : 10;

      out.devices = await (async () => {
        try {
          const threadId = `alice:devices-${Date.now()}`;
          const baseUrl = srv.scenario('remote-devices', [{ toolCalls: [{ name: 'delete_file', arguments: { path: '/tmp/old.log' } }] }, { text: 'Deleted.' }]);
          const a = await open(ctxA), b = await open(ctxB);
          await call(a, 'openDevice', { url: s.url, user: 'alice', threadId, baseUrl, withTool: true });
          await call(b, 'openDevice', { url: s.url, user: 'alice', threadId });
          const toTool = [], toSeen = [];
          for (let i = 0; i <= runs; i++) { // run 0: warm-up, discarded
            const st = await call(a, 'chat', `Delete /tmp/file-${i}.log please`);
            if (st !== 'awaiting_approval') throw new Error(`device A: ${st}`);
            const { t0 } = await call(b, 'approvePending');
            const count = 4 * (i + 1);
            await call(a, 'settled', count);
            const tool = await a.evaluate((k) => globalThis.toolStarts[k], i);
            if (tool == null) throw new Error('the tool did not run on device A');
            const seen = await call(b, 'settled', count);
            if (i > 0) { toTool.push(tool - t0); toSeen.push(seen - tool); }
          }
          const starts = await a.evaluate(() => globalThis.toolStarts.length);
          if (starts !== runs + 1) throw new Error(`the tool ran ${starts} times for ${runs + 1} approvals`);
          const r = { decisionToTool: summary(toTool), toolToResolved: summary(toSeen) };
          log(`remote: decision on B → tool on A median ${r.decisionToTool.median.toFixed(1)} ms, p95 ${r.decisionToTool.p95.toFixed(1)} ms`);
          await a.close(); await b.close();
          return r;
        } catch (e) {
          log('ERROR in remote devices:', e.stack || e.message);
          errors.push(`remote devices: ${String(e.message).split('\n')[0]}`);
          return { error: String(e.message).split('\n')[0] };
        }
      })();

      // Two ways back online. `alone`: the device has one agent on the thread, and nothing but
      // the network coming back happens (capped at ALONE_MS: the SDK may not retry by itself).
      // `reader`: a second agent is opened on the thread while offline, as
      // tests/remote/devices.test.mjs does; its start and its change stream's reconnection send
      // the device's outbox.
      const ALONE_MS = 8000;
      out.outbox = await (async () => {
        try {
          const threadId = `alice:outbox-${Date.now()}`;
          const scenarioId = 'remote-outbox';
          const baseUrl = srv.scenario(scenarioId, [{ text: 'Answered.' }]);
          const ctx = await browser.newContext();
          const a = await open(ctx);
          const dev = { url: s.url, user: 'alice', threadId };
          await call(a, 'openDevice', { ...dev, baseUrl });
          if (await call(a, 'chat', 'first') !== 'completed') throw new Error('first message not answered');
          const r = { aloneMs: ALONE_MS, alone: { tried: 0, sent: 0, toCommit: [] }, toCommit: [], toModel: [], toIdle: [] };
          let count = 2;
          for (let i = 0; i <= runs; i++) {
            const mode = i < 2 ? 'alone' : 'reader'; // two tries alone, then the reader path
            await ctx.setOffline(true);
            const st = await call(a, 'chat', `offline message ${i}`);
            if (st !== 'queued') throw new Error(`offline chat: ${st}`);
            count += 2;
            if (mode === 'reader') await call(a, 'openReader', dev);
            await new Promise((res) => setTimeout(res, 300));
            const t0 = wall();
            await ctx.setOffline(false);
            let idle = null;
            try { idle = await call(a, 'settled', count, mode === 'alone' ? ALONE_MS : 20_000); } catch { idle = null; }
            const commit = answered.find((x) => x.at >= t0 && /\/commit$/.test(x.url) && x.status === 200);
            const model = (srv.arrivals.get(scenarioId) ?? []).find((x) => x >= t0);
            if (mode === 'alone') {
              r.alone.tried++;
              if (idle != null) { r.alone.sent++; r.alone.toCommit.push(commit ? commit.at - t0 : NaN); continue; }
              // Not sent: a second agent's start sends it, so the next try starts clean.
              await call(a, 'openReader', dev);
              await call(a, 'settled', count);
              await call(a, 'closeReader');
              continue;
            }
            if (idle == null) throw new Error(`the queued message was not sent within 20 s of going online (status ${JSON.stringify(await call(a, 'state'))})`);
            if (i > 2) { // the first reader run is a warm-up
              if (commit) r.toCommit.push(commit.at - t0);
              if (model) r.toModel.push(model - t0);
              r.toIdle.push(idle - t0);
            }
          }
          await ctx.close();
          if (!r.toCommit.length) throw new Error('no commit seen at the handler after going online');
          r.toCommit = summary(r.toCommit);
          r.toModel = r.toModel.length ? summary(r.toModel) : null;
          r.toIdle = summary(r.toIdle);
          log(`remote: outbox alone: ${r.alone.sent} of ${r.alone.tried} sent within ${ALONE_MS} ms; with a second agent: online → committed median ${r.toCommit.median.toFixed(1)} ms, → model ${r.toModel?.median?.toFixed(1)} ms, → idle ${r.toIdle.median.toFixed(1)} ms`);
          return r;
        } catch (e) {
          log('ERROR in remote outbox:', e.stack || e.message);
          errors.push(`remote outbox: ${String(e.message).split('\n')[0]}`);
          return { error: String(e.message).split('\n')[0] };
        }
      })();
    } finally {
      await browser.close().catch(() => {});
    }
  } finally {
    await s.close();
    out.loadavg = os.loadavg().map((x) => +x.toFixed(2));
  }
  return out;
}
