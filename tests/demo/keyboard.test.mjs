// Everything is reachable by keyboard and shows where the focus is: Tab goes through the demo
// (and the widget) with approval cards showing; every element it reaches draws a focus
// indicator (an outline or a box-shadow that it does not have unfocused).
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { harness, newPage, openDemo, send, shot, waitReady } from './harness.mjs';

/** Presses Tab until focus comes back around; returns what each stop was and whether it showed focus. */
async function tabThrough(page, max = 80) {
  const stops = [];
  await page.locator('body').click({ position: { x: 1, y: 1 } });
  for (let i = 0; i < max; i++) {
    await page.keyboard.press('Tab');
    const stop = await page.evaluate(() => {
      let el = document.activeElement;
      while (el?.shadowRoot?.activeElement) el = el.shadowRoot.activeElement;
      if (!el || el === document.body) return null;
      const focused = getComputedStyle(el);
      const ring = (s) => (s.outlineStyle !== 'none' && parseFloat(s.outlineWidth) > 0 ? `outline ${s.outlineColor}` : '') +
        (s.boxShadow !== 'none' ? `shadow ${s.boxShadow}` : '');
      const withFocus = ring(focused);
      // The same element's look without focus: a clone in the same place.
      const clone = el.cloneNode(false);
      clone.removeAttribute('id');
      el.parentNode.insertBefore(clone, el);
      const without = ring(getComputedStyle(clone));
      clone.remove();
      const name = (el.getAttribute('aria-label') || el.textContent || el.getAttribute('placeholder') || '').trim().slice(0, 40);
      return { what: `${el.tagName.toLowerCase()}.${[...el.classList].join('.')} "${name}"`, visible: withFocus !== '' && withFocus !== without };
    });
    if (!stop) continue;
    if (stops.length && stop.what === stops[0].what) break;
    stops.push(stop);
  }
  return stops;
}

test('keyboard: every stop of the demo is reachable and shows focus', { timeout: 60_000 }, async () => {
  const { page, done } = await newPage();
  try {
    await openDemo(page);
    await send(page, 'delete C:/old_logs.txt and email team@example.com');
    await page.locator('.gh-card').nth(1).waitFor();
    const stops = await tabThrough(page);
    const names = stops.map((s) => s.what).join('\n');
    for (const want of ['New thread', 'Settings', 'Tools', 'Conversation', 'Approve all', 'Deny all', '"Approve"', '"Deny…"', '"Edit…"',
      'Always allow in this conversation', 'Raw JSON']) {
      assert.ok(names.includes(want), `Tab reaches ${want}:\n${names}`);
    }
    assert.deepEqual(stops.filter((s) => !s.visible).map((s) => s.what), [], 'stops without a visible focus indicator');
    await shot(page, 'keyboard-demo');
  } finally {
    await done();
  }
});

test('keyboard: the widget', { timeout: 60_000 }, async () => {
  const { page, done } = await newPage();
  try {
    const h = await harness();
    await page.goto(`${h.url}/www/article.html`);
    await waitReady(page, 'gatehouse-chat');
    const widget = page.locator('gatehouse-chat');
    await send(page, 'delete C:/old_logs.txt', widget);
    await widget.locator('.gh-card').waitFor();
    const stops = (await tabThrough(page)).filter((s) => /gh-|summary|textarea/.test(s.what));
    const names = stops.map((s) => s.what).join('\n');
    for (const want of ['Conversation', '"Approve"', '"Deny…"', 'Always allow in this conversation']) {
      assert.ok(names.includes(want), `Tab reaches ${want}:\n${names}`);
    }
    assert.deepEqual(stops.filter((s) => !s.visible).map((s) => s.what), [], 'stops without a visible focus indicator');
  } finally {
    await done();
  }
});
