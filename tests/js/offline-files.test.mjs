// The demo's service worker (www/sw.js) caches the package's modules by name for offline use:
// a module added to the UI kit and not listed there breaks the offline demo (found when
// ui/messages.js was added). Every shipped UI module is listed.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../..');

test('www/sw.js caches every module of the UI kit', () => {
  const sw = fs.readFileSync(path.join(root, 'www/sw.js'), 'utf8');
  const listed = new Set([...sw.matchAll(/'\.\.\/pkg\/(ui\/[^']+)'/g)].map((m) => m[1]));
  const shipped = fs.readdirSync(path.join(root, 'pkg-template/ui'))
    .filter((f) => f.endsWith('.js') || f.endsWith('.css')).map((f) => `ui/${f}`);
  assert.deepEqual(shipped.filter((f) => !listed.has(f)), []);
});

// The same for the MCP client's JS (an agent with mcpServers imports mcp/questions.js as it
// opens: missing from the cache, the offline demo could not open one).
test('www/sw.js caches every JS module of the MCP client', () => {
  const sw = fs.readFileSync(path.join(root, 'www/sw.js'), 'utf8');
  const listed = new Set([...sw.matchAll(/'\.\.\/pkg\/(mcp\/[^']+)'/g)].map((m) => m[1]));
  const shipped = fs.readdirSync(path.join(root, 'pkg-template/mcp')).filter((f) => f.endsWith('.js')).map((f) => `mcp/${f}`);
  assert.deepEqual(shipped.filter((f) => !listed.has(f)), []);
});

// And the grants' module: a thread whose store holds a grant loads it as its calls are gated.
test('www/sw.js caches every file of the grants\' module', () => {
  const sw = fs.readFileSync(path.join(root, 'www/sw.js'), 'utf8');
  const listed = new Set([...sw.matchAll(/'\.\.\/pkg\/(grants\/[^']+)'/g)].map((m) => m[1]));
  const shipped = [...fs.readdirSync(path.join(root, 'pkg-template/grants')).filter((f) => f.endsWith('.js')),
    'grants.js', 'grants_bg.wasm'].map((f) => `grants/${f}`);
  assert.deepEqual(shipped.filter((f) => !listed.has(f)), []);
});
