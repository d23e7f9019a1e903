//! The remote store's protocol (docs/design.md, "Across devices"): the bodies a browser and
//! the app's store handler (`gatehouse-agent/server`) exchange, and the rules the handler
//! applies with the crate's own commit rule. Pure: the browser's remote store serializes
//! these, the handler's core (the same code built for the server) deserializes them.
//!
//! Every route is under the handler's base path `B`, JSON in and out:
//!
//! | route | body → answer | `authorize` action |
//! |---|---|---|
//! | `GET B/threads/{id}` | → [`Loaded`] | `read` |
//! | `GET B/threads/{id}/messages?before=S&limit=L` (and `/audit`) | → [`RowsPage`] | `read` |
//! | `POST B/threads/{id}/commit` | [`CommitRequest`] → [`Committed`] | `write` |
//! | `POST B/threads/{id}/decide` | [`DecideRequest`](super::authority::DecideRequest) → [`DecideAnswer`] | `decide` |
//! | `POST B/threads/{id}/lease` | [`LeaseRequest`] → [`Leased`] | `write` |
//! | `DELETE B/threads/{id}` | → `{}` | `delete` |
//! | `GET B/threads?limit&before` | → [`ThreadList`] | `list`, then `read` per thread |
//! | `GET B/changes` | → SSE of [`Change`] (or `?poll=1&since=…`: JSON) | `read` per thread |
//!
//! A refusal is a status and an [`ErrorBody`]: 400 `invalid_request`, 403 `unauthorized`,
//! 404 `not_found` (no such route), 409 `conflict` / `busy`, 413 `too_large`, 500 `storage`.

use super::ownership::{LEASE_MS, Lease, Writer};
use super::record::{MessageRow, StoreError, ThreadRecord};
use crate::engine::Commit;
use serde::{Deserialize, Serialize};

/// `POST B/threads/{id}/commit`. The handler applies it in one Postgres transaction that
/// locks the thread's row: it answers a `commit_id` it has already applied with that
/// commit's answer (a retry after a lost response), else plans it with
/// [`plan_commit`](super::plan_commit) against the stored record, at the handler's clock,
/// with [`remote_writer`], stamps the identity `authorize` returned ([`stamp_identity`]),
/// and writes the record, the rows and the commit id together.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct CommitRequest {
    /// Unique per commit and kept across its retries (the writer's id and a counter).
    pub commit_id: String,
    pub expected_version: u64,
    /// The writing agent (its lease's owner).
    pub owner: String,
    /// The run goes on after this write: the record keeps a lease for `owner`.
    pub keep: bool,
    pub commit: Commit,
    /// The secret of the lease this writer holds, as the handler's answer gave it: without it
    /// a commit that names the lease's owner is another writer's (docs/design.md, "Threat
    /// model"). Never stored in, or sent with, a record.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub lease_token: Option<String>,
}

/// The answer to a commit: the record as written.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Committed {
    pub record: ThreadRecord,
    /// The secret of the lease the record now holds for this writer (a write with `keep`):
    /// renewals, the release and the run's next writes send it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub lease_token: Option<String>,
}

/// The answer to a decision (`POST B/threads/{id}/decide`): the record and the tail as the
/// handler wrote them (the deciding device did not make them).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct DecideAnswer {
    pub record: ThreadRecord,
    pub tail: Option<String>,
    /// As [`Loaded::approvals`].
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub approvals: Option<Vec<ApprovalProgress>>,
}

/// `POST B/threads/{id}/lease`: renew extends `owner`'s lease to the handler's clock plus
/// [`LEASE_MS`]; release clears it. Neither bumps the version.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct LeaseRequest {
    pub owner: String,
    pub op: LeaseOp,
    /// A release names the run by the version its last write left (or it last read): the
    /// owner names only the agent, and a delayed release of an agent's earlier run must not
    /// clear the lease its next run took (a write, so a newer version). Found by the device
    /// simulation (docs/design.md, "Across devices").
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub version: Option<u64>,
    /// The lease's secret ([`Committed::lease_token`]): only its holder renews or releases.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub lease_token: Option<String>,
}

