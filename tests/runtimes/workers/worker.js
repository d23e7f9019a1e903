import pg from "pg";
import { createStoreHandler } from "gatehouse-agent/server";
import wasm from "gatehouse-agent/server/core_bg.wasm";
import { authorize } from "./auth.js";

export default {
  async fetch(request, env, ctx) {
    // A Worker cannot use one request's connections in another: a pool per request, ended once
    // its response is sent (a change stream's, when it closes). No LISTEN connection outlives
    // a request either: notify: false (the stream polls the change table).
    const pool = new pg.Pool({ connectionString: env.DATABASE_URL });
    const handle = createStoreHandler({ pool, wasm, basePath: "/api/gatehouse", authorize,
      notify: false });
    const response = await handle(request);
    const { readable, writable } = new TransformStream();
    ctx.waitUntil((response.body ?? new Response("").body).pipeTo(writable)
      .catch(() => {}).finally(() => pool.end()));
    return new Response(readable, response);
  },
};
