// The store handler (gatehouse-agent/server, from pkg/) over a throwaway Postgres
// (./postgres.mjs), mounted in a real Node http server through toNodeListener: what the
// server tests use, and what browser tests can start to get a remote store.
//
//   const s = await startStoreServer();            // Postgres too, unless `postgres` is given
//   fetch(`${s.url}/threads/alice:t1`, { headers: { authorization: "Bearer alice" } });
//   await s.close();                               // the server, the pool, Postgres (if ours)
//
// Who is who: the bearer token is the identity. By default a user may use the threads whose id
// starts with "<user>:", and those `grants` lists for it (`grants.set(threadId, ["bob"])`, or
// one action: "bob/decide"), and may list its own threads and those granted to it
// (`sharedWith`); pass `authorize` to replace that. The handler's clock is the `x-test-now` header
// when a request has one (a test drives lease expiry with it), else Date.now().

import http from "node:http";
import path from "node:path";
import { fileURLToPath } from "node:url";
import pg from "pg";
import { startPostgres } from "./postgres.mjs";

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "../..");
const serverModule = path.join(root, "pkg/server.js");

export function bearer(request) {
  const m = /^Bearer (.+)$/.exec(request.headers.get("authorization") ?? "");
  return m ? m[1] : null;
}

export async function startStoreServer({
  postgres, authorize, basePath = "/api/gatehouse", poolSize = 20, port = 0, wrap = (l) => l,
  logQueries = false, onListen = null, wrapPool = null, makePool = null, wrapHandle = (h) => h,
  ...options
} = {}) {
  const { createStoreHandler, toNodeListener } = await import(serverModule);
  const ownPostgres = !postgres;
  const cluster = postgres ?? await startPostgres();
  // With `makePool`, the pool is what it makes of the connection string (a primaryPool over
  // an HA formation: tests/failover).
  // GATEHOUSE_PG_PIPELINE=1: the pool is in node-postgres' pipeline mode, where the handler
  // sends BEGIN with a transaction's first statement and COMMIT with a commit's last (make
  // test-server runs the store's suite both ways).
  const pool = makePool ? makePool(cluster.connectionString, poolSize)
    : new pg.Pool({ connectionString: cluster.connectionString, max: poolSize, pipeline: process.env.GATEHOUSE_PG_PIPELINE === "1" });
  // A killed Postgres makes idle clients fail: the pool reports it here, not as a crash.
  pool.on("error", () => {});
  // With `wrapPool`, the handler's pool is what it returns (a test stops a handler at a query).
  wrapPool?.(pool);
  // With `logQueries`, every statement the handler sends, through the pool or a client it
  // took from it (tests/server/attacker.test.mjs counts what an idle feed or a list costs).
  const queries = [];
  const logged = Symbol("logged");
  const log = (target) => {
    if (!logQueries || target[logged]) return target;
    const query = target.query.bind(target);
    target.query = (text, ...rest) => {
      queries.push(typeof text === "string" ? text : text?.text ?? "");
      return query(text, ...rest);
    };
    target[logged] = true;
    return target;
  };
  log(pool);
  // With `onListen`, a client's `LISTEN` waits for the promise `onListen()` returns (a feed
  // whose LISTEN is slow to take effect: tests/server/changes.test.mjs).
  const gated = Symbol("gated");
  const held = (client) => {
    if (!onListen || client[gated]) return client;
    const query = client.query.bind(client);
    client.query = async (text, ...rest) => {
      if (typeof text === "string" && text.startsWith("LISTEN")) await onListen();
      return query(text, ...rest);
    };
    client[gated] = true;
    return client;
  };
  const handlerPool = {
    query: (...a) => pool.query(...a),
    connect: async () => held(log(await pool.connect())),
    on: (...a) => pool.on(...a),
  };
  const grants = new Map();
  const calls = [];
  const defaultAuthorize = (request, { threadId, action }) => {
    const user = bearer(request);
    calls.push({ user, threadId, action });
    if (!user) return null;
    if (threadId === null) return user;
    const granted = grants.get(threadId) ?? [];
    if (threadId.startsWith(`${user}:`) || granted.includes(user) ||
        granted.includes(`${user}/${action}`)) {
      return user;
    }
    return null;
  };
  const handle = createStoreHandler({
    pool: logQueries || onListen ? handlerPool : pool,
    basePath,
    authorize: authorize ?? defaultAuthorize,
    // The threads `grants` shares with a user are in its list too (beside its own).
    ...(authorize ? {} : { sharedWith: (user) => [...grants]
      .filter(([, granted]) => granted.some((g) => g === user || g.startsWith(`${user}/`)))
      .map(([threadId]) => threadId) }),
    now: (request) => Number(request.headers.get("x-test-now") ?? Date.now()),
    cors: { origin: "*" },
    ...options,
  });
  await handle.migrate();
  // `wrap` may stand between Node and the handler (tests/remote/support.mjs loses answers);
  // `wrapHandle` between the Request and the handler (tests/failover records what it answers).
  const server = http.createServer(wrap(toNodeListener(wrapHandle(handle))));
  await new Promise((resolve) => server.listen(port, "127.0.0.1", resolve));
  const origin = `http://127.0.0.1:${server.address().port}`;
  return {
    url: origin + (basePath === "/" ? "" : basePath),
    origin,
    handle,
    pool,
    postgres: cluster,
    grants,
    calls,
    queries,
    server,
    async close() {
      await handle.close();
      server.closeAllConnections?.();
      await new Promise((resolve) => server.close(resolve));
      await pool.end().catch(() => {});
      if (ownPostgres) await cluster.stop();
    },
  };
}
