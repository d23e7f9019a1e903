//! Run ownership (docs/design.md, "Run ownership") in the pure functions both stores and the
//! driver decide with: admission, recovery on open, and the commit rule's refusal of records of
//! a newer release and of an append over a lowered message count. What each store does with
//! leases (written and cleared by a run's writes, refused writes while another agent's lease is
//! live, takeovers, renewals) is in the store contract (`tests/store_contract/leases.rs`),
//! run against every store.

use gatehouse_agent::engine::{Commit, ThreadStatus, ToolPolicies};
use gatehouse_agent::store::{
    Admission, Lease, LockAttempt, LockProbe, SCHEMA_VERSION, StoreError, Stored, ThreadRecord,
    Writer, admit, must_recover, plan_commit,
};
use gatehouse_agent::thread::{Message, MessageId};

fn msg(n: u64, text: &str) -> Message {
    Message::user_text(MessageId::from_number(n), text)
}

fn append(n: u64) -> Commit {
    Commit {
        replace_tail: None,
        append: vec![msg(n, "hi")],
        run: None,
        policies: ToolPolicies::new(),
        status: ThreadStatus::Idle,
        audit: Vec::new(),
        request_size: None,
        mcp_tools: None,
    }
}

fn record(version: u64, lease: Option<Lease>) -> ThreadRecord {
    let mut r = ThreadRecord::new("t", 0.0);
    r.version = version;
    r.message_count = 1;
    r.lease = lease;
    r
}

#[test]
fn a_run_is_admitted_only_with_the_lock_or_no_live_lease_and_a_current_view() {
    let live = Some(Lease {
        owner: "a".into(),
        until: 10_000.0,
        locked: true,
    });
    let r = record(4, live.clone());
    assert_eq!(admit(&r, 4, "b", LockAttempt::Taken, 0.0), Admission::Busy);
    // Holding the lock A held: A is gone.
    assert_eq!(admit(&r, 4, "b", LockAttempt::Held, 0.0), Admission::Go);
    // No Web Locks here: the clock decides.
    assert_eq!(
        admit(&r, 4, "b", LockAttempt::Unsupported, 0.0),
        Admission::Busy
    );
    assert_eq!(
        admit(&r, 4, "b", LockAttempt::Unsupported, 10_000.0),
        Admission::Go
    );
    assert_eq!(admit(&r, 3, "b", LockAttempt::Held, 0.0), Admission::Stale);
    assert_eq!(
        admit(&r, 4, "a", LockAttempt::Unsupported, 0.0),
        Admission::Go
    );
    assert_eq!(
        admit(&record(4, None), 4, "b", LockAttempt::Unsupported, 0.0),
        Admission::Go
    );
}

#[test]
fn on_open_a_started_call_is_recovered_only_when_its_run_is_dead() {
    let mut r = record(4, None);
    assert!(
        !must_recover(&r, "b", 0.0, LockProbe::Free),
        "nothing started"
    );
    r.run =
        serde_json::from_str(r#"{"callMessageId":"msg_1","results":[],"started":"c1"}"#).unwrap();
    // Schema 1 records have no lease: the lock alone decides.
    assert!(!must_recover(&r, "b", 0.0, LockProbe::Held));
    assert!(must_recover(&r, "b", 0.0, LockProbe::Free));
    assert!(must_recover(&r, "b", 0.0, LockProbe::Unsupported));
    r.lease = Some(Lease {
        owner: "a".into(),
        until: 10_000.0,
        locked: false,
    });
    assert!(!must_recover(&r, "b", 0.0, LockProbe::Free), "lease live");
    assert!(must_recover(&r, "b", 10_000.0, LockProbe::Free), "lapsed");
    r.lease.as_mut().unwrap().locked = true;
    assert!(!must_recover(&r, "b", 99_999.0, LockProbe::Held));
    assert!(must_recover(&r, "b", 0.0, LockProbe::Free), "the page died");
}

fn stored(r: &ThreadRecord, row_after_tail: bool) -> Stored<'_> {
    Stored {
        record: r,
        tail_id: None,
        row_after_tail,
    }
}

#[test]
fn a_record_of_a_newer_release_is_never_written() {
    let mut r = record(4, None);
    r.schema_version = SCHEMA_VERSION + 1;
    let e = plan_commit(
        stored(&r, false),
        4,
        &append(2),
        &Writer::new("a", false, false, 0.0),
        0.0,
    )
    .unwrap_err();
    assert_eq!(e, StoreError::Newer(SCHEMA_VERSION + 1));
    assert_eq!((e.code(), e.retryable()), ("storage", false));
    assert!(e.to_string().contains("newer release"));
}

#[test]
fn an_append_over_an_existing_row_is_refused_when_the_count_was_lowered() {
    let r = record(4, None);
    let e = plan_commit(
        stored(&r, true),
        4,
        &append(2),
        &Writer::new("a", false, false, 0.0),
        0.0,
    )
    .unwrap_err();
    assert!(matches!(e, StoreError::Corrupt(_)), "{e:?}");
    // A write that appends nothing (a policy change) touches no row.
    let mut policy_only = append(2);
    policy_only.append.clear();
    assert!(
        plan_commit(
            stored(&r, true),
            4,
            &policy_only,
            &Writer::new("a", false, false, 0.0),
            0.0
        )
        .is_ok()
    );
}
