// Strings from the user, the model and tools are text, never HTML: an <img onerror> in
// tool inputs, a thread title, a tool error and a deny reason all render literally.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { newPage, openDemo, send, shot, waitForAssistant, waitReady } from './harness.mjs';

const PAYLOAD = '<img src=x onerror=window.__xss=1>.txt';

test('XSS attempts in tool inputs are shown as text', { timeout: 60_000 }, async () => {
  const { page, done } = await newPage();
  try {
    await openDemo(page);
    await send(page, `delete "${PAYLOAD}" and email team@example.com`);
    const cards = page.locator('.gh-card');
    await cards.nth(1).waitFor();
    assert.deepEqual(JSON.parse(await cards.nth(0).locator('.gh-card-inputs').textContent()), { path: PAYLOAD });
    assert.equal(await cards.nth(0).locator('.gh-arg[data-arg="path"] .gh-arg-value').innerText(), PAYLOAD);
    // The title (the user's text) in the sidebar and the header: literal.
    assert.match(await page.locator('#thread-title').innerText(), /<img src=x onerror=window\.__xss=1>/);
    assert.match(await page.locator('.thread[aria-current="true"] .thread-name').innerText(), /<img src=x/);

    // Deny the email with a reason that is also markup.
    await cards.nth(1).locator('.gh-deny').click();
    await cards.nth(1).locator('.gh-deny-reason').fill('<script>window.__xss=2</script><b>no</b>');
    await cards.nth(1).locator('.gh-confirm-deny').click();
    await page.locator('.gh-card[data-state="rejected"]').waitFor();
    assert.equal(await cards.nth(1).locator('.gh-card-reject-reason').innerText(),
      'Your reason: <script>window.__xss=2</script><b>no</b>');
    await shot(page, 'xss-1-cards');

    // Approving the delete runs the tool, which fails (no such file) with the payload in its message.
    await cards.nth(0).locator('.gh-approve').click();
    const summary = await waitForAssistant(page, 'Tool results');
    assert.match(summary, /<img src=x onerror=window\.__xss=1>\.txt/);
    assert.match(summary, /you rejected it \(<script>window\.__xss=2<\/script><b>no<\/b>\)/);
    await page.locator('.gh-call-result summary').first().click();
    await shot(page, 'xss-2-done');

    const injected = await page.evaluate(() => ({
      xss: window.__xss,
      imgs: [...document.querySelectorAll('img')].map((i) => i.getAttribute('src')),
      scripts: [...document.querySelectorAll('script')].map((s) => s.type === 'importmap' ? 'importmap' : s.getAttribute('src')),
      bold: document.querySelectorAll('main b').length,
    }));
    assert.deepEqual(injected, { xss: undefined, imgs: ['./icon.svg'], scripts: ['importmap', './app.js'], bold: 0 });

    // Reloaded from IndexedDB: still text.
    await page.reload();
    await waitReady(page);
    await waitForAssistant(page, 'Tool results');
    assert.equal(await page.evaluate(() => window.__xss), undefined);
    assert.equal(await page.evaluate(() => document.querySelectorAll('img[src="x"]').length), 0);
  } finally {
    await done();
  }
});
