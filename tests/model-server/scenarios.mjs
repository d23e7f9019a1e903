// Scenario store (scripted conversations), Turn validation, and the
// provider-neutral "plan" of one turn that openai.mjs / anthropic.mjs render.

import { generateTurn, genSummary, newGenState, validateGenerate } from './generate.mjs';

const ID_RE = /^[A-Za-z0-9._-]{1,128}$/;
const MAX_GENERATE = 1_000_000; // keeps one turn bounded
const MAX_RECORDED = 10_000; // per scenario; older entries are dropped first

const TURN_KEYS = new Set([
  'text', 'toolCalls', 'usage', 'stopReason', 'argChunk', 'generateTokens',
  'delayMs', 'chunkDelayMs', 'fault', 'splitWrites',
]);
const FAULT_KEYS = new Set([
  'status', 'retryAfter', 'body', 'type', 'message', 'headers',
  'dropAfterEvents', 'hang', 'hangAfterEvents', 'streamError', 'truncate',
]);

const isObj = (v) => v !== null && typeof v === 'object' && !Array.isArray(v);
const isCount = (v) => Number.isInteger(v) && v >= 0;

/** Throws an Error with a readable message when `turn` is malformed. */
export function validateTurn(turn, i) {
  const at = `turns[${i}]`;
  if (!isObj(turn)) throw new Error(`${at} must be an object`);
  for (const k of Object.keys(turn)) {
    if (!TURN_KEYS.has(k) && !k.startsWith('_')) throw new Error(`${at}: unknown field "${k}"`);
  }
  const t = turn;
  if (t.text !== undefined && typeof t.text !== 'string' &&
      !(Array.isArray(t.text) && t.text.every((s) => typeof s === 'string'))) {
    throw new Error(`${at}.text must be a string or an array of strings`);
  }
  if (t.toolCalls !== undefined) {
    if (!Array.isArray(t.toolCalls)) throw new Error(`${at}.toolCalls must be an array`);
    t.toolCalls.forEach((c, j) => {
      if (!isObj(c) || typeof c.name !== 'string' || !c.name) {
        throw new Error(`${at}.toolCalls[${j}] needs a non-empty "name"`);
      }
      if (c.id !== undefined && typeof c.id !== 'string') throw new Error(`${at}.toolCalls[${j}].id must be a string`);
      const a = c.arguments;
      if (a !== undefined && typeof a !== 'string' && !isObj(a)) {
        throw new Error(`${at}.toolCalls[${j}].arguments must be an object or a string`);
      }
    });
  }
  if (t.usage !== undefined) {
    if (!isObj(t.usage)) throw new Error(`${at}.usage must be an object`);
    for (const k of ['input', 'output', 'cacheRead', 'cacheCreation']) {
      if (t.usage[k] !== undefined && !isCount(t.usage[k])) throw new Error(`${at}.usage.${k} must be a non-negative integer`);
    }
  }
  if (t.stopReason !== undefined && typeof t.stopReason !== 'string') throw new Error(`${at}.stopReason must be a string`);
  if (t.argChunk !== undefined && !(Number.isInteger(t.argChunk) && t.argChunk >= 1)) throw new Error(`${at}.argChunk must be an integer >= 1`);
  if (t.generateTokens !== undefined && !(isCount(t.generateTokens) && t.generateTokens <= MAX_GENERATE)) {
    throw new Error(`${at}.generateTokens must be an integer in 0..${MAX_GENERATE}`);
  }
  for (const k of ['delayMs', 'chunkDelayMs']) {
    if (t[k] !== undefined && !(isCount(t[k]) && t[k] <= 600_000)) throw new Error(`${at}.${k} must be an integer in 0..600000`);
  }
  if (t.splitWrites !== undefined && typeof t.splitWrites !== 'boolean') throw new Error(`${at}.splitWrites must be a boolean`);
  if (t.fault !== undefined) {
    const f = t.fault;
    if (!isObj(f)) throw new Error(`${at}.fault must be an object`);
    for (const k of Object.keys(f)) if (!FAULT_KEYS.has(k) && !k.startsWith('_')) throw new Error(`${at}.fault: unknown field "${k}"`);
    if (f.status !== undefined && !(Number.isInteger(f.status) && f.status >= 400 && f.status <= 599)) {
      throw new Error(`${at}.fault.status must be an HTTP error status (400..599)`);
    }
    if (f.retryAfter !== undefined && typeof f.retryAfter !== 'string') throw new Error(`${at}.fault.retryAfter must be a string`);
    if (f.headers !== undefined && !isObj(f.headers)) throw new Error(`${at}.fault.headers must be an object`);
    for (const k of ['dropAfterEvents', 'hangAfterEvents']) {
      if (f[k] !== undefined && !isCount(f[k])) throw new Error(`${at}.fault.${k} must be a non-negative integer`);
    }
    if (f.truncate !== undefined && f.truncate !== true && !isCount(f.truncate)) {
      throw new Error(`${at}.fault.truncate must be true or a non-negative integer`);
    }
    if (f.streamError !== undefined && !isObj(f.streamError)) throw new Error(`${at}.fault.streamError must be an object`);
    const se = f.streamError?.status;
    if (se !== undefined && !(Number.isInteger(se) && se >= 400 && se <= 599)) {
      throw new Error(`${at}.fault.streamError.status must be an HTTP error status (400..599)`);
    }
    if (f.streamError?.afterEvents !== undefined && !isCount(f.streamError.afterEvents)) {
      throw new Error(`${at}.fault.streamError.afterEvents must be a non-negative integer`);
    }
  }
}

