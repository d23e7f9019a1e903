//! One MCP server over Streamable HTTP (docs/design.md, "MCP tools"): `initialize`, the
//! `Mcp-Session-Id`, re-initialising when the server forgot the session, `tools/list`,
//! `tools/call`, `list_changed` heard on the GET stream, `notifications/cancelled` when a
//! call is aborted. What it answers is `Listed`, a call's result as the model sees it, or an
//! [`McpFailure`]: the same whether the driver runs it (feature `mcp`) or the MCP client's
//! own module does (mcp-client/).

use super::{self as mcp, Incoming, Listed, McpFailure, McpServerConfig, PROTOCOL_VERSIONS};
use crate::net::abort;
use crate::net::fetch::{self, AbortLink, BodyReader, FetchError};
use crate::providers::SseParser;
use gloo_net::http::Method;
use serde_json::{Value, json};
use std::cell::{Cell, RefCell};
use std::rc::Rc;
use web_sys::{AbortController, AbortSignal};

/// How long `initialize` and `tools/list` may take, and a `tools/call`.
const LIST_TIMEOUT_MS: f64 = 10_000.0;
const CALL_TIMEOUT_MS: f64 = 120_000.0;

/// Why a request to a server failed.
enum McpError {
    /// Offline, refused, or a CORS refusal (browsers do not tell them apart).
    Unreachable(String),
    Http(u16, String),
    Timeout,
    Aborted,
    /// Not the protocol: a body that is not JSON, no answer, a revision we do not speak.
    Protocol(String),
    Rpc(mcp::RpcError),
    /// 404 for our session id: the server forgot it (it restarted); initialise again.
    SessionGone,
    /// The server took the `tools/call`, and its answer broke off or ended before the answer:
    /// the call may or may not have taken effect.
    CutOff(String),
    /// The same for any other request (`initialize`, `tools/list`): nothing of the tool ran,
    /// and the request is made again (before the next model call, or with the next call).
    BrokeOff(String),
}

impl McpError {
    fn code(&self) -> &'static str {
        match self {
            McpError::Unreachable(_) | McpError::BrokeOff(_) => "unreachable",
            McpError::Http(401 | 403, _) => "unauthorized",
            McpError::Http(..) | McpError::SessionGone => "http",
            McpError::Timeout => "timeout",
            McpError::Aborted => "aborted",
            McpError::Protocol(_) => "protocol",
            McpError::Rpc(_) => "rpc",
            McpError::CutOff(_) => mcp::CUT_OFF,
        }
    }

    fn status(&self) -> Option<u16> {
        match self {
            McpError::Http(s, _) => Some(*s),
            McpError::SessionGone => Some(404),
            _ => None,
        }
    }

    /// The text the model sees as the tool error, and the event's message.
    fn message(&self, server: &str) -> String {
        let why = match self {
            McpError::Unreachable(e) => format!(
                "is unreachable (offline, down, or it refused this page's origin: CORS): {e}"
            ),
            McpError::Http(s @ (401 | 403), _) => format!("refused the credentials (HTTP {s})"),
            McpError::Http(s, body) => format!("answered HTTP {s}: {body}"),
            McpError::SessionGone => "forgot the session twice".into(),
            McpError::Timeout => "did not answer in time".into(),
            McpError::Aborted => "was not waited for: the run was aborted".into(),
            McpError::Protocol(e) => format!("broke the protocol: {e}"),
            McpError::Rpc(e) => format!("answered with error {}: {}", e.code, e.message),
            McpError::CutOff(e) => format!(
                "took the request, but its answer broke off ({e}): it may or may not have \
                 taken effect"
            ),
            McpError::BrokeOff(e) => format!("broke off its answer ({e}); it is asked again"),
        };
        format!("The MCP server \"{server}\" {why}")
    }

    fn failure(&self, server: &str) -> McpFailure {
        McpFailure {
            code: self.code().into(),
            message: self.message(server),
            status: self.status(),
        }
    }
}

/// A failure reading the answer of a request the server took.
fn cut_off(e: FetchError) -> McpError {
    match e {
        FetchError::Aborted => McpError::Aborted,
        FetchError::Network(m) | FetchError::BadRequest(m) => McpError::CutOff(m),
    }
}

impl From<FetchError> for McpError {
    fn from(e: FetchError) -> Self {
        match e {
            FetchError::Aborted => McpError::Aborted,
            FetchError::Network(m) | FetchError::BadRequest(m) => McpError::Unreachable(m),
        }
    }
}

/// What `initialize` agreed on.
#[derive(Clone)]
struct Conn {
    session: Option<String>,
    version: String,
}

/// One MCP server.
pub struct Client {
    pub cfg: McpServerConfig,
    conn: RefCell<Option<Conn>>,
    next_id: Cell<u64>,
    /// Its tool list may have changed (`list_changed`, or it could not be listed yet).
    stale: Cell<bool>,
    /// Ends the GET stream when the client goes.
    listening: RefCell<Option<AbortController>>,
}

