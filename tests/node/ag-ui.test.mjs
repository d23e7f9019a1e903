// gatehouse-agent/ag-ui: the AG-UI 1.0 adapter, driven by the official client
// (@ag-ui/client's AbstractAgent.runAgent, which enforces the protocol's event ordering with
// verifyEvents and keeps the thread's pending interrupts) and every event validated by
// @ag-ui/core's schemas; the built package in Node, the local model server as the provider.
// A gated call ends the run with an interrupt outcome; the next run's resume decides it; a
// resume for an unknown interrupt or with a malformed answer is RUN_ERROR with a stable code
// and changes nothing.
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { AbstractAgent, verifyEvents } from '@ag-ui/client';
import { EventSchemas } from '@ag-ui/core/schemas';
import { Observable, from, lastValueFrom, toArray } from 'rxjs';
import { startServer } from '../model-server/server.mjs';

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../..');
const { initSync, Agent } = await import(path.join(root, 'pkg/gatehouse.js'));
const { agUiEvents, DECISION_SCHEMA } = await import(path.join(root, 'pkg/ag-ui.js'));
initSync({ module: fs.readFileSync(path.join(root, 'pkg/gatehouse_bg.wasm')) });

let server;
before(async () => { server = await startServer({ port: 0, ttlSeconds: 300 }); });
after(() => server.close());

const T = { timeout: 30_000 };
let n = 0;
const uid = (p) => `${p}-${process.pid}-${++n}`;

async function scenario(turns) {
  const id = uid('agui');
  const res = await fetch(`${server.url}/__scenarios`, {
    method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ id, turns }),
  });
  assert.equal(res.status, 200);
  return { provider: 'openai', baseUrl: `${server.url}/s/${id}/v1`, model: 'gpt-test', apiKey: 'sk-agui' };
}

const deleteFile = {
  name: 'delete_file', description: 'Delete a file', requireApproval: true, approvalReason: 'Deleting is irreversible',
  parameters: { type: 'object', properties: { path: { type: 'string' } }, required: ['path'] },
  execute: async ({ path }) => ({ deleted: path }),
};

/** Every event valid by @ag-ui/core's schema. */
function valid(events) {
  for (const e of events) {
    const r = EventSchemas.safeParse(e);
    assert.ok(r.success, `${e.type} is not a valid AG-UI event: ${r.error?.message}\n${JSON.stringify(e)}`);
  }
  return events;
}

/** The events of one run, straight from the adapter, validated and put through the client's
 *  ordering rules (verifyEvents). */
async function collect(agent, input, options) {
  const events = [];
  for await (const e of agUiEvents(agent, { messages: [], tools: [], context: [], ...input }, options)) events.push(e);
  valid(events);
  await lastValueFrom(from(events).pipe(verifyEvents(false), toArray()));
  return events;
}

/** A Gatehouse agent as the AG-UI client sees one: what a CopilotKit app would plug in. */
class GatehouseAgUi extends AbstractAgent {
  constructor(agent, seen) {
    super({ threadId: agent.threadId });
    this.gatehouse = agent;
    this.seen = seen;
  }
  run(input) {
    return new Observable((sub) => {
      const ac = new AbortController();
      (async () => {
        for await (const e of agUiEvents(this.gatehouse, input, { signal: ac.signal, by: 'reviewer-7' })) {
          this.seen.push(e);
          sub.next(e);
        }
        sub.complete();
      })().catch((e) => sub.error(e));
      return () => ac.abort();
    });
  }
}

const types = (events) => events.map((e) => e.type);
/** The types with repeats in a row (a streamed text's or arguments' pieces) as one. */
const shape = (events) => types(events).filter((t, i, all) => t !== all[i - 1]);

