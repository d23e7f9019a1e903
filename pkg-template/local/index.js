// @ts-check
// gatehouse-agent/local: the `local` provider, a GGUF model run in the page on the CPU by
// llama.cpp compiled to WebAssembly (wllama, vendored in ./wllama/ with its wasm; it runs the
// model in its own Web Worker, with threads when the page is cross-origin isolated). Nothing
// here is loaded unless an agent asks for `provider: "local"`: gatehouse.js imports this
// module then, and hands the engine a `custom` model made of it (docs/design.md, "A model in
// the page"). Gating, storage and events are the engine's, as for any provider.

import { Wllama } from "./wllama/index.js";
import { CALL_OPEN, readAnswer, toolGrammar, toolPrompt } from "./grammar.js";
import { fileError, modelFile } from "./model-file.js";

export { forgetModel } from "./model-file.js";

const KEYS = [
  "provider", "url", "sha256", "model", "contextWindow", "maxTokens", "temperature", "toolChoice",
  "parallelToolCalls", "device",
];
const DEVICES = ["auto", "cpu", "webgpu"];
const DEFAULT_CONTEXT = 4096;

/** `options.model` checked as strictly as the SDK checks the others' (`invalid_config`). */
function check(options, invalid) {
  for (const k of Object.keys(options)) {
    if (!KEYS.includes(k)) throw invalid(`\`model\`: unknown field \`${k}\`, expected one of ${KEYS.map((k) => `\`${k}\``).join(", ")}`);
  }
  const { url, sha256, contextWindow, maxTokens, temperature, toolChoice, model } = options;
  if (!(typeof url === "string" && url) && !(url instanceof Blob)) {
    throw invalid("`model.url` must be the GGUF file's URL (a non-empty string) or a Blob");
  }
  if (sha256 !== undefined && !(typeof sha256 === "string" && /^[0-9a-fA-F]{64}$/.test(sha256))) {
    throw invalid("`model.sha256` must be 64 hexadecimal digits");
  }
  for (const [k, v] of Object.entries({ contextWindow, maxTokens })) {
    if (v !== undefined && !(Number.isInteger(v) && v >= 1)) throw invalid(`\`model.${k}\` must be an integer of at least 1`);
  }
  if (temperature !== undefined && !(typeof temperature === "number" && temperature >= 0)) {
    throw invalid("`model.temperature` must be a number of at least 0");
  }
  if (toolChoice !== undefined && toolChoice !== "auto" && toolChoice !== "required") {
    throw invalid('`model.toolChoice` must be "auto" or "required"');
  }
  if (model !== undefined && typeof model !== "string") throw invalid("`model.model` must be a string");
  if (options.device !== undefined && !DEVICES.includes(options.device)) {
    throw invalid('`model.device` must be "auto", "cpu" or "webgpu"');
  }
  if (options.parallelToolCalls !== undefined && typeof options.parallelToolCalls !== "boolean") {
    throw invalid("`model.parallelToolCalls` must be a boolean");
  }
}

// One loaded model per file, context window and device, shared by every agent of the page; wllama
// answers one request at a time, so calls queue. (The context window is the runtime's n_ctx:
// an agent asking for another one gets a runtime of its own.)
const loaded = new Map();

function runtime(source, options, report, signal) {
  const file = source instanceof Blob ? source : `${source}|${options.sha256 ?? ""}`;
  const runtimes = loaded.get(file) ?? loaded.set(file, new Map()).get(file);
  // A runtime per context window and device: `device: "cpu"` beside an `auto` that took
  // WebGPU gets its own.
  const key = `${options.contextWindow ?? DEFAULT_CONTEXT}|${options.device ?? "auto"}`;
  let entry = runtimes.get(key);
  if (!entry) {
    const drop = () => runtimes.get(key) === entry && runtimes.delete(key);
    entry = { queue: Promise.resolve(), ready: load(source, options, report, signal), drop };
    runtimes.set(key, entry);
    // A failed load is not kept: the next call tries again (after the file is fixed).
    entry.ready.catch(drop);
  }
  return entry;
}

/** The browser's WebGPU adapter, described (null: none). */
async function webgpuAdapter() {
  try {
    // (`navigator.gpu` is not in TypeScript's DOM types yet.)
    const a = await /** @type {any} */ (globalThis.navigator)?.gpu?.requestAdapter();
    if (!a) return null;
    const name = [a.info?.vendor, a.info?.architecture, a.info?.description].filter(Boolean).join(" ") || "an adapter";
    return { name, f16: a.features.has("shader-f16") };
  } catch {
    return null;
  }
}

