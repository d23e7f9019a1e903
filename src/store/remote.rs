//! The remote store: a thread kept in the app's Postgres behind its store handler
//! (`gatehouse-agent/server`), reached with `fetch` (docs/design.md, "Across devices"). The
//! protocol is `store::wire`; the handler applies the crate's commit rule at its own clock,
//! so this store only sends requests and reads answers.
//!
//! A commit that gets no answer (the network dropped, the handler died between its commit
//! and its response) is sent again with the same commit id: the handler answers one it has
//! applied with the answer it gave, so a retry is never applied twice and never a false
//! `conflict`.

use super::authority::DecideRequest;
use super::page::Rows;
use super::wire::{
    ApprovalProgress, CommitRequest, Committed, DecideAnswer, ErrorBody, LeaseOp, LeaseRequest,
    Leased, Loaded, MAX_PAGE, RowsPage, ThreadList,
};
use super::{IndexedDbStore, MessageRow, Queued, Snapshot, StoreError, ThreadRecord, Writer};
use crate::engine::Commit;
use crate::net::fetch::{self, AbortLink, FetchError};
use gloo_net::http::Method;
use serde::de::DeserializeOwned;
use serde::{Deserialize, Serialize};
use serde_json::Value;
use std::cell::{Cell, RefCell};
use std::rc::Rc;

/// How often a commit without an answer is sent again, and the waits before each retry.
const COMMIT_RETRIES_MS: [u64; 3] = [250, 1_000, 3_000];

pub struct RemoteStore {
    /// The handler's base URL, without a trailing `/`.
    base: String,
    headers: Vec<(String, String)>,
    /// The name locks and live notices of this page go by.
    name: String,
    /// Makes commit ids unique: this store's random prefix and a counter.
    prefix: String,
    next: Cell<u64>,
    /// The secrets of the run leases this store's writers hold, by thread and owner: the
    /// handler gives one with a commit that takes a lease, and takes renewals, the release
    /// and the run's next writes only with it (docs/design.md, "Threat model").
    tokens: Rc<Tokens>,
    /// This device's copy of what it read and wrote, in IndexedDB: the thread stays readable
    /// while the handler cannot be reached (`None` where there is no IndexedDB).
    copy: Option<IndexedDbStore>,
    /// The approver rules' progress on each thread's pending calls, as the handler's last
    /// answer for it gave it (`Loaded::approvals`).
    progress: RefCell<Vec<(String, Vec<ApprovalProgress>)>>,
}

impl RemoteStore {
    pub fn open(url: &str, headers: Vec<(String, String)>, name: String) -> RemoteStore {
        let mut headers = headers;
        headers.push(("content-type".into(), "application/json".into()));
        RemoteStore {
            base: url.trim_end_matches('/').to_owned(),
            headers,
            name,
            prefix: format!("{:x}", (js_sys::Math::random() * 2f64.powi(52)) as u64),
            next: Cell::new(0),
            tokens: Rc::default(),
            copy: None,
            progress: RefCell::default(),
        }
    }

    /// The approver rules' progress on the pending call `call_id` of `thread`, as last read.
    pub fn progress(&self, thread: &str, call_id: &str) -> Option<ApprovalProgress> {
        let p = self.progress.borrow();
        let all = p.iter().find(|(t, _)| t == thread).map(|(_, v)| v)?;
        all.iter().find(|c| c.call_id == call_id).cloned()
    }

    fn note_progress(&self, thread: &str, approvals: Option<Vec<ApprovalProgress>>) {
        let mut p = self.progress.borrow_mut();
        p.retain(|(t, _)| t != thread);
        if let Some(v) = approvals {
            p.push((thread.to_owned(), v));
        }
    }

    /// This store sends, and keeps, the lease secrets `other` holds: two handles of one
    /// device (the store contract's checks open one per request time).
    #[doc(hidden)]
    pub fn sharing_secrets_of(mut self, other: &RemoteStore) -> RemoteStore {
        self.tokens = other.tokens.clone();
        self
    }

