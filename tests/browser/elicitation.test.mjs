// MCP elicitation (docs/design.md, "MCP elicitation") against a real MCP server: the official
// TypeScript SDK's McpServer (tests/mcp/server.mjs, its `ask` tool calls `elicitInput`), on
// another origin than the page. The questions are answered in the page while the run waits;
// what the server got comes from its own log of the JSON-RPC messages it received.

import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { ROOT, run, setup, uid } from './harness.mjs';
import { SIGN_IN_URL, startMcpServer } from '../mcp/server.mjs';

const h = await setup();
let mcp;
before(async () => { mcp = await startMcpServer({ elicitation: true }); });
after(async () => { await mcp?.close(); await h.close(); });

const T = { timeout: 60_000 };
/** The events' fixtures, which `make test-types` checks against the TypeScript union. */
const fixture = (type) => JSON.parse(readFileSync(`${ROOT}/tests/fixtures/events-js/${type}.json`, 'utf8'));
/** An object's shape: its keys, recursively (values of `requestedSchema` left out). */
const shape = (v) => (v && typeof v === 'object' && !Array.isArray(v)
  ? Object.fromEntries(Object.entries(v).map(([k, x]) => [k, k === 'requestedSchema' ? 'schema' : shape(x)]))
  : typeof v);
const ask = (id, kind) => ({ toolCalls: [{ id, name: 'files__ask', arguments: { kind } }] });

/** The answers the server received to its elicitation requests since log length `from`. */
const answersSince = (from) => mcp.log.slice(from).filter((m) => m.method === undefined && m.id !== undefined)
  .map((m) => m.result ?? { error: m.error });

/** Defines `window.asking(a)`: opens an agent with the server `files` (trusted `ask`, so the
 *  call runs without an approval), starts `chat`, and resolves once the server's question is
 *  pending; `window.run` is the chat's promise, `window.ev` its events. */
async function install(page) {
  await run(page, () => {
    window.asking = async ({ model, db, url }) => {
      const agent = await window.gh.Agent.open({ threadId: 't', model, storage: { database: db },
        mcpServers: [{ name: 'files', url }] });
      await agent.setToolPolicy('files__ask', { autoApprove: true });
      window.agent = agent;
      window.ev = window.gh.events();
      window.changes = [];
      agent.subscribe((c) => window.changes.push(JSON.parse(JSON.stringify(c))));
      window.ac = new AbortController();
      window.run = agent.chat('ask me', { onEvent: window.ev.onEvent, signal: window.ac.signal })
        .then((s) => ({ state: s }), (e) => ({ error: window.gh.errorInfo(e) }));
      for (let i = 0; i < 1000 && agent.pendingElicitations().length === 0; i++) {
        await new Promise((r) => setTimeout(r, 10));
      }
      return agent.pendingElicitations();
    };
  });
}

async function openPage(t) {
  const { page } = await h.open(t);
  await install(page);
  return page;
}

