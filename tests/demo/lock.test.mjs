// While anything is pending the message box is locked: typing and Enter do nothing, the
// button is disabled, focus is not on Approve, and Enter on a focused Approve does not approve.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { newPage, openDemo, send, shot, waitForAssistant } from './harness.mjs';

test('the message box is locked while an approval is pending', { timeout: 60_000 }, async () => {
  const { page, done } = await newPage();
  try {
    await openDemo(page);
    await send(page, 'delete C:/old_logs.txt');
    const card = page.locator('.gh-card');
    await card.waitFor();

    const input = page.locator('.gh-input');
    assert.equal(await input.isDisabled(), true);
    assert.equal(await page.locator('.gh-send').isDisabled(), true);
    assert.match(await page.locator('.gh-hint').innerText(), /unlock the message box/);
    // Focus did not land on Approve (nor on any button of the card).
    const focused = await page.evaluate(() => document.activeElement?.className ?? '');
    assert.doesNotMatch(focused, /gh-approve|gh-deny|gh-btn/);

    const users = () => page.locator('.gh-messages .gh-user').count();
    const before = await users();
    // Keyboard typing with Enter, wherever the focus is.
    await page.keyboard.type('hello there');
    await page.keyboard.press('Enter');
    await page.keyboard.press('Enter');
    // Clicking into the disabled box and typing.
    await input.click({ force: true });
    await page.keyboard.type('second try');
    await page.keyboard.press('Enter');
    // Even a scripted submit of the form is refused by the view.
    await page.evaluate(() => document.querySelector('.gh-composer').requestSubmit());
    await page.waitForTimeout(300);
    assert.equal(await users(), before, 'no message was sent');
    assert.equal(await input.inputValue(), '');
    assert.equal(await card.getAttribute('data-state'), 'pending', 'Enter did not approve');
    assert.equal(await page.evaluate(() => window.__gatehouseDemo.state.agent.pendingTools().length), 1);

    // Enter on a focused Approve button does not approve either (only a click or Space does).
    await card.locator('.gh-approve').focus();
    await page.keyboard.press('Enter');
    await page.waitForTimeout(300);
    assert.equal(await card.getAttribute('data-state'), 'pending');
    assert.equal(await page.evaluate(() => window.__gatehouseDemo.state.agent.status()), 'awaiting_approval');
    await shot(page, 'lock-1-locked');

    // Deciding unlocks it.
    await card.locator('.gh-approve').click();
    await waitForAssistant(page, 'Tool results');
    assert.equal(await page.locator('.gh-input').isDisabled(), false);
    await send(page, 'thanks');
    await page.locator('.gh-messages .gh-user', { hasText: 'thanks' }).waitFor();
    await shot(page, 'lock-2-unlocked');
  } finally {
    await done();
  }
});
