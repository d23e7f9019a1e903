// "Always allow in this conversation" on a card (this thread's autoApprove, shown and
// revocable in the tools panel) and "Approve all" / "Deny all" when several calls wait.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { newPage, openDemo, send, shot, waitForAssistant } from './harness.mjs';

test('cards: always allow in this conversation, deny all, approve all', { timeout: 60_000 }, async () => {
  const { page, done } = await newPage({ viewport: { width: 1200, height: 1000 } });
  const policies = () => page.evaluate(() => window.__gatehouseDemo.state.agent.toolPolicies());
  try {
    await openDemo(page);
    const cards = page.locator('.gh-card');
    const bulk = page.locator('.gh-bulk');
    const card = (tool) => page.locator('.gh-card', { has: page.locator('.gh-card-tech', { hasText: tool }) });

    // Two calls wait: the bulk buttons show; Enter on "Approve all" decides nothing; Deny all.
    await send(page, 'delete C:/old_logs.txt and email team@example.com');
    await cards.nth(1).waitFor();
    assert.equal(await bulk.isVisible(), true);
    assert.deepEqual(await bulk.locator('.gh-btn:visible').allInnerTexts(), ['Approve all', 'Deny all']);
    await shot(page, 'bulk-1-two-cards');
    await page.locator('.gh-approve-all').focus();
    await page.keyboard.press('Enter');
    await page.waitForTimeout(300);
    assert.equal(await page.locator('.gh-card[data-state="pending"]').count(), 2, 'Enter did not approve');
    await page.locator('.gh-deny-all').click();
    const denied = await waitForAssistant(page, 'rejected');
    assert.doesNotMatch(denied, /returned/, 'nothing ran');
    assert.equal(await cards.count(), 0);

    // Always allow delete_file in this conversation: that call is approved, the policy stored;
    // with one call left waiting there are no bulk buttons.
    await send(page, 'delete a.txt and email b@example.com');
    await cards.nth(1).waitFor();
    await card('delete_file').locator('.gh-always').click();
    await card('delete_file').locator('.gh-badge', { hasText: 'Approved' }).waitFor();
    assert.equal((await policies()).delete_file.autoApprove, true);
    assert.equal(await bulk.isVisible(), false);
    assert.equal(await card('delete_file').locator('.gh-always').isVisible(), false, 'a decided card does not offer it');
    await card('send_email').locator('.gh-approve').click();
    await waitForAssistant(page, '{"deleted":"a.txt"}');

    // delete_file now runs without a card.
    await send(page, 'delete demo.txt');
    await waitForAssistant(page, '{"deleted":"demo.txt"}');
    assert.equal(await cards.count(), 0);

    // Revoked in the tools panel, it asks again; Approve all runs both calls.
    await page.locator('#open-tools').click();
    const auto = page.locator('.tool-row[data-tool="delete_file"] input[name="autoApprove"]');
    assert.equal(await auto.isChecked(), true, 'the tools panel shows the card\'s "always allow"');
    await auto.uncheck();
    await page.waitForFunction(() => window.__gatehouseDemo.state.agent.toolPolicies().delete_file.autoApprove === false);
    await page.locator('#tools-dialog [data-close]').last().click();
    await send(page, 'delete notes/todo.md and email c@example.com');
    await cards.nth(1).waitFor();
    await page.locator('.gh-approve-all').click();
    const summary = await waitForAssistant(page, '{"deleted":"notes/todo.md"}');
    assert.match(summary, /send_email returned/);
    await shot(page, 'bulk-2-done');
  } finally {
    await done();
  }
});
