//! The stored shape of a thread: one record (metadata, per-thread policies, the run journal,
//! a version counter) plus its messages keyed by `(thread, seq)`. Pure: both the IndexedDB and
//! the memory store plan their writes with [`plan_commit`], so they behave the same.

use super::ownership::{Lease, Writer};
use crate::engine::{Commit, RunJournal, ThreadState, ThreadStatus, ToolPolicies};
use crate::thread::Message;
use crate::thread::context::RequestSize;
use serde::{Deserialize, Serialize};
use std::fmt;

/// Bumped whenever the stored shape changes; older records stay readable (tests read frozen
/// fixtures of every version in `tests/fixtures/store/`). A record of a later version is read
/// for the fields this release knows but never written: its writer may rely on fields (a
/// lease, a journal) that this release would drop or ignore.
///
/// 2: the run lease (`lease`) and the decision journal (`run.gated`, `run.decisions`).
/// 3: approval deadlines (`run.deadlines`) and the audit trail (`auditCount`, `run.audit`, the
/// `audit` rows).
pub const SCHEMA_VERSION: u32 = 3;

/// Fields a record of an older format lacks take their defaults.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ThreadRecord {
    pub id: String,
    pub schema_version: u32,
    /// Incremented by every write; a write made from an older version is a conflict.
    pub version: u64,
    pub created_at: f64,
    pub updated_at: f64,
    /// Messages are numbered 1..=message_count; the tail is `message_count`.
    pub message_count: u64,
    /// A short title from the first user message, for thread lists.
    pub title: Option<String>,
    #[serde(default)]
    pub policies: ToolPolicies,
    pub run: Option<RunJournal>,
    /// How many entries of the tail await approval, so that a thread list can show which
    /// threads need a decision without reading their messages. Added in schema 1 records
    /// written after 0.1.0; absent in older ones (read as 0).
    #[serde(default)]
    pub pending_approvals: u32,
    /// Where the thread stood after its last write, as the engine that wrote it saw it
    /// (`ThreadStatus::as_str`: `Agent.status()` without `"running"`), for thread lists.
    /// Absent in records written before it was added, and a value this release does not know
    /// is read as absent (see [`ThreadRecord::status`]).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub status: Option<String>,
    /// The agent running this thread now, if any (docs/design.md, "Run ownership").
    pub lease: Option<Lease>,
    /// Audit records are numbered 1..=audit_count (docs/design.md, "The audit trail").
    /// Absent while the thread has none.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub audit_count: u64,
    /// The estimated size of the request behind the newest answer that recorded one, for the
    /// context window's calibration (docs/design.md, "The context window"). Bookkeeping, not
    /// a change of shape: absent in older records, and a release that does not know it drops
    /// it when it writes, which only costs the next request its calibration (it names its
    /// answer, so it never applies to another).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub request_size: Option<RequestSize>,
    /// A remote thread's local copy only: what was said on this device while the thread's
    /// store could not be reached, oldest first, sent when it can (docs/design.md, "Across
    /// devices"). Never part of a record a store plans or a handler keeps.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub outbox: Vec<Queued>,
    /// The MCP servers' tool lists the thread was last run with, `{ server: [tool] }` in the
    /// servers' own JSON (docs/design.md, "MCP tools"). Bookkeeping like `requestSize`:
    /// absent in older records and in threads without MCP servers; a release that does not
    /// know it drops it when it writes.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub mcp_tools: Option<serde_json::Value>,
}

/// An input waiting in a remote thread's outbox. Externally tagged (`{"message": {…}}`): an
/// internally tagged enum would bring serde's buffering code into the wasm (~10 KB).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub enum Queued {
    /// A user message, with the id it is stored under (so a copy that landed before its
    /// answer was lost is recognised, not sent twice).
    Message { id: String, text: String },
    /// Decisions, in the JS API's JSON form, who made them, and the `resume_token` of the
    /// tail they were made on (absent in outboxes of earlier releases).
    Decisions {
        decisions: serde_json::Value,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        by: Option<String>,
        #[serde(
            default,
            rename = "resumeToken",
            skip_serializing_if = "Option::is_none"
        )]
        resume_token: Option<String>,
    },
    /// A call's result computed while its write could not reach the handler: offered as a
    /// late result (the call is re-gated first, as one whose run was cut off).
    Result { call_id: String, result: String },
}

impl Queued {
    /// Queued decisions for `tail` (the thread's tail now), as the `resume_token` the tail had
    /// when they were made.
    pub fn decisions_on(
        decisions: serde_json::Value,
        by: Option<String>,
        tail: Option<&Message>,
    ) -> Queued {
        Queued::Decisions {
            decisions,
            by,
            resume_token: tail
                .and_then(|m| m.meta_str(crate::thread::META_RESUME_TOKEN))
                .map(str::to_owned),
        }
    }

