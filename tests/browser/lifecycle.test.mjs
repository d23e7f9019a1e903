// The lifecycle of the package and of an agent (README, "Lifecycle"): a call before init() is a
// GatehouseError `not_initialized`; dispose() (or free(), or [Symbol.dispose]()) while a call
// runs lets the call finish and releases the agent after it; every call after dispose() is a
// GatehouseError `disposed`. Never a raw wasm-bindgen error.

import { after, test } from 'node:test';
import assert from 'node:assert/strict';
import { run, setup, uid } from './harness.mjs';

const h = await setup();
after(() => h.close());

const T = { timeout: 60_000 };

test('a call before init() is a GatehouseError not_initialized; a call while init() runs waits for it', T, async (t) => {
  const ctx = await h.newContext();
  t.after(() => ctx.close().catch(() => {}));
  const page = await ctx.newPage();
  // Any page of the origin that does not load the package itself.
  await page.goto(`${h.url}/tests/browser/README.md`);
  const r = await run(page, async () => {
    const m = await import('/pkg/gatehouse.js');
    const info = async (fn) => {
      try {
        await fn();
        return null;
      } catch (e) {
        return { name: e.name, code: e.code, message: e.message, retryable: e.retryable,
          isClass: e instanceof m.GatehouseError, isError: e instanceof Error, isGatehouseError: m.isGatehouseError(e) };
      }
    };
    const memory = { kind: 'memory' };
    const before = {
      open: await info(() => m.Agent.open({ threadId: 't', storage: memory })),
      list: await info(() => m.Agent.listThreads(memory)),
      del: await info(() => m.Agent.deleteThread('t', memory)),
    };
    // init() not awaited: the call waits for it.
    const initializing = m.default();
    const agent = await m.Agent.open({ threadId: 't', storage: memory });
    const sameInit = m.default() === initializing;
    return { before, status: agent.status(), sameInit };
  });
  for (const [k, e] of Object.entries(r.before)) {
    assert.equal(e?.code, 'not_initialized', k);
    assert.equal(e.name, 'GatehouseError', k);
    assert.ok(e.isClass && e.isError && e.isGatehouseError, `${k}: instanceof GatehouseError`);
    assert.equal(e.retryable, false, k);
    assert.match(e.message, /init\(\)/, `${k}: says to call init() first`);
  }
  assert.equal(r.status, 'idle');
  assert.ok(r.sameInit, 'init() again returns the same promise');
});

/** Opens an agent whose model answers only when the test lets it (`window.answer()`). */
async function heldAgent(page, database) {
  await run(page, async ({ database }) => {
    const { gh } = window;
    window.modelCalled = false;
    window.dbName = database;
    const call = () => new Promise((resolve) => {
      window.modelCalled = true;
      window.answer = () => resolve({ text: 'Done.' });
    });
    window.agent = await gh.Agent.open({ threadId: 'held', model: { provider: 'custom', call }, storage: { database } });
  }, { database });
}

const METHODS = {
  chat: (a) => a.chat('again'),
  submitDecisions: (a) => a.submitDecisions({ x: 'approve' }),
  submitToolResults: (a) => a.submitToolResults({ x: 1 }),
  retry: (a) => a.retry(),
  handle: (a) => a.handle({ message: 'again' }),
  messages: (a) => a.messages(),
  setToolPolicy: (a) => a.setToolPolicy('x', { enabled: false }),
  refresh: (a) => a.refresh(),
  pendingTools: (a) => a.pendingTools(),
  pendingToolResults: (a) => a.pendingToolResults(),
  status: (a) => a.status(),
  lastMessage: (a) => a.lastMessage(),
  toolPolicies: (a) => a.toolPolicies(),
  threadId: (a) => a.threadId,
  messageCount: (a) => a.messageCount,
};