/// The lease after `request` at the handler: `plan_renew` or `plan_release`, a release only
/// at the version it names (see [`LeaseRequest::version`]). `None`: nothing to write.
pub fn plan_lease_request(
    current: &ThreadRecord,
    request: &LeaseRequest,
    now_ms: f64,
) -> Result<Option<ThreadRecord>, StoreError> {
    match request.op {
        LeaseOp::Renew => super::ownership::plan_renew(current, &request.owner, now_ms + LEASE_MS),
        LeaseOp::Release if request.version.is_some_and(|v| v != current.version) => Ok(None),
        LeaseOp::Release => Ok(super::ownership::plan_release(current, &request.owner)),
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum LeaseOp {
    Renew,
    Release,
}

/// The answer to a lease request: whether the lease was (still) `owner`'s.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct Leased {
    pub ok: bool,
}

/// `GET B/threads/{id}`: the record (`null` while the thread has never been written) and
/// the tail message's stored JSON text.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Loaded {
    pub record: Option<ThreadRecord>,
    pub tail: Option<String>,
    /// The approver rules' progress on the tail's pending calls (see [`ApprovalProgress`]);
    /// absent when no rule applies.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub approvals: Option<Vec<ApprovalProgress>>,
}

/// How far a pending call is on the handler's approver rules (docs/design.md, "Approver
/// rules"): the approvals counted so far, how many it needs, and why the signed-in user may not
/// decide it (`"not_an_approver"`, `"self_approval"`). A call without rules needs one.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ApprovalProgress {
    pub call_id: String,
    pub approvals: Vec<ApprovalMark>,
    pub needed: u32,
    pub blocked: Option<String>,
}

impl Default for ApprovalProgress {
    fn default() -> Self {
        ApprovalProgress {
            call_id: String::new(),
            approvals: Vec::new(),
            needed: 1,
            blocked: None,
        }
    }
}

/// One approval counted toward a quorum: who, and when (epoch ms).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ApprovalMark {
    pub by: Option<String>,
    pub at: u64,
}

/// The most rows the handler answers to one page request (`limit` above it is refused with
/// `invalid_request`): the remote store reads a longer page as several.
pub const MAX_PAGE: u32 = 4096;

/// One stored row on the wire: its seq and its JSON text as stored (key order kept).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Row {
    pub seq: u64,
    pub json: String,
}

impl From<Row> for MessageRow {
    fn from(r: Row) -> MessageRow {
        MessageRow {
            seq: r.seq,
            json: r.json,
        }
    }
}

/// `GET B/threads/{id}/messages|audit?before=S&limit=L`: the rows of
/// [`page::window`](super::page::window), oldest first.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RowsPage {
    pub rows: Vec<Row>,
}

/// `GET B/threads[?limit=N&before=C]`: the records of the threads the user may read, newest
/// first, a page at a time; `next` is the `before` of the next page (absent or null on the last
/// one, and from handlers that did not page).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ThreadList {
    pub threads: Vec<ThreadRecord>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub next: Option<String>,
}

/// One notice of the change stream: the thread now stands at `version` (`null`: deleted).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Change {
    pub thread_id: String,
    pub version: Option<u64>,
}

/// A refusal's body: `{ "error": { "code", "message", … } }`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ErrorBody {
    pub error: WireError,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct WireError {
    pub code: String,
    pub message: String,
    /// `conflict`: the version the commit was made from, and the stored one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub expected: Option<u64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub found: Option<u64>,
    /// `busy`: the lease's owner.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub owner: Option<String>,
    /// `storage`: the record was written by a later release (its schema version).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub newer: Option<u32>,
    /// `storage`: stored data that cannot be read (changed outside Gatehouse).
    #[serde(default, skip_serializing_if = "is_false")]
    pub corrupt: bool,
    /// `conflict` to a commit sent again whose first copy was applied, the thread having moved
    /// on since: `expected` is then the version that commit left (one past the version it was
    /// made from), and the write landed.
    #[serde(default, skip_serializing_if = "is_false")]
    pub applied: bool,
}

fn is_false(b: &bool) -> bool {
    !*b
}

impl WireError {
    /// How the handler reports a store refusal.
    pub fn of(e: &StoreError) -> WireError {
        let mut w = WireError::new(e.code(), e.to_string());
        match e {
            StoreError::Conflict { expected, found } => {
                (w.expected, w.found) = (Some(*expected), Some(*found));
            }
            StoreError::Owned { owner } => w.owner = Some(owner.clone()),
            StoreError::Newer(v) => w.newer = Some(*v),
            StoreError::Corrupt(_) => w.corrupt = true,
            StoreError::Quota(_)
            | StoreError::Unavailable(_)
            | StoreError::Unauthorized(_)
            | StoreError::Other(_) => {}
        }
        w
    }

