import pg from "pg";
import { createStoreHandler } from "gatehouse-agent/server";
import { authorize } from "./auth.js";

const pool = new pg.Pool({ connectionString: process.env.DATABASE_URL });
pool.on("error", () => {});
const handle = createStoreHandler({ pool, basePath: "/api/gatehouse", authorize });
// idleTimeout: 0, or Bun closes a change stream that is quiet for 10 s (pings come every 15 s).
Bun.serve({ port: process.env.PORT ?? 3000, idleTimeout: 0, fetch: (request) => handle(request) });
