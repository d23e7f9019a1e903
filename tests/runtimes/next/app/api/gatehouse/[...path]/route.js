import pg from "pg";
import { createStoreHandler } from "gatehouse-agent/server";
import { authorize } from "../../../../auth.js";

const pool = new pg.Pool({ connectionString: process.env.DATABASE_URL });
pool.on("error", () => {});
const handle = createStoreHandler({ pool, basePath: "/api/gatehouse", authorize });
export const GET = handle, POST = handle, DELETE = handle, OPTIONS = handle;
