// The store handler in Deno (npm's @deno/linux-x64-glibc): the README's Deno.serve app; and
// the package imported over HTTP, where the wasm core beside the module is fetched, not read.
import assert from "node:assert/strict";
import { execFile } from "node:child_process";
import fs from "node:fs";
import http from "node:http";
import path from "node:path";
import { test } from "node:test";
import { runtimeSuite } from "./flow.mjs";
import { binary, freePort, here, modules, startApp } from "./harness.mjs";

const deno = () => binary("@deno/linux-x64-glibc", "deno");

const suite = runtimeSuite("deno", {
  app: "deno/server.js",
  async start(pg) {
    const port = await freePort();
    const url = `http://127.0.0.1:${port}/api/gatehouse`;
    const app = await startApp(deno(),
      ["run", "--no-lock", "--allow-net", "--allow-env", "--allow-read", "server.js"], {
        cwd: path.join(here, "deno"),
        env: { DATABASE_URL: pg.connectionString, PORT: String(port), DENO_NO_UPDATE_CHECK: "1" },
        readyUrl: `${url}/threads`,
      });
    return { url, stop: () => app.stop() };
  },
});

test("deno: imported over HTTP, the handler fetches its wasm core and applies a commit", async () => {
  // The installed package, served as a CDN would serve it; no --allow-read: nothing is read
  // from disk but pg (from node_modules).
  const pkg = path.join(modules, "gatehouse-agent");
  const fetched = [];
  const server = http.createServer((req, res) => {
    const file = path.join(pkg, decodeURIComponent(new URL(req.url, "http://h").pathname));
    fetched.push(req.url);
    if (!file.startsWith(pkg + path.sep) || !fs.existsSync(file)) return res.writeHead(404).end();
    res.writeHead(200, { "content-type": file.endsWith(".wasm") ? "application/wasm"
      : "text/javascript" }).end(fs.readFileSync(file));
  });
  await new Promise((resolve) => server.listen(0, "127.0.0.1", resolve));
  const origin = `127.0.0.1:${server.address().port}`;
  const commit = JSON.parse(fs.readFileSync(path.join(here, "../server/fixtures/approved-run.json"),
    "utf8")).commits[0];
  const script = `
    import pg from "pg";
    const { createStoreHandler } = await import("http://${origin}/server.js");
    const pool = new pg.Pool({ connectionString: Deno.env.get("DATABASE_URL") });
    const handle = createStoreHandler({ pool, authorize: () => "alice" });
    const r = await handle(new Request("http://app/threads/alice:http/commit",
      { method: "POST", body: Deno.env.get("BODY"), headers: { "content-type": "application/json" } }));
    console.log(JSON.stringify({ status: r.status, body: await r.json() }));
    await handle.close();
    await pool.end();`;
  try {
    const out = await new Promise((resolve, reject) => {
      execFile(deno(), ["eval", "--no-lock", `--allow-import=${origin}`, `--allow-net`,
        "--allow-env", script], {
        cwd: path.join(here, "deno"), timeout: 30_000,
        env: { ...process.env, DATABASE_URL: suite.postgres().connectionString,
          BODY: JSON.stringify(commit), DENO_NO_UPDATE_CHECK: "1" },
      }, (e, stdout, stderr) => (e ? reject(new Error(`${e.message}\n${stderr}`)) : resolve(stdout)));
    });
    const { status, body } = JSON.parse(out);
    assert.equal(status, 200, out);
    assert.equal(body.record.version, 1);
    assert.ok(fetched.includes("/server/core_bg.wasm"), `fetched: ${fetched}`);
  } finally {
    server.close();
  }
});
