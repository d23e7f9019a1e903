// The `local` provider's numbers (make bench, section "local"; docs/design.md, "A model in the
// page"): SmolLM2-135M-Instruct Q4_1 (the test model, make setup-model) through the real
// package in headless Chromium, served by tests/local/server.mjs. A first start downloads the
// model; then `RUNS` reloads each read it from Cache Storage and answer one prompt. Reported:
// the runtime's bytes, time to load from the network and from the cache, time to first token
// (from chat() to the first text delta: prompt processing included), tokens per second while
// streaming (output tokens after the first / time from the first delta to the last), and the
// renderer's peak resident memory (the page and wllama's worker: Chromium runs a dedicated
// worker in its page's process) above what it used before the model loaded.
//
//   node bench/local.mjs [--runs N] [--threads]   prints JSON; bench/run.mjs --only local
//   --threads: the page cross-origin isolated, so wllama runs llama.cpp on 2+ threads.
import { execFileSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import zlib from 'node:zlib';
import { fileURLToPath } from 'node:url';
import { chromium } from 'playwright-core';
import { startLocalServer } from '../tests/local/server.mjs';
import { ARGS } from '../tests/local/harness.mjs';

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
const PROMPT = 'Write three sentences about the sea.';
const MAX_TOKENS = 48;

/** Resident memory (bytes) of this profile's renderer processes, summed. */
function rendererRss(profile) {
  let out = '';
  try { out = execFileSync('ps', ['-eo', 'rss=,args='], { encoding: 'utf8', maxBuffer: 1 << 24 }); } catch { return 0; }
  let kb = 0;
  for (const line of out.split('\n')) {
    if (line.includes(`--user-data-dir=${profile}`) && line.includes('--type=renderer')) kb += Number(line.trim().split(/\s+/)[0]) || 0;
  }
  return kb * 1024;
}

async function turn(page) {
  return page.evaluate(async ([prompt]) => {
    const id = `bench-${Math.random()}`;
    const t0 = performance.now();
    await window.t.open(id, { provider: 'local', url: '/models/test.gguf', maxTokens: 48 });
    const r = await window.t.chat(id, prompt);
    const ev = window.t.events.filter((e) => e.threadId === id);
    const first = ev.find((e) => e.type === 'model_progress');
    const loaded = ev.find((e) => e.type === 'model_progress' && e.phase === 'load' && e.loaded === e.total);
    const deltas = ev.filter((e) => e.type === 'text_delta');
    const chatStart = loaded ? loaded.at : t0;
    // Where the time went (local/index.js's User Timing measures of this turn): the file
    // from the cache or the network, wllama's load (worker, wasm compile, weights), the
    // grammar, the request to the first chunk, and llama.cpp's own clock for the prompt's
    // evaluation and the generation.
    const parts = {};
    for (const m of performance.getEntriesByType('measure')) {
      if (m.startTime < t0 || !m.name.startsWith('gatehouse:local:')) continue;
      parts[m.name.slice('gatehouse:local:'.length)] = { ms: m.duration, ...(m.detail ?? {}) };
    }
    return {
      parts,
      error: r.error,
      loadMs: first && loaded ? loaded.at - t0 : null,
      phase: first?.phase ?? null,
      ttftMs: deltas.length ? deltas[0].at - chatStart : null,
      streamMs: deltas.length > 1 ? deltas.at(-1).at - deltas[0].at : null,
      outputTokens: r.message?.usage?.output_tokens ?? null,
      inputTokens: r.message?.usage?.input_tokens ?? null,
    };
  }, [PROMPT, MAX_TOKENS]);
}

export async function measureLocal({ runs = 3, threads = false } = {}) {
  const server = await startLocalServer({ isolated: threads });
  const profile = fs.mkdtempSync(path.join(os.tmpdir(), 'gatehouse-bench-local-'));
  const context = await chromium.launchPersistentContext(profile, {
    executablePath: process.env.CHROMIUM_PATH || '/usr/bin/chromium', headless: true, args: ARGS,
  });
  let peak = 0;
  let base = 0;
  const sampler = setInterval(() => { peak = Math.max(peak, rendererRss(profile)); }, 100);
  try {
    const page = context.pages()[0] ?? await context.newPage();
    const open = async () => {
      await page.goto(`${server.url}/tests/local/page.html`);
      await page.waitForFunction(() => window.ready === true);
    };
    await open();
    await new Promise((r) => setTimeout(r, 300));
    base = rendererRss(profile);
    peak = base;
    // Where the memory is, by the browser's own account (cross-origin isolated pages only:
    // performance.measureUserAgentSpecificMemory): the page's and the worker's, which holds
    // wllama's wasm memory, before the model and after its first answer.
    const uaMemory = () => page.evaluate(async () => {
      if (!crossOriginIsolated || !performance.measureUserAgentSpecificMemory) return null;
      const m = await performance.measureUserAgentSpecificMemory();
      const by = {};
      for (const b of m.breakdown) {
        const scope = b.attribution[0]?.scope ?? 'shared';
        by[scope] = (by[scope] ?? 0) + b.bytes;
      }
      return { bytes: m.bytes, by };
    });
    const memBefore = await uaMemory();
    const cold = await turn(page);
    const memAfter = await uaMemory();
    const warm = [];
    const again = [];
    for (let i = 0; i < runs; i++) {
      await open();
      warm.push(await turn(page));
      // A second chat on the model this page loaded: no load again.
      again.push(await turn(page));
    }
    const info = await page.evaluate(() => ({ isolated: crossOriginIsolated, cores: navigator.hardwareConcurrency }));
    const gz = (f) => zlib.gzipSync(fs.readFileSync(path.join(root, 'pkg', f)), { level: 9 }).length;
    const raw = (f) => fs.statSync(path.join(root, 'pkg', f)).size;
    return {
      model: 'SmolLM2-135M-Instruct.Q4_1.gguf (98,362,432 B)',
      runtime: 'wllama 3.8.1 (llama.cpp, wasm SIMD)',
      threads: info.isolated ? Math.min(4, info.cores) : 1,
      bytes: {
        wasm: raw('local/wllama/wllama.wasm'), wasmGzip: gz('local/wllama/wllama.wasm'),
        js: ['local/index.js', 'local/grammar.js', 'local/model-file.js', 'local/wllama/index.js'].reduce((a, f) => a + raw(f), 0),
        jsGzip: ['local/index.js', 'local/grammar.js', 'local/model-file.js', 'local/wllama/index.js'].reduce((a, f) => a + gz(f), 0),
      },
      cold,
      warm,
      again,
      peakRendererRssAboveBase: peak - base,
      uaMemory: memBefore && memAfter ? { before: memBefore, after: memAfter } : null,
      baseRendererRss: base,
      loadavg: os.loadavg().map((x) => +x.toFixed(2)),
    };
  } finally {
    clearInterval(sampler);
    await context.close().catch(() => {});
    await server.close();
    fs.rmSync(profile, { recursive: true, force: true });
  }
}

if (process.argv[1] === fileURLToPath(import.meta.url)) {
  const argv = process.argv.slice(2);
  const runs = argv.includes('--runs') ? Number(argv[argv.indexOf('--runs') + 1]) : 3;
  console.log(JSON.stringify(await measureLocal({ runs, threads: argv.includes('--threads') }), null, 2));
}
