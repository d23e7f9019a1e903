// The per-thread tools panel: "Always allow" lets a gated tool run without a card, a
// disabled tool is not offered to the model, and a new thread starts from the defaults.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { newPage, openDemo, send, shot, waitForAssistant, waitReady } from './harness.mjs';

test('tools panel: always allow, disable, per thread', { timeout: 60_000 }, async () => {
  const { page, done } = await newPage();
  try {
    await openDemo(page);
    await send(page, 'hello');
    await waitForAssistant(page, 'You said: hello');

    await page.locator('#open-tools').click();
    const row = (name) => page.locator(`.tool-row[data-tool="${name}"]`);
    await row('delete_file').waitFor();
    assert.equal(await row('list_files').locator('input[name="autoApprove"]').isDisabled(), true, 'list_files never asks');
    await row('delete_file').locator('input[name="autoApprove"]').check();
    await row('send_email').locator('input[name="enabled"]').uncheck();
    await page.waitForFunction(() => {
      const p = window.__gatehouseDemo.state.agent.toolPolicies();
      return p.delete_file.autoApprove === true && p.send_email.enabled === false;
    });
    await shot(page, 'tools-1-panel');
    await page.locator('#tools-dialog [data-close]').last().click();

    // delete_file now runs without a card.
    await send(page, 'delete a.txt');
    const summary = await waitForAssistant(page, 'delete_file returned');
    assert.match(summary, /\{"deleted":"a.txt"\}/);
    assert.equal(await page.locator('.gh-card').count(), 0);
    assert.match(await page.locator('.gh-call').last().innerText(), /Ran automatically/);
    // send_email is not offered to the model at all.
    await send(page, 'email team@example.com');
    const answer = await waitForAssistant(page, 'You said: email team@example.com');
    assert.doesNotMatch(answer, /send_email/);

    // The policies were saved with the thread: a reload keeps them.
    await page.reload();
    await waitReady(page);
    let policies = await page.evaluate(() => window.__gatehouseDemo.state.agent.toolPolicies());
    assert.equal(policies.delete_file.autoApprove, true);
    assert.equal(policies.send_email.enabled, false);

    // A new thread inherits nothing.
    await page.locator('#new-thread').click();
    await page.locator('.gh-empty').waitFor();
    policies = await page.evaluate(() => window.__gatehouseDemo.state.agent.toolPolicies());
    assert.deepEqual(policies, {
      delete_file: { enabled: true, autoApprove: false },
      send_email: { enabled: true, autoApprove: false },
      list_files: { enabled: true, autoApprove: false },
    });
    await page.locator('#open-tools').click();
    assert.equal(await row('delete_file').locator('input[name="autoApprove"]').isChecked(), false);
    assert.equal(await row('send_email').locator('input[name="enabled"]').isChecked(), true);
  } finally {
    await done();
  }
});
