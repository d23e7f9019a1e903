// On a 360×640 phone screen the deny-reason box keeps its buttons in view: opening it
// scrolls the reason box and its Deny and Cancel buttons into the visible part of the log,
// above the message box, and nothing covers them.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { newPage, openDemo, send, shot, waitForAssistant } from './harness.mjs';

/** Whether `locator`'s element is wholly inside the log's visible area and the viewport, and on top. */
async function inView(locator) {
  return locator.evaluate((el) => {
    const r = el.getBoundingClientRect();
    const log = el.closest('.gh-log').getBoundingClientRect();
    const top = document.elementFromPoint(r.left + r.width / 2, r.top + r.height / 2);
    return {
      inside: r.top >= Math.max(0, log.top) - 1 && r.bottom <= Math.min(innerHeight, log.bottom) + 1 && r.left >= 0 && r.right <= innerWidth + 1,
      onTop: top === el || el.contains(top),
    };
  });
}

test('360×640: the deny-reason box keeps its buttons in view', { timeout: 60_000 }, async () => {
  const { page, done } = await newPage({ viewport: { width: 360, height: 640 } });
  try {
    await openDemo(page);
    await send(page, 'delete C:/old_logs.txt and email team@example.com about it');
    const cards = page.locator('.gh-card');
    await cards.nth(1).waitFor();
    await shot(page, 'small-1-cards');
    for (const i of [0, 1]) {
      const card = cards.nth(i);
      // The reader scrolled so that Deny… is the last thing above the message box, and taps it.
      // (Events, not Playwright's click and fill: those scroll their target into view themselves.)
      const deny = card.locator('.gh-deny');
      await deny.evaluate((el) => {
        const log = el.closest('.gh-log');
        log.scrollTop += el.getBoundingClientRect().bottom - log.getBoundingClientRect().bottom + 4;
      });
      assert.deepEqual(await inView(deny), { inside: true, onTop: true });
      await deny.dispatchEvent('click');
      const reason = card.locator('.gh-deny-reason');
      await reason.waitFor();
      await page.waitForTimeout(300);
      const buttons = [reason, card.locator('.gh-confirm-deny'), card.locator('.gh-cancel-deny')];
      for (const el of buttons) {
        assert.deepEqual(await inView(el), { inside: true, onTop: true }, `card ${i}: ${await el.evaluate((e) => e.className)} in view`);
      }
      // A long reason grows the box; its buttons stay in view.
      await page.keyboard.type('Not this one, please keep it for the audit next week.\nAnd tell me first.\nThanks.');
      await page.waitForTimeout(300);
      for (const el of buttons) {
        assert.deepEqual(await inView(el), { inside: true, onTop: true }, `card ${i}, typed: ${await el.evaluate((e) => e.className)} in view`);
      }
      await shot(page, `small-${i + 2}-deny-open`);
      await card.locator('.gh-confirm-deny').dispatchEvent('click');
      if (i === 0) await card.locator('.gh-badge', { hasText: 'Denied' }).waitFor(); // the last decision runs the set
    }
    await waitForAssistant(page, 'Tool results');
  } finally {
    await done();
  }
});
