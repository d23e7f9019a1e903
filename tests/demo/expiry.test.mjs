// An approval that nobody decides in time (the tool's approvalTimeout): the card turns into
// "Expired, not run" by itself, with no click and no reload, its buttons go inert, the tool
// never runs, the model is told (the demo model says nobody decided in time), and the message
// box unlocks.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { newPage, send, shot, waitForAssistant, waitReady, harness } from './harness.mjs';

test('expiry: the card shows the expired request as it happens; nothing runs; the box unlocks', { timeout: 60_000 }, async () => {
  const { page, done } = await newPage({ viewport: { width: 900, height: 1000 } });
  try {
    const h = await harness();
    await page.goto(`${h.url}/tests/demo/expiry.html`);
    const widget = page.locator('gatehouse-chat');
    await waitReady(page, 'gatehouse-chat');
    await send(page, 'Please delete C:/old.txt', widget);
    const card = widget.locator('.gh-card').first();
    await card.waitFor();
    const input = widget.locator('.gh-input');
    assert.equal(await input.isDisabled(), true, 'locked while the call waits');
    // No click: the SDK's timer expires the request and the view follows its notice.
    await widget.locator('.gh-call[data-state="expired"], .gh-card[data-state="expired"]').first().waitFor({ timeout: 10_000 });
    assert.match(await waitForAssistant(widget, 'nobody decided in time'), /delete_file was not run: nobody decided in time/);
    await widget.locator('.gh-badge', { hasText: 'Expired, not run' }).first().waitFor();
    assert.deepEqual(await page.evaluate(() => window.ran), [], 'the expired call never ran');
    for (let i = 0; i < 50 && (await input.isDisabled()); i++) await page.waitForTimeout(100);
    assert.equal(await input.isDisabled(), false, 'unlocked once the request expired and the model answered');
    await shot(page, 'expiry-1-expired');
  } finally {
    await done();
  }
});
