// The demo with its "In-browser model" setting (www/settings.js): the test model is put where
// `make demo` serves it (scripts/serve-demo.sh copies it to target/demo/models/), the settings
// dialog selects it, and a message shows the UI kit's progress bar, then a call to one of the
// demo's tools, constrained by the grammar, as any model's call is shown. Then, offline, the
// demo reloads and the model answers again from this device.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { copyFileSync, mkdirSync, statSync } from 'node:fs';
import path from 'node:path';
import { newPage, openDemo, send, shot, waitReady, ROOT } from '../demo/harness.mjs';
import { modelPath } from './server.mjs';

const NAME = 'SmolLM2-135M-Instruct.Q4_1.gguf';

// Each wait is bounded (240 s at most) and the test's own bound is above their sum's likely
// worst case, so a slow machine fails with the step it was at (and a screenshot), not with the
// runner's bare timeout: in a clean-clone CI run with the machine also busy building, the
// three answers took the test past its former 300 s.
test('demo: the in-browser model loads with a progress bar, answers with a tool call, and again offline', { timeout: 900_000 }, async () => {
  const dest = path.join(ROOT, 'target/demo/models', NAME);
  mkdirSync(path.dirname(dest), { recursive: true });
  if (statSync(dest, { throwIfNoEntry: false })?.size !== statSync(modelPath()).size) copyFileSync(modelPath(), dest);
  const { page, context, done } = await newPage();
  let at = 'opening the demo';
  const started = Date.now();
  const step = (what) => { at = what; console.log(`# demo local: ${what} (${Math.round((Date.now() - started) / 1000)} s)`); };
  try {
    await openDemo(page);
    // The service worker has the shell; it keeps pkg/local/ once the model's page fetched it.
    await page.locator('html[data-offline="ready"]').waitFor({ timeout: 30_000 });
    await page.locator('#open-settings').click();
    await page.locator('input[name="provider"][value="local"]').check();
    assert.equal(await page.locator('input[name="localUrl"]').inputValue(), `/target/demo/models/${NAME}`);
    assert.equal(await page.locator('#remote-fields').isHidden(), true);
    await page.locator('#settings-save').click();
    await page.locator('#settings-dialog').waitFor({ state: 'hidden' });
    assert.match(await page.locator('#model-label').innerText(), /In-browser model/);
    step('sending the first message');
    await send(page, 'Delete C:/old_logs.txt');
    const bar = page.locator('.gh-model-progress');
    await bar.waitFor({ timeout: 30_000 });
    assert.match(await page.locator('.gh-model-loading').innerText(), /Downloading the model|Reading the model|Loading the model/);
    await shot(page, 'local-1-progress');
    // The demo asks for a call (toolChoice "required"); at temperature 0 the model names
    // delete_file, a gated tool: its card, with inputs the schema allows.
    step("waiting for the model's call");
    const card = page.locator('.gh-card');
    await card.waitFor({ timeout: 240_000 });
    await shot(page, 'local-2-call');
    assert.match(await card.innerText(), /delete_file/);
    const inputs = JSON.parse(await card.locator('.gh-card-inputs').textContent());
    assert.deepEqual(Object.keys(inputs), ['path']);
    step('approving; waiting for the answer');
    await card.locator('.gh-approve').click();
    // After the result, the model answers in text (the demo has no file of that name, or had).
    await page.locator('.gh-messages .gh-assistant .gh-bubble').last().waitFor({ timeout: 240_000 });
    await page.locator('.gh-composer[data-busy="false"]').waitFor({ timeout: 240_000 });
    await shot(page, 'local-3-answer');
    assert.equal(await page.locator('.gh-model-loading:not([hidden])').count(), 0, 'the bar is gone once loaded');

    // After one load, offline: the demo reloads and the model answers from this device.
    step('offline: reloading');
    await context.setOffline(true);
    await page.reload();
    await waitReady(page);
    await page.locator('#new-thread').click();
    await page.locator('.gh-empty').waitFor();
    await send(page, 'Delete C:/old_logs.txt');
    step("offline: waiting for the model's call");
    await page.locator('.gh-card').waitFor({ timeout: 240_000 });
    await shot(page, 'local-4-offline');
    assert.match(await page.locator('.gh-card').innerText(), /delete_file/);
  } catch (e) {
    await shot(page, 'local-failed').catch(() => {});
    e.message = `${e.message} (at: ${at}, ${Math.round((Date.now() - started) / 1000)} s in)`;
    throw e;
  } finally {
    await done();
  }
});
