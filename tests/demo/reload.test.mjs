// Reload in the middle of an approval: the cards come back from IndexedDB with the
// decisions already made, the box is still locked, and the run finishes after the reload.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { newPage, openDemo, send, shot, waitForAssistant, waitReady } from './harness.mjs';

test('reload mid-approval: the cards come back from IndexedDB', { timeout: 60_000 }, async () => {
  const { page, done } = await newPage();
  try {
    await openDemo(page);
    await send(page, 'delete a.txt and email team@example.com');
    await page.locator('.gh-card').nth(1).waitFor();
    await page.locator('.gh-card').nth(0).locator('.gh-approve').click();
    await page.locator('.gh-card[data-state="approved"]').waitFor();
    const threadUrl = page.url();
    assert.match(threadUrl, /#thread=thread_/);

    await page.reload();
    await waitReady(page);
    assert.equal(page.url(), threadUrl);
    const cards = page.locator('.gh-card');
    await cards.nth(1).waitFor();
    assert.equal(await cards.count(), 2);
    assert.equal(await cards.nth(0).getAttribute('data-state'), 'approved');
    assert.equal(await cards.nth(1).getAttribute('data-state'), 'pending');
    assert.equal(await cards.nth(1).locator('.gh-card-reason').innerText(),
      'Sends an email to team@example.com on your behalf; it cannot be unsent.');
    assert.equal(await page.locator('.gh-input').isDisabled(), true);
    assert.equal(await page.locator('.gh-messages .gh-user').innerText(), 'delete a.txt and email team@example.com');
    await page.locator('.thread[aria-current="true"] .thread-waiting').waitFor();
    await shot(page, 'reload-1-after-reload');

    // A fresh load (no hash) reopens the last thread too.
    await page.goto(threadUrl.replace(/#.*$/, ''));
    await waitReady(page);
    await page.locator('.gh-card').nth(1).waitFor();

    await page.locator('.gh-card').nth(1).locator('.gh-approve').click();
    const summary = await waitForAssistant(page, 'Tool results');
    assert.match(summary, /delete_file returned: \{"deleted":"a.txt"\}/);
    assert.match(summary, /send_email returned/);
    await shot(page, 'reload-2-done');
  } finally {
    await done();
  }
});
