// Generated ("endless") scenarios: instead of a script, every request gets a freshly generated
// turn, and every request is checked against what this scenario generated before.
//
//   POST /__scenarios { "id"?, "generate": { "tool": "delete_file", ...options } }
//
// - The request's conversation ends with a user's text -> a turn of 1..3 calls of `tool`, with
//   ids `<idPrefix>_<n>` where n comes from a counter shared by every scenario of the server
//   (so ids never repeat within one server process), and arguments `{ "path": "/tmp/<id>" }`.
// - It ends with tool results (or anything else) -> a text answer, `Answer <n>.` (also unique).
// - Each turn has a random delay, a random pause between SSE events and a random argument
//   fragment size (ranges below), so several clients interleave.
// - Validation: every request is normalised (OpenAI or Anthropic shape) and checked; each
//   violated rule is a "problem" string, and a request with at least one problem is invalid.
//   See RULES below and README.md.

const isObj = (v) => v !== null && typeof v === 'object' && !Array.isArray(v);

const GEN_KEYS = new Set(['tool', 'calls', 'delayMs', 'chunkDelayMs', 'argChunk', 'idPrefix', 'seed', 'validate', 'maxProblems']);
const RANGES = { calls: [1, 3], delayMs: [0, 200], chunkDelayMs: [0, 5], argChunk: [1, 4] };
const RANGE_MAX = { calls: 16, delayMs: 600_000, chunkDelayMs: 60_000, argChunk: 1_000 };
const ID_PREFIX_RE = /^[A-Za-z0-9_-]{1,40}$/;

/** Throws on a bad `generate` spec; returns it with the defaults filled in. */
export function validateGenerate(g) {
  if (!isObj(g)) throw new Error('"generate" must be an object');
  for (const k of Object.keys(g)) if (!GEN_KEYS.has(k) && !k.startsWith('_')) throw new Error(`generate: unknown field "${k}"`);
  if (typeof g.tool !== 'string' || !g.tool) throw new Error('generate.tool must be a non-empty string');
  const out = { tool: g.tool, idPrefix: g.idPrefix ?? 'call_gen', validate: g.validate ?? true, maxProblems: g.maxProblems ?? 200 };
  if (typeof out.idPrefix !== 'string' || !ID_PREFIX_RE.test(out.idPrefix)) throw new Error('generate.idPrefix must match [A-Za-z0-9_-]{1,40}');
  if (typeof out.validate !== 'boolean') throw new Error('generate.validate must be a boolean');
  if (!(Number.isInteger(out.maxProblems) && out.maxProblems >= 0 && out.maxProblems <= 100_000)) {
    throw new Error('generate.maxProblems must be an integer in 0..100000');
  }
  for (const [k, def] of Object.entries(RANGES)) {
    const v = g[k] ?? def;
    const ok = Array.isArray(v) && v.length === 2 && v.every((x) => Number.isInteger(x) && x >= 0 && x <= RANGE_MAX[k]) && v[0] <= v[1];
    if (!ok) throw new Error(`generate.${k} must be [min, max], integers in 0..${RANGE_MAX[k]}, min <= max`);
    if ((k === 'calls' || k === 'argChunk') && v[0] < 1) throw new Error(`generate.${k} must be at least 1`);
    out[k] = v;
  }
  if (g.seed !== undefined && !(Number.isInteger(g.seed) && g.seed >= 0 && g.seed < 2 ** 32)) throw new Error('generate.seed must be an integer in 0..2^32-1');
  out.seed = g.seed ?? Math.floor(Math.random() * 2 ** 32);
  return out;
}

