// <gatehouse-chat>'s re-entrancy matrix (the agent's own is tests/node/reentrancy-matrix.test.mjs,
// the React hook's is in tests/browser/react.test.mjs): an app that calls the element's agent
// back, with each of its calls, from each place it hears from the element: the
// `gatehouse-change` event after the first run (the card is up), after the second (done), and
// the tool's execute. Each combination runs in a page of its own (its own wasm instance: a trap
// cannot hide the next one). The call resolves, or rejects with a GatehouseError with a stable
// code (never `internal`); the page has no uncaught error; and the element answers after: the
// pending call is approved on its card, and a message typed in its box gets an answer.
// (`dispose` is left out: the element owns its agent.)
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { harness, newPage, send, waitReady } from './harness.mjs';

const TRIGGERS = ['change', 'change-2', 'execute'];
const ACTIONS = ['chat', 'submitDecisions', 'submitToolResults', 'retry', 'refresh', 'setToolPolicy',
  'messages', 'subscribe', 'pendingTools', 'status'];

test('re-entrancy: every agent call from every place the app hears the element works or is a GatehouseError, and the element answers after', { timeout: 600_000 }, async () => {
  const h = await harness();
  const tally = new Map();
  let n = 0;
  for (const trigger of TRIGGERS) {
    for (const action of ACTIONS) {
      const what = `${action} from ${trigger}`;
      const { page, done } = await newPage();
      try {
        const q = new URLSearchParams({ trigger, action, db: `reenter-${process.pid}-${n++}` });
        await page.goto(`${h.url}/tests/demo/reenter.html?${q}`);
        const widget = page.locator('gatehouse-chat');
        await waitReady(page, 'gatehouse-chat');
        await send(page, 'delete C:/old_logs.txt', widget);
        // Whatever the call did, the element settles: approve what waits, on its card.
        const settle = () => page.waitForFunction(() => {
          const el = document.querySelector('gatehouse-chat');
          const box = el.shadowRoot.querySelector('.gh-composer');
          return box?.dataset.busy === 'false' && el.agent.status() !== 'running' &&
            window.reentered?.value !== 'pending';
        }, null, { timeout: 20_000 });
        for (let i = 0; i < 3; i++) {
          await page.waitForTimeout(50); // a run the listener started is under way by now
          await settle();
          const approve = widget.locator('.gh-card .gh-approve').first();
          if (!(await approve.count())) break;
          await approve.click();
        }
        await settle();
        const before = await widget.locator('.gh-messages .gh-assistant').count();
        await send(page, 'hello', widget);
        await page.waitForFunction((n) => document.querySelector('gatehouse-chat').shadowRoot
          .querySelectorAll('.gh-messages .gh-assistant').length > n, before, { timeout: 20_000 });
        const got = await page.evaluate(() => ({
          reentered: window.reentered,
          ran: window.ran,
          banner: document.querySelector('gatehouse-chat').shadowRoot.querySelector('.gh-banner:not([hidden])')?.textContent ?? '',
        }));
        assert.ok(got.reentered, `${what}: the trigger fired`);
        if (got.reentered.value === 'rejected') {
          assert.equal(got.reentered.error.name, 'GatehouseError', `${what}: ${JSON.stringify(got.reentered)}`);
          assert.notEqual(got.reentered.error.code, 'internal', `${what}: ${JSON.stringify(got.reentered)}`);
          tally.set(got.reentered.error.code, (tally.get(got.reentered.error.code) ?? 0) + 1);
        }
        assert.doesNotMatch(got.banner, /internal|unreachable/i, `${what}: the banner`);
        assert.ok(got.ran.length <= 1, `${what}: the call ran at most once (${got.ran})`);
      } finally {
        await done(); // fails on any uncaught error in the page
      }
    }
  }
  console.log(`element re-entrancy: ${TRIGGERS.length * ACTIONS.length} combinations; rejections by code:`,
    Object.fromEntries([...tally].sort()));
});
