//! MCP tools, the pure part (docs/design.md, "MCP tools"): JSON-RPC messages of the Streamable
//! HTTP transport, the server's tool list as tool definitions (`<server>__<tool>`, annotations
//! as hints), and a `tools/call` result as the result the model sees. No I/O here: the
//! transport is `client` (feature `net`), run in-process by the driver (feature `mcp`) or in
//! the MCP client's own module (mcp-client/); the agent's side is `src/driver/mcp/`.

#[cfg(all(target_arch = "wasm32", feature = "net"))]
pub mod client;
pub mod elicit;
mod listing;
mod rpc;

pub use listing::{Skipped, parse_tools_page, select};
pub use rpc::{
    Incoming, RpcError, call_result, negotiated, notification, parse_body, request, response,
};

use crate::event::Event;
use serde::{Deserialize, Serialize};
use serde_json::Value;
use std::borrow::Cow;

/// The protocol revisions this client speaks, newest first: `initialize` offers the first,
/// and a server that answers with another one of these is accepted.
pub const PROTOCOL_VERSIONS: [&str; 3] = ["2025-11-25", "2025-06-18", "2025-03-26"];

/// One MCP server of `mcpServers` (the Rust API's `McpServer`, the JS option's object). As
/// JSON it is what the agent hands the MCP client's own module.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
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

/// Asks the user an MCP server's question (an [`elicit::Elicitation`] as JSON) and gives the
/// `ElicitResult` the server gets (docs/design.md, "MCP elicitation"). Dropping the future
/// withdraws the question (the server cancelled it, or the call ended).
pub type Elicit =
    std::rc::Rc<dyn Fn(Value) -> std::pin::Pin<Box<dyn std::future::Future<Output = Value>>>>;

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

/// The `code` of an [`McpFailure`] whose request the server took and whose answer broke off
/// (the stream or body ended or failed before it): a `tools/call` may or may not have taken
/// effect, so the call is re-gated, not given a tool error.
pub const CUT_OFF: &str = "cut_off";

/// Why a server could not be asked: the fields of an `mcp_error` event, and the tool error's
/// text (`message`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct McpFailure {
    pub code: String,
    pub message: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub status: Option<u16>,
}

impl McpFailure {
    pub fn event(&self, server: &str) -> Event<'static> {
        Event::McpError {
            server: Cow::Owned(server.to_owned()),
            code: Cow::Owned(self.code.clone()),
            message: Cow::Owned(self.message.clone()),
            status: self.status,
        }
    }
}

/// A server's tool list: the tools kept by `parse_tools_page`, and the entries it skipped.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Listed {
    pub tools: Vec<Value>,
    pub skipped: Vec<Skipped>,
}

/// What the MCP client's own module answers the agent, as JSON text (docs/design.md, "MCP
/// tools"): a tool list, a call's result as the model sees it (`call_result`), or why the
/// server could not be asked.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub enum Reply {
    Listed(Listed),
    Output(Value),
    /// The server said `isError`: a tool error result with this text.
    ToolError(String),
    Failed(McpFailure),
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    /// The module boundary's JSON, both ways: what mcp-client/ writes, the driver reads.
    #[test]
    fn replies_and_config_cross_the_module_boundary_as_this_json() {
        let failed = McpFailure {
            code: "unauthorized".into(),
            message: "refused".into(),
            status: Some(401),
        };
        let cases = [
            (
                Reply::Listed(Listed {
                    tools: vec![json!({ "name": "read" })],
                    skipped: vec![Skipped {
                        tool: "?".into(),
                        reason: "no name".into(),
                    }],
                }),
                json!({ "listed": { "tools": [{ "name": "read" }],
                    "skipped": [{ "tool": "?", "reason": "no name" }] } }),
            ),
            (Reply::Output(json!("text")), json!({ "output": "text" })),
            (
                Reply::ToolError("bad".into()),
                json!({ "toolError": "bad" }),
            ),
            (
                Reply::Failed(failed.clone()),
                json!({ "failed": { "code": "unauthorized", "message": "refused", "status": 401 } }),
            ),
        ];
        for (reply, wire) in cases {
            assert_eq!(serde_json::to_value(&reply).unwrap(), wire);
            assert_eq!(serde_json::from_value::<Reply>(wire).unwrap(), reply);
        }
        let cfg = McpServerConfig {
            name: "files".into(),
            url: "https://mcp.example/mcp".into(),
            headers: vec![("authorization".into(), "Bearer x".into())],
            trust_read_only_hint: true,
            tools: None,
            approval_timeout: Some(1000),
        };
        let text = serde_json::to_string(&cfg).unwrap();
        assert_eq!(
            serde_json::from_str::<Value>(&text).unwrap(),
            json!({ "name": "files", "url": "https://mcp.example/mcp",
                "headers": [["authorization", "Bearer x"]], "trustReadOnlyHint": true,
                "tools": null, "approvalTimeout": 1000 })
        );
        assert_eq!(serde_json::from_str::<McpServerConfig>(&text).unwrap(), cfg);
        let event = serde_json::to_value(failed.event("files")).unwrap();
        assert_eq!(
            event,
            json!({ "type": "mcp_error", "server": "files", "code": "unauthorized",
                "message": "refused", "status": 401 })
        );
    }
}
