// The change feed's global hot spot (issue 38, item 3), measured. Until schema 6 every write
// updated one row (gatehouse_change_counter, id 1) in its transaction, so all commits of all
// threads waited on one row lock; now a change is numbered by its transaction id, and every
// write still sends pg_notify with its commit (Postgres's notify queue lock, held at commit).
// N devices, each committing to its own thread as soon as answered, through one handler over
// a throwaway Postgres, as shipped and without NOTIFY (`notify: false`), alternated. Prints
// commits/s, p50/p99, and how many backends a sample found waiting on a lock, by kind (a row
// or transaction lock; an object lock: the notify queue). Numbers are printed, never asserted.
//
//   node bench/hotspot.mjs [--quick] [--devices 8,64,256] [--seconds 3] [--server PATH]
//
// --server: another build of gatehouse-agent/server's entry (default pkg/server.js), to compare
// two versions of the handler on the same machine.
import http from 'node:http';
import path from 'node:path';
import pg from 'pg';
import { startPostgres } from '../tests/support/postgres.mjs';
import { fixture } from '../tests/server/util.mjs';

const cli = import.meta.url === `file://${process.argv[1]}`;
const arg = (name, dflt) => { const i = cli ? process.argv.indexOf(name) : -1; return i > 0 ? process.argv[i + 1] : dflt; };
const q = (xs, p) => { const s = [...xs].sort((a, b) => a - b); return s[Math.min(s.length - 1, Math.ceil(p * s.length) - 1)]; };

export async function measureHotspot({ quick = false, log = console.error } = {}) {
  const DEVICES = arg('--devices', quick ? '8,64' : '8,64,256').split(',').map(Number);
  const SECONDS = Number(arg('--seconds', quick ? 1 : 3));
  const entry = arg('--server', null);
  const { createStoreHandler, toNodeListener } = await import(entry ? path.resolve(entry) : '../pkg/server.js');
  const cluster = await startPostgres();
  const pool = new pg.Pool({ connectionString: cluster.connectionString, max: 40 });
  pool.on('error', () => {});
  const [first] = fixture('long-chat.json');
  const out = [];
  try {
    const variants = { shipped: { notify: true }, 'no NOTIFY': { notify: false } };
    const servers = {};
    for (const [name, v] of Object.entries(variants)) {
      const handle = createStoreHandler({
        pool,
        authorize: () => 'alice', notify: v.notify, basePath: '/g',
      });
      await handle.migrate();
      const server = http.createServer(toNodeListener(handle));
      await new Promise((r) => server.listen(0, '127.0.0.1', r));
      servers[name] = { handle, server, url: `http://127.0.0.1:${server.address().port}/g` };
    }
    const agent = new http.Agent({ keepAlive: true, maxSockets: 512 });
    const post = (url, body) => new Promise((resolve, reject) => {
      const req = http.request(url, { method: 'POST', agent, headers: { 'content-type': 'application/json' } }, (res) => {
        let text = '';
        res.on('data', (d) => { text += d; });
        res.on('end', () => resolve({ status: res.statusCode, body: JSON.parse(text) }));
      });
      req.on('error', reject);
      req.end(JSON.stringify(body));
    });
    let round = 0;
    const point = async (name, devices) => {
      const { url } = servers[name];
      const tag = `${name.replace(/\W+/g, '')}-${devices}-${round++}`;
      const lat = [];
      let ok = 0;
      const waits = { row: 0, notify: 0, other: 0, samples: 0 };
      const sampler = new pg.Client({ connectionString: cluster.connectionString });
      await sampler.connect();
      let sampling = true;
      const sampling$ = (async () => {
        while (sampling) {
          const r = await sampler.query(`SELECT wait_event FROM pg_stat_activity
            WHERE wait_event_type = 'Lock' AND backend_type = 'client backend'`);
          waits.samples++;
          for (const row of r.rows) {
            if (row.wait_event === 'tuple' || row.wait_event === 'transactionid') waits.row++;
            else if (row.wait_event === 'object') waits.notify++;
            else waits.other++;
          }
          await new Promise((res) => setTimeout(res, 5));
        }
      })();
      const until = performance.now() + SECONDS * 1000;
      const t0 = performance.now();
      await Promise.all(Array.from({ length: devices }, async (_, d) => {
        let version = 0;
        let n = 0;
        const thread = `alice:${tag}-${d}`;
        while (performance.now() < until) {
          const t = performance.now();
          const r = await post(`${url}/threads/${encodeURIComponent(thread)}/commit`,
            { ...first, commitId: `d${d}:${n++}`, expectedVersion: version, owner: `d${d}`, keep: false });
          lat.push(performance.now() - t);
          if (r.status !== 200) throw new Error(`commit: ${r.status} ${JSON.stringify(r.body).slice(0, 200)}`);
          version = r.body.record.version;
          ok++;
        }
      }));
      const elapsed = (performance.now() - t0) / 1000;
      sampling = false;
      await sampling$;
      await sampler.end();
      return { variant: name, devices, rate: ok / elapsed, p50: q(lat, 0.5), p99: q(lat, 0.99),
        rowWaits: waits.row / waits.samples, notifyWaits: waits.notify / waits.samples, otherWaits: waits.other / waits.samples };
    };
    for (const devices of DEVICES) {
      // Warm, then each variant twice, alternated.
      for (const name of Object.keys(variants)) await point(name, Math.min(devices, 8));
      const got = {};
      for (const order of [Object.keys(variants), Object.keys(variants).reverse()]) {
        for (const name of order) (got[name] ??= []).push(await point(name, devices));
      }
      for (const [name, pts] of Object.entries(got)) {
        const avg = (k) => pts.reduce((a, p) => a + p[k], 0) / pts.length;
        const p = { variant: name, devices, rate: avg('rate'), p50: avg('p50'), p99: avg('p99'),
          rowWaits: avg('rowWaits'), notifyWaits: avg('notifyWaits'), otherWaits: avg('otherWaits') };
        out.push(p);
        log(`hotspot: ${String(devices).padStart(3)} devices, ${name.padEnd(22)} ${p.rate.toFixed(0).padStart(5)} commits/s, p50 ${p.p50.toFixed(1)} ms, p99 ${p.p99.toFixed(1)} ms; backends waiting on a lock per sample: row ${p.rowWaits.toFixed(2)}, notify ${p.notifyWaits.toFixed(2)}, other ${p.otherWaits.toFixed(2)}`);
      }
    }
    agent.destroy();
    for (const s of Object.values(servers)) {
      await s.handle.close();
      s.server.closeAllConnections?.();
      await new Promise((r) => s.server.close(r));
    }
    return out;
  } finally {
    await pool.end().catch(() => {});
    await cluster.stop();
  }
}

if (cli) await measureHotspot({ quick: process.argv.includes('--quick') });
