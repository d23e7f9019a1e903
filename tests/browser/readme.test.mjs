// The README's quick start, run as written: the code block is taken from README.md, with only
// the import specifier pointed at the built package and the proxy URL at the local model server.

import { after, test } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { ROOT, run, setup } from './harness.mjs';

const h = await setup();
after(() => h.close());

function quickStart(file) {
  const readme = readFileSync(path.join(ROOT, file), 'utf8');
  const section = readme.slice(readme.indexOf('## Quick start'));
  const m = /```js\n([\s\S]*?)```/.exec(section);
  assert.ok(m, 'README has a js block under "## Quick start"');
  return m[1];
}

// The repository's README and the package's (pkg-template/README.md, what npm shows).
for (const file of ['README.md', 'pkg-template/README.md']) test(`the ${file} quick start works as written`, { timeout: 60_000 }, async (t) => {
  const code = quickStart(file);
  assert.ok(code.split('\n').length <= 30, 'the quick start stays short');
  const sc = await h.scenario([
    { toolCalls: [{ id: 'call_1', name: 'delete_file', arguments: { path: '/var/log/old.log' } }] },
    { text: 'Deleted the old log.' },
  ]);
  const body = code
    .replace('import init, { Agent } from "gatehouse-agent";', 'const { default: init, Agent } = await import("/pkg/gatehouse.js");')
    .replace('"https://my-app.example/llm/v1"', JSON.stringify(sc.openai().baseUrl))
    .replace(/console\.log\(state\.message\);?/, 'window.__readme = { state, events: [] };');
  assert.notEqual(body, code, 'the substitutions applied');
  const { page } = await h.open(t);
  const r = await run(page, async (src) => {
    const asked = [];
    window.confirm = (q) => { asked.push(q); return true; };
    await (0, eval)(`(async () => {\n${src}\n})()`);
    return { state: window.__readme.state, asked };
  }, body);
  assert.equal(r.state.status, 'completed');
  assert.equal(r.state.message.content[0].content, 'Deleted the old log.');
  assert.deepEqual(r.asked, ['Run delete_file?'], 'the policy gated the call and the loop asked once');
  const reqs = await sc.requests();
  assert.equal(reqs.length, 2);
  const toolMsg = reqs[1].body.messages.find((m) => m.role === 'tool');
  assert.equal(toolMsg.content, '{"deleted":"/var/log/old.log"}');
});
