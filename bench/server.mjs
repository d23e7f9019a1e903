#!/usr/bin/env node
// The store handler's commit latency and load on this machine: a throwaway Postgres
// (tests/support/postgres.mjs, fsync off), a pg.Pool of 20, the handler behind Node's http
// server, clients in this same process (so the numbers include HTTP and JSON on both sides,
// and share the CPU with the clients). Never fails on a number.
//
//   node bench/server.mjs [--seconds N]   (pkg/ must be built: ./scripts/build-pkg.sh)
//
// Rows: one client committing one after another on one thread (p50/p99 of a commit), then
// D devices × T threads committing as fast as answers come back (commits per second, p99).

import fs from "node:fs";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { startStoreServer } from "../tests/support/store-server.mjs";

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "..");
const seconds = Number(process.argv[process.argv.indexOf("--seconds") + 1]) || 5;
const [first] = JSON.parse(fs.readFileSync(path.join(root, "tests/server/fixtures/long-chat.json"),
  "utf8")).commits;

const s = await startStoreServer({ poolSize: 20 });
const quantile = (xs, q) => xs.slice().sort((a, b) => a - b)[Math.floor((xs.length - 1) * q)];

/** One device's commits on one thread, each from the version the last answer gave. */
async function device(thread, owner, until, latencies) {
  let version = 0;
  let n = 0;
  while (performance.now() < until) {
    const body = { ...first, commitId: `${owner}:${n++}`, expectedVersion: version, owner,
      keep: false };
    const t = performance.now();
    const r = await fetch(`${s.url}/threads/${encodeURIComponent(thread)}/commit`, {
      method: "POST", body: JSON.stringify(body),
      headers: { authorization: "Bearer alice", "content-type": "application/json" },
    });
    const answer = await r.json();
    latencies.push(performance.now() - t);
    if (r.status === 200) version = answer.record.version;
    else if (answer.error?.code === "conflict") version = answer.error.found;
    else throw new Error(JSON.stringify(answer));
  }
}

const rows = [];
{
  const lat = [];
  await device("alice:bench-seq", "d0", performance.now() + seconds * 1000, lat);
  rows.push(["1 device × 1 thread", lat.length / seconds, quantile(lat, 0.5), quantile(lat, 0.99)]);
}
for (const [devices, threads] of [[4, 4], [16, 16], [32, 8]]) {
  const lat = [];
  const until = performance.now() + seconds * 1000;
  await Promise.all(Array.from({ length: devices }, (_, d) =>
    device(`alice:bench-${devices}-${d % threads}`, `d${d}`, until, lat)));
  rows.push([`${devices} devices × ${threads} threads`, lat.length / seconds, quantile(lat, 0.5),
    quantile(lat, 0.99)]);
}
await s.close();
console.log("| load | commits/s | p50 ms | p99 ms |\n|---|---|---|---|");
for (const [name, rate, p50, p99] of rows) {
  console.log(`| ${name} | ${rate.toFixed(0)} | ${p50.toFixed(1)} | ${p99.toFixed(1)} |`);
}