    /// Keeps this device's copy in the IndexedDB database `database` (if it opens).
    pub async fn with_copy(mut self, database: &str) -> RemoteStore {
        self.copy = IndexedDbStore::open(database).await.ok();
        self
    }

    /// The copy, when the handler could not be reached (`e` is `Unavailable`).
    fn offline(&self, e: &StoreError) -> Option<&IndexedDbStore> {
        match e {
            StoreError::Unavailable(_) => self.copy.as_ref(),
            _ => None,
        }
    }

    /// Writes what was read or written to the copy. A copy that cannot be written only costs
    /// offline reading: the handler has the thread.
    async fn keep(&self, record: &ThreadRecord, rows: &[MessageRow], audit: &[MessageRow]) {
        if let Some(copy) = &self.copy {
            let _ = copy.mirror(record, rows, audit).await;
        }
    }

    /// What waits in the thread's outbox on this device, oldest first.
    pub async fn outbox(&self, thread: &str) -> Vec<Queued> {
        match &self.copy {
            Some(copy) => copy.record(thread, 0.0).await.map(|r| r.outbox),
            None => Ok(Vec::new()),
        }
        .unwrap_or_default()
    }

    /// Changes the thread's outbox on this device (one transaction); returns its length then.
    pub async fn edit_outbox(
        &self,
        thread: &str,
        edit: &dyn Fn(&mut Vec<Queued>),
    ) -> Result<usize, StoreError> {
        match &self.copy {
            Some(copy) => copy.edit_outbox(thread, edit).await,
            None => Err(StoreError::Unavailable(
                "there is no IndexedDB here to keep what waits to be sent".into(),
            )),
        }
    }

    pub fn name(&self) -> &str {
        &self.name
    }

    fn thread_url(&self, thread: &str, rest: &str) -> String {
        let id = String::from(js_sys::encode_uri_component(thread));
        format!("{}/threads/{id}{rest}", self.base)
    }

    /// One request and its answer: 2xx is read as `T`, anything else as the handler's
    /// refusal. `Unavailable` when no answer came (offline, unreachable, CORS).
    async fn call<T: DeserializeOwned>(
        &self,
        method: Method,
        url: &str,
        body: Option<&str>,
    ) -> Result<T, StoreError> {
        let text = self.send(method, url, body).await?;
        serde_json::from_str(&text).map_err(|e| {
            StoreError::Corrupt(format!("the thread store's answer is unreadable: {e}"))
        })
    }

    /// [`RemoteStore::call`] without the reading: the text of a 2xx answer. Not generic, so
    /// the wasm holds it once.
    async fn send(
        &self,
        method: Method,
        url: &str,
        body: Option<&str>,
    ) -> Result<String, StoreError> {
        self.send_with(method, url, body, &self.headers).await
    }

    /// [`RemoteStore::send`] with these `headers` (the store's own and one of the request's).
    async fn send_with(
        &self,
        method: Method,
        url: &str,
        body: Option<&str>,
        headers: &[(String, String)],
    ) -> Result<String, StoreError> {
        let link =
            AbortLink::new(None).map_err(|_| unavailable(&self.base, "no AbortController"))?;
        let resp = fetch::send(method, url, headers, body, &link)
            .await
            .map_err(|e| match e {
                FetchError::BadRequest(m) => StoreError::Other(m),
                FetchError::Network(m) => unavailable(&self.base, &m),
                FetchError::Aborted => unavailable(&self.base, "aborted"),
            })?;
        let status = resp.status();
        let text = fetch::text(&resp, &link)
            .await
            .map_err(|_| unavailable(&self.base, "the answer was cut off"))?;
        if (200..300).contains(&status) {
            return Ok(text);
        }
        match serde_json::from_str::<ErrorBody>(&text) {
            Ok(b) => Err(b.error.into_store_error()),
            // A gateway or proxy answered, not the handler: the request may not have arrived.
            Err(_) if status >= 500 => Err(unavailable(&self.base, &format!("HTTP {status}"))),
            Err(_) => Err(StoreError::Other(format!(
                "the thread store answered HTTP {status}: {}",
                text.chars().take(200).collect::<String>()
            ))),
        }
    }

