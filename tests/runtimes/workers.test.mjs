// The store handler in a Cloudflare Worker: workers/worker.js bundled as Wrangler bundles it
// (workers/bundle.mjs), run by miniflare in workerd (npm's @cloudflare/workerd-linux-64); pg
// reaches the throwaway Postgres through the Workers sockets API (nodejs_compat,
// pg-cloudflare). notify: false, so the change stream and the long poll are fed by polling.
// The compatibility flags are the README's.
import assert from "node:assert/strict";
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { test } from "node:test";
import pg from "pg";
import { runtimeSuite } from "./flow.mjs";
import { modules, root } from "./harness.mjs";
import { bundle } from "./workers/bundle.mjs";

/** Runs `entry` of workers/ in workerd; `{ url, stop() }`. */
async function startWorker(entry, cluster) {
  const esbuild = await import(path.join(root, "node_modules/esbuild/lib/main.js"));
  const { Miniflare } = await import(path.join(modules, "miniflare/dist/src/index.js"));
  const out = fs.mkdtempSync(path.join(os.tmpdir(), "gatehouse-worker-"));
  let mf;
  const stop = async () => {
    await mf?.dispose().catch(() => {});
    fs.rmSync(out, { recursive: true, force: true });
  };
  try {
    mf = new Miniflare({
      modules: await bundle(esbuild.default ?? esbuild, out, entry),
      modulesRoot: out,
      compatibilityDate: "2026-07-01",
      compatibilityFlags: ["nodejs_compat", "enable_request_signal"],
      bindings: { DATABASE_URL: cluster.connectionString },
      host: "127.0.0.1",
      port: 0,
    });
    return { url: new URL("/api/gatehouse", await mf.ready).href, stop };
  } catch (e) {
    await stop();
    throw e;
  }
}

const suite = runtimeSuite("workers", {
  app: "workers/worker.js",
  noticeMs: 4000,
  start: (cluster) => startWorker("worker.js", cluster),
});

// A change stream's request in workerd ends at its first ping (pingMs, 15 s by default) after
// the client left, and its pool then; without enable_request_signal it was seen to poll on
// for good (miniflare 4.20260730).
test("workers: each request's pool is ended once its response is sent (a stream's at its next ping)", async () => {
  const c = new pg.Client({ connectionString: suite.postgres().connectionString });
  await c.connect();
  try {
    const others = async () => (await c.query(`SELECT count(*)::int AS n FROM pg_stat_activity
      WHERE backend_type = 'client backend' AND pid <> pg_backend_pid()`)).rows[0].n;
    for (let i = 0; i < 3; i++) {
      const r = await fetch(`${suite.url()}/threads`, { headers: { authorization: "Bearer alice" } });
      assert.equal(r.status, 200);
    }
    const deadline = Date.now() + 20_000;
    while (await others() > 0) {
      assert.ok(Date.now() < deadline, `${await others()} connections still open`);
      await new Promise((resolve) => setTimeout(resolve, 100));
    }
  } finally {
    await c.end();
  }
});

test("workers: without the wasm option the handler answers what to pass", async () => {
  const worker = await startWorker("no-wasm.js", suite.postgres());
  try {
    const r = await fetch(`${worker.url}/threads`, { headers: { authorization: "Bearer alice" } });
    const body = await r.json();
    assert.equal(r.status, 500);
    assert.equal(body.error.code, "invalid_config");
    assert.match(body.error.message,
      /cannot read the core's wasm .*import wasm from "gatehouse-agent\/server\/core_bg.wasm"/);
  } finally {
    await worker.stop();
  }
});
