// Deny with a reason: the reason reaches the model verbatim (the demo model quotes it in its
// summary), the card shows the policy's approvalReason, and nothing is sent.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { newPage, openDemo, send, shot, waitForAssistant } from './harness.mjs';

test('deny with a reason: the model receives the reason', { timeout: 60_000 }, async () => {
  const { page, done } = await newPage();
  try {
    await openDemo(page);
    await send(page, 'Email team@example.com about the cleanup');
    const card = page.locator('.gh-card');
    await card.waitFor();
    assert.equal(await card.locator('.gh-card-name').innerText(), 'Send email');
    // send_email's approvalPolicy returns a string: it is the card's "why".
    assert.equal(await card.locator('.gh-card-reason').innerText(),
      'Sends an email to team@example.com on your behalf; it cannot be unsent.');
    const inputs = JSON.parse(await card.locator('.gh-card-inputs').textContent());
    assert.equal(inputs.to, 'team@example.com');

    await card.locator('.gh-deny').click();
    const reason = card.locator('.gh-deny-reason');
    await reason.waitFor();
    // The reason box has focus; Enter types a newline there and never submits or approves.
    assert.equal(await reason.evaluate((el) => el.getRootNode().activeElement === el), true);
    await reason.fill('Do not email the whole team; send it to me instead');
    await shot(page, 'deny-1-reason');
    await card.locator('.gh-confirm-deny').click();

    const summary = await waitForAssistant(page, 'Tool results');
    assert.match(summary,
      /send_email was not run: you rejected it \(Do not email the whole team; send it to me instead\)/);
    assert.match(summary, /I will not try the rejected action again/);
    const line = page.locator('.gh-call[data-state="rejected"]');
    assert.match(await line.innerText(), /Denied/);
    assert.match(await line.locator('.gh-call-reject').innerText(), /Your reason: Do not email the whole team/);

    // What was stored: the rejected entry and the verbatim rejection text fed to the model.
    const stored = await page.evaluate(async () => window.__gatehouseDemo.state.agent.messages());
    const call = stored.find((m) => m.type === 'tool_call');
    assert.equal(call.tools[0].approval, 'rejected');
    assert.equal(call.tools[0].rejectReason, 'Do not email the whole team; send it to me instead');
    const result = stored.find((m) => m.type === 'tool_call_result');
    assert.equal(result.tools[0].result,
      'TOOL NOT EXECUTED. The user rejected this action. User instruction: Do not email the whole team; ' +
      'send it to me instead. Do not attempt this tool again. Follow the user\'s instruction or reconsider your plan.');
    await shot(page, 'deny-2-done');
  } finally {
    await done();
  }
});
