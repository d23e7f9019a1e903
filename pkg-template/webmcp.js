// @ts-check
// WebMCP page tools as an MCP server (docs/design.md, "WebMCP"): `Agent.open({ webmcp })`
// adds a server whose URL is `webmcp:` to `mcpServers`, and gatehouse.js hands its connection
// to this module instead of the MCP client. The tools the page registers with WebMCP
// (`document.modelContext.registerTool`, the W3C Web Machine Learning CG draft) are then
// listed, namespaced, gated, refreshed and called exactly as an MCP server's: every one asks a
// human unless `trustReadOnlyHint` and the tool's `readOnlyHint` both say otherwise.
//
// The draft's consumer side is `getTools()` and `executeTool(tool, inputJson, { signal })`
// (the latter is Chromium's extension, which the @mcp-b/webmcp-polyfill implements too); a
// `toolchange` event marks the list stale, so the next model call reads it again. Loaded only
// for an agent opened with `webmcp`.

/** The URL that names the page's WebMCP tools among `mcpServers`. */
export const WEBMCP_URL = "webmcp:";

const KEYS = ["name", "trustReadOnlyHint", "tools"];

/** The `webmcp` option as an `mcpServers` entry; `invalid(message)` makes the error. */
export function webmcpServer(option, invalid) {
  if (option === true) return { name: "page", url: WEBMCP_URL };
  if (option === null || typeof option !== "object" || Array.isArray(option)) {
    throw invalid("`webmcp` must be true or { name?, trustReadOnlyHint?, tools? }");
  }
  for (const key of Object.keys(option)) {
    if (!KEYS.includes(key)) throw invalid(`\`webmcp\`: unknown key \`${key}\`; the keys are \`${KEYS.join("`, `")}\``);
  }
  // The MCP server checks (name, trustReadOnlyHint, tools) are the core's, with the others.
  return { name: "page", ...option, url: WEBMCP_URL };
}

/** The page's WebMCP context, if it has one: `document.modelContext` (the draft), else the
 *  older `navigator.modelContext`. */
function modelContext() {
  const g = /** @type {any} */ (globalThis);
  const c = g.document?.modelContext ?? g.navigator?.modelContext;
  return typeof c?.getTools === "function" ? c : null;
}

const reply = (r) => JSON.stringify(r);
const failed = (code, message) => reply({ failed: { code, message } });

/** The connection the core asks (src/driver/mcp/connection.rs, `JsConnection`): `list()` and
 *  `call()` answer JSON text, like the MCP client's module. */
class WebMcpConnection {
  #name;
  #context = modelContext();
  #stale = true;
  #tools = new Map(); // name → the RegisteredTool getTools gave
  #changed = () => { this.#stale = true; };

  constructor(config) {
    this.#name = config.name;
    this.#context?.addEventListener?.("toolchange", this.#changed);
  }

  stale() {
    return this.#stale;
  }

  async list() {
    const c = this.#context;
    if (!c) return failed("unreachable", `The page's WebMCP tools ("${this.#name}") cannot be listed: this page has no document.modelContext`);
    let tools;
    try {
      this.#stale = false; // a change while listing marks it stale again
      tools = await c.getTools();
    } catch (e) {
      this.#stale = true;
      return failed("protocol", `The page's WebMCP tools ("${this.#name}") could not be listed: ${e?.message ?? e}`);
    }
    this.#tools = new Map(tools.map((t) => [t.name, t]));
    return reply({
      listed: {
        tools: tools.map((t) => ({
          name: t.name,
          ...(t.title ? { title: t.title } : {}),
          description: t.description,
          inputSchema: schemaOf(t.inputSchema),
          ...(t.annotations ? { annotations: t.annotations } : {}),
        })),
        skipped: [],
      },
    });
  }

  async call(name, inputs, signal) {
    const c = this.#context;
    if (!c) return failed("unreachable", `The page's WebMCP tool "${name}" cannot be called: this page has no document.modelContext`);
    if (typeof c.executeTool !== "function") {
      return failed("protocol", `The page's WebMCP tool "${name}" cannot be called: this browser's modelContext has no executeTool`);
    }
    const tool = this.#tools.get(name);
    // Unregistered since it was listed: the model gets a tool error, like any failed call.
    if (!tool) return reply({ toolError: `The page no longer offers the tool "${name}"` });
    try {
      const out = await c.executeTool(tool, inputs, signal ? { signal } : {});
      return reply({ output: parsed(out) });
    } catch (e) {
      if (signal?.aborted) return failed("aborted", `The page's WebMCP tool "${name}" was aborted`);
      return reply({ toolError: String(e?.message ?? e) });
    }
  }

  free() {
    this.#context?.removeEventListener?.("toolchange", this.#changed);
  }
}

/** A registered tool's input schema: the draft gives an object or its JSON text; none is a
 *  tool without inputs. */
function schemaOf(s) {
  if (typeof s === "string") {
    try {
      return JSON.parse(s);
    } catch {
      return s; // not an object schema: the core skips the tool and says why
    }
  }
  return s ?? { type: "object", properties: {} };
}

/** executeTool's answer (JSON text, or plain text) as the value the model gets. */
function parsed(out) {
  if (out == null) return null;
  try {
    return JSON.parse(out);
  } catch {
    return out;
  }
}

/** The connection for the server `config` (JSON text), as the MCP client's `connect`. */
export async function connect(config) {
  return new WebMcpConnection(JSON.parse(config));
}
