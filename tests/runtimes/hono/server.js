import { serve } from "@hono/node-server";
import { Hono } from "hono";
import pg from "pg";
import { createStoreHandler } from "gatehouse-agent/server";
import { authorize } from "./auth.js";

const pool = new pg.Pool({ connectionString: process.env.DATABASE_URL });
pool.on("error", () => {});
const handle = createStoreHandler({ pool, basePath: "/api/gatehouse", authorize });
const app = new Hono();
app.all("/api/gatehouse/*", (c) => handle(c.req.raw));
serve({ fetch: app.fetch, port: Number(process.env.PORT ?? 3000) });