impl Drop for Client {
    fn drop(&mut self) {
        if let Some(c) = self.listening.borrow_mut().take() {
            c.abort();
        }
    }
}

impl Client {
    pub fn new(cfg: McpServerConfig) -> Rc<Client> {
        Rc::new(Client {
            cfg,
            conn: RefCell::new(None),
            next_id: Cell::new(1),
            stale: Cell::new(true),
            listening: RefCell::new(None),
        })
    }

    /// Whether its tool list must be read again (before the next model call).
    pub fn stale(&self) -> bool {
        self.stale.get()
    }

    fn id(&self) -> u64 {
        let id = self.next_id.get();
        self.next_id.set(id + 1);
        id
    }

    fn headers(&self, conn: Option<&Conn>, accept: &str) -> Vec<(String, String)> {
        let mut h = vec![
            ("content-type".to_owned(), "application/json".to_owned()),
            ("accept".to_owned(), accept.to_owned()),
        ];
        if let Some(c) = conn {
            if let Some(id) = &c.session {
                h.push(("mcp-session-id".into(), id.clone()));
            }
            h.push(("mcp-protocol-version".into(), c.version.clone()));
        }
        h.extend(self.cfg.headers.iter().cloned());
        h
    }

    /// Sends one message; for a request (`id`), reads the answer from a JSON body or from
    /// the SSE stream, noting the notifications met on the way. Also returns the response's
    /// `Mcp-Session-Id`.
    async fn post(
        &self,
        conn: Option<&Conn>,
        body: &str,
        id: Option<u64>,
        link: &AbortLink,
    ) -> Result<(Value, Option<String>), McpError> {
        let headers = self.headers(conn, "application/json, text/event-stream");
        let resp = fetch::post(&self.cfg.url, &headers, body, link).await?;
        let status = resp.status();
        if status == 404 && conn.is_some_and(|c| c.session.is_some()) {
            return Err(McpError::SessionGone);
        }
        if !(200..300).contains(&status) {
            let text = fetch::text(&resp, link).await.unwrap_or_default();
            return Err(McpError::Http(status, text.chars().take(200).collect()));
        }
        let session = resp.headers().get("mcp-session-id");
        let Some(id) = id else {
            return Ok((Value::Null, session));
        };
        let sse = resp
            .headers()
            .get("content-type")
            .is_some_and(|t| t.starts_with("text/event-stream"));
        if !sse {
            let text = fetch::text(&resp, link).await.map_err(cut_off)?;
            return match self.answer(&text, id)? {
                Some(a) => Ok((a?, session)),
                None => Err(McpError::Protocol("no answer to the request".into())),
            };
        }
        let mut reader =
            BodyReader::new(&resp).ok_or(McpError::Protocol("an empty stream".into()))?;
        let mut parser = SseParser::new();
        while let Some(chunk) = reader.next(link).await.map_err(cut_off)? {
            for ev in parser.push(&chunk) {
                if let Some(a) = self.answer(&ev.data, id)? {
                    reader.cancel();
                    return Ok((a?, session));
                }
            }
        }
        Err(McpError::CutOff(
            "the stream ended before the answer".into(),
        ))
    }

    /// The answer to `id` among the messages of `data`, if there; notes the rest.
    fn answer(&self, data: &str, id: u64) -> Result<Option<Result<Value, McpError>>, McpError> {
        for m in mcp::parse_body(data).map_err(McpError::Protocol)? {
            match m {
                Incoming::Response { id: got, outcome } if got == id => {
                    return Ok(Some(outcome.map_err(McpError::Rpc)));
                }
                Incoming::Notification { method } => self.note(&method),
                _ => {}
            }
        }
        Ok(None)
    }

    fn note(&self, method: &str) {
        if method == "notifications/tools/list_changed" {
            self.stale.set(true);
        }
    }

    async fn initialize(self: &Rc<Self>) -> Result<Conn, McpError> {
        let link = AbortLink::new(None)?;
        let id = self.id();
        let params = json!({
            "protocolVersion": PROTOCOL_VERSIONS[0],
            "capabilities": {},
            "clientInfo": { "name": "gatehouse-agent", "version": env!("CARGO_PKG_VERSION") },
        });
        let body = mcp::request(id, "initialize", params);
        let (result, session) = self.post(None, &body, Some(id), &link).await?;
        let version = mcp::negotiated(&result).map_err(McpError::Protocol)?;
        let conn = Conn { session, version };
        let note = mcp::notification("notifications/initialized", json!({}));
        self.post(Some(&conn), &note, None, &link).await?;
        *self.conn.borrow_mut() = Some(conn.clone());
        self.listen(&conn);
        Ok(conn)
    }