    async fn post<B: Serialize, T: DeserializeOwned>(
        &self,
        url: &str,
        body: &B,
    ) -> Result<T, StoreError> {
        let text = serde_json::to_string(body).map_err(|e| StoreError::Other(e.to_string()))?;
        self.call(Method::POST, url, Some(&text)).await
    }

    /// The thread from the handler; while it cannot be reached, from this device's copy.
    pub async fn load(&self, thread: &str, now: f64) -> Result<Snapshot, StoreError> {
        let l: Loaded = match self
            .call(Method::GET, &self.thread_url(thread, ""), None)
            .await
        {
            Ok(l) => l,
            Err(e) => match self.offline(&e) {
                Some(copy) => return copy.load(thread, now).await.map_err(|_| e),
                None => return Err(e),
            },
        };
        self.note_progress(thread, l.approvals);
        let record = l.record.unwrap_or_else(|| ThreadRecord::new(thread, now));
        let tail = match l.tail {
            None if record.message_count > 0 => {
                return Err(StoreError::Corrupt(format!(
                    "message {} of thread {thread:?} is missing",
                    record.message_count
                )));
            }
            Some(json) => {
                let row = MessageRow {
                    seq: record.message_count,
                    json,
                };
                let tail = row.message()?;
                self.keep(&record, &[row], &[]).await;
                Some(tail)
            }
            None => None,
        };
        Ok(Snapshot { record, tail })
    }

    /// The thread's record alone: its tail is not read (nor needs to be readable).
    pub async fn record(&self, thread: &str, now: f64) -> Result<ThreadRecord, StoreError> {
        let url = self.thread_url(thread, "");
        match self.call::<Loaded>(Method::GET, &url, None).await {
            Ok(l) => Ok(l.record.unwrap_or_else(|| ThreadRecord::new(thread, now))),
            Err(e) => match self.offline(&e) {
                Some(copy) => copy.record(thread, now).await.map_err(|_| e),
                None => Err(e),
            },
        }
    }

    /// Commits at the handler. The lease the record gets is the handler's (its clock); the
    /// writer only says whose it is and whether the run goes on.
    pub async fn commit(
        &self,
        thread: &str,
        expected_version: u64,
        commit: &Commit,
        writer: &Writer,
    ) -> Result<ThreadRecord, StoreError> {
        let n = self.next.get() + 1;
        self.next.set(n);
        let key = (thread, writer.owner.as_str());
        let request = CommitRequest {
            commit_id: format!("{}:{}:{n}", writer.owner, self.prefix),
            expected_version,
            owner: writer.owner.clone(),
            keep: writer.lease.is_some(),
            commit: commit.clone(),
            lease_token: self.tokens.get(key),
        };
        let url = self.thread_url(thread, "/commit");
        let mut waits = COMMIT_RETRIES_MS.iter();
        loop {
            match self.post::<_, Committed>(&url, &request).await {
                Err(StoreError::Unavailable(m)) => match waits.next() {
                    Some(&ms) if online() => pause(ms).await,
                    _ => return Err(StoreError::Unavailable(m)),
                },
                Ok(c) => {
                    self.tokens.set(key, c.lease_token);
                    self.keep(&c.record, &rows_of(&c.record, commit), &[]).await;
                    return Ok(c.record);
                }
                Err(e) => return Err(e),
            }
        }
    }

    /// Extends `owner`'s lease (to the handler's clock plus `LEASE_MS`).
    pub async fn renew(&self, thread: &str, owner: &str) -> Result<bool, StoreError> {
        self.lease(thread, owner, LeaseOp::Renew, None).await
    }

