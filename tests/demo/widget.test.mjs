// The <gatehouse-chat> widget on a plain article page: the same approval cards, inside its
// shadow DOM, approved there; the thread survives a reload.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { harness, newPage, send, shot, waitForAssistant, waitReady } from './harness.mjs';

test('widget: approve through the shadow DOM', { timeout: 60_000 }, async () => {
  const { page, done } = await newPage({ viewport: { width: 1000, height: 1100 } });
  try {
    const h = await harness();
    await page.goto(`${h.url}/www/article.html`);
    const widget = page.locator('gatehouse-chat');
    await waitReady(page, 'gatehouse-chat');
    assert.equal(await page.evaluate(() => !!document.querySelector('gatehouse-chat').shadowRoot), true);
    await widget.scrollIntoViewIfNeeded();
    await widget.locator('.gh-empty').waitFor(); // Playwright's CSS locators pierce open shadow roots
    await shot(page, 'widget-0-empty');

    await send(page, 'delete C:/old_logs.txt', widget);
    const card = widget.locator('.gh-card');
    await card.waitFor();
    // The card lives in the shadow root, not in the page's DOM.
    assert.equal(await page.evaluate(() => document.querySelector('.gh-card')), null);
    assert.equal(await page.evaluate(() => !!document.querySelector('gatehouse-chat').shadowRoot.querySelector('.gh-card')), true);
    assert.equal(await card.locator('.gh-card-name').innerText(), 'Delete file');
    assert.equal(await widget.locator('.gh-input').isDisabled(), true);
    await shot(page, 'widget-1-card');

    // Reload: the pending card is still there (IndexedDB database "gatehouse-article").
    await page.reload();
    await waitReady(page, 'gatehouse-chat');
    await card.waitFor();
    await card.locator('.gh-approve').click();
    const summary = await waitForAssistant(widget, 'Tool results');
    assert.match(summary, /delete_file returned: \{"deleted":"C:\/old_logs.txt"\}/);
    assert.equal(await widget.locator('.gh-input').isDisabled(), false);
    await widget.scrollIntoViewIfNeeded();
    await shot(page, 'widget-2-done');
  } finally {
    await done();
  }
});
