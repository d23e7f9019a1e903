// gatehouse-agent/server as an app imports it: by its package name through package.json
// `exports`, in plain Node (no bundler), the wasm core read from the file beside the module.

import assert from "node:assert/strict";
import { execFileSync } from "node:child_process";
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { fileURLToPath, pathToFileURL } from "node:url";
import { after, before, test } from "node:test";
import { startPostgres } from "../support/postgres.mjs";

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "../..");
let cluster;
let app;
before(async () => {
  cluster = await startPostgres();
  app = fs.mkdtempSync(path.join(os.tmpdir(), "gatehouse-server-app-"));
  fs.mkdirSync(path.join(app, "node_modules"));
  fs.symlinkSync(path.join(root, "pkg"), path.join(app, "node_modules", "gatehouse-agent"));
});
after(async () => {
  if (app) fs.rmSync(app, { recursive: true, force: true });
  await cluster?.stop();
});

test("imported by name in Node, it migrates and applies a commit", () => {
  const body = JSON.parse(fs.readFileSync(path.join(root, "tests/server/fixtures/approved-run.json"),
    "utf8")).commits[0];
  fs.writeFileSync(path.join(app, "server.mjs"), `
    import pg from ${JSON.stringify(pathToFileURL(path.join(root, "node_modules/pg/lib/index.js")).href)};
    import { createStoreHandler } from "gatehouse-agent/server";
    const pool = new pg.Pool({ connectionString: process.argv[2] });
    const handle = createStoreHandler({ pool, authorize: () => "alice" });
    const r = await handle(new Request("http://app/threads/t/commit",
      { method: "POST", body: process.argv[3], headers: { "content-type": "application/json" } }));
    console.log(JSON.stringify({ status: r.status, body: await r.json() }));
    await handle.close();
    await pool.end();
  `);
  const out = execFileSync(process.execPath, ["server.mjs", cluster.connectionString,
    JSON.stringify(body)], { cwd: app, encoding: "utf8" });
  const { status, body: answer } = JSON.parse(out);
  assert.equal(status, 200, out);
  assert.equal(answer.record.version, 1);
  assert.equal(answer.record.messageCount, 1);
});
