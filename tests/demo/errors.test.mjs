// Error states a person can act on: a refused key (401, 403) says so and opens the settings;
// a rate limit (429) says the SDK is retrying and in how many seconds; after Stop, a new
// message can be sent (not only Retry), and one model call answers both.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { announced, countAnnouncements, harness, newPage, openDemo, scenario, scenarioRequests, send, shot, useModel, waitForAssistant, waitReady } from './harness.mjs';

test('401 and 403 point to the settings', { timeout: 60_000 }, async () => {
  const { page, done } = await newPage();
  try {
    await useModel(page, await scenario('auth', [
      { fault: { status: 401 } }, { fault: { status: 403 } }, { text: 'Authorised now.' },
    ]));
    await openDemo(page);
    await send(page, 'hello?');
    const banner = page.locator('.gh-banner');
    await banner.waitFor();
    assert.match(await banner.locator('.gh-banner-text').innerText(),
      /^The model server refused the request \(HTTP 401\): check the API key and the model in the settings\./);
    await shot(page, 'errors-1-401');
    await banner.locator('.gh-open-settings').click();
    await page.locator('#settings-dialog[open]').waitFor();
    await page.locator('#settings-dialog [data-close]').first().click();

    await banner.locator('.gh-retry').click();
    await page.locator('.gh-banner-text', { hasText: 'HTTP 403' }).waitFor();
    assert.equal(await banner.locator('.gh-open-settings').isVisible(), true);
    await banner.locator('.gh-retry').click();
    assert.equal(await waitForAssistant(page, 'Authorised'), 'Authorised now.');
    assert.equal(await banner.isHidden(), true);
    // Other errors have no settings button.
    await useModel(page, await scenario('auth-500', [{ fault: { status: 500 } }, { fault: { status: 500 } }, { fault: { status: 500 } }]));
    await page.reload();
    await send(page, 'again?');
    await page.locator('.gh-banner-text', { hasText: 'HTTP 500' }).waitFor();
    assert.equal(await banner.locator('.gh-open-settings').isHidden(), true);
  } finally {
    await done();
  }
});

test('401 in the widget (no settings of its own): says what was refused, offers no settings button', { timeout: 60_000 }, async () => {
  const { page, done } = await newPage();
  try {
    const baseUrl = await scenario('auth-widget', [{ fault: { status: 401 } }]);
    await page.goto(`${(await harness()).url}/tests/demo/cards.html`);
    const widget = page.locator('gatehouse-chat');
    await waitReady(page, 'gatehouse-chat');
    await widget.evaluate((el, url) => {
      window.firstAgent = el.agent;
      el.setAttribute('provider', 'openai');
      el.setAttribute('model', 'mock-model');
      el.setAttribute('base-url', url);
    }, baseUrl);
    // The element reopens the thread with the new model.
    await page.waitForFunction(() => {
      const agent = document.querySelector('gatehouse-chat').agent;
      return agent && agent !== window.firstAgent;
    });
    await send(page, 'hello?', widget);
    const banner = widget.locator('.gh-banner');
    await banner.waitFor();
    assert.match(await banner.locator('.gh-banner-text').innerText(),
      /^The model server refused the request \(HTTP 401\): its API key or model was not accepted\./);
    assert.equal(await banner.locator('.gh-open-settings').isHidden(), true);
  } finally {
    await done();
  }
});

test('429: "Rate limited — retrying in N s", counting down, then the answer', { timeout: 60_000 }, async () => {
  const { page, done } = await newPage();
  try {
    await useModel(page, await scenario('limited', [
      { fault: { status: 429, retryAfter: '4' } }, { text: 'Answered after the rate limit.' },
    ]));
    await openDemo(page);
    await countAnnouncements(page);
    await send(page, 'are you busy?');
    const note = page.locator('.gh-streaming .gh-stream-note');
    await note.waitFor();
    assert.match(await note.innerText(), /^Rate limited — retrying in [34] s \(attempt 2\)…$/);
    await shot(page, 'errors-2-rate-limited');
    await page.locator('.gh-stream-note', { hasText: /retrying in [12] s/ }).waitFor();
    assert.equal(await waitForAssistant(page, 'Answered after'), 'Answered after the rate limit.');
    const { texts } = await announced(page);
    assert.equal(texts.filter((t) => t.startsWith('Rate limited')).length, 1, JSON.stringify(texts));
    const reqs = await scenarioRequests('limited');
    assert.equal(reqs.length, 2);
    const waited = new Date(reqs[1].time) - new Date(reqs[0].time);
    assert.ok(waited >= 3500, `the retry waited for Retry-After: ${waited} ms`);
  } finally {
    await done();
  }
});

test('after Stop, Send works again: one call answers both messages', { timeout: 60_000 }, async () => {
  const { page, done } = await newPage();
  try {
    await useModel(page, await scenario('stop-send', [{ fault: { hang: true } }, { text: 'Both questions answered.' }]));
    await openDemo(page);
    await send(page, 'first question');
    await page.locator('.gh-stop').waitFor();
    // The request is at the model (which hangs) when Stop is pressed.
    while ((await scenarioRequests('stop-send')).length === 0) await page.waitForTimeout(10);
    await page.locator('.gh-stop').click();
    await page.locator('.gh-banner', { hasText: 'Stopped' }).waitFor();
    const input = page.locator('.gh-input');
    // Focus is back in the message box, and Send takes a new message.
    assert.equal(await input.evaluate((el) => document.activeElement === el), true);
    await input.fill('second question');
    await shot(page, 'errors-3-after-stop');
    assert.equal(await page.locator('.gh-send').isEnabled(), true);
    await page.locator('.gh-send').click();
    assert.equal(await waitForAssistant(page, 'Both questions'), 'Both questions answered.');
    const reqs = await scenarioRequests('stop-send');
    assert.equal(reqs.length, 2);
    assert.equal(reqs[0].outcome, 'aborted');
    assert.deepEqual(reqs[1].body.messages.filter((m) => m.role === 'user').map((m) => m.content),
      ['first question', 'second question']);
  } finally {
    await done();
  }
});
