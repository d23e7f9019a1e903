// OpenTelemetry spans (README, "Telemetry"): the built package in Node, the local model
// server as the provider, and the real OpenTelemetry SDK (@opentelemetry/sdk-trace-base's
// in-memory exporter, @opentelemetry/context-async-hooks' context manager). What each span
// holds, how they nest, that inputs and outputs stay out unless asked for, that the approval's
// wait is a span from the time it was asked to the decision, with who decided, made once;
// that failures are error spans; and that a bad option is invalid_config.
import { after, before, beforeEach, test } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { context, trace } from '@opentelemetry/api';
import { AsyncLocalStorageContextManager } from '@opentelemetry/context-async-hooks';
import { BasicTracerProvider, InMemorySpanExporter, SimpleSpanProcessor } from '@opentelemetry/sdk-trace-base';
import { startServer } from '../model-server/server.mjs';

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../..');
const { initSync, Agent } = await import(path.join(root, 'pkg/gatehouse.js'));
initSync({ module: fs.readFileSync(path.join(root, 'pkg/gatehouse_bg.wasm')) });

const exporter = new InMemorySpanExporter();
const provider = new BasicTracerProvider({ spanProcessors: [new SimpleSpanProcessor(exporter)] });
context.setGlobalContextManager(new AsyncLocalStorageContextManager().enable());
const tracer = provider.getTracer('telemetry-test');

let server;
before(async () => { server = await startServer({ port: 0, ttlSeconds: 300 }); });
after(() => server.close());
beforeEach(() => exporter.reset());

const T = { timeout: 30_000 };
let n = 0;
const uid = (p) => `${p}-${process.pid}-${++n}`;

async function scenario(turns) {
  const id = uid('otel');
  const res = await fetch(`${server.url}/__scenarios`, {
    method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ id, turns }),
  });
  assert.equal(res.status, 200);
  return { provider: 'openai', baseUrl: `${server.url}/s/${id}/v1`, model: 'gpt-test', apiKey: 'sk-otel', maxTokens: 256 };
}

const deleteFile = {
  name: 'delete_file', description: 'Delete a file', requireApproval: true,
  parameters: { type: 'object', properties: { path: { type: 'string' } }, required: ['path'] },
  execute: async ({ path }) => {
    // A span the tool makes: a child of the run's invoke_agent span (the context manager).
    tracer.startSpan('app.delete').end();
    return { deleted: path };
  },
};
const readFile = {
  name: 'read_file', description: 'Read a file',
  parameters: { type: 'object', properties: { path: { type: 'string' } }, required: ['path'] },
  execute: async ({ path }) => { throw new Error(`no such file: ${path}`); },
};

const spans = () => exporter.getFinishedSpans();
const named = (prefix) => spans().filter((s) => s.name.startsWith(prefix));
const one = (prefix) => {
  const all = named(prefix);
  assert.equal(all.length, 1, `one ${prefix} span; spans: ${spans().map((s) => s.name).join(', ')}`);
  return all[0];
};
/** Nothing of the inputs or outputs in any span, without recordInputs / recordOutputs. */
function noContent() {
  for (const s of spans()) {
    for (const k of ['gen_ai.input.messages', 'gen_ai.output.messages', 'gen_ai.tool.call.arguments', 'gen_ai.tool.call.result']) {
      assert.equal(s.attributes[k], undefined, `${s.name} has no ${k}`);
    }
    const text = JSON.stringify(s.attributes);
    for (const v of ['/tmp/a.txt', 'Deleted.', 'delete /tmp']) assert.ok(!text.includes(v), `${s.name}'s attributes hold no ${v}`);
  }
}
const parentOf = (s) => s.parentSpanContext?.spanId;
const ms = (hr) => hr[0] * 1000 + hr[1] / 1e6;

