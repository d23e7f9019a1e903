// The built package's HTTP path in Node 20 (no `window`, Node's own fetch and streams), against
// the local model server: streamed turns of both providers, the key only in headers, HTTP
// errors and Retry-After, a refused connection, and an abort with a string reason.
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { startServer } from '../model-server/server.mjs';

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../..');
const { initSync, Agent } = await import(path.join(root, 'pkg/gatehouse.js'));
initSync({ module: fs.readFileSync(path.join(root, 'pkg/gatehouse_bg.wasm')) });

let server;
before(async () => { server = await startServer({ port: 0, ttlSeconds: 300 }); });
after(() => server.close());

let n = 0;
// A panic traps the instance and leaves its promises pending: fail by time, not hang.
const T = { timeout: 30_000 };
const uid = (p) => `${p}-${process.pid}-${++n}`;

async function control(method, url, body) {
  const res = await fetch(server.url + url, {
    method, headers: { 'content-type': 'application/json' }, body: body && JSON.stringify(body),
  });
  assert.ok(res.ok, `${method} ${url}: ${res.status}`);
  return res.json();
}

/** A scripted scenario; returns the model options of each provider and its recorded requests. */
async function scenario(turns) {
  const id = uid('node');
  await control('POST', '/__scenarios', { id, turns });
  return {
    openai: (extra) => ({ provider: 'openai', baseUrl: `${server.url}/s/${id}/v1`, model: 'gpt-test', apiKey: 'sk-node', ...extra }),
    anthropic: (extra) => ({ provider: 'anthropic', baseUrl: `${server.url}/s/${id}`, model: 'claude-test', apiKey: 'sk-ant-node', ...extra }),
    requests: () => control('GET', `/__scenarios/${id}/requests`),
  };
}

async function chat(model, message, opts = {}) {
  const agent = await Agent.open({ threadId: uid('t'), model, storage: { kind: 'memory' } });
  const events = [];
  let error = null;
  let state = null;
  try {
    state = await agent.chat(message, { onEvent: (e) => events.push(e), ...opts });
  } catch (e) {
    error = e;
  }
  return { agent, state, error, events };
}

const textOf = (m) => m.content.filter((b) => b.type === 'text').map((b) => b.content).join('');

test('an OpenAI streamed turn: deltas as they arrive, the key only in the Authorization header', T, async () => {
  const sc = await scenario([{ text: 'Streamed from Node.', splitWrites: true }]);
  const { state, error, events } = await chat(sc.openai(), 'hello');
  assert.equal(error, null);
  assert.equal(state.status, 'completed');
  assert.equal(textOf(state.message), 'Streamed from Node.');
  const deltas = events.filter((e) => e.type === 'text_delta');
  assert.ok(deltas.length > 1, 'more than one delta');
  assert.equal(deltas.map((e) => e.delta).join(''), 'Streamed from Node.');
  const [req] = await sc.requests();
  assert.equal(req.stream, true);
  assert.equal(req.outcome, 'completed');
  assert.equal(req.headers.authorization, 'Bearer sk-node');
  assert.ok(!JSON.stringify(req.body).includes('sk-node'), 'the key is not in the body');
  assert.ok(!req.path.includes('sk-node'), 'nor in the URL');
});

test('an Anthropic streamed turn with a tool call, and the browser-access header', T, async () => {
  const sc = await scenario([{ toolCalls: [{ id: 'toolu_1', name: 'echo', arguments: { s: 'ö' } }] }, { text: 'Done.' }]);
  const agent = await Agent.open({
    threadId: uid('t'), model: sc.anthropic(), storage: { kind: 'memory' },
    tools: [{ name: 'echo', parameters: { type: 'object' }, execute: ({ s }) => s }],
  });
  const state = await agent.chat('echo');
  assert.equal(state.status, 'completed');
  assert.equal(textOf(state.message), 'Done.');
  const reqs = await sc.requests();
  assert.equal(reqs.length, 2);
  assert.equal(reqs[0].headers['x-api-key'], 'sk-ant-node');
  assert.equal(reqs[0].headers['anthropic-dangerous-direct-browser-access'], 'true');
  assert.equal(reqs[1].body.messages.at(-1).content[0].type, 'tool_result');
});