test('through the AG-UI client: a gated call is an interrupt, the next run resumes it, the thread follows', T, async () => {
  const model = await scenario([
    { text: 'I will delete it. ', toolCalls: [{ id: 'call_del', name: 'delete_file', arguments: { path: '/tmp/a.txt' } }], usage: { input: 50, output: 9 } },
    { text: 'Deleted /tmp/a.txt.', splitWrites: true, usage: { input: 80, output: 5 } },
  ]);
  const threadId = uid('t');
  const agent = await Agent.open({ threadId, model, tools: [deleteFile], storage: { kind: 'memory' } });
  const seen = [];
  const client = new GatehouseAgUi(agent, seen);
  client.addMessage({ id: 'u1', role: 'user', content: 'delete /tmp/a.txt' });

  await client.runAgent({ runId: 'run-1' });
  valid(seen);
  assert.deepEqual(shape(seen), [
    'RUN_STARTED', 'TEXT_MESSAGE_START', 'TEXT_MESSAGE_CONTENT', 'TEXT_MESSAGE_END',
    'TOOL_CALL_START', 'TOOL_CALL_ARGS', 'TOOL_CALL_END', 'RUN_FINISHED',
  ]);
  const finished = seen.at(-1);
  assert.equal(finished.outcome.type, 'interrupt');
  assert.deepEqual(finished.outcome.interrupts, [{
    id: 'call_del', reason: 'tool_approval', message: 'Deleting is irreversible', toolCallId: 'call_del',
    responseSchema: DECISION_SCHEMA,
    metadata: { tool: 'delete_file', inputs: { path: '/tmp/a.txt' }, approvals: [], needed: 1, blocked: null },
  }]);
  assert.deepEqual(finished.usage, [{ inputTokens: 50, outputTokens: 9, totalTokens: 59 }]);
  assert.equal(JSON.parse(seen.filter((e) => e.type === 'TOOL_CALL_ARGS').map((e) => e.delta).join('')).path, '/tmp/a.txt');
  // The client now holds the interrupt, and refuses a run that does not answer it.
  assert.deepEqual(client.pendingInterrupts.map((i) => i.id), ['call_del']);
  await assert.rejects(client.runAgent({ runId: 'run-x' }), /pending interrupt/);
  assert.equal(agent.status(), 'awaiting_approval', 'nothing reached the agent');

  seen.length = 0;
  await client.runAgent({ runId: 'run-2', resume: [{ interruptId: 'call_del', status: 'resolved', payload: { decision: 'approve' } }] });
  valid(seen);
  assert.deepEqual(shape(seen), [
    'RUN_STARTED', 'TOOL_CALL_RESULT', 'TEXT_MESSAGE_START', 'TEXT_MESSAGE_CONTENT', 'TEXT_MESSAGE_END', 'RUN_FINISHED',
  ]);
  assert.ok(types(seen).filter((t) => t === 'TEXT_MESSAGE_CONTENT').length > 1, 'the answer streamed in pieces');
  assert.deepEqual(JSON.parse(seen.find((e) => e.type === 'TOOL_CALL_RESULT').content), { deleted: '/tmp/a.txt' });
  assert.deepEqual(seen.at(-1).outcome, { type: 'success' });
  assert.equal(client.pendingInterrupts.length, 0);
  // The client's messages: the user's, the assistant's with its call, the result, the answer.
  const last = client.messages.at(-1);
  assert.equal(last.role, 'assistant');
  assert.equal(last.content, 'Deleted /tmp/a.txt.');
  assert.ok(client.messages.some((m) => m.role === 'tool' && m.toolCallId === 'call_del'));
  // And the thread: approved once, by the identity the adapter was given.
  const [record] = await agent.audit();
  assert.equal(record.decision, 'approved');
  assert.equal(record.decidedBy, 'reviewer-7');
  assert.equal(agent.status(), 'idle');
  await agent.dispose();
});

test('an answer that was not streamed (stream: false; a custom model without onText) still reaches the client whole', T, async () => {
  const model = await scenario([
    { text: 'Let me delete it.', toolCalls: [{ id: 'call_ns', name: 'delete_file', arguments: { path: 'n' } }] },
  ]);
  const custom = {
    provider: 'custom',
    call: async () => ({ text: 'Let me delete it.', toolCalls: [{ id: 'call_ns', name: 'delete_file', arguments: { path: 'n' } }] }),
  };
  for (const m of [{ ...model, stream: false }, custom]) {
    const agent = await Agent.open({ threadId: uid('t'), model: m, tools: [deleteFile], storage: { kind: 'memory' } });
    const events = await collect(agent, { threadId: agent.threadId, runId: 'r1', messages: [{ id: 'u', role: 'user', content: 'delete n' }] });
    assert.deepEqual(types(events), [
      'RUN_STARTED', 'TEXT_MESSAGE_START', 'TEXT_MESSAGE_CONTENT', 'TEXT_MESSAGE_END',
      'TOOL_CALL_START', 'TOOL_CALL_ARGS', 'TOOL_CALL_END', 'RUN_FINISHED',
    ], m.provider);
    assert.equal(events[2].delta, 'Let me delete it.');
    assert.deepEqual(JSON.parse(events[5].delta), { path: 'n' });
    assert.equal(events.at(-1).outcome.interrupts[0].id, 'call_ns');
    await agent.dispose();
  }
});

test('a rejection, by a reason or by cancelling the interrupt, reaches the model as one', T, async () => {
  for (const [entry, reason] of [
    [{ status: 'resolved', payload: { decision: 'reject', reason: 'keep it' } }, 'keep it'],
    [{ status: 'cancelled' }, null],
  ]) {
    const model = await scenario([
      { toolCalls: [{ id: 'call_r', name: 'delete_file', arguments: { path: 'b' } }] },
      { text: 'Kept.' },
    ]);
    const agent = await Agent.open({ threadId: uid('t'), model, tools: [deleteFile], storage: { kind: 'memory' } });
    await collect(agent, { threadId: agent.threadId, runId: 'r1', messages: [{ id: 'u', role: 'user', content: 'delete b' }] });
    const events = await collect(agent, { threadId: agent.threadId, runId: 'r2', resume: [{ interruptId: 'call_r', ...entry }] });
    assert.match(events.find((e) => e.type === 'TOOL_CALL_RESULT').content, /^TOOL NOT EXECUTED\. The user rejected this action/);
    const [record] = await agent.audit();
    assert.equal(record.decision, 'rejected');
    assert.equal(record.rejectReason, reason);
    await agent.dispose();
  }
});

