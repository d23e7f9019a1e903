#!/usr/bin/env node
// The remote store's side of the store contract (tests/store_contract/remote.rs): the package's
// store handler over a throwaway Postgres (tests/support/store-server.mjs) on a fixed local port,
// so the wasm test binary can be built with its URL. Any bearer token is a user; the handler's
// clock is the request's `x-test-now` header (the checks pass their times). `POST
// /__outside/<thread>` changes a thread's rows in Postgres behind the handler's back, as the
// contract's `Outside` asks. Prints the handler's URL, then runs until it is stopped (SIGTERM).
//
//   node tests/remote/contract-server.mjs [--port 38417]

import { bearer, startStoreServer } from '../support/store-server.mjs';

const port = Number(process.argv[process.argv.indexOf('--port') + 1] || 38417);
const s = await startStoreServer({
  port,
  authorize: (request) => bearer(request),
  cors: { origin: '*', headers: ['x-test-now'] },
});

async function outside(thread, change) {
  const set = (field, value) => s.pool.query(
    `UPDATE gatehouse_threads SET record = jsonb_set(record::jsonb, $2, $3::jsonb)::text WHERE id = $1`,
    [thread, `{${field}}`, JSON.stringify(value)]);
  if ('schemaVersion' in change) return set('schemaVersion', change.schemaVersion);
  if ('messageCount' in change) return set('messageCount', change.messageCount);
  if ('unreadableRecord' in change) return set('version', 'not a number');
  if ('unreadableRow' in change) {
    return s.pool.query(`INSERT INTO gatehouse_messages (thread, seq, json) VALUES ($1, $2, '{not json')
      ON CONFLICT (thread, seq) DO UPDATE SET json = excluded.json`, [thread, change.unreadableRow]);
  }
  throw new Error(`unknown change ${JSON.stringify(change)}`);
}

const handler = s.server.listeners('request')[0];
s.server.removeAllListeners('request');
s.server.on('request', async (req, res) => {
  const cors = { 'access-control-allow-origin': '*', 'access-control-allow-headers': 'content-type' };
  if (!req.url.startsWith('/__outside/')) return handler(req, res);
  if (req.method === 'OPTIONS') return res.writeHead(204, cors).end();
  try {
    let body = '';
    for await (const c of req) body += c;
    await outside(decodeURIComponent(req.url.slice('/__outside/'.length)), JSON.parse(body));
    res.writeHead(200, cors).end('{}');
  } catch (e) {
    res.writeHead(500, cors).end(String(e?.stack ?? e));
  }
});

console.log(s.url);
const stop = async () => { await s.close().catch(() => {}); process.exit(0); };
process.on('SIGTERM', stop);
process.on('SIGINT', stop);
