// The main entry stays as it was without the in-page model (docs/design.md, "A model in the
// page"): its static module graph holds none of the local/ module, and a page that chats with
// another provider never fetches anything of it. Prints the size report of both.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync, readdirSync } from 'node:fs';
import path from 'node:path';
import { gzipSync } from 'node:zlib';
import { ROOT } from './server.mjs';
import { start } from './harness.mjs';

const PKG = path.join(ROOT, 'pkg');
const read = (f) => readFileSync(path.join(PKG, f));

/** The modules gatehouse.js loads statically: itself and what its `import … from` name. */
function staticGraph(entry) {
  const seen = new Set();
  const walk = (rel) => {
    if (seen.has(rel)) return;
    seen.add(rel);
    const text = read(rel).toString();
    for (const [, spec] of text.matchAll(/^\s*(?:import|export)\s[^;]*?from\s+["'](\.[^"']+)["']/gm)) {
      walk(path.posix.normalize(path.posix.join(path.posix.dirname(rel), spec)));
    }
  };
  walk(entry);
  return [...seen];
}

test('the main entry imports nothing of gatehouse-agent/local, and holds no llama.cpp', () => {
  const graph = staticGraph('gatehouse.js');
  assert.ok(graph.includes('gatehouse_wasm.js'), graph.join(', '));
  assert.deepEqual(graph.filter((f) => f.startsWith('local/')), []);
  for (const f of graph) assert.doesNotMatch(read(f).toString(), /wllama|llama\.cpp|GGUF/i, f);
  assert.doesNotMatch(read('gatehouse_bg.wasm').toString('latin1'), /wllama|llama_/);
  // The one way in: a dynamic import, taken only for provider "local".
  const entry = read('gatehouse.js').toString();
  assert.match(entry, /provider === "local"\) \{[\s\S]{0,300}?await import\("\.\/local\/index\.js"\)/s);
  const gz = (files) => gzipSync(Buffer.concat(files.map(read)), { level: 9 }).length;
  const local = ['local/index.js', 'local/grammar.js', 'local/model-file.js', 'local/wllama/index.js'];
  console.log(`main entry: wasm ${gz(['gatehouse_bg.wasm'])} B gzip, JS ${gz(graph)} B gzip (${graph.length} modules)`);
  console.log(`gatehouse-agent/local: JS ${gz(local)} B gzip, wllama.wasm ${gz(['local/wllama/wllama.wasm'])} B gzip`);
  assert.deepEqual(readdirSync(path.join(PKG, 'local/wllama')).sort(), ['LICENCE', 'index.js', 'wllama.wasm']);
});

test('a page chatting with another provider fetches nothing of the local module', { timeout: 60_000 }, async () => {
  const h = await start();
  try {
    await h.goto();
    await h.page.evaluate(() => window.t.open('demo', { provider: 'demo' }));
    const r = await h.page.evaluate(() => window.t.chat('demo', 'hello'));
    assert.equal(r.status, 'completed', JSON.stringify(r));
    assert.ok(h.server.requests.includes('/pkg/gatehouse_bg.wasm'));
    assert.deepEqual(h.server.requests.filter((p) => p.startsWith('/pkg/local/') || p.startsWith('/models/')), []);
  } finally {
    await h.close();
  }
});
