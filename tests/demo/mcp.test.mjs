// The demo connects to a local MCP server (tests/mcp/server.mjs, the MCP TypeScript SDK's
// server) entered in Settings: its tool is offered to the demo model, the call waits on a
// card that shows the server's hints, and approving it sends one tools/call.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { newPage, openDemo, send, shot, waitForAssistant } from './harness.mjs';
import { startMcpServer } from '../mcp/server.mjs';

test('Settings → MCP server: a read-only tool still asks on a card with the server\'s hints; approve sends one call', { timeout: 60_000 }, async () => {
  const mcp = await startMcpServer();
  const { page, done } = await newPage();
  try {
    await openDemo(page);
    await page.locator('#open-settings').click();
    await page.locator('input[name="mcpUrl"]').fill(mcp.url);
    await page.locator('#settings-save').click();
    await page.locator('#settings-dialog').waitFor({ state: 'hidden' });
    // "read" is a word of mcp__read_file only (the demo model calls the tools mentioned).
    await send(page, 'Please read /tmp/demo.txt');

    const card = page.locator('.gh-card');
    await card.waitFor();
    assert.equal(await card.locator('.gh-card-name').innerText(), 'Read a file');
    assert.equal(await card.locator('.gh-card-tech').innerText(), 'mcp__read_file');
    assert.match(await card.locator('.gh-card-hints').innerText(),
      /^MCP tool "read_file" of server "mcp"\. Hints from the server \(not verified\): .*read-only/);
    const inputs = JSON.parse(await card.locator('.gh-card-inputs').textContent());
    assert.equal(mcp.log.filter((m) => m.method === 'tools/call').length, 0, 'nothing sent before approval');
    await shot(page, 'mcp-1-card');

    await card.locator('.gh-approve').click();
    const summary = await waitForAssistant(page, 'mcp__read_file returned');
    assert.match(summary, /contents of /);
    const calls = mcp.log.filter((m) => m.method === 'tools/call' && !m.rejected);
    assert.deepEqual(calls.map((m) => m.params), [{ name: 'read_file', arguments: inputs }]);
  } finally {
    await done();
    await mcp.close();
  }
});
