// The demo with threads in Postgres (`make demo-remote`): a desktop page (the demo's tools and
// model) and a phone page (approvals only, no tools, no model) on one thread, as separate
// browser contexts. The phone approves through the card; the desktop runs the tool once and
// the demo model answers; both pages show it. Real Postgres and the package's store handler
// (scripts/demo-store.mjs's setup, tests/support/store-server.mjs).
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { harness, newPage, send, shot, waitForAssistant, waitReady } from './harness.mjs';
import { startDemoStore } from '../../scripts/demo-store.mjs';

let store;
const printed = [];
before(async () => { store = await startDemoStore({ print: (line) => printed.push(line) }); });
after(async () => { await store?.close(); });

test('remote demo: the phone approves, the desktop runs the tool once', { timeout: 90_000 }, async () => {
  const h = await harness();
  const thread = `thread_remote${Date.now()}`;
  const page = (device) => `${h.url}/www/?store=${encodeURIComponent(store.url)}${device ? `&device=${device}` : ''}#thread=${thread}`;
  const desk = await newPage();
  const phone = await newPage({ viewport: { width: 390, height: 760 } });
  try {
    await desk.page.goto(page(''));
    await waitReady(desk.page);
    await phone.page.goto(page('phone'));
    await waitReady(phone.page);
    assert.match(await desk.page.locator('#thread-title').innerText(), /desktop \(clerk\)/);
    assert.match(await phone.page.locator('#thread-title').innerText(), /phone \(manager\)/);

    await send(desk.page, 'Please delete C:/old_logs.txt');
    await desk.page.locator('.gh-card').waitFor();
    // The phone hears of the call (the handler's change stream) and shows its card.
    const card = phone.page.locator('.gh-card');
    await card.waitFor();
    assert.equal(await card.locator('.gh-card-tech').innerText(), 'delete_file');
    await shot(phone.page, 'remote-1-phone-card');
    await card.locator('.gh-approve').click();

    // The desktop goes on by itself: the tool runs there and the demo model answers.
    const summary = await waitForAssistant(desk.page, 'Tool results');
    assert.match(summary, /delete_file returned: \{"deleted":"C:\/old_logs.txt"\}/);
    await waitForAssistant(phone.page, 'Tool results');
    await shot(desk.page, 'remote-2-desktop-done');
    await shot(phone.page, 'remote-3-phone-done');

    const audit = await store.pool.query('select json from gatehouse_audit where thread = $1', [thread]);
    assert.equal(audit.rows.length, 1);
    const record = JSON.parse(audit.rows[0].json);
    assert.equal(record.decidedBy, 'manager', 'the approver is the phone\'s user');
    assert.equal(record.outcome, 'ok');
    const calls = await store.pool.query(
      `select count(*)::int as n from gatehouse_messages where thread = $1 and json like '%tool_call_result%'`, [thread]);
    assert.equal(calls.rows[0].n, 1, 'one result: the tool ran once');
  } finally {
    await desk.done();
    await phone.done();
  }
});

test('remote demo: the decision link the terminal prints approves, and the desktop goes on', { timeout: 90_000 }, async () => {
  const h = await harness();
  const thread = `thread_link${Date.now()}`;
  const desk = await newPage();
  const mail = await newPage({ viewport: { width: 390, height: 760 } });
  const phone = await newPage({ viewport: { width: 390, height: 760 } });
  try {
    await desk.page.goto(`${h.url}/www/?store=${encodeURIComponent(store.url)}#thread=${thread}`);
    await waitReady(desk.page);
    await phone.page.goto(`${h.url}/www/?store=${encodeURIComponent(store.url)}&device=phone#thread=${thread}`);
    await waitReady(phone.page);
    // The phone offers push (this headless browser has no push service to subscribe with).
    assert.equal(await phone.page.locator('#enable-push').isVisible(), true);
    assert.equal(await desk.page.locator('#enable-push').isVisible(), false);
    const before1 = printed.length;
    await send(desk.page, 'Please delete C:/old_logs.txt');
    await desk.page.locator('.gh-card').waitFor();
    const deadline = Date.now() + 15_000;
    let link;
    while (!(link = printed.slice(before1).map((l) => /Decide as manager[^:]*: (\S+)/.exec(l)?.[1]).find(Boolean))) {
      assert.ok(Date.now() < deadline, 'the store printed a decision link');
      await new Promise((r) => setTimeout(r, 50));
    }
    assert.ok(printed.slice(before1).some((l) => /delete_file \{"path":"C:\/old_logs.txt"\}/.test(l)));
    // Opened from a mail: the page shows the call; only its button decides.
    await mail.page.goto(link);
    assert.match(await mail.page.locator('h1').innerText(), /Approve delete_file\?/);
    assert.match(await mail.page.locator('pre').innerText(), /C:\/old_logs.txt/);
    await shot(mail.page, 'remote-4-decision-link');
    await mail.page.getByRole('button', { name: 'Approve' }).click();
    assert.match(await mail.page.locator('h1').innerText(), /Approved/);
    await shot(mail.page, 'remote-5-link-approved');
    const summary = await waitForAssistant(desk.page, 'Tool results');
    assert.match(summary, /delete_file returned: \{"deleted":"C:\/old_logs.txt"\}/);
    const audit = await store.pool.query('select json from gatehouse_audit where thread = $1', [thread]);
    assert.equal(JSON.parse(audit.rows[0].json).decidedBy, 'manager');
    // Used: the link again says so.
    await mail.page.goto(link);
    assert.match(await mail.page.locator('h1').innerText(), /already used/);
  } finally {
    await desk.done();
    await mail.done();
    await phone.done();
  }
});