    /// Whether queued decisions still answer the suspension they were made on: the tail has
    /// the same `resume_token`. A call gated again since (re-gated because the run that ran it
    /// was cut off, on another device) has a new token: a decision made before it ran must not
    /// approve it again; its human decides anew, told it "may or may not have taken effect".
    pub fn answers(&self, tail: Option<&Message>) -> bool {
        match self {
            Queued::Decisions {
                resume_token: Some(token),
                ..
            } => tail.and_then(|m| m.meta_str(crate::thread::META_RESUME_TOKEN)) == Some(token),
            _ => true,
        }
    }
}

fn is_zero(n: &u64) -> bool {
    *n == 0
}

impl ThreadRecord {
    /// A thread that does not exist yet (version 0: nothing stored).
    pub fn new(id: &str, now_ms: f64) -> Self {
        ThreadRecord {
            id: id.to_owned(),
            schema_version: SCHEMA_VERSION,
            version: 0,
            created_at: now_ms,
            updated_at: now_ms,
            message_count: 0,
            title: None,
            policies: ToolPolicies::new(),
            run: None,
            pending_approvals: 0,
            status: None,
            lease: None,
            audit_count: 0,
            request_size: None,
            outbox: Vec::new(),
            mcp_tools: None,
        }
    }

    /// Where the thread stands, from the record alone: the stored status, else (a record
    /// written before it was stored) the closest reading of the rest: pending approvals, a
    /// call cut off mid-run, a run waiting for results. Such a record cannot tell an unanswered
    /// message from an answered one, and says `Idle` until its next write.
    pub fn status(&self) -> ThreadStatus {
        if let Some(s) = self.status.as_deref().and_then(ThreadStatus::parse) {
            return s;
        }
        match &self.run {
            _ if self.pending_approvals > 0 => ThreadStatus::AwaitingApproval,
            Some(run) if run.started.is_some() => ThreadStatus::Interrupted,
            Some(_) => ThreadStatus::AwaitingToolResults,
            None => ThreadStatus::Idle,
        }
    }
}

/// What loading a thread reads: its record and its tail message, nothing else.
#[derive(Debug, Clone, PartialEq)]
pub struct Snapshot {
    pub record: ThreadRecord,
    pub tail: Option<Message>,
}

impl Snapshot {
    pub fn state(&self) -> ThreadState {
        ThreadState {
            tail: self.tail.clone(),
            policies: self.record.policies.clone(),
            run: self.record.run.clone(),
            audit_count: self.record.audit_count,
        }
    }
}

/// One stored row: a message (or an audit record) as JSON text, so its key order is kept
/// exactly and reading it back is one `JSON.parse`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct MessageRow {
    pub seq: u64,
    pub json: String,
}

impl MessageRow {
    pub fn message(&self) -> Result<Message, StoreError> {
        serde_json::from_str(&self.json)
            .map_err(|e| StoreError::Corrupt(format!("message {} is unreadable: {e}", self.seq)))
    }
}

/// The writes of one commit, planned against the record it was made from.
#[derive(Debug, Clone, PartialEq)]
pub struct CommitPlan {
    pub record: ThreadRecord,
    pub rows: Vec<MessageRow>,
    /// Audit records to put, by `seq`.
    pub audit: Vec<MessageRow>,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum StoreError {
    /// The thread changed since this view was read (another tab or agent wrote it).
    Conflict {
        expected: u64,
        found: u64,
    },
    /// The browser refused to store more (QuotaExceededError).
    Quota(String),
    /// The database could not be opened (blocked, unsupported, private mode...).
    Unavailable(String),
    /// Stored data could not be read back.
    Corrupt(String),
    /// Another live agent (another tab, or another `Agent` in this page) is running the thread.
    Owned {
        owner: String,
    },
    /// The record was written by a newer release (this schema version): read only here.
    Newer(u32),
    /// A remote store's handler refused this user the action (its `authorize` said no).
    Unauthorized(String),
    Other(String),
}

impl StoreError {
    pub fn code(&self) -> &'static str {
        match self {
            StoreError::Conflict { .. } => "conflict",
            StoreError::Owned { .. } => "busy",
            StoreError::Unauthorized(_) => "unauthorized",
            StoreError::Quota(_)
            | StoreError::Unavailable(_)
            | StoreError::Corrupt(_)
            | StoreError::Newer(_)
            | StoreError::Other(_) => "storage",
        }
    }

    pub fn retryable(&self) -> bool {
        matches!(
            self,
            StoreError::Conflict { .. } | StoreError::Unavailable(_) | StoreError::Owned { .. }
        )
    }
}

