// status() of the agent that is running the thread itself: "running" while it waits for the
// model and while its approved tool runs (README: "running" means this agent, another tab or
// another Agent on the thread is running it now), then "idle". Issue 14 reports "interrupted"
// during the tool; this build (main at 026f7de) does not show it in any engine, with the
// IndexedDB or the memory store, read in onEvent handlers, from the tool or by polling. This
// test keeps it that way; it is in the core scenarios, so every engine checks it.

import { after, test } from 'node:test';
import assert from 'node:assert/strict';
import { run, setup, uid } from './harness.mjs';

const h = await setup();
after(() => h.close());

test('status() is "running" in the agent that runs it: during the model call and while its approved tool runs', {
  timeout: 60_000,
}, async (t) => {
  const { page } = await h.open(t);
  const sc = await h.scenario([
    { toolCalls: [{ id: 'call_r', name: 'delete_file', arguments: { path: '/r' } }], delayMs: 500 },
    { text: 'done' },
  ]);
  const r = await run(page, async ({ model, db }) => {
    const { gh } = window;
    let release;
    const gate = new Promise((res) => { release = res; });
    const tool = gh.tool('delete_file', { requireApproval: true, execute: async () => { gh.calls.push(1); await gate; return 'ok'; } });
    const agent = await gh.Agent.open({ threadId: 't', model, storage: { database: db }, tools: [tool] });
    const chat = agent.chat('delete /r');
    await gh.sleep(200); // the model answers after 500 ms
    const duringModel = agent.status();
    await chat;
    const decided = agent.submitDecisions({ call_r: 'approve' });
    await gh.until(() => gh.calls.length === 1);
    const duringTool = agent.status();
    const other = await gh.Agent.open({ threadId: 't', model, storage: { database: db }, tools: [tool] });
    const otherDuringTool = other.status();
    release();
    const done = await decided;
    return { duringModel, duringTool, otherDuringTool, after: agent.status(), done: done.status };
  }, { model: sc.openai(), db: uid('db') });
  assert.equal(r.done, 'completed');
  assert.equal(r.after, 'idle');
  assert.equal(r.otherDuringTool, 'running', 'another Agent on the thread sees it running');
  assert.deepEqual({ duringModel: r.duringModel, duringTool: r.duringTool }, { duringModel: 'running', duringTool: 'running' });
});
