//! The remote store's protocol (`store::wire`, docs/design.md "Across devices"): commits made
//! by the engine cross the wire unchanged, the handler's rules stamp the authorized identity
//! on decisions, and refusals read back as the errors the local stores give.

mod support;

use gatehouse_agent::engine::Commit;
use gatehouse_agent::store::wire::{
    CommitRequest, WireError, action_of, remote_writer, stamp_identity,
};
use gatehouse_agent::store::{LEASE_MS, MemoryStore, StoreError, ThreadRecord};
use serde_json::json;
use support::*;

/// Plans `commits` one after another as the handler does: through the wire as JSON, with
/// the handler's identity and writer, into a memory store.
fn apply_remote(commits: &[Commit], identity: &str) -> (MemoryStore, ThreadRecord) {
    let store = MemoryStore::open("wire");
    let mut record = store.record("t", 1.0);
    for (i, c) in commits.iter().enumerate() {
        let request = CommitRequest {
            commit_id: format!("w1:{i}"),
            expected_version: record.version,
            owner: "w1".into(),
            keep: i + 1 < commits.len(),
            commit: c.clone(),
            lease_token: None,
        };
        let text = serde_json::to_string(&request).expect("a commit serializes");
        let mut read: CommitRequest = serde_json::from_str(&text).expect("and reads back");
        assert_eq!(read, request, "commit {i} crosses the wire unchanged");
        stamp_identity(&record, &mut read.commit, identity);
        let writer = remote_writer(&read.owner, read.keep, 10.0 + i as f64);
        record = store
            .commit(
                "t",
                read.expected_version,
                &read.commit,
                &writer,
                10.0 + i as f64,
            )
            .expect("the commit is applied");
    }
    (store, record)
}

#[test]
fn engine_commits_cross_the_wire_unchanged_and_are_all_writes() {
    let commits = approved_run();
    // Every commit needs `write`, also the one that appends nothing: decisions go to
    // `/decide` as intents (docs/design.md, "Threat model").
    assert!(commits.iter().all(|c| action_of(c) == "write"));
    assert!(commits.iter().any(|c| c.append.is_empty()));
    apply_remote(&commits, "alice");
}

#[test]
fn a_browsers_by_never_reaches_the_audit_trail() {
    let commits = approved_run();
    let sent = serde_json::to_string(&commits).unwrap();
    assert!(sent.contains("mallory"), "the browser sent its own `by`");
    let (store, record) = apply_remote(&commits, "alice");
    let rows = store
        .rows(gatehouse_agent::store::page::Rows::Audit, "t", None, 10)
        .unwrap();
    assert_eq!(rows.len(), 1);
    let audit: serde_json::Value = serde_json::from_str(&rows[0].json).unwrap();
    // A write decides nothing, so it names nobody: who decided is what the handler's own
    // engine recorded at `/decide` (tests/authority.rs), never what a write says.
    assert_eq!(audit["decidedBy"], serde_json::Value::Null);
    assert!(!serde_json::to_string(&record).unwrap().contains("mallory"));
}

#[test]
fn a_decision_made_earlier_keeps_its_stored_identity() {
    let commits = approved_run();
    let decide = commits.iter().position(|c| c.append.is_empty()).unwrap();
    let (_, mut at_decision) = apply_remote(&commits[..=decide], "alice");
    // As the handler's engine recorded it at `/decide`: alice decided.
    for open in &mut at_decision.run.as_mut().unwrap().audit {
        open.decided_by = Some("alice".into());
    }
    // The commits after hers come from a device signed in as bob, saying mallory.
    let mut later = commits[decide + 1].clone();
    for a in &mut later.audit {
        a.decided_by = Some("mallory".into());
    }
    stamp_identity(&at_decision, &mut later, "bob");
    let by: Vec<_> = later.audit.iter().map(|a| a.decided_by.clone()).collect();
    assert_eq!(by, vec![Some("alice".to_owned())]);
}

#[test]
fn a_remote_lease_is_judged_by_the_clock_alone() {
    let w = remote_writer("a", true, 1_000.0);
    let lease = w.lease.clone().unwrap();
    assert!(!lease.locked && !w.lock_held);
    assert_eq!(lease.until, 1_000.0 + LEASE_MS);
    // Another device's writer: refused while the lease is live, let through once it lapsed.
    let other = remote_writer("b", true, 2_000.0);
    assert!(matches!(
        other.may_write(Some(&lease), 2_000.0),
        Err(StoreError::Owned { owner }) if owner == "a"
    ));
    assert!(other.may_write(Some(&lease), 1_000.0 + LEASE_MS).is_ok());
    assert!(remote_writer("a", false, 0.0).lease.is_none());
}

#[test]
fn refusals_read_back_as_the_local_stores_errors() {
    for e in [
        StoreError::Conflict {
            expected: 3,
            found: 4,
        },
        StoreError::Owned {
            owner: "tab-1".into(),
        },
    ] {
        let text = serde_json::to_string(&WireError::of(&e)).unwrap();
        let back: WireError = serde_json::from_str(&text).unwrap();
        assert_eq!(back.into_store_error(), e);
    }
    // The handler's database failed (`storage`, also a full one): retried like an unreachable
    // handler, under the same commit id, so the input waits in the outbox and is not lost.
    let full = WireError::of(&StoreError::Quota("full".into())).into_store_error();
    assert!(matches!(full, StoreError::Unavailable(m) if m.contains("database failed")));
    let down = WireError::new("storage", "the database failed (57P01)".into()).into_store_error();
    assert!(matches!(down, StoreError::Unavailable(_)));
    let other = WireError::new("invalid_request", "bad".into()).into_store_error();
    assert!(matches!(other, StoreError::Other(m) if m.starts_with("invalid_request: ")));
    // The approver rules' refusals are the user's, not the store's: `unauthorized`, saying which.
    for code in ["not_an_approver", "self_approval"] {
        let refused = WireError::new(code, "no".into()).into_store_error();
        assert!(
            matches!(&refused, StoreError::Unauthorized(m) if m == &format!("{code}: no")),
            "{refused:?}"
        );
    }
}

#[test]
fn a_commit_with_an_unknown_key_is_refused() {
    let commits = approved_run();
    let mut v = serde_json::to_value(CommitRequest {
        commit_id: "x".into(),
        expected_version: 0,
        owner: "w".into(),
        keep: false,
        commit: commits[0].clone(),
        lease_token: None,
    })
    .unwrap();
    v["commit"]["apend"] = json!([]);
    let e = serde_json::from_value::<CommitRequest>(v)
        .unwrap_err()
        .to_string();
    assert!(e.contains("apend"), "{e}");
}
