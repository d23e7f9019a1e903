//! The MCP client (`gatehouse_agent::mcp::client`) as a wasm module of its own. The npm
//! package's main wasm leaves it out: `gatehouse.js` loads this module only when an agent
//! opens with `mcpServers`, and the agent asks each server through a [`Connection`]
//! (docs/design.md, "MCP tools").
//!
//! JSON text in and out: the server's config (`McpServerConfig`) in, and every answer a
//! `Reply` (a tool list, a call's result as the model sees it, or why the server could not
//! be asked). The promises never reject.

#![cfg(target_arch = "wasm32")]

use gatehouse_agent::mcp::client::Client;
use gatehouse_agent::mcp::{McpFailure, McpServerConfig, Reply};
use js_sys::Promise;
use serde_json::Value;
use std::rc::Rc;
use wasm_bindgen::prelude::*;
use wasm_bindgen_futures::future_to_promise;
use web_sys::AbortSignal;

/// One MCP server over Streamable HTTP. `free()` ends its `list_changed` stream; a request
/// under way still ends as it would have.
#[wasm_bindgen]
pub struct Connection(Rc<Client>);

fn reply(r: Reply) -> Result<JsValue, JsValue> {
    Ok(serde_json::to_string(&r).unwrap_or_default().into())
}

#[wasm_bindgen]
impl Connection {
    /// `config`: the server as JSON (`{ name, url, headers: [[name, value]], … }`).
    #[wasm_bindgen(constructor)]
    pub fn new(config: &str) -> Result<Connection, JsError> {
        let cfg: McpServerConfig =
            serde_json::from_str(config).map_err(|e| JsError::new(&format!("config: {e}")))?;
        Ok(Connection(Client::new(cfg)))
    }

    /// Whether its tool list must be read again (`list_changed`, or never read).
    pub fn stale(&self) -> bool {
        self.0.stale()
    }

    /// Every page of `tools/list`: a `Reply`, `listed` or `failed`.
    pub fn list(&self) -> Promise {
        let c = self.0.clone();
        future_to_promise(async move {
            reply(match c.list().await {
                Ok(l) => Reply::Listed(l),
                Err(f) => Reply::Failed(f),
            })
        })
    }

    /// One `tools/call` with exactly `inputs` (JSON text), aborted with `signal`: a `Reply`,
    /// `output`, `toolError` or `failed`.
    pub fn call(&self, tool: String, inputs: &str, signal: Option<AbortSignal>) -> Promise {
        let c = self.0.clone();
        let inputs: Result<Value, _> = serde_json::from_str(inputs);
        future_to_promise(async move {
            let inputs = match inputs {
                Ok(v) => v,
                Err(e) => {
                    return reply(Reply::Failed(McpFailure {
                        code: "protocol".into(),
                        message: format!("the call's inputs are not JSON: {e}"),
                        status: None,
                    }));
                }
            };
            reply(match c.call(&tool, inputs, signal.as_ref()).await {
                Ok(Ok(v)) => Reply::Output(v),
                Ok(Err(e)) => Reply::ToolError(e),
                Err(f) => Reply::Failed(f),
            })
        })
    }
}
