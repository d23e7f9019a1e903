// gatehouse-agent/react in a real React app: tests/browser/react/app.jsx, bundled here with
// esbuild (React's development build, under StrictMode) together with pkg/'s entry and
// react.js, served beside a copy of the wasm. Real IndexedDB, BroadcastChannel and model
// server; tabs are pages of one context. The app's probe records every Agent.open, every
// dispose() and any call made on an agent after its dispose().

import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { copyFileSync, mkdirSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { build } from 'esbuild';
import { ROOT, run, setup, uid } from './harness.mjs';

const h = await setup();
after(() => h.close());

const OUT = path.join(ROOT, 'test-output/react');
const PKG = path.join(ROOT, 'pkg'); // the package as built, whatever --pkg serves under /pkg/

before(async () => {
  mkdirSync(OUT, { recursive: true });
  // `gatehouse-agent` and its subpaths resolve through pkg/package.json's `exports`.
  const exportsMap = JSON.parse(readFileSync(path.join(PKG, 'package.json'), 'utf8')).exports;
  const pkgPlugin = {
    name: 'gatehouse-agent',
    setup(b) {
      b.onResolve({ filter: /^gatehouse-agent(\/.*)?$/ }, (args) => {
        const sub = `.${args.path.slice('gatehouse-agent'.length)}`;
        const target = exportsMap[sub];
        if (!target) return { errors: [{ text: `pkg/package.json does not export ${sub}` }] };
        return { path: path.join(PKG, typeof target === 'string' ? target : target.default) };
      });
    },
  };
  await build({
    entryPoints: [path.join(ROOT, 'tests/browser/react/app.jsx')],
    outfile: path.join(OUT, 'app.js'),
    bundle: true,
    format: 'esm',
    jsx: 'automatic',
    define: { 'process.env.NODE_ENV': '"development"' },
    plugins: [pkgPlugin],
    logLevel: 'error', // wasm-bindgen's module repeats an import key; esbuild warns about it
  });
  copyFileSync(path.join(PKG, 'gatehouse_bg.wasm'), path.join(OUT, 'gatehouse_bg.wasm'));
  // The demo model's wasm, which its module (inlined into the bundle) looks for beside it.
  copyFileSync(path.join(PKG, 'demo-model/model_bg.wasm'), path.join(OUT, 'model_bg.wasm'));
  // The MCP client's wasm likewise (its module is inlined too).
  copyFileSync(path.join(PKG, 'mcp/client_bg.wasm'), path.join(OUT, 'client_bg.wasm'));
});

const T = { timeout: 60_000 };
const call = (id, p) => ({ toolCalls: [{ id, name: 'delete_file', arguments: { path: p } }] });

/** A tab of `context` with the app on `thread`; `errors` collects page errors and console
 *  errors and warnings (React reports its own problems there). */
async function tab(context, { thread, db, sc, page: pageSize, reenter, mcp }) {
  const page = await context.newPage();
  page.setDefaultTimeout(10_000);
  const errors = [];
  page.on('pageerror', (e) => errors.push(`pageerror: ${e.message}`));
  page.on('console', (m) => {
    if (m.type() === 'error' || m.type() === 'warning') errors.push(`console.${m.type()}: ${m.text()}`);
  });
  const q = new URLSearchParams({ thread, db, base: `${sc.server}/s/${sc.id}/v1`, ...(pageSize ? { page: String(pageSize) } : {}),
    ...(reenter ? { reenter } : {}), ...(mcp ? { mcp } : {}) });
  await page.goto(`${h.url}/tests/browser/react/page.html?${q}`);
  // The first page of a context loads the bundled app: on a busy machine that can take over 10 s.
  await page.locator('#chat[data-ready="true"]').waitFor({ timeout: 30_000 });
  return { page, errors };
}

const probe = (page) => page.evaluate(() => JSON.parse(JSON.stringify(window.probe)));

async function send(page, text) {
  await page.locator('#composer input').fill(text);
  await page.locator('#composer button[type="submit"]').click();
}

test('StrictMode: the thread opens once; chat streams, the card waits, approve completes; useThreads follows', T, async (t) => {
  const context = await h.newContext();
  t.after(() => context.close().catch(() => {}));
  const sc = await h.scenario([call('call_1', '/r'), { text: ['Deleted ', '/r ', 'for you.'], chunkDelayMs: 30 }]);
  const thread = uid('t');
  const { page, errors } = await tab(context, { thread, db: uid('db'), sc });

  let p = await probe(page);
  assert.equal(p.effectRuns, 2, 'StrictMode ran the effects twice (the app is in development mode)');
  assert.deepEqual(p.opens, [thread], 'one Agent.open despite the double mount');
  assert.equal(p.disposes, 0, 'nothing disposed while mounted');
  assert.equal(await page.locator('#chat').getAttribute('data-status'), 'idle');

  await send(page, 'delete /r');
  const card = page.locator('.card[data-call-id="call_1"]');
  await card.waitFor();
  await page.locator('#chat[data-status="awaiting_approval"]').waitFor();
  assert.match(await card.innerText(), /delete_file \{"path":"\/r"\}/);
  assert.equal(await page.locator('#composer input').isDisabled(), true, 'input locked while a call waits');
  await page.locator(`#threads li[data-thread="${thread}"][data-status="awaiting_approval"]`).waitFor();
  assert.deepEqual((await probe(page)).executed, [], 'nothing ran before the decision');

  await card.locator('.approve').click();
  await page.locator('#chat[data-status="idle"]').waitFor();
  await card.waitFor({ state: 'detached' });
  assert.equal(await page.locator('#last').innerText(), 'Deleted /r for you.');
  assert.equal(await page.locator('#streaming').innerText(), '', 'no streaming text once the answer is stored');
  await page.locator(`#threads li[data-thread="${thread}"][data-status="idle"]`).waitFor();
  p = await probe(page);
  assert.deepEqual(p.executed, ['/r']);
  assert.deepEqual(p.results, ['awaiting_approval', 'completed']);
  // React may batch deltas into one render, so which partial texts were rendered depends on
  // timing; what holds: each rendered streamingText extends the one before, and the whole
  // answer was rendered as streamingText before it was stored.
  assert.ok(p.streamed.length >= 1, 'streamingText was rendered');
  p.streamed.forEach((s, i) => assert.ok(i === 0 || (s.startsWith(p.streamed[i - 1]) && s !== p.streamed[i - 1]), `${JSON.stringify(p.streamed)} grows`));
  assert.equal(p.streamed.at(-1), 'Deleted /r for you.');
  assert.deepEqual(p.opens, [thread]);
  assert.deepEqual(p.lateCalls, []);
  assert.deepEqual(errors, []);
});

test('reject with a reason: the model gets the reason verbatim, nothing runs', T, async (t) => {
  const context = await h.newContext();
  t.after(() => context.close().catch(() => {}));
  const sc = await h.scenario([call('call_r', '/keep'), { text: 'Understood, I will keep it.' }]);
  const { page, errors } = await tab(context, { thread: uid('t'), db: uid('db'), sc });
  await send(page, 'delete /keep');
  const card = page.locator('.card[data-call-id="call_r"]');
  await card.waitFor();
  await card.locator('.reason').fill('Keep it: the audit is next week');
  await card.locator('.deny').click();
  await page.locator('#last', { hasText: 'Understood' }).waitFor();
  await page.locator('#chat[data-status="idle"]').waitFor();
  const p = await probe(page);
  assert.deepEqual(p.executed, [], 'the rejected call never ran');
  assert.deepEqual(p.results, ['awaiting_approval', 'completed']);
  const requests = await sc.requests();
  assert.equal(requests.length, 2);
  const toolMessage = requests[1].body.messages.find((m) => m.role === 'tool');
  assert.equal(toolMessage.tool_call_id, 'call_r');
  assert.equal(toolMessage.content, 'TOOL NOT EXECUTED. The user rejected this action. User instruction: Keep it: the audit ' +
    'is next week. Do not attempt this tool again. Follow the user\'s instruction or reconsider your plan.');
  assert.deepEqual(errors, []);
});

test('reload mid-approval: the card comes back from IndexedDB, and approving it completes the run', T, async (t) => {
  const context = await h.newContext();
  t.after(() => context.close().catch(() => {}));
  const sc = await h.scenario([call('call_l', '/later'), { text: 'Deleted /later after the reload.' }]);
  const args = { thread: uid('t'), db: uid('db'), sc };
  const first = await tab(context, args);
  await send(first.page, 'delete /later');
  await first.page.locator('.card[data-call-id="call_l"]').waitFor();
  assert.deepEqual(first.errors, []);

  await first.page.reload();
  await first.page.locator('#chat[data-ready="true"]').waitFor();
  const { page } = first;
  const card = page.locator('.card[data-call-id="call_l"]');
  await card.waitFor();
  await page.locator('#chat[data-status="awaiting_approval"]').waitFor();
  assert.equal(await page.locator('#composer input').isDisabled(), true, 'still locked after the reload');
  assert.match(await card.innerText(), /delete_file \{"path":"\/later"\}/);
  let p = await probe(page);
  assert.deepEqual(p.opens, [args.thread], 'this page load opened the thread once');
  assert.deepEqual(p.executed, []);

  await card.locator('.approve').click();
  await page.locator('#last', { hasText: 'Deleted /later after the reload.' }).waitFor();
  await page.locator('#chat[data-status="idle"]').waitFor();
  await card.waitFor({ state: 'detached' });
  p = await probe(page);
  assert.deepEqual(p.executed, ['/later'], 'the tool ran once, in the reloaded page');
  assert.deepEqual(p.results, ['completed']);
  assert.equal((await sc.requests()).length, 2, 'no model request was repeated by the reload');
  assert.deepEqual(first.errors, []);
});

test('two tabs stay in step: the other tab\'s card goes without any action in it, and its next message is accepted', T, async (t) => {
  const context = await h.newContext();
  t.after(() => context.close().catch(() => {}));
  const sc = await h.scenario([call('call_1', '/two'), { text: 'Deleted.' }, { text: 'Hello from B.' }]);
  const args = { thread: uid('t'), db: uid('db'), sc };
  const a = await tab(context, args);
  const b = await tab(context, args);

  await send(a.page, 'delete /two');
  await a.page.locator('.card[data-call-id="call_1"]').waitFor();
  // B did nothing: the notice of A's writes re-rendered it.
  await b.page.locator('.card[data-call-id="call_1"]').waitFor({ timeout: 5_000 });
  await b.page.locator('#chat[data-status="awaiting_approval"]').waitFor();
  assert.equal(await b.page.locator('#composer input').isDisabled(), true);

  await a.page.locator('.card[data-call-id="call_1"] .approve').click();
  await a.page.locator('#chat[data-status="idle"]').waitFor();
  await b.page.locator('.card').waitFor({ state: 'detached', timeout: 5_000 });
  await b.page.locator('#chat[data-status="idle"]').waitFor();
  assert.equal(await b.page.locator('#last').innerText(), 'Deleted.');

  await send(b.page, 'hello');
  await b.page.locator('#last', { hasText: 'Hello from B.' }).waitFor();
  await a.page.locator('#last', { hasText: 'Hello from B.' }).waitFor({ timeout: 5_000 });
  const pb = await probe(b.page);
  assert.deepEqual(pb.results, ['completed'], 'B\'s message was accepted (no conflict)');
  assert.equal(await b.page.locator('#chat').getAttribute('data-error'), '');
  assert.deepEqual((await probe(a.page)).executed, ['/two']);
  assert.deepEqual(pb.executed, []);
  const requests = await sc.requests();
  assert.equal(requests.length, 3, 'one model request per turn');
  assert.deepEqual([...a.errors, ...b.errors], []);
});

test('useThreads follows another tab: its new thread appears with its status, its deletion removes it', T, async (t) => {
  const context = await h.newContext();
  t.after(() => context.close().catch(() => {}));
  const sc = await h.scenario([call('call_1', '/other')]);
  const db = uid('db');
  const [mine, other] = [uid('mine'), uid('other')];
  const a = await tab(context, { thread: mine, db, sc });
  const b = await tab(context, { thread: other, db, sc });
  await send(b.page, 'delete /other');
  await b.page.locator('.card').waitFor();
  // A never opened that thread and did nothing: the thread-list notice re-read its list.
  await a.page.locator(`#threads li[data-thread="${other}"][data-status="awaiting_approval"]`).waitFor({ timeout: 5_000 });
  await run(b.page, (id) => window.threads.deleteThread(id), other);
  await a.page.locator(`#threads li[data-thread="${other}"]`).waitFor({ state: 'detached', timeout: 5_000 });
  assert.equal(await a.page.locator('#threads li').count(), 0, 'A\'s own thread has no message yet, so it is not listed');
  assert.deepEqual([...a.errors, ...b.errors], []);
});

test('unmount disposes the agent: later notices and calls never reach it', T, async (t) => {
  const context = await h.newContext();
  t.after(() => context.close().catch(() => {}));
  const sc = await h.scenario([{ text: 'First.' }, { text: 'From the other tab.' }]);
  const args = { thread: uid('t'), db: uid('db'), sc };
  const a = await tab(context, args);
  const b = await tab(context, args);
  await send(a.page, 'one');
  await a.page.locator('#last', { hasText: 'First.' }).waitFor();

  // A control agent in tab A (not the hook's) hears the thread, so the test knows when a
  // notice has reached tab A.
  await run(a.page, async () => {
    const p = new URLSearchParams(location.search);
    window.control = await window.realOpen({ threadId: p.get('thread'), storage: { database: p.get('db') } });
    window.heard = [];
    window.control.subscribe((c) => window.heard.push(c.status));
  });
  await a.page.evaluate(() => window.unmountChat());
  await a.page.locator('#unmounted').waitFor();
  await a.page.waitForFunction(() => window.probe.disposes === 1);

  await send(b.page, 'two');
  await b.page.locator('#last', { hasText: 'From the other tab.' }).waitFor();
  await a.page.waitForFunction(() => window.heard.includes('idle') && window.heard.length >= 2);
  // The hook's functions, kept by the page after the unmount, touch no agent either.
  const late = await run(a.page, async () => [typeof await window.hook.chat('after unmount'), typeof await window.hook.retry()]);
  assert.deepEqual(late, ['undefined', 'undefined']);
  const p = await probe(a.page);
  assert.equal(p.opens.length, 1);
  assert.equal(p.disposes, 1);
  assert.deepEqual(p.lateCalls, [], 'no call on the disposed agent');
  assert.deepEqual([...a.errors, ...b.errors], []);
});

test('a decision the SDK refuses, made through the hook, shows on the kit card of that call', T, async (t) => {
  const context = await h.newContext();
  t.after(() => context.close().catch(() => {}));
  const sc = await h.scenario([call('call_e', '/e'), { text: 'Deleted /e.' }]);
  const { page, errors } = await tab(context, { thread: uid('t'), db: uid('db'), sc });
  await send(page, 'delete /e');
  const card = page.locator('#kit-cards .gh-card[data-call-id="call_e"]');
  await card.waitFor();
  // Not through the card: the app's own code calls the hook's decide with inputs the tool's
  // schema refuses. It resolves (never rejects); `error` is set and the card shows it.
  const result = await run(page, async () => String(await window.hook.decide({ call_e: ['edit', { path: 5 }] })));
  assert.equal(result, 'undefined');
  await page.locator('#chat[data-error="invalid_decision"]').waitFor();
  const error = card.locator('.gh-card-error');
  await error.waitFor();
  assert.match(await error.innerText(), /^Could not save this decision: ./);
  assert.equal(await card.getAttribute('data-state'), 'pending');
  // The next decision clears it; this one, from the kit card, goes through the hook too.
  await card.locator('.gh-approve').click();
  await page.locator('#last', { hasText: 'Deleted /e.' }).waitFor();
  await page.locator('#chat[data-error=""]').waitFor();
  assert.deepEqual((await probe(page)).executed, ['/e']);
  assert.deepEqual(errors, []);
});

test('messages: the newest page when the thread opens, live as it grows, loadOlder pages back', T, async (t) => {
  const context = await h.newContext();
  t.after(() => context.close().catch(() => {}));
  const sc = await h.scenario([{ text: 'One.' }, { text: 'Two.' }, { text: 'Three.' }, { text: 'Four.' }]);
  const args = { thread: uid('t'), db: uid('db'), sc, page: 2 };
  const { page, errors } = await tab(context, args);
  for (const [q, a] of [['1', 'One.'], ['2', 'Two.'], ['3', 'Three.']]) {
    await send(page, q);
    await page.locator('#messages li', { hasText: a }).waitFor();
  }
  const texts = () => page.locator('#messages li').allInnerTexts();
  assert.deepEqual(await texts(), ['1', 'One.', '2', 'Two.', '3', 'Three.'], 'live: every message since the first page');
  await page.reload();
  await page.locator('#chat[data-ready="true"]').waitFor();
  assert.deepEqual(await texts(), ['3', 'Three.'], 'after a reload: the newest page only');
  await page.locator('#older').click();
  await page.locator('#messages li', { hasText: 'Two.' }).waitFor();
  await page.locator('#older').click();
  await page.locator('#messages[data-has-older="false"]').waitFor();
  assert.deepEqual(await texts(), ['1', 'One.', '2', 'Two.', '3', 'Three.']);
  // Another tab adds a turn: it appears here, after the pages already read.
  const other = await tab(context, args);
  await send(other.page, '4');
  await page.locator('#messages li', { hasText: 'Four.' }).waitFor({ timeout: 5_000 });
  assert.deepEqual(await texts(), ['1', 'One.', '2', 'Two.', '3', 'Three.', '4', 'Four.']);
  assert.deepEqual([...errors, ...other.errors], []);
});

// The hook's re-entrancy matrix (the agent's own is tests/node/reentrancy-matrix.test.mjs): each
// action of useAgent called once from each place an app reacts during a chat -> approval ->
// completed turn: an effect on `status` running or awaiting_approval, on a new assistant
// message, on streamed text, on the turn's end, and the tool's execute. Each combination runs
// in a page of its own (its own wasm instance: a trap cannot hide the next one). Each works or
// fails as the hook's `error`, a GatehouseError with a stable code, never `internal` and never
// a thrown error; no page error; and the hook answers afterwards (a pending call approved, then
// a message sent completes).
const TRIGGERS = ['status:running', 'status:awaiting_approval', 'message', 'streaming', 'execute', 'done'];
const ACTIONS = ['send', 'decide', 'submitToolResults', 'retry', 'stop', 'setToolPolicy', 'loadOlder'];

test('re-entrancy: every hook action from every place the app reacts works or is a GatehouseError, and the hook answers after', { timeout: 600_000 }, async (t) => {
  const context = await h.newContext();
  t.after(() => context.close().catch(() => {}));
  const tally = new Map();
  for (const trigger of TRIGGERS) {
    for (const action of ACTIONS) {
      const what = `${action} from ${trigger}`;
      const sc = await h.scenario([call('call_1', '/r'), ...Array.from({ length: 6 }, (_, i) => (
        { text: ['Done ', `${i}.`], chunkDelayMs: 20 }))]);
      const { page, errors } = await tab(context, { thread: uid('t'), db: uid('db'), sc, reenter: `${trigger}:${action}` });
      const got = await run(page, async () => {
        const hook = () => window.hook;
        const settled = async () => {
          // Not busy, and not running (an action from a callback may have started a run).
          for (let calm = 0, i = 0; calm < 3 && i < 400; i++) {
            await new Promise((r) => setTimeout(r, 25));
            calm = !hook().busy && hook().status !== 'running' && window.probe.reentered?.value !== 'pending' ? calm + 1 : 0;
          }
        };
        const approveAll = async () => {
          const pending = hook().pendingTools;
          if (pending.length) await hook().decide(Object.fromEntries(pending.map((p) => [p.callId, 'approve'])));
          await settled();
        };
        await hook().chat('delete /r');
        await settled();
        await approveAll();
        await approveAll(); // a call the re-entrant action left waiting
        const status = hook().agent.status();
        const after = await hook().chat('after');
        await settled();
        const p = window.probe;
        return {
          reentered: p.reentered,
          errors: p.errors.map((e) => ({ name: e.name, code: e.code })),
          status,
          after: after?.status ?? `error:${hook().error?.code}`,
          executed: p.executed,
        };
      }, null, 60_000);
      await page.close();
      assert.ok(got.reentered, `${what}: the trigger fired`);
      assert.doesNotMatch(got.reentered.value, /^(pending|rejected)/, `${what}: the action settled without throwing`);
      for (const e of got.errors) {
        assert.equal(e.name, 'GatehouseError', `${what}: ${JSON.stringify(e)}`);
        assert.notEqual(e.code, 'internal', `${what}: ${JSON.stringify(got)}`);
        tally.set(e.code, (tally.get(e.code) ?? 0) + 1);
      }
      assert.equal(typeof got.status, 'string', what);
      // (`awaiting_approval`: the model's answer to an aborted request came for this one.)
      assert.match(got.after, /^(completed|awaiting_approval)$/, `${what}: the hook answers after (${JSON.stringify(got)})`);
      assert.ok(got.executed.length <= 1, `${what}: the call ran at most once (${got.executed})`);
      assert.deepEqual(errors.filter((e) => /unreachable|RuntimeError|internal/.test(e)), [], what);
    }
  }
  console.log(`hook re-entrancy: ${TRIGGERS.length * ACTIONS.length} combinations; errors by code:`,
    Object.fromEntries([...tally].sort()));
});

test('MCP elicitation: <ApprovalCards> renders the server\'s question as a form; useAgent lists it and answerElicitations checks answers', T, async (t) => {
  const { startMcpServer } = await import('../mcp/server.mjs');
  const mcp = await startMcpServer({ elicitation: true });
  const context = await h.newContext();
  t.after(async () => { await context.close().catch(() => {}); await mcp.close(); });
  const ask = (id) => ({ toolCalls: [{ id, name: 'files__ask', arguments: { kind: 'form' } }] });
  const sc = await h.scenario([ask('q1'), ask('q2'), { text: 'Pushed twice.' }]);
  const { page, errors } = await tab(context, { thread: uid('t'), db: uid('db'), sc, mcp: mcp.url });
  await page.evaluate(() => window.hook.setToolPolicy('files__ask', { autoApprove: true }));
  const from = mcp.log.length;
  await send(page, 'push');
  // The kit's card under the approval cards, built from the question's schema.
  const card = page.locator('#kit-cards .gh-question');
  await card.waitFor();
  assert.match(await page.locator('#questions').innerText(), /^elicit_\d+:q1$/);
  assert.equal(await card.locator('.gh-q-message').innerText(), 'Which branch?');
  await card.locator('input[name="branch"]').fill('main');
  await card.locator('button[type="submit"]').click();
  // The second question, answered through the hook: a bad answer is refused, nothing sent.
  await page.locator('#questions', { hasText: ':q2' }).waitFor();
  const r = await page.evaluate(() => {
    const [q] = window.hook.pendingElicitations;
    const bad = window.hook.answerElicitations({ [q.id]: { action: 'accept', content: { branch: 42 } } });
    return { id: q.id, bad };
  });
  assert.equal(r.bad, false);
  await page.locator('#chat[data-error="invalid_elicitation_answer"]').waitFor();
  assert.equal(await page.evaluate((id) => window.hook.answerElicitations({ [id]: 'decline' }), r.id), true);
  await page.locator('#chat[data-status="idle"]').waitFor();
  await card.waitFor({ state: 'detached' });
  assert.equal(await page.locator('#questions').innerText(), '');
  assert.equal(await page.locator('#last').innerText(), 'Pushed twice.');
  const answers = mcp.log.slice(from).filter((m) => m.method === undefined && m.id !== undefined).map((m) => m.result);
  // (An unticked box is sent as false.)
  assert.deepEqual(answers, [{ action: 'accept', content: { branch: 'main', force: false } }, { action: 'decline' }]);
  assert.deepEqual(errors, []);
});
