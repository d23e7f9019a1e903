#!/usr/bin/env node
// Gatehouse vs the Vercel AI SDK in headless Chromium. Prints one table and writes
// bench-output/results.json. Never fails on a number: timings are printed, not asserted.
// A harness error (a scenario that did not run) is shown in its cells and makes the exit
// code 1, after the table is printed.
//
//   node bench/run.mjs [--quick] [--out DIR] [--only LIST]   (pkg/ must be built: ./scripts/build-pkg.sh)
//
// --only takes a comma-separated subset of size,reopen,turns,approvals,stream,memory,remote,hotspot,handler,scale,receipts,requests,local
// (the memory section's 100,000-message cells come from reopen; local: the in-page model,
// bench/local.mjs, which needs the test model of make setup-model).
//
// How each number is measured: bench/README.md.
import { execFileSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import zlib from 'node:zlib';
import { fileURLToPath } from 'node:url';
import esbuild from 'esbuild';
import { chromium } from 'playwright-core';
import { startServer } from '../tests/model-server/server.mjs';
import { measureLocal } from './local.mjs';
import { measureNative } from './native.mjs';
import { measureRemote } from './remote.mjs';
import { measureReceipts } from './receipts.mjs';
import { measureRequests } from './requests.mjs';
import { measureHotspot } from './hotspot.mjs';
import { measureScale } from './scale.mjs';
import { measureHandlerCpu } from './handler-cpu.mjs';
import { writeReport } from './report.mjs';
import { buildRows, formatTable, ms, kb, mb } from './table.mjs';

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
const argv = process.argv.slice(2);
const flag = (name) => argv.includes(name);
const opt = (name, dflt) => { const i = argv.indexOf(name); return i >= 0 ? argv[i + 1] : dflt; };
const QUICK = flag('--quick');
const OUT = path.resolve(root, opt('--out', 'bench-output'));
const ONLY = opt('--only', null)?.split(',');
const wanted = (name) => !ONLY || ONLY.includes(name);

const CFG = QUICK
  ? { sizes: [10, 1000], reopenRuns: 3, approveRuns: 2, turns: 20, block: 5, approvals: 5, streamRuns: 2, streamTokens: 20000, memTurns: 50 }
  : { sizes: [10, 1000, 10000, 100000], reopenRuns: 20, approveRuns: 5, turns: 200, block: 20, approvals: 20, streamRuns: 5, streamTokens: 20000, memTurns: 1000 };
CFG.memThread = CFG.sizes.at(-1);

const started = Date.now();
const LOAD_START = os.loadavg().map((x) => +x.toFixed(2));
const log = (...a) => console.error(`[bench ${((Date.now() - started) / 1000).toFixed(1).padStart(5)}s]`, ...a);
const errors = [];

// ------------------------------------------------------------------------------- stats

const sorted = (xs) => [...xs].sort((a, b) => a - b);
const median = (xs) => { const s = sorted(xs); const n = s.length; return n ? (n % 2 ? s[(n - 1) / 2] : (s[n / 2 - 1] + s[n / 2]) / 2) : NaN; };
const p95 = (xs) => { const s = sorted(xs); return s.length ? s[Math.min(s.length - 1, Math.ceil(0.95 * s.length) - 1)] : NaN; };
const mean = (xs) => xs.reduce((a, b) => a + b, 0) / xs.length;
const summary = (xs) => ({ n: xs.length, median: median(xs), p95: p95(xs), mean: mean(xs), min: Math.min(...xs), max: Math.max(...xs) });

// ------------------------------------------------------------------------------- formatting

let rows = []; // bench/table.mjs
let notes = [];
const section = (title) => rows.push({ section: title });
const row = (label, gh, aip = '—', aim = '—') => rows.push({ label, gh: gh ?? '—', aip, aim, rp: '', rm: '' });

function printTable(machine) {
  const lines = [];
  lines.push(`Gatehouse vs Vercel AI SDK — ${machine.date}${QUICK ? '   (--quick: small N, smoke run only)' : ''}`);
  lines.push(`machine: ${machine.cpu} · ${machine.cores} cores · ${machine.memGiB} GiB · ${machine.os} · 1-min load average ${machine.loadavgStart[0]} before the run, ${machine.loadavgEnd[0]} at its end (includes the benchmark itself)`);
  if (machine.loadavgStart[0] > machine.cores / 2) lines.push(`WARNING: the machine was not idle before the run (load average ${machine.loadavgStart[0]} on ${machine.cores} cores): wall-clock times are inflated and noisy; the main-thread CPU rows are the robust ones.`);
  lines.push(`browser: ${machine.chromium} (headless) · node ${machine.node} · ai ${machine.ai} · @ai-sdk/openai-compatible ${machine.openaiCompatible} · idb-keyval ${machine.idbKeyval}`);
  lines.push(formatTable(rows));
  for (const n of notes) lines.push(n);
  return lines.join('\n');
}

// ------------------------------------------------------------------------------- machine

function machineInfo(chromiumVersion) {
  let cpu = 'unknown';
  try { cpu = /model name\s*:\s*(.*)/.exec(fs.readFileSync('/proc/cpuinfo', 'utf8'))?.[1]?.trim() ?? os.cpus()[0]?.model; } catch { cpu = os.cpus()[0]?.model ?? cpu; }
  const pkgVersion = (p) => { try { return JSON.parse(fs.readFileSync(path.join(root, 'node_modules', p, 'package.json'), 'utf8')).version; } catch { return '?'; } };
  return {
    date: new Date().toISOString(), cpu, cores: os.cpus().length, loadavgStart: LOAD_START, loadavgEnd: os.loadavg().map((x) => +x.toFixed(2)), memGiB: (os.totalmem() / 2 ** 30).toFixed(1),
    os: `${os.type()} ${os.release()}`, node: process.version, chromium: chromiumVersion,
    ai: pkgVersion('ai'), openaiCompatible: pkgVersion('@ai-sdk/openai-compatible'), idbKeyval: pkgVersion('idb-keyval'),
    gatehouseVersion: JSON.parse(fs.readFileSync(path.join(root, 'pkg/package.json'), 'utf8')).version,
    gitCommit: (() => { try { return execFileSync('git', ['rev-parse', '--short', 'HEAD'], { cwd: root }).toString().trim(); } catch { return '?'; } })(),
  };
}

// ------------------------------------------------------------------------------- 1. size

const gz = (b) => zlib.gzipSync(b, { level: 9 }).length;
const br = (b) => zlib.brotliCompressSync(b, { params: { [zlib.constants.BROTLI_PARAM_QUALITY]: 11, [zlib.constants.BROTLI_PARAM_SIZE_HINT]: b.length } }).length;
const sizes = (b) => ({ raw: b.length, gzip: gz(b), brotli: br(b) });
const sizeCell = (s) => `${kb(s.raw)} / ${kb(s.gzip)} / ${kb(s.brotli)}`;

/**
 * Bundles `entry` as an app's bundler would: esbuild, esm, browser, minified, with code
 * splitting, so a module the app imports only with `import()` (the package's `local` provider,
 * wllama, loaded only for provider "local") lands in a chunk of its own, downloaded only when
 * used. `code` is what the page loads at start: the entry chunk and the chunks it imports
 * statically; `lazy` is the rest (bytes, raw).
 */
function bundle(entry, extra = {}) {
  const r = esbuild.buildSync({
    entryPoints: [entry], bundle: true, format: 'esm', platform: 'browser', minify: true, target: 'es2022',
    splitting: true, outdir: path.join(os.tmpdir(), 'gatehouse-bench-bundle'),
    write: false, metafile: true, logLevel: 'error', ...extra,
  });
  const outputs = r.metafile.outputs;
  const key = (f) => path.relative(process.cwd(), f.path);
  const files = new Map(r.outputFiles.map((f) => [key(f), f]));
  const start = Object.keys(outputs).find((k) => outputs[k].entryPoint && !k.endsWith('.map'));
  const eager = new Set();
  const walk = (k) => { if (eager.has(k)) return; eager.add(k); for (const i of outputs[k].imports ?? []) if (i.kind === 'import-statement' && outputs[i.path]) walk(i.path); };
  walk(start);
  const byPackage = {};
  for (const k of eager) {
    for (const [p, i] of Object.entries(outputs[k].inputs)) {
      const m = /node_modules\/((?:@[^/]+\/)?[^/]+)/.exec(p);
      const n = m ? m[1] : p;
      byPackage[n] = (byPackage[n] ?? 0) + i.bytesInOutput;
    }
  }
  const code = Buffer.concat([...eager].map((k) => Buffer.from(files.get(k).contents)));
  const lazy = Object.keys(outputs).filter((k) => !eager.has(k) && !k.endsWith('.map')).reduce((n, k) => n + outputs[k].bytes, 0);
  return { code, byPackage, lazy };
}

function wasmSections(buf) {
  const names = { 1: 'type', 2: 'import', 3: 'function', 4: 'table', 5: 'memory', 6: 'global', 7: 'export', 8: 'start', 9: 'element', 10: 'code', 11: 'data', 12: 'datacount' };
  let p = 8;
  const leb = () => { let x = 0, s = 0, c; do { c = buf[p++]; x |= (c & 127) << s; s += 7; } while (c & 128); return x >>> 0; };
  const out = {};
  while (p < buf.length) {
    const id = buf[p++];
    const len = leb();
    const start = p;
    let name = names[id] ?? `id${id}`;
    if (id === 0) { const l = leb(); name = `custom:${buf.subarray(p, p + l).toString()}`; }
    out[name] = (out[name] ?? 0) + len;
    p = start + len;
  }
  return out;
}

function measureSize() {
  const wasmBuf = fs.readFileSync(path.join(root, 'pkg/gatehouse_bg.wasm'));
  // The entry and wasm-bindgen's module.
  const glue = Buffer.concat(['gatehouse.js', 'gatehouse_wasm.js'].map((f) => fs.readFileSync(path.join(root, 'pkg', f))));
  const snippetDir = path.join(root, 'pkg/snippets');
  const snippets = [];
  for (const d of fs.existsSync(snippetDir) ? fs.readdirSync(snippetDir, { recursive: true }) : []) {
    const f = path.join(snippetDir, d);
    if (fs.statSync(f).isFile()) snippets.push(fs.readFileSync(f));
  }
  const shippedJs = Buffer.concat([glue, ...snippets]);
  const ghApp = bundle(path.join(root, 'bench/apps/gatehouse-app.js'));
  const aiApp = bundle(path.join(root, 'bench/apps/aisdk-app.js'));
  const aiPersistApp = bundle(path.join(root, 'bench/apps/aisdk-persist-app.js'));
  const r = {
    gatehouse: {
      wasm: sizes(wasmBuf), wasmSections: wasmSections(wasmBuf), shippedJs: sizes(shippedJs),
      // The same crate with the remote store: fetched instead of (initRemote()) or beside the
      // main wasm, only by a page with remote threads.
      remoteWasm: sizes(fs.readFileSync(path.join(root, 'pkg/gatehouse_remote_bg.wasm'))),
      appJs: sizes(ghApp.code), appJsByInput: ghApp.byPackage, appJsLazyRaw: ghApp.lazy,
    },
    aisdk: { appJs: sizes(aiApp.code), appJsByPackage: aiApp.byPackage, appJsLazyRaw: aiApp.lazy },
    aisdkPersist: { appJs: sizes(aiPersistApp.code), appJsByPackage: aiPersistApp.byPackage, appJsLazyRaw: aiPersistApp.lazy },
  };
  r.gatehouse.total = { raw: r.gatehouse.wasm.raw + r.gatehouse.appJs.raw, gzip: r.gatehouse.wasm.gzip + r.gatehouse.appJs.gzip, brotli: r.gatehouse.wasm.brotli + r.gatehouse.appJs.brotli };
  // Another engineer's per-crate report; optional.
  const report = path.join(root, 'scripts/size-report.sh');
  if (fs.existsSync(report)) {
    try {
      // --no-build: pkg/ and the release wasm are what this run measures (scripts/bench.sh and
      // make bench build them first). Every module, so ours can all be listed.
      r.gatehouse.byCrate = execFileSync('bash', [report, '--no-build'], { cwd: root, stdio: ['ignore', 'pipe', 'pipe'], timeout: 300_000, env: { ...process.env, SIZE_REPORT_TOP: '1000' } }).toString();
      r.gatehouse.breakdown = parseSizeReport(r.gatehouse.byCrate);
    } catch (e) {
      r.gatehouse.byCrate = `scripts/size-report.sh failed: ${String(e.stderr || e.message).trim().split('\n').slice(-3).join(' | ')}`;
    }
  } else {
    r.gatehouse.byCrate = null;
  }
  return r;
}

/**
 * scripts/size-report.sh's output → { total, crates: [{ name, bytes, items }], modules:
 * [{ name, bytes }] } (shallow bytes of the shipped wasm, names kept). `ours` = the modules
 * of gatehouse_agent, the crate this repository builds.
 */
function parseSizeReport(text) {
  const out = { total: null, crates: [], modules: [], ours: [] };
  let part = null;
  for (const line of text.split('\n')) {
    const head = /^== (wasm by crate|top \d+ modules|largest items)/.exec(line);
    if (head) {
      part = head[1].startsWith('wasm') ? 'crates' : head[1].startsWith('top') ? 'modules' : null;
      const t = /total (\d+)/.exec(line);
      if (t) out.total = Number(t[1]);
      continue;
    }
    if (part === 'crates') {
      const m = /^\s*(\d+)\s+([\d.]+)%\s+(\d+) items\s+(.+)$/.exec(line);
      if (m) out.crates.push({ name: m[4].trim(), bytes: Number(m[1]), items: Number(m[3]) });
    } else if (part === 'modules') {
      const m = /^\s*(\d+)\s+([\d.]+)%\s+(.+)$/.exec(line);
      if (m) out.modules.push({ name: m[3].trim(), bytes: Number(m[1]) });
    }
  }
  out.ours = out.modules.filter((m) => m.name === 'gatehouse_agent' || m.name.startsWith('gatehouse_agent::'));
  return out;
}

// ------------------------------------------------------------------------------- site + server

async function prepareSite() {
  const site = path.join(OUT, 'site');
  fs.rmSync(site, { recursive: true, force: true });
  fs.mkdirSync(site, { recursive: true });
  for (const f of ['index.html', 'reopen-gh.html', 'reopen-ai.html', 'common.js', 'gh.js', 'remote.js']) {
    fs.copyFileSync(path.join(root, 'bench/site', f), path.join(site, f));
  }
  fs.cpSync(path.join(root, 'pkg'), path.join(site, 'pkg'), { recursive: true, dereference: true });
  const ai = bundle(path.join(root, 'bench/site/ai-harness.js'), { external: ['/common.js'], splitting: false });
  fs.writeFileSync(path.join(site, 'ai.js'), ai.code);
  // The Gatehouse reopen page's script, built the same way: its harness and the package's JS
  // in one minified bundle, as a Vite app ships it (the shared common.js stays its own
  // module for both pages). Written beside the wasm, which the glue finds by
  // `new URL('gatehouse_bg.wasm', import.meta.url)`; the package's `import()`s (demo model,
  // MCP client, local model) become chunks there, loaded only when used.
  await esbuild.build({
    stdin: { contents: "export * from './gh.js'; export * as gatehouse from './pkg/gatehouse.js'; export { default as wasmInit } from './pkg/gatehouse_wasm.js';", resolveDir: site, loader: 'js' },
    bundle: true, format: 'esm', platform: 'browser', minify: true, target: 'es2022', splitting: true,
    outdir: path.join(site, 'pkg'), entryNames: 'gh-app', chunkNames: 'gh-app-[hash]', logLevel: 'error',
    plugins: [{ name: 'site-paths', setup(b) { b.onResolve({ filter: /common\.js$/ }, () => ({ path: '/common.js', external: true })); b.onResolve({ filter: /^\/pkg\// }, (a) => ({ path: path.join(site, a.path) })); } }],
  });
  return site;
}

async function startModelServer(site) {
  const srv = await startServer({ staticDir: site, ttlSeconds: 3600 });
  // Do not keep request bodies (1,000 turns of a growing history would hold GBs); keep the
  // arrival time of each model request instead (wall clock: timeOrigin + now, like the page).
  const arrivals = new Map();
  srv.store.record = (s, entry) => {
    const t = performance.timeOrigin + performance.now();
    if (!arrivals.has(s.id)) arrivals.set(s.id, []);
    arrivals.get(s.id).push(t);
    entry.body = null;
    return entry;
  };
  srv.arrivals = arrivals;
  srv.scenario = (id, turns, repeat = true) => { srv.store.put({ id, turns, repeat }); arrivals.delete(id); return `${srv.url}/s/${id}/v1`; };
  return srv;
}

const LOOKUP = { toolCalls: [{ name: 'lookup', arguments: { q: 'weather in Lisbon' } }] };
const ANSWER = { text: 'It is sunny in Lisbon today, 21 degrees.' };
const DELETE = { toolCalls: [{ name: 'delete_file', arguments: { path: '/tmp/old.log' } }] };

// ------------------------------------------------------------------------------- browser helpers

let context, srv;

async function newPage(url = '/index.html') {
  const page = await context.newPage();
  page.on('pageerror', (e) => log('pageerror:', String(e)));
  page.on('console', (m) => { if (m.type() === 'error' || m.type() === 'warning') log(`console.${m.type()}:`, m.text().slice(0, 300)); });
  await page.goto(srv.url + url);
  const cdp = await context.newCDPSession(page);
  return { page, cdp };
}

/**
 * Runs `fn` under a Chrome trace (category `toplevel`) and returns the renderer main
 * thread's time in that window: `busyMs`, the wall time of its outermost top-level events
 * (tasks and microtask checkpoints), and `cpuMs`, their thread CPU time (`tdur`), which other
 * load on the machine does not inflate. Performance.getMetrics' TaskDuration is not used: it
 * was seen attributing work to the wrong window (649 ms where the trace had 62 ms).
 */
async function traced(cdp, fn) {
  await cdp.send('Tracing.start', { categories: 'toplevel', transferMode: 'ReturnAsStream' });
  let result, error;
  try { result = await fn(); } catch (e) { error = e; }
  const done = new Promise((res) => cdp.once('Tracing.tracingComplete', res));
  await cdp.send('Tracing.end');
  const { stream } = await done;
  const parts = [];
  for (;;) {
    const c = await cdp.send('IO.read', { handle: stream, size: 1 << 20 });
    parts.push(c.base64Encoded ? Buffer.from(c.data, 'base64').toString() : c.data);
    if (c.eof) break;
  }
  await cdp.send('IO.close', { handle: stream });
  if (error) throw error;
  const parsed = JSON.parse(parts.join(''));
  const events = parsed.traceEvents ?? parsed;
  const names = new Map();
  for (const e of events) if (e.ph === 'M' && e.name === 'thread_name') names.set(`${e.pid}:${e.tid}`, e.args?.name);
  const main = events.filter((e) => e.ph === 'X' && e.cat === 'toplevel' && names.get(`${e.pid}:${e.tid}`) === 'CrRendererMain')
    .sort((a, b) => a.ts - b.ts);
  let busy = 0, cpu = 0, noThreadTime = 0;
  const end = new Map();
  for (const e of main) {
    const k = `${e.pid}:${e.tid}`;
    if (e.ts < (end.get(k) ?? -Infinity)) continue; // nested in an outer event already counted
    end.set(k, e.ts + (e.dur ?? 0));
    busy += (e.dur ?? 0) / 1000;
    if (e.tdur == null) noThreadTime += (e.dur ?? 0) / 1000; else cpu += e.tdur / 1000;
  }
  // Events without a thread time are normally ~1 µs ones; `noThreadTimeMs` says if not.
  return { result, busyMs: busy, cpuMs: cpu, noThreadTimeMs: noThreadTime };
}

async function gcAndMemory(page, cdp, harness) {
  for (let i = 0; i < 2; i++) await cdp.send('HeapProfiler.collectGarbage');
  return page.evaluate(async (h) => {
    const wasmBytes = globalThis.__wasm?.memory?.buffer?.byteLength ?? null;
    return { wasmBytes: h === 'ai' ? null : wasmBytes, jsHeapBytes: performance.memory?.usedJSHeapSize ?? null };
  }, harness);
}

const GH = (fn, args) => `(async () => { const m = await import('/gh.js'); if (!globalThis.__ghInit) { await m.init(); globalThis.__ghInit = 1; } return m.${fn}(${JSON.stringify(args ?? {})}); })()`;
const AI = (fn, args) => `(async () => { const m = await import('/ai.js'); return m.${fn}(${JSON.stringify(args ?? {})}); })()`;

async function guard(name, fn) {
  try {
    return await fn();
  } catch (e) {
    log(`ERROR in ${name}:`, e.stack || e.message);
    errors.push(`${name}: ${String(e.message).split('\n')[0]}`);
    return null;
  }
}

// ------------------------------------------------------------------------------- 2. reopen

async function reopen() {
  // `ai`: the persisting AI SDK app (idb-keyval); `aiMem`: the in-memory one (approve only).
  const out = { gh: {}, ai: {}, seed: { gh: {}, ai: {} }, approveAfterReopen: { gh: {}, ai: {}, aiMem: {} }, memory: {} };
  // Real templates through each SDK, then seed every size straight into IndexedDB.
  {
    const { page } = await newPage();
    const tplGh = srv.scenario('tpl-gh', [LOOKUP, ANSWER, DELETE], false);
    const template = await page.evaluate(GH('makeTemplate', { baseUrl: tplGh, database: 'gh-reopen', threadId: 'template' }));
    out.templateGh = template;
    const tplAi = srv.scenario('tpl-ai', [LOOKUP, ANSWER, DELETE], false);
    const templateAi = await page.evaluate(AI('makeTemplate', { baseUrl: tplAi }));
    out.templateAi = templateAi;
    for (const n of CFG.sizes) {
      out.seed.gh[n] = await page.evaluate(GH('seed', { database: 'gh-reopen', threadId: `t${n}`, n, template }));
      out.seed.ai[n] = await page.evaluate(AI('seedStored', { key: `t${n}`, n, template: templateAi }));
      log(`seeded ${n} messages: Gatehouse ${out.seed.gh[n].seedMs.toFixed(0)} ms (${kb(out.seed.gh[n].jsonChars)} of message JSON), AI SDK persisting (idb-keyval set) ${out.seed.ai[n].seedMs.toFixed(0)} ms`);
    }
    await page.close();
  }
  const baseUrl = srv.scenario('reopen', [ANSWER]);
  for (const n of CFG.sizes) {
    const sides = [['gh', 'reopen-gh.html', `db=gh-reopen&thread=t${n}&baseUrl=${encodeURIComponent(baseUrl)}`], ['ai', 'reopen-ai.html', `key=t${n}`]];
    const runsBySide = { gh: [], ai: [] };
    for (let i = 0; i <= CFG.reopenRuns; i++) { // run 0 is a warm-up, discarded; the two sides alternate
      for (const [side, file, extra] of sides) {
        const page = await context.newPage();
        page.on('pageerror', (e) => log('pageerror:', String(e)));
        await page.goto(`${srv.url}/${file}?${extra}`);
        await page.waitForFunction(() => globalThis.__result, null, { timeout: 120_000 });
        const r = await page.evaluate(() => globalThis.__result);
        await page.close();
        if (r.pending < 1) throw new Error(`${side} reopen t${n}: nothing pending`);
        if (i > 0) runsBySide[side].push(r.T);
      }
    }
    for (const [side] of sides) {
      const runs = runsBySide[side];
      const T = (f) => summary(runs.map(f));
      out[side][n] = side === 'gh'
        ? { total: T((t) => t.pending), load: T((t) => t.initialized - t.harnessReady), glue: T((t) => t.imported - t.harnessReady), harness: T((t) => t.harnessReady - t.moduleStart), wasmInit: T((t) => t.initialized - t.imported), open: T((t) => t.opened - t.initialized), pending: T((t) => t.pending - t.opened), openAgain: T((t) => t.opened2 - t.pending), beforeModule: T((t) => t.moduleStart) }
        : { total: T((t) => t.pending), load: T((t) => t.imported - t.moduleStart), open: T((t) => t.loaded - t.imported), pending: T((t) => t.pending - t.loaded), beforeModule: T((t) => t.moduleStart) };
      log(`reopen ${side} ${n}: median ${ms(out[side][n].total.median)}, p95 ${ms(out[side][n].total.p95)}`);
    }
    // After the timed runs: fresh loads, then approve with a canned (offline) model answer:
    // the whole history is read and the request built. The thread is restored after each
    // approval (raw IndexedDB) so every run starts from the same pending tail. On the largest
    // thread, the first run also reads memory before and after.
    const ap = { gh: [], ai: [], aiMem: [] };
    for (let i = 0; i < CFG.approveRuns; i++) {
      await guard(`approve after reopen (Gatehouse, ${n})`, async () => {
        const { page, cdp } = await newPage(`/reopen-gh.html?db=gh-reopen&thread=t${n}&baseUrl=${encodeURIComponent(baseUrl)}`);
        await page.waitForFunction(() => globalThis.__result, null, { timeout: 120_000 });
        const mem = n === CFG.memThread && i === 0;
        if (mem) out.memory.ghOpened = await gcAndMemory(page, cdp, 'gh');
        const r = await page.evaluate(`(async () => (await import('/gh.js')).approveCanned(globalThis.__agent))()`);
        // Linear memory never shrinks: this is the high-water mark of reading and sending the history.
        r.wasmBytes = await page.evaluate(() => globalThis.__wasm.memory.buffer.byteLength);
        if (mem) out.memory.ghApproved = await gcAndMemory(page, cdp, 'gh');
        await page.evaluate(GH('restore', { database: 'gh-reopen', threadId: `t${n}`, n, template: out.templateGh }));
        await page.close();
        ap.gh.push(r);
      });
      await guard(`approve after reopen (AI SDK, ${n})`, async () => {
        const { page, cdp } = await newPage(`/reopen-ai.html?key=t${n}`);
        await page.waitForFunction(() => globalThis.__result, null, { timeout: 120_000 });
        const mem = n === CFG.memThread && i === 0;
        if (mem) out.memory.aiOpened = await gcAndMemory(page, cdp, 'ai');
        const r = await page.evaluate(`(async () => (await import('/ai.js')).approveCanned({ messages: globalThis.__messages, baseUrl: ${JSON.stringify(baseUrl)}, persist: ${JSON.stringify(`t${n}`)} }))()`);
        if (mem) out.memory.aiApproved = await gcAndMemory(page, cdp, 'ai');
        await page.evaluate(AI('restoreStored', { key: `t${n}`, n }));
        await page.close();
        ap.ai.push(r);
      });
      // The in-memory app cannot reopen: its page holds the same list, built in memory, and
      // approves it (nothing read, nothing saved).
      await guard(`approve in memory (AI SDK, ${n})`, async () => {
        const { page } = await newPage();
        await page.evaluate(AI('buildInMemory', { n, template: out.templateAi }));
        const r = await page.evaluate(`(async () => (await import('/ai.js')).approveCanned({ messages: globalThis.__messages, baseUrl: ${JSON.stringify(baseUrl)} }))()`);
        await page.close();
        ap.aiMem.push(r);
      });
    }
    for (const side of ['gh', 'ai', 'aiMem']) {
      const list = ap[side];
      if (!list.length) continue;
      out.approveAfterReopen[side][n] = {
        runs: list, toIssue: summary(list.map((r) => r.toIssueMs)), toResolve: summary(list.map((r) => r.toResolveMs)),
        requestChars: list[0].requestChars, wasmBytes: list[0].wasmBytes ?? null, saves: list[0].saves ?? null,
      };
    }
    log(`approve after reopen ${n}: Gatehouse ${ms(out.approveAfterReopen.gh[n]?.toIssue.median)}, AI SDK persisting ${ms(out.approveAfterReopen.ai[n]?.toIssue.median)}, in memory ${ms(out.approveAfterReopen.aiMem[n]?.toIssue.median)}`);
  }
  return out;
}

// ------------------------------------------------------------------------------- 3. per turn

function turnStats(list) {
  const perTurn = list.perTurn;
  const k = Math.max(1, Math.floor(perTurn.length / 10));
  return {
    turns: perTurn.length, totalMs: perTurn.reduce((a, b) => a + b, 0), msPerTurn: mean(perTurn), stats: summary(perTurn),
    first: median(perTurn.slice(0, k)), last: median(perTurn.slice(-k)), window: k,
    busyMs: list.busyMs, cpuMs: list.cpuMs, noThreadTimeMs: list.noThreadTimeMs, busyPerTurn: list.busyMs / perTurn.length, cpuPerTurn: list.cpuMs / perTurn.length,
    messageCount: list.messageCount, lastRequestChars: list.lastRequestChars, deltas: list.deltas,
    phases: phaseStats(list.phases, TURN_PHASES),
  };
}

/**
 * Where a turn's wall time goes, between the marks `bench/site/common.js` records (median over
 * the turns of each phase, in ms; IndexedDB: transactions per turn and the read-write ones'
 * creation → complete time). The boundaries are the same for both SDKs: the fetch() call, the
 * response handed back, the tool's execute called and returning, the call resolving.
 */
const TURN_PHASES = [
  ['chat() → request 1 issued (GH: user message written, history read, request built)', (m) => m.req1],
  ['response 1 → tool execute called (GH: answer parsed, call + start mark written)', (m) => m.tool - m.resp1],
  ['tool returned → request 2 issued (GH: result written, request built)', (m) => m.req2 - m.toolDone],
  ['response 2 → call resolved (GH: answer written, run ended)', (m) => m.end - m.resp2],
  ['  (the local server: request issued → response, both requests)', (m) => m.resp1 - m.req1 + m.resp2 - m.req2],
];
const APPROVAL_PHASES = [
  ['submitDecisions → tool execute called (GH: decision + start mark written)', (m) => m.tool],
  ['tool returned → request issued (GH: result written, request built)', (m) => m.req1 - m.toolDone],
  ['response → call resolved (GH: answer written, run ended)', (m) => m.end - m.resp1],
];

function phaseStats(marks, defs) {
  if (!marks?.length) return null;
  const out = { phases: defs.map(([label, f]) => ({ label, median: median(marks.map(f).filter(Number.isFinite)) })) };
  out.idbRead = mean(marks.map((m) => m.idbRead));
  out.idbWrite = mean(marks.map((m) => m.idbWrite));
  out.idbWriteMs = median(marks.map((m) => m.idbWriteMs));
  return out;
}

/**
 * Runs several variants of the same conversation side by side in their own pages, in
 * interleaved blocks of `block` turns, so load from elsewhere on the machine hits all of them
 * alike. Each block runs under a trace for the main thread's busy and CPU time.
 */
async function interleavedTurns(variants, n, block) {
  const live = [];
  for (const v of variants) {
    const r = await guard(`start ${v.label}`, async () => {
      const { page, cdp } = await newPage();
      const call = v.side === 'gh' ? GH : AI;
      const started = await page.evaluate(call(v.start ?? 'turnsStart', { key: v.key, ...v.args }));
      if (v.start) log(`${v.label}: ${JSON.stringify(started)}`);
      return { ...v, page, cdp, call, started, acc: { perTurn: [], phases: [], busyMs: 0, cpuMs: 0, noThreadTimeMs: 0 } };
    });
    if (r) live.push(r);
  }
  for (let done = 0; done < n; done += block) {
    const k = Math.min(block, n - done);
    for (const v of live) {
      if (v.failed) continue;
      try {
        const t = await traced(v.cdp, () => v.page.evaluate(v.call(v.more ?? 'turnsMore', { key: v.key, k })));
        v.acc.perTurn.push(...t.result.perTurn);
        v.acc.phases.push(...(t.result.phases ?? []));
        v.acc.busyMs += t.busyMs;
        v.acc.cpuMs += t.cpuMs;
        v.acc.noThreadTimeMs += t.noThreadTimeMs;
        Object.assign(v.acc, { messageCount: t.result.messageCount, lastRequestChars: t.result.lastRequestChars, deltas: t.result.deltas });
      } catch (e) {
        v.failed = true;
        log(`ERROR in ${v.label}:`, e.message);
        errors.push(`${v.label}: ${String(e.message).split('\n')[0]}`);
      }
    }
  }
  const out = {};
  for (const v of live) {
    if (!v.failed) {
      out[v.name] = turnStats(v.acc);
      if (v.start) out[v.name].started = v.started;
      if (v.memory) out[v.name].memory = await gcAndMemory(v.page, v.cdp, v.side);
      const r = out[v.name];
      log(`${v.label}: ${r.msPerTurn.toFixed(2)} ms/turn (median ${r.stats.median.toFixed(2)}; first ${r.window}: ${r.first.toFixed(2)}, last ${r.window}: ${r.last.toFixed(2)}), main thread CPU ${r.cpuPerTurn.toFixed(2)} ms/turn (no thread time: ${r.noThreadTimeMs.toFixed(1)} of ${r.busyMs.toFixed(0)} ms), busy ${r.busyPerTurn.toFixed(2)} ms/turn, ${r.messageCount} messages`);
    }
    await v.page.close();
  }
  return out;
}

async function perTurn() {
  const n = CFG.turns;
  const sc = (id) => srv.scenario(id, [LOOKUP, ANSWER]);
  const out = {};
  if (wanted('turns')) Object.assign(out, await interleavedTurns([
    { name: 'ghIdb', label: 'Gatehouse IndexedDB', side: 'gh', key: 'idb', args: { baseUrl: sc('turns-gh-idb'), storage: 'indexeddb', database: 'gh-turns', threadId: 'idb', stream: false } },
    { name: 'ghMem', label: 'Gatehouse memory store', side: 'gh', key: 'mem', args: { baseUrl: sc('turns-gh-mem'), storage: 'memory', database: 'gh-turns-mem', threadId: 'mem', stream: false } },
    { name: 'ai', label: 'AI SDK generateText', side: 'ai', key: 'gen', args: { baseUrl: sc('turns-ai'), stream: false } },
    { name: 'aiP', label: 'AI SDK generateText, persisting', side: 'ai', key: 'genp', args: { baseUrl: sc('turns-ai-p'), stream: false, persist: 'turns-genp' } },
    { name: 'idbFloor', label: 'IndexedDB alone (a GH turn\'s transactions replayed in plain JS)', side: 'gh', key: 'floor', start: 'floorStart', more: 'floorMore', args: { baseUrl: sc('turns-floor'), database: 'gh-floor', threadId: 'floor' } },
  ], n, CFG.block));
  if (wanted('turns')) Object.assign(out, await interleavedTurns([
    { name: 'ghIdbStream', label: 'Gatehouse IndexedDB streaming + onEvent', side: 'gh', key: 'idbs', args: { baseUrl: sc('turns-gh-idb-s'), storage: 'indexeddb', database: 'gh-turns', threadId: 'idb-stream', stream: true, withEvents: true } },
    { name: 'aiStream', label: 'AI SDK streamText', side: 'ai', key: 'str', args: { baseUrl: sc('turns-ai-s'), stream: true } },
    { name: 'aiPStream', label: 'AI SDK streamText, persisting', side: 'ai', key: 'strp', args: { baseUrl: sc('turns-ai-ps'), stream: true, persist: 'turns-strp' } },
  ], n, CFG.block));

  if (!wanted('approvals')) return out;
  // Approval round trips, interleaved in blocks of 5.
  const variants = [
    { name: 'approvalGhIdb', label: 'approval Gatehouse IndexedDB', side: 'gh', id: 'appr-gh-idb', args: { storage: 'indexeddb', database: 'gh-approve', threadId: 'a' } },
    { name: 'approvalGhMem', label: 'approval Gatehouse memory', side: 'gh', id: 'appr-gh-mem', args: { storage: 'memory', database: 'gh-approve-mem', threadId: 'a' } },
    { name: 'approvalAi', label: 'approval AI SDK', side: 'ai', id: 'appr-ai', args: {} },
    { name: 'approvalAiP', label: 'approval AI SDK persisting', side: 'ai', id: 'appr-ai-p', args: { persist: 'appr-ai-p' } },
  ];
  const live = [];
  for (const v of variants) {
    const r = await guard(`start ${v.label}`, async () => {
      const { page } = await newPage();
      const call = v.side === 'gh' ? GH : AI;
      await page.evaluate(call('approvalsStart', { key: v.id, baseUrl: srv.scenario(v.id, [DELETE, ANSWER]), ...v.args }));
      return { ...v, page, call, list: [] };
    });
    if (r) live.push(r);
  }
  for (let done = 0; done < CFG.approvals; done += 5) {
    for (const v of live) {
      if (v.failed) continue;
      try {
        v.list.push(...await v.page.evaluate(v.call('approvalsMore', { key: v.id, k: Math.min(5, CFG.approvals - done) })));
      } catch (e) {
        v.failed = true;
        log(`ERROR in ${v.label}:`, e.message);
        errors.push(`${v.label}: ${String(e.message).split('\n')[0]}`);
      }
    }
  }
  for (const v of live) {
    await v.page.close();
    if (v.failed) continue;
    const arr = srv.arrivals.get(v.id) ?? [];
    const toServer = v.list.map((a) => arr[a.requestIndex - 1] - a.wallT0).filter((x) => Number.isFinite(x));
    const r = { toIssue: summary(v.list.map((a) => a.toIssueMs)), toServer: toServer.length ? summary(toServer) : null, toResolve: summary(v.list.map((a) => a.toResolveMs)), phases: phaseStats(v.list.map((a) => a.phases).filter(Boolean), APPROVAL_PHASES) };
    log(`${v.label}: submit → request issued median ${ms(r.toIssue.median)}, → server ${ms(r.toServer?.median)}, → resolved ${ms(r.toResolve.median)}`);
    out[v.name] = r;
  }
  return out;
}

// ------------------------------------------------------------------------------- 4. streaming

async function streaming() {
  const sides = [];
  for (const side of ['gh', 'aiP', 'ai']) {
    const r = await guard(`streaming ${side} start`, async () => {
      const { page, cdp } = await newPage();
      const baseUrl = srv.scenario(`stream-${side}`, [{ generateTokens: CFG.streamTokens }]);
      if (side === 'gh') await page.evaluate(GH('memory'));
      else await page.evaluate(AI('memory'));
      return { side, page, cdp, baseUrl, runs: [] };
    });
    if (r) sides.push(r);
  }
  for (let i = 0; i <= CFG.streamRuns; i++) { // run 0 is a warm-up, discarded; the two SDKs alternate
    for (const s of sides) {
      if (s.failed) continue;
      try {
        const args = { baseUrl: s.baseUrl, storage: 'indexeddb', database: 'gh-stream', threadId: `s${i}`, persist: s.side === 'aiP' ? `stream-${i}` : undefined };
        const t = await traced(s.cdp, () => s.page.evaluate(s.side === 'gh' ? GH('streamOnce', args) : AI('streamOnce', args)));
        const r = { ...t.result, busyMs: t.busyMs, cpuMs: t.cpuMs, noThreadTimeMs: t.noThreadTimeMs };
        if (i > 0) s.runs.push(r);
      } catch (e) {
        s.failed = true;
        log(`ERROR in streaming ${s.side}:`, e.message);
        errors.push(`streaming ${s.side}: ${String(e.message).split('\n')[0]}`);
      }
    }
  }
  const out = {};
  for (const s of sides) {
    await s.page.close();
    if (s.failed) continue;
    const runs = s.runs;
    const S = (f) => summary(runs.map(f));
    const per1k = 1000 / CFG.streamTokens;
    const r = {
      runs,
      lastByteToLastDelta: S((r) => r.lastDeltaMs - r.lastChunkMs),
      firstByteToFirstDelta: S((r) => r.firstDeltaMs - r.firstChunkMs),
      issuedToLastDelta: S((r) => r.lastDeltaMs - r.issuedMs),
      issuedToLastByte: S((r) => r.lastChunkMs - r.issuedMs),
      lastDeltaToResolved: S((r) => r.resolvedMs - r.lastDeltaMs),
      busyPer1k: S((r) => r.busyMs * per1k),
      cpuPer1k: S((r) => r.cpuMs * per1k),
      noThreadTimeMs: runs.reduce((a, r) => a + r.noThreadTimeMs, 0),
      busyMsTotal: runs.reduce((a, r) => a + r.busyMs, 0),
      deltas: median(runs.map((r) => r.deltas)),
      bytes: median(runs.map((r) => r.bytes)),
      chunks: median(runs.map((r) => r.chunks)),
    };
    log(`streaming ${s.side}: last byte → last delta ${ms(r.lastByteToLastDelta.median)}, main thread CPU ${ms(r.cpuPer1k?.median)}/1k tokens (busy ${ms(r.busyPer1k.median)}), ${r.deltas} deltas, ${kb(r.bytes)} in ${r.chunks} chunks`);
    out[s.side] = r;
  }
  return out;
}

// ------------------------------------------------------------------------------- 5. memory

async function memory(reopenOut) {
  const out = { opened: { gh: reopenOut?.memory?.ghOpened, ai: reopenOut?.memory?.aiOpened }, approved: { gh: reopenOut?.memory?.ghApproved, ai: reopenOut?.memory?.aiApproved } };
  out.baseline = {};
  out.baseline.gh = await guard('memory baseline gh', async () => { const { page, cdp } = await newPage(); await page.evaluate(GH('memory')); const m = await gcAndMemory(page, cdp, 'gh'); await page.close(); return m; });
  out.baseline.ai = await guard('memory baseline ai', async () => { const { page, cdp } = await newPage(); await page.evaluate(AI('memory')); const m = await gcAndMemory(page, cdp, 'ai'); await page.close(); return m; });
  const n = CFG.memTurns;
  // Interleaved blocks of 100 turns; the memory is read after the last block (forced GC).
  out.turns = await interleavedTurns([
    { name: 'gh', label: `Gatehouse memory store, ${n} turns`, side: 'gh', key: 'm', memory: true, args: { baseUrl: srv.scenario('mem-gh', [LOOKUP, ANSWER]), storage: 'memory', database: 'gh-mem', threadId: 'm', stream: false } },
    { name: 'ai', label: `AI SDK generateText, ${n} turns`, side: 'ai', key: 'm', memory: true, args: { baseUrl: srv.scenario('mem-ai', [LOOKUP, ANSWER]), stream: false } },
    { name: 'aiP', label: `AI SDK generateText persisting, ${n} turns`, side: 'ai', key: 'mp', memory: true, args: { baseUrl: srv.scenario('mem-ai-p', [LOOKUP, ANSWER]), stream: false, persist: 'mem-ai-p' } },
  ], n, Math.min(100, n));
  return out;
}

// ------------------------------------------------------------------------------- table

let flaggedNoThreadTime = false;
/** Marks a CPU figure when over 5% of the window's main-thread time had no thread time in the trace. */
function flagNoThreadTime(missing, busy) {
  if (!(missing > 0.05 * busy)) return '';
  flaggedNoThreadTime = true;
  return ` (*${Math.round((100 * missing) / busy)}%)`;
}

// ------------------------------------------------------------------------------- main

async function main() {
  if (!fs.existsSync(path.join(root, 'pkg/gatehouse_bg.wasm'))) {
    console.error('pkg/ is not built: run ./scripts/build-pkg.sh (or make pkg) first, or use scripts/bench.sh');
    process.exit(2);
  }
  fs.mkdirSync(OUT, { recursive: true });
  log(`config: ${JSON.stringify(CFG)}`);
  const R = { config: { ...CFG, quick: QUICK } };
  if (wanted('size')) R.size = await guard('size', () => measureSize());
  log('size measured');
  const site = await prepareSite();
  if (flag('--prepare-only')) { log(`site prepared in ${path.relative(root, site)}`); return; }
  srv = await startModelServer(site);
  const profile = fs.mkdtempSync(path.join(os.tmpdir(), 'gatehouse-bench-profile-'));
  context = await chromium.launchPersistentContext(profile, {
    executablePath: process.env.CHROMIUM ?? '/usr/bin/chromium',
    headless: true,
    args: ['--no-sandbox', '--disable-gpu', '--disable-quic', '--no-first-run', '--disable-background-networking',
      '--disable-component-update', '--disable-sync', '--enable-precise-memory-info',
      '--disable-background-timer-throttling', '--disable-renderer-backgrounding', '--disable-backgrounding-occluded-windows'],
  });
  let chromiumVersion = '?';
  try {
    const { page, cdp } = await newPage();
    chromiumVersion = (await cdp.send('Browser.getVersion')).product;
    await page.close();
  } catch (e) { log('version:', e.message); }
  try {
    if (wanted('reopen')) R.reopen = await guard('reopen', () => reopen());
    if (wanted('turns') || wanted('approvals')) R.turns = await guard('turns', () => perTurn());
    if (wanted('stream')) R.stream = await guard('streaming', () => streaming());
    if (wanted('memory')) R.memory = await guard('memory', () => memory(R.reopen));
    if (wanted('remote')) R.remote = await guard('remote', () => measureRemote({
      quick: QUICK, chromium, modelServer: srv, log, errors,
      launchOptions: { executablePath: process.env.CHROMIUM ?? '/usr/bin/chromium', headless: true, args: ['--no-sandbox', '--disable-gpu', '--disable-quic', '--no-first-run', '--disable-background-networking', '--disable-component-update', '--disable-sync', '--disable-background-timer-throttling', '--disable-renderer-backgrounding', '--disable-backgrounding-occluded-windows'] },
    }));
    if (wanted('receipts')) R.receipts = await guard('receipts', () => measureReceipts({ quick: QUICK, log }));
    if (wanted('requests')) R.requests = await guard('requests', () => measureRequests({ quick: QUICK, log }));
    if (wanted('hotspot')) R.hotspot = await guard('hotspot', () => measureHotspot({ quick: QUICK, log }));
    // The CPU without a profiler; where it goes from a second run under --cpu-prof (which costs).
    if (wanted('handler')) R.handlerCpu = await guard('handler', async () => ({ ...await measureHandlerCpu({ quick: QUICK, log }),
      // The same load on a pool in node-postgres' pipeline mode, right after.
      pipelined: await measureHandlerCpu({ quick: QUICK, log, pipelined: true }),
      profile: (await measureHandlerCpu({ quick: true, log, profile: true })).profile }));
    if (wanted('scale')) R.scale = await guard('scale', () => measureScale({ quick: QUICK, log }));
    // The in-page model against native llama.cpp (bench/native.mjs) on the same file, prompt
    // and token count, at 1 thread and at all cores, one after the other, with the load
    // average before and after (issue 37).
    if (wanted('local')) {
      R.local = await guard('local', async () => {
        const runs = QUICK ? 1 : 3;
        const loadBefore = os.loadavg().map((x) => +x.toFixed(2));
        const one = await measureLocal({ runs });
        const all = await measureLocal({ runs, threads: true });
        const native = await measureNative({ runs, threads: [1, os.availableParallelism()] });
        return { ...one, isolated: all, native, loadBefore, loadAfter: os.loadavg().map((x) => +x.toFixed(2)) };
      });
    }
  } finally {
    await context.close().catch(() => {});
    await srv.close();
    fs.rmSync(profile, { recursive: true, force: true });
  }
  const machine = machineInfo(chromiumVersion);
  R.machine = machine;
  ({ rows, notes } = buildRows(R, CFG));
  if (flaggedNoThreadTime) notes.push('(*N%) N% of that window\'s main-thread busy time came from trace events without a thread time; the CPU figure leaves it out.');
  if (R.local) for (const w of [R.local.cold, ...R.local.warm, ...(R.local.isolated ? [R.local.isolated.cold, ...R.local.isolated.warm] : [])]) if (w.error) errors.push(`local: ${w.error.code}: ${w.error.message}`);
  if (R.local?.native?.error) errors.push(`native: ${R.local.native.error}`);
  if (errors.length) notes.push('ERRORS (cells left empty or marked "error"):\n' + errors.map((e) => '  ' + e).join('\n'));
  const table = printTable(machine);
  console.log(table);
  R.table = table;
  R.rows = rows;
  R.errors = errors;
  R.notes = notes;
  R.durationS = (Date.now() - started) / 1000;
  fs.writeFileSync(path.join(OUT, 'results.json'), JSON.stringify(R, null, 2));
  fs.writeFileSync(path.join(OUT, 'results.txt'), table + '\n');
  try { log(`report: ${path.relative(root, writeReport(R, OUT))}`); } catch (e) { log('report.html not written:', e.message); }
  log(`done in ${R.durationS.toFixed(0)} s: ${path.relative(root, path.join(OUT, 'results.json'))}`);
  process.exit(errors.length ? 1 : 0);
}

main().catch((e) => { console.error(e); process.exit(1); });
