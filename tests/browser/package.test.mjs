// The package exactly as built in pkg/ and served by the static server (never the
// GATEHOUSE_E2E_PKG override): `await init()` must succeed and a first chat must work.

import { after, test } from 'node:test';
import assert from 'node:assert/strict';
import { PAGE_PATH, run, setup } from './harness.mjs';

const h = await setup();
after(() => h.close());

test(`pkg/ as built initialises in ${h.engine} and answers a demo chat`, {
  timeout: 30_000,
}, async (t) => {
  const context = await h.browser.newContext(); // no route: the real pkg/ from the static server
  t.after(() => context.close().catch(() => {}));
  const page = await context.newPage();
  const errors = [];
  page.on('pageerror', (e) => errors.push(e.message));
  await page.goto(h.url + PAGE_PATH);
  // page.js sets ghReady once init() resolved, ghInitError when it threw: no guessing how long
  // init() takes after the load event (it compiles the wasm; over 200 ms on a loaded machine).
  await page.waitForFunction(() => window.ghReady === true || window.ghInitError !== undefined, null, { timeout: 15_000 });
  assert.deepEqual(errors, [], 'no uncaught error while loading the package');
  assert.equal(await page.evaluate(() => window.ghReady === true), true, 'init() resolved');
  const state = await run(page, async () => {
    const agent = await window.gh.Agent.open({ threadId: 'pkg', storage: { kind: 'memory' } });
    return agent.chat('hello');
  });
  assert.equal(state.status, 'completed');
});
