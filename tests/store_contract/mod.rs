//! The store contract: what every thread store must do, written once and run against each
//! store (docs/design.md, "Stored data", "Run ownership", "The audit trail"). A store proves
//! itself by implementing [`ContractStore`] — the calls of `driver::store::Store`, which the
//! driver makes, plus opening a handle and a hook that changes stored data behind the store's
//! back — and running every check of [`for_each_check!`]:
//!
//! - natively, the memory store: `tests/store_memory.rs`;
//! - in a browser (wasm-bindgen-test, each engine), IndexedDB and the memory store:
//!   `tests/browser_store.rs`, run by `scripts/wasm-browser-test.sh`.
//!
//! Each check is `async fn check<S: ContractStore>(db: &str)`: it opens its own handles on the
//! database `db` (a fresh name per check), drops them before it returns, and never reads the
//! clock (times are numbers it passes in). Removing the database afterwards is the runner's.
//! What only one store has (IndexedDB's schema, upgrades and raw shapes) stays beside its
//! runner.
//!
//! A new store adds a file here implementing [`ContractStore`] and a runner line per
//! environment it runs in (a macro over [`for_each_check!`], as the two runners do).

// The checks' modules take these imports and the helpers below with `use super::*`.
use gatehouse_agent::engine::{
    AuditDecision, AuditOutcome, AuditRecord, CallResult, Commit, RunJournal, ThreadStatus,
    ToolPolicies, ToolPolicy,
};
use gatehouse_agent::store::page::Rows;
use gatehouse_agent::store::{
    LEASE_MS, Lease, MessageRow, SCHEMA_VERSION, Snapshot, StoreError, ThreadRecord, Writer,
};
use gatehouse_agent::thread::context::RequestSize;
use gatehouse_agent::thread::{Approval, ApprovalState, Message, MessageId, ToolEntry};
use std::future::Future;
use std::pin::pin;
#[cfg(not(target_arch = "wasm32"))]
use std::println as note;
use std::task::Poll;
#[cfg(target_arch = "wasm32")]
use wasm_bindgen_test::console_log as note;

mod commit;
#[cfg(target_arch = "wasm32")]
pub mod indexeddb;
mod leases;
pub mod memory;
mod outside;
#[cfg(target_arch = "wasm32")]
pub mod remote;
mod rows;

pub use commit::*;
pub use leases::*;
pub use outside::*;
pub use rows::*;

/// A thread store under test: the calls `driver::store::Store` makes, with the same
/// signatures.
#[allow(async_fn_in_trait)]
pub trait ContractStore: Sized {
    /// The store's leases may be `locked` (written by a holder of the thread's Web Lock, and
    /// judged by the lock). A remote store's never are: the lock does not reach across
    /// devices, so its leases are judged by the handler's clock alone.
    const WEB_LOCKS: bool = true;

    /// The store refuses writes the engine could not make (a remote store: its handler checks
    /// every commit against the stored thread, `store::authority`, and says who decided
    /// itself, so a write's `decidedBy` is not kept). The checks write only such states, so
    /// that every store holds the same; where a check's point is a refusal, it says which.
    const CHECKED: bool = false;

    /// A handle on the database `name`. Handles on one name see each other's commits (two
    /// tabs), and a handle opened after another was dropped sees what it wrote (a reload).
    async fn open(name: &str) -> Self;

    async fn load(&self, thread: &str, now: f64) -> Result<Snapshot, StoreError>;
    async fn record(&self, thread: &str, now: f64) -> Result<ThreadRecord, StoreError>;
    async fn commit(
        &self,
        thread: &str,
        expected_version: u64,
        commit: &Commit,
        writer: &Writer,
        now: f64,
    ) -> Result<ThreadRecord, StoreError>;
    async fn renew(&self, thread: &str, owner: &str, until: f64) -> Result<bool, StoreError>;
    async fn release(&self, thread: &str, owner: &str) -> Result<(), StoreError>;
    async fn rows(
        &self,
        kind: Rows,
        thread: &str,
        before_seq: Option<u64>,
        limit: u32,
    ) -> Result<Vec<MessageRow>, StoreError>;
    async fn list(&self) -> Result<Vec<ThreadRecord>, StoreError>;
    async fn delete(&self, thread: &str) -> Result<(), StoreError>;

