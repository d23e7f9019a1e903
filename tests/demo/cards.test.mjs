// The approval cards show each argument beside its description (the raw JSON a click away),
// offer only the decisions a tool allows (`allowedDecisions`), edit then
// approve sends `["edit", inputs]`, Enter never approves (neither on Approve nor on "Approve
// with these inputs"), and the message box stays locked while anything is pending.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { harness, newPage, send, shot, waitForAssistant, waitReady } from './harness.mjs';

test('cards: only the allowed decisions, edit then approve, Enter never approves', { timeout: 60_000 }, async () => {
  const { page, done } = await newPage({ viewport: { width: 900, height: 1300 } });
  try {
    const h = await harness();
    await page.goto(`${h.url}/tests/demo/cards.html`);
    const widget = page.locator('gatehouse-chat');
    await waitReady(page, 'gatehouse-chat');
    await send(page, 'archive C:/a.txt, rename C:/b.txt and shred C:/c.txt', widget);
    const card = (name) => widget.locator('.gh-card', { has: page.locator('.gh-card-tech, .gh-card-name', { hasText: name }) });
    await card('archive_file').waitFor();
    const offered = async (name) => card(name).locator('.gh-btn:visible').allInnerTexts();
    assert.deepEqual(await offered('archive_file'), ['Approve', 'Deny…', 'Always allow in this conversation']);
    assert.deepEqual(await offered('rename_file'), ['Deny…', 'Edit…']);
    assert.deepEqual(await offered('shred_file'), ['Deny…']);
    // Of the bulk buttons only "Deny all" (one call could be approved, three denied).
    assert.deepEqual(await widget.locator('.gh-bulk .gh-btn:visible').allInnerTexts(), ['Deny all']);
    const input = widget.locator('.gh-input');
    assert.equal(await input.isDisabled(), true, 'locked while calls wait');
    await shot(page, 'cards-1-allowed');

    // Edit: the form starts from the model's inputs; Enter on its Approve does nothing, bad
    // JSON is refused in the card, valid JSON is an ["edit", inputs] decision.
    // What will run: one row per argument beside its schema description; the JSON a click away.
    const row = card('archive_file').locator('.gh-arg[data-arg="path"]');
    assert.match(await row.locator('.gh-arg-value').innerText(), /^C:\/\S+\.txt$/);
    assert.equal(await row.locator('.gh-arg-desc').innerText(), 'The file');
    assert.equal(await card('archive_file').locator('.gh-card-inputs').isVisible(), false);
    await card('archive_file').locator('.gh-card-raw summary').click();
    assert.equal(await card('archive_file').locator('.gh-card-inputs').isVisible(), true);
    const shown = async (name) => JSON.parse(await card(name).locator('.gh-card-inputs').textContent());
    const archiveInputs = await shown('archive_file');
    const proposed = await shown('rename_file');
    assert.equal(typeof proposed.path, 'string');
    const rename = card('rename_file');
    await rename.locator('.gh-edit').click();
    const box = rename.locator('.gh-edit-inputs');
    assert.deepEqual(JSON.parse(await box.inputValue()), proposed);
    await box.fill('{"path": "C:/renamed.txt"}');
    await rename.locator('.gh-confirm-edit').focus();
    await page.keyboard.press('Enter');
    await box.press('Enter'); // a new line in the box, never a decision
    await page.waitForTimeout(300);
    assert.equal(await rename.getAttribute('data-state'), 'pending', 'Enter did not approve');
    await box.fill('{"path": ');
    await rename.locator('.gh-confirm-edit').click();
    await rename.locator('.gh-card-error', { hasText: 'not JSON' }).waitFor();
    assert.equal(await rename.getAttribute('data-state'), 'pending');
    await box.fill('{"path": "C:/renamed.txt"}');
    await rename.locator('.gh-confirm-edit').click();
    await rename.locator('.gh-badge', { hasText: 'Approved, edited' }).waitFor();
    assert.ok((await rename.locator('.gh-card-proposed').innerText()).includes(JSON.stringify(proposed.path)));
    assert.equal(await rename.locator('.gh-arg[data-arg="path"] .gh-arg-value').innerText(), 'C:/renamed.txt');
    assert.equal(await input.isDisabled(), true, 'still locked: two calls wait');

    // Enter on a focused Approve does not approve either.
    await card('archive_file').locator('.gh-approve').focus();
    await page.keyboard.press('Enter');
    await page.waitForTimeout(300);
    assert.equal(await card('archive_file').getAttribute('data-state'), 'pending');
    assert.deepEqual(await page.evaluate(() => window.ran), [], 'nothing ran before every call was decided');
    await shot(page, 'cards-2-edited');

    await card('archive_file').locator('.gh-approve').click();
    await card('archive_file').locator('.gh-badge', { hasText: 'Approved' }).waitFor();
    await card('shred_file').locator('.gh-deny').click();
    await card('shred_file').locator('.gh-confirm-deny').click();
    await waitForAssistant(widget, 'Tool results');
    assert.deepEqual(await page.evaluate(() => window.ran), [
      ['archive_file', archiveInputs],
      ['rename_file', { path: 'C:/renamed.txt' }],
    ]);
    assert.equal(await input.isDisabled(), false, 'unlocked once all were decided');
    await shot(page, 'cards-3-done');
  } finally {
    await done();
  }
});
