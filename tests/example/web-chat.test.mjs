#!/usr/bin/env node
// The example Rust web app (examples/web-chat: the Rust API only, plain web-sys) built as a
// user builds it (cargo for wasm32, then the wasm-bindgen CLI) and driven in headless Chromium:
// a gated call waits, a reload in the middle of the approval shows the same card, approve runs
// the tool once, and the demo model answers. Screenshots go to test-output/example/.
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { mkdirSync, rmSync } from 'node:fs';
import path from 'node:path';
import { test } from 'node:test';
import { fileURLToPath } from 'node:url';
import { chromium } from 'playwright-core';
import { startServer } from '../model-server/server.mjs';

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../..');
const app = path.join(root, 'examples/web-chat');
const out = path.join(root, 'test-output/example');

test('the Rust web app: a card, a reload mid-approval, approve runs the tool once', { timeout: 600_000 }, async () => {
  const run = (cmd, args) => execFileSync(cmd, args, { cwd: root, stdio: ['ignore', 'inherit', 'inherit'] });
  run('cargo', ['build', '-p', 'gatehouse-example-web-chat', '--target', 'wasm32-unknown-unknown']);
  rmSync(path.join(app, 'pkg'), { recursive: true, force: true });
  run('wasm-bindgen', ['target/wasm32-unknown-unknown/debug/gatehouse_example_web_chat.wasm',
    '--target', 'web', '--out-dir', path.join(app, 'pkg')]);
  mkdirSync(out, { recursive: true });

  const server = await startServer({ staticDir: app, port: 0, ttlSeconds: 600 });
  const browser = await chromium.launch({
    executablePath: process.env.CHROMIUM_PATH || '/usr/bin/chromium',
    headless: true,
    args: ['--headless', '--no-sandbox', '--disable-gpu', '--disable-quic', '--no-first-run',
      '--disable-background-networking', '--disable-component-update', '--disable-sync'],
  });
  try {
    const page = await browser.newPage({ viewport: { width: 900, height: 800 } });
    const errors = [];
    page.on('pageerror', (e) => errors.push(String(e)));
    page.on('console', (m) => { if (m.type() === 'error') errors.push(m.text()); });
    const ready = () => page.locator('body[data-ready]').waitFor({ timeout: 60_000 });
    await page.goto(`${server.url}/`);
    await ready();

    await page.fill('#message', 'delete C:/old_logs.txt');
    await page.press('#message', 'Enter');
    const card = page.locator('.card');
    await card.waitFor();
    const callId = await card.getAttribute('data-call-id');
    assert.match(await card.innerText(), /delete_file.*C:\/old_logs\.txt/s);
    assert.equal(await page.locator('#deleted li').count(), 0, 'nothing runs before the decision');
    await page.screenshot({ path: path.join(out, '1-card.png') });

    // A reload in the middle of the approval: the stored thread shows the same card.
    await page.reload();
    await ready();
    await card.waitFor();
    assert.equal(await card.getAttribute('data-call-id'), callId);
    assert.match(await page.locator('#transcript').innerText(), /delete C:\/old_logs\.txt/);

    await card.getByRole('button', { name: 'Approve' }).click();
    await page.locator('#deleted li').first().waitFor();
    await page.waitForFunction(() => !document.body.hasAttribute('data-busy') && !document.querySelector('.card'));
    assert.deepEqual(await page.locator('#deleted li').allInnerTexts(), ['C:/old_logs.txt'], 'the tool ran once');
    assert.match(await page.locator('#transcript').innerText(), /\(demo\)/, 'the model answered after the tool');
    await page.screenshot({ path: path.join(out, '2-approved.png') });

    // Reloaded again: nothing waits, nothing runs again.
    await page.reload();
    await ready();
    assert.equal(await card.count(), 0);
    assert.equal(await page.locator('#deleted li').count(), 0);
    assert.equal(await page.locator('#error').innerText(), '');
    assert.deepEqual(errors, []);
  } finally {
    await browser.close();
    await server.close();
  }
});