test('a form: shown as a typed entry and on the tail, bad answers change nothing, the accepted content reaches the server', T, async (t) => {
  const page = await openPage(t);
  const sc = await h.scenario([ask('c1', 'form'), { text: 'Pushed.' }]);
  const from = mcp.log.length;
  const a = { model: sc.openai(), db: uid('db'), url: mcp.url };
  const r = await run(page, async (a) => {
    const pending = await window.asking(a);
    const agent = window.agent;
    const tail = agent.lastMessage();
    const id = pending[0]?.id;
    const refused = {
      unknown: await window.gh.error(() => agent.submitElicitations({ elicit_99: 'decline' })),
      // A whole map is refused when one answer is: the good one is not sent either.
      missing: await window.gh.error(() => agent.submitElicitations({ [id]: 'accept' })),
      schema: await window.gh.error(() => agent.submitElicitations({ [id]: { action: 'accept', content: { branch: '' } } })),
      wrongType: await window.gh.error(() => agent.submitElicitations({ [id]: { action: 'accept', content: { branch: 'main', force: 'yes' } } })),
      extraField: await window.gh.error(() => agent.submitElicitations({ [id]: { action: 'accept', content: { branch: 'main', shell: 'rm' } } })),
      action: await window.gh.error(() => agent.submitElicitations({ [id]: 'approve' })),
      notAMap: await window.gh.error(() => agent.submitElicitations('accept')),
    };
    const stillPending = agent.pendingElicitations();
    const changesWhilePending = window.changes.length;
    agent.submitElicitations({ [id]: { action: 'accept', content: { branch: 'main', force: true } } });
    const again = await window.gh.error(() => agent.submitElicitations({ [id]: 'decline' }));
    const done = await window.run;
    const record = (await window.gh.dumpDb(a.db)).stores.threads.rows[0];
    return { pending, tail, refused, stillPending, changesWhilePending, again, done, events: window.ev.list,
      after: agent.pendingElicitations(), tailAfter: agent.lastMessage(), messages: await agent.messages(),
      changes: window.changes, record: JSON.stringify(record) };
  }, a);
  // The typed entry.
  assert.equal(r.pending.length, 1);
  const p = r.pending[0];
  assert.deepEqual(Object.keys(p), ['id', 'callId', 'server', 'mode', 'message', 'requestedSchema']);
  assert.match(p.id, /^elicit_\d+$/);
  assert.deepEqual([p.callId, p.server, p.mode, p.message], ['c1', 'files', 'form', 'Which branch?']);
  assert.deepEqual(p.requestedSchema.required, ['branch']);
  // The tail shows it on the call's entry, last.
  const entry = r.tail.tools.find((e) => e.callId === 'c1');
  assert.deepEqual(entry.elicitation, p);
  assert.equal(Object.keys(entry).at(-1), 'elicitation');
  assert.ok(r.changes.some((c) => c.lastMessage?.tools?.[0]?.elicitation?.id === p.id), 'subscribers saw it');
  // Each bad answer: a stable code, and nothing sent or changed.
  for (const [k, e] of Object.entries(r.refused)) {
    assert.equal(e?.name, 'GatehouseError', k);
    assert.equal(e.code, k === 'unknown' ? 'unknown_elicitation' : 'invalid_elicitation_answer', `${k}: ${e.message}`);
    assert.equal(e.retryable, false, k);
  }
  assert.match(r.refused.schema.message, /branch/);
  assert.match(r.refused.extraField.message, /shell/);
  assert.deepEqual(r.stillPending, r.pending);
  // Answered once: a second answer is unknown.
  assert.equal(r.again.code, 'unknown_elicitation');
  assert.deepEqual(answersSince(from), [{ action: 'accept', content: { branch: 'main', force: true } }]);
  // The tool got it, the run completed, and nothing of the question stays or was stored.
  assert.equal(r.done.state.status, 'completed');
  const result = r.messages.find((m) => m.type === 'tool_call_result').tools[0].result;
  assert.equal(result, JSON.stringify({ action: 'accept', content: { branch: 'main', force: true } }));
  assert.deepEqual(r.after, []);
  assert.ok(r.messages.every((m) => !JSON.stringify(m).includes('"elicitation"')));
  assert.ok(!r.record.includes('elicitation') && !r.record.includes('Which branch'), 'never stored');
  const kinds = r.events.map((e) => e.type).filter((k) => k.startsWith('elicitation') || k === 'tool_started' || k === 'tool_result');
  assert.deepEqual(kinds, ['tool_started', 'elicitation_requested', 'elicitation_ended', 'tool_result']);
  const requested = r.events.find((e) => e.type === 'elicitation_requested');
  assert.deepEqual(requested.elicitation, p);
  const ended = r.events.find((e) => e.type === 'elicitation_ended');
  assert.deepEqual(ended, { type: 'elicitation_ended', id: p.id, callId: 'c1', action: 'accept' });
  // The events are what the typed fixtures say (the TypeScript union is checked on those).
  assert.deepEqual(shape(requested), shape(fixture('elicitation_requested')));
  assert.deepEqual(shape(ended), shape(fixture('elicitation_ended')));
});

test('URL mode: the page to open is shown, never fetched by the agent; accept carries no content; decline is sent as such', T, async (t) => {
  const page = await openPage(t);
  const sc = await h.scenario([ask('u1', 'url'), ask('u2', 'url'), { text: 'Connected.' }]);
  const from = mcp.log.length;
  const a = { model: sc.openai(), db: uid('db'), url: mcp.url };
  const r = await run(page, async (a) => {
    const first = await window.asking(a);
    const agent = window.agent;
    const withContent = await window.gh.error(() => agent.submitElicitations({ [first[0].id]: { action: 'accept', content: {} } }));
    agent.submitElicitations({ [first[0].id]: 'accept' });
    for (let i = 0; i < 1000 && (agent.pendingElicitations().length === 0 || agent.pendingElicitations()[0].id === first[0].id); i++) {
      await new Promise((r) => setTimeout(r, 10));
    }
    const second = agent.pendingElicitations();
    agent.submitElicitations({ [second[0].id]: { action: 'decline' } });
    return { first, withContent, second, done: await window.run, messages: await agent.messages() };
  }, a);
  const p = r.first[0];
  assert.deepEqual(Object.keys(p), ['id', 'callId', 'server', 'mode', 'message', 'url', 'elicitationId']);
  assert.deepEqual([p.mode, p.url, p.message], ['url', SIGN_IN_URL, 'Connect your bank account']);
  assert.equal(r.withContent.code, 'invalid_elicitation_answer');
  assert.equal(r.second[0].callId, 'u2');
  assert.notEqual(r.second[0].id, p.id);
  assert.deepEqual(answersSince(from), [{ action: 'accept' }, { action: 'decline' }]);
  const results = r.messages.filter((m) => m.type === 'tool_call_result').map((m) => m.tools[0].result);
  assert.deepEqual(results, ['{"action":"accept"}', '{"action":"decline"}']);
  assert.equal(r.done.state.status, 'completed');
});

