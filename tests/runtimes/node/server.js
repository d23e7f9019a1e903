import http from "node:http";
import pg from "pg";
import { createStoreHandler, toNodeListener } from "gatehouse-agent/server";
import { authorize } from "./auth.js"; // yours: the user's id, or null (below)

const pool = new pg.Pool({ connectionString: process.env.DATABASE_URL });
pool.on("error", () => {}); // idle clients of a restarted database: pg reports them here
const handle = createStoreHandler({ pool, basePath: "/api/gatehouse", authorize });
http.createServer(toNodeListener(handle)).listen(process.env.PORT ?? 3000);