    /// Changes what is stored for `thread` the way something outside Gatehouse would (a newer
    /// release, a damaged disk, a hand edit in devtools), in the store's own terms, without
    /// the commit rule. A store that cannot hold such data says why (`Err`); the check that
    /// needs it then prints that reason and checks nothing else (see
    /// [`an_unreadable_record_is_corrupt_and_left_out_of_the_list`]).
    async fn change_outside(&self, thread: &str, change: Outside) -> Result<(), Inexpressible>;
}

/// What [`ContractStore::change_outside`] does to a stored thread.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Outside {
    /// The record's `schemaVersion` becomes this (a later release wrote it).
    SchemaVersion(u32),
    /// The record's `messageCount` becomes this, whatever rows are stored.
    MessageCount(u64),
    /// The message row at this seq holds text that is not a message.
    UnreadableRow(u64),
    /// The record is no longer a thread record (its `version` is a string).
    UnreadableRecord,
}

/// Why a store cannot hold what [`Outside`] asks for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Inexpressible(pub &'static str);

/// Every contract check, in the order they are listed: `$run!(check)` for each. A runner
/// defines `$run` to make one test of a check against its store; a check added here runs
/// against every store.
macro_rules! for_each_check {
    ($run:ident) => {
        // the commit rule
        $run!(a_new_thread_has_version_zero_and_no_tail);
        $run!(commits_append_and_load_returns_the_record_and_the_tail);
        $run!(a_stale_commit_is_a_conflict_and_writes_nothing);
        $run!(two_handles_on_one_database_are_two_tabs);
        $run!(two_handles_committing_at_once_cannot_both_win);
        $run!(a_tail_rewrite_keeps_its_seq_and_must_name_the_stored_tail);
        $run!(the_record_counts_the_tails_pending_approvals_and_keeps_the_status);
        $run!(policies_the_run_journal_the_request_size_and_mcp_tools_round_trip);
        $run!(messages_keep_their_json_text_exactly);
        $run!(a_sequence_of_commits_leaves_exactly_the_expected_records);
        $run!(a_new_handle_sees_everything_a_dropped_one_wrote);
        // leases
        $run!(a_commit_takes_the_writers_lease_and_a_last_write_clears_it);
        $run!(a_lapsed_lease_may_be_taken_over_but_only_from_the_current_version);
        $run!(a_lease_written_with_the_lock_yields_only_to_a_writer_holding_the_lock);
        $run!(renewal_and_release_touch_only_the_owners_lease_and_never_the_version);
        // rows
        $run!(pages_read_backwards_from_the_tail_oldest_first);
        $run!(the_audit_trail_is_written_with_its_commit_and_deleted_with_its_thread);
        // list and delete
        $run!(list_and_delete);
        // data changed outside Gatehouse
        $run!(a_record_of_a_newer_release_is_read_but_never_written);
        $run!(an_unreadable_tail_is_corrupt_and_cannot_be_rewritten);
        $run!(a_record_counting_missing_rows_is_corrupt);
        $run!(an_append_over_a_row_after_the_tail_is_refused_and_writes_nothing);
        $run!(an_unreadable_record_is_corrupt_and_left_out_of_the_list);
    };
}

pub(crate) use for_each_check;

// ---------------------------------------------------------------------------------------
// helpers

