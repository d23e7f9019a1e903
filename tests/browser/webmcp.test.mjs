// WebMCP page tools (README "WebMCP", docs/design.md "WebMCP"): the tools a page registers with
// `document.modelContext.registerTool` (the W3C Web Machine Learning CG draft, here through
// @mcp-b/webmcp-polyfill 5.1.0, loaded into the page from node_modules) offered to the model
// as the MCP server `page`, behind the same gate as MCP tools: every one asks, a readOnlyHint
// only counts with trustReadOnlyHint, a rejected call never runs, an approved one runs once
// with the approved inputs, a tool registered later is offered at the next model call, and a
// page without WebMCP gets an mcp_error and no page tools.

import { after, test } from 'node:test';
import assert from 'node:assert/strict';
import { run, setup, textOf, uid } from './harness.mjs';

const h = await setup();
after(() => h.close());

const T = { timeout: 60_000 };
const call = (...calls) => ({ toolCalls: calls.map(([id, name, args]) => ({ id, name, arguments: args })) });

/** The page with the polyfill and two registered tools; `window.ran` records executions. */
async function openPage(t, { polyfill = true } = {}) {
  const { page } = await h.open(t);
  await run(page, async (polyfill) => {
    window.ran = [];
    if (!polyfill) return;
    await new Promise((resolve, reject) => {
      const s = document.createElement('script');
      s.src = '/node_modules/@mcp-b/webmcp-polyfill/dist/index.iife.js';
      s.onload = resolve;
      s.onerror = () => reject(new Error('the polyfill did not load'));
      document.head.append(s);
    });
    await document.modelContext.registerTool({
      name: 'add_to_cart', title: 'Add to cart', description: 'Adds a product to the cart',
      inputSchema: { type: 'object', properties: { sku: { type: 'string' }, qty: { type: 'integer' } }, required: ['sku'] },
      execute: async (input) => { window.ran.push(['add_to_cart', input]); return { cart: [input.sku] }; },
    });
    await document.modelContext.registerTool({
      name: 'page_title', description: 'The page title', inputSchema: { type: 'object', properties: {} },
      annotations: { readOnlyHint: true },
      execute: async () => { window.ran.push(['page_title', {}]); return 'Shop'; },
    });
  }, polyfill);
  return page;
}

test('page tools are offered as page__*, each asks; approve runs it once in the page with the inputs', T, async (t) => {
  const page = await openPage(t);
  const sc = await h.scenario([call(['c1', 'page__add_to_cart', { sku: 'A-1', qty: 2 }]), { text: 'Added.' }]);
  const r = await run(page, async ({ model, db }) => {
    const agent = await window.gh.Agent.open({ threadId: 't', model, storage: { database: db }, webmcp: true });
    const first = await agent.chat('add A-1 twice');
    const ranBefore = [...window.ran];
    const done = await agent.submitDecisions({ c1: 'approve' });
    return { first, ranBefore, ran: window.ran, done, messages: await agent.messages() };
  }, { model: sc.openai(), db: uid('db') });
  const reqs = await sc.requests();
  const tools = reqs[0].body.tools.map((x) => x.function);
  assert.deepEqual(tools.map((f) => f.name), ['page__add_to_cart', 'page__page_title']);
  assert.equal(tools[0].description, 'Adds a product to the cart');
  assert.deepEqual(tools[0].parameters.required, ['sku']);
  assert.equal(r.first.status, 'awaiting_approval');
  const [entry] = r.first.message.tools;
  assert.equal(entry.approval, 'pending');
  assert.deepEqual(entry.parameters, { mcp: { server: 'page', tool: 'add_to_cart', title: 'Add to cart' } });
  assert.deepEqual(r.ranBefore, [], 'nothing ran before the decision');
  assert.deepEqual(r.ran, [['add_to_cart', { sku: 'A-1', qty: 2 }]], 'once, with the inputs');
  assert.equal(r.done.status, 'completed');
  assert.equal(textOf(r.done.message), 'Added.');
  const result = r.messages.find((m) => m.type === 'tool_call_result').tools[0].result;
  assert.deepEqual(JSON.parse(result), { cart: ['A-1'] });
});