/** Why a runtime that was asked for threads runs one ("model_runtime"), or null. */
function singleThreadReason(wanted) {
  if (!globalThis.crossOriginIsolated) return "not_isolated";
  if (typeof SharedArrayBuffer === "undefined") return "no_shared_array_buffer";
  if (wanted <= 1) return "one_core";
  return "runtime";
}

async function load(source, { sha256, contextWindow, device = "auto" }, report, signal) {
  // The device first: `webgpu` without an adapter fails before the file is fetched.
  const gpu = device === "cpu" ? null : await webgpuAdapter();
  if (device === "webgpu" && !gpu) {
    throw fileError("webgpu_unavailable", "`model.device` is \"webgpu\" and this browser gives no WebGPU adapter (navigator.gpu.requestAdapter() answered null)");
  }
  const fileStart = performance.now();
  const blob = await modelFile(source, { sha256, report, signal });
  measure("file", fileStart, { bytes: blob.size });
  // llama.cpp's own error lines are printed and also kept: wllama's loadModel resolves even
  // when llama.cpp could not create the context (a KV cache too large for the page's memory),
  // and the first chat then aborts the runtime; these lines are how that is told apart.
  const native = [];
  // llama.cpp says where the weights went, in its load lines ("offloaded 31/31 layers to GPU",
  // "WebGPU model buffer size = …"): what `model_runtime` reports, rather than what was asked
  // for. (Only the CPU case is seen on these machines: a real GPU's lines are llama.cpp's
  // documented ones, untested here.)
  let onGpuLines = false;
  const note = (/** @type {any[]} */ a) => {
    const line = a.join(" ");
    const m = /offloaded (\d+)\/\d+ layers to GPU/.exec(line);
    if ((m && Number(m[1]) > 0) || /WebGPU\S* model buffer size/i.test(line)) onGpuLines = true;
  };
  const wllama = new Wllama(
    { default: new URL("./wllama/wllama.wasm", import.meta.url).href },
    {
      suppressNativeLog: false,
      // Warnings and errors (wllama's and llama.cpp's) reach the console as wllama's own
      // logger prints them, marked as ours; its progress lines do not.
      logger: {
        debug: (...a) => note(a),
        log: (...a) => note(a),
        warn: (...a) => console.warn("[gatehouse-agent/local]", ...a),
        error: (...a) => {
          console.error("[gatehouse-agent/local]", ...a);
          if (native.push(a.join(" ")) > 50) native.shift();
        },
      },
      // The file is ours (model-file.js): wllama's own cache, which needs a storage backend
      // some browsers lack (WebKitGTK under automation), is never used.
      cacheManager: {},
    },
  );
  // wllama's main build needs WebAssembly memory64 (its wasm imports a 64-bit memory) and
  // JSPI; where either is missing (WebKit/Safari: WebKitGTK 2.50 cannot even parse that wasm)
  // it switches to its "compat" build (wasm32, Asyncify), which by default it fetches from
  // jsDelivr: offline, or under a CSP or COEP, that fetch fails ("Load failed"). Ours is
  // vendored beside the main build (scripts/build-pkg.sh) and fetched only by such browsers.
  wllama.setCompat({
    worker: new URL("./wllama/compat/wllama.js", import.meta.url).href,
    wasm: new URL("./wllama/compat/wllama.wasm", import.meta.url).href,
  });
  const threads = globalThis.crossOriginIsolated ? Math.min(4, navigator.hardwareConcurrency || 1) : 1;
  report("load", 0, blob.size);
  // wllama starts its worker from a blob: URL; a Content Security Policy without `worker-src
  // blob:` blocks it, and wllama would wait for that worker forever.
  let blocked;
  const refused = new Promise((_, reject) => {
    blocked = (e) => {
      if (/^(worker|script)-src/.test(e.violatedDirective) && e.blockedURI?.startsWith("blob")) {
        reject(new Error(`the page's Content Security Policy blocks the model's worker (${e.violatedDirective}): allow \`worker-src blob:\``));
      }
    };
    globalThis.document?.addEventListener("securitypolicyviolation", blocked);
  });
  try {
    // n_gpu_layers 0 keeps wllama from starting WebGPU at all; otherwise every layer goes to
    // the GPU (wllama's default).
    const params = { n_ctx: contextWindow ?? DEFAULT_CONTEXT, n_threads: threads, ...(gpu ? {} : { n_gpu_layers: 0 }) };
    const loadStart = performance.now();
    await Promise.race([wllama.loadModel([blob], params), refused]);
    measure("load", loadStart, { bytes: blob.size, threads: params.n_threads });
  } catch (e) {
    if (String(e?.message).includes("Content Security Policy")) throw e;
    const text = String(e?.message ?? e);
    if (e instanceof RangeError || /memory|allocate|OOM|bad_alloc/i.test(text)) {
      throw fileError("out_of_memory", `the model (${blob.size} bytes) does not fit in this page's memory: ${text}`);
    }
    if (/gguf|magic|tensor|vocab|model/i.test(text)) {
      throw fileError("model_not_gguf", `llama.cpp could not open the model file: ${text}`);
    }
    throw new Error(`the model runtime (wllama) could not start in this browser: ${text}`);
  } finally {
    globalThis.document?.removeEventListener("securitypolicyviolation", blocked);
  }
  const failed = native.find((l) => /failed to (create|initialize) (the )?context|failed to allocate|insufficient memory/.test(l));
  if (failed) {
    await wllama.exit().catch(() => {});
    const lines = native.filter((l) => /fail|insufficient/.test(l)).slice(0, 4).join("; ");
    if (/allocate|insufficient memory/.test(lines)) {
      throw fileError("out_of_memory", `the model (${blob.size} bytes) with a context window of ${contextWindow ?? DEFAULT_CONTEXT} tokens does not fit in this page's memory: ${lines}`);
    }
    throw new Error(`llama.cpp could not create the model's context: ${lines}`);
  }
  report("load", blob.size, blob.size);
  const used = wllama.isMultithread() ? wllama.getNumThreads() : 1;
  // An adapter that llama.cpp could not use (no layer offloaded) is the CPU, said so.
  const onGpu = gpu !== null && onGpuLines;
  if (gpu && !onGpu && device === "webgpu") {
    await wllama.exit().catch(() => {});
    throw fileError("webgpu_unavailable", `\`model.device\` is "webgpu" and llama.cpp put no layer on this browser's WebGPU adapter (${gpu.name}${gpu.f16 ? "" : ", without shader-f16"})`);
  }
  const where = {
    device: onGpu ? "webgpu" : "cpu",
    threads: used,
    singleThreadReason: used > 1 ? null : singleThreadReason(threads),
    cpuReason: onGpu ? null : device === "cpu" ? "requested" : gpu ? "webgpu_unusable" : "no_webgpu",
  };
  return { wllama, where };
}

