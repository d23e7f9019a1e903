// @ts-check
// The MCP client, loaded only for an agent opened with `mcpServers`: the main wasm leaves it
// out, so that apps without MCP servers never download it (docs/design.md, "MCP tools"). Its
// own small wasm (mcp-client/ in the repository: the crate's mcp::client over gloo-net)
// speaks Streamable HTTP to one server per `Connection`; the agent gates, stores and shows
// the tools, and hears every answer as JSON text.
import init, { Connection, checkAnswer } from "./client.js";
import { loadOnce } from "../load-wasm.js";

export const loadMcpClient = loadOnce(init, new URL("./client_bg.wasm", import.meta.url));

/** A connection to the server `config` (JSON text), once the module is loaded. */
export async function connect(config) {
  await loadMcpClient();
  return new Connection(config);
}

/** An answer to a server's question (both JSON text) as the result to send, or a throw that
 *  says why not (docs/design.md, "MCP elicitation"). Only once the module is loaded: a
 *  question came through it. */
export { checkAnswer };
