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
  assert.deepEqual(readdirSync(path.join(PKG, 'local/wllama')).sort(), ['LICENCE', 'compat', 'index.js', 'wllama.wasm']);
  // wllama's compat build (browsers without memory64 or JSPI), vendored: no jsDelivr.
  assert.deepEqual(readdirSync(path.join(PKG, 'local/wllama/compat')).sort(), ['wllama.js', 'wllama.wasm']);
  assert.doesNotMatch(read('local/index.js').toString(), /cdn\.|jsdelivr/);
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

// The demo model leaves the main wasm too (docs/design.md, "The demo model"): it is its own
// wasm, demo-model/, imported by gatehouse.js only for provider "demo" or no model.
test('the main entry imports nothing of the demo model, and its wasm holds none of it', () => {
  const graph = staticGraph('gatehouse.js');
  assert.deepEqual(graph.filter((f) => f.startsWith('demo-model/')), []);
  // The demo's own texts are in its wasm, not in the main one.
  const demoText = '(demo) I have nothing to add.';
  assert.ok(read('demo-model/model_bg.wasm').toString('latin1').includes(demoText));
  assert.ok(!read('gatehouse_bg.wasm').toString('latin1').includes(demoText));
  const entry = read('gatehouse.js').toString();
  // The one way in: a dynamic import at the demo's first model call.
  assert.match(entry, /const demoModel = async \(request\) => \(await import\("\.\/demo-model\/index\.js"\)\)\.demoCall\(request\);/);
  const gz = (files) => gzipSync(Buffer.concat(files.map(read)), { level: 9 }).length;
  console.log(`demo model (only for provider "demo"): JS ${gz(['demo-model/index.js', 'demo-model/model.js'])} B gzip, wasm ${gz(['demo-model/model_bg.wasm'])} B gzip`);
});

test('a page with a real model fetches nothing of the demo model; one without a model loads it and chats', { timeout: 60_000 }, async () => {
  const h = await start();
  try {
    await h.goto();
    const custom = await h.page.evaluate(async () => {
      const agent = await window.t.Agent.open({
        threadId: 'custom', storage: { kind: 'memory' },
        model: { provider: 'custom', call: () => ({ text: 'from the app' }) },
      });
      const r = await agent.chat('hello');
      return { status: r.status, text: r.message.content[0].content };
    });
    assert.deepEqual(custom, { status: 'completed', text: 'from the app' });
    assert.deepEqual(h.server.requests.filter((p) => p.startsWith('/pkg/demo-model/')), []);

    // A remote thread opened without a model (a device that only reads and decides): nothing.
    const reader = await h.page.evaluate(async () => window.t.Agent.open({ threadId: 'reader',
      storage: { kind: 'remote', url: 'http://127.0.0.1:9/api' } }).then(() => 'opened', (e) => e.code));
    assert.ok(['opened', 'storage', 'network'].includes(reader), reader);
    assert.deepEqual(h.server.requests.filter((p) => p.startsWith('/pkg/demo-model/')), []);
    await h.page.evaluate(() => window.t.open('demo', undefined, { gated: true }));

    // Its first chat: the demo, with its streamed tool call, as before it moved out.
    const r = await h.page.evaluate(() => window.t.chat('demo', 'please delete /tmp/a.txt'));
    assert.equal(r.status, 'awaiting_approval', JSON.stringify(r));
    assert.deepEqual(r.message.tools.map((t) => [t.name, t.inputs]), [['delete_file', { path: '/tmp/a.txt' }]]);
    const types = (await h.page.evaluate(() => window.t.events.filter((e) => e.threadId === 'demo').map((e) => e.type)));
    assert.deepEqual([...new Set(types)], ['message', 'model_call_started', 'text_delta', 'tool_call_started', 'tool_call_delta',
      'model_call_ended', 'awaiting_approval']);
    const started = await h.page.evaluate(() => window.t.events.find((e) => e.type === 'tool_call_started'));
    assert.equal(started.callId, r.message.tools[0].callId);
    const args = await h.page.evaluate(() => window.t.events.filter((e) => e.type === 'tool_call_delta').map((e) => e.delta).join(''));
    assert.deepEqual(JSON.parse(args), { path: '/tmp/a.txt' });
    const done = await h.page.evaluate((id) => window.t.decide('demo', { [id]: 'approve' }), r.message.tools[0].callId);
    assert.equal(done.status, 'completed', JSON.stringify(done));
    assert.match(done.message.content[0].content, /^\(demo\) Tool results:\n- delete_file returned: deleted \/tmp\/a\.txt/);
    assert.deepEqual(h.server.requests.filter((p) => p.startsWith('/pkg/demo-model/')).sort(), ['/pkg/demo-model/index.js', '/pkg/demo-model/model.js', '/pkg/demo-model/model_bg.wasm']);
  } finally {
    await h.close();
  }
});

