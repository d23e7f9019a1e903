// A real MCP server for the tests: the official TypeScript SDK's McpServer behind its Streamable
// HTTP transport (stateful: one session and one McpServer per `initialize`), with CORS for a
// page of another origin (the session header allowed and exposed). Three tools: read_file
// (readOnlyHint), delete_file (destructiveHint; `wait_ms` makes it slow) and fail (isError).
// Every JSON-RPC message it receives is logged (`log`), so a test can count the `tools/call`s.
//
//   const mcp = await startMcpServer();   // mcp.url: the endpoint (/mcp); /auth/mcp wants
//   startMcpServer({ elicitation: true }) // adds the tool `ask` ({ kind }), which asks the user
//                                         //   through elicitation/create (below) and returns
//                                         //   what it got as JSON
//   mcp.log                               //   `authorization: Bearer <AUTH_TOKEN>`;
//                                         //   /nocors/mcp sends no CORS headers
//   await mcp.restart()                   // same port, every session forgotten
//   mcp.addTool('new_tool')               // registered on every session: list_changed
//   mcp.cutNextCall(ms)                   // the next tools/call's answer is cut off: its
//                                         //   headers sent, its connection destroyed at `ms`
//   mcp.cutNext(method, ms)               // the same for the next request of `method`
//   await mcp.close()
//
// Also a process of its own: `node tests/mcp/server.mjs [--port N]` (the demo's local server).

import { McpServer } from '@modelcontextprotocol/sdk/server/mcp.js';
import { StreamableHTTPServerTransport } from '@modelcontextprotocol/sdk/server/streamableHttp.js';
import { randomUUID } from 'node:crypto';
import http from 'node:http';
import { fileURLToPath } from 'node:url';
import { z } from 'zod';

export const AUTH_TOKEN = 'mcp-test-token';

const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

// `ask`: one elicitation/create per call, of the `kind` asked for:
//   form       a form (branch: string, required; force: boolean), on the call's own stream
//   url        URL mode (a bank's sign-in page), on the call's own stream
//   unrelated  the same form, sent on the GET stream (no related request)
//   brief      the form with a 1.5 s timeout: the server gives up and cancels the request
const FORM = {
  message: 'Which branch?',
  requestedSchema: { type: 'object', properties: {
    branch: { type: 'string', title: 'Branch', minLength: 1 },
    force: { type: 'boolean', title: 'Force push' },
  }, required: ['branch'] },
};
export const SIGN_IN_URL = 'https://bank.example/connect?session=42';

function registerAsk(server) {
  let n = 0;
  server.registerTool('ask', {
    description: 'Asks the user something',
    inputSchema: { kind: z.enum(['form', 'url', 'unrelated', 'brief']) },
  }, async ({ kind }, extra) => {
    const related = { relatedRequestId: extra.requestId };
    const params = kind === 'url'
      ? { mode: 'url', message: 'Connect your bank account', url: SIGN_IN_URL, elicitationId: `e${++n}` }
      : FORM;
    const options = kind === 'unrelated' ? {} : kind === 'brief' ? { ...related, timeout: 1500 } : related;
    try {
      const answer = await server.server.elicitInput(params, options);
      return { content: [{ type: 'text', text: JSON.stringify(answer) }] };
    } catch (e) {
      return { content: [{ type: 'text', text: `not answered: ${e.message}` }], isError: true };
    }
  });
}

function registerTools(server, extra) {
  server.registerTool('read_file', {
    title: 'Read a file',
    description: 'Reads a file',
    inputSchema: { path: z.string() },
    annotations: { readOnlyHint: true },
  }, async ({ path }) => ({ content: [{ type: 'text', text: `contents of ${path}` }] }));
  server.registerTool('delete_file', {
    title: 'Delete a file',
    description: 'Deletes a file for good',
    inputSchema: { path: z.string(), wait_ms: z.number().optional() },
    annotations: { destructiveHint: true, openWorldHint: false },
  }, async ({ path, wait_ms }) => {
    if (wait_ms) await sleep(wait_ms);
    return { content: [{ type: 'text', text: `deleted ${path}` }], structuredContent: { deleted: path } };
  });
  server.registerTool('fail', {
    description: 'Always fails',
    inputSchema: { reason: z.string() },
  }, async ({ reason }) => ({ content: [{ type: 'text', text: `failed: ${reason}` }], isError: true }));
  for (const name of extra) addTo(server, name);
}

function addTo(server, name) {
  server.registerTool(name, { description: `The ${name} tool`, inputSchema: { n: z.number() } },
    async ({ n }) => ({ content: [{ type: 'text', text: `${name}(${n})` }] }));
}

function cors(req, res) {
  res.setHeader('access-control-allow-origin', req.headers.origin ?? '*');
  res.setHeader('access-control-allow-methods', 'GET, POST, DELETE, OPTIONS');
  res.setHeader('access-control-allow-headers',
    'content-type, accept, authorization, mcp-session-id, mcp-protocol-version, last-event-id');
  res.setHeader('access-control-expose-headers', 'mcp-session-id');
}