test('HTTP errors: Retry-After as an HTTP date is honoured; a 400 is a provider error with status and body', T, async () => {
  const date = new Date(Date.now() + 2000).toUTCString();
  const sc = await scenario([{ fault: { status: 429, retryAfter: date } }, { text: 'After the wait.' }]);
  const r = await chat(sc.openai(), 'hello');
  assert.equal(r.error, null);
  assert.equal(textOf(r.state.message), 'After the wait.');
  const retry = r.events.find((e) => e.type === 'retry');
  assert.equal(retry?.error.code, 'provider');
  assert.ok(retry.delayMs > 0 && retry.delayMs <= 2000, `delay ${retry.delayMs} ms from ${date}`);

  const sc2 = await scenario([{ fault: { status: 400, message: 'no such model' } }]);
  const r2 = await chat(sc2.openai(), 'hello');
  assert.equal(r2.error?.name, 'GatehouseError');
  assert.equal(r2.error.code, 'provider');
  assert.equal(r2.error.status, 400);
  assert.match(String(r2.error.body), /no such model/);
  assert.equal((await sc2.requests()).length, 1, 'a 400 is not retried');
});

test('a refused connection is a network error; a cut stream is retried', T, async () => {
  const r = await chat({ provider: 'openai', baseUrl: 'http://127.0.0.1:9/v1', model: 'm', maxRetries: 0 }, 'hello');
  assert.equal(r.error?.code, 'network');
  assert.equal(r.error.retryable, true);

  const sc = await scenario([{ text: 'Lost words that never finish', fault: { dropAfterEvents: 3 } }, { text: 'Second try.' }]);
  const r2 = await chat(sc.openai(), 'hello');
  assert.equal(r2.error, null);
  assert.equal(textOf(r2.state.message), 'Second try.');
  assert.equal(r2.events.find((e) => e.type === 'retry')?.error.code, 'network');

  // A JSON answer (stream: false) cut halfway is a network failure too, not a malformed answer.
  const sc3 = await scenario([{ text: 'Lost words', fault: { dropAfterEvents: 1 } }, { text: 'Whole.' }]);
  const r3 = await chat(sc3.openai({ stream: false }), 'hello');
  assert.equal(r3.error, null);
  assert.equal(textOf(r3.state.message), 'Whole.');
  assert.equal(r3.events.find((e) => e.type === 'retry')?.error.code, 'network');
  assert.deepEqual((await sc3.requests()).map((q) => [q.stream, q.outcome]), [[false, 'dropped'], [false, 'completed']]);
});

test('a request fetch refuses to build is invalid_config, sent nowhere and not retried', T, async () => {
  const sc = await scenario([{ text: 'never' }]);
  for (const model of [
    sc.openai({ headers: { 'x-app': 'a\u2026b' } }), // not a byte string: Headers refuses it
    sc.openai({ baseUrl: 'http://[::1/v1' }),
  ]) {
    const r = await chat(model, 'hello');
    assert.equal(r.error?.code, 'invalid_config', `${JSON.stringify(model)}: ${r.error}`);
    assert.equal(r.events.filter((e) => e.type === 'retry').length, 0);
  }
  assert.equal((await sc.requests()).length, 0);
});

test('abort("a string") mid-stream and before the headers: aborted, and the instance keeps working', T, async () => {
  for (const fault of [{ hang: true }, { hangAfterEvents: 3 }]) {
    const sc = await scenario([{ text: 'one two three four', fault }]);
    const ac = new AbortController();
    setTimeout(() => ac.abort('the user pressed stop'), 300);
    const r = await chat(sc.openai(), 'hello', { signal: ac.signal });
    assert.ok(r.error instanceof Error, JSON.stringify(fault));
    assert.equal(r.error.code, 'aborted', JSON.stringify(fault));
    assert.equal(r.agent.status(), 'interrupted');
  }
  const sc = await scenario([{ text: 'Alive.' }]);
  assert.equal(textOf((await chat(sc.openai(), 'hello')).state.message), 'Alive.');
});