// The MCP client leaves the main wasm as well (docs/design.md, "MCP tools"): its own wasm,
// mcp/, imported by gatehouse.js when an agent with `mcpServers` first asks a server.
test('the main entry imports nothing of the MCP client, and its wasm holds none of the protocol', () => {
  const graph = staticGraph('gatehouse.js');
  assert.deepEqual(graph.filter((f) => f.startsWith('mcp/')), []);
  // Texts only the transport sends: they are in the client's wasm, not in the main one.
  // (MCP elicitation too: the questions are read in the client's wasm, docs/design.md.)
  for (const text of ['notifications/initialized', 'mcp-session-id', 'mcp-protocol-version', 'elicitation/create', 'requestedSchema']) {
    assert.ok(read('mcp/client_bg.wasm').toString('latin1').includes(text), text);
    assert.ok(!read('gatehouse_bg.wasm').toString('latin1').includes(text), text);
  }
  const entry = read('gatehouse.js').toString();
  // Dynamic imports only: the MCP client, and the page's WebMCP tools' connection in its place
  // for the `webmcp:` server; OpenTelemetry's module likewise, for an agent given `telemetry`.
  assert.match(entry, /: \(await import\("\.\/mcp\/index\.js"\)\)\.connect\(config\);/);
  assert.match(entry, /\? \(await import\("\.\/webmcp\.js"\)\)\.connect\(config\)/);
  assert.deepEqual(graph.filter((f) => ['webmcp.js', 'telemetry.js', 'ag-ui.js'].includes(f)), []);
  const gz = (files) => gzipSync(Buffer.concat(files.map(read)), { level: 9 }).length;
  console.log(`MCP client (only for mcpServers): JS ${gz(['mcp/index.js', 'mcp/client.js', 'mcp/questions.js'])} B gzip, wasm ${gz(['mcp/client_bg.wasm'])} B gzip`);
});

test('a page without mcpServers fetches nothing of the MCP client; one with a server loads it, lists and calls', { timeout: 60_000 }, async () => {
  const { startMcpServer } = await import('../mcp/server.mjs');
  const mcp = await startMcpServer();
  const h = await start();
  const fetched = () => h.server.requests.filter((p) => p.startsWith('/pkg/mcp/')).sort();
  try {
    await h.goto();
    await h.page.evaluate(() => window.t.open('plain', { provider: 'demo' }));
    assert.equal((await h.page.evaluate(() => window.t.chat('plain', 'hello'))).status, 'completed');
    assert.deepEqual(fetched(), []);

    // An agent with an MCP server: the module loads as it opens (the server is listed), and
    // the model's call of a server tool is gated, approved, and sent once.
    const r = await h.page.evaluate(async (url) => {
      let turn = 0;
      let seen;
      const model = { provider: 'custom', call: ({ messages }) => {
        if (turn++ === 0) return { toolCalls: [{ id: 'c1', name: 'files__read_file', arguments: { path: '/tmp/x' } }] };
        seen = messages.at(-1).tools[0].result;
        return { text: 'read it' };
      } };
      const agent = await window.t.Agent.open({ threadId: 'with-mcp', storage: { kind: 'memory' }, model,
        mcpServers: [{ name: 'files', url }] });
      const asked = await agent.chat('read /tmp/x');
      const done = await agent.submitDecisions({ c1: 'approve' });
      return { asked: asked.status, done: done.status, seen };
    }, mcp.url);
    assert.equal(r.asked, 'awaiting_approval', JSON.stringify(r));
    assert.equal(r.done, 'completed', JSON.stringify(r));
    assert.match(r.seen, /\/tmp\/x/, JSON.stringify(r)); // the server's answer, as the model sees it
    assert.deepEqual(mcp.log.filter((m) => m.method === 'tools/call').map((m) => m.params),
      [{ name: 'read_file', arguments: { path: '/tmp/x' } }]);
    assert.deepEqual(fetched(), ['/pkg/mcp/client.js', '/pkg/mcp/client_bg.wasm', '/pkg/mcp/index.js', '/pkg/mcp/questions.js']);
  } finally {
    await h.close();
    await mcp.close();
  }
});

