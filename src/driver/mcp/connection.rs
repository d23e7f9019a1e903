//! One MCP server as the agent asks it (docs/design.md, "MCP tools"). With the `mcp` feature
//! (the Rust API) the client runs in-process; without it (the npm package) it runs in the MCP
//! client's own module, which `gatehouse.js` registers and loads only for an agent opened
//! with `mcpServers`. Both answer alike: a tool list, a call's result as the model sees it,
//! or an [`McpFailure`].

#[cfg(feature = "mcp")]
pub use crate::mcp::client::Client as Connection;

#[cfg(not(feature = "mcp"))]
pub use from_js::{Connection, register};

#[cfg(not(feature = "mcp"))]
mod from_js {
    use crate::convert::describe;
    use crate::mcp::{Listed, McpFailure, McpServerConfig, Reply};
    use js_sys::{Function, Promise};
    use serde_json::Value;
    use std::cell::RefCell;
    use std::rc::Rc;
    use wasm_bindgen::prelude::*;
    use wasm_bindgen_futures::JsFuture;
    use web_sys::AbortSignal;

    #[wasm_bindgen]
    extern "C" {
        /// A server's `Connection` in the MCP client's module (mcp-client/): its answers are
        /// a `Reply` as JSON text.
        #[derive(Clone)]
        type JsConnection;
        #[wasm_bindgen(method)]
        fn stale(this: &JsConnection) -> bool;
        #[wasm_bindgen(method)]
        fn list(this: &JsConnection) -> Promise;
        #[wasm_bindgen(method)]
        fn call(
            this: &JsConnection,
            tool: &str,
            inputs: &str,
            signal: Option<AbortSignal>,
            elicit: Option<Function>,
        ) -> Promise;
        /// Ends its `list_changed` stream (wasm-bindgen's `free` of the class).
        #[wasm_bindgen(method)]
        fn free(this: &JsConnection);
    }

    thread_local! {
        /// `connect(config)` of the MCP client's module (gatehouse.js registers it at init).
        static CONNECT: RefCell<Option<Function>> = const { RefCell::new(None) };
    }

    /// Registers the module's `connect` (src/js/options.rs, `setMcpClient`).
    pub fn register(connect: Function) {
        CONNECT.with(|c| *c.borrow_mut() = Some(connect));
    }

    /// One MCP server, connected through the module at its first request.
    pub struct Connection {
        pub cfg: McpServerConfig,
        js: RefCell<Option<JsConnection>>,
    }

    impl Drop for Connection {
        fn drop(&mut self) {
            if let Some(c) = self.js.take() {
                c.free();
            }
        }
    }

    impl Connection {
        pub fn new(cfg: McpServerConfig) -> Rc<Connection> {
            Rc::new(Connection {
                cfg,
                js: RefCell::new(None),
            })
        }

        /// Not connected yet counts as stale: its list is read at the next chance.
        pub fn stale(&self) -> bool {
            self.js.borrow().as_ref().is_none_or(JsConnection::stale)
        }

        fn failure(&self, code: &str, why: String) -> McpFailure {
            McpFailure {
                code: code.into(),
                message: format!("The MCP server \"{}\" {why}", self.cfg.name),
                status: None,
            }
        }

        /// The module's connection, loading the module at the first request. Failing to
        /// load it (offline before it was ever cached) is the server being unreachable.
        async fn connection(&self) -> Result<JsConnection, McpFailure> {
            if let Some(c) = self.js.borrow().as_ref() {
                return Ok(c.clone());
            }
            let unreachable = |why: String| self.failure("unreachable", why);
            let connect = CONNECT.with(|c| c.borrow().clone()).ok_or_else(|| {
                unreachable("cannot be asked: this build has no MCP client".into())
            })?;
            let config = serde_json::to_string(&self.cfg).unwrap_or_default();
            let made = connect.call1(&JsValue::NULL, &config.into());
            let conn: Result<JsValue, JsValue> = match made {
                Ok(p) => JsFuture::from(Promise::unchecked_from_js(p)).await,
                Err(e) => Err(e),
            };
            let conn = conn.map_err(|e| {
                unreachable(format!(
                    "cannot be asked: the MCP client did not load ({})",
                    describe(&e)
                ))
            })?;
            let conn: JsConnection = conn.unchecked_into();
            *self.js.borrow_mut() = Some(conn.clone());
            Ok(conn)
        }

        async fn reply(&self, answer: Promise) -> Result<Reply, McpFailure> {
            let text = JsFuture::from(answer).await.map_err(|e| {
                self.failure("protocol", format!("could not be asked: {}", describe(&e)))
            })?;
            let text = text.as_string().unwrap_or_default();
            serde_json::from_str(&text)
                .map_err(|e| self.failure("protocol", format!("could not be asked: {e}")))
        }

        pub async fn list(self: &Rc<Self>) -> Result<Listed, McpFailure> {
            let c = self.connection().await?;
            match self.reply(c.list()).await? {
                Reply::Listed(l) => Ok(l),
                Reply::Failed(f) => Err(f),
                _ => Err(self.failure("protocol", "answered a list with a call's result".into())),
            }
        }

        pub async fn call(
            self: &Rc<Self>,
            tool: &str,
            inputs: Value,
            signal: Option<&AbortSignal>,
            elicit: Option<Function>,
        ) -> Result<Result<Value, String>, McpFailure> {
            let c = self.connection().await?;
            let inputs = inputs.to_string();
            match self
                .reply(c.call(tool, &inputs, signal.cloned(), elicit))
                .await?
            {
                Reply::Output(v) => Ok(Ok(v)),
                Reply::ToolError(e) => Ok(Err(e)),
                Reply::Failed(f) => Err(f),
                Reply::Listed(_) => {
                    Err(self.failure("protocol", "answered a call with a tool list".into()))
                }
            }
        }
    }
}