test('aborting the run while a question waits answers it "cancel" and withdraws it', T, async (t) => {
  const page = await openPage(t);
  const sc = await h.scenario([ask('x1', 'form'), { text: 'never' }]);
  const from = mcp.log.length;
  const a = { model: sc.openai(), db: uid('db'), url: mcp.url };
  const r = await run(page, async (a) => {
    const pending = await window.asking(a);
    window.ac.abort();
    const done = await window.run;
    await new Promise((r) => setTimeout(r, 300));
    const late = await window.gh.error(() => window.agent.submitElicitations({ [pending[0].id]: 'decline' }));
    return { pending, done, late, after: window.agent.pendingElicitations(), events: window.ev.list,
      tail: window.agent.lastMessage() };
  }, a);
  assert.equal(r.pending.length, 1);
  assert.equal(r.done.error.code, 'aborted');
  assert.deepEqual(r.after, []);
  assert.equal(r.late.code, 'unknown_elicitation');
  const ended = r.events.filter((e) => e.type === 'elicitation_ended');
  assert.deepEqual(ended.map((e) => e.action), ['cancel']);
  assert.ok(!JSON.stringify(r.tail).includes('"elicitation"'));
  // The server was told: the question cancelled (or the call itself, when it went first).
  const told = mcp.log.slice(from).filter((m) => m.method === 'notifications/cancelled' || m.result?.action === 'cancel');
  assert.ok(told.length >= 1, JSON.stringify(mcp.log.slice(from)));
});

test('a question on the GET stream is asked about the running call; one the server gives up on is withdrawn', T, async (t) => {
  const page = await openPage(t);
  const sc = await h.scenario([ask('g1', 'unrelated'), ask('b1', 'brief'), { text: 'ok' }]);
  const from = mcp.log.length;
  const a = { model: sc.openai(), db: uid('db'), url: mcp.url };
  const r = await run(page, async (a) => {
    const first = await window.asking(a);
    const agent = window.agent;
    agent.submitElicitations({ [first[0].id]: { action: 'accept', content: { branch: 'dev' } } });
    // The next call's question: nobody answers it, the server stops waiting after 1.5 s.
    for (let i = 0; i < 1000 && !agent.pendingElicitations().some((p) => p.callId === 'b1'); i++) {
      await new Promise((r) => setTimeout(r, 10));
    }
    const second = agent.pendingElicitations();
    const done = await window.run;
    return { first, second, done, after: agent.pendingElicitations(), events: window.ev.list,
      messages: await agent.messages() };
  }, a, 40_000);
  assert.equal(r.first[0].callId, 'g1');
  assert.equal(r.second[0].callId, 'b1');
  const results = r.messages.filter((m) => m.type === 'tool_call_result').map((m) => m.tools[0].result);
  assert.equal(results[0], JSON.stringify({ action: 'accept', content: { branch: 'dev' } }));
  assert.match(results[1], /not answered: .*timed out/i);
  assert.deepEqual(r.after, []);
  const ended = r.events.filter((e) => e.type === 'elicitation_ended').map((e) => [e.callId, e.action]);
  assert.deepEqual(ended, [['g1', 'accept'], ['b1', 'cancel']]);
  assert.deepEqual(answersSince(from)[0], { action: 'accept', content: { branch: 'dev' } });
  assert.equal(r.done.state.status, 'completed');
});