// Remembered grants' reader and matcher leave the main wasm too (docs/design.md, "The grants'
// module"): grants/, imported by gatehouse.js when a grant is made or listed, or when a
// thread's store holds one as its calls are gated.
test('the main entry imports nothing of the grants\' module, and its wasm holds no grant reader', () => {
  const graph = staticGraph('gatehouse.js');
  assert.deepEqual(graph.filter((f) => f.startsWith('grants/')), []);
  // Texts only GrantRequest::parse and the Grant reader hold.
  for (const text of ['a thread grant needs its thread', 'only a thread grant names a thread', 'expiresAt', 'createdBy']) {
    assert.ok(read('grants/grants_bg.wasm').toString('latin1').includes(text), text);
    assert.ok(!read('gatehouse_bg.wasm').toString('latin1').includes(text), text);
  }
  assert.match(read('gatehouse.js').toString(), /const grants = \(\) => import\("\.\/grants\/index\.js"\)/);
  const gz = (files) => gzipSync(Buffer.concat(files.map(read)), { level: 9 }).length;
  console.log(`grants (only when a grant is made, listed or held): JS ${gz(['grants/index.js', 'grants/grants.js'])} B gzip, wasm ${gz(['grants/grants_bg.wasm'])} B gzip`);
});

test('a page whose store holds no grant fetches nothing of the grants\' module; a grant loads it, and so does a store that holds one', { timeout: 60_000 }, async () => {
  const h = await start();
  const fetched = () => h.server.requests.filter((p) => p.startsWith('/pkg/grants/')).sort();
  const all = ['/pkg/grants/grants.js', '/pkg/grants/grants_bg.wasm', '/pkg/grants/index.js'];
  // A model that calls delete_file on /tmp/<n>, then answers.
  const open = (database) => h.page.evaluate(async (database) => {
    let turn = 0;
    const model = { provider: 'custom', call: () => (turn++ % 2 === 0
      ? { toolCalls: [{ id: `c${turn}`, name: 'delete_file', arguments: { path: `/tmp/${turn}` } }] }
      : { text: 'done' }) };
    window.agent = await window.t.Agent.open({ threadId: 'g', storage: { kind: 'indexeddb', database }, model,
      tools: [{ name: 'delete_file', requireApproval: true, execute: () => 'deleted' }] });
  }, database);
  try {
    await h.goto();
    const database = `grants-size-${Date.now()}`;
    await open(database);
    assert.equal(await h.page.evaluate(async () => (await window.agent.chat('clean')).status), 'awaiting_approval');
    assert.deepEqual(fetched(), [], 'a gated call with no grant stored loads nothing');
    const g = await h.page.evaluate(async () => {
      await window.agent.submitDecisions({ c1: 'reject' });
      return window.agent.grant({ tool: 'delete_file', scope: 'user', match: { path: '/tmp/**' } });
    });
    assert.match(g.id, /^grant_/);
    assert.deepEqual(fetched(), all);
    // A new page (its service worker may answer from its cache: the page's own resource
    // entries say what it loaded): the store holds the grant, and the next gated call loads
    // the module, which approves it.
    await h.goto();
    await open(database);
    const loaded = () => h.page.evaluate(() => performance.getEntriesByType('resource')
      .map((e) => new URL(e.name).pathname).filter((p) => p.startsWith('/pkg/grants/')).sort());
    assert.deepEqual(await loaded(), [], 'opening loads nothing of it');
    const r = await h.page.evaluate(async () => ({ status: (await window.agent.chat('clean again')).status,
      trail: (await window.agent.audit()).at(-1) }));
    assert.equal(r.status, 'completed', JSON.stringify(r));
    assert.equal(r.trail.grantId, g.id);
    assert.deepEqual(await loaded(), all);
  } finally {
    await h.close();
  }
});
