//! The store's commit rule (shared by the IndexedDB store) on the memory store: versions,
//! conflicts, tail rewrites, paging, and reading frozen records of every schema version.

use gatehouse_agent::engine::{Commit, RunJournal, ThreadStatus, ToolPolicies, ToolPolicy};
use gatehouse_agent::store::{MemoryStore, SCHEMA_VERSION, StoreError, ThreadRecord, Writer};
use gatehouse_agent::thread::{Message, MessageId};

/// A writer that holds no lease (a run that ends with this write).
fn w() -> Writer {
    Writer::new("test-agent", false, false, 0.0)
}

fn msg(n: u64, text: &str) -> Message {
    Message::user_text(MessageId::from_number(n), text)
}

fn append(msgs: Vec<Message>) -> Commit {
    Commit {
        replace_tail: None,
        append: msgs,
        run: None,
        policies: ToolPolicies::new(),
        status: ThreadStatus::Idle,
        audit: Vec::new(),
        request_size: None,
    }
}

#[test]
fn a_new_thread_has_version_zero_and_no_tail() {
    let s = MemoryStore::open("t-new");
    let snap = s.load("a", 1.0).unwrap();
    assert_eq!(snap.record.version, 0);
    assert!(snap.tail.is_none());
}

#[test]
fn commits_bump_the_version_and_a_stale_commit_is_a_conflict_that_writes_nothing() {
    let s = MemoryStore::open("t-conflict");
    let r1 = s
        .commit("a", 0, &append(vec![msg(1, "hello")]), &w(), 1.0)
        .unwrap();
    assert_eq!((r1.version, r1.message_count), (1, 1));
    assert_eq!(r1.title.as_deref(), Some("hello"));
    // Another tab (same database) appends from version 1.
    let other = MemoryStore::open("t-conflict");
    other
        .commit("a", 1, &append(vec![msg(2, "from tab B")]), &w(), 2.0)
        .unwrap();
    // This view still thinks version 1.
    let e = s
        .commit("a", 1, &append(vec![msg(3, "stale")]), &w(), 3.0)
        .unwrap_err();
    assert_eq!(
        e,
        StoreError::Conflict {
            expected: 1,
            found: 2
        }
    );
    assert_eq!(e.code(), "conflict");
    let snap = s.load("a", 4.0).unwrap();
    assert_eq!(snap.record.message_count, 2);
    assert_eq!(snap.tail.unwrap().text(), "from tab B");
}

#[test]
fn a_tail_rewrite_keeps_the_seq_and_must_name_the_stored_tail() {
    let s = MemoryStore::open("t-tail");
    s.commit(
        "a",
        0,
        &append(vec![msg(1, "one"), msg(2, "two")]),
        &w(),
        1.0,
    )
    .unwrap();
    let mut c = append(vec![]);
    c.replace_tail = Some(msg(2, "two, edited"));
    c.run = Some(RunJournal::new(MessageId::from_number(2)));
    let r = s.commit("a", 1, &c, &w(), 2.0).unwrap();
    assert_eq!(r.message_count, 2);
    assert!(r.run.is_some());
    assert_eq!(
        s.load("a", 3.0).unwrap().tail.unwrap().text(),
        "two, edited"
    );
    let mut wrong = append(vec![]);
    wrong.replace_tail = Some(msg(1, "not the tail"));
    assert!(matches!(
        s.commit("a", 2, &wrong, &w(), 4.0),
        Err(StoreError::Conflict { .. })
    ));
}

#[test]
fn pages_read_backwards_from_the_tail_oldest_first() {
    let s = MemoryStore::open("t-page");
    let msgs: Vec<Message> = (1..=25).map(|i| msg(i, &format!("m{i}"))).collect();
    s.commit("a", 0, &append(msgs), &w(), 1.0).unwrap();
    let last = s.page("a", None, 10).unwrap();
    assert_eq!(
        last.iter().map(|r| r.seq).collect::<Vec<_>>(),
        (16..=25).collect::<Vec<_>>()
    );
    let before = s.page("a", Some(16), 10).unwrap();
    assert_eq!(before.first().unwrap().seq, 6);
    assert_eq!(s.page("a", Some(3), 10).unwrap().len(), 2);
    assert_eq!(s.page("a", Some(1), 10).unwrap().len(), 0);
}

#[test]
fn policies_are_stored_with_the_thread() {
    let s = MemoryStore::open("t-pol");
    let mut c = append(vec![]);
    c.policies.insert(
        "search".into(),
        ToolPolicy {
            enabled: Some(false),
            auto_approve: None,
        },
    );
    s.commit("a", 0, &c, &w(), 1.0).unwrap();
    assert_eq!(
        s.load("a", 2.0).unwrap().record.policies["search"].enabled,
        Some(false)
    );
    assert!(
        s.load("b", 2.0).unwrap().record.policies.is_empty(),
        "no inheritance"
    );
}

#[test]
fn frozen_v1_records_are_read() {
    let text = std::fs::read_to_string(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/tests/fixtures/store/v1_thread_record.json"
    ))
    .unwrap();
    let r: ThreadRecord = serde_json::from_str(&text).unwrap();
    assert_eq!(r.schema_version, 1);
    assert!(SCHEMA_VERSION >= r.schema_version);
    assert_eq!(r.policies["search"].auto_approve, Some(true));
    assert_eq!(r.run.unwrap().started.as_deref(), Some("toolu_01"));
}

#[test]
fn the_record_counts_the_tails_pending_approvals() {
    use gatehouse_agent::thread::{Approval, ToolEntry};
    let s = MemoryStore::open("t-pending");
    let mut gated = ToolEntry::new("c1", "delete_file");
    gated.approval = Some(Approval::pending(None));
    let call = Message::tool_call(
        MessageId::from_number(2),
        "",
        vec![gated, ToolEntry::new("c2", "x")],
    );
    let r = s
        .commit("a", 0, &append(vec![msg(1, "go"), call.clone()]), &w(), 1.0)
        .unwrap();
    assert_eq!(r.pending_approvals, 1);
    let mut decided = call;
    decided.tool_calls_mut().unwrap()[0]
        .approval
        .as_mut()
        .unwrap()
        .state = gatehouse_agent::thread::ApprovalState::Approved;
    let mut c = append(vec![]);
    c.replace_tail = Some(decided);
    assert_eq!(
        s.commit("a", 1, &c, &w(), 2.0).unwrap().pending_approvals,
        0
    );
}