test('a turn that gates a call, then its approval: the spans, their attributes and their nesting', T, async () => {
  const model = await scenario([
    { toolCalls: [{ id: 'call_del', name: 'delete_file', arguments: { path: '/tmp/a.txt' } }], usage: { input: 120, output: 14 } },
    { text: 'Deleted.', usage: { input: 160, output: 3 } },
  ]);
  const threadId = uid('t');
  const agent = await Agent.open({
    threadId, model, tools: [deleteFile], storage: { kind: 'memory' },
    telemetry: { tracer, agentName: 'files', attributes: { 'app.tenant': 'acme' } },
  });
  const seen = [];
  const outer = tracer.startSpan('app.request');
  const first = await context.with(trace.setSpan(context.active(), outer), () =>
    agent.chat('delete /tmp/a.txt', { onEvent: (e) => seen.push(e.type) }));
  outer.end();
  assert.equal(first.status, 'awaiting_approval');
  // The app's own listener still hears every event, the new ones included.
  assert.deepEqual(seen.filter((t) => t.startsWith('model_call')), ['model_call_started', 'model_call_ended']);

  const invoke1 = one('invoke_agent');
  assert.equal(invoke1.name, 'invoke_agent files');
  assert.equal(parentOf(invoke1), outer.spanContext().spanId, 'a child of the span active where chat was called');
  assert.equal(invoke1.attributes['gen_ai.operation.name'], 'invoke_agent');
  assert.equal(invoke1.attributes['gen_ai.agent.name'], 'files');
  assert.equal(invoke1.attributes['gen_ai.conversation.id'], threadId);
  assert.equal(invoke1.attributes['gen_ai.provider.name'], 'openai');
  assert.equal(invoke1.attributes['gen_ai.request.model'], 'gpt-test');
  assert.equal(invoke1.attributes['gatehouse.run.status'], 'awaiting_approval');
  assert.equal(invoke1.attributes['app.tenant'], 'acme');
  const chat1 = one('chat');
  assert.equal(chat1.name, 'chat gpt-test');
  assert.equal(chat1.kind, 2, 'CLIENT');
  assert.equal(parentOf(chat1), invoke1.spanContext().spanId);
  assert.equal(chat1.attributes['gen_ai.operation.name'], 'chat');
  assert.equal(chat1.attributes['gen_ai.usage.input_tokens'], 120);
  assert.equal(chat1.attributes['gen_ai.usage.output_tokens'], 14);
  assert.deepEqual(chat1.attributes['gen_ai.response.finish_reasons'], ['tool_calls']);
  assert.equal(chat1.attributes['gen_ai.request.max_tokens'], 256);
  assert.equal(named('execute_tool').length, 0, 'the gated call has not run');
  assert.equal(named('await_approval').length, 0, 'nobody decided yet');
  noContent();

  exporter.reset();
  const asked = (await agent.audit())[0].requestedAt;
  await new Promise((r) => setTimeout(r, 30));
  const second = await agent.submitDecisions({ call_del: 'approve' }, { by: 'user-42' });
  assert.equal(second.status, 'completed');
  const invoke2 = one('invoke_agent');
  assert.equal(invoke2.attributes['gatehouse.method'], 'submitDecisions');
  assert.equal(invoke2.attributes['gatehouse.run.status'], 'completed');
  const tool = one('execute_tool');
  assert.equal(tool.name, 'execute_tool delete_file');
  assert.equal(parentOf(tool), invoke2.spanContext().spanId);
  assert.equal(tool.attributes['gen_ai.tool.name'], 'delete_file');
  assert.equal(tool.attributes['gen_ai.tool.call.id'], 'call_del');
  assert.equal(tool.status.code, 0, 'not an error');
  // The tool's own span is inside the run (AsyncLocalStorage carried invoke_agent's context).
  const app = one('app.delete');
  assert.equal(app.spanContext().traceId, invoke2.spanContext().traceId);
  const chat2 = one('chat');
  assert.equal(parentOf(chat2), invoke2.spanContext().spanId);
  assert.deepEqual(chat2.attributes['gen_ai.response.finish_reasons'], ['stop']);
  // (The SDK takes a start from Date.now(), whole milliseconds, and an end from performance.now().)
  assert.ok(ms(chat2.startTime) >= Math.floor(ms(tool.endTime)), 'the model is asked after the tool ran');

  const wait = one('await_approval');
  assert.equal(wait.name, 'await_approval delete_file');
  assert.equal(wait.attributes['gen_ai.tool.call.id'], 'call_del', 'linked to execute_tool by the call id');
  assert.equal(wait.attributes['gatehouse.approval.decision'], 'approved');
  assert.equal(wait.attributes['gatehouse.approval.decided_by'], 'user-42');
  assert.equal(parentOf(wait), invoke1.spanContext().spanId, 'a child of the run that asked');
  assert.deepEqual(wait.links.map((l) => l.context.spanId), [invoke2.spanContext().spanId], 'linked to the run that decided');
  assert.equal(Math.round(ms(wait.startTime)), asked, 'from the time it was asked');
  const decided = (await agent.audit())[0].decidedAt;
  assert.equal(Math.round(ms(wait.endTime)), decided, 'to the decision');
  assert.ok(decided - asked >= 30);
  noContent();

  // Reading the thread again makes no second approval span.
  exporter.reset();
  await agent.refresh();
  assert.equal(named('await_approval').length, 0);
  await agent.dispose();
});

