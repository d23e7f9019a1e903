// What the remote-thread tests run against (docs/design.md, "Across devices"): a throwaway
// Postgres cluster (tests/support/postgres.mjs), a real node-postgres pool, and the package's
// own store handler (`gatehouse-agent/server`, from pkg/server.js) behind a Node HTTP server
// on its own origin, with CORS for the test page's. Users are told apart by their bearer
// token: `authorization: Bearer <user>`; the handler's `authorize` lets a user into the
// threads `allow(user, threadId, action)` says (default: every user, every thread).

import http from 'node:http';
import pg from 'pg';
import path from 'node:path';
import { pathToFileURL } from 'node:url';
import { ROOT } from '../browser/harness.mjs';
import { startPostgres } from '../support/postgres.mjs';

const { createStoreHandler } = await import(pathToFileURL(path.join(ROOT, 'pkg/server.js')).href);

/** The bearer token of `request`, or null. */
export const userOf = (request) => /^Bearer (\S+)$/.exec(request.headers.get('authorization') ?? '')?.[1] ?? null;

/**
 * Starts Postgres and the handler. `origin` is the test page's origin (CORS). Returns
 * `{ url, pool, postgres, allow, stop }`; `allow` may be replaced by a test.
 */
export async function startRemote({ origin }) {
  const postgres = await startPostgres();
  const pool = new pg.Pool({ connectionString: postgres.connectionString, max: 8 });
  pool.on('error', () => {}); // a killed Postgres drops idle clients: the next query says so
  const state = { allow: () => true };
  const handle = createStoreHandler({
    pool,
    basePath: '/api/gatehouse',
    cors: { origin },
    authorize: async (request, { threadId, action }) => {
      const user = userOf(request);
      return user && state.allow(user, threadId, action) ? user : null;
    },
  });
  const server = http.createServer(async (req, res) => {
    const chunks = [];
    for await (const c of req) chunks.push(c);
    const body = chunks.length ? Buffer.concat(chunks) : undefined;
    const controller = new AbortController();
    res.on('close', () => controller.abort());
    let response;
    try {
      response = await handle(new Request(`http://${req.headers.host}${req.url}`, {
        method: req.method, headers: req.headers, body: ['GET', 'HEAD'].includes(req.method) ? undefined : body,
        signal: controller.signal,
      }));
    } catch (e) {
      res.writeHead(500).end(String(e));
      return;
    }
    res.writeHead(response.status, Object.fromEntries(response.headers));
    if (!response.body) return res.end();
    try {
      for await (const chunk of response.body) res.write(chunk);
    } catch { /* the client went away */ }
    res.end();
  });
  await new Promise((r) => server.listen(0, '127.0.0.1', r));
  const url = `http://127.0.0.1:${server.address().port}/api/gatehouse`;
  return {
    url,
    pool,
    postgres,
    set allow(f) { state.allow = f; },
    async stop() {
      server.closeAllConnections?.();
      await new Promise((r) => server.close(r));
      await pool.end().catch(() => {});
      await postgres.stop();
    },
  };
}
