import pg from "pg";
import { createStoreHandler } from "gatehouse-agent/server";
import { authorize } from "./auth.js";

const pool = new pg.Pool({ connectionString: Deno.env.get("DATABASE_URL") });
pool.on("error", () => {});
const handle = createStoreHandler({ pool, basePath: "/api/gatehouse", authorize });
Deno.serve({ port: Number(Deno.env.get("PORT") ?? 8000) }, (request) => handle(request));