const textOf = (m) => (m.content ?? []).filter((b) => b.type === "text").map((b) => b.content).join("");

/** The thread as chat messages; calls and results written the way the model is told to. */
function chatMessages(request, system) {
  const out = system ? [{ role: "system", content: system }] : [];
  for (const m of request.messages) {
    if (m.type === "tool_call") {
      const calls = m.tools.map((t) => ({ name: t.name, arguments: t.inputs ?? {} }));
      const text = textOf(m);
      out.push({ role: "assistant", content: `${text}${CALL_OPEN}${JSON.stringify(calls)}</tool_call>` });
    } else if (m.type === "tool_call_result") {
      const results = m.tools.map((t) => ({ name: t.name, result: t.result }));
      out.push({ role: "user", content: `<tool_response>${JSON.stringify(results)}</tool_response>` });
    } else {
      out.push({ role: m.role === "assistant" ? "assistant" : "user", content: textOf(m) });
    }
  }
  return out;
}

let callCounter = 0;

/** A User Timing measure (DevTools' Performance panel shows it; `make bench` reads it):
 *  where a model call's time goes (docs/design.md, "A model in the page"). */
function measure(name, start, detail) {
  try {
    performance.measure(`gatehouse:local:${name}`, { start, end: performance.now(), detail });
  } catch {
    // no User Timing here: nothing to report to
  }
}

/**
 * The `custom` model config that runs `options` (`{ provider: "local", url, sha256?, … }`).
 * `invalid(message)` makes the SDK's `invalid_config` error.
 */