    /// Clears `owner`'s lease, if the thread is still at `version` when one is given (see
    /// [`LeaseRequest::version`]; a run's release gives the version it last saw).
    pub async fn release(
        &self,
        thread: &str,
        owner: &str,
        version: Option<u64>,
    ) -> Result<(), StoreError> {
        self.lease(thread, owner, LeaseOp::Release, version)
            .await
            .map(|_| ())
    }

    async fn lease(
        &self,
        thread: &str,
        owner: &str,
        op: LeaseOp,
        version: Option<u64>,
    ) -> Result<bool, StoreError> {
        let body = LeaseRequest {
            owner: owner.to_owned(),
            op,
            version,
            lease_token: self.tokens.get((thread, owner)),
        };
        let l: Leased = self.post(&self.thread_url(thread, "/lease"), &body).await?;
        if op == LeaseOp::Release && l.ok {
            self.tokens.set((thread, owner), None);
        }
        Ok(l.ok)
    }

    /// Sends decisions (`{ callId: decision }` in the JS API's form) as an intent: the handler
    /// applies them to the stored thread with the engine's rules, as the signed-in user, and
    /// answers the thread as it wrote it (docs/design.md, "Threat model"). Sent again with the
    /// same id when no answer came, as a commit is.
    pub async fn decide(
        &self,
        thread: &str,
        decisions: &serde_json::Value,
        resume_token: Option<String>,
    ) -> Result<Snapshot, StoreError> {
        let n = self.next.get() + 1;
        self.next.set(n);
        let request = DecideRequest {
            commit_id: format!("decide:{}:{n}", self.prefix),
            decisions: decisions.clone(),
            resume_token,
        };
        let url = self.thread_url(thread, "/decide");
        let mut waits = COMMIT_RETRIES_MS.iter();
        let answer: DecideAnswer = loop {
            match self.post::<_, DecideAnswer>(&url, &request).await {
                Err(StoreError::Unavailable(m)) => match waits.next() {
                    Some(&ms) if online() => pause(ms).await,
                    _ => return Err(StoreError::Unavailable(m)),
                },
                other => break other?,
            }
        };
        self.note_progress(thread, answer.approvals);
        let record = answer.record;
        let tail = match answer.tail {
            Some(json) => {
                let row = MessageRow {
                    seq: record.message_count,
                    json,
                };
                let tail = row.message()?;
                self.keep(&record, &[row], &[]).await;
                Some(tail)
            }
            None => None,
        };
        Ok(Snapshot { record, tail })
    }

    pub async fn rows(
        &self,
        kind: Rows,
        thread: &str,
        before_seq: Option<u64>,
        limit: u32,
    ) -> Result<Vec<MessageRow>, StoreError> {
        let what = match kind {
            Rows::Messages => "messages",
            Rows::Audit => "audit",
        };
        // The handler answers at most `MAX_PAGE` rows a request: a longer page is read as
        // several, newest first, and put together oldest first.
        let mut rows: Vec<MessageRow> = Vec::new();
        let (mut before, mut left) = (before_seq, limit);
        loop {
            let ask = left.min(MAX_PAGE);
            let at = before.map_or(String::new(), |s| format!("&before={s}"));
            let url = self.thread_url(thread, &format!("/{what}?limit={ask}{at}"));
            let page: RowsPage = match self.call(Method::GET, &url, None).await {
                Ok(p) => p,
                Err(e) => match self.offline(&e).filter(|_| rows.is_empty()) {
                    Some(copy) => return copy.rows(kind, thread, before_seq, limit).await,
                    None => return Err(e),
                },
            };
            let mut got: Vec<MessageRow> = page.rows.into_iter().map(MessageRow::from).collect();
            let n = got.len() as u32;
            let oldest = got.first().map(|r| r.seq);
            got.append(&mut rows);
            rows = got;
            left -= n.min(left);
            if n < ask || left == 0 || oldest.is_none_or(|s| s <= 1) {
                break;
            }
            before = oldest;
        }
        if let Some(copy) = &self.copy {
            if let Ok(record) = copy.record(thread, 0.0).await {
                let (m, a) = match kind {
                    Rows::Messages => (&rows[..], &[][..]),
                    Rows::Audit => (&[][..], &rows[..]),
                };
                self.keep(&record, m, a).await;
            }
        }
        Ok(rows)
    }