test('dispose() during a call lets the call finish, then releases the agent; every call after it is disposed', T, async (t) => {
  const { page, errors } = await h.open(t);
  const database = uid('db');
  await heldAgent(page, database);
  const r = await run(page, async ({ methods }) => {
    const { gh, agent } = window;
    const order = [];
    const chat = agent.chat('Hello').then((s) => { order.push('chat resolved'); return s; });
    await gh.until(() => window.modelCalled);
    const disposing = agent.dispose().then(() => order.push(window.answered ? 'disposed after the answer' : 'disposed early'));
    const again = agent.dispose();
    const during = await gh.error(() => agent.status());
    const chatDuring = await gh.error(() => agent.chat('more'));
    await gh.sleep(50);
    const settledEarly = order.length > 0;
    window.answered = true;
    window.answer();
    const state = await chat;
    await disposing;
    await again;
    const afterwards = {};
    for (const [name, src] of Object.entries(methods)) {
      afterwards[name] = await gh.error(() => (0, eval)(`(${src})`)(agent));
    }
    // Disposing again does nothing, in every spelling.
    agent.free();
    agent[Symbol.dispose]();
    await agent[Symbol.asyncDispose]();
    const reopened = await gh.Agent.open({ threadId: 'held', storage: { database: window.dbName } });
    return { order, during, chatDuring, settledEarly, state, afterwards, stored: (await reopened.messages()).length };
  }, { methods: Object.fromEntries(Object.entries(METHODS).map(([k, f]) => [k, f.toString()])) });
  assert.equal(r.settledEarly, false, 'dispose() waits for the running call');
  assert.deepEqual(r.order.sort(), ['chat resolved', 'disposed after the answer'], 'the call finishes, and the agent is released after it');
  assert.equal(r.state.status, 'completed');
  assert.equal(r.during?.code, 'disposed', 'a call after dispose() is refused even while the earlier call runs');
  assert.equal(r.chatDuring?.code, 'disposed');
  for (const name of Object.keys(METHODS)) {
    const e = r.afterwards[name];
    assert.equal(e?.isError, true, `${name}: throws`);
    assert.equal(e.name, 'GatehouseError', name);
    assert.equal(e.code, 'disposed', name);
    assert.equal(e.retryable, false, name);
    assert.match(e.message, /Agent\.open/, `${name}: says how to go on`);
  }
  assert.deepEqual(errors, [], 'no page error, no console error');
});

test('free() and [Symbol.dispose]() during a call are dispose(): no raw wasm-bindgen error, the call completes', T, async (t) => {
  const { page, errors } = await h.open(t);
  for (const how of ['free', 'Symbol.dispose']) {
    await heldAgent(page, uid('db'));
    const r = await run(page, async ({ how }) => {
      const { gh, agent } = window;
      const chat = agent.chat('Hello');
      await gh.until(() => window.modelCalled);
      let thrown = null;
      try {
        if (how === 'free') agent.free();
        else agent[Symbol.dispose]();
      } catch (e) {
        thrown = String(e);
      }
      window.answer();
      const state = await chat;
      await gh.sleep(20);
      return { thrown, status: state.status, after: await gh.error(() => agent.lastMessage()) };
    }, { how });
    assert.equal(r.thrown, null, how);
    assert.equal(r.status, 'completed', how);
    assert.equal(r.after?.code, 'disposed', how);
  }
  assert.deepEqual(errors, []);
});

test('errors are instances of the exported GatehouseError class', T, async (t) => {
  const { page } = await h.open(t);
  const r = await run(page, async () => {
    const m = await import('/pkg/gatehouse.js');
    const agent = await m.Agent.open({ threadId: 't', storage: { kind: 'memory' } });
    try {
      await agent.retry();
    } catch (e) {
      return { isClass: e instanceof m.GatehouseError, isError: e instanceof Error, check: m.isGatehouseError(e),
        plain: m.isGatehouseError(new Error('x')), code: e.code, name: e.name, stack: typeof e.stack };
    }
    return null;
  });
  assert.deepEqual(r, { isClass: true, isError: true, check: true, plain: false, code: 'nothing_to_retry', name: 'GatehouseError', stack: 'string' });
});