/// Drives a future that never waits (the memory store's calls) to its end, natively and
/// without an executor.
#[cfg(not(target_arch = "wasm32"))]
pub fn now_or_never<F: Future>(f: F) -> F::Output {
    let mut f = pin!(f);
    let mut cx = std::task::Context::from_waker(std::task::Waker::noop());
    match f.as_mut().poll(&mut cx) {
        Poll::Ready(v) => v,
        Poll::Pending => panic!("the future waited: only stores that never wait run natively"),
    }
}

/// Polls both futures until both are done: their first requests are made before either
/// gets an answer.
async fn both<A: Future, B: Future>(a: A, b: B) -> (A::Output, B::Output) {
    let (mut a, mut b) = (pin!(a), pin!(b));
    let (mut ra, mut rb) = (None, None);
    std::future::poll_fn(move |cx| {
        if ra.is_none() {
            if let Poll::Ready(v) = a.as_mut().poll(cx) {
                ra = Some(v);
            }
        }
        if rb.is_none() {
            if let Poll::Ready(v) = b.as_mut().poll(cx) {
                rb = Some(v);
            }
        }
        match (ra.take(), rb.take()) {
            (Some(x), Some(y)) => Poll::Ready((x, y)),
            (x, y) => {
                (ra, rb) = (x, y);
                Poll::Pending
            }
        }
    })
    .await
}

/// A writer that holds no lease (a run that ends with this write).
pub fn w() -> Writer {
    Writer::new("test-agent", false, false, 0.0)
}

pub fn msg(n: u64, text: &str) -> Message {
    Message::user_text(MessageId::from_number(n), text)
}

pub fn append(msgs: Vec<Message>) -> Commit {
    Commit {
        replace_tail: None,
        append: msgs,
        run: None,
        policies: ToolPolicies::new(),
        status: ThreadStatus::Idle,
        audit: Vec::new(),
        request_size: None,
        mcp_tools: None,
    }
}

/// A tool call whose entries are gated and pending (what an engine writes for calls that ask a
/// person), with the run journal that goes with it: every call gated, an open audit record of
/// each numbered from `first_audit`, asked for at `at`.
fn gated_call(n: u64, calls: &[&str], first_audit: u64, at: u64) -> (Message, RunJournal) {
    let entries = calls
        .iter()
        .map(|id| {
            let mut e = ToolEntry::new(*id, "delete_file");
            e.approval = Some(Approval::pending(None));
            e
        })
        .collect();
    let message = Message::tool_call(MessageId::from_number(n), "", entries);
    let mut run = RunJournal::new(message.id.clone());
    for (i, id) in calls.iter().enumerate() {
        run.gate(id);
        run.audit.push(gatehouse_agent::engine::OpenAudit::new(
            first_audit + i as u64,
            id,
            at,
        ));
    }
    (message, run)
}

fn rewrite(tail: Message) -> Commit {
    Commit {
        replace_tail: Some(tail),
        ..append(vec![])
    }
}

fn policy(enabled: Option<bool>, auto_approve: Option<bool>) -> ToolPolicy {
    ToolPolicy {
        enabled,
        auto_approve,
    }
}

fn seqs(rows: &[MessageRow]) -> Vec<u64> {
    rows.iter().map(|r| r.seq).collect()
}

fn texts(rows: &[MessageRow]) -> Vec<String> {
    rows.iter()
        .map(|r| r.message().expect("a message").text())
        .collect()
}

fn ids(records: &[ThreadRecord]) -> Vec<&str> {
    records.iter().map(|r| r.id.as_str()).collect()
}

async fn messages<S: ContractStore>(
    s: &S,
    thread: &str,
    before: Option<u64>,
    limit: u32,
) -> Vec<MessageRow> {
    s.rows(Rows::Messages, thread, before, limit)
        .await
        .expect("messages")
}

async fn audit_rows<S: ContractStore>(
    s: &S,
    thread: &str,
    before: Option<u64>,
    limit: u32,
) -> Vec<MessageRow> {
    s.rows(Rows::Audit, thread, before, limit)
        .await
        .expect("audit rows")
}
