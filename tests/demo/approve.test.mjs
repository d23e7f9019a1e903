// Approve flow: a gated call shows one card; approving it runs the tool and the demo model
// summarises the real result.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { newPage, openDemo, send, shot, waitForAssistant } from './harness.mjs';

test('approve: the card runs the tool once approved', { timeout: 60_000 }, async () => {
  const { page, done } = await newPage();
  try {
    await openDemo(page);
    await shot(page, 'approve-0-empty');
    await send(page, 'Please delete C:/old_logs.txt');

    const card = page.locator('.gh-card');
    await card.waitFor();
    assert.equal(await card.count(), 1);
    assert.equal(await card.locator('.gh-card-name').innerText(), 'Delete file');
    assert.equal(await card.locator('.gh-card-tech').innerText(), 'delete_file');
    // One row per argument, beside its schema description; the raw JSON behind "Raw JSON".
    assert.equal(await card.locator('.gh-arg[data-arg="path"] .gh-arg-value').innerText(), 'C:/old_logs.txt');
    assert.equal(await card.locator('.gh-arg[data-arg="path"] .gh-arg-desc').innerText(), 'Path of the file to delete');
    assert.deepEqual(JSON.parse(await card.locator('.gh-card-inputs').textContent()), { path: 'C:/old_logs.txt' });
    assert.equal(await card.getAttribute('data-state'), 'pending');
    // requireApproval: true with the tool's static approvalReason: the card says why it asks.
    assert.equal(await card.locator('.gh-card-reason').innerText(), 'Deleting a file cannot be undone.');
    assert.equal(await page.locator('.gh-input').isDisabled(), true);
    // The thread shows up in the list, marked as waiting.
    await page.locator('.thread[aria-current="true"] .thread-waiting').waitFor();
    await shot(page, 'approve-1-card');

    await card.locator('.gh-approve').click();
    const summary = await waitForAssistant(page, 'Tool results');
    // The demo model's "- " list is rendered as Markdown: a list item.
    assert.match(summary, /^\(demo\) Tool results:\n\ndelete_file returned: \{"deleted":"C:\/old_logs.txt"\}/);
    assert.equal(await page.locator('.gh-messages .gh-assistant .gh-md li', { hasText: 'delete_file returned' }).count(), 1);
    await page.locator('.gh-approvals').waitFor({ state: 'hidden' });
    const line = page.locator('.gh-call[data-state="approved"]');
    assert.match(await line.innerText(), /Delete file[\s\S]*Approved/);
    assert.equal(await page.locator('.gh-input').isDisabled(), false);
    await page.locator('.thread[aria-current="true"] .thread-waiting').waitFor({ state: 'detached' });

    // The fake file system really changed: list_files no longer has the file.
    await send(page, 'Run list_files');
    const listing = await waitForAssistant(page, 'list_files returned');
    assert.doesNotMatch(listing, /old_logs/);
    assert.match(listing, /a\.txt/);
    await shot(page, 'approve-2-done');

    // A phone-sized window: the thread list folds into a menu.
    await page.setViewportSize({ width: 390, height: 760 });
    await page.waitForTimeout(400); // the sidebar slides away (a CSS transition)
    await send(page, 'delete a.txt');
    await page.locator('.gh-card').waitFor();
    await shot(page, 'approve-3-narrow-card');
    await page.locator('#menu-btn').click();
    await page.locator('.thread[aria-current="true"]').waitFor();
    await page.waitForTimeout(250); // the slide-in transition
    await shot(page, 'approve-4-narrow-menu');
  } finally {
    await done();
  }
});
