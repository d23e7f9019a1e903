#!/usr/bin/env node
// Runs the end-to-end browser suite: starts the model server twice (the page's origin, serving
// the repo as static files, and a second origin for CORS), launches the system Chromium once,
// runs tests/browser/*.test.mjs with node:test against them, then stops everything. Exits
// non-zero when any test fails, when the suite exceeds its deadline, or on a setup error.
//
//   node tests/browser/run.mjs [--browser chromium|firefox|webkit] [--core] [--pkg DIR]
//                              [--deadline SECONDS] [node --test args / test files...]
//
// --browser   the engine (GATEHOUSE_BROWSER; default chromium), see engines.mjs. Chromium is
//             launched once here; Firefox and WebKit once per test file (WebKit under xvfb-run).
// --core      only the core scenarios (CORE below), the subset `make test` runs in every engine.
// --pkg DIR   serve /pkg/* to the pages from DIR instead of the repo's pkg/ (GATEHOUSE_E2E_PKG).
// --deadline  default 480 s (Chromium; 720 s for the others) plus the stress test's durations
//             (GATEHOUSE_STRESS_SECONDS and GATEHOUSE_STRESS_NOLOCK_SECONDS, 60 + 30 by
//             default). A guard against a hung suite, not a speed check: Chromium's whole
//             suite has taken more than 360 s on a 2-core machine busy with a wasm build.
// Anything else is passed to `node --test` (e.g. --test-name-pattern=abort, or test files).

import { chromium } from 'playwright-core';
import { spawn } from 'node:child_process';
import { existsSync, mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { ROOT, launchOptions, stressConfig } from './harness.mjs';
import { engineName, engineVersion } from './engines.mjs';

const HERE = path.join(ROOT, 'tests', 'browser');
const SERVER = path.join(ROOT, 'tests', 'model-server', 'server.mjs');

// stress.test.mjs runs for as long as its environment variables say (README): the deadline and
// the per-file timeout (node --test's --test-timeout bounds a whole file) grow with it.
const STRESS = stressConfig();
const FILE_TIMEOUT_S = Math.max(120, STRESS.budgetSeconds + 30);

/**
 * The core scenarios: file and test-name pattern (anchored, so they select nothing else in
 * these files). What an app relies on in every engine: init; streaming; gating, approve and
 * reject; reload mid-approval; two tabs on one thread, and a tab that finds another running
 * the thread's tool; errors compared by `code`; the multi-tab stress test; MCP tools listed,
 * gated and called once, after a reload and from two tabs.
 */
const CORE = [
  ['package.test.mjs', '^pkg/ as built initialises'],
  ['events.test.mjs', '^(openai|anthropic) stream: events of a suspended turn'],
  ['approval.test.mjs', '^(approve|reject)'],
  ['storage.test.mjs', '^reload mid-approval'],
  ['concurrency.test.mjs', '^(two tabs on one thread|conflict: a message while approvals are pending)'],
  ['exactly-once.test.mjs', '^a tab opening the thread while another runs its approved tool'],
  ['api.test.mjs', '^invalid configuration is a GatehouseError'],
  ['providers.test.mjs', '^an unreachable model server: network error'], // each engine words it differently
  ['stress.test.mjs', ' on one thread with(out)? Web Locks'],
  ['status-while-running.test.mjs', '^status\\(\\) is "running" in the agent that runs it'],
  ['mcp.test.mjs', '^(listed and namespaced|reload mid-approval, then approve|two tabs on one thread approve|a page that died while its tools/call)'],
  ['elicitation.test.mjs', '^(a form: shown|the ui kit)'],
];

function parseArgs(argv) {
  const out = { pkg: process.env.GATEHOUSE_E2E_PKG, engine: engineName(), core: false, deadline: undefined, rest: [] };
  for (let i = 0; i < argv.length; i++) {
    const [flag, inline] = argv[i].split(/=(.*)/s, 2);
    const value = () => inline ?? argv[++i];
    if (flag === '--pkg') out.pkg = path.resolve(value());
    else if (flag === '--deadline') out.deadline = Number(value());
    else if (flag === '--browser') out.engine = engineName({ GATEHOUSE_BROWSER: value() });
    else if (flag === '--core') out.core = true;
    else out.rest.push(argv[i]);
  }
  // Firefox and WebKit start a browser per file (Firefox ≈ 6 s here) and run slower pages.
  out.deadline ??= (out.engine === 'chromium' ? 480 : 720) + STRESS.seconds + STRESS.nolockSeconds;
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
    let browser = null;
    if (args.engine === 'chromium') {
      browser = await chromium.launchServer({ ...launchOptions(), handleSIGINT: false, handleSIGTERM: false, handleSIGHUP: false });
      cleanups.push(() => browser.close());
    }
    console.log(`engine: ${args.engine}, ${engineVersion(args.engine)}${args.core ? ' (core scenarios)' : ''}`);
    console.log(`model servers: ${page.url} (page + static), ${other.url} (second origin)${browser ? `; chromium: ${browser.wsEndpoint()}` : ''}`);
    if (args.pkg) console.log(`serving /pkg/* from ${args.pkg}`);

    const core = new Map(CORE);
    const files = args.rest.some((a) => a.endsWith('.mjs'))
      ? []
      // The long stress test first, so the other files run beside it instead of after it.
      : readdirSync(HERE).filter((f) => f.endsWith('.test.mjs') && (!args.core || core.has(f)))
        .sort((a, b) => (b === 'stress.test.mjs') - (a === 'stress.test.mjs') || a.localeCompare(b))
        .map((f) => path.join(HERE, f));
    const patterns = args.core ? CORE.map(([, p]) => `--test-name-pattern=${p}`) : [];
    const nodeArgs = ['--test', '--test-concurrency=2', `--test-timeout=${FILE_TIMEOUT_S * 1000}`, '--test-reporter=spec', ...patterns, ...args.rest, ...files];
    // WebKitGTK needs a display: one Xvfb for the whole run when there is none.
    const [cmd, cmdArgs] = args.engine === 'webkit' && !process.env.DISPLAY
      ? ['xvfb-run', ['-a', process.execPath, ...nodeArgs]]
      : [process.execPath, nodeArgs];
    runner = spawn(cmd, cmdArgs, {
      cwd: ROOT,
      stdio: 'inherit',
      detached: true, // its own process group: on timeout the test files' processes go with it
      env: {
        ...process.env,
        GATEHOUSE_E2E_URL: page.url,
        GATEHOUSE_E2E_URL2: other.url,
        GATEHOUSE_BROWSER: args.engine,
        ...(browser ? { GATEHOUSE_E2E_WS: browser.wsEndpoint() } : {}),
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
