// Where a commit's CPU goes (issue 38, item 3): the store handler in a process of its own
// (bench/handler-proc.mjs), Postgres, and the load's clients in this process, measured apart
// from /proc, with N devices each committing to its own thread as soon as answered. With
// --profile, the handler runs under --cpu-prof and the functions with the most self time are
// printed, grouped as the wasm core, JSON, crypto, node-postgres, HTTP, and the rest.
// Numbers are printed, never asserted.
//
//   node bench/handler-cpu.mjs [--quick] [--devices 8] [--seconds 5] [--profile] [--server PATH] [--socket] [--pipeline]
//
// --socket: the handler reaches Postgres over its Unix socket instead of TCP on loopback.
// --pipeline: the handler's pool is made with node-postgres' `pipeline: true` (BEGIN goes with
// a commit's first statement, COMMIT with its last).
//
// --server: another build of gatehouse-agent/server's entry, to compare two versions.
import { spawn } from 'node:child_process';
import fs from 'node:fs';
import http from 'node:http';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { startPostgres } from '../tests/support/postgres.mjs';
import { fixture } from '../tests/server/util.mjs';
import { postgresCpuMs } from './remote.mjs';

const here = path.dirname(fileURLToPath(import.meta.url));
const cli = import.meta.url === `file://${process.argv[1]}`;
const arg = (name, dflt) => { const i = cli ? process.argv.indexOf(name) : -1; return i > 0 ? process.argv[i + 1] : dflt; };
const TICK = 1000 / 100;
const procCpuMs = (pid) => {
  const st = fs.readFileSync(`/proc/${pid}/stat`, 'utf8');
  const f = st.slice(st.lastIndexOf(')') + 2).split(' ');
  return (Number(f[11]) + Number(f[12])) * TICK;
};

/** Self time by function of a .cpuprofile, grouped. */
function profileSummary(file) {
  const p = JSON.parse(fs.readFileSync(file, 'utf8'));
  const self = new Map();
  const dt = new Map();
  for (let i = 0; i < p.samples.length; i++) dt.set(p.samples[i], (dt.get(p.samples[i]) ?? 0) + (p.timeDeltas[i] ?? 0));
  let total = 0;
  for (const n of p.nodes) {
    const t = (dt.get(n.id) ?? 0) / 1000;
    if (!t) continue;
    const { functionName, url } = n.callFrame;
    if (functionName === '(idle)' || functionName === '(program)' && false) continue;
    total += t;
    const key = `${functionName || '(anonymous)'} ${url ? path.basename(url) : ''}`.trim();
    self.set(key, (self.get(key) ?? 0) + t);
  }
  const groups = { 'wasm core': 0, 'JSON': 0, 'crypto': 0, 'node-postgres': 0, 'HTTP': 0, 'GC': 0, 'other': 0 };
  for (const [k, t] of self) {
    const g = /core_bg|wasm-function|core\.js/.test(k) ? 'wasm core'
      : /JSON|parse|stringify/.test(k) ? 'JSON'
      : /crypto|digest|createHash|sha/i.test(k) ? 'crypto'
      : /pg[/-]|client\.js|connection\.js|query\.js|result\.js|parser|serializer|buffer-reader/i.test(k) ? 'node-postgres'
      : /_http|http|undici|stream|socket|net\.js/i.test(k) ? 'HTTP'
      : /garbage|GC/.test(k) ? 'GC' : 'other';
    groups[g] += t;
  }
  const top = [...self].sort((a, b) => b[1] - a[1]).slice(0, 15);
  // Who the socket writes are for: the self time of writev/writeBuffer by the nearest caller
  // that tells (node-postgres, or Node's HTTP server).
  const parent = new Map();
  for (const n of p.nodes) for (const ch of n.children ?? []) parent.set(ch, n.id);
  const byId = new Map(p.nodes.map((n) => [n.id, n]));
  const writes = {};
  for (const n of p.nodes) {
    if (!/^(writev|writeBuffer|writeUtf8String|writeLatin1String)$/.test(n.callFrame.functionName)) continue;
    const t = (dt.get(n.id) ?? 0) / 1000;
    let who = 'other';
    for (let at = parent.get(n.id); at !== undefined; at = parent.get(at)) {
      const u = byId.get(at).callFrame.url;
      if (/node_modules\/pg/.test(u)) { who = 'node-postgres'; break; }
      if (/_http_|node:http/.test(u)) { who = 'HTTP server'; break; }
    }
    writes[who] = (writes[who] ?? 0) + t;
  }
  return { total, groups, top, writes };
}