    /// One request, initialising first when there is no session, and once more when the
    /// server forgot it: a 404 for a session means the request was not handled.
    async fn request(
        self: &Rc<Self>,
        method: &str,
        params: Value,
        signal: Option<&AbortSignal>,
    ) -> Result<Value, McpError> {
        // Only a `tools/call` that broke off may have taken effect.
        let not_the_call = |e: McpError| match e {
            McpError::CutOff(m) => McpError::BrokeOff(m),
            e => e,
        };
        for _ in 0..2 {
            let known = self.conn.borrow().clone();
            let conn = match known {
                Some(c) => c,
                None => self.initialize().await.map_err(not_the_call)?,
            };
            let link = AbortLink::new(signal)?;
            let id = self.id();
            let body = mcp::request(id, method, params.clone());
            match self.post(Some(&conn), &body, Some(id), &link).await {
                Err(McpError::SessionGone) => {
                    // A new session: the server may list other tools now.
                    *self.conn.borrow_mut() = None;
                    self.stale.set(true);
                }
                Err(e @ McpError::Aborted) => {
                    self.cancelled(&conn, id);
                    return Err(e);
                }
                Err(e) if method != "tools/call" => return Err(not_the_call(e)),
                other => return other.map(|(v, _)| v),
            }
        }
        Err(McpError::SessionGone)
    }

    /// Tells the server a request of ours is no longer waited for (fire and forget).
    fn cancelled(self: &Rc<Self>, conn: &Conn, id: u64) {
        let params = json!({ "requestId": id, "reason": "the run was aborted" });
        let note = mcp::notification("notifications/cancelled", params);
        let (me, conn) = (self.clone(), conn.clone());
        wasm_bindgen_futures::spawn_local(async move {
            if let Ok(link) = AbortLink::new(None) {
                let _ = me.post(Some(&conn), &note, None, &link).await;
            }
        });
    }

    /// Opens the GET stream on which the server sends `list_changed`; a server without one
    /// (405) is fine: its list is then read again only when it could not be read before.
    fn listen(self: &Rc<Self>, conn: &Conn) {
        let Ok(controller) = AbortController::new() else {
            return;
        };
        let signal = controller.signal();
        if let Some(old) = self.listening.replace(Some(controller)) {
            old.abort();
        }
        let headers = self.headers(Some(conn), "text/event-stream");
        let (url, me) = (self.cfg.url.clone(), Rc::downgrade(self));
        wasm_bindgen_futures::spawn_local(async move {
            let Ok(link) = AbortLink::new(Some(&signal)) else {
                return;
            };
            let Ok(resp) = fetch::send(Method::GET, &url, &headers, None, &link).await else {
                return;
            };
            let Some(mut reader) = BodyReader::new(&resp).filter(|_| resp.status() == 200) else {
                return;
            };
            let mut parser = SseParser::new();
            while let Ok(Some(chunk)) = reader.next(&link).await {
                let Some(client) = me.upgrade() else { break };
                for ev in parser.push(&chunk) {
                    for m in mcp::parse_body(&ev.data).unwrap_or_default() {
                        if let Incoming::Notification { method } = m {
                            client.note(&method);
                        }
                    }
                }
            }
            reader.cancel();
        });
    }

    /// Every page of `tools/list`, within `LIST_TIMEOUT_MS`.
    pub async fn list(self: &Rc<Self>) -> Result<Listed, McpFailure> {
        let mut listing = std::pin::pin!(self.pages());
        let listed = abort::within(&mut listing, LIST_TIMEOUT_MS).await;
        listed
            .unwrap_or(Err(McpError::Timeout))
            .map_err(|e| e.failure(&self.cfg.name))
    }

    async fn pages(self: &Rc<Self>) -> Result<Listed, McpError> {
        let mut all = Listed::default();
        let mut cursor: Option<String> = None;
        // A bound on pages, so a server that always sends a cursor cannot hold the agent.
        for _ in 0..100 {
            let params = match &cursor {
                Some(c) => json!({ "cursor": c }),
                None => json!({}),
            };
            let page = self.request("tools/list", params, None).await?;
            let (tools, next) = mcp::parse_tools_page(&page);
            for t in tools {
                match t {
                    Ok(t) => all.tools.push(t),
                    Err(s) => all.skipped.push(s),
                }
            }
            cursor = next;
            if cursor.is_none() {
                break;
            }
        }
        self.stale.set(false);
        Ok(all)
    }

    /// One `tools/call` with exactly `inputs`: `Ok` its result as the model sees it (`Err`
    /// the tool error a result with `isError` is), or why the server could not be asked.
    pub async fn call(
        self: &Rc<Self>,
        tool: &str,
        inputs: Value,
        signal: Option<&AbortSignal>,
    ) -> Result<Result<Value, String>, McpFailure> {
        let params = json!({ "name": tool, "arguments": inputs });
        let mut calling = std::pin::pin!(self.request("tools/call", params, signal));
        let called = abort::within(&mut calling, CALL_TIMEOUT_MS).await;
        match called.unwrap_or(Err(McpError::Timeout)) {
            Ok(result) => Ok(mcp::call_result(&result)),
            Err(e) => Err(e.failure(&self.cfg.name)),
        }
    }
}
