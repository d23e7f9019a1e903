// Offline: once the service worker has cached the shell and the SDK, the app reloads with
// the network off, shows the thread and its pending card, and the demo model works fully.
// With a network model, a message sent offline is kept and sent when the network is back.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { newPage, openDemo, scenario, scenarioRequests, send, shot, waitForAssistant, waitReady } from './harness.mjs';

test('offline: reload with the network off, approve, chat; network model resumes online', { timeout: 90_000 }, async () => {
  const { page, context, done } = await newPage();
  try {
    await openDemo(page);
    await page.locator('html[data-offline="ready"]').waitFor();
    assert.equal(await page.evaluate(() => !!navigator.serviceWorker.controller), true);
    await send(page, 'delete C:/old_logs.txt');
    await page.locator('.gh-card').waitFor();

    await context.setOffline(true);
    const probe = () => page.evaluate(() => fetch('/__health', { cache: 'no-store' }).then(() => 'reachable', () => 'unreachable'));
    assert.equal(await probe(), 'unreachable', 'the network is really off');
    await page.reload();
    await waitReady(page);
    assert.equal(await page.evaluate(() => navigator.onLine), false);
    await page.locator('#net-pill').waitFor();
    const card = page.locator('.gh-card');
    await card.waitFor();
    assert.equal(await card.getAttribute('data-state'), 'pending');
    assert.deepEqual(JSON.parse(await card.locator('.gh-card-inputs').textContent()), { path: 'C:/old_logs.txt' });
    assert.match(await page.locator('.thread[aria-current="true"]').innerText(), /delete C:\/old_logs\.txt/);
    await shot(page, 'offline-1-reloaded');

    await card.locator('.gh-approve').click();
    await waitForAssistant(page, 'delete_file returned');
    await send(page, 'hello while offline');
    await waitForAssistant(page, 'You said: hello while offline');
    // A second thread works offline too.
    await page.locator('#new-thread').click();
    await page.locator('.gh-empty').waitFor();
    await send(page, 'email team@example.com');
    await page.locator('.gh-card').waitFor();
    await shot(page, 'offline-2-demo-chat');

    // A network model while offline: the message is kept, with a Retry button...
    const baseUrl = await scenario('offline', [{ text: 'Back online: the mock model answers.' }]);
    await page.locator('#open-settings').click();
    await page.locator('input[name="provider"][value="openai"]').check();
    await page.locator('input[name="baseUrl"]').fill(baseUrl);
    await page.locator('input[name="model"]').fill('mock-model');
    await page.locator('#settings-save').click();
    await page.locator('#settings-dialog').waitFor({ state: 'hidden' });
    await page.locator('#new-thread').click();
    await page.locator('.gh-empty').waitFor();
    await send(page, 'What changed while I was away?');
    const banner = page.locator('.gh-banner');
    await banner.waitFor();
    assert.match(await banner.innerText(), /offline.*saved/i);
    assert.equal(await page.locator('.gh-retry').isVisible(), true);
    assert.equal(await page.locator('.gh-messages .gh-user').innerText(), 'What changed while I was away?');
    assert.equal(await page.evaluate(() => window.__gatehouseDemo.state.agent.status()), 'interrupted');
    assert.equal((await scenarioRequests('offline')).length, 0);
    await shot(page, 'offline-3-network-model-offline');

    // ...and sent by itself when the network comes back (the `online` event).
    await context.setOffline(false);
    const answer = await waitForAssistant(page, 'Back online');
    assert.equal(answer, 'Back online: the mock model answers.');
    await banner.waitFor({ state: 'hidden' });
    const reqs = await scenarioRequests('offline');
    assert.equal(reqs.length, 1);
    const userTurns = reqs[0].body.messages.filter((m) => m.role === 'user');
    assert.equal(userTurns.at(-1).content, 'What changed while I was away?');
    await shot(page, 'offline-4-back-online');
  } finally {
    await done();
  }
});