/** mulberry32: a small seeded PRNG, so a seeded scenario generates the same delays. */
function rng(seed) {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6D2B79F5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

/** The generator state kept on a scenario. */
export function newGenState(spec) {
  return {
    spec,
    random: rng(spec.seed),
    calls: new Map(), // callId -> { callId, name, inputs, argsString, turn: [ids of its turn], request }
    answers: new Set(), // generated answer texts
    results: new Map(), // callId -> the first result content a request carried for it
    requests: 0,
    toolTurns: 0,
    textTurns: 0,
    invalidRequests: 0,
    problemCount: 0,
    problems: [], // the first maxProblems: { request, problem }
  };
}

const pick = (random, [lo, hi]) => lo + Math.floor(random() * (hi - lo + 1));

// ---------------------------------------------------------------------------- normalising

/**
 * The conversation of a request as a flat list of items:
 * `{ kind: "user", text }`, `{ kind: "assistant", text }`,
 * `{ kind: "calls", text, calls: [{ id, name, args }] }` (args: the raw string or object),
 * `{ kind: "result", id, content }`. System prompts are left out. Shapes that fit neither
 * provider become `{ kind: "bad", what }`.
 */
export function normalise(body, provider) {
  const msgs = Array.isArray(body?.messages) ? body.messages : null;
  if (!msgs) return [{ kind: 'bad', what: 'no messages array' }];
  const items = [];
  const textOf = (c) => {
    if (typeof c === 'string') return c;
    if (Array.isArray(c)) return c.filter((b) => b?.type === 'text').map((b) => b.text ?? '').join('');
    return '';
  };
  for (const m of msgs) {
    if (!isObj(m)) { items.push({ kind: 'bad', what: 'a message that is not an object' }); continue; }
    if (provider === 'anthropic') {
      const blocks = typeof m.content === 'string' ? [{ type: 'text', text: m.content }] : Array.isArray(m.content) ? m.content : [];
      if (m.role === 'user') {
        const text = textOf(blocks);
        for (const b of blocks) {
          if (b?.type === 'tool_result') {
            items.push({ kind: 'result', id: b.tool_use_id, content: typeof b.content === 'string' ? b.content : textOf(b.content) });
          }
        }
        if (text) items.push({ kind: 'user', text });
      } else if (m.role === 'assistant') {
        const text = textOf(blocks);
        const calls = blocks.filter((b) => b?.type === 'tool_use').map((b) => ({ id: b.id, name: b.name, args: b.input }));
        items.push(calls.length ? { kind: 'calls', text, calls } : { kind: 'assistant', text });
      } else {
        items.push({ kind: 'bad', what: `role "${m.role}"` });
      }
      continue;
    }
    switch (m.role) {
      case 'system': case 'developer': break;
      case 'user': items.push({ kind: 'user', text: textOf(m.content) }); break;
      case 'assistant': {
        const tc = Array.isArray(m.tool_calls) ? m.tool_calls : [];
        const text = textOf(m.content);
        if (tc.length) {
          items.push({ kind: 'calls', text, calls: tc.map((c) => ({ id: c?.id, name: c?.function?.name, args: c?.function?.arguments })) });
        } else {
          items.push({ kind: 'assistant', text });
        }
        break;
      }
      case 'tool': items.push({ kind: 'result', id: m.tool_call_id, content: textOf(m.content) }); break;
      default: items.push({ kind: 'bad', what: `role "${m.role}"` });
    }
  }
  return items;
}

function sameArgs(got, want) {
  let v = got;
  if (typeof got === 'string') {
    try { v = JSON.parse(got); } catch { return false; }
  }
  return JSON.stringify(v) === JSON.stringify(want);
}

// ---------------------------------------------------------------------------- validation

/**
 * RULES: the problems of one request, given what this scenario generated so far.
 * 1. The conversation starts with a user's text and ends with a user's text or tool results.
 * 2. Every call was generated here, with its name and arguments; every assistant message with
 *    calls carries exactly the calls of one generated turn, in order.
 * 3. Every group of calls is followed, before any other message, by exactly one result per call
 *    (no result missing, none twice, none for another call); results are non-empty.
 * 4. No result without its call right before it.
 * 5. No message twice: a call id, a user text or an answer text appears at most once.
 * 6. Every assistant text was generated here.
 * 7. A call's result is the same in every request (history is append-only).
 */
export function check(gen, items) {
  const problems = [];
  const seenCalls = new Set();
  const seenUser = new Set();
  const seenAnswers = new Set();
  let open = null; // { ids: Set, got: Set } of the calls group awaiting results
  const closeGroup = (before) => {
    if (!open) return;
    const missing = [...open.ids].filter((id) => !open.got.has(id));
    if (missing.length) problems.push(`calls without a result before ${before}: ${missing.join(', ')}`);
    open = null;
  };
  const first = items.find((it) => it.kind !== 'bad');
  if (!first) problems.push('an empty conversation');
  else if (first.kind !== 'user') problems.push(`the conversation starts with ${first.kind}, not a user text`);
  items.forEach((it, i) => {
    const at = `#${i}`;
    switch (it.kind) {
      case 'bad': problems.push(`${at}: ${it.what}`); break;
      case 'user':
        closeGroup(`user text ${at}`);
        if (seenUser.has(it.text)) problems.push(`${at}: user text duplicated: ${JSON.stringify(it.text.slice(0, 80))}`);
        seenUser.add(it.text);
        break;
      case 'assistant':
        closeGroup(`assistant text ${at}`);
        if (!gen.answers.has(it.text)) problems.push(`${at}: assistant text not generated here: ${JSON.stringify(it.text.slice(0, 80))}`);
        if (seenAnswers.has(it.text)) problems.push(`${at}: assistant text duplicated: ${JSON.stringify(it.text)}`);
        seenAnswers.add(it.text);
        break;
      case 'calls': {
        closeGroup(`calls ${at}`);
        const ids = it.calls.map((c) => c.id);
        for (const c of it.calls) {
          const g = gen.calls.get(c.id);
          if (!g) { problems.push(`${at}: call ${c.id} not generated here`); continue; }
          if (c.name !== g.name) problems.push(`${at}: call ${c.id} has name ${c.name}, generated ${g.name}`);
          if (!sameArgs(c.args, g.inputs)) problems.push(`${at}: call ${c.id} has other arguments than generated`);
          if (seenCalls.has(c.id)) problems.push(`${at}: call ${c.id} duplicated`);
          seenCalls.add(c.id);
        }
        const turn = gen.calls.get(ids[0])?.turn;
        if (turn && turn.join(',') !== ids.join(',')) problems.push(`${at}: calls [${ids.join(', ')}] are not the generated turn [${turn.join(', ')}]`);
        if (it.text && !gen.answers.has(it.text)) problems.push(`${at}: assistant text not generated here: ${JSON.stringify(it.text.slice(0, 80))}`);
        open = { ids: new Set(ids), got: new Set() };
        break;
      }
      case 'result': {
        if (!open || !open.ids.has(it.id)) {
          problems.push(`${at}: result for ${it.id} without its call right before it`);
        } else if (open.got.has(it.id)) {
          problems.push(`${at}: result for ${it.id} twice`);
        } else {
          open.got.add(it.id);
        }
        if (typeof it.content !== 'string' || it.content === '') problems.push(`${at}: empty result for ${it.id}`);
        const prev = gen.results.get(it.id);
        if (prev !== undefined && prev !== it.content) {
          problems.push(`${at}: result for ${it.id} changed from ${JSON.stringify(prev.slice(0, 60))} to ${JSON.stringify(String(it.content).slice(0, 60))}`);
        }
        break;
      }
      default: break;
    }
  });
  closeGroup('the end of the request');
  const last = items.at(-1);
  if (last && last.kind !== 'user' && last.kind !== 'result') problems.push(`the conversation ends with ${last.kind}`);
  return problems;
}

// ---------------------------------------------------------------------------- generation

/**
 * Checks the request and generates the turn that answers it. Returns
 * `{ turn, index, problems }`, `turn` being an ordinary Turn (see scenarios.mjs).
 * `nextId()` hands out the server-wide call numbers.
 */
export function generateTurn(gen, body, provider, nextId) {
  const items = normalise(body, provider);
  const index = gen.requests++;
  const problems = gen.spec.validate ? check(gen, items) : [];
  if (problems.length) {
    gen.invalidRequests++;
    for (const p of problems) {
      gen.problemCount++;
      if (gen.problems.length < gen.spec.maxProblems) gen.problems.push({ request: index, problem: p });
    }
  }
  // Remember results only after checking (rule 7 compares against earlier requests).
  for (const it of items) {
    if (it.kind === 'result' && typeof it.content === 'string' && !gen.results.has(it.id)) gen.results.set(it.id, it.content);
  }
  const { random, spec } = gen;
  const pacing = {
    delayMs: pick(random, spec.delayMs),
    chunkDelayMs: pick(random, spec.chunkDelayMs),
    argChunk: pick(random, spec.argChunk),
  };
  const last = items.at(-1);
  if (last?.kind === 'user') {
    const n = pick(random, spec.calls);
    const ids = Array.from({ length: n }, () => `${spec.idPrefix}_${nextId()}`);
    const toolCalls = ids.map((id) => {
      const inputs = { path: `/tmp/${id}` };
      gen.calls.set(id, { callId: id, name: spec.tool, inputs, turn: ids, request: index });
      return { id, name: spec.tool, arguments: inputs };
    });
    gen.toolTurns++;
    return { turn: { toolCalls, ...pacing }, index, problems };
  }
  const text = `Answer ${nextId()}.`;
  gen.answers.add(text);
  gen.textTurns++;
  return { turn: { text, ...pacing }, index, problems };
}

/** What GET /__scenarios/{id} shows of a generated scenario. */
export function genSummary(gen) {
  return {
    tool: gen.spec.tool, seed: gen.spec.seed, requests: gen.requests, toolTurns: gen.toolTurns,
    textTurns: gen.textTurns, callsProposed: gen.calls.size, invalidRequests: gen.invalidRequests,
    problemCount: gen.problemCount, problems: gen.problems,
  };
}

/** GET /__scenarios/{id}/generated: the summary, every generated call, and the first result each call had in a request. */
export function genDetail(gen) {
  return {
    ...genSummary(gen),
    calls: [...gen.calls.values()].map(({ callId, name, inputs, request }) => ({ callId, name, inputs, request })),
    resultsSeen: Object.fromEntries(gen.results),
  };
}
