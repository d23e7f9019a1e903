//! MCP servers (docs/design.md, "MCP tools"): [`McpTools`], the agent's MCP tools as
//! ordinary [`Tool`]s, listed from one [`Connection`] per server (`connection`).

mod connection;

#[cfg(not(feature = "mcp"))]
pub use connection::register;

use super::events::Emitter;
use super::tools::{Execute, LocalFuture, Tool};
use crate::event::Event;
use crate::mcp::{self, McpServerConfig};
use connection::Connection;
use serde_json::{Map, Value};
use std::borrow::Cow;
use std::cell::{Cell, RefCell};
use std::rc::Rc;

/// An agent's MCP servers, the tool lists it uses (stored with the thread), and the events
/// it owes the app (Agent.open takes no listener: they go to the next run's).
pub struct McpTools {
    clients: Vec<Rc<Connection>>,
    /// `{ server: [tool] }`, the servers' JSON.
    listed: RefCell<Map<String, Value>>,
    /// `listed` differs from what the thread record holds.
    unsaved: Cell<bool>,
    owed: RefCell<Vec<Event<'static>>>,
}

impl McpTools {
    /// Connects to every server and lists its tools; a server that cannot be listed keeps
    /// the list `stored` with the thread (if any) and is asked again before the next model
    /// call. Never fails: what went wrong becomes `mcp_error` events.
    pub async fn open(servers: Vec<McpServerConfig>, stored: Option<&Value>) -> McpTools {
        let stored = stored.and_then(Value::as_object).cloned();
        let set = McpTools {
            clients: servers.into_iter().map(Connection::new).collect(),
            listed: RefCell::new(stored.unwrap_or_default()),
            unsaved: Cell::new(false),
            owed: RefCell::new(Vec::new()),
        };
        set.refresh(None).await;
        set
    }

    /// Whether a server's list must be read again (before the next model call).
    pub fn stale(&self) -> bool {
        self.clients.iter().any(|c| c.stale())
    }

    /// Lists the stale servers again; true when a list changed. Events go to `ev`, or are
    /// owed to the next run when there is none.
    pub async fn refresh(&self, ev: Option<&Emitter>) -> bool {
        let mut changed = false;
        for c in self.clients.iter().filter(|c| c.stale()) {
            let listed = match c.list().await {
                Ok(listed) => listed,
                Err(e) => {
                    self.tell(ev, e.event(&c.cfg.name));
                    continue;
                }
            };
            for s in &listed.skipped {
                self.tell(ev, skipped(&c.cfg.name, s));
            }
            let kept = Value::Array(listed.tools);
            let mut listed = self.listed.borrow_mut();
            if listed.get(&c.cfg.name) == Some(&kept) {
                continue;
            }
            listed.insert(c.cfg.name.clone(), kept);
            changed = true;
            self.unsaved.set(true);
        }
        changed
    }

    fn tell(&self, ev: Option<&Emitter>, event: Event<'static>) {
        match ev {
            Some(ev) if ev.enabled() => ev.emit(&event),
            _ => self.owed.borrow_mut().push(event),
        }
    }

    /// The events owed to the app, for the next run's listener.
    pub fn owed(&self) -> Vec<Event<'static>> {
        std::mem::take(&mut self.owed.borrow_mut())
    }

    /// The lists to store with the next write, if they changed since the record was read.
    pub fn unsaved(&self) -> Option<Value> {
        self.unsaved
            .replace(false)
            .then(|| Value::Object(self.listed.borrow().clone()))
    }

    /// A write that was to store them failed: the next one stores them.
    pub fn unsave(&self) {
        self.unsaved.set(true);
    }

    /// The MCP tools, after the app's tools named `taken`: a listed tool whose schema or
    /// name is invalid, or whose name is taken, is left out with a `warning` event.
    pub fn tools(&self, taken: &[&str], ev: Option<&Emitter>) -> Vec<Tool> {
        let mut names: Vec<String> = Vec::new();
        let mut out = Vec::new();
        let listed = self.listed.borrow();
        for c in &self.clients {
            let Some(Value::Array(l)) = listed.get(&c.cfg.name) else {
                continue;
            };
            let mut all: Vec<&str> = taken.to_vec();
            all.extend(names.iter().map(String::as_str));
            let (specs, left_out) = mcp::select(&c.cfg, l, &all);
            for s in &left_out {
                self.tell(ev, skipped(&c.cfg.name, s));
            }
            for spec in specs {
                let prefix = c.cfg.name.len() + mcp::SEPARATOR.len();
                let own = spec.name[prefix..].to_owned();
                names.push(spec.name.clone());
                out.push(Tool::from_parts(spec, Some(execute(c.clone(), own)), None));
            }
        }
        out
    }
}

fn skipped(server: &str, s: &mcp::Skipped) -> Event<'static> {
    Event::Warning {
        code: Cow::Borrowed("mcp_tool_skipped"),
        message: Cow::Owned(format!(
            "The MCP server \"{server}\" lists the tool \"{}\", left out: {}",
            s.tool, s.reason
        )),
    }
}

/// Runs `tool` of `client` with exactly the inputs given: one `tools/call`.
fn execute(client: Rc<Connection>, tool: String) -> Execute {
    Rc::new(move |inputs, ctx| -> LocalFuture<Result<Value, String>> {
        let (client, tool) = (client.clone(), tool.clone());
        Box::pin(async move {
            let elicit = asker(&ctx, &client.cfg.name);
            match client
                .call(&tool, inputs, ctx.signal.as_ref(), elicit)
                .await
            {
                Ok(result) => result,
                Err(e) => {
                    ctx.events.emit(&e.event(&client.cfg.name));
                    ctx.cut_off.set(e.code == mcp::CUT_OFF);
                    Err(e.message)
                }
            }
        })
    })
}

/// Where the server's questions during this call go: the package entry's hook, bound to the
/// call (`hook(callId, server, signal)`, the MCP client's module adds the question). The Rust
/// API's in-process client announces no elicitation: it has none.
#[cfg(not(feature = "mcp"))]
fn asker(ctx: &super::tools::ToolContext, server: &str) -> Option<js_sys::Function> {
    let s = ctx.session.upgrade()?;
    let hook = s.borrow().elicitation_hook.clone()?;
    let signal = ctx
        .signal
        .clone()
        .map_or(wasm_bindgen::JsValue::UNDEFINED, Into::into);
    let bound = hook.bind3(
        &wasm_bindgen::JsValue::NULL,
        &ctx.call_id.as_str().into(),
        &server.into(),
        &signal,
    );
    Some(wasm_bindgen::JsCast::unchecked_into(bound))
}

#[cfg(feature = "mcp")]
fn asker(_: &super::tools::ToolContext, _: &str) -> Option<crate::mcp::Elicit> {
    None
}

/// Before a model call: lists again the servers whose list may have changed, so the call
/// offers the new list; the calls already in the thread keep their entries.
pub(super) async fn refresh(s: &super::Shared, ev: &Emitter) {
    let Some(m) = s.borrow().mcp.clone() else {
        return;
    };
    if !m.stale() || !m.refresh(Some(ev)).await {
        return;
    }
    let mut g = s.borrow_mut();
    g.tools.retain(|t| t.spec.shown.is_null());
    let taken: Vec<String> = g.tools.iter().map(|t| t.spec.name.clone()).collect();
    let taken: Vec<&str> = taken.iter().map(String::as_str).collect();
    let more = m.tools(&taken, Some(ev));
    g.tools.extend(more);
    let specs = g.tools.iter().map(|t| t.spec.clone()).collect();
    g.engine.set_tools(crate::engine::ToolSet::new(specs));
}