impl fmt::Display for StoreError {
    fn fmt(&self, f: &mut fmt::Formatter) -> fmt::Result {
        match self {
            StoreError::Conflict { expected, found } => write!(
                f,
                "the thread was changed elsewhere (version {found}, this view had {expected}); \
                 nothing was written, the view has been reloaded"
            ),
            StoreError::Quota(m) => write!(f, "storage quota exceeded: {m}"),
            StoreError::Unavailable(m) => write!(f, "storage unavailable: {m}"),
            StoreError::Corrupt(m) => write!(f, "stored data is corrupt: {m}"),
            StoreError::Owned { .. } => f.write_str(
                "another tab or agent is running this thread right now; nothing was written. \
                 Try again when it has finished",
            ),
            StoreError::Newer(v) => write!(
                f,
                "this thread was written by a newer release of Gatehouse (schema {v}); this \
                 release (schema {SCHEMA_VERSION}) reads it but does not change it"
            ),
            StoreError::Unauthorized(m) => write!(f, "not allowed: {m}"),
            StoreError::Other(m) => write!(f, "storage error: {m}"),
        }
    }
}

impl std::error::Error for StoreError {}

/// What a store read inside the write's transaction, for [`plan_commit`].
#[derive(Debug, Clone, Copy)]
pub struct Stored<'a> {
    pub record: &'a ThreadRecord,
    /// The `__id` of the row at `messageCount` (`None`: no tail, or unreadable).
    pub tail_id: Option<&'a str>,
    /// A row exists at `messageCount + 1`: the count was lowered outside Gatehouse, and an
    /// append would overwrite a message.
    pub row_after_tail: bool,
}

/// Refuses any write to a record of a later schema version.
pub fn check_writable(current: &ThreadRecord) -> Result<(), StoreError> {
    if current.schema_version > SCHEMA_VERSION {
        return Err(StoreError::Newer(current.schema_version));
    }
    Ok(())
}

/// Plans a commit made from `expected_version` by `writer` against the stored record. Refuses
/// it with `Conflict` when the thread moved on or a tail rewrite does not name the stored tail,
/// with `Owned` while another agent's lease is live (see [`Writer::may_write`]), with `Newer`
/// for a record of a later release, and with `Corrupt` when an append would overwrite a row.
/// The record written carries the writer's lease (`None` ends it).
pub fn plan_commit(
    stored: Stored<'_>,
    expected_version: u64,
    commit: &Commit,
    writer: &Writer,
    now_ms: f64,
) -> Result<CommitPlan, StoreError> {
    let current = stored.record;
    let stored_tail_id = stored.tail_id;
    check_writable(current)?;
    if current.version != expected_version {
        return Err(StoreError::Conflict {
            expected: expected_version,
            found: current.version,
        });
    }
    writer.may_write(current.lease.as_ref(), now_ms)?;
    if stored.row_after_tail && !commit.append.is_empty() {
        return Err(StoreError::Corrupt(format!(
            "a message exists after message {} although the thread record counts {}: the \
             record was changed outside Gatehouse. Nothing was written",
            current.message_count, current.message_count
        )));
    }
    let mut record = current.clone();
    let mut rows = Vec::with_capacity(commit.append.len() + 1);
    if let Some(tail) = &commit.replace_tail {
        if stored_tail_id != Some(tail.id.as_str()) || record.message_count == 0 {
            return Err(StoreError::Conflict {
                expected: expected_version,
                found: current.version,
            });
        }
        rows.push(MessageRow {
            seq: record.message_count,
            json: tail.to_json_string(),
        });
    }
    for m in &commit.append {
        record.message_count += 1;
        if record.title.is_none() && m.role == crate::thread::Role::User {
            let text = m.text();
            if !text.is_empty() {
                record.title = Some(text.chars().take(80).collect());
            }
        }
        rows.push(MessageRow {
            seq: record.message_count,
            json: m.to_json_string(),
        });
    }
    if let Some(tail) = commit.append.last().or(commit.replace_tail.as_ref()) {
        let pending = tail
            .tool_calls()
            .map_or(0, |t| t.iter().filter(|e| e.is_pending()).count());
        record.pending_approvals = pending as u32;
    }
    record.status = Some(commit.status.as_str().to_owned());
    record.version += 1;
    record.schema_version = SCHEMA_VERSION;
    record.updated_at = now_ms;
    record.policies = commit.policies.clone();
    record.run = commit.run.clone();
    record.lease = writer.lease.clone();
    if commit.request_size.is_some() {
        record.request_size = commit.request_size.clone();
    }
    if commit.mcp_tools.is_some() {
        record.mcp_tools = commit.mcp_tools.clone();
    }
    let mut audit = Vec::with_capacity(commit.audit.len());
    for a in &commit.audit {
        record.audit_count = record.audit_count.max(a.seq);
        audit.push(MessageRow {
            seq: a.seq,
            json: serde_json::to_string(a).map_err(|e| StoreError::Other(e.to_string()))?,
        });
    }
    Ok(CommitPlan {
        record,
        rows,
        audit,
    })
}
