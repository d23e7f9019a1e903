// Self-test for the model server: `node --test tests/model-server/`
// Runs the real CLI as a child process and talks to it with fetch / node:http.

import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { once } from 'node:events';
import { mkdtempSync, mkdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import http from 'node:http';
import os from 'node:os';
import path from 'node:path';
import { after, before, describe, test } from 'node:test';
import { fileURLToPath } from 'node:url';

const SERVER = path.join(path.dirname(fileURLToPath(import.meta.url)), 'server.mjs');
const WASM_BYTES = Buffer.from([0x00, 0x61, 0x73, 0x6d, 0x01, 0x00, 0x00, 0x00]);

// ----------------------------------------------------------------------------- helpers

/** Starts the CLI; resolves to { child, port, base } once the port file appears. */
async function startChild(args, portFile) {
  const child = spawn(process.execPath, [SERVER, ...args], { stdio: ['ignore', 'pipe', 'pipe'] });
  let out = '';
  child.stdout.on('data', (d) => { out += d; });
  child.stderr.on('data', (d) => { out += d; });
  const deadline = Date.now() + 10_000;
  for (;;) {
    const m = /model-server listening on http:\/\/127\.0\.0\.1:(\d+)/.exec(out);
    if (m) {
      if (portFile) assert.equal(readFileSync(portFile, 'utf8').trim(), m[1]);
      return { child, port: Number(m[1]), base: `http://127.0.0.1:${m[1]}`, output: () => out };
    }
    if (child.exitCode !== null || Date.now() > deadline) throw new Error(`server did not start:\n${out}`);
    await new Promise((r) => setTimeout(r, 20));
  }
}

async function waitExit(child, ms) {
  if (child.exitCode !== null) return child.exitCode;
  const timer = setTimeout(() => child.kill('SIGKILL'), ms);
  const [code] = await once(child, 'exit');
  clearTimeout(timer);
  return code;
}

/** A small, spec-following SSE parser (handles CRLF/LF, multi-line data, comments, split chunks). */
async function readSse(response) {
  const events = [];
  const decoder = new TextDecoder();
  let buf = '';
  let cur = { event: 'message', data: [] };
  let error = null;
  const line = (l) => {
    if (l === '') {
      if (cur.data.length) events.push({ event: cur.event, data: cur.data.join('\n') });
      cur = { event: 'message', data: [] };
      return;
    }
    if (l.startsWith(':')) return;
    const i = l.indexOf(':');
    const field = i < 0 ? l : l.slice(0, i);
    let value = i < 0 ? '' : l.slice(i + 1);
    if (value.startsWith(' ')) value = value.slice(1);
    if (field === 'event') cur.event = value;
    else if (field === 'data') cur.data.push(value);
  };
  try {
    for await (const chunk of response.body) {
      buf += decoder.decode(chunk, { stream: true });
      let m;
      while ((m = /\r\n|\r|\n/.exec(buf))) {
        line(buf.slice(0, m.index));
        buf = buf.slice(m.index + m[0].length);
      }
    }
    buf += decoder.decode();
  } catch (e) {
    error = e;
  }
  return { events, error, leftover: buf };
}

const json = (o) => JSON.stringify(o);

// ----------------------------------------------------------------------------- suite

let srv;
let tmp;

async function scenario(spec) {
  const r = await fetch(`${srv.base}/__scenarios`, { method: 'POST', body: json(spec) });
  assert.equal(r.status, 200, await r.clone().text());
  return (await r.json()).id;
}

function openaiReq(id, body, headers = {}, init = {}) {
  return fetch(`${srv.base}/s/${id}/v1/chat/completions`, {
    ...init,
    method: 'POST',
    headers: { 'content-type': 'application/json', authorization: 'Bearer sk-test', ...headers },
    body: json({ model: 'gpt-test', messages: [{ role: 'user', content: 'hi' }], ...body }),
  });
}

function anthropicReq(id, body, headers = {}) {
  return fetch(`${srv.base}/s/${id}/v1/messages`, {
    method: 'POST',
    headers: {
      'content-type': 'application/json', 'x-api-key': 'sk-ant-test', 'anthropic-version': '2023-06-01',
      'anthropic-dangerous-direct-browser-access': 'true', ...headers,
    },
    body: json({ model: 'claude-test', max_tokens: 100, messages: [{ role: 'user', content: 'hi' }], ...body }),
  });
}

/** Raw HTTP GET that does not normalise the path (fetch would resolve "..") */
function rawGet(port, rawPath) {
  return new Promise((resolve, reject) => {
    http.get({ host: '127.0.0.1', port, path: rawPath }, (res) => {
      let body = '';
      res.setEncoding('utf8');
      res.on('data', (d) => { body += d; });
      res.on('end', () => resolve({ status: res.statusCode, headers: res.headers, body }));
    }).on('error', reject);
  });
}

before(async () => {
  tmp = mkdtempSync(path.join(os.tmpdir(), 'model-server-test-'));
  const root = path.join(tmp, 'www');
  mkdirSync(path.join(root, 'sub'), { recursive: true });
  writeFileSync(path.join(root, 'index.html'), '<!doctype html><title>root</title>');
  writeFileSync(path.join(root, 'sub', 'index.html'), '<!doctype html><title>sub</title>');
  writeFileSync(path.join(root, 'app.wasm'), WASM_BYTES);
  writeFileSync(path.join(root, 'app.js'), 'export const x = 1;\n');
  writeFileSync(path.join(root, 'mod.mjs'), 'export {};\n');
  writeFileSync(path.join(tmp, 'secret.txt'), 'TOP-SECRET');
  const portFile = path.join(tmp, 'port');
  srv = await startChild(['--port', '0', '--port-file', portFile, '--static', root, '--ttl-seconds', '300'], portFile);
});

after(async () => {
  if (srv) {
    const r = await fetch(`${srv.base}/__shutdown`, { method: 'POST' }).catch(() => null);
    assert.equal(r?.status, 200);
    assert.equal(await waitExit(srv.child, 5000), 0, 'POST /__shutdown exits with code 0');
  }
  rmSync(tmp, { recursive: true, force: true });
});

describe('OpenAI Chat Completions', () => {
  test('streamed turn: text + two tool calls, fragmented arguments, usage chunk, [DONE]', async () => {
    const args1 = { city: 'Paris', units: 'metric' };
    const args2 = { query: 'naïve café ☕ 🦀', ids: [1, 2, 3], nested: { ok: true } };
    const id = await scenario({ turns: [{
      text: 'Let me check two things.',
      toolCalls: [{ id: 'call_a', name: 'get_weather', arguments: args1 }, { id: 'call_b', name: 'search', arguments: args2 }],
      usage: { input: 12, output: 34 },
    }] });
    const r = await openaiReq(id, { stream: true, stream_options: { include_usage: true } });
    assert.equal(r.status, 200);
    assert.match(r.headers.get('content-type'), /^text\/event-stream/);
    assert.equal(r.headers.get('access-control-allow-origin'), '*');
    const { events, error } = await readSse(r);
    assert.equal(error, null);
    assert.equal(events.at(-1).data, '[DONE]');
    const chunks = events.slice(0, -1).map((e) => JSON.parse(e.data));
    assert.ok(chunks.every((c) => c.object === 'chat.completion.chunk' && c.model === 'gpt-test'));
    assert.equal(new Set(chunks.map((c) => c.id)).size, 1, 'one id across chunks');
    assert.equal(chunks[0].choices[0].delta.role, 'assistant');

    const body = chunks.filter((c) => c.choices.length);
    const text = body.map((c) => c.choices[0].delta.content ?? '').join('');
    assert.equal(text, 'Let me check two things.');
    assert.ok(body.filter((c) => c.choices[0].delta.content).length >= 5, 'text arrives word by word');

    const calls = [];
    let fragments = 0;
    for (const c of body) {
      for (const tc of c.choices[0].delta.tool_calls ?? []) {
        if (!calls[tc.index]) {
          assert.ok(tc.id && tc.type === 'function' && tc.function.name, 'first delta of a call carries id/type/name');
          calls[tc.index] = { id: tc.id, name: tc.function.name, args: tc.function.arguments };
        } else {
          assert.equal(tc.id, undefined);
          assert.equal(tc.function.name, undefined);
          assert.ok(Array.from(tc.function.arguments).length <= 3, "fragments of at most argChunk (3) code points");
          calls[tc.index].args += tc.function.arguments;
          fragments++;
        }
      }
    }
    assert.deepEqual(calls.map((c) => [c.id, c.name]), [['call_a', 'get_weather'], ['call_b', 'search']]);
    assert.deepEqual(JSON.parse(calls[0].args), args1);
    assert.deepEqual(JSON.parse(calls[1].args), args2);
    assert.ok(fragments > 20, `arguments arrive in many small deltas (${fragments})`);

    const finishes = body.map((c) => c.choices[0].finish_reason).filter(Boolean);
    assert.deepEqual(finishes, ['tool_calls']);
    const usage = chunks.at(-1);
    assert.deepEqual(usage.choices, []);
    assert.equal(usage.usage.prompt_tokens, 12);
    assert.equal(usage.usage.completion_tokens, 34);
    assert.equal(usage.usage.total_tokens, 46);
    assert.ok(body.every((c) => c.usage === null), 'other chunks carry usage: null');
  });

  test('no usage chunk without stream_options.include_usage; finish_reason stop', async () => {
    const id = await scenario({ turns: [{ text: 'hello' }] });
    const { events } = await readSse(await openaiReq(id, { stream: true }));
    const chunks = events.slice(0, -1).map((e) => JSON.parse(e.data));
    assert.ok(chunks.every((c) => c.choices.length === 1 && !('usage' in c)));
    assert.equal(chunks.at(-1).choices[0].finish_reason, 'stop');
  });

  test('non-streaming chat.completion with a tool call and invalid-JSON arguments verbatim', async () => {
    const id = await scenario({ turns: [
      { text: 'Hi!', usage: { input: 3, output: 2 } },
      { toolCalls: [{ id: 'call_x', name: 'broken', arguments: '{"a": 1,,' }] },
    ] });
    const a = await (await openaiReq(id, {})).json();
    assert.equal(a.object, 'chat.completion');
    assert.equal(a.choices[0].message.content, 'Hi!');
    assert.equal(a.choices[0].finish_reason, 'stop');
    assert.deepEqual([a.usage.prompt_tokens, a.usage.completion_tokens, a.usage.total_tokens], [3, 2, 5]);
    const b = await (await openaiReq(id, {})).json();
    assert.equal(b.choices[0].message.content, null);
    assert.deepEqual(b.choices[0].message.tool_calls, [{ id: 'call_x', type: 'function', function: { name: 'broken', arguments: '{"a": 1,,' } }]);
    assert.equal(b.choices[0].finish_reason, 'tool_calls');
  });

  test('mid-stream error line and truncate', async () => {
    const id = await scenario({ turns: [
      { text: 'one two three four', fault: { streamError: { type: 'server_error', message: 'boom' } } },
      { text: 'one two three', fault: { truncate: true } },
    ] });
    const a = await readSse(await openaiReq(id, { stream: true }));
    assert.deepEqual(JSON.parse(a.events.at(-1).data), { error: { message: 'boom', type: 'server_error', param: null, code: null } });
    assert.ok(!a.events.some((e) => e.data === '[DONE]'));
    const b = await readSse(await openaiReq(id, { stream: true }));
    assert.equal(b.error, null, 'ends cleanly');
    assert.ok(!b.events.some((e) => e.data === '[DONE]'));
    assert.equal(JSON.parse(b.events.at(-1).data).choices[0].finish_reason, 'stop');
  });
});

describe('Anthropic Messages', () => {
  test('streamed turn: text block + tool_use with partial_json fragments', async () => {
    const input = { path: '/tmp/ä.txt', lines: [1, 2], mode: 'r' };
    const id = await scenario({ turns: [{
      text: 'Sure, reading it.',
      toolCalls: [{ id: 'toolu_1', name: 'read_file', arguments: input }],
      usage: { input: 50, output: 21 }, argChunk: 4,
    }] });
    const r = await anthropicReq(id, { stream: true });
    assert.equal(r.status, 200);
    assert.match(r.headers.get('content-type'), /^text\/event-stream/);
    const { events, error } = await readSse(r);
    assert.equal(error, null);
    const data = events.map((e) => JSON.parse(e.data));
    events.forEach((e, i) => assert.equal(e.event, data[i].type, 'event: line matches data.type'));
    const types = events.map((e) => e.event);
    assert.deepEqual(types.slice(0, 3), ['message_start', 'content_block_start', 'ping']);
    assert.deepEqual(types.slice(-3), ['content_block_stop', 'message_delta', 'message_stop']);
    assert.equal(data[0].message.usage.input_tokens, 50);
    assert.equal(data[0].message.model, 'claude-test');
    assert.deepEqual(data[1].content_block, { type: 'text', text: '' });

    const text = data.filter((d) => d.delta?.type === 'text_delta').map((d) => d.delta.text).join('');
    assert.equal(text, 'Sure, reading it.');
    const start = data.find((d) => d.type === 'content_block_start' && d.content_block.type === 'tool_use');
    assert.deepEqual(start.content_block, { type: 'tool_use', id: 'toolu_1', name: 'read_file', input: {} });
    assert.equal(start.index, 1);
    const frags = data.filter((d) => d.delta?.type === 'input_json_delta');
    assert.ok(frags.every((d) => d.index === 1 && Array.from(d.delta.partial_json).length <= 4));
    assert.ok(frags.length > 8);
    assert.deepEqual(JSON.parse(frags.map((d) => d.delta.partial_json).join('')), input);
    const md = data.at(-2);
    assert.equal(md.delta.stop_reason, 'tool_use');
    assert.equal(md.usage.output_tokens, 21);
  });

  test('non-streaming message with text and tool_use blocks', async () => {
    const id = await scenario({ turns: [
      { text: 'Done.', usage: { input: 7, output: 3 } },
      { text: 'Calling.', toolCalls: [{ id: 'toolu_9', name: 'calc', arguments: { x: 2 } }] },
    ] });
    const a = await (await anthropicReq(id, {})).json();
    assert.equal(a.type, 'message');
    assert.deepEqual(a.content, [{ type: 'text', text: 'Done.' }]);
    assert.equal(a.stop_reason, 'end_turn');
    assert.deepEqual([a.usage.input_tokens, a.usage.output_tokens], [7, 3]);
    const b = await (await anthropicReq(id, {})).json();
    assert.deepEqual(b.content, [{ type: 'text', text: 'Calling.' }, { type: 'tool_use', id: 'toolu_9', name: 'calc', input: { x: 2 } }]);
    assert.equal(b.stop_reason, 'tool_use');
  });

  test('error event mid-stream (overloaded_error), no message_stop', async () => {
    const id = await scenario({ turns: [{ text: 'a b c d e f', fault: { streamError: { type: 'overloaded_error', message: 'Overloaded' } } }] });
    const { events } = await readSse(await anthropicReq(id, { stream: true }));
    assert.equal(events.at(-1).event, 'error');
    assert.deepEqual(JSON.parse(events.at(-1).data), { type: 'error', error: { type: 'overloaded_error', message: 'Overloaded' } });
    assert.ok(events.some((e) => e.event === 'content_block_delta'), 'error arrives mid-stream');
    assert.ok(!events.some((e) => e.event === 'message_stop'));
    // Same fault on a non-streaming request becomes HTTP 529.
    const id2 = await scenario({ turns: [{ text: 'x', fault: { streamError: { type: 'overloaded_error', message: 'Overloaded' } } }] });
    const r = await anthropicReq(id2, {});
    assert.equal(r.status, 529);
    assert.equal((await r.json()).error.type, 'overloaded_error');
  });
});

describe('faults and script control', () => {
  test('429 with Retry-After, provider-shaped bodies, CORS on errors', async () => {
    const id = await scenario({ turns: [{ fault: { status: 429, retryAfter: '1' } }, { fault: { status: 429, retryAfter: '2' } }] });
    const origin = { origin: 'http://127.0.0.1:9999' };
    const a = await openaiReq(id, { stream: true }, origin);
    assert.equal(a.status, 429);
    assert.equal(a.headers.get('retry-after'), '1');
    assert.equal(a.headers.get('access-control-allow-origin'), 'http://127.0.0.1:9999');
    assert.match(a.headers.get('access-control-expose-headers'), /Retry-After/i);
    const ab = await a.json();
    assert.deepEqual(Object.keys(ab.error).sort(), ['code', 'message', 'param', 'type']);
    assert.equal(ab.error.code, 'rate_limit_exceeded');
    const b = await anthropicReq(id, {}, origin);
    assert.equal(b.status, 429);
    assert.equal(b.headers.get('retry-after'), '2');
    const bb = await b.json();
    assert.equal(bb.type, 'error');
    assert.equal(bb.error.type, 'rate_limit_error');
    assert.equal(typeof bb.error.message, 'string');
  });

  test('custom fault body and 503', async () => {
    const id = await scenario({ turns: [{ fault: { status: 503 } }, { fault: { status: 500, body: { weird: true } } }] });
    const a = await openaiReq(id, {});
    assert.equal(a.status, 503);
    assert.equal((await a.json()).error.type, 'server_error');
    const b = await anthropicReq(id, {});
    assert.deepEqual(await b.json(), { weird: true });
  });

  test('dropAfterEvents ends the body with an error or early end', async () => {
    const id = await scenario({ turns: [
      { text: 'a b c d e f g h', fault: { dropAfterEvents: 3 } },
      { text: 'a b c d e f g h', fault: { dropAfterEvents: 2 } },
    ] });
    const a = await readSse(await openaiReq(id, { stream: true }));
    assert.ok(a.events.length <= 3);
    assert.ok(!a.events.some((e) => e.data === '[DONE]'));
    assert.ok(a.error, 'the body read fails (socket destroyed mid-chunked-body)');
    const b = await readSse(await anthropicReq(id, { stream: true }));
    assert.deepEqual(b.events.map((e) => e.event), ['message_start', 'content_block_start']);
    assert.ok(b.error);
    const rec = await (await fetch(`${srv.base}/__scenarios/${id}/requests`)).json();
    assert.deepEqual(rec.map((r) => r.outcome), ['dropped', 'dropped']);
  });

  test('script exhausted -> HTTP 500 saying so; repeat cycles', async () => {
    const id = await scenario({ turns: [{ text: 'only' }] });
    assert.equal((await openaiReq(id, {})).status, 200);
    const a = await openaiReq(id, {});
    assert.equal(a.status, 500);
    assert.match((await a.json()).error.message, /script exhausted/);
    const b = await anthropicReq(id, { stream: true });
    assert.equal(b.status, 500);
    const bb = await b.json();
    assert.equal(bb.type, 'error');
    assert.match(bb.error.message, /script exhausted/);
    const info = await (await fetch(`${srv.base}/__scenarios/${id}`)).json();
    assert.equal(info.consumed, 1);
    assert.equal(info.exhausted, true);

    const rid = await scenario({ turns: [{ text: 'one' }, { text: 'two' }], repeat: true });
    const texts = [];
    for (let i = 0; i < 5; i++) texts.push((await (await openaiReq(rid, {})).json()).choices[0].message.content);
    assert.deepEqual(texts, ['one', 'two', 'one', 'two', 'one']);
  });

  test('hang until the client aborts; delayMs', async () => {
    const id = await scenario({ turns: [{ fault: { hang: true } }, { text: 'late', delayMs: 150 }] });
    const ac = new AbortController();
    const pending = openaiReq(id, {}, {}, { signal: ac.signal });
    setTimeout(() => ac.abort(), 150);
    await assert.rejects(pending, { name: 'AbortError' });
    const outcome = async () => (await (await fetch(`${srv.base}/__scenarios/${id}/requests`)).json())[0].outcome;
    for (let i = 0; i < 50 && (await outcome()) === 'pending'; i++) await new Promise((r) => setTimeout(r, 20));
    assert.equal(await outcome(), 'aborted', 'the server saw the client go away');
    const started = Date.now();
    const r = await openaiReq(id, {});
    assert.equal((await r.json()).choices[0].message.content, 'late');
    assert.ok(Date.now() - started >= 140);
  });

  test('splitWrites cuts events across TCP writes, inside multi-byte UTF-8 characters', async () => {
    const text = 'héllo wörld ☕ 🦀 fin';
    const id = await scenario({ turns: [{ text, splitWrites: true }] });
    const r = await anthropicReq(id, { stream: true });
    const chunks = [];
    for await (const c of r.body) chunks.push(Buffer.from(c));
    const strict = new TextDecoder('utf-8', { fatal: true });
    const broken = chunks.filter((c) => { try { strict.decode(c); return false; } catch { return true; } });
    assert.ok(chunks.length > 10, `many reads (${chunks.length})`);
    assert.ok(broken.length > 0, 'some read ends inside a UTF-8 character');
    const whole = new Response(Buffer.concat(chunks));
    const { events } = await readSse(whole);
    const got = events.map((e) => JSON.parse(e.data)).filter((d) => d.delta?.type === 'text_delta').map((d) => d.delta.text).join('');
    assert.equal(got, text);
  });

  test('generateTokens: 20,000 streamed tokens, fast', async () => {
    const id = await scenario({ turns: [{ generateTokens: 20_000 }], repeat: true });
    const t0 = Date.now();
    const { events, error } = await readSse(await openaiReq(id, { stream: true }));
    const ms = Date.now() - t0;
    assert.equal(error, null);
    const deltas = events.slice(0, -1).map((e) => JSON.parse(e.data)).filter((c) => c.choices[0]?.delta.content);
    assert.equal(deltas.length, 20_000);
    assert.ok(ms < 5000, `took ${ms} ms`);
    const b = await readSse(await anthropicReq(id, { stream: true }));
    assert.equal(b.events.filter((e) => e.event === 'content_block_delta').length, 20_000);
  });
});

describe('HTTP plumbing', () => {
  test('CORS preflight', async () => {
    const reqHeaders = 'content-type, authorization, x-api-key, anthropic-version, anthropic-dangerous-direct-browser-access, accept';
    const r = await fetch(`${srv.base}/s/any/v1/messages`, {
      method: 'OPTIONS',
      headers: { origin: 'http://127.0.0.1:8123', 'access-control-request-method': 'POST', 'access-control-request-headers': reqHeaders },
    });
    assert.equal(r.status, 204);
    assert.equal(r.headers.get('access-control-allow-origin'), 'http://127.0.0.1:8123');
    assert.match(r.headers.get('access-control-allow-methods'), /POST/);
    const allowed = r.headers.get('access-control-allow-headers').toLowerCase();
    for (const h of reqHeaders.split(', ')) assert.ok(allowed.includes(h), h);
    assert.ok(Number(r.headers.get('access-control-max-age')) > 0);
    assert.match(r.headers.get('access-control-expose-headers'), /Retry-After/i);
    assert.equal(r.headers.get('cross-origin-resource-policy'), 'cross-origin');
    // Without Access-Control-Request-Headers the default list covers the SDK's headers.
    const d = await fetch(`${srv.base}/s/any/v1/chat/completions`, { method: 'OPTIONS', headers: { origin: 'http://x' } });
    assert.match(d.headers.get('access-control-allow-headers'), /anthropic-dangerous-direct-browser-access/);
  });

  test('request recording', async () => {
    const id = await scenario({ id: 'rec-1', turns: [{ text: 'a' }, { text: 'b' }] });
    assert.equal(id, 'rec-1');
    await (await anthropicReq(id, { stream: true, messages: [{ role: 'user', content: 'first' }] })).text();
    await (await openaiReq(id, { messages: [{ role: 'user', content: 'second' }] })).text();
    const rec = await (await fetch(`${srv.base}/__scenarios/rec-1/requests`)).json();
    assert.equal(rec.length, 2);
    assert.equal(rec[0].method, 'POST');
    assert.equal(rec[0].path, '/s/rec-1/v1/messages');
    assert.equal(rec[0].headers['anthropic-dangerous-direct-browser-access'], 'true');
    assert.equal(rec[0].headers['x-api-key'], 'sk-ant-test');
    assert.equal(rec[0].body.stream, true);
    assert.deepEqual(rec[0].body.messages, [{ role: 'user', content: 'first' }]);
    assert.equal(rec[1].path, '/s/rec-1/v1/chat/completions');
    assert.equal(rec[1].headers.authorization, 'Bearer sk-test');
    assert.equal(rec[1].body.messages[0].content, 'second');
    assert.deepEqual(rec.map((r) => [r.turn, r.outcome]), [[0, 'completed'], [1, 'completed']]);
    const info = await (await fetch(`${srv.base}/__scenarios/rec-1`)).json();
    assert.equal(info.consumed, 2);
    // Replacing a scenario resets it.
    await scenario({ id: 'rec-1', turns: [] });
    assert.deepEqual(await (await fetch(`${srv.base}/__scenarios/rec-1/requests`)).json(), []);
  });

  test('scenario validation and unknown scenarios', async () => {
    const bad = await fetch(`${srv.base}/__scenarios`, { method: 'POST', body: json({ turns: [{ txt: 'typo' }] }) });
    assert.equal(bad.status, 400);
    assert.match((await bad.json()).error, /unknown field "txt"/);
    const r = await anthropicReq('nope', {});
    assert.equal(r.status, 404);
    assert.equal((await r.json()).error.type, 'not_found_error');
  });

  test('static files: content types, index.html, no-store, traversal refused', async () => {
    const w = await fetch(`${srv.base}/app.wasm`);
    assert.equal(w.status, 200);
    assert.equal(w.headers.get('content-type'), 'application/wasm');
    assert.equal(w.headers.get('cache-control'), 'no-store');
    assert.equal(w.headers.get('cross-origin-resource-policy'), 'cross-origin');
    assert.deepEqual(Buffer.from(await w.arrayBuffer()), WASM_BYTES);
    assert.match((await fetch(`${srv.base}/app.js`)).headers.get('content-type'), /^text\/javascript/);
    assert.match((await fetch(`${srv.base}/mod.mjs`)).headers.get('content-type'), /^text\/javascript/);
    const idx = await fetch(`${srv.base}/`);
    assert.match(idx.headers.get('content-type'), /^text\/html/);
    assert.match(await idx.text(), /root/);
    assert.match(await (await fetch(`${srv.base}/sub/`)).text(), /sub/);
    const redirect = await fetch(`${srv.base}/sub`, { redirect: 'manual' });
    assert.equal(redirect.status, 301);
    assert.equal(redirect.headers.get('location'), '/sub/');
    assert.equal((await fetch(`${srv.base}/missing.js`)).status, 404);
    for (const p of ['/../secret.txt', '/..%2fsecret.txt', '/%2e%2e/secret.txt', '/sub/..%2f..%2fsecret.txt', '/..\\secret.txt']) {
      const r = await rawGet(srv.port, p);
      assert.ok(r.status === 403 || r.status === 404, `${p} -> ${r.status}`);
      assert.ok(!r.body.includes('TOP-SECRET'), p);
    }
  });
  test('--home: the root redirects there (make demo prints that address); other paths are served as before', async () => {
    const demo = await startChild(['--port', '0', '--static', path.join(tmp, 'www'), '--home', '/sub/', '--ttl-seconds', '60']);
    try {
      const r = await fetch(`${demo.base}/`, { redirect: 'manual' });
      assert.equal(r.status, 302);
      assert.equal(r.headers.get('location'), '/sub/');
      assert.match(await (await fetch(`${demo.base}/`)).text(), /<title>sub</, 'a browser following it lands on the page');
      assert.match(await (await fetch(`${demo.base}/index.html`)).text(), /<title>root</);
    } finally {
      demo.child.kill('SIGTERM');
      assert.equal(await waitExit(demo.child, 5000), 0);
    }
  });
});

describe('generated scenarios', () => {
  const tool = (id, content) => ({ role: 'tool', tool_call_id: id, content });
  const callsMsg = (calls) => ({
    role: 'assistant', content: null,
    tool_calls: calls.map((c) => ({ id: c.id, type: 'function', function: { name: c.function.name, arguments: c.function.arguments } })),
  });
  const ask = async (id, messages, extra = {}) => (await openaiReq(id, { messages, ...extra })).json();
  const info = async (id) => (await (await fetch(`${srv.base}/__scenarios/${id}`)).json()).generate;

  test('alternates tool-call turns (fresh ids from a server-wide counter) and answers; streamed arguments', async () => {
    const a = await scenario({ generate: { tool: 'delete_file', calls: [1, 3], delayMs: [0, 20], argChunk: [2, 2], seed: 7 } });
    const b = await scenario({ generate: { tool: 'delete_file', calls: [2, 2], delayMs: [0, 0] } });
    const msgs = [{ role: 'system', content: 'be careful' }, { role: 'user', content: 'first' }];
    const ids = [];
    for (let round = 0; round < 3; round++) {
      const r = await ask(a, msgs);
      const calls = r.choices[0].message.tool_calls;
      assert.ok(calls.length >= 1 && calls.length <= 3, `1..3 calls (${calls.length})`);
      for (const c of calls) {
        assert.equal(c.function.name, 'delete_file');
        assert.deepEqual(JSON.parse(c.function.arguments), { path: `/tmp/${c.id}` });
        ids.push(c.id);
      }
      msgs.push(callsMsg(calls), ...calls.map((c) => tool(c.id, `ran:${c.id}`)));
      const answer = await ask(a, msgs);
      assert.equal(answer.choices[0].finish_reason, 'stop');
      assert.match(answer.choices[0].message.content, /^Answer \d+\.$/);
      msgs.push({ role: 'assistant', content: answer.choices[0].message.content }, { role: 'user', content: `more ${round}` });
      // The other scenario draws from the same counter: its ids never collide with a's.
      const other = await ask(b, [{ role: 'user', content: `b ${round}` }]);
      ids.push(...other.choices[0].message.tool_calls.map((c) => c.id));
    }
    assert.equal(new Set(ids).size, ids.length, `ids unique across scenarios: ${ids.join(' ')}`);
    assert.ok(ids.every((id) => /^call_gen_\d+$/.test(id)));

    // Streamed: the first delta carries id and name, the arguments come in fragments of argChunk (2).
    const { events, error } = await readSse(await openaiReq(a, { stream: true, messages: msgs }));
    assert.equal(error, null);
    const chunks = events.slice(0, -1).map((e) => JSON.parse(e.data));
    const streamed = [];
    for (const c of chunks) {
      for (const tc of c.choices[0]?.delta.tool_calls ?? []) {
        if (tc.id) streamed[tc.index] = { id: tc.id, args: '' };
        else {
          assert.ok(Array.from(tc.function.arguments).length <= 2);
          streamed[tc.index].args += tc.function.arguments;
        }
      }
    }
    assert.ok(streamed.length >= 1);
    for (const c of streamed) assert.deepEqual(JSON.parse(c.args), { path: `/tmp/${c.id}` });

    const g = await info(a);
    assert.equal(g.requests, 7);
    assert.equal(g.toolTurns, 4);
    assert.equal(g.textTurns, 3);
    assert.equal(g.invalidRequests, 0, JSON.stringify(g.problems));
    const detail = await (await fetch(`${srv.base}/__scenarios/${a}/generated`)).json();
    assert.equal(detail.calls.length, g.callsProposed);
    assert.deepEqual(detail.calls[0], { callId: ids[0], name: 'delete_file', inputs: { path: `/tmp/${ids[0]}` }, request: 0 });
    assert.equal(detail.resultsSeen[ids[0]], `ran:${ids[0]}`);
    // Bodies are not kept for generated scenarios, only their length.
    const rec = await (await fetch(`${srv.base}/__scenarios/${a}/requests`)).json();
    assert.deepEqual(rec[0].body, { omitted: true, messages: 2 });
    assert.equal((await fetch(`${srv.base}/__scenarios/${b}/generated`)).status, 200);
  });

  test('validation: every broken conversation is an invalid request, with the reason', async () => {
    const id = await scenario({ generate: { tool: 'delete_file', calls: [2, 2], delayMs: [0, 0] } });
    const first = await ask(id, [{ role: 'user', content: 'go' }]);
    const calls = first.choices[0].message.tool_calls;
    const [x, y] = calls.map((c) => c.id);
    const head = [{ role: 'user', content: 'go' }, callsMsg(calls)];
    const ok = [...head, tool(x, `ran:${x}`), tool(y, 'TOOL NOT EXECUTED. rejected')];
    const answer = (await ask(id, ok)).choices[0].message.content;
    assert.equal((await info(id)).invalidRequests, 0);

    const cases = [
      [[...head, tool(x, `ran:${x}`)], /calls without a result before the end of the request: call_gen_\d+/],
      [[...head, tool(x, `ran:${x}`), tool(x, `ran:${x}`), tool(y, 'r')], /result for call_gen_\d+ twice/],
      [[...head, tool(x, `ran:${x}`), tool(y, 'r'), tool('call_other', 'r')], /result for call_other without its call/],
      [[...head, tool(x, ''), tool(y, 'r')], /empty result/],
      [[...ok, { role: 'assistant', content: answer }, { role: 'user', content: 'go' }], /user text duplicated/],
      [[...ok, { role: 'assistant', content: answer }, { role: 'user', content: 'u2' }, callsMsg(calls), tool(x, `ran:${x}`), tool(y, 'r')],
        /call call_gen_\d+ duplicated/],
      [[...ok, { role: 'assistant', content: 'I made this up' }, { role: 'user', content: 'u3' }], /assistant text not generated here/],
      [[...ok, { role: 'assistant', content: answer }, { role: 'assistant', content: answer }, { role: 'user', content: 'u4' }], /assistant text duplicated/],
      [[{ role: 'user', content: 'go' }, callsMsg([calls[1]]), tool(y, 'r')], /are not the generated turn/],
      [[{ role: 'user', content: 'go' }, callsMsg([{ id: 'call_zzz', function: { name: 'delete_file', arguments: '{}' } }]), tool('call_zzz', 'r')],
        /call call_zzz not generated here/],
      [[{ role: 'user', content: 'go' }, callsMsg([{ ...calls[0], function: { name: 'delete_file', arguments: '{"path":"/etc"}' } }, calls[1]]),
        tool(x, 'a'), tool(y, 'b')], /other arguments than generated/],
      [[...head, tool(x, 'something else'), tool(y, 'TOOL NOT EXECUTED. rejected')], /result for call_gen_\d+ changed from "ran:call_gen_\d+"/],
      [[tool(x, `ran:${x}`), { role: 'user', content: 'u5' }], /starts with result/],
      [[...ok, { role: 'assistant', content: answer }], /ends with assistant/],
    ];
    for (const [i, [messages, why]] of cases.entries()) {
      const before = await info(id);
      const r = await openaiReq(id, { messages });
      assert.equal(r.status, 200, 'an invalid request is still answered');
      await r.text();
      const after = await info(id);
      assert.equal(after.invalidRequests, before.invalidRequests + 1, `case ${i} counted`);
      const mine = after.problems.filter((p) => p.request === after.requests - 1).map((p) => p.problem);
      assert.ok(mine.some((p) => why.test(p)), `case ${i}: ${why} in ${JSON.stringify(mine)}`);
    }
    const rec = await (await fetch(`${srv.base}/__scenarios/${id}/requests`)).json();
    assert.equal(rec.filter((r) => r.invalid).length, cases.length, 'recorded requests carry their problems');
  });

  test('Anthropic-shaped requests are validated too', async () => {
    const id = await scenario({ generate: { tool: 'delete_file', calls: [1, 1], delayMs: [0, 0] } });
    const r = await (await anthropicReq(id, { messages: [{ role: 'user', content: 'go' }] })).json();
    const use = r.content.find((b) => b.type === 'tool_use');
    assert.deepEqual(use.input, { path: `/tmp/${use.id}` });
    const conv = [{ role: 'user', content: 'go' }, { role: 'assistant', content: [use] }];
    const good = await (await anthropicReq(id, { messages: [...conv, { role: 'user', content: [{ type: 'tool_result', tool_use_id: use.id, content: 'ran' }] }] })).json();
    assert.match(good.content[0].text, /^Answer \d+\.$/);
    assert.equal((await info(id)).invalidRequests, 0);
    await (await anthropicReq(id, { messages: [...conv, { role: 'user', content: 'no result' }] })).text();
    const g = await info(id);
    assert.equal(g.invalidRequests, 1);
    assert.match(g.problems[0].problem, /calls without a result before user text/);
  });

  test('bad generate specs are refused', async () => {
    for (const [spec, why] of [
      [{ generate: {} }, /generate.tool/],
      [{ generate: { tool: 't', colour: 1 } }, /unknown field "colour"/],
      [{ generate: { tool: 't', calls: [0, 2] } }, /at least 1/],
      [{ generate: { tool: 't', delayMs: [5, 1] } }, /min <= max/],
      [{ generate: { tool: 't', idPrefix: 'a b' } }, /idPrefix/],
      [{ generate: { tool: 't' }, turns: [] }, /without "turns"/],
    ]) {
      const r = await fetch(`${srv.base}/__scenarios`, { method: 'POST', body: json(spec) });
      assert.equal(r.status, 400);
      assert.match((await r.json()).error, why);
    }
    const plain = await scenario({ turns: [{ text: 'x' }] });
    assert.equal((await fetch(`${srv.base}/__scenarios/${plain}/generated`)).status, 404);
  });
});

describe('process lifecycle', () => {
  test('exits on SIGTERM and after --ttl-seconds', async () => {
    const a = await startChild(['--port', '0']);
    assert.equal((await fetch(`${a.base}/__health`)).status, 200);
    a.child.kill('SIGTERM');
    assert.equal(await waitExit(a.child, 5000), 0);
    const b = await startChild(['--ttl-seconds', '1']);
    const t0 = Date.now();
    assert.equal(await waitExit(b.child, 6000), 0);
    assert.ok(Date.now() - t0 < 5000);
  });

  test('rejects bad arguments', async () => {
    const c = spawn(process.execPath, [SERVER, '--port', 'abc'], { stdio: 'ignore' });
    assert.equal(await waitExit(c, 5000), 2);
  });
});
