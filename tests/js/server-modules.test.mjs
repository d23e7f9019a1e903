// The store handler's own modules that need neither the wasm core nor Postgres
// (pkg-template/server/): the sealed change-feed cursors, the request checks, the refusals.
// The handler as a whole is tested against Postgres in tests/server.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { cursorKey, hex, openCursor, sealCursor } from '../../pkg-template/server/cursor.js';
import { Refusal, answerOf } from '../../pkg-template/server/errors.js';
import { integer, readBody, readQuery, refuseOrigin, requireJson, threadIdOf } from '../../pkg-template/server/http.js';

const refused = (status, code) => (e) => e instanceof Refusal && e.status === status && e.body.error.code === code;

test('cursors: sealed, a new one each time, opened to the same position; tampered or foreign ones refused', async () => {
  const key = await cursorKey(hex(crypto.getRandomValues(new Uint8Array(32))));
  const other = await cursorKey(hex(crypto.getRandomValues(new Uint8Array(32))));
  const a = await sealCursor(key, 41);
  const b = await sealCursor(key, 41);
  assert.notEqual(a, b, 'a fresh nonce each time');
  assert.match(a, /^[A-Za-z0-9_-]+$/);
  assert.equal(await openCursor(key, a), 41);
  assert.equal(await openCursor(key, b), 41);
  const flip = a.slice(0, 20) + (a[20] === 'A' ? 'B' : 'A') + a.slice(21);
  for (const bad of ['41', flip, '', 'x'.repeat(65), 'a+b/c=']) {
    await assert.rejects(openCursor(key, bad), refused(400, 'invalid_request'), bad);
  }
  await assert.rejects(openCursor(other, a), refused(400, 'invalid_request'), 'another database');
  // A cursor sealed before schema 6 (a plain count, no "x"): opened as -1, before everything,
  // so that its reader is told to reset.
  const iv = crypto.getRandomValues(new Uint8Array(12));
  const sealed = new Uint8Array(await crypto.subtle.encrypt({ name: 'AES-GCM', iv }, key, new TextEncoder().encode('41')));
  const old = Buffer.concat([iv, sealed]).toString('base64url');
  assert.equal(await openCursor(key, old), -1);
});

test('thread ids, query strings and integers are checked before anything is read', () => {
  assert.equal(threadIdOf('alice%3At1'), 'alice:t1');
  assert.throws(() => threadIdOf('%E0%A4%A'), refused(400, 'invalid_request'));
  assert.throws(() => threadIdOf('a%00b'), refused(400, 'invalid_request'));
  assert.throws(() => threadIdOf('x'.repeat(513)), refused(400, 'invalid_request'));
  const q = readQuery(new URLSearchParams('limit=5&before=2'), ['limit', 'before']);
  assert.deepEqual({ ...q }, { limit: '5', before: '2' });
  assert.throws(() => readQuery(new URLSearchParams('limt=5'), ['limit']), refused(400, 'invalid_request'));
  assert.equal(integer('4096', 'limit', 4096), 4096);
  for (const bad of ['4097', '-1', '1.5', '1e3', '']) {
    assert.throws(() => integer(bad, 'limit', 4096), refused(400, 'invalid_request'), bad);
  }
});

test('writes are JSON only, bodies are capped, and a listed origin is the only one let in', async () => {
  const post = (type, body = '{}') => new Request('http://h/x', { method: 'POST', body, headers: type ? { 'content-type': type } : {} });
  assert.doesNotThrow(() => requireJson(post('application/json; charset=utf-8')));
  for (const t of ['text/plain', 'application/x-www-form-urlencoded', 'multipart/form-data', null]) {
    assert.throws(() => requireJson(post(t)), refused(415, 'unsupported_media_type'), String(t));
  }
  assert.equal(await readBody(post('application/json', '{"a":1}'), 100), '{"a":1}');
  await assert.rejects(readBody(post('application/json', 'x'.repeat(101)), 100), refused(413, 'too_large'));
  const from = (origin) => new Request('http://h/x', { headers: { origin } });
  const cors = { origin: ['https://app.example'], credentials: true };
  assert.doesNotThrow(() => refuseOrigin(cors, from('https://app.example')));
  assert.throws(() => refuseOrigin(cors, from('https://evil.example')), refused(403, 'origin_refused'));
});

test('a refusal the core answers is thrown as it came; anything else is the answer', () => {
  assert.deepEqual(answerOf('{"ok":true}'), { ok: true });
  assert.throws(() => answerOf('{"status":409,"error":{"code":"conflict","message":"m","expected":1}}'),
    (e) => refused(409, 'conflict')(e) && e.body.error.expected === 1);
});
