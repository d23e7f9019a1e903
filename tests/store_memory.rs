//! The memory store, natively: every check of the store contract (`tests/store_contract`),
//! one test each, and what only the memory store has (databases kept by name in this realm).
//! The frozen record fixture of schema 1 is read here too, without a browser.

mod store_contract;

use gatehouse_agent::engine::{Commit, ThreadStatus, ToolPolicies};
use gatehouse_agent::store::{MemoryStore, SCHEMA_VERSION, ThreadRecord, Writer};
use gatehouse_agent::thread::{Message, MessageId};
use store_contract::now_or_never;

/// One test of a contract check, on a database of its own.
macro_rules! on_the_memory_store {
    ($check:ident) => {
        #[test]
        fn $check() {
            let db = concat!("contract-", stringify!($check));
            now_or_never(store_contract::$check::<MemoryStore>(db));
            MemoryStore::drop_database(db);
        }
    };
}

store_contract::for_each_check!(on_the_memory_store);

#[test]
fn databases_are_kept_by_name_until_dropped() {
    let commit = Commit {
        replace_tail: None,
        append: vec![Message::user_text(MessageId::from_number(1), "hi")],
        run: None,
        policies: ToolPolicies::new(),
        status: ThreadStatus::Idle,
        audit: Vec::new(),
        request_size: None,
        mcp_tools: None,
    };
    let w = Writer::new("test-agent", false, false, 0.0);
    MemoryStore::open("kept-a")
        .commit("t", 0, &commit, &w, 1.0)
        .unwrap();
    assert_eq!(MemoryStore::open("kept-a").list().len(), 1, "same name");
    assert!(
        MemoryStore::open("kept-b").list().is_empty(),
        "another name"
    );
    let held = MemoryStore::open("kept-a");
    MemoryStore::drop_database("kept-a");
    assert!(MemoryStore::open("kept-a").list().is_empty(), "dropped");
    assert_eq!(held.list().len(), 1, "a handle keeps what it had");
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
