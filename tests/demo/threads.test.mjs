// The thread list: new thread, switch, delete (two-step), titles from the first message.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { newPage, openDemo, send, shot, waitForAssistant } from './harness.mjs';

test('threads: new, switch, delete', { timeout: 60_000 }, async () => {
  const { page, done } = await newPage();
  try {
    await openDemo(page);
    await send(page, 'hello from thread A');
    await waitForAssistant(page, 'You said: hello from thread A');
    await page.locator('#new-thread').click();
    await page.locator('.gh-empty').waitFor();
    await send(page, 'email team@example.com from thread B');
    await page.locator('.gh-card').waitFor();

    const items = page.locator('.thread .thread-name');
    await page.waitForFunction(() => document.querySelectorAll('.thread').length === 2);
    assert.deepEqual(await items.allInnerTexts(), ['email team@example.com from thread B', 'hello from thread A']);
    assert.match(await page.locator('.thread').nth(0).innerText(), /needs approval/);
    await shot(page, 'threads-1-two');

    // Switch to A: its messages, no card, the box unlocked.
    await page.locator('.thread-open', { hasText: 'thread A' }).click();
    await waitForAssistant(page, 'You said: hello from thread A');
    assert.equal(await page.locator('.gh-card').count(), 0);
    assert.equal(await page.locator('.gh-input').isDisabled(), false);
    assert.equal(await page.locator('#thread-title').innerText(), 'hello from thread A');
    // And back to B: its pending card.
    await page.locator('.thread-open', { hasText: 'thread B' }).click();
    await page.locator('.gh-card').waitFor();
    assert.equal(await page.locator('.gh-input').isDisabled(), true);

    // Delete B (the open one): the first click arms, the second deletes; A opens.
    const delB = page.locator('.thread', { hasText: 'thread B' }).locator('.thread-delete');
    await delB.click();
    assert.match(await delB.innerText(), /Delete\?/);
    await delB.click();
    await page.waitForFunction(() => document.querySelectorAll('.thread').length === 1);
    await waitForAssistant(page, 'You said: hello from thread A');
    const left = await page.evaluate(async () => (await window.__gatehouseDemo.Agent.listThreads({ database: 'gatehouse-demo' })).map((t) => t.title));
    assert.deepEqual(left, ['hello from thread A']);

    // Delete A too: an empty new thread remains.
    const delA = page.locator('.thread', { hasText: 'thread A' }).locator('.thread-delete');
    await delA.click();
    await delA.click();
    await page.locator('.gh-empty').waitFor();
    assert.equal(await page.locator('.thread .thread-name').innerText(), 'New thread');
    assert.equal(await page.evaluate(async () => (await window.__gatehouseDemo.Agent.listThreads({ database: 'gatehouse-demo' })).length), 0);
    await shot(page, 'threads-2-deleted');
  } finally {
    await done();
  }
});