test('a readOnlyHint is not trusted unless asked; a rejected call never runs; an edit runs the edited inputs', T, async (t) => {
  const page = await openPage(t);
  const sc = await h.scenario([
    call(['r1', 'page__page_title', {}], ['a1', 'page__add_to_cart', { sku: 'WRONG' }]),
    { text: 'ok' },
    call(['r2', 'page__page_title', {}], ['a2', 'page__add_to_cart', { sku: 'B-2' }]),
    { text: 'ok' },
  ]);
  const r = await run(page, async ({ model, db }) => {
    const untrusted = await window.gh.Agent.open({ threadId: 'u', model, storage: { database: db }, webmcp: true });
    const first = await untrusted.chat('title and cart');
    const rejected = await untrusted.submitDecisions({ r1: 'approve', a1: ['edit', { sku: 'RIGHT' }] });
    const ranUntrusted = [...window.ran];
    window.ran.length = 0;
    const trusted = await window.gh.Agent.open({ threadId: 'v', model, storage: { database: db },
      webmcp: { trustReadOnlyHint: true } });
    const second = await trusted.chat('again');
    const ranTrustedFirst = [...window.ran];
    const done = await trusted.submitDecisions({ a2: ['reject', 'not that one'] });
    return { first, rejected, ranUntrusted, second, ranTrustedFirst, done, ran: window.ran, messages: await trusted.messages() };
  }, { model: sc.openai(), db: uid('db') });
  assert.deepEqual(r.first.message.tools.map((e) => e.approval), ['pending', 'pending'], 'untrusted: both ask');
  assert.deepEqual(r.ranUntrusted, [['page_title', {}], ['add_to_cart', { sku: 'RIGHT' }]]);
  assert.deepEqual(r.second.message.tools.map((e) => e.approval), [undefined, 'pending'], 'trusted: the read-only one runs');
  assert.deepEqual(r.ranTrustedFirst, [], 'nothing runs while a call of the step waits');
  assert.deepEqual(r.ran, [['page_title', {}]], 'the rejected call never ran');
  const results = r.messages.find((m) => m.type === 'tool_call_result').tools;
  assert.equal(results[0].result, 'Shop', 'a string result is stored as it is');
  assert.match(results[1].result, /^TOOL NOT EXECUTED\. The user rejected this action\. User instruction: not that one\./);
});

test('a tool registered after open is offered at the next model call; one that throws is a tool error', T, async (t) => {
  const page = await openPage(t);
  const sc = await h.scenario([
    { text: 'Hello.' },
    call(['b1', 'page__broken', {}]),
    { text: 'It failed.' },
  ]);
  const r = await run(page, async ({ model, db }) => {
    const agent = await window.gh.Agent.open({ threadId: 't', model, storage: { database: db }, webmcp: true });
    await agent.chat('hi');
    await document.modelContext.registerTool({
      name: 'broken', description: 'Always fails', inputSchema: { type: 'object', properties: {} },
      execute: async () => { throw new Error('out of stock'); },
    });
    await agent.chat('use broken');
    const done = await agent.submitDecisions({ b1: 'approve' });
    return { done, messages: await agent.messages() };
  }, { model: sc.openai(), db: uid('db') });
  const reqs = await sc.requests();
  assert.deepEqual(reqs[0].body.tools.map((x) => x.function.name), ['page__add_to_cart', 'page__page_title']);
  assert.deepEqual(reqs[1].body.tools.map((x) => x.function.name), ['page__add_to_cart', 'page__broken', 'page__page_title']);
  const result = r.messages.find((m) => m.type === 'tool_call_result').tools[0].result;
  assert.equal(JSON.parse(result).error, 'tool_error');
  assert.match(JSON.parse(result).message, /out of stock/);
  assert.equal(r.done.status, 'completed');
});

test('a page without WebMCP: an mcp_error, no page tools, the chat goes on; bad options are invalid_config', T, async (t) => {
  const page = await openPage(t, { polyfill: false });
  const sc = await h.scenario([{ text: 'No tools here.' }]);
  const r = await run(page, async ({ model, db }) => {
    const ev = window.gh.events();
    const agent = await window.gh.Agent.open({ threadId: 't', model, storage: { database: db }, webmcp: true });
    const out = await agent.chat('hi', { onEvent: ev.onEvent });
    const bad = await window.gh.error(() => window.gh.Agent.open({ threadId: 'x', model, storage: { database: db }, webmcp: { trust: true } }));
    const misspelled = await window.gh.error(() => window.gh.Agent.open({ threadId: 'x', model, storage: { database: db }, webMcp: true }));
    const badName = await window.gh.error(() => window.gh.Agent.open({ threadId: 'x', model, storage: { database: db }, webmcp: { name: 'a__b' } }));
    return { out, events: ev.list, bad, misspelled, badName };
  }, { model: sc.openai(), db: uid('db') });
  assert.equal(r.out.status, 'completed');
  const err = r.events.find((e) => e.type === 'mcp_error');
  assert.equal(err?.server, 'page');
  assert.equal(err.code, 'unreachable');
  assert.match(err.message, /no document\.modelContext/);
  const reqs = await sc.requests();
  assert.equal(reqs[0].body.tools, undefined, 'no tools offered');
  assert.equal(r.bad?.code, 'invalid_config');
  assert.match(r.bad.message, /unknown key `trust`/);
  assert.equal(r.misspelled?.code, 'invalid_config');
  assert.match(r.misspelled.message, /did you mean `webmcp`/);
  assert.equal(r.badName?.code, 'invalid_config');
});