export function localModel(options, invalid) {
  check(options, invalid);
  const { url, maxTokens = 512, temperature = 0, toolChoice = "auto", parallelToolCalls = false } = options;
  const call = async (request) => {
    const { signal } = request;
    const report = (phase, done, total) => request.onProgress(phase, done, total);
    const entry = runtime(url, options, report, signal);
    const { wllama, where } = await entry.ready;
    // Where this call runs: a `model_runtime` event (an older SDK passes no onRuntime).
    request.onRuntime?.(where.device, where.threads, where.singleThreadReason, where.cpuReason);
    // Wait for the calls before this one (another agent, or a run aborted a moment ago).
    const turn = entry.queue.then(() => generate(wllama, request, { maxTokens, temperature, toolChoice, parallelToolCalls }))
      .catch((e) => {
        // llama.cpp aborted (an assertion, memory): that runtime is gone; the next call loads anew.
        if (e instanceof WebAssembly.RuntimeError || /Aborted\(|\(ABORT\)/.test(String(e?.message))) entry.drop();
        throw e;
      });
    entry.queue = turn.catch(() => {});
    return turn;
  };
  return {
    provider: "custom",
    model: options.model ?? (url instanceof Blob ? "local" : String(url).split("/").pop()),
    contextWindow: options.contextWindow ?? DEFAULT_CONTEXT,
    call,
  };
}

async function generate(wllama, request, { maxTokens, temperature, toolChoice, parallelToolCalls }) {
  const { signal, tools } = request;
  if (signal?.aborted) throw new DOMException("aborted", "AbortError");
  const offered = tools.length > 0;
  // "required": the answer to a user's message is a call, the answer to its results is text.
  const last = request.messages.at(-1);
  const required = offered && toolChoice === "required";
  const mustCall = required && last?.role === "user" && !last.type;
  const textOnly = required && last?.type === "tool_call_result";
  const system = [request.instructions, offered ? toolPrompt(tools) : null].filter(Boolean).join("\n\n");
  const grammarStart = performance.now();
  const grammar = offered ? toolGrammar(tools, { required: mustCall, textOnly, parallel: parallelToolCalls }) : undefined;
  if (offered) measure("grammar", grammarStart, { tools: tools.length });
  const askStart = performance.now();
  const stream = await wllama.createChatCompletion({
    messages: chatMessages(request, system),
    max_tokens: maxTokens,
    temperature,
    grammar,
    stream: true,
    abortSignal: signal,
  });
  let raw = "";
  let streaming = null; // decided at the first character: text streams, a call is kept whole
  let usage;
  let finish = null;
  let first = true;
  let timings = null;
  for await (const chunk of stream) {
    if (first) {
      first = false;
      measure("first-token", askStart);
    }
    if (chunk.timings) timings = chunk.timings;
    const delta = chunk.choices?.[0]?.delta?.content ?? "";
    finish = chunk.choices?.[0]?.finish_reason ?? finish;
    if (chunk.usage) usage = chunk.usage;
    if (chunk.timings) usage ??= { prompt_tokens: chunk.timings.prompt_n, completion_tokens: chunk.timings.predicted_n };
    if (!delta) continue;
    raw += delta;
    if (streaming === null && raw.length) streaming = !offered || !raw.startsWith("<");
    if (streaming) request.onText(delta);
  }
  // llama.cpp's own clock, in the worker: the prompt's evaluation and the generation, without
  // the page's and the worker's messages.
  measure("answer", askStart, timings && {
    promptTokens: timings.prompt_n, cachedTokens: timings.cache_n, promptMs: timings.prompt_ms,
    predictedTokens: timings.predicted_n, predictedMs: timings.predicted_ms,
  });
  if (signal?.aborted) throw new DOMException("aborted", "AbortError");
  const answer = offered ? readAnswer(raw) : { text: raw };
  const counted = usage && {
    input_tokens: usage.prompt_tokens ?? 0,
    output_tokens: usage.completion_tokens ?? 0,
    cached_input_tokens: usage.prompt_tokens_details?.cached_tokens ?? 0,
    reasoning_tokens: 0,
  };
  if (answer.broken !== undefined) {
    // Only the token limit cuts a call the grammar started: say so rather than store half.
    const start = JSON.stringify(raw.slice(0, 120));
    throw new Error(`the local model's tool call was cut off at ${maxTokens} tokens (raise model.maxTokens): ${start}…`);
  }
  if (answer.calls) {
    return {
      toolCalls: answer.calls.map((c) => ({ id: `local_${Date.now().toString(36)}_${++callCounter}`, name: c.name, arguments: c.arguments })),
      usage: counted,
      stopReason: "tool_use",
    };
  }
  return { text: answer.text, usage: counted, stopReason: finish === "length" ? "max_tokens" : "end_turn" };
}
