#!/usr/bin/env node
// Scripted mock of the OpenAI Chat Completions and Anthropic Messages HTTP APIs, for browser
// tests and benchmarks. Plain Node.js 20, no dependencies. Binds 127.0.0.1 only and never
// opens an outgoing connection. See README.md in this folder for the API.
//
//   node tests/model-server/server.mjs [--port N] [--port-file PATH] [--static DIR] [--home PATH]
//                                      [--ttl-seconds S] [--isolate] [--verbose]

import http from 'node:http';
import { realpathSync, renameSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

import { anthropic } from './anthropic.mjs';
import { deliverJson, deliverStream, sleep, untilAborted } from './deliver.mjs';
import { openai } from './openai.mjs';
import { genDetail } from './generate.mjs';
import { ScenarioStore, planTurn } from './scenarios.mjs';
import { serveStatic } from './static.mjs';

export const HOST = '127.0.0.1';
const MAX_BODY = 32 * 1024 * 1024; // like Anthropic's Messages API limit
const DEFAULT_ALLOW_HEADERS = 'content-type, authorization, x-api-key, anthropic-version, ' +
  'anthropic-beta, anthropic-dangerous-direct-browser-access, accept, openai-organization, openai-project';
const EXPOSE_HEADERS = 'Retry-After, request-id, x-request-id';

const MODEL_ROUTE = /^\/s\/([^/]+)\/v1\/(chat\/completions|messages)$/;
const SCENARIO_ROUTE = /^\/__scenarios\/([^/]+)(\/requests|\/generated)?$/;

function sendJson(res, status, obj, headers = {}) {
  const data = Buffer.from(JSON.stringify(obj), 'utf8');
  res.writeHead(status, { 'Content-Type': 'application/json', 'Content-Length': data.length, 'Cache-Control': 'no-store', ...headers });
  res.end(data);
}

/** Reads the request body, at most MAX_BODY bytes. Resolves to a string, or null if too large. */
function readBody(req) {
  return new Promise((resolve, reject) => {
    const chunks = [];
    let size = 0;
    req.on('data', (c) => {
      size += c.length;
      if (size > MAX_BODY) { resolve(null); req.pause(); return; }
      chunks.push(c);
    });
    req.on('end', () => resolve(Buffer.concat(chunks).toString('utf8')));
    req.on('error', reject);
  });
}

function parseJson(text) {
  try { return { ok: true, value: JSON.parse(text) }; } catch (e) { return { ok: false, error: e.message }; }
}

function setCorsHeaders(req, res) {
  const origin = req.headers.origin;
  res.setHeader('Access-Control-Allow-Origin', origin ?? '*');
  if (origin) res.setHeader('Vary', 'Origin');
  res.setHeader('Access-Control-Expose-Headers', EXPOSE_HEADERS);
  res.setHeader('Cross-Origin-Resource-Policy', 'cross-origin');
}

function preflight(req, res) {
  const headers = {
    'Access-Control-Allow-Methods': 'GET, POST, OPTIONS',
    'Access-Control-Allow-Headers': req.headers['access-control-request-headers'] || DEFAULT_ALLOW_HEADERS,
    'Access-Control-Max-Age': '600',
    Vary: 'Origin, Access-Control-Request-Method, Access-Control-Request-Headers',
    'Content-Length': '0',
  };
  // Chromium's Private Network Access preflight (harmless when not asked for).
  if (req.headers['access-control-request-private-network'] === 'true') headers['Access-Control-Allow-Private-Network'] = 'true';
  res.writeHead(204, headers);
  res.end();
}

/**
 * Starts the server. Resolves to { server, port, url, store, close() }.
 * @param {{ port?: number, staticDir?: string, home?: string, ttlSeconds?: number,
 *           isolate?: boolean, verbose?: boolean, onClose?: () => void }} opts
 */
export async function startServer(opts = {}) {
  const { port = 0, ttlSeconds = 1800, isolate = false, verbose = false, onClose } = opts;
  const staticRoot = opts.staticDir ? realpathSync(path.resolve(opts.staticDir)) : null;
  const store = new ScenarioStore();
  const providers = { 'chat/completions': openai, messages: anthropic };
  const log = verbose ? (...a) => console.error('[model-server]', ...a) : () => {};

  async function handleModel(req, res, signal, scenarioId, provider) {
    const errorOut = (status, over, extra = {}) => {
      const requestId = provider.requestId();
      sendJson(res, status, provider.errorBody(status, over, requestId), { ...provider.responseHeaders({ requestId }), ...extra });
    };
    if (req.method !== 'POST') return errorOut(405, { message: `model-server: ${req.method} not allowed, use POST` });
    const text = await readBody(req);
    if (text === null) return errorOut(413, {}, { Connection: 'close' });
    const s = store.get(scenarioId);
    if (!s) return errorOut(404, { message: `model-server: no scenario "${scenarioId}" (create it with POST /__scenarios)` });
    const parsed = parseJson(text);
    const entry = store.record(s, {
      method: req.method, path: req.url, headers: { ...req.headers },
      // A generated scenario keeps no bodies (a long run sends the whole, growing thread each time).
      body: s.gen ? { omitted: true, messages: parsed.ok && Array.isArray(parsed.value?.messages) ? parsed.value.messages.length : null }
        : parsed.ok ? parsed.value : text,
      provider: provider.name, stream: parsed.ok && parsed.value?.stream === true,
      turn: null, outcome: 'pending', time: new Date().toISOString(),
    });
    if (!parsed.ok) {
      entry.outcome = 'bad-json';
      return errorOut(400, { message: `model-server: request body is not valid JSON (${parsed.error})` });
    }
    const body = parsed.value;
    const next = s.gen ? store.generate(s, body, provider.name) : store.next(s);
    if (next?.problems?.length) entry.invalid = next.problems;
    if (!next) {
      entry.outcome = 'exhausted';
      return errorOut(500, {
        message: `model-server: script exhausted for scenario "${s.id}": all ${s.turns.length} turn(s) already consumed ` +
          `(this was model request #${s.requests.length})`,
        code: 'script_exhausted',
      });
    }
    const { turn, index } = next;
    entry.turn = index;
    const fault = turn.fault ?? {};
    const result = await (async () => {
      if (turn.delayMs && !(await sleep(turn.delayMs, signal))) return 'aborted';
      if (fault.hang) { await untilAborted(signal); return 'aborted'; }
      const meta = { model: typeof body.model === 'string' ? body.model : 'model-server', created: Math.floor(Date.now() / 1000),
        requestId: provider.requestId(), reqBody: body };
      const headers = { ...provider.responseHeaders(meta), ...(fault.headers ?? {}) };
      if (fault.retryAfter !== undefined) headers['Retry-After'] = fault.retryAfter;
      if (fault.status) {
        const errBody = fault.body ?? provider.errorBody(fault.status, fault, meta.requestId);
        return deliverJson(res, signal, { status: fault.status, body: errBody, headers, fault });
      }
      const plan = planTurn(turn, body);
      if (body.stream === true) {
        const { events, terminal } = provider.stream(plan, meta);
        return deliverStream(res, signal, { events, terminal, errorEvent: provider.streamErrorEvent(fault.streamError), headers, turn });
      }
      if (fault.streamError) { // non-streaming request: the same failure arrives as an HTTP error
        const status = fault.streamError.status ?? (provider === anthropic && (fault.streamError.type ?? 'overloaded_error') === 'overloaded_error' ? 529 : 500);
        return deliverJson(res, signal, { status, body: provider.errorBody(status, fault.streamError, meta.requestId), headers });
      }
      return deliverJson(res, signal, { body: provider.json(plan, meta), headers, fault });
    })();
    entry.outcome = result;
    log(`${s.id} turn ${index} -> ${result}`);
  }

  async function handleControl(req, res, p) {
    if (p === '/__health' && req.method === 'GET') return sendJson(res, 200, { ok: true });
    if (p === '/__shutdown' && req.method === 'POST') {
      res.on('finish', () => setImmediate(close));
      return sendJson(res, 200, { ok: true, shuttingDown: true });
    }
    if (p === '/__reset' && req.method === 'POST') { store.clear(); return sendJson(res, 200, { ok: true }); }
    if (p === '/__scenarios' && req.method === 'POST') {
      const text = await readBody(req);
      if (text === null) return sendJson(res, 413, { error: 'body too large' }, { Connection: 'close' });
      const parsed = parseJson(text);
      if (!parsed.ok) return sendJson(res, 400, { error: `invalid JSON: ${parsed.error}` });
      try {
        const s = store.put(parsed.value);
        return sendJson(res, 200, { id: s.id });
      } catch (e) {
        return sendJson(res, 400, { error: e.message });
      }
    }
    const m = SCENARIO_ROUTE.exec(p);
    if (m && req.method === 'GET') {
      const s = store.get(decodeURIComponent(m[1]));
      if (!s) return sendJson(res, 404, { error: `no scenario "${m[1]}"` });
      if (m[2] === '/generated') {
        if (!s.gen) return sendJson(res, 404, { error: `scenario "${s.id}" is not generated` });
        return sendJson(res, 200, genDetail(s.gen));
      }
      return sendJson(res, 200, m[2] ? s.requests : store.summary(s));
    }
    return sendJson(res, 404, { error: `no control route ${req.method} ${p}` });
  }

  async function handle(req, res) {
    const ac = new AbortController();
    res.on('close', () => ac.abort());
    setCorsHeaders(req, res);
    const p = (req.url.startsWith('/') ? req.url : new URL(req.url).pathname).split('?')[0];
    log(req.method, req.url);
    if (req.method === 'OPTIONS') return preflight(req, res);
    const model = MODEL_ROUTE.exec(p);
    if (model) {
      let id;
      try { id = decodeURIComponent(model[1]); } catch { id = model[1]; }
      return handleModel(req, res, ac.signal, id, providers[model[2]]);
    }
    if (p.startsWith('/__')) return handleControl(req, res, p);
    if (staticRoot && (req.method === 'GET' || req.method === 'HEAD')) {
      // `make demo` serves the repository root; its address (/) leads to the demo (--home).
      if (opts.home && p === '/') {
        res.writeHead(302, { Location: opts.home, 'Cache-Control': 'no-store' });
        return res.end();
      }
      const extra = isolate ? { 'Cross-Origin-Opener-Policy': 'same-origin', 'Cross-Origin-Embedder-Policy': 'require-corp' } : {};
      return serveStatic(req, res, staticRoot, p, extra);
    }
    return sendJson(res, 404, { error: `not found: ${req.method} ${p}` });
  }

  const server = http.createServer((req, res) => {
    handle(req, res).catch((e) => {
      console.error('[model-server] handler error:', e);
      if (!res.headersSent) sendJson(res, 500, { error: `model-server internal error: ${e.message}` });
      else res.destroy();
    });
  });

  let closing = null;
  let ttlTimer = null;
  function close() {
    if (!closing) {
      clearTimeout(ttlTimer);
      closing = new Promise((resolve) => server.close(() => resolve()));
      server.closeAllConnections(); // ends hung and streaming responses too
      closing.then(() => onClose?.());
    }
    return closing;
  }

  await new Promise((resolve, reject) => {
    server.once('error', reject);
    server.listen({ port, host: HOST }, resolve);
  });
  if (ttlSeconds > 0) {
    ttlTimer = setTimeout(() => { log(`ttl of ${ttlSeconds}s reached`); close(); }, ttlSeconds * 1000);
    ttlTimer.unref();
  }
  const actualPort = server.address().port;
  return { server, port: actualPort, url: `http://${HOST}:${actualPort}`, store, close };
}

// ---------------------------------------------------------------------------- CLI

const USAGE = `usage: node server.mjs [--port N] [--port-file PATH] [--static DIR] [--home PATH] [--ttl-seconds S] [--isolate] [--verbose]
  --port N          port on 127.0.0.1 (default 0 = random)
  --port-file PATH  write the chosen port to PATH (atomically) once listening
  --static DIR      serve other GET paths from DIR
  --home PATH       with --static: answer GET / with a redirect to PATH (e.g. /www/)
  --ttl-seconds S   exit after S seconds (default 1800; 0 = no limit)
  --isolate         add COOP same-origin / COEP require-corp to static responses
  --verbose         log requests to stderr`;

function parseArgs(argv) {
  const out = { port: 0, ttlSeconds: 1800, portFile: null, staticDir: null, home: null, isolate: false, verbose: false };
  for (let i = 0; i < argv.length; i++) {
    let [flag, value] = argv[i].split(/=(.*)/s, 2);
    const take = () => {
      if (value === undefined) value = argv[++i];
      if (value === undefined) throw new Error(`${flag} needs a value`);
      return value;
    };
    const int = (v, max) => {
      if (!/^\d+$/.test(v) || Number(v) > max) throw new Error(`${flag}: bad value "${v}"`);
      return Number(v);
    };
    switch (flag) {
      case '--port': out.port = int(take(), 65535); break;
      case '--ttl-seconds': out.ttlSeconds = int(take(), 7 * 24 * 3600); break;
      case '--port-file': out.portFile = take(); break;
      case '--static': out.staticDir = take(); break;
      case '--home': out.home = take(); break;
      case '--isolate': out.isolate = true; break;
      case '--verbose': out.verbose = true; break;
      case '-h': case '--help': console.log(USAGE); process.exit(0); break;
      default: throw new Error(`unknown argument "${argv[i]}"`);
    }
  }
  return out;
}

async function main() {
  let args;
  try {
    args = parseArgs(process.argv.slice(2));
  } catch (e) {
    console.error(`model-server: ${e.message}\n${USAGE}`);
    process.exit(2);
  }
  const srv = await startServer({ ...args, onClose: () => process.exit(0) });
  if (args.portFile) {
    const tmp = `${args.portFile}.${process.pid}.tmp`;
    writeFileSync(tmp, `${srv.port}\n`);
    renameSync(tmp, args.portFile);
  }
  console.log(`model-server listening on ${srv.url}`);
  for (const sig of ['SIGTERM', 'SIGINT']) {
    process.on(sig, () => {
      setTimeout(() => process.exit(0), 2000).unref(); // in case a connection refuses to close
      srv.close();
    });
  }
}

if (process.argv[1] && path.resolve(process.argv[1]) === fileURLToPath(import.meta.url)) {
  main().catch((e) => {
    console.error(`model-server: ${e.message}`);
    process.exit(1);
  });
}