export async function measureHandlerCpu({ quick = false, log = console.error, profile = false, pipelined = false } = {}) {
  const devices = Number(arg('--devices', 8));
  const seconds = Number(arg('--seconds', quick ? 2 : 5));
  const socket = cli && process.argv.includes('--socket');
  const pipeline = cli ? process.argv.includes('--pipeline') : pipelined;
  const cluster = await startPostgres();
  const profDir = fs.mkdtempSync(path.join(os.tmpdir(), 'gatehouse-prof-'));
  const child = spawn(process.execPath, [...(profile ? ['--cpu-prof', `--cpu-prof-dir=${profDir}`] : []),
    path.join(here, 'handler-proc.mjs'), socket
      ? `postgresql://${cluster.user}@/${cluster.database}?host=${encodeURIComponent(cluster.socketDir)}&port=${cluster.port}`
      : cluster.connectionString, ...(arg('--server', null) ? [arg('--server', null)] : [])],
  { stdio: ['ignore', 'pipe', 'inherit'], env: { ...process.env, GATEHOUSE_PIPELINE: pipeline ? '1' : '0' } });
  try {
    const url = await new Promise((resolve, reject) => {
      let out = '';
      child.stdout.on('data', (d) => { out += d; const m = /READY (\S+)/.exec(out); if (m) resolve(m[1]); });
      child.on('exit', () => reject(new Error('the handler exited')));
    });
    const [first] = fixture('long-chat.json');
    const agent = new http.Agent({ keepAlive: true, maxSockets: 256 });
    const post = (u, body) => new Promise((resolve, reject) => {
      const req = http.request(u, { method: 'POST', agent, headers: { 'content-type': 'application/json' } }, (res) => {
        let text = '';
        res.on('data', (d) => { text += d; });
        res.on('end', () => resolve({ status: res.statusCode, body: JSON.parse(text) }));
      });
      req.on('error', reject);
      req.end(JSON.stringify(body));
    });
    const load = async (ms, tag) => {
      let ok = 0;
      const until = performance.now() + ms;
      await Promise.all(Array.from({ length: devices }, async (_, d) => {
        let version = 0;
        let n = 0;
        while (performance.now() < until) {
          const r = await post(`${url}/threads/${encodeURIComponent(`alice:${tag}-${d}`)}/commit`,
            { ...first, commitId: `d${d}:${n++}`, expectedVersion: version, owner: `d${d}`, keep: false });
          if (r.status !== 200) throw new Error(`commit ${r.status} ${JSON.stringify(r.body).slice(0, 200)}`);
          version = r.body.record.version;
          ok++;
        }
      }));
      return ok;
    };
    await load(1000, 'warm');
    const h0 = procCpuMs(child.pid), p0 = postgresCpuMs(cluster), c0 = process.cpuUsage();
    const t0 = performance.now();
    const commits = await load(seconds * 1000, 'run');
    const elapsed = (performance.now() - t0) / 1000;
    const c1 = process.cpuUsage(c0);
    const r = { devices, commits, rate: commits / elapsed,
      handlerMs: (procCpuMs(child.pid) - h0) / commits, postgresMs: (postgresCpuMs(cluster) - p0) / commits,
      clientsMs: (c1.user + c1.system) / 1000 / commits };
    log(`handler cpu: ${devices} devices${socket ? ' (Unix socket)' : ''}${pipeline ? ' (pipeline mode)' : ''}, ${r.rate.toFixed(0)} commits/s; CPU per commit: handler ${r.handlerMs.toFixed(3)} ms, Postgres ${r.postgresMs.toFixed(3)} ms, the load's clients ${r.clientsMs.toFixed(3)} ms`);
    agent.destroy();
    child.kill('SIGTERM');
    await new Promise((res) => child.once('exit', res));
    if (profile) {
      const file = fs.readdirSync(profDir).find((f) => f.endsWith('.cpuprofile'));
      if (file) {
        r.profile = profileSummary(path.join(profDir, file));
        const share = (t) => `${((t / r.profile.total) * 100).toFixed(1)}%`;
        log(`handler profile (self time): ${Object.entries(r.profile.groups).map(([g, t]) => `${g} ${share(t)}`).join(', ')}`);
        for (const [k, t] of r.profile.top) log(`  ${share(t).padStart(6)}  ${k}`);
        log(`  socket writes by caller: ${Object.entries(r.profile.writes).map(([k, t]) => `${k} ${share(t)}`).join(', ')}`);
      }
    }
    return r;
  } finally {
    child.kill('SIGKILL');
    fs.rmSync(profDir, { recursive: true, force: true });
    await cluster.stop();
  }
}

if (cli) await measureHandlerCpu({ quick: process.argv.includes('--quick'), profile: process.argv.includes('--profile') });