test('an edit runs the edited inputs', T, async () => {
  const model = await scenario([
    { toolCalls: [{ id: 'call_e', name: 'delete_file', arguments: { path: '/etc/passwd' } }] },
    { text: 'Done.' },
  ]);
  const agent = await Agent.open({ threadId: uid('t'), model, tools: [deleteFile], storage: { kind: 'memory' } });
  await collect(agent, { threadId: agent.threadId, runId: 'r1', messages: [{ id: 'u', role: 'user', content: [{ type: 'text', text: 'clean up' }] }] });
  const events = await collect(agent, {
    threadId: agent.threadId, runId: 'r2',
    resume: [{ interruptId: 'call_e', status: 'resolved', payload: { decision: 'edit', inputs: { path: '/tmp/x' } } }],
  });
  assert.match(events.find((e) => e.type === 'TOOL_CALL_RESULT').content, /It ran with: \{"path":"\/tmp\/x"\}/);
  await agent.dispose();
});

test('bad input: an unknown interrupt, a malformed answer, another thread, no user message: RUN_ERROR with its code, nothing changed', T, async () => {
  const model = await scenario([{ toolCalls: [{ id: 'call_k', name: 'delete_file', arguments: { path: 'c' } }] }]);
  const agent = await Agent.open({ threadId: uid('t'), model, tools: [deleteFile], storage: { kind: 'memory' } });
  await collect(agent, { threadId: agent.threadId, runId: 'r1', messages: [{ id: 'u', role: 'user', content: 'delete c' }] });
  const before = JSON.stringify(agent.lastMessage());
  const cases = [
    [{ resume: [{ interruptId: 'call_nope', status: 'resolved', payload: { decision: 'approve' } }] }, 'unknown_call_id'],
    [{ resume: [{ interruptId: 'call_k', status: 'resolved', payload: { decision: 'yes' } }] }, 'invalid_decision'],
    [{ resume: [{ interruptId: 'call_k', status: 'resolved', payload: { decision: 'edit', inputs: [1] } }] }, 'invalid_decision'],
    [{ resume: [{ interruptId: 'call_k', status: 'done' }] }, 'invalid_decision'],
    [{ resume: [{ interruptId: 'call_k', status: 'resolved', payload: { decision: 'edit', inputs: { path: 7 } } }] }, 'invalid_decision'],
    [{ messages: [{ id: 'u2', role: 'user', content: 'something else' }] }, 'conflict'],
    [{ threadId: 'another-thread', messages: [{ id: 'u2', role: 'user', content: 'hi' }] }, 'invalid_config'],
    [{ messages: [{ id: 'a', role: 'assistant', content: 'hm' }] }, 'invalid_config'],
  ];
  for (const [input, code] of cases) {
    const events = await collect(agent, { threadId: agent.threadId, runId: uid('r'), ...input });
    assert.deepEqual(types(events), ['RUN_STARTED', 'RUN_ERROR'], JSON.stringify(input));
    assert.equal(events[1].code, code, `${JSON.stringify(input)}: ${events[1].message}`);
    assert.equal(JSON.stringify(agent.lastMessage()), before, 'the thread is unchanged');
    assert.equal(agent.status(), 'awaiting_approval');
  }
  assert.equal((await agent.audit())[0].decision, null, 'nothing was decided');
  await agent.dispose();
});

test('an aborted run finishes cancelled; a provider error is RUN_ERROR provider', T, async () => {
  const model = await scenario([{ text: 'A slow answer that streams for a while.', splitWrites: true, delayMs: 400 }]);
  const agent = await Agent.open({ threadId: uid('t'), model, storage: { kind: 'memory' } });
  const ac = new AbortController();
  setTimeout(() => ac.abort(), 100);
  const events = await collect(agent, { threadId: agent.threadId, runId: 'r1', messages: [{ id: 'u', role: 'user', content: 'hi' }] }, { signal: ac.signal });
  assert.deepEqual(events.at(-1).outcome, { type: 'cancelled' });
  await agent.dispose();

  const broken = await scenario([{ fault: { status: 400, message: 'no such model' } }]);
  const agent2 = await Agent.open({ threadId: uid('t'), model: broken, storage: { kind: 'memory' } });
  const errs = await collect(agent2, { threadId: agent2.threadId, runId: 'r1', messages: [{ id: 'u', role: 'user', content: 'hi' }] });
  assert.equal(errs.at(-1).type, 'RUN_ERROR');
  assert.equal(errs.at(-1).code, 'provider');
  await agent2.dispose();
});
