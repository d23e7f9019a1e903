// The approval requests' outbox across handler processes on one Postgres
// (tests/server/outbox-worker.mjs is one handler process): SIGKILLed between the commit and the
// delivery, the request is delivered once by another process; two processes delivering at
// once deliver each request once; SIGKILLed during the hook's own call, another process calls
// it again after the claim runs out, with the same requestId and the next attempt (what the
// README promises: the one case of a second call).

import assert from "node:assert/strict";
import { spawn } from "node:child_process";
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { after, before, test } from "node:test";
import { startPostgres } from "../support/postgres.mjs";
import { applyAll, client, fixture } from "./util.mjs";

const here = path.dirname(fileURLToPath(import.meta.url));
const [userMessage, gatedCall] = fixture("approved-run.json");

let postgres;
let dir;
const children = new Set();
before(async () => {
  postgres = await startPostgres();
  dir = fs.mkdtempSync(path.join(os.tmpdir(), "gatehouse-outbox-"));
});
after(async () => {
  for (const c of children) c.kill("SIGKILL");
  await postgres?.stop();
  fs.rmSync(dir, { recursive: true, force: true });
});

/** Starts a handler process; resolves once it serves, with `{ url, child, saw(word) }`. */
function handler(log, mode = "normal") {
  const child = spawn(process.execPath, [path.join(here, "outbox-worker.mjs"), postgres.connectionString, log, mode],
    { stdio: ["ignore", "pipe", "inherit"] });
  children.add(child);
  child.on("exit", () => children.delete(child));
  let out = "";
  const waiters = [];
  child.stdout.on("data", (d) => {
    out += d;
    for (const w of [...waiters]) if (out.includes(w.word)) w.resolve();
  });
  const saw = (word) => new Promise((resolve, reject) => {
    if (out.includes(word)) return resolve();
    waiters.push({ word, resolve });
    child.once("exit", () => reject(new Error(`the handler exited before "${word}"`)));
  });
  return saw("READY ").then(() => ({ url: /READY (\S+)/.exec(out)[1], child, saw }));
}

function kill(h) {
  return new Promise((resolve) => {
    h.child.once("exit", resolve);
    h.child.kill("SIGKILL");
  });
}

const lines = (log) => (fs.existsSync(log) ? fs.readFileSync(log, "utf8").trim().split("\n").filter(Boolean).map((l) => JSON.parse(l)) : []);

async function until(f, ms, what) {
  const deadline = Date.now() + ms;
  while (!f()) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 25));
  }
}

test("killed between the commit and the delivery: another process delivers it, once", async () => {
  const log = path.join(dir, "between.log");
  const a = await handler(log, "hold-claim");
  const alice = client({ url: a.url }, "alice");
  await applyAll(alice, "alice:killed", [userMessage, gatedCall]);
  // The commit was answered; A claimed the request in Postgres and stops before its hook.
  await a.saw("CLAIMED");
  await kill(a);
  assert.deepEqual(lines(log), [], "A never called its hook");
  // Two processes come up on the database: exactly one of them delivers, after A's claim ran out.
  const b = await handler(log);
  const c = await handler(log);
  await until(() => lines(log).length >= 1, 10_000, "the delivery");
  await new Promise((r) => setTimeout(r, 2000));
  const got = lines(log);
  assert.equal(got.length, 1, JSON.stringify(got));
  assert.equal(got[0].threadId, "alice:killed");
  assert.equal(got[0].attempt, 2, "A's claim counted as the first attempt");
  assert.ok([b.child.pid, c.child.pid].includes(got[0].pid));
  await Promise.all([kill(b), kill(c)]);
});

test("two processes on one Postgres, 40 gated calls committed through both: each delivered once", async () => {
  const log = path.join(dir, "two.log");
  const [a, b] = await Promise.all([handler(log), handler(log)]);
  const ids = Array.from({ length: 40 }, (_, i) => `alice:two-${i}`);
  await Promise.all(ids.map((id, i) => applyAll(client({ url: (i % 2 ? a : b).url }, "alice"), id, [userMessage, gatedCall])));
  await until(() => lines(log).length >= 40, 15_000, "40 deliveries");
  await new Promise((r) => setTimeout(r, 1000));
  const got = lines(log);
  assert.equal(got.length, 40);
  assert.deepEqual(got.map((x) => x.threadId).sort(), [...ids].sort());
  assert.equal(new Set(got.map((x) => x.requestId)).size, 40);
  assert.ok(got.every((x) => x.attempt === 1));
  await Promise.all([kill(a), kill(b)]);
});

test("killed during the hook's call: called again by another process after the claim, same requestId", async () => {
  const log = path.join(dir, "during.log");
  const a = await handler(log, "hang-in-hook");
  const alice = client({ url: a.url }, "alice");
  await applyAll(alice, "alice:hook", [userMessage, gatedCall]);
  await a.saw("HOOK");
  await kill(a);
  const b = await handler(log);
  await until(() => lines(log).length >= 2, 10_000, "the second call");
  await new Promise((r) => setTimeout(r, 1000));
  const [first, second, ...rest] = lines(log);
  assert.deepEqual(rest, []);
  assert.equal(first.pid, a.child.pid);
  assert.equal(second.pid, b.child.pid);
  assert.equal(second.requestId, first.requestId);
  assert.deepEqual([first.attempt, second.attempt], [1, 2]);
  await kill(b);
});
