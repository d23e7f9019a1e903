// Answers are rendered as Markdown, safely: headings, lists, code, links that open in a new tab
// with rel="noopener noreferrer"; raw HTML shows as text; javascript: links, event-handler
// attributes and images never reach the DOM. Also while the answer streams, and after a reload.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { newPage, openDemo, scenario, send, shot, useModel, waitReady } from './harness.mjs';

const ANSWER = [
  '## Cleanup plan',
  '',
  '1. **Archive** the logs with `tar <b>czf</b>` first',
  '2. Then delete them',
  '',
  'See [the docs](https://example.com/docs?a=1&b=2), not [this](javascript:window.__xss=1) or [that](JAVASCRIPT:window.__xss=2).',
  '',
  '<img src=x onerror="window.__xss=3">',
  '',
  'Inline <script>window.__xss=4</script> and <a href="javascript:window.__xss=5" onclick="window.__xss=6">a raw link</a>.',
  '',
  '![chart](https://example.com/chart.png?leak=secret)',
  '',
  '```js',
  'const tag = "<script>window.__xss=7</script>";',
  '```',
  '',
  '<div onmouseover="window.__xss=8">hover me</div>',
].join('\n');

/** Everything in the log that could run script or load something. */
function dangers() {
  const root = document.querySelector('.gh-messages');
  const out = [];
  for (const el of root.querySelectorAll('*')) {
    for (const a of el.attributes) {
      if (/^on/i.test(a.name)) out.push(`${el.tagName} ${a.name}`);
      if (/^(href|src|action|formaction|xlink:href)$/i.test(a.name) && /^\s*(javascript|data|vbscript):/i.test(a.value)) {
        out.push(`${el.tagName} ${a.name}=${a.value}`);
      }
    }
    if (el.parentElement?.closest('.gh-md') && /^(script|img|iframe|object|embed|style|svg|math|form|div|input|button)$/i.test(el.tagName)) {
      out.push(el.tagName);
    }
  }
  return out;
}

test('answers render as Markdown; links, raw HTML, images and code are safe', { timeout: 60_000 }, async () => {
  const { page, done } = await newPage();
  try {
    const baseUrl = await scenario('markdown', [
      { text: ANSWER, chunkDelayMs: 15 },
    ]);
    await useModel(page, baseUrl);
    await openDemo(page);
    await send(page, 'How do I clean up?');
    // While it streams, what has arrived is already Markdown (the heading, before the end).
    await page.locator('.gh-streaming .gh-md h2').waitFor();
    assert.equal(await page.locator('.gh-streaming').count(), 1, 'still streaming');
    await shot(page, 'markdown-1-streaming');

    const md = page.locator('.gh-messages .gh-assistant .gh-md').last();
    await md.locator('pre code').waitFor();
    const check = async () => {
      assert.equal(await md.locator('h2').innerText(), 'Cleanup plan');
      assert.equal(await md.locator('ol > li').count(), 2);
      assert.equal(await md.locator('ol > li strong').innerText(), 'Archive');
      // HTML in a code span is its text.
      assert.equal(await md.locator('li code').innerText(), 'tar <b>czf</b>');
      assert.equal((await md.locator('pre code.language-js').innerText()).trim(), 'const tag = "<script>window.__xss=7</script>";');
      const links = await md.locator('a').evaluateAll((as) => as.map((a) => [a.textContent, a.getAttribute('href'), a.target, a.rel]));
      assert.deepEqual(links, [
        ['the docs', 'https://example.com/docs?a=1&b=2', '_blank', 'noopener noreferrer'],
        ['this', null, '', ''],
        ['that', null, '', ''],
        ['chart', 'https://example.com/chart.png?leak=secret', '_blank', 'noopener noreferrer'],
      ]);
      // Raw HTML, block or inline, is shown as its source.
      const text = await md.innerText();
      assert.match(text, /<img src=x onerror="window.__xss=3">/);
      assert.match(text, /Inline <script>window.__xss=4<\/script> and <a href="javascript:window.__xss=5" onclick="window.__xss=6">a raw link<\/a>\./);
      assert.match(text, /<div onmouseover="window.__xss=8">hover me<\/div>/);
      assert.deepEqual(await page.evaluate(dangers), []);
      // Clicking what looks like a link and hovering the raw HTML runs nothing.
      await md.locator('a', { hasText: 'this' }).click();
      await md.getByText('hover me').hover();
      assert.equal(await page.evaluate(() => window.__xss), undefined);
    };
    await check();
    await shot(page, 'markdown-2-answer');
    // From IndexedDB after a reload: the same.
    await page.reload();
    await waitReady(page);
    await md.locator('pre code').waitFor();
    await check();
  } finally {
    await done();
  }
});
