// The context window with the memory store, through the public API: what a request carries
// after the thread was used with another window (docs/design.md, "The context window").
import { test } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../..');
const { initSync, Agent } = await import(path.join(root, 'pkg/gatehouse.js'));
initSync({ module: fs.readFileSync(path.join(root, 'pkg/gatehouse_bg.wasm')) });

test('a thread used at the default window and opened with contextWindow 4000 sends what fits', async () => {
  // A provider that counts the request as the SDK estimates it (its JSON, 4 bytes a token),
  // so calibration changes nothing that fits: only a skewed factor could.
  const seen = [];
  const call = async (req) => {
    seen.push(req.messages);
    const tokens = Math.ceil(JSON.stringify(req.messages).length / 4);
    return { text: 'a'.repeat(2000), usage: { input_tokens: tokens, output_tokens: 500 } };
  };
  const storage = { kind: 'memory', database: `context-${process.pid}` };
  const big = await Agent.open({ threadId: 't', storage, model: { provider: 'custom', call } });
  for (let i = 0; i < 60; i++) await big.chat(`${i} ${'u'.repeat(1995)}`);
  assert.ok(seen.at(-1).length > 80, `the default window held many turns (${seen.at(-1).length})`);
  const small = await Agent.open({
    threadId: 't', storage, model: { provider: 'custom', call, contextWindow: 4000 },
  });
  await small.chat(`new ${'n'.repeat(1995)}`);
  const sent = seen.at(-1);
  // Messages of ~525 tokens: seven fit in 4000, starting at a user message (three turns and
  // the new message). Only the new one was sent while the factor divided the provider's count
  // for the last request at the default window by an estimate of today's selection.
  assert.equal(sent.at(-1).content[0].content.slice(0, 3), 'new');
  assert.equal(sent.length, 7, `sent ${sent.length} message(s)`);
  assert.equal(sent[0].role, 'user');
});