test('the ui kit: ChatView shows a form card built from the schema and a URL card with its host; their buttons answer', T, async (t) => {
  const { page } = await h.open(t);
  const sc = await h.scenario([ask('f1', 'form'), ask('u1', 'url'), { text: 'All set.' }]);
  const from = mcp.log.length;
  const db = uid('db');
  await run(page, async ({ model, db, url }) => {
    const { gh } = window;
    const { ChatView } = await import('/pkg/ui/index.js');
    const css = document.createElement('link');
    css.rel = 'stylesheet';
    css.href = '/pkg/ui/gatehouse.css';
    document.head.append(css);
    const root = document.createElement('div');
    root.style.height = '640px';
    document.body.append(root);
    const view = new ChatView({ root });
    window.agent = await gh.Agent.open({ threadId: 't', model, storage: { database: db }, mcpServers: [{ name: 'files', url }] });
    await window.agent.setToolPolicy('files__ask', { autoApprove: true });
    await view.setAgent(window.agent);
    window.sent = view.send('push it');
    await gh.until(() => document.querySelector('.gh-question form'), 10_000);
  }, { model: sc.openai(), db, url: mcp.url });
  const form = await run(page, () => {
    const card = document.querySelector('.gh-question');
    return {
      mode: card.dataset.mode,
      labels: [...card.querySelectorAll('label')].map((l) => l.textContent),
      inputs: [...card.querySelectorAll('input')].map((i) => [i.name, i.type, i.required]),
      buttons: [...card.querySelectorAll('button')].map((b) => b.textContent),
    };
  });
  assert.deepEqual(form, { mode: 'form', labels: ['Branch *', 'Force push'],
    inputs: [['branch', 'text', true], ['force', 'checkbox', false]], buttons: ['Send', 'Decline', 'Not now'] });
  await page.screenshot?.({ path: 'target/elicitation-form.png' }).catch(() => {}); // Chromium's driver only
  // An empty required field is not sent (the browser's own validation); a filled one is.
  await run(page, async () => {
    const card = document.querySelector('.gh-question');
    card.querySelector('button[type=submit]').click();
    await new Promise((r) => setTimeout(r, 200));
    card.querySelector('input[name=branch]').value = 'release/2';
    card.querySelector('input[name=force]').checked = true;
    card.querySelector('button[type=submit]').click();
    await window.gh.until(() => document.querySelector('.gh-question[data-mode=url]'), 10_000);
  });
  const url = await run(page, () => {
    const card = document.querySelector('.gh-question');
    window.opened = [];
    window.open = (...a) => { window.opened.push(a); return null; };
    return { cards: document.querySelectorAll('.gh-question').length, text: card.querySelector('.gh-q-url').textContent,
      host: card.querySelector('.gh-q-url strong').textContent, buttons: [...card.querySelectorAll('button')].map((b) => b.textContent) };
  });
  await page.screenshot?.({ path: 'target/elicitation-url.png' }).catch(() => {});
  assert.equal(url.cards, 1, 'the answered form is gone');
  assert.equal(url.host, 'bank.example');
  assert.equal(url.text, `Opens bank.example: ${SIGN_IN_URL}`);
  assert.deepEqual(url.buttons, ['Open bank.example', 'Decline', 'Not now']);
  const end = await run(page, async () => {
    document.querySelector('.gh-question button').click();
    const state = await window.sent;
    return { state: state?.status, opened: window.opened, cards: document.querySelectorAll('.gh-question').length };
  });
  assert.deepEqual(end.opened, [[SIGN_IN_URL, '_blank', 'noopener,noreferrer']]);
  assert.equal(end.cards, 0);
  assert.deepEqual(answersSince(from), [{ action: 'accept', content: { branch: 'release/2', force: true } }, { action: 'accept' }]);
});

test('a reload while a question waits: nothing of it was stored, and the call cut off is asked about again', T, async (t) => {
  const page = await openPage(t);
  const sc = await h.scenario([ask('r1', 'form'), { text: 'never' }]);
  const a = { model: sc.openai(), db: uid('db'), url: mcp.url };
  const asked = await run(page, (a) => window.asking(a), a);
  assert.equal(asked.length, 1);
  await h.load(page, true);
  const r = await run(page, async ({ model, db, url }) => {
    const agent = await window.gh.Agent.open({ threadId: 't', model, storage: { database: db },
      mcpServers: [{ name: 'files', url }] });
    const record = (await window.gh.dumpDb(db)).stores.threads.rows[0];
    return { pending: agent.pendingElicitations(), tools: agent.pendingTools(), tail: agent.lastMessage(),
      record: JSON.stringify(record) };
  }, a);
  assert.deepEqual(r.pending, [], 'a question does not outlive the request it came with');
  assert.ok(!JSON.stringify(r.tail).includes('"elicitation"') && !r.record.includes('Which branch'));
  // The call may or may not have gone on at the server: it is re-gated, never re-sent.
  assert.deepEqual(r.tools.map((e) => [e.callId, e.approval]), [['r1', 'pending']]);
  assert.ok(r.tools[0].approvalReason, 'the SDK says why it asks again');
});
