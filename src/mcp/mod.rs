//! MCP tools, the pure part (docs/design.md, "MCP tools"): JSON-RPC messages of the Streamable
//! HTTP transport, the server's tool list as tool definitions (`<server>__<tool>`, annotations
//! as hints), and a `tools/call` result as the result the model sees. No I/O: the transport
//! is `src/driver/mcp/`.

mod listing;
mod rpc;

pub use listing::{Skipped, parse_tools_page, select};
pub use rpc::{Incoming, RpcError, call_result, negotiated, notification, parse_body, request};

/// The protocol revisions this client speaks, newest first: `initialize` offers the first,
/// and a server that answers with another one of these is accepted.
pub const PROTOCOL_VERSIONS: [&str; 3] = ["2025-11-25", "2025-06-18", "2025-03-26"];

/// One MCP server of `mcpServers` (the Rust API's `McpServer`, the JS option's object).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct McpServerConfig {
    /// The prefix of its tools' names (`<name>__<tool>`).
    pub name: String,
    /// The Streamable HTTP endpoint.
    pub url: String,
    /// Sent with every request (e.g. `authorization`); kept in memory only, never stored.
    pub headers: Vec<(String, String)>,
    /// Let tools the server marks `readOnlyHint: true` run without asking.
    pub trust_read_only_hint: bool,
    /// Only these of the server's tools (its own names); `None`: all of them.
    pub tools: Option<Vec<String>>,
    /// The agent's default `approvalTimeout`, which its tools take (they set none).
    pub approval_timeout: Option<u64>,
}

/// The separator of `<server>__<tool>`.
pub const SEPARATOR: &str = "__";

/// Checks a server's name: a tool name prefix without the separator in it.
pub fn check_server_name(name: &str) -> Result<(), String> {
    let valid = !name.is_empty()
        && name.len() <= 32
        && !name.contains(SEPARATOR)
        && name
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b == b'_' || b == b'-');
    if valid {
        Ok(())
    } else {
        Err(format!(
            "`mcpServers`: the name {name:?} must be 1 to 32 characters of a-z, A-Z, 0-9, _ \
             or - without \"__\""
        ))
    }
}

/// The name the model sees for `tool` of `server`.
pub fn namespaced(server: &str, tool: &str) -> String {
    format!("{server}{SEPARATOR}{tool}")
}