    /// Every page of the user's threads, newest first (the handler pages by `next`).
    pub async fn list(&self) -> Result<Vec<ThreadRecord>, StoreError> {
        let mut threads = Vec::new();
        let mut before: Option<String> = None;
        loop {
            let url = match &before {
                None => format!("{}/threads", self.base),
                Some(c) => format!(
                    "{}/threads?before={}",
                    self.base,
                    js_sys::encode_uri_component(c)
                ),
            };
            match self.call::<ThreadList>(Method::GET, &url, None).await {
                Ok(page) => {
                    threads.extend(page.threads);
                    match page.next {
                        Some(next) => before = Some(next),
                        None => {
                            // By id, byte-wise, as every store lists them (the handler pages
                            // newest first; `listThreads` orders by `updatedAt` itself).
                            threads.sort_by(|a, b| a.id.cmp(&b.id));
                            return Ok(threads);
                        }
                    }
                }
                Err(e) => {
                    return match self.offline(&e) {
                        Some(copy) => copy.list().await,
                        None => Err(e),
                    };
                }
            }
        }
    }

    /// The handler's signed receipt of a call approved or edited (docs/design.md, "Receipts"):
    /// `None` when it has none (a handler without a `signingKey`, or a call not approved).
    pub async fn receipt(&self, thread: &str, call_id: &str) -> Result<Option<Value>, StoreError> {
        let id = String::from(js_sys::encode_uri_component(call_id));
        let url = self.thread_url(thread, &format!("/receipts/{id}"));
        match self.call::<Value>(Method::GET, &url, None).await {
            Ok(v) => Ok(Some(v)),
            Err(StoreError::Other(m)) if m.starts_with("no_receipt:") => Ok(None),
            Err(e) => Err(e),
        }
    }

    pub async fn delete(&self, thread: &str) -> Result<(), StoreError> {
        self.send(Method::DELETE, &self.thread_url(thread, ""), None)
            .await?;
        if let Some(copy) = &self.copy {
            let _ = copy.delete(thread).await;
        }
        Ok(())
    }
}

impl RemoteStore {
    /// `GET B/threads/{id}/grants`: the grants in force for this identity on the thread, as
    /// JSON.
    pub async fn grants(&self, thread: &str) -> Result<Vec<String>, StoreError> {
        #[derive(Deserialize)]
        struct Listed {
            grants: Vec<Value>,
        }
        let l: Listed = self
            .call(Method::GET, &self.thread_url(thread, "/grants"), None)
            .await?;
        Ok(l.grants.iter().map(Value::to_string).collect())
    }

    /// `POST B/grants`: the handler makes the grant `request` asks for (its JSON). Sent
    /// with the `Idempotency-Key` `key`, and sent again (twice at most) while no answer
    /// comes: a request that arrived but whose answer was lost is answered the grant it made,
    /// not a second one (docs/design.md, "Remembered grants").
    pub async fn put_grant(&self, request: &str, key: &str) -> Result<String, StoreError> {
        #[derive(Deserialize)]
        struct Made {
            grant: Value,
        }
        let url = format!("{}/grants", self.base);
        let mut headers = self.headers.clone();
        headers.push(("idempotency-key".into(), key.into()));
        let mut tries = 0;
        let text = loop {
            match self
                .send_with(Method::POST, &url, Some(request), &headers)
                .await
            {
                Err(StoreError::Unavailable(_)) if tries < 2 => {
                    tries += 1;
                    if let Ok(link) = AbortLink::new(None) {
                        let _ = fetch::sleep(500 * tries, &link).await;
                    }
                }
                done => break done?,
            }
        };
        let m: Made = serde_json::from_str(&text).map_err(|e| {
            StoreError::Corrupt(format!("the thread store's answer is unreadable: {e}"))
        })?;
        Ok(m.grant.to_string())
    }

