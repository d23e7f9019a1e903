// Shared by the local model tests: the server (server.mjs) and headless Chromium with a
// persistent profile, so Cache Storage and the service worker outlive a reload.
import { chromium } from 'playwright-core';
import { mkdtempSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { startLocalServer } from './server.mjs';

export const ARGS = [
  '--headless', '--no-sandbox', '--disable-gpu', '--disable-quic', '--no-first-run',
  '--disable-background-networking', '--disable-component-update', '--disable-sync',
];

/** `args`: Chromium's flags (default ARGS); `isolated`: the pages cross-origin isolated. */
export async function start({ args = ARGS, isolated = true } = {}) {
  const server = await startLocalServer({ isolated });
  const dir = mkdtempSync(path.join(os.tmpdir(), 'gatehouse-local-'));
  const context = await chromium.launchPersistentContext(dir, {
    executablePath: process.env.CHROMIUM_PATH || '/usr/bin/chromium',
    headless: true,
    args,
    timeout: 90_000, // a loaded 2-core machine has taken more than 30 s to start Chromium
  });
  const page = context.pages()[0] ?? await context.newPage();
  const log = [];
  page.on('console', (m) => {
    log.push(`${m.type()}: ${m.text()}`);
    if (process.env.GATEHOUSE_E2E_VERBOSE) console.log(`[page] ${m.type()}: ${m.text()}`);
  });
  page.on('pageerror', (e) => log.push(`pageerror: ${e.message}`));
  return {
    server,
    context,
    page,
    log,
    async goto() {
      await page.goto(`${server.url}/tests/local/page.html`);
      await page.waitForFunction(() => window.ready === true, null, { timeout: 30_000 });
    },
    async close() {
      await context.close().catch(() => {});
      await server.close();
      rmSync(dir, { recursive: true, force: true });
    },
  };
}

export const MODEL_BYTES = 98_362_432;
