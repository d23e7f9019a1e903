//! One MCP server over Streamable HTTP (docs/design.md, "MCP tools"): `initialize`, the
//! `Mcp-Session-Id`, re-initialising when the server forgot the session, `tools/list`,
//! `tools/call`, `list_changed` heard on the GET stream, `notifications/cancelled` when a
//! call is aborted, and the server's own requests: `elicitation/create` asked of a human
//! through the call's [`Elicit`], `ping` answered. What it answers is `Listed`, a call's result as the model sees it, or an
//! [`McpFailure`]: the same whether the driver runs it (feature `mcp`) or the MCP client's
//! own module does (mcp-client/).

use super::{
    self as mcp, Elicit, Incoming, Listed, McpFailure, McpServerConfig, PROTOCOL_VERSIONS, RpcError,
};
use crate::net::abort;
use crate::net::fetch::{self, AbortLink, BodyReader, FetchError};
use crate::providers::SseParser;
use gloo_net::http::Method;
use serde_json::{Value, json};
use std::cell::{Cell, RefCell};
use std::future::{Future, poll_fn};
use std::pin::Pin;
use std::rc::Rc;
use std::task::Poll;
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
    /// Whether it announces elicitation (the npm package's client, whose agent shows the
    /// questions: docs/design.md, "MCP elicitation").
    elicits: bool,
    /// The running call's way to ask a human, for requests on the GET stream, and the signal
    /// that the call ended.
    asking: RefCell<Option<(Elicit, AbortSignal)>>,
    /// Questions put to a human so far, and how many are open: a call's timeout does not run
    /// while one is.
    asked: Cell<u64>,
    open_asks: Rc<Cell<u32>>,
}

/// Counts an open question while it lives (answered, withdrawn or dropped with the call).
struct Open(Rc<Cell<u32>>);

impl Drop for Open {
    fn drop(&mut self) {
        self.0.set(self.0.get() - 1);
    }
}

/// A human's answer to come, as the server gets it.
type Answer = Pin<Box<dyn Future<Output = Result<Value, RpcError>>>>;

/// A question of the server's being asked of a human: its request id, and the answer to come.
type Ask = (Value, Answer);

