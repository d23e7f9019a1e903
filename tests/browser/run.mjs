#!/usr/bin/env node
// Runs the end-to-end browser suite: starts the model server twice (the page's origin, serving
// the repo as static files, and a second origin for CORS), launches the system Chromium once,
// runs tests/browser/*.test.mjs with node:test against them, then stops everything. Exits
// non-zero when any test fails, when the suite exceeds its deadline, or on a setup error.
//
//   node tests/browser/run.mjs [--pkg DIR] [--deadline SECONDS] [node --test args / test files...]
//
// --pkg DIR   serve /pkg/* to the pages from DIR instead of the repo's pkg/ (GATEHOUSE_E2E_PKG).
// --deadline  default 270 s plus the stress test's durations (GATEHOUSE_STRESS_SECONDS and
//             GATEHOUSE_STRESS_NOLOCK_SECONDS, 60 + 30 by default).
// Anything else is passed to `node --test` (e.g. --test-name-pattern=abort, or test files).

import { chromium } from 'playwright-core';
import { spawn } from 'node:child_process';
import { existsSync, mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { ROOT, launchOptions, stressConfig } from './harness.mjs';

const HERE = path.join(ROOT, 'tests', 'browser');
const SERVER = path.join(ROOT, 'tests', 'model-server', 'server.mjs');

// stress.test.mjs runs for as long as its environment variables say (README): the deadline and
// the per-file timeout (node --test's --test-timeout bounds a whole file) grow with it.
const STRESS = stressConfig();
const FILE_TIMEOUT_S = Math.max(120, STRESS.budgetSeconds + 30);

function parseArgs(argv) {
  const out = { pkg: process.env.GATEHOUSE_E2E_PKG, deadline: 270 + STRESS.seconds + STRESS.nolockSeconds, rest: [] };
  for (let i = 0; i < argv.length; i++) {
    const [flag, inline] = argv[i].split(/=(.*)/s, 2);
    const value = () => inline ?? argv[++i];
    if (flag === '--pkg') out.pkg = path.resolve(value());
    else if (flag === '--deadline') out.deadline = Number(value());
    else out.rest.push(argv[i]);
  }
  return out;
}

const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

/** Starts one model server process; resolves to { url, child } once its port file exists. */
async function startModelServer(tmp, name, extra = []) {
  const portFile = path.join(tmp, `${name}.port`);
  const child = spawn(process.execPath, [SERVER, '--port', '0', '--port-file', portFile, '--ttl-seconds', '600', ...extra], {
    stdio: ['ignore', 'ignore', 'inherit'],
  });
  const exited = new Promise((resolve) => child.once('exit', resolve));
  for (let waited = 0; waited < 10_000; waited += 50) {
    if (existsSync(portFile)) return { url: `http://127.0.0.1:${readFileSync(portFile, 'utf8').trim()}`, child, exited };
    if (child.exitCode !== null) break;
    await sleep(50);
  }
  child.kill('SIGKILL');
  throw new Error(`model server "${name}" did not start`);
}

async function main() {
  const args = parseArgs(process.argv.slice(2));
  const pkgDir = args.pkg ?? path.join(ROOT, 'pkg');
  if (!existsSync(path.join(pkgDir, 'gatehouse.js')) || !existsSync(path.join(pkgDir, 'gatehouse_bg.wasm'))) {
    console.error(`no package in ${pkgDir}: build it first with ./scripts/build-pkg.sh`);
    return 2;
  }
  const tmp = mkdtempSync(path.join(os.tmpdir(), 'gatehouse-e2e-'));
  const cleanups = [() => rmSync(tmp, { recursive: true, force: true })];
  let runner = null;
  const stop = async () => {
    if (runner && runner.exitCode === null) {
      try { process.kill(-runner.pid, 'SIGKILL'); } catch { /* already gone */ }
    }
    for (const c of cleanups.splice(0).reverse()) {
      try { await c(); } catch (e) { console.error('cleanup:', e.message); }
    }
  };
  const onSignal = (sig) => { stop().finally(() => process.exit(sig === 'SIGINT' ? 130 : 143)); };
  process.once('SIGINT', onSignal);
  process.once('SIGTERM', onSignal);

  try {
    const page = await startModelServer(tmp, 'page', ['--static', ROOT]);
    cleanups.push(async () => { page.child.kill('SIGTERM'); await Promise.race([page.exited, sleep(3000)]); });
    const other = await startModelServer(tmp, 'other');
    cleanups.push(async () => { other.child.kill('SIGTERM'); await Promise.race([other.exited, sleep(3000)]); });
    const browser = await chromium.launchServer({ ...launchOptions(), handleSIGINT: false, handleSIGTERM: false, handleSIGHUP: false });
    cleanups.push(() => browser.close());
    console.log(`model servers: ${page.url} (page + static), ${other.url} (second origin); chromium: ${browser.wsEndpoint()}`);
    if (args.pkg) console.log(`serving /pkg/* from ${args.pkg}`);

    const files = args.rest.some((a) => a.endsWith('.mjs'))
      ? []
      // The long stress test first, so the other files run beside it instead of after it.
      : readdirSync(HERE).filter((f) => f.endsWith('.test.mjs')).sort((a, b) => (b === 'stress.test.mjs') - (a === 'stress.test.mjs') || a.localeCompare(b))
        .map((f) => path.join(HERE, f));
    const nodeArgs = ['--test', '--test-concurrency=2', `--test-timeout=${FILE_TIMEOUT_S * 1000}`, '--test-reporter=spec', ...args.rest, ...files];
    runner = spawn(process.execPath, nodeArgs, {
      cwd: ROOT,
      stdio: 'inherit',
      detached: true, // its own process group: on timeout the test files' processes go with it
      env: {
        ...process.env,
        GATEHOUSE_E2E_URL: page.url,
        GATEHOUSE_E2E_URL2: other.url,
        GATEHOUSE_E2E_WS: browser.wsEndpoint(),
        ...(args.pkg ? { GATEHOUSE_E2E_PKG: args.pkg } : {}),
      },
    });
    const code = await new Promise((resolve) => {
      const timer = setTimeout(() => {
        console.error(`\nthe suite exceeded its ${args.deadline} s deadline: stopping it`);
        try { process.kill(-runner.pid, 'SIGKILL'); } catch { /* gone */ }
        resolve(124);
      }, args.deadline * 1000);
      runner.once('exit', (c, sig) => { clearTimeout(timer); resolve(c ?? (sig ? 1 : 0)); });
    });
    return code;
  } catch (e) {
    console.error(e);
    return 1;
  } finally {
    await stop();
  }
}

process.exit(await main());
