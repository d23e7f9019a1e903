// The live region announces only what is new: in the third turn of a thread, the characters
// that enter any live region of the chat are about the text that turn shows, not the whole
// log again (a live log re-rendered on every change re-read everything: 856 characters
// announced for 218 shown).
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { announced, countAnnouncements, newPage, openDemo, send } from './harness.mjs';

const idle = '.gh-composer[data-busy="false"][data-loading="false"]';

async function turn(page, text, reply) {
  const before = await page.locator('.gh-messages .gh-turn').count();
  await send(page, text);
  await page.locator('.gh-messages .gh-assistant .gh-bubble', { hasText: reply }).last().waitFor();
  await page.locator(idle).waitFor();
  return before;
}

test('live region: one turn announces its new text, not the whole log', { timeout: 60_000 }, async () => {
  const { page, done } = await newPage();
  try {
    await openDemo(page);
    await turn(page, 'hello', 'You said: hello');
    await turn(page, 'what can you do?', 'You said: what can you do');
    await countAnnouncements(page);
    const before = await turn(page, 'and after that?', 'You said: and after that');
    // What the third turn added to the log, as shown (the user's own text is not announced).
    const shown = await page.evaluate((n) => [...document.querySelectorAll('.gh-messages .gh-turn')]
      .slice(n).filter((t) => !t.classList.contains('gh-user')).map((t) => t.innerText).join('\n'), before);
    const { chars, texts } = await announced(page);
    const log = await page.locator('.gh-messages').innerText();
    assert.ok(shown.length > 20, `the turn shows an answer: ${JSON.stringify(shown)}`);
    assert.ok(log.length > 2 * shown.length, 'the log holds much more than this turn');
    assert.ok(chars >= shown.length * 0.8, `the answer is announced: ${chars} characters for ${shown.length} shown (${JSON.stringify(texts)})`);
    assert.ok(chars <= shown.length * 1.1 + 20,
      `only the new text is announced: ${chars} characters for ${shown.length} shown (${JSON.stringify(texts)})`);
  } finally {
    await done();
  }
});