/// What woke a reader that also waits for answers.
enum Woke {
    Chunk(Result<Option<Vec<u8>>, FetchError>),
    Answered(usize, Result<Value, RpcError>),
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
        Self::make(cfg, false)
    }

    /// A client that announces elicitation: each call's questions go to the `Elicit` it is
    /// given.
    pub fn with_elicitation(cfg: McpServerConfig) -> Rc<Client> {
        Self::make(cfg, true)
    }

    fn make(cfg: McpServerConfig, elicits: bool) -> Rc<Client> {
        Rc::new(Client {
            cfg,
            elicits,
            conn: RefCell::new(None),
            next_id: Cell::new(1),
            stale: Cell::new(true),
            listening: RefCell::new(None),
            asking: RefCell::new(None),
            asked: Cell::new(0),
            open_asks: Rc::new(Cell::new(0)),
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
        self.post_asking(conn, body, id, link, None).await
    }

    /// [`Self::post`], answering the server's requests met on the SSE stream (with `elicit`
    /// for `elicitation/create`) while it waits for its own answer.
    async fn post_asking(
        &self,
        conn: Option<&Conn>,
        body: &str,
        id: Option<u64>,
        link: &AbortLink,
        elicit: Option<&Elicit>,
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
            for m in mcp::parse_body(&text).map_err(McpError::Protocol)? {
                match m {
                    Incoming::Response { id: got, outcome } if got == id => {
                        return Ok((outcome.map_err(McpError::Rpc)?, session));
                    }
                    Incoming::Notification { method, .. } => self.note(&method),
                    _ => {}
                }
            }
            return Err(McpError::Protocol("no answer to the request".into()));
        }
        let mut reader =
            BodyReader::new(&resp).ok_or(McpError::Protocol("an empty stream".into()))?;
        let mut parser = SseParser::new();
        let mut asks: Vec<Ask> = Vec::new();
        loop {
            let chunk = {
                let mut next = std::pin::pin!(reader.next(link));
                loop {
                    match self.wake(&mut next, &mut asks).await {
                        Woke::Chunk(c) => break c,
                        Woke::Answered(i, outcome) => {
                            let (ask_id, _) = asks.remove(i);
                            self.reply(conn, &ask_id, outcome, link).await;
                        }
                    }
                }
            };
            let Some(chunk) = chunk.map_err(cut_off)? else {
                break;
            };
            for ev in parser.push(&chunk) {
                for m in mcp::parse_body(&ev.data).map_err(McpError::Protocol)? {
                    match m {
                        Incoming::Response { id: got, outcome } if got == id => {
                            reader.cancel();
                            return Ok((outcome.map_err(McpError::Rpc)?, session));
                        }
                        Incoming::Request { id, method, params } => {
                            match self.ask(&method, params, elicit) {
                                Ok(asked) => asks.push((id, asked)),
                                Err(outcome) => self.reply(conn, &id, outcome, link).await,
                            }
                        }
                        Incoming::Notification { method, params } => {
                            // A question the server no longer waits for is withdrawn.
                            if method == "notifications/cancelled" {
                                let gone = params.get("requestId");
                                asks.retain(|(id, _)| Some(id) != gone);
                            }
                            self.note(&method);
                        }
                        Incoming::Response { .. } => {}
                    }
                }
            }
        }
        Err(McpError::CutOff(
            "the stream ended before the answer".into(),
        ))
    }

    /// Waits for the next chunk or for a human's answer, whichever comes first. The read goes
    /// on while an answer is sent: the chunk it brings is kept for the next wait.
    async fn wake<F>(&self, next: &mut Pin<&mut F>, asks: &mut [Ask]) -> Woke
    where
        F: Future<Output = Result<Option<Vec<u8>>, FetchError>>,
    {
        poll_fn(|cx| {
            if let Poll::Ready(c) = next.as_mut().poll(cx) {
                return Poll::Ready(Woke::Chunk(c));
            }
            for (i, (_, answer)) in asks.iter_mut().enumerate() {
                if let Poll::Ready(a) = answer.as_mut().poll(cx) {
                    return Poll::Ready(Woke::Answered(i, a));
                }
            }
            Poll::Pending
        })
        .await
    }

    /// A request of the server's: `Ok` the human's answer to come (an elicitation, when the
    /// call has a way to ask), or `Err`/`Ok` at once for the rest.
    fn ask(
        &self,
        method: &str,
        params: Value,
        elicit: Option<&Elicit>,
    ) -> Result<Answer, Result<Value, RpcError>> {
        match (method, elicit) {
            ("ping", _) => Err(Ok(json!({}))),
            ("elicitation/create", Some(elicit)) => {
                // A malformed question is refused here, never shown.
                let question = mcp::elicit::parse(&params).map_err(|m| {
                    Err(RpcError {
                        code: mcp::elicit::INVALID_PARAMS,
                        message: format!("the elicitation was not shown: {m}"),
                    })
                })?;
                let question = serde_json::to_value(question).unwrap_or_default();
                self.asked.set(self.asked.get() + 1);
                self.open_asks.set(self.open_asks.get() + 1);
                let open = Open(self.open_asks.clone());
                let asked = elicit(question);
                Ok(Box::pin(async move {
                    let _open = open;
                    Ok(asked.await)
                }))
            }
            ("elicitation/create", None) => Err(Err(RpcError {
                code: mcp::elicit::INVALID_PARAMS,
                message: "no tool call of this client is running to ask about".into(),
            })),
            _ => Err(Err(RpcError {
                code: -32601,
                message: format!("this client does not answer {method}"),
            })),
        }
    }

    /// Sends our answer to a request of the server's (fire and forget: a server that went
    /// away meanwhile has no use for it).
    async fn reply(
        &self,
        conn: Option<&Conn>,
        id: &Value,
        outcome: Result<Value, RpcError>,
        link: &AbortLink,
    ) {
        let body = mcp::response(id, outcome);
        let headers = self.headers(conn, "application/json, text/event-stream");
        let _ = fetch::post(&self.cfg.url, &headers, &body, link).await;
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
            // Both modes of elicitation (docs/design.md, "MCP elicitation"), when asked for.
            "capabilities": if self.elicits {
                json!({ "elicitation": { "form": {}, "url": {} } })
            } else {
                json!({})
            },
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
        elicit: Option<&Elicit>,
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
            let answer = self.post_asking(Some(&conn), &body, Some(id), &link, elicit);
            match answer.await {
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
                        match m {
                            Incoming::Notification { method, .. } => client.note(&method),
                            Incoming::Request { id, method, params } => {
                                client.answer_later(id, &method, params);
                            }
                            Incoming::Response { .. } => {}
                        }
                    }
                }
            }
            reader.cancel();
        });
    }

    /// A request of the server's on the GET stream, unrelated to a request of ours: an
    /// elicitation is asked through the running call's [`Elicit`] (refused when none runs).
    fn answer_later(self: &Rc<Self>, id: Value, method: &str, params: Value) {
        let asking = self.asking.borrow().clone();
        let (elicit, over) = asking.unzip();
        let asked = self.ask(method, params, elicit.as_ref());
        let me = self.clone();
        wasm_bindgen_futures::spawn_local(async move {
            let outcome = match (asked, over) {
                // Withdrawn (the future dropped) when the call it was asked about ends.
                (Ok(mut answer), Some(over)) => abort::before_abort(&mut answer, &over)
                    .await
                    .unwrap_or(Ok(json!({ "action": "cancel" }))),
                (Ok(answer), None) => answer.await,
                (Err(outcome), _) => outcome,
            };
            let conn = me.conn.borrow().clone();
            if let Ok(link) = AbortLink::new(None) {
                me.reply(conn.as_ref(), &id, outcome, &link).await;
            }
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
            let page = self.request("tools/list", params, None, None).await?;
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
    /// the tool error a result with `isError` is), or why the server could not be asked. The
    /// server's elicitations meanwhile are asked through `elicit` (refused without one); the
    /// time a human takes does not count against the call's timeout.
    pub async fn call(
        self: &Rc<Self>,
        tool: &str,
        inputs: Value,
        signal: Option<&AbortSignal>,
        elicit: Option<Elicit>,
    ) -> Result<Result<Value, String>, McpFailure> {
        let params = json!({ "name": tool, "arguments": inputs });
        let over = AbortController::new().ok();
        *self.asking.borrow_mut() = elicit.clone().zip(over.as_ref().map(|c| c.signal()));
        let mut calling =
            std::pin::pin!(self.request("tools/call", params, signal, elicit.as_ref()));
        let called = loop {
            let asked = self.asked.get();
            match abort::within(&mut calling, CALL_TIMEOUT_MS).await {
                Some(called) => break called,
                // A human was asked in this window, or is being asked: wait another.
                None if self.asked.get() != asked || self.open_asks.get() > 0 => {}
                None => break Err(McpError::Timeout),
            }
        };
        *self.asking.borrow_mut() = None;
        if let Some(over) = over {
            over.abort();
        }
        match called {
            Ok(result) => Ok(mcp::call_result(&result)),
            Err(e) => Err(e.failure(&self.cfg.name)),
        }
    }
}
