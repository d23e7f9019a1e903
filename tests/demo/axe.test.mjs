// axe-core on the demo (light and dark, an approval card showing, an answer in Markdown) and on
// the widget page: no serious or critical violations. axe.min.js is injected into the page
// (the context bypasses the page's CSP for that script alone).
import { test } from 'node:test';
import assert from 'node:assert/strict';
import path from 'node:path';
import { ROOT, harness, newPage, openDemo, send, shot, waitReady } from './harness.mjs';

const AXE = path.join(ROOT, 'node_modules/axe-core/axe.min.js');

/** The serious and critical violations axe finds in the page, one line each. */
async function violations(page) {
  await page.addScriptTag({ path: AXE });
  const found = await page.evaluate(async () => {
    const r = await window.axe.run(document, { resultTypes: ['violations'] });
    return r.violations.filter((v) => v.impact === 'serious' || v.impact === 'critical')
      .map((v) => `${v.impact} ${v.id}: ${v.nodes.map((n) => `${n.target.join(' > ')} (${n.failureSummary.replace(/\s+/g, ' ')})`).join('; ')}`);
  });
  return found;
}

for (const colorScheme of ['light', 'dark']) {
  test(`axe: the demo in ${colorScheme}, with an answer and an approval card`, { timeout: 60_000 }, async () => {
    const { page, done } = await newPage({ colorScheme, bypassCSP: true });
    try {
      await openDemo(page);
      await send(page, 'hello');
      await page.locator('.gh-messages .gh-assistant .gh-md').waitFor();
      await send(page, 'delete C:/old_logs.txt and email team@example.com');
      await page.locator('.gh-card').nth(1).waitFor();
      await page.locator('.gh-card').first().locator('.gh-deny').click(); // the reason box, open
      await shot(page, `axe-demo-${colorScheme}`);
      assert.deepEqual(await violations(page), []);
    } finally {
      await done();
    }
  });
}

test('axe: the widget page, with an approval card', { timeout: 60_000 }, async () => {
  const { page, done } = await newPage({ bypassCSP: true });
  try {
    const h = await harness();
    await page.goto(`${h.url}/www/article.html`);
    await waitReady(page, 'gatehouse-chat');
    const widget = page.locator('gatehouse-chat');
    await send(page, 'delete C:/old_logs.txt', widget);
    await widget.locator('.gh-card').waitFor();
    await widget.scrollIntoViewIfNeeded();
    await shot(page, 'axe-widget');
    assert.deepEqual(await violations(page), []);
  } finally {
    await done();
  }
});