export class ScenarioStore {
  #map = new Map();
  #seq = 0;
  #genSeq = 0; // server-wide: generated call ids never repeat within one server

  /** Creates or replaces a scenario; returns it. Throws on bad input. */
  put(spec) {
    if (!isObj(spec)) throw new Error('body must be a JSON object');
    let { id } = spec;
    if (id === undefined) {
      do { id = `s${++this.#seq}`; } while (this.#map.has(id));
    }
    if (typeof id !== 'string' || !ID_RE.test(id)) throw new Error('id must match [A-Za-z0-9._-]{1,128}');
    if (spec.generate !== undefined) {
      if (spec.turns !== undefined || spec.repeat !== undefined) throw new Error('"generate" goes without "turns" and "repeat"');
      const gen = newGenState(validateGenerate(spec.generate));
      const s = { id, turns: [], repeat: false, consumed: 0, requests: [], gen };
      this.#map.set(id, s);
      return s;
    }
    if (!Array.isArray(spec.turns)) throw new Error('"turns" must be an array');
    spec.turns.forEach(validateTurn);
    if (spec.repeat !== undefined && typeof spec.repeat !== 'boolean') throw new Error('"repeat" must be a boolean');
    if (spec.repeat && spec.turns.length === 0) throw new Error('"repeat" needs at least one turn');
    const s = { id, turns: spec.turns, repeat: !!spec.repeat, consumed: 0, requests: [] };
    this.#map.set(id, s);
    return s;
  }

  get(id) { return this.#map.get(id); }
  clear() { this.#map.clear(); }

  /**
   * A generated scenario's next turn for request `body` (see generate.mjs):
   * `{ turn, index, problems }`. Call and answer numbers come from one counter per server.
   */
  generate(s, body, provider) {
    s.consumed++;
    return generateTurn(s.gen, body, provider, () => ++this.#genSeq);
  }

  /** Consumes the next turn: `{ turn, index }`, or null when the script is exhausted. */
  next(s) {
    if (s.consumed >= s.turns.length && !s.repeat) return null;
    const index = s.consumed % s.turns.length;
    s.consumed++;
    return { turn: s.turns[index], index };
  }

  record(s, entry) {
    s.requests.push(entry);
    if (s.requests.length > MAX_RECORDED) s.requests.shift();
    return entry;
  }

  summary(s) {
    if (s.gen) return { id: s.id, consumed: s.consumed, generate: genSummary(s.gen), requests: s.requests.length };
    return {
      id: s.id,
      consumed: s.consumed,
      turns: s.turns.length,
      repeat: s.repeat,
      remaining: s.repeat ? null : Math.max(0, s.turns.length - s.consumed),
      exhausted: !s.repeat && s.consumed >= s.turns.length,
      requests: s.requests.length,
    };
  }
}

// ---------------------------------------------------------------------------
// Turn -> plan (provider-neutral pieces)

const WORDS = ['lorem', 'ipsum', 'dolor', 'sit', 'amet', 'consectetur', 'adipiscing', 'elit',
  'sed', 'do', 'eiusmod', 'tempor', 'incididunt', 'ut', 'labore', 'et', 'dolore', 'magna'];

/** "Hello big world" -> ["Hello ", "big ", "world"] (whitespace stays attached). */
export function splitWords(text) {
  return text.match(/\S+\s*|\s+/g) ?? [];
}

/** Splits by code points (never inside a surrogate pair), `size` code points per piece. */
export function splitChars(s, size) {
  const cps = Array.from(s);
  const out = [];
  for (let i = 0; i < cps.length; i += size) out.push(cps.slice(i, i + size).join(''));
  return out;
}

function estimateTokens(chars) { return Math.max(1, Math.ceil(chars / 4)); }

/**
 * @returns {{ textPieces: string[], fullText: string, toolCalls: Array<{id?: string, name: string,
 *   argsString: string, argsValue: any, argPieces: string[]}>, usage: {input: number, output: number,
 *   cacheRead: number, cacheCreation: number}, stopReason?: string }}
 */
export function planTurn(turn, reqBody) {
  const textPieces = Array.isArray(turn.text) ? [...turn.text] : splitWords(turn.text ?? '');
  const n = turn.generateTokens ?? 0;
  for (let i = 0; i < n; i++) {
    const w = WORDS[i % WORDS.length];
    textPieces.push(i === 0 && textPieces.length === 0 ? w : ` ${w}`);
  }
  const argChunk = turn.argChunk ?? 3;
  const toolCalls = (turn.toolCalls ?? []).map((c) => {
    const raw = c.arguments ?? {};
    const argsString = typeof raw === 'string' ? raw : JSON.stringify(raw);
    let argsValue = raw;
    if (typeof raw === 'string') {
      try { argsValue = JSON.parse(raw); } catch { argsValue = raw; } // invalid JSON stays a string
    }
    return { id: c.id, name: c.name, argsString, argsValue, argPieces: splitChars(argsString, argChunk) };
  });
  const fullText = textPieces.join('');
  const u = turn.usage ?? {};
  const promptChars = JSON.stringify(reqBody?.messages ?? reqBody ?? '').length;
  const argChars = toolCalls.reduce((a, c) => a + c.argsString.length, 0);
  const usage = {
    input: u.input ?? estimateTokens(promptChars),
    output: u.output ?? Math.max(1, textPieces.length + (argChars ? estimateTokens(argChars) : 0)),
    cacheRead: u.cacheRead ?? 0,
    cacheCreation: u.cacheCreation ?? 0,
  };
  return { textPieces, fullText, toolCalls, usage, stopReason: turn.stopReason };
}
