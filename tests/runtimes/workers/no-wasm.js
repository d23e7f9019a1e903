// What a Worker gets when it forgets the `wasm` option (workers.test.mjs): a clear error.
import pg from "pg";
import { createStoreHandler } from "gatehouse-agent/server";
import { authorize } from "./auth.js";

export default {
  async fetch(request, env) {
    const pool = new pg.Pool({ connectionString: env.DATABASE_URL });
    const handle = createStoreHandler({ pool, basePath: "/api/gatehouse", authorize });
    return handle(request);
  },
};
