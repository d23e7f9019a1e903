//! The remote store: a thread kept in the app's Postgres behind its store handler
//! (`gatehouse-agent/server`), reached with `fetch` (docs/design.md, "Across devices"). The
//! protocol is `store::wire`; the handler applies the crate's commit rule at its own clock,
//! so this store only sends requests and reads answers.
//!
//! A commit that gets no answer (the network dropped, the handler died between its commit
//! and its response) is sent again with the same commit id: the handler answers one it has
//! applied with the answer it gave, so a retry is never applied twice and never a false
//! `conflict`.

use super::page::Rows;
use super::wire::{
    CommitRequest, Committed, ErrorBody, LeaseOp, LeaseRequest, Leased, Loaded, RowsPage,
    ThreadList,
};
use super::{MessageRow, Snapshot, StoreError, ThreadRecord, Writer};
use crate::driver::fetch::{self, AbortLink, FetchError};
use crate::engine::Commit;
use gloo_net::http::Method;
use serde::Serialize;
use serde::de::DeserializeOwned;
use std::cell::Cell;

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
        let link =
            AbortLink::new(None).map_err(|_| unavailable(&self.base, "no AbortController"))?;
        let resp = fetch::send(method, url, &self.headers, body, &link)
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
            return serde_json::from_str(&text).map_err(|e| {
                StoreError::Corrupt(format!("the thread store's answer is unreadable: {e}"))
            });
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

    pub async fn load(&self, thread: &str, now: f64) -> Result<Snapshot, StoreError> {
        let l: Loaded = self
            .call(Method::GET, &self.thread_url(thread, ""), None)
            .await?;
        let tail = match l.tail {
            Some(json) => Some(MessageRow { seq: 0, json }.message()?),
            None => None,
        };
        Ok(Snapshot {
            record: l.record.unwrap_or_else(|| ThreadRecord::new(thread, now)),
            tail,
        })
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
        let request = CommitRequest {
            commit_id: format!("{}:{}:{n}", writer.owner, self.prefix),
            expected_version,
            owner: writer.owner.clone(),
            keep: writer.lease.is_some(),
            commit: commit.clone(),
        };
        let url = self.thread_url(thread, "/commit");
        let mut waits = COMMIT_RETRIES_MS.iter();
        loop {
            match self.post::<_, Committed>(&url, &request).await {
                Err(StoreError::Unavailable(m)) => match waits.next() {
                    Some(&ms) => pause(ms).await,
                    None => return Err(StoreError::Unavailable(m)),
                },
                other => return other.map(|c| c.record),
            }
        }
    }

    /// Extends `owner`'s lease (to the handler's clock plus `LEASE_MS`).
    pub async fn renew(&self, thread: &str, owner: &str) -> Result<bool, StoreError> {
        self.lease(thread, owner, LeaseOp::Renew).await
    }

    pub async fn release(&self, thread: &str, owner: &str) -> Result<(), StoreError> {
        self.lease(thread, owner, LeaseOp::Release)
            .await
            .map(|_| ())
    }

    async fn lease(&self, thread: &str, owner: &str, op: LeaseOp) -> Result<bool, StoreError> {
        let body = LeaseRequest {
            owner: owner.to_owned(),
            op,
        };
        let l: Leased = self.post(&self.thread_url(thread, "/lease"), &body).await?;
        Ok(l.ok)
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
        let before = before_seq.map_or(String::new(), |s| format!("&before={s}"));
        let url = self.thread_url(thread, &format!("/{what}?limit={limit}{before}"));
        let page: RowsPage = self.call(Method::GET, &url, None).await?;
        Ok(page.rows.into_iter().map(MessageRow::from).collect())
    }

    pub async fn list(&self) -> Result<Vec<ThreadRecord>, StoreError> {
        let url = format!("{}/threads", self.base);
        let l: ThreadList = self.call(Method::GET, &url, None).await?;
        Ok(l.threads)
    }

    pub async fn delete(&self, thread: &str) -> Result<(), StoreError> {
        self.call::<serde::de::IgnoredAny>(Method::DELETE, &self.thread_url(thread, ""), None)
            .await
            .map(|_| ())
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

fn unavailable(base: &str, why: &str) -> StoreError {
    StoreError::Unavailable(format!(
        "the thread store at {base} cannot be reached ({why})"
    ))
}

async fn pause(ms: u64) {
    if let Ok(link) = AbortLink::new(None) {
        let _ = fetch::sleep(ms, &link).await;
    }
}