test('recordInputs and recordOutputs put the message, the arguments and the results in', T, async () => {
  const model = await scenario([
    { toolCalls: [{ id: 'call_r', name: 'read_file', arguments: { path: '/etc/x' } }] },
    { text: 'It is not there.' },
  ]);
  const agent = await Agent.open({
    threadId: uid('t'), model, tools: [readFile], storage: { kind: 'memory' },
    telemetry: { tracer, recordInputs: true, recordOutputs: true },
  });
  const out = await agent.chat('read /etc/x');
  assert.equal(out.status, 'completed');
  const invoke = one('invoke_agent');
  assert.equal(invoke.name, 'invoke_agent gatehouse');
  assert.deepEqual(JSON.parse(invoke.attributes['gen_ai.input.messages']),
    [{ role: 'user', parts: [{ type: 'text', content: 'read /etc/x' }] }]);
  assert.deepEqual(JSON.parse(invoke.attributes['gen_ai.output.messages']),
    [{ role: 'assistant', parts: [{ type: 'text', content: 'It is not there.' }] }]);
  const tool = one('execute_tool');
  assert.deepEqual(JSON.parse(tool.attributes['gen_ai.tool.call.arguments']), { path: '/etc/x' });
  // The tool threw: an error span, and the error the model got as its result.
  assert.equal(tool.status.code, 2);
  assert.equal(tool.attributes['error.type'], 'tool_error');
  assert.match(tool.attributes['gen_ai.tool.call.result'], /no such file/);
  await agent.dispose();
});

test('a rejection and an expiry are approval spans too; a rejection says so, without an error', T, async () => {
  const model = await scenario([
    { toolCalls: [{ id: 'call_x', name: 'delete_file', arguments: { path: 'a' } }] },
    { text: 'Understood.' },
  ]);
  const agent = await Agent.open({ threadId: uid('t'), model, tools: [deleteFile], storage: { kind: 'memory' }, telemetry: { tracer } });
  await agent.chat('delete a');
  exporter.reset();
  await agent.submitDecisions({ call_x: ['reject', 'keep it'] }, { by: 'ops' });
  const wait = one('await_approval');
  assert.equal(wait.attributes['gatehouse.approval.decision'], 'rejected');
  assert.equal(wait.attributes['gatehouse.approval.reject_reason'], 'keep it');
  assert.equal(wait.attributes['gatehouse.approval.decided_by'], 'ops');
  assert.equal(wait.status.code, 0);
  assert.equal(named('execute_tool').length, 0, 'a rejected call never runs');
  await agent.dispose();

  const model2 = await scenario([
    { toolCalls: [{ id: 'call_e', name: 'delete_file', arguments: { path: 'b' } }] },
    { text: 'Too late, then.' },
  ]);
  const agent2 = await Agent.open({
    threadId: uid('t'), model: model2, tools: [{ ...deleteFile, approvalTimeout: 50 }], storage: { kind: 'memory' }, telemetry: { tracer },
  });
  await agent2.chat('delete b');
  exporter.reset();
  // The deadline passes while the event loop is blocked, so the agent's expiry timer has not
  // fired: the decision finds the call expired, and that call writes the expiry.
  const until = Date.now() + 120;
  while (Date.now() < until);
  assert.deepEqual(agent2.pendingTools().map((e) => e.callId), ['call_e']);
  await assert.rejects(agent2.submitDecisions({ call_e: 'approve' }), { code: 'expired' });
  const expired = one('await_approval');
  assert.equal(expired.attributes['gatehouse.approval.decision'], 'expired');
  assert.equal(expired.attributes['gatehouse.approval.decided_by'], undefined);
  assert.equal(expired.status.code, 2, 'nobody decided: an error');
  await agent2.dispose();
});

