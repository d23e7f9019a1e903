// Agent.listThreads() reports the status agent.status() reports (README, "The JS API"), read from
// the thread records alone: one thread in each status, in IndexedDB.

import { after, test } from 'node:test';
import assert from 'node:assert/strict';
import { run, setup, uid } from './harness.mjs';

const h = await setup();
after(() => h.close());

test('listThreads says what status() says: idle, awaiting_approval, awaiting_tool_results, interrupted (failed send, stop), running', { timeout: 60_000 }, async (t) => {
  const { page } = await h.open(t);
  const r = await run(page, async ({ database }) => {
    const { gh } = window;
    const storage = { database };
    // The custom model's answer for each thread, by the text of its last user message.
    let hold = null;
    const call = async (req) => {
      const last = req.messages.at(-1);
      const text = last.content?.[0]?.content ?? '';
      if (text === 'fail') throw new Error('the model is down');
      if (text === 'hold') {
        return new Promise((resolve, reject) => {
          hold = () => resolve({ text: 'late' });
          req.signal?.addEventListener('abort', () => reject(req.signal.reason));
        });
      }
      if (text === 'delete' && last.type !== 'tool_call_result') return { toolCalls: [{ id: 'c1', name: 'delete_file', arguments: { path: '/x' } }] };
      if (text === 'ticket' && last.type !== 'tool_call_result') return { toolCalls: [{ id: 'c2', name: 'open_ticket', arguments: {} }] };
      return { text: 'Done.' };
    };
    const tools = [gh.tool('delete_file', { requireApproval: true }), { name: 'open_ticket' }];
    const open = (threadId) => gh.Agent.open({ threadId, model: { provider: 'custom', call }, tools, storage });
    const agents = {};
    const errors = {};
    const send = async (threadId, text, opts) => {
      agents[threadId] = await open(threadId);
      try {
        await agents[threadId].chat(text, opts);
      } catch (e) {
        errors[threadId] = e.code;
      }
    };
    await send('idle', 'hello');
    await send('approval', 'delete');
    await send('results', 'ticket');
    await send('failed', 'fail');
    const stop = new AbortController();
    const stopped = send('stopped', 'hold', { signal: stop.signal });
    await gh.until(() => hold);
    stop.abort();
    await stopped;
    hold = null;
    const running = send('running', 'hold');
    await gh.until(() => hold);
    const listed = (list) => Object.fromEntries(list.map((s) => [s.threadId, s.status]));
    const whileRunning = listed(await gh.Agent.listThreads(storage));
    const statuses = Object.fromEntries(Object.entries(agents).map(([id, a]) => [id, a.status()]));
    hold();
    await running;
    const afterwards = listed(await gh.Agent.listThreads(storage));
    // A fresh agent on each thread (as after a reload) agrees too.
    const reopened = {};
    for (const id of Object.keys(agents)) reopened[id] = (await open(id)).status();
    return { whileRunning, statuses, afterwards, reopened, errors, runningAfter: agents.running.status() };
  }, { database: uid('db') });
  const expected = {
    idle: 'idle',
    approval: 'awaiting_approval',
    results: 'awaiting_tool_results',
    failed: 'interrupted',
    stopped: 'interrupted',
    running: 'running',
  };
  assert.deepEqual(r.errors, { failed: 'provider', stopped: 'aborted' });
  assert.deepEqual(r.statuses, expected, 'agent.status()');
  assert.deepEqual(r.whileRunning, expected, 'listThreads() while one thread runs');
  assert.deepEqual(r.afterwards, { ...expected, running: 'idle' }, 'listThreads() after the run');
  assert.deepEqual(r.reopened, { ...expected, running: 'idle' }, 'status() of a fresh agent');
  assert.equal(r.runningAfter, 'idle');
});
