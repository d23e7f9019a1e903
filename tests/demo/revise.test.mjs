// Two gated calls: each decision is submitted at once (a partial submission), stays
// revisable until both are decided (last write wins), and the run goes on after the last.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { newPage, openDemo, send, shot, waitForAssistant } from './harness.mjs';

test('decisions are revisable until the set is complete', { timeout: 60_000 }, async () => {
  const { page, done } = await newPage();
  try {
    await openDemo(page);
    await send(page, 'delete a.txt and email team@example.com');
    const cards = page.locator('.gh-card');
    await cards.nth(1).waitFor();
    assert.equal(await cards.count(), 2);
    const del = cards.nth(0);
    const mail = cards.nth(1);
    assert.equal(await del.locator('.gh-card-name').innerText(), 'Delete file');
    assert.equal(await mail.locator('.gh-card-name').innerText(), 'Send email');
    const tail = () => page.evaluate(() => window.__gatehouseDemo.state.agent.lastMessage());

    // 1. approve the delete: stored at once, the email still pending, still locked.
    await del.locator('.gh-approve').click();
    await page.locator('.gh-card[data-state="approved"]').waitFor();
    let t = await tail();
    assert.deepEqual(t.tools.map((x) => x.approval), ['approved', 'pending']);
    assert.equal(await page.locator('.gh-input').isDisabled(), true);
    assert.match(await page.locator('.gh-approvals-summary').innerText(), /1 of 2 decided/);
    assert.equal(await del.locator('.gh-approve').innerText(), 'Approved ✓');
    await shot(page, 'revise-1-one-approved');

    // 2. change my mind: deny it, with a reason (last write wins).
    await del.locator('.gh-deny').click();
    await del.locator('.gh-deny-reason').fill('Keep a.txt, I still need it');
    await del.locator('.gh-confirm-deny').click();
    await page.locator('.gh-card[data-state="rejected"]').waitFor();
    t = await tail();
    assert.deepEqual(t.tools.map((x) => x.approval), ['rejected', 'pending']);
    assert.equal(t.tools[0].rejectReason, 'Keep a.txt, I still need it');
    assert.match(await del.locator('.gh-card-reject-reason').innerText(), /Keep a\.txt/);

    // 3. and back to approve, then to deny again with another reason.
    await del.locator('.gh-approve').click();
    await page.locator('.gh-card[data-state="approved"]').waitFor();
    assert.deepEqual((await tail()).tools.map((x) => x.approval), ['approved', 'pending']);
    await del.locator('.gh-deny').click();
    await del.locator('.gh-deny-reason').fill('Changed my mind: keep it');
    await del.locator('.gh-confirm-deny').click();
    await page.locator('.gh-card[data-state="rejected"]').waitFor();
    await shot(page, 'revise-2-revised');

    // 4. the last decision completes the set: the run goes on.
    await mail.locator('.gh-approve').click();
    const summary = await waitForAssistant(page, 'Tool results');
    assert.match(summary, /delete_file was not run: you rejected it \(Changed my mind: keep it\)/);
    assert.match(summary, /send_email returned: \{"sent":true/);
    await page.locator('.gh-approvals').waitFor({ state: 'hidden' });
    assert.equal(await page.locator('.gh-input').isDisabled(), false);
    await shot(page, 'revise-3-done');
  } finally {
    await done();
  }
});
