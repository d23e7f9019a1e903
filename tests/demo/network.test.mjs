// A network model that fails: the error is shown with a Retry button, the user's message
// is kept, and Retry sends it. Also: the API key typed in the settings stays in memory
// unless "remember" is ticked.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { newPage, openDemo, scenario, scenarioRequests, send, shot, waitForAssistant } from './harness.mjs';

test('provider errors show Retry; the key stays in memory unless remembered', { timeout: 60_000 }, async () => {
  const { page, done } = await newPage();
  try {
    // maxRetries is 2 in the demo: three 503s make the call fail, the fourth turn answers.
    const fail = { fault: { status: 503 } };
    const baseUrl = await scenario('flaky', [
      fail, fail, fail,
      { text: 'Recovered after the outage, streamed word by word.', chunkDelayMs: 60 },
      { fault: { hang: true } },
      { text: 'Answered after Stop and Retry.' },
    ]);
    await openDemo(page);
    assert.equal(await page.locator('#model-label').innerText(), 'Demo model · offline');

    await page.locator('#open-settings').click();
    await page.locator('input[name="provider"][value="openai"]').check();
    await page.locator('input[name="baseUrl"]').fill(baseUrl);
    await page.locator('input[name="model"]').fill('mock-model');
    await page.locator('input[name="apiKey"]').fill('sk-test-123');
    assert.equal(await page.locator('#remember-warning').isHidden(), true);
    await shot(page, 'network-1-settings');
    await page.locator('#settings-save').click();
    await page.locator('#settings-dialog').waitFor({ state: 'hidden' });
    assert.equal(await page.locator('#model-label').innerText(), 'OpenAI-compatible · mock-model');
    const stored = await page.evaluate(() => JSON.stringify(localStorage));
    assert.doesNotMatch(stored, /sk-test-123/, 'the key is not in localStorage');

    await send(page, 'Is the service up?');
    const banner = page.locator('.gh-banner');
    await banner.waitFor();
    assert.match(await banner.innerText(), /could not answer: .*503/);
    assert.equal(await page.locator('.gh-messages .gh-user').innerText(), 'Is the service up?');
    await shot(page, 'network-2-error');

    await page.locator('.gh-retry').click();
    // The answer streams in (text_delta events) before the final message replaces it.
    const streaming = page.locator('.gh-streaming .gh-bubble-text');
    await page.waitForFunction(() => {
      const t = document.querySelector('.gh-streaming .gh-bubble-text')?.textContent ?? '';
      return t.startsWith('Recovered') && t.length < 'Recovered after the outage, streamed word by word.'.length;
    });
    assert.equal(await page.locator('.gh-send').isHidden(), true, 'Stop replaces Send while answering');
    assert.equal(await page.locator('.gh-stop').isVisible(), true);
    await shot(page, 'network-3-streaming');
    assert.equal(await waitForAssistant(page, 'Recovered'), 'Recovered after the outage, streamed word by word.');
    assert.equal(await streaming.count(), 0);
    await banner.waitFor({ state: 'hidden' });
    const reqs = await scenarioRequests('flaky');
    assert.equal(reqs.length, 4);
    assert.equal(reqs[3].headers.authorization, 'Bearer sk-test-123');
    assert.equal(reqs[3].body.messages.filter((m) => m.role === 'user').length, 1, 'the message was sent once, not duplicated');
    // The key never reaches IndexedDB either.
    const dump = await page.evaluate(async () => JSON.stringify(await window.__gatehouseDemo.state.agent.messages()));
    assert.doesNotMatch(dump, /sk-test-123/);

    // Stop aborts a request that hangs; the message stays, and Retry answers it.
    await send(page, 'Are you still there?');
    await page.locator('.gh-stop').waitFor();
    await page.waitForTimeout(200);
    await page.locator('.gh-stop').click();
    await banner.waitFor();
    assert.match(await banner.innerText(), /Stopped/);
    await shot(page, 'network-4-stopped');
    await page.locator('.gh-retry').click();
    assert.equal(await waitForAssistant(page, 'Answered after Stop'), 'Answered after Stop and Retry.');
    const after = await scenarioRequests('flaky');
    assert.equal(after.length, 6);
    assert.equal(after[4].outcome, 'aborted');

    // "Remember" stores it, with a warning; unticking removes it.
    await page.locator('#open-settings').click();
    assert.equal(await page.locator('input[name="apiKey"]').inputValue(), 'sk-test-123');
    await page.locator('input[name="rememberKey"]').check();
    await page.locator('#remember-warning').waitFor();
    await shot(page, 'network-5-remember');
    await page.locator('#settings-save').click();
    assert.match(await page.evaluate(() => JSON.stringify(localStorage)), /sk-test-123/);
    await page.locator('#open-settings').click();
    await page.locator('input[name="rememberKey"]').uncheck();
    await page.locator('#settings-save').click();
    assert.doesNotMatch(await page.evaluate(() => JSON.stringify(localStorage)), /sk-test-123/);

    // Back to the demo model.
    await page.locator('#open-settings').click();
    await page.locator('input[name="provider"][value="demo"]').check();
    await page.locator('#settings-save').click();
    assert.equal(await page.locator('#model-label').innerText(), 'Demo model · offline');
  } finally {
    await done();
  }
});
