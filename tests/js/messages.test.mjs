// The one message reducer of the React hook and the chat view (pkg-template/ui/messages.js),
// on event streams recorded from the package (tests/fixtures/event-streams, made by
// record-streams.mjs): no wasm build needed (`make test-js`).
import { test } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { messagesAfter, upsertMessage } from '../../pkg-template/ui/messages.js';

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../..');
const dir = path.join(root, 'tests/fixtures/event-streams');
const streams = fs.readdirSync(dir).filter((f) => f.endsWith('.json')).map((f) => ({
  name: f.replace(/\.json$/, ''), ...JSON.parse(fs.readFileSync(path.join(dir, f), 'utf8')),
}));

test('the recorded streams are there, with message events and a rewritten tail', () => {
  assert.deepEqual(streams.map((s) => s.name).sort(), ['approval', 'chat', 'rejection']);
  const types = new Set(streams.flatMap((s) => s.events.map((e) => e.type)));
  for (const t of ['message', 'message_updated', 'text_delta', 'awaiting_approval', 'completed']) {
    assert.ok(types.has(t), t);
  }
});

for (const s of streams) {
  test(`${s.name}: the events turn what was shown into what the thread holds`, () => {
    const shown = s.events.reduce(messagesAfter, s.before);
    assert.deepEqual(shown, s.after);
  });

  test(`${s.name}: shown after a live reload, the events change nothing (no message twice)`, () => {
    // A live reload (another tab's notice) showed the thread; the run's events arrive after.
    const shown = s.events.reduce(messagesAfter, s.after);
    assert.deepEqual(shown, s.after);
    assert.equal(new Set(shown.map((m) => m.__id)).size, shown.length);
  });
}

test('an event without a message keeps the same array; a message upserts by __id', () => {
  const a = [{ __id: 'msg_1', role: 'user' }];
  assert.equal(messagesAfter(a, { type: 'text_delta', delta: 'x' }), a);
  assert.equal(messagesAfter(a, { type: 'completed' }), a);
  const b = upsertMessage(a, { __id: 'msg_1', role: 'user', edited: true });
  assert.notEqual(b, a);
  assert.deepEqual(b, [{ __id: 'msg_1', role: 'user', edited: true }]);
  assert.deepEqual(a, [{ __id: 'msg_1', role: 'user' }], 'the old array is left as it was');
  assert.equal(messagesAfter(b, { type: 'message', message: { __id: 'msg_2' } }).length, 2);
});