test('a run the agent starts by itself (the expiry timer) is traced: its own invoke_agent, the expiry as an approval span', T, async () => {
  const model = await scenario([
    { toolCalls: [{ id: 'call_t', name: 'delete_file', arguments: { path: 't' } }] },
    { text: 'It expired, so I did nothing.' },
  ]);
  const agent = await Agent.open({
    threadId: uid('t'), model, tools: [{ ...deleteFile, approvalTimeout: 80 }], storage: { kind: 'memory' }, telemetry: { tracer },
  });
  await agent.chat('delete t');
  exporter.reset();
  // Nobody calls the agent: its timer expires the call and the run goes on to the model.
  const deadline = Date.now() + 10_000;
  while (named('await_approval').length === 0 && Date.now() < deadline) await new Promise((r) => setTimeout(r, 20));
  assert.equal(agent.status(), 'idle');
  const invoke = one('invoke_agent');
  assert.equal(invoke.attributes['gatehouse.method'], 'expiry');
  assert.equal(invoke.attributes['gatehouse.run.status'], 'completed');
  assert.equal(parentOf(invoke), undefined, 'a root: no call of the app\'s is its parent');
  const chat = one('chat');
  assert.equal(parentOf(chat), invoke.spanContext().spanId, 'the model call the expiry led to');
  const wait = one('await_approval');
  assert.equal(wait.attributes['gatehouse.approval.decision'], 'expired');
  assert.equal(wait.status.code, 2);
  assert.deepEqual(wait.links.map((l) => l.context.spanId), [invoke.spanContext().spanId]);
  await agent.dispose();
});

test('two agents on one thread: the approval span is made once, by the agent that decided; a partial decision makes none yet', T, async () => {
  const model = await scenario([
    { toolCalls: [{ id: 'call_a', name: 'delete_file', arguments: { path: 'a' } }, { id: 'call_b', name: 'delete_file', arguments: { path: 'b' } }] },
    { text: 'Both decided.' },
    { text: 'Next.' },
  ]);
  const threadId = uid('t');
  const database = uid('db');
  const open = () => Agent.open({ threadId, model, tools: [deleteFile], storage: { kind: 'memory', database }, telemetry: { tracer } });
  const asker = await open();
  await asker.chat('delete a and b');
  const decider = await open();
  exporter.reset();
  await decider.submitDecisions({ call_a: 'approve' }, { by: 'ops' });
  assert.equal(named('await_approval').length, 0, 'revisable until the last call is decided');
  await decider.submitDecisions({ call_b: ['reject', 'not b'] }, { by: 'ops' });
  assert.deepEqual(named('await_approval').map((s) => [s.attributes['gen_ai.tool.call.id'], s.attributes['gatehouse.approval.decision']]).sort(),
    [['call_a', 'approved'], ['call_b', 'rejected']]);
  // The asker, whose view still showed both calls waiting, goes on (its first write finds the
  // view stale, as documented, and reloads it): it reports nothing of them.
  await assert.rejects(asker.chat('next'), { code: 'conflict' });
  await asker.chat('next');
  assert.equal(named('await_approval').length, 2, 'no second report from the other agent');
  await asker.dispose();
  await decider.dispose();
});

