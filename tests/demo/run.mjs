#!/usr/bin/env node
// Runs the demo's end-to-end tests in one process: one static + model server (port 0) and
// one headless Chromium shared by every test (tests/demo/harness.mjs), closed at the end.
//
//   node tests/demo/run.mjs            every tests/demo/*.test.mjs
//   node tests/demo/run.mjs offline    only the files whose name contains "offline"
//
// Needs pkg/ (./scripts/build-pkg.sh) and /usr/bin/chromium (or CHROMIUM_PATH).
// engines.test.mjs, the smoke test, runs in the engine GATEHOUSE_BROWSER names, with its own
// browser (`GATEHOUSE_BROWSER=webkit xvfb-run -a node tests/demo/run.mjs engines`).
// Screenshots go to test-output/demo/. Exits non-zero when a test fails.

import { readdirSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';

const dir = path.dirname(fileURLToPath(import.meta.url));
const filters = process.argv.slice(2);
const files = readdirSync(dir)
  .filter((f) => f.endsWith('.test.mjs'))
  .filter((f) => filters.length === 0 || filters.some((x) => f.includes(x)))
  .sort();
if (files.length === 0) {
  console.error(`no test file matches ${filters.join(', ')}`);
  process.exit(2);
}

// A hard stop, whatever hangs: a guard, not a speed check (every test has its own timeout).
// The suite takes 140 s alone on 2 cores; in a clean-clone CI run it went past the former 170 s
// with nothing hung (its re-entrancy matrix, 30 page loads, took 63 s of it).
const LIMIT_MS = 600_000;
setTimeout(() => {
  console.error(`demo tests: still running after ${LIMIT_MS / 1000} s, giving up`);
  process.exit(1);
}, LIMIT_MS).unref();

// node:test runs the tests these imports register, in order, then the harness's `after`
// hook closes the browser and the server; a failure sets process.exitCode to 1.
for (const f of files) await import(pathToFileURL(path.join(dir, f)).href);