    /// A refusal with only a code and a message.
    pub fn new(code: &str, message: String) -> WireError {
        WireError {
            code: code.to_owned(),
            message,
            expected: None,
            found: None,
            owner: None,
            newer: None,
            corrupt: false,
            applied: false,
        }
    }

    /// The store error a browser reads back: `conflict`, `busy`, a newer record and corrupt
    /// data as the local stores report them, a failed database as `Unavailable` (retried, and
    /// queued in the outbox), anything else of the store's as `Other`.
    pub fn into_store_error(self) -> StoreError {
        match (self.code.as_str(), self.expected, self.found, self.owner) {
            ("conflict", Some(expected), Some(found), _) => {
                StoreError::Conflict { expected, found }
            }
            ("busy", _, _, Some(owner)) => StoreError::Owned { owner },
            ("unauthorized", ..) => StoreError::Unauthorized(self.message),
            // The handler's approver rules refused this user's decision (docs/design.md,
            // "Approver rules"): not theirs to make, as `unauthorized` is, and said which.
            ("not_an_approver" | "self_approval", ..) => {
                StoreError::Unauthorized(format!("{}: {}", self.code, self.message))
            }
            ("storage", ..) if self.newer.is_some() => StoreError::Newer(self.newer.unwrap_or(0)),
            ("storage", ..) if self.corrupt => StoreError::Corrupt(self.message),
            // The handler's database failed (down, restarting, full): the write may or may not
            // have landed, and a retry under the same commit id is answered as it was. So it
            // is retried as when the handler cannot be reached: the input waits in the outbox.
            ("storage", ..) => StoreError::Unavailable(format!(
                "the thread store's database failed: {}",
                self.message
            )),
            _ => StoreError::Other(format!("{}: {}", self.code, self.message)),
        }
    }
}

/// The engine's refusal of decisions sent to `/decide` (`invalid_decision`, `unknown_call_id`,
/// `expired`, `not_suspended`), as [`WireError::into_store_error`] left it (`Other("code:
/// message")`): the same error `submitDecisions` gives on a local thread. `None` for any other
/// store error.
pub fn engine_refusal(e: &StoreError) -> Option<crate::engine::EngineError> {
    use crate::engine::EngineError;
    let StoreError::Other(text) = e else {
        return None;
    };
    let (code, message) = text.split_once(": ")?;
    let message = message.to_owned();
    Some(match code {
        "invalid_decision" => EngineError::InvalidDecision {
            call_id: None,
            message,
        },
        "unknown_call_id" => EngineError::UnknownCallId {
            call_id: String::new(),
            message,
        },
        "expired" => EngineError::Expired {
            call_id: String::new(),
            message,
        },
        "not_suspended" => EngineError::NotSuspended(message),
        _ => return None,
    })
}

/// The writer of a remote commit, at the handler's clock. Web Locks do not reach across
/// devices, so a remote lease is never `locked`: it is live until it lapses, and only its
/// owner's renewals keep it (docs/design.md, "Across devices").
pub fn remote_writer(owner: &str, keep: bool, now_ms: f64) -> Writer {
    Writer {
        owner: owner.to_owned(),
        lease: keep.then(|| Lease {
            owner: owner.to_owned(),
            until: now_ms + LEASE_MS,
            locked: false,
        }),
        lock_held: false,
    }
}

/// The `authorize` action a commit needs: always `write`. Decisions are not commits: they go
/// to `B/threads/{id}/decide` as intents ([`super::authority::DecideRequest`]), which the
/// handler applies itself (docs/design.md, "Threat model").
pub fn action_of(_commit: &Commit) -> &'static str {
    "write"
}

/// Who decided is the server's word (docs/design.md, "Threat model"): a write keeps, on every
/// decision of its journal and audit records, the `decidedBy` the stored thread has, and says
/// nobody for a decision the stored thread does not have (a write decides nothing: decisions
/// go to `/decide`, where the handler's engine records the identity `authorize` returned;
/// an expiry is decided by nobody). A browser-sent `by` never reaches a remote thread's trail.
pub fn stamp_identity(stored: &ThreadRecord, commit: &mut Commit, _identity: &str) {
    let earlier = |seq: u64| -> Option<String> {
        let run = stored.run.as_ref()?;
        let open = run.audit.iter().find(|a| a.seq == seq)?;
        open.decided_at.and(open.decided_by.clone())
    };
    if let Some(run) = commit.run.as_mut() {
        for open in &mut run.audit {
            open.decided_by = earlier(open.seq);
        }
    }
    for a in &mut commit.audit {
        a.decided_by = earlier(a.seq);
    }
}