test('a model call that fails after its retries: error spans, the retries as span events', T, async () => {
  const model = await scenario([{ fault: { status: 500 } }, { fault: { status: 500 } }]);
  const agent = await Agent.open({
    threadId: uid('t'), model: { ...model, maxRetries: 1 }, storage: { kind: 'memory' }, telemetry: { tracer },
  });
  await assert.rejects(agent.chat('hello'), { code: 'provider' });
  const invoke = one('invoke_agent');
  assert.equal(invoke.status.code, 2);
  assert.equal(invoke.attributes['error.type'], 'provider');
  const chat = one('chat');
  assert.equal(chat.status.code, 2);
  assert.equal(chat.attributes['error.type'], 'provider');
  assert.deepEqual(chat.events.map((e) => [e.name, e.attributes['gatehouse.retry.attempt']]), [['gen_ai.retry', 1]]);
  await agent.dispose();
});

test('a call refused before it runs is an error span with its code; nothing runs', T, async () => {
  const agent = await Agent.open({ threadId: uid('t'), storage: { kind: 'memory' }, telemetry: { tracer } });
  await assert.rejects(agent.submitDecisions({ nope: 'approve' }), { code: 'not_suspended' });
  const invoke = one('invoke_agent');
  assert.equal(invoke.attributes['error.type'], 'not_suspended');
  assert.equal(named('chat').length, 0);
  await agent.dispose();
});

test('without telemetry nothing is traced; a bad telemetry option is invalid_config and opens nothing', T, async () => {
  const agent = await Agent.open({ threadId: uid('t'), storage: { kind: 'memory' } });
  await agent.chat('hello');
  assert.equal(spans().length, 0);
  await agent.dispose();

  const bad = [
    [{ tracer: {} }, /OpenTelemetry Tracer/],
    [{ tracer, recordInput: true }, /unknown key `recordInput`/],
    [{ tracer, recordOutputs: 'yes' }, /recordOutputs/],
    [{ tracer, attributes: { a: {} } }, /attributes\.a/],
    ['on', /must be an object/],
  ];
  for (const [telemetry, message] of bad) {
    await assert.rejects(Agent.open({ threadId: uid('t'), storage: { kind: 'memory' }, telemetry }),
      (e) => e.code === 'invalid_config' && message.test(e.message), String(message));
  }
  // A misspelled `telemetry` is refused by name, like every option.
  await assert.rejects(Agent.open({ threadId: uid('t'), storage: { kind: 'memory' }, telemetri: { tracer } }),
    (e) => e.code === 'invalid_config' && /did you mean `telemetry`/.test(e.message));
});

test("run options that are not an object are refused as without telemetry, and traced as nothing", T, async () => {
  const traced = await Agent.open({ threadId: uid('t'), storage: { kind: 'memory' }, telemetry: { tracer } });
  const plain = await Agent.open({ threadId: uid('t'), storage: { kind: 'memory' } });
  const code = (p) => p.then(() => 'resolved', (e) => e.code);
  for (const [method, args] of [['chat', ['hello', 'fast']], ['chat', ['hello', 7]], ['retry', [[]]], ['submitDecisions', [{ x: 'approve' }, 'by me']]]) {
    const without = await code(plain[method](...args));
    assert.equal(await code(traced[method](...args)), without, `${method}(${JSON.stringify(args)})`);
  }
  assert.equal(await code(plain.chat('hello', 'fast')), 'invalid_config');
  assert.equal(named('invoke_agent').length, 0);
  await traced.dispose();
  await plain.dispose();
});

test('a tracer that throws never stops the run', T, async () => {
  const throwing = {
    startActiveSpan: (name, opts, fn) => tracer.startActiveSpan(name, opts, fn),
    startSpan: () => { throw new Error('exporter down'); },
  };
  const model = await scenario([{ text: 'Fine.' }]);
  const agent = await Agent.open({ threadId: uid('t'), model, storage: { kind: 'memory' }, telemetry: { tracer: throwing } });
  const out = await agent.chat('hello');
  assert.equal(out.status, 'completed');
  assert.equal(one('invoke_agent').attributes['gatehouse.run.status'], 'completed');
  await agent.dispose();
});