    /// `DELETE B/grants/{id}`; false when the handler has none in force by that id.
    pub async fn revoke_grant(&self, id: &str) -> Result<bool, StoreError> {
        let url = format!(
            "{}/grants/{}",
            self.base,
            String::from(js_sys::encode_uri_component(id))
        );
        match self.send(Method::DELETE, &url, None).await {
            Ok(_) => Ok(true),
            Err(StoreError::Other(m)) if m.starts_with("unknown_grant:") => Ok(false),
            Err(e) => Err(e),
        }
    }
}

impl RemoteStore {
    /// Opens the handler's change stream (`GET B/changes`, SSE): every change to a thread
    /// the user may read; `link` ends it. `None` when the handler offers none (an answer that
    /// is not a 2xx event stream): the caller polls instead.
    pub async fn changes(&self, link: &AbortLink) -> Result<Option<fetch::BodyReader>, StoreError> {
        let url = format!("{}/changes", self.base);
        let resp = fetch::send(Method::GET, &url, &self.headers, None, link)
            .await
            .map_err(|_| unavailable(&self.base, "the change stream"))?;
        let sse = resp
            .headers()
            .get("content-type")
            .is_some_and(|t| t.starts_with("text/event-stream"));
        Ok(match resp.ok() && sse {
            true => fetch::BodyReader::new(&resp),
            false => None,
        })
    }
}

/// The lease secrets a store's writers hold: (thread, owner, secret). A few at most (one per
/// run under way), so a list.
#[derive(Default)]
struct Tokens(RefCell<Vec<(String, String, String)>>);

impl Tokens {
    fn get(&self, (thread, owner): (&str, &str)) -> Option<String> {
        let list = self.0.borrow();
        let found = list.iter().find(|(t, o, _)| t == thread && o == owner);
        found.map(|(_, _, secret)| secret.clone())
    }

    fn set(&self, (thread, owner): (&str, &str), secret: Option<String>) {
        let mut list = self.0.borrow_mut();
        list.retain(|(t, o, _)| !(t == thread && o == owner));
        if let Some(secret) = secret {
            list.push((thread.to_owned(), owner.to_owned(), secret));
        }
    }
}

/// The message rows a commit the handler applied wrote, numbered from the record it left.
fn rows_of(record: &ThreadRecord, commit: &Commit) -> Vec<MessageRow> {
    let base = record.message_count - commit.append.len() as u64;
    let tail = commit.replace_tail.iter().map(|m| (base, m));
    let appended = (base + 1..).zip(&commit.append);
    tail.chain(appended)
        .map(|(seq, m)| MessageRow {
            seq,
            json: m.to_json_string(),
        })
        .collect()
}

fn unavailable(base: &str, why: &str) -> StoreError {
    StoreError::Unavailable(format!(
        "the thread store at {base} cannot be reached ({why})"
    ))
}

/// What the browser says of its network (`navigator.onLine`): false means surely offline.
pub fn online() -> bool {
    let navigator = js_sys::Reflect::get(&js_sys::global(), &"navigator".into());
    navigator
        .and_then(|n| js_sys::Reflect::get(&n, &"onLine".into()))
        .map_or(true, |v| v.as_bool() != Some(false))
}

async fn pause(ms: u64) {
    if let Ok(link) = AbortLink::new(None) {
        let _ = fetch::sleep(ms, &link).await;
    }
}
