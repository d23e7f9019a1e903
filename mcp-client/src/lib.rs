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
use gatehouse_agent::mcp::{Elicit, McpFailure, McpServerConfig, Reply, elicit};
use js_sys::{Function, Promise};
use serde_json::{Value, json};
use std::rc::Rc;
use wasm_bindgen::prelude::*;
use wasm_bindgen_futures::{JsFuture, future_to_promise};
use web_sys::{AbortController, AbortSignal};

/// One MCP server over Streamable HTTP. `free()` ends its `list_changed` stream; a request
/// under way still ends as it would have.
#[wasm_bindgen]
pub struct Connection(Rc<Client>);

/// The agent's `elicit(question, withdrawn)` as the client asks it: the question as JSON
/// text, and a signal that fires when the client stops waiting for the answer (the server
/// withdrew the question, or the call ended). What is not a result's JSON text is `cancel`.
fn asker(f: Function) -> Elicit {
    Rc::new(move |question: Value| {
        let withdrawn = AbortController::new().ok().map(Withdrawn);
        let signal = withdrawn
            .as_ref()
            .map_or(JsValue::UNDEFINED, |w| w.0.signal().into());
        let asked = f.call2(&JsValue::NULL, &question.to_string().into(), &signal);
        Box::pin(async move {
            let text = match asked {
                Ok(p) => JsFuture::from(p.unchecked_into::<Promise>()).await.ok(),
                Err(_) => None,
            };
            // (Answered: the signal still fires as `withdrawn` drops, on a settled question.)
            drop(withdrawn);
            let result = text.and_then(|t: JsValue| t.as_string());
            result
                .and_then(|t| serde_json::from_str(&t).ok())
                .unwrap_or_else(|| json!({ "action": "cancel" }))
        })
    })
}

/// Aborts its controller when dropped: the question's future went before it was answered.
struct Withdrawn(AbortController);

impl Drop for Withdrawn {
    fn drop(&mut self) {
        self.0.abort();
    }
}

/// Checks an answer to a question the agent shows (both JSON text, the question as the
/// client handed it over): the `ElicitResult` to send, as JSON text, or why not.
#[wasm_bindgen(js_name = checkAnswer)]
pub fn check_answer(question: &str, answer: &str) -> Result<String, JsError> {
    elicit::check(question, answer).map_err(|m| JsError::new(&m))
}

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
        Ok(Connection(Client::with_elicitation(cfg)))
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
    /// `output`, `toolError` or `failed`. The server's questions meanwhile go to
    /// `elicit(question, withdrawn)` (see `asker`); without it they are refused.
    pub fn call(
        &self,
        tool: String,
        inputs: &str,
        signal: Option<AbortSignal>,
        elicit: Option<Function>,
    ) -> Promise {
        let c = self.0.clone();
        let elicit = elicit.map(asker);
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
            reply(match c.call(&tool, inputs, signal.as_ref(), elicit).await {
                Ok(Ok(v)) => Reply::Output(v),
                Ok(Err(e)) => Reply::ToolError(e),
                Err(f) => Reply::Failed(f),
            })
        })
    }
}
