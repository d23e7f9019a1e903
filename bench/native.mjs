// Native llama.cpp on the same GGUF file, prompt and token count as the `local` provider's
// row (bench/local.mjs), for make bench's native column (issue 37; docs/design.md, "A model in
// the page"). The runtime is node-llama-cpp's prebuilt binaries (bench/native/package.json,
// its own package so that the repository's install does not fetch them; `make bench` installs
// it): a well-kept build of the same llama.cpp that wllama compiles to wasm, from npm (a
// registry these machines reach), CPU only here, and it applies the chat template the GGUF
// carries, as wllama does.
//
// Measured per thread count, after one discarded warm-up turn: load (file → weights and
// context), time to first token (from the prompt to the first generated token: the
// template, the prompt's evaluation and the first sample), tokens per second while streaming
// (tokens after the first / time from the first to the last), and the resident memory the
// process gained by loading the model.
//
//   node bench/native.mjs [--runs N] [--threads 1,2]   prints JSON
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { createRequire } from 'node:module';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { modelPath } from '../tests/local/server.mjs';

const here = path.dirname(fileURLToPath(import.meta.url));
export const PROMPT = 'Write three sentences about the sea.';
export const MAX_TOKENS = 48;
const CONTEXT = 4096; // the local provider's default context window

/** node-llama-cpp from bench/native/node_modules; null (with why) when it is not installed. */
async function runtime() {
  try {
    const require = createRequire(path.join(here, 'native', 'package.json'));
    const entry = require.resolve('node-llama-cpp');
    const manifest = path.join(here, 'native', 'node_modules', 'node-llama-cpp', 'package.json');
    const { version } = JSON.parse(fs.readFileSync(manifest, 'utf8'));
    return { mod: await import(pathToFileURL(entry).href), version };
  } catch (e) {
    return { missing: `node-llama-cpp is not installed (cd bench/native && npm ci): ${e.message.split('\n')[0]}` };
  }
}

async function turn(LlamaChatSession, context) {
  const sequence = context.getSequence();
  try {
    const session = new LlamaChatSession({ contextSequence: sequence });
    let first = null;
    let last = null;
    let tokens = 0;
    const t0 = performance.now();
    await session.prompt(PROMPT, {
      maxTokens: MAX_TOKENS,
      temperature: 0,
      onToken: (t) => {
        const now = performance.now();
        first ??= now;
        last = now;
        tokens += t.length;
      },
    });
    return {
      ttftMs: first === null ? null : first - t0,
      streamMs: first === null ? null : last - first,
      outputTokens: tokens,
      tps: tokens > 1 ? (tokens - 1) / ((last - first) / 1000) : null,
    };
  } finally {
    sequence.dispose();
  }
}

export async function measureNative({ runs = 3, threads = [1, os.availableParallelism()] } = {}) {
  const rt = await runtime();
  if (rt.missing) return { error: rt.missing };
  const { getLlama, LlamaChatSession } = rt.mod;
  const llama = await getLlama({ gpu: false, logLevel: 'error' });
  const out = {
    runtime: `node-llama-cpp ${rt.version} (llama.cpp, native CPU build)`,
    model: path.basename(modelPath()),
    cores: os.availableParallelism(),
    byThreads: {},
  };
  for (const n of [...new Set(threads)]) {
    const rss0 = process.memoryUsage().rss;
    const t0 = performance.now();
    const model = await llama.loadModel({ modelPath: modelPath(), gpuLayers: 0 });
    const context = await model.createContext({ contextSize: CONTEXT, threads: n });
    const loadMs = performance.now() - t0;
    const rssLoaded = process.memoryUsage().rss - rss0;
    try {
      await turn(LlamaChatSession, context); // warm-up, not counted
      const turns = [];
      for (let i = 0; i < runs; i++) turns.push(await turn(LlamaChatSession, context));
      out.byThreads[n] = { threads: n, loadMs, rssAboveBase: rssLoaded, turns };
    } finally {
      await context.dispose();
      await model.dispose();
    }
  }
  await llama.dispose();
  return out;
}

if (process.argv[1] === fileURLToPath(import.meta.url)) {
  const argv = process.argv.slice(2);
  const arg = (name, d) => (argv.includes(name) ? argv[argv.indexOf(name) + 1] : d);
  const threads = arg('--threads', null)?.split(',').map(Number);
  console.log(JSON.stringify(await measureNative({ runs: Number(arg('--runs', 3)), ...(threads ? { threads } : {}) }), null, 2));
}