function readJson(req) {
  return new Promise((resolve) => {
    let body = '';
    req.on('data', (c) => { body += c; });
    req.on('end', () => {
      try { resolve(JSON.parse(body)); } catch { resolve(undefined); }
    });
  });
}

export async function startMcpServer({ port = 0, elicitation = false } = {}) {
  const log = []; // { session, method, id, params } of every message received
  const extraTools = [];
  let openStreams = 0; // GET streams (for server notifications) now open
  let sessions = new Map(); // session id -> { transport, server }
  let cut = null; // { method, ms }: the next such request's connection is destroyed after its headers

  async function handle(req, res) {
    const url = new URL(req.url, 'http://x');
    // /nocors/mcp: the same server without CORS headers, which a page may not call.
    const nocors = url.pathname === '/nocors/mcp';
    if (!nocors) cors(req, res);
    if (req.method === 'OPTIONS') return res.writeHead(204).end();
    if (url.pathname === '/auth/mcp' && req.headers.authorization !== `Bearer ${AUTH_TOKEN}`) {
      return res.writeHead(401, { 'content-type': 'application/json' })
        .end(JSON.stringify({ error: 'unauthorized' }));
    }
    if (!['/mcp', '/auth/mcp', '/nocors/mcp'].includes(url.pathname)) return res.writeHead(404).end();
    const sid = req.headers['mcp-session-id'];
    if (req.method === 'GET') {
      openStreams++;
      res.on('close', () => { openStreams--; });
    }
    const body = req.method === 'POST' ? await readJson(req) : undefined;
    let entry = sid ? sessions.get(sid) : undefined;
    // `rejected`: answered 404/400 here, never handed to the SDK (no tool ran).
    const rejected = !entry && (sid !== undefined || body?.method !== 'initialize');
    for (const m of [body ?? []].flat()) {
      log.push({ session: sid ?? null, method: m.method, id: m.id, params: m.params, rejected,
        result: m.result, error: m.error });
    }
    if (!entry) {
      if (rejected) {
        return res.writeHead(sid ? 404 : 400, { 'content-type': 'application/json' }).end(JSON.stringify({
          jsonrpc: '2.0', id: null, error: { code: -32001, message: 'Session not found' } }));
      }
      const server = new McpServer({ name: 'gatehouse-test', version: '1.0.0' });
      registerTools(server, extraTools);
      if (elicitation) registerAsk(server);
      const transport = new StreamableHTTPServerTransport({
        sessionIdGenerator: () => randomUUID(),
        onsessioninitialized: (id) => sessions.set(id, entry),
      });
      entry = { server, transport };
      await server.connect(transport);
    }
    if (cut !== null && body?.method === cut.method) {
      const { ms } = cut;
      cut = null;
      // The SDK's SSE answer: its headers and a comment sent at once; the tool goes on, its
      // answer never arrives.
      const writeHead = res.writeHead.bind(res);
      res.writeHead = (...args) => {
        writeHead(...args);
        res.write(': the answer is on its way\n\n'); // an SSE comment: Firefox's fetch resolves
        setTimeout(() => res.socket?.destroy(), ms);
        return res;
      };
    }
    await entry.transport.handleRequest(req, res, body);
  }

  let httpServer;
  async function listen(p) {
    httpServer = http.createServer((req, res) => {
      handle(req, res).catch((e) => {
        if (!res.headersSent) res.writeHead(500).end(String(e));
      });
    });
    await new Promise((resolve) => httpServer.listen(p, '127.0.0.1', resolve));
    return httpServer.address().port;
  }
  async function stop() {
    const closing = new Promise((resolve) => httpServer.close(resolve));
    httpServer.closeAllConnections();
    await closing;
    for (const { server } of sessions.values()) await server.close().catch(() => {});
    sessions = new Map();
  }

  const boundPort = await listen(port);
  const base = `http://127.0.0.1:${boundPort}`;
  return {
    url: `${base}/mcp`,
    authUrl: `${base}/auth/mcp`,
    noCorsUrl: `${base}/nocors/mcp`,
    log,
    /** How many GET streams are open now. */
    openStreams: () => openStreams,
    count: (method) => log.filter((m) => m.method === method && !m.rejected).length,
    /** Same port, every session forgotten (a restarted server). */
    async restart() {
      await stop();
      await listen(boundPort);
    },
    /** A new tool on every session and for the next: the SDK sends list_changed. */
    addTool(name) {
      extraTools.push(name);
      for (const { server } of sessions.values()) addTo(server, name);
    },
    cutNextCall(ms = 100) {
      cut = { method: 'tools/call', ms };
    },
    cutNext(method, ms = 100) {
      cut = { method, ms };
    },
    close: stop,
  };
}

if (process.argv[1] === fileURLToPath(import.meta.url)) {
  const i = process.argv.indexOf('--port');
  const mcp = await startMcpServer({ port: i > 0 ? Number(process.argv[i + 1]) : 8788 });
  console.log(`MCP server (tools read_file, delete_file, fail) at ${mcp.url}`);
}
