//! The IndexedDB thread store in headless Chromium: the same semantics as the memory store
//! (versions, conflicts, tail rewrites, paging), durability across reopening, two handles on
//! one database (two tabs), a 100,000-message thread, and databases written by released
//! packages (`frozen.rs`).
//!
//! Run: `CARGO_TARGET_WASM32_UNKNOWN_UNKNOWN_RUNNER=wasm-bindgen-test-runner
//! CHROMEDRIVER=/usr/bin/chromedriver WASM_BINDGEN_TEST_TIMEOUT=180 cargo test
//! --target wasm32-unknown-unknown --test browser_store` (add `-- --nocapture` for timings).
#![cfg(target_arch = "wasm32")]

use gatehouse_agent::engine::{
    AuditDecision, AuditOutcome, AuditRecord, CallResult, Commit, RunJournal, ThreadStatus,
    ToolPolicies, ToolPolicy,
};
use gatehouse_agent::store::{
    IndexedDbStore, MemoryStore, SCHEMA_VERSION, StoreError, ThreadRecord, Writer,
};
use gatehouse_agent::thread::{Message, MessageId, ToolEntry};
use indexed_db_futures::database::Database;
use indexed_db_futures::prelude::*;
use indexed_db_futures::transaction::TransactionMode;
use std::rc::Rc;
use wasm_bindgen::JsValue;
use wasm_bindgen_test::*;

wasm_bindgen_test_configure!(run_in_browser);

#[path = "browser_store/frozen.rs"]
mod frozen;

// ---------------------------------------------------------------------------------------
// helpers

/// A writer that holds no lease (a run that ends with this write).
fn w() -> Writer {
    Writer::new("test-agent", false, false, 0.0)
}

fn db_name(tag: &str) -> String {
    format!(
        "gatehouse-test-{tag}-{}",
        (js_sys::Math::random() * 1e15) as u64
    )
}

async fn open(name: &str) -> IndexedDbStore {
    IndexedDbStore::open(name).await.expect("open")
}

/// Deletes the database after the handles on it are dropped.
async fn cleanup(name: &str) {
    IndexedDbStore::delete_database(name)
        .await
        .expect("delete database");
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

fn seqs(rows: &[gatehouse_agent::store::MessageRow]) -> Vec<u64> {
    rows.iter().map(|r| r.seq).collect()
}

/// `performance.now()` (5 µs resolution on the cross-origin-isolated test page).
fn now() -> f64 {
    let perf = js_sys::Reflect::get(&js_sys::global(), &JsValue::from_str("performance"))
        .expect("performance");
    let f: js_sys::Function = js_sys::Reflect::get(&perf, &JsValue::from_str("now"))
        .expect("performance.now")
        .into();
    f.call0(&perf).expect("now()").as_f64().unwrap_or(0.0)
}

/// A raw connection (no version: whatever the store created) for poking at stored values.
async fn raw(name: &str) -> Database {
    Database::open(name).await.expect("raw open")
}

async fn raw_get(db: &Database, store: &str, key: JsValue) -> Option<JsValue> {
    let tx = db.transaction(store).build().expect("tx");
    let s = tx.object_store(store).expect("store");
    s.get::<JsValue, JsValue, _>(indexed_db_futures::KeyRange::Only(key))
        .primitive()
        .expect("get")
        .await
        .expect("get result")
}

async fn raw_put(db: &Database, store: &str, value: JsValue) {
    let tx = db
        .transaction(store)
        .with_mode(TransactionMode::Readwrite)
        .build()
        .expect("tx");
    {
        let s = tx.object_store(store).expect("store");
        drop(s.put(value).primitive().expect("put"));
    }
    tx.commit().await.expect("commit");
}

fn row_key(thread: &str, seq: f64) -> JsValue {
    js_sys::Array::of2(&JsValue::from_str(thread), &JsValue::from_f64(seq)).into()
}

fn json(text: &str) -> JsValue {
    js_sys::JSON::parse(text).expect("json")
}

fn stringify(v: &JsValue) -> String {
    js_sys::JSON::stringify(v)
        .expect("stringify")
        .as_string()
        .unwrap_or_default()
}

// ---------------------------------------------------------------------------------------
// semantics (mirrors tests/store_memory.rs)

#[wasm_bindgen_test]
async fn a_new_thread_has_version_zero_and_no_tail() {
    let name = db_name("new");
    let s = open(&name).await;
    let snap = s.load("a", 1.0).await.unwrap();
    assert_eq!(snap.record, ThreadRecord::new("a", 1.0));
    assert_eq!(snap.record.version, 0);
    assert!(snap.tail.is_none());
    assert!(s.list().await.unwrap().is_empty(), "loading writes nothing");
    assert!(s.page("a", None, 10).await.unwrap().is_empty());
    drop(s);
    cleanup(&name).await;
}

#[wasm_bindgen_test]
async fn append_then_load_returns_the_record_and_the_tail() {
    let name = db_name("append");
    let s = open(&name).await;
    let r1 = s
        .commit(
            "a",
            0,
            &append(vec![msg(1, "hello"), msg(2, "world")]),
            &w(),
            5.0,
        )
        .await
        .unwrap();
    assert_eq!((r1.version, r1.message_count), (1, 2));
    assert_eq!(r1.title.as_deref(), Some("hello"));
    assert_eq!((r1.created_at, r1.updated_at), (5.0, 5.0));
    assert_eq!(r1.schema_version, SCHEMA_VERSION);
    let snap = s.load("a", 9.0).await.unwrap();
    assert_eq!(snap.record, r1);
    assert_eq!(snap.tail, Some(msg(2, "world")));
    let r2 = s
        .commit("a", 1, &append(vec![msg(3, "again")]), &w(), 6.0)
        .await
        .unwrap();
    assert_eq!(
        (r2.version, r2.message_count, r2.created_at, r2.updated_at),
        (2, 3, 5.0, 6.0)
    );
    assert_eq!(s.load("a", 9.0).await.unwrap().tail, Some(msg(3, "again")));
    drop(s);
    cleanup(&name).await;
}

/// A commit asks for the rows at the message count this handle last saw together with the
/// record; the record read in the commit's own transaction decides which count is checked.
#[wasm_bindgen_test]
async fn a_commit_checks_the_rows_at_the_stored_count_not_the_one_it_saw_last() {
    let name = db_name("guess");
    let s = open(&name).await;
    let r1 = s
        .commit("a", 0, &append(vec![msg(1, "a"), msg(2, "b")]), &w(), 1.0)
        .await
        .unwrap();
    assert_eq!((r1.version, r1.message_count), (1, 2));
    // Changed outside Gatehouse: the record counts 1 message at the same version; row 2 stays.
    let db = raw(&name).await;
    let stored = raw_get(&db, "threads", JsValue::from_str("a"))
        .await
        .unwrap();
    js_sys::Reflect::set(&stored, &"messageCount".into(), &JsValue::from_f64(1.0)).unwrap();
    raw_put(&db, "threads", stored).await;
    db.close();
    // Row 2 is after the stored tail: refused, nothing written.
    let r = s
        .commit("a", 1, &append(vec![msg(3, "c")]), &w(), 2.0)
        .await;
    assert!(matches!(r, Err(StoreError::Corrupt(_))), "{r:?}");
    let db = raw(&name).await;
    let row = raw_get(&db, "messages", row_key("a", 2.0)).await.unwrap();
    db.close();
    let json = js_sys::Reflect::get(&row, &"json".into())
        .unwrap()
        .as_string()
        .unwrap();
    assert_eq!(json, msg(2, "b").to_json_string());
    drop(s);
    cleanup(&name).await;
}

#[wasm_bindgen_test]
async fn a_stale_commit_is_a_conflict_and_writes_nothing() {
    let name = db_name("conflict");
    let s = open(&name).await;
    s.commit("a", 0, &append(vec![msg(1, "hello")]), &w(), 1.0)
        .await
        .unwrap();
    s.commit("a", 1, &append(vec![msg(2, "second")]), &w(), 2.0)
        .await
        .unwrap();
    let mut stale = append(vec![msg(3, "stale"), msg(4, "stale too")]);
    stale.policies.insert(
        "search".into(),
        ToolPolicy {
            enabled: Some(false),
            auto_approve: None,
        },
    );
    let e = s.commit("a", 1, &stale, &w(), 3.0).await.unwrap_err();
    assert_eq!(
        e,
        StoreError::Conflict {
            expected: 1,
            found: 2
        }
    );
    assert_eq!(e.code(), "conflict");
    let snap = s.load("a", 4.0).await.unwrap();
    assert_eq!((snap.record.version, snap.record.message_count), (2, 2));
    assert_eq!(snap.record.updated_at, 2.0);
    assert!(snap.record.policies.is_empty());
    assert_eq!(snap.tail.unwrap().text(), "second");
    assert_eq!(seqs(&s.page("a", None, 10).await.unwrap()), vec![1, 2]);
    // No row was written past the tail either.
    let db = raw(&name).await;
    assert!(raw_get(&db, "messages", row_key("a", 3.0)).await.is_none());
    db.close();
    // A commit from a version a thread never had, on a thread that does not exist.
    assert!(matches!(
        s.commit("b", 4, &append(vec![msg(1, "x")]), &w(), 5.0)
            .await,
        Err(StoreError::Conflict {
            expected: 4,
            found: 0
        })
    ));
    assert_eq!(s.list().await.unwrap().len(), 1);
    drop(s);
    cleanup(&name).await;
}

#[wasm_bindgen_test]
async fn two_handles_on_one_database_are_two_tabs() {
    let name = db_name("tabs");
    let tab_a = open(&name).await;
    let tab_b = open(&name).await;
    tab_a
        .commit("t", 0, &append(vec![msg(1, "hello")]), &w(), 1.0)
        .await
        .unwrap();
    let seen_by_b = tab_b.load("t", 2.0).await.unwrap();
    assert_eq!(seen_by_b.record.version, 1);
    tab_b
        .commit("t", 1, &append(vec![msg(2, "from tab B")]), &w(), 2.0)
        .await
        .unwrap();
    // Tab A still holds version 1.
    let e = tab_a
        .commit("t", 1, &append(vec![msg(3, "from tab A")]), &w(), 3.0)
        .await
        .unwrap_err();
    assert_eq!(
        e,
        StoreError::Conflict {
            expected: 1,
            found: 2
        }
    );
    // Reloading gives tab A the new view, and its retry lands.
    let fresh = tab_a.load("t", 4.0).await.unwrap();
    assert_eq!(fresh.tail.unwrap().text(), "from tab B");
    tab_a
        .commit(
            "t",
            fresh.record.version,
            &append(vec![msg(3, "from tab A")]),
            &w(),
            5.0,
        )
        .await
        .unwrap();
    assert_eq!(
        seqs(&tab_b.page("t", None, 10).await.unwrap()),
        vec![1, 2, 3]
    );
    drop((tab_a, tab_b));
    cleanup(&name).await;
}

#[wasm_bindgen_test]
async fn two_tabs_committing_at_once_cannot_both_win() {
    let name = db_name("race");
    let a = Rc::new(open(&name).await);
    let b = Rc::new(open(&name).await);
    let start = |s: Rc<IndexedDbStore>, text: &'static str| {
        wasm_bindgen_futures::future_to_promise(async move {
            let r = s
                .commit("t", 0, &append(vec![msg(1, text)]), &w(), 1.0)
                .await;
            Ok(JsValue::from_str(match r {
                Ok(_) => "ok",
                Err(StoreError::Conflict { .. }) => "conflict",
                Err(_) => "error",
            }))
        })
    };
    // Both transactions are queued before either runs.
    let pa = start(a.clone(), "A");
    let pb = start(b.clone(), "B");
    let all =
        wasm_bindgen_futures::JsFuture::from(js_sys::Promise::all(&js_sys::Array::of2(&pa, &pb)))
            .await
            .unwrap();
    let mut outcomes: Vec<String> = js_sys::Array::from(&all)
        .iter()
        .filter_map(|v| v.as_string())
        .collect();
    outcomes.sort();
    assert_eq!(outcomes, vec!["conflict", "ok"]);
    let snap = a.load("t", 2.0).await.unwrap();
    assert_eq!((snap.record.version, snap.record.message_count), (1, 1));
    drop((a, b));
    cleanup(&name).await;
}

#[wasm_bindgen_test]
async fn a_tail_rewrite_keeps_the_seq_and_must_name_the_stored_tail() {
    let name = db_name("tail");
    let s = open(&name).await;
    s.commit(
        "a",
        0,
        &append(vec![msg(1, "one"), msg(2, "two")]),
        &w(),
        1.0,
    )
    .await
    .unwrap();
    let mut c = append(vec![]);
    c.replace_tail = Some(msg(2, "two, edited"));
    c.run = Some(RunJournal::new(MessageId::from_number(2)));
    let r = s.commit("a", 1, &c, &w(), 2.0).await.unwrap();
    assert_eq!((r.version, r.message_count), (2, 2));
    assert!(r.run.is_some());
    assert_eq!(
        s.load("a", 3.0).await.unwrap().tail.unwrap().text(),
        "two, edited"
    );
    assert_eq!(
        s.page("a", None, 10)
            .await
            .unwrap()
            .iter()
            .map(|r| (r.seq, r.message().unwrap().text()))
            .collect::<Vec<_>>(),
        vec![(1, "one".to_owned()), (2, "two, edited".to_owned())]
    );
    // A rewrite plus appends: the tail in place, the new ones after it.
    let mut c = append(vec![msg(3, "three")]);
    c.replace_tail = Some(msg(2, "two, final"));
    let r = s.commit("a", 2, &c, &w(), 4.0).await.unwrap();
    assert_eq!((r.version, r.message_count), (3, 3));
    assert_eq!(
        s.page("a", Some(3), 10).await.unwrap()[1]
            .message()
            .unwrap()
            .text(),
        "two, final"
    );
    // Naming a message that is not the tail.
    let mut wrong = append(vec![]);
    wrong.replace_tail = Some(msg(1, "not the tail"));
    assert!(matches!(
        s.commit("a", 3, &wrong, &w(), 5.0).await,
        Err(StoreError::Conflict { .. })
    ));
    // Rewriting the tail of an empty thread.
    let mut empty = append(vec![]);
    empty.replace_tail = Some(msg(1, "nothing to rewrite"));
    assert!(matches!(
        s.commit("b", 0, &empty, &w(), 5.0).await,
        Err(StoreError::Conflict { .. })
    ));
    let snap = s.load("a", 6.0).await.unwrap();
    assert_eq!((snap.record.version, snap.record.message_count), (3, 3));
    assert_eq!(snap.tail.unwrap().text(), "three");
    assert_eq!(
        s.page("a", None, 10).await.unwrap()[0]
            .message()
            .unwrap()
            .text(),
        "one"
    );
    drop(s);
    cleanup(&name).await;
}

#[wasm_bindgen_test]
async fn pages_read_backwards_from_the_tail_oldest_first() {
    let name = db_name("page");
    let s = open(&name).await;
    let msgs: Vec<Message> = (1..=25).map(|i| msg(i, &format!("m{i}"))).collect();
    s.commit("a", 0, &append(msgs), &w(), 1.0).await.unwrap();
    // Another thread's rows sort right after this one's: they must not leak in.
    s.commit("a2", 0, &append(vec![msg(100, "other")]), &w(), 1.0)
        .await
        .unwrap();
    s.commit("", 0, &append(vec![msg(101, "empty id")]), &w(), 1.0)
        .await
        .unwrap();
    let last = s.page("a", None, 10).await.unwrap();
    assert_eq!(seqs(&last), (16..=25).collect::<Vec<_>>());
    assert_eq!(last[0].message().unwrap().text(), "m16");
    assert_eq!(last[9].message().unwrap(), msg(25, "m25"));
    let before = s.page("a", Some(16), 10).await.unwrap();
    assert_eq!(seqs(&before), (6..=15).collect::<Vec<_>>());
    let first = s.page("a", Some(6), 10).await.unwrap();
    assert_eq!(seqs(&first), (1..=5).collect::<Vec<_>>());
    assert_eq!(s.page("a", Some(3), 10).await.unwrap().len(), 2);
    assert_eq!(s.page("a", Some(1), 10).await.unwrap().len(), 0);
    assert_eq!(s.page("a", Some(0), 10).await.unwrap().len(), 0);
    assert_eq!(s.page("a", None, 0).await.unwrap().len(), 0);
    // Past the tail: clamped to the tail, like the memory store.
    assert_eq!(
        seqs(&s.page("a", Some(1000), 3).await.unwrap()),
        vec![23, 24, 25]
    );
    assert_eq!(seqs(&s.page("a", None, 1000).await.unwrap()).len(), 25);
    assert!(s.page("nope", None, 10).await.unwrap().is_empty());
    assert_eq!(seqs(&s.page("a2", None, 10).await.unwrap()), vec![1]);
    drop(s);
    cleanup(&name).await;
}

#[wasm_bindgen_test]
async fn list_and_delete() {
    let name = db_name("list");
    let s = open(&name).await;
    for (i, id) in ["b", "a", "c"].iter().enumerate() {
        s.commit(
            id,
            0,
            &append(vec![msg(1, id), msg(2, "x")]),
            &w(),
            i as f64,
        )
        .await
        .unwrap();
    }
    let ids = |v: Vec<ThreadRecord>| v.into_iter().map(|r| r.id).collect::<Vec<_>>();
    assert_eq!(ids(s.list().await.unwrap()), vec!["a", "b", "c"]);
    s.delete("b").await.unwrap();
    assert_eq!(ids(s.list().await.unwrap()), vec!["a", "c"]);
    let gone = s.load("b", 10.0).await.unwrap();
    assert_eq!(gone.record, ThreadRecord::new("b", 10.0));
    assert!(gone.tail.is_none());
    assert!(s.page("b", None, 10).await.unwrap().is_empty());
    // Its rows are gone too, the neighbours' are not.
    let db = raw(&name).await;
    assert!(raw_get(&db, "messages", row_key("b", 1.0)).await.is_none());
    assert!(raw_get(&db, "messages", row_key("a", 2.0)).await.is_some());
    assert!(raw_get(&db, "messages", row_key("c", 1.0)).await.is_some());
    db.close();
    // A deleted thread starts again at version 0; deleting twice is fine.
    s.delete("b").await.unwrap();
    let r = s
        .commit("b", 0, &append(vec![msg(7, "again")]), &w(), 11.0)
        .await
        .unwrap();
    assert_eq!((r.version, r.message_count, r.created_at), (1, 1, 11.0));
    drop(s);
    cleanup(&name).await;
}

/// The audit trail (docs/design.md, "The audit trail") is written by the commit it belongs
/// to — all of it with the record, or none of it — paged like messages, and deleted with the
/// thread.
#[wasm_bindgen_test]
async fn the_audit_trail_is_written_with_its_commit_and_deleted_with_its_thread() {
    let name = db_name("audit");
    let s = open(&name).await;
    let inputs = serde_json::json!({"path": "/a"})
        .as_object()
        .unwrap()
        .clone();
    let mut records: Vec<AuditRecord> = (1..=3)
        .map(|seq| {
            AuditRecord::requested(seq, &format!("c{seq}"), "delete_file", None, &inputs, 10)
        })
        .collect();
    let mut c = append(vec![msg(1, "go")]);
    c.audit = records.clone();
    let r = s.commit("t", 0, &c, &w(), 1.0).await.expect("commit");
    assert_eq!(r.audit_count, 3);
    // A later commit replaces a record by its seq.
    let r0 = &mut records[0];
    (r0.decision, r0.reject_reason) = (Some(AuditDecision::Rejected), Some("no".into()));
    (r0.decided_at, r0.decided_by) = (Some(20), Some("ann".into()));
    (r0.outcome, r0.ended_at) = (Some(AuditOutcome::Rejected), Some(20));
    let mut c = append(vec![msg(2, "more")]);
    c.audit = vec![records[0].clone()];
    s.commit("t", 1, &c, &w(), 2.0).await.expect("commit");
    let page = s.audit_page("t", None, 10).await.expect("audit page");
    assert_eq!(seqs(&page), vec![1, 2, 3]);
    let back: Vec<AuditRecord> = page
        .iter()
        .map(|r| serde_json::from_str(&r.json).expect("record json"))
        .collect();
    assert_eq!(back, records);
    assert_eq!(seqs(&s.audit_page("t", Some(3), 1).await.unwrap()), vec![2]);
    // A stale commit writes no record.
    let mut stale = append(vec![msg(3, "stale")]);
    let mut changed = records[1].clone();
    changed.decided_by = Some("stale".into());
    stale.audit = vec![changed];
    assert!(matches!(
        s.commit("t", 1, &stale, &w(), 3.0).await,
        Err(StoreError::Conflict { .. })
    ));
    let second = &s.audit_page("t", Some(3), 1).await.unwrap()[0];
    assert_eq!(
        serde_json::from_str::<AuditRecord>(&second.json).unwrap(),
        records[1]
    );
    // Stored as `{ thread, seq, json }` rows in their own object store.
    let db = raw(&name).await;
    let row = raw_get(&db, "audit", row_key("t", 1.0)).await.expect("row");
    assert_eq!(
        js_sys::Reflect::get(&row, &JsValue::from_str("thread")).unwrap(),
        JsValue::from_str("t")
    );
    s.delete("t").await.expect("delete");
    assert!(raw_get(&db, "audit", row_key("t", 1.0)).await.is_none());
    assert!(s.audit_page("t", None, 10).await.unwrap().is_empty());
    db.close();
    drop(s);
    cleanup(&name).await;
}

#[wasm_bindgen_test]
async fn reopening_the_database_keeps_everything() {
    let name = db_name("reload");
    let s = open(&name).await;
    let mut c = append(vec![msg(1, "before the reload"), msg(2, "tail")]);
    c.policies.insert(
        "search".into(),
        ToolPolicy {
            enabled: None,
            auto_approve: Some(true),
        },
    );
    let written = s.commit("a", 0, &c, &w(), 1.0).await.unwrap();
    let page_before = s.page("a", None, 10).await.unwrap();
    drop(s); // closes the connection: a page reload
    let s = open(&name).await;
    let snap = s.load("a", 99.0).await.unwrap();
    assert_eq!(snap.record, written);
    assert_eq!(snap.tail, Some(msg(2, "tail")));
    assert_eq!(s.page("a", None, 10).await.unwrap(), page_before);
    assert_eq!(s.list().await.unwrap(), vec![written]);
    // And it is still writable from the version it had.
    s.commit("a", 1, &append(vec![msg(3, "after")]), &w(), 2.0)
        .await
        .unwrap();
    drop(s);
    cleanup(&name).await;
}

#[wasm_bindgen_test]
async fn policies_and_the_run_journal_round_trip() {
    let name = db_name("journal");
    let s = open(&name).await;
    let call = Message::tool_call(
        MessageId::from_number(2),
        "let me look",
        vec![
            ToolEntry::new("toolu_01", "search"),
            ToolEntry::new("toolu_02", "delete_logs"),
        ],
    );
    let mut c = append(vec![msg(1, "Clean up the old logs"), call.clone()]);
    c.policies.insert(
        "search".into(),
        ToolPolicy {
            enabled: Some(true),
            auto_approve: Some(true),
        },
    );
    c.policies.insert(
        "delete_logs".into(),
        ToolPolicy {
            enabled: Some(false),
            auto_approve: None,
        },
    );
    let mut run = RunJournal::new(MessageId::from_number(2));
    run.results.push(CallResult {
        call_id: "toolu_02".into(),
        result: "TOOL NOT EXECUTED. \"quoted\", ünïcødé, 🚀".into(),
    });
    run.started = Some("toolu_01".into());
    c.run = Some(run.clone());
    let r = s.commit("t", 0, &c, &w(), 1.0).await.unwrap();
    let snap = s.load("t", 2.0).await.unwrap();
    assert_eq!(snap.record, r);
    assert_eq!(snap.record.policies, c.policies);
    assert_eq!(snap.record.run, Some(run));
    assert_eq!(snap.tail, Some(call));
    assert_eq!(snap.state().policies, c.policies);
    // Clearing the journal and a policy.
    let mut c2 = append(vec![]);
    c2.policies = c.policies.clone();
    c2.policies.remove("delete_logs");
    let r2 = s.commit("t", 1, &c2, &w(), 3.0).await.unwrap();
    let snap = s.load("t", 4.0).await.unwrap();
    assert_eq!(snap.record, r2);
    assert!(snap.record.run.is_none());
    assert_eq!(snap.record.policies.len(), 1);
    drop(s);
    cleanup(&name).await;
}

// ---------------------------------------------------------------------------------------
// stored shape, later schema versions, damage, refusals

#[wasm_bindgen_test]
async fn the_stored_shape_is_the_documented_one() {
    let name = db_name("shape");
    let s = open(&name).await;
    let m = msg(1, "hello");
    s.commit("a", 0, &append(vec![m.clone()]), &w(), 1.0)
        .await
        .unwrap();
    let db = raw(&name).await;
    assert_eq!(db.version(), 2.0);
    let record = raw_get(&db, "threads", JsValue::from_str("a"))
        .await
        .unwrap();
    assert_eq!(
        stringify(&record),
        r#"{"id":"a","schemaVersion":3,"version":1,"createdAt":1,"updatedAt":1,"messageCount":1,"title":"hello","policies":{},"run":null,"pendingApprovals":0,"status":"idle","lease":null}"#
    );
    let row = raw_get(&db, "messages", row_key("a", 1.0)).await.unwrap();
    let seq = js_sys::Reflect::get(&row, &JsValue::from_str("seq")).unwrap();
    assert!(seq.as_f64().is_some(), "seq is a number, not a BigInt");
    assert_eq!(
        stringify(&row),
        format!(
            r#"{{"thread":"a","seq":1,"json":{}}}"#,
            serde_json::to_string(&m.to_json_string()).unwrap()
        )
    );
    db.close();
    drop(s);
    cleanup(&name).await;
}

#[wasm_bindgen_test]
async fn a_record_of_a_later_schema_version_is_read_for_the_fields_we_know() {
    let name = db_name("future");
    let s = open(&name).await;
    let db = raw(&name).await;
    raw_put(
        &db,
        "threads",
        json(
            r#"{"id":"f","schemaVersion":7,"version":4,"createdAt":10,"updatedAt":20,
                "messageCount":1,"title":"from the future","policies":{"search":{"enabled":false,"colour":"blue"}},
                "run":null,"labels":["x"],"archived":{"at":30}}"#,
        ),
    )
    .await;
    raw_put(
        &db,
        "messages",
        json(&format!(
            r#"{{"thread":"f","seq":1,"json":{},"extra":true}}"#,
            serde_json::to_string(&msg(1, "future tail").to_json_string()).unwrap()
        )),
    )
    .await;
    // Fields left out by an older writer take their defaults.
    raw_put(
        &db,
        "threads",
        json(r#"{"id":"old","schemaVersion":1,"version":1,"createdAt":1,"updatedAt":1,"messageCount":0}"#),
    )
    .await;
    db.close();
    let snap = s.load("f", 0.0).await.unwrap();
    assert_eq!(snap.record.schema_version, 7);
    assert_eq!((snap.record.version, snap.record.message_count), (4, 1));
    assert_eq!(snap.record.title.as_deref(), Some("from the future"));
    assert_eq!(snap.record.policies["search"].enabled, Some(false));
    assert_eq!(snap.tail.unwrap().text(), "future tail");
    let old = s.load("old", 0.0).await.unwrap().record;
    assert!(old.policies.is_empty() && old.run.is_none() && old.title.is_none());
    assert_eq!(s.list().await.unwrap().len(), 2);
    drop(s);
    cleanup(&name).await;
}

#[wasm_bindgen_test]
async fn damaged_data_is_corrupt_not_a_panic() {
    let name = db_name("corrupt");
    let s = open(&name).await;
    s.commit(
        "a",
        0,
        &append(vec![msg(1, "fine"), msg(2, "tail")]),
        &w(),
        1.0,
    )
    .await
    .unwrap();
    let db = raw(&name).await;
    raw_put(
        &db,
        "messages",
        json(r#"{"thread":"a","seq":2,"json":"{not json"}"#),
    )
    .await;
    raw_put(&db, "threads", json(r#"{"id":"bad","version":"three"}"#)).await;
    raw_put(
        &db,
        "threads",
        json(r#"{"id":"hole","schemaVersion":1,"version":1,"createdAt":1,"updatedAt":1,"messageCount":3}"#),
    )
    .await;
    db.close();
    assert!(matches!(
        s.load("a", 0.0).await,
        Err(StoreError::Corrupt(_))
    ));
    assert!(matches!(
        s.load("bad", 0.0).await,
        Err(StoreError::Corrupt(_))
    ));
    assert!(matches!(
        s.load("hole", 0.0).await,
        Err(StoreError::Corrupt(_))
    ));
    // Pages hand rows out as text, like the memory store; the bad one fails when parsed.
    let rows = s.page("a", None, 5).await.unwrap();
    assert_eq!(seqs(&rows), vec![1, 2]);
    assert!(matches!(rows[1].message(), Err(StoreError::Corrupt(_))));
    assert!(matches!(
        s.page("hole", None, 5).await,
        Err(StoreError::Corrupt(_))
    ));
    // An unreadable record is left out of the list; the others are listed.
    let mut listed: Vec<String> = s.list().await.unwrap().into_iter().map(|r| r.id).collect();
    listed.sort();
    assert_eq!(listed, ["a", "hole"]);
    // The first row is still readable, and an unreadable tail cannot be "rewritten".
    assert_eq!(seqs(&s.page("a", Some(2), 5).await.unwrap()), vec![1]);
    let mut c = append(vec![]);
    c.replace_tail = Some(msg(2, "fixed"));
    assert!(matches!(
        s.commit("a", 1, &c, &w(), 2.0).await,
        Err(StoreError::Conflict { .. })
    ));
    drop(s);
    cleanup(&name).await;
}

/// Resolves to `value` after `ms`.
fn after_ms(ms: i32, value: &'static str) -> js_sys::Promise {
    js_sys::Promise::new(&mut |resolve, _| {
        let set_timeout: js_sys::Function =
            js_sys::Reflect::get(&js_sys::global(), &JsValue::from_str("setTimeout"))
                .expect("setTimeout")
                .into();
        let done = resolve.bind1(&JsValue::NULL, &JsValue::from_str(value));
        set_timeout
            .call2(&JsValue::NULL, &done, &JsValue::from(ms))
            .expect("setTimeout()");
    })
}

#[wasm_bindgen_test]
async fn an_open_blocked_by_another_connections_version_change_gives_up_after_10_s() {
    let name = db_name("blocked");
    // A connection that never closes on versionchange (another program), and a delete queued
    // behind it: every open of the database waits for the delete.
    let first = Database::open(name.as_str())
        .with_version(1u32)
        .await
        .expect("first");
    let delete = Database::delete_by_name(&name).expect("delete request");
    let t0 = now();
    let e = IndexedDbStore::open(&name).await.unwrap_err();
    let waited = now() - t0;
    assert!(matches!(&e, StoreError::Unavailable(_)), "{e:?}");
    assert!(e.retryable());
    assert!((9_000.0..15_000.0).contains(&waited), "{waited} ms");
    // Unblocked: the delete runs, then the open that gave up creates the database. Its
    // connection must not stay open: the next delete would wait for it forever.
    first.close();
    delete.await.expect("delete");
    let second = wasm_bindgen_futures::future_to_promise({
        let name = name.clone();
        async move {
            IndexedDbStore::delete_database(&name)
                .await
                .map(|()| JsValue::from_str("deleted"))
                .map_err(|e| JsValue::from_str(&e.to_string()))
        }
    });
    let outcome = wasm_bindgen_futures::JsFuture::from(js_sys::Promise::race(&js_sys::Array::of2(
        &second,
        &after_ms(5_000, "blocked"),
    )))
    .await
    .expect("race");
    assert_eq!(outcome.as_string().as_deref(), Some("deleted"));
}

#[wasm_bindgen_test]
async fn a_database_without_the_gatehouse_stores_is_unavailable() {
    let name = db_name("foreign");
    let other = Database::open(name.as_str())
        .with_version(1u32)
        .with_on_upgrade_needed(|_, db| {
            db.create_object_store("threads")
                .with_key_path(indexed_db_futures::KeyPath::One("id"))
                .build()?;
            Ok(())
        })
        .await
        .expect("open");
    other.close();
    let e = IndexedDbStore::open(&name).await.unwrap_err();
    assert!(
        matches!(&e, StoreError::Unavailable(m) if m.contains("not a Gatehouse database")
            && m.contains("\"messages\"")),
        "{e:?}"
    );
    // It closed its connection: deleting the database is not blocked.
    cleanup(&name).await;
}

#[wasm_bindgen_test]
async fn a_database_from_a_later_release_is_unavailable() {
    let name = db_name("newer");
    let newer = Database::open(name.as_str())
        .with_version(gatehouse_agent::store::indexeddb::DB_VERSION + 1)
        .await
        .expect("open a later version");
    newer.close();
    let e = IndexedDbStore::open(&name).await.unwrap_err();
    assert!(
        matches!(&e, StoreError::Unavailable(m) if m.contains("VersionError")),
        "{e:?}"
    );
    assert!(e.retryable());
    cleanup(&name).await;
}

#[wasm_bindgen_test]
async fn deleting_the_database_closes_open_handles() {
    let name = db_name("closing");
    let s = open(&name).await;
    s.commit("a", 0, &append(vec![msg(1, "hi")]), &w(), 1.0)
        .await
        .unwrap();
    // Another tab deletes the database while this handle is open: it must not block. The
    // handle then connects again and finds the (new, empty) database.
    cleanup(&name).await;
    assert_eq!(s.load("a", 2.0).await.unwrap().record.version, 0);
    s.commit("a", 0, &append(vec![msg(1, "again")]), &w(), 2.5)
        .await
        .unwrap();
    drop(s);
    cleanup(&name).await;
    let s = open(&name).await;
    assert_eq!(s.load("a", 3.0).await.unwrap().record.version, 0);
    drop(s);
    cleanup(&name).await;
}

// ---------------------------------------------------------------------------------------
// the memory store and IndexedDB write the same data

#[wasm_bindgen_test]
async fn the_memory_store_and_indexeddb_write_the_same_data() {
    let name = db_name("same");
    MemoryStore::drop_database(&name);
    let mem = MemoryStore::open(&name);
    let idb = open(&name).await;

    let mut steps: Vec<(&str, u64, Commit)> = Vec::new();
    let mut c = append(vec![msg(1, "Find the report"), msg(2, "Sure.")]);
    c.policies.insert(
        "search".into(),
        ToolPolicy {
            enabled: Some(false),
            auto_approve: None,
        },
    );
    steps.push(("a", 0, c.clone()));
    let call = Message::tool_call(
        MessageId::from_number(3),
        "",
        vec![ToolEntry::new("toolu_01", "search")],
    );
    let mut c2 = append(vec![call.clone()]);
    c2.policies = c.policies.clone();
    c2.run = Some(RunJournal::new(MessageId::from_number(3)));
    steps.push(("a", 1, c2.clone()));
    let mut c3 = c2.clone();
    c3.append.clear();
    let mut edited = call.clone();
    edited.set_meta("note", serde_json::json!({"z": 1, "a": [true, null]}));
    c3.replace_tail = Some(edited);
    let mut journal = RunJournal::new(MessageId::from_number(3));
    journal.record("toolu_01", "found it".into());
    c3.run = Some(journal);
    steps.push(("a", 2, c3.clone()));
    steps.push(("a", 2, append(vec![msg(9, "stale")]))); // conflict
    let mut wrong = append(vec![]);
    wrong.replace_tail = Some(msg(2, "not the tail"));
    steps.push(("a", 3, wrong)); // conflict
    let result = Message::tool_call_result(
        MessageId::from_number(4),
        vec![ToolEntry::new("toolu_01", "search")],
    );
    let mut c4 = append(vec![
        result,
        Message::assistant_text(MessageId::from_number(5), "Here."),
    ]);
    c4.policies = c.policies.clone();
    steps.push(("a", 3, c4));
    steps.push(("b", 0, append(vec![msg(10, "another thread")])));
    steps.push(("b", 7, append(vec![msg(11, "stale")]))); // conflict
    steps.push(("c", 0, append(vec![]))); // a record without messages

    for (i, (thread, version, commit)) in steps.iter().enumerate() {
        let now = 1000.0 + i as f64;
        let m = mem.commit(thread, *version, commit, &w(), now);
        let d = idb.commit(thread, *version, commit, &w(), now).await;
        assert_eq!(m, d, "step {i}");
    }
    assert_eq!(mem.list(), idb.list().await.unwrap());
    for thread in ["a", "b", "c", "missing"] {
        assert_eq!(
            mem.load(thread, 5.0).unwrap(),
            idb.load(thread, 5.0).await.unwrap(),
            "{thread}"
        );
        for (before, limit) in [
            (None, 100),
            (None, 2),
            (Some(3), 1),
            (Some(2), 5),
            (Some(50), 2),
        ] {
            assert_eq!(
                mem.page(thread, before, limit).unwrap(),
                idb.page(thread, before, limit).await.unwrap(),
                "{thread} {before:?} {limit}"
            );
        }
    }
    mem.delete("b");
    idb.delete("b").await.unwrap();
    assert_eq!(mem.list(), idb.list().await.unwrap());
    MemoryStore::drop_database(&name);
    drop(idb);
    cleanup(&name).await;
}

// ---------------------------------------------------------------------------------------
// a long thread: load stays O(1), paging O(limit)

async fn time_loads(s: &IndexedDbStore, thread: &str, runs: usize) -> (f64, f64) {
    let mut times = Vec::with_capacity(runs);
    for _ in 0..runs {
        let t0 = now();
        let snap = s.load(thread, 0.0).await.unwrap();
        times.push(now() - t0);
        assert!(snap.tail.is_some());
    }
    let first = times[0];
    times.sort_by(f64::total_cmp);
    (first, times[times.len() / 2])
}

#[wasm_bindgen_test]
async fn a_100k_message_thread_loads_its_tail_and_pages_without_scanning() {
    const TOTAL: u64 = 100_000;
    const BATCH: u64 = 10_000;
    let name = db_name("long");
    let s = open(&name).await;

    let short: Vec<Message> = (1..=10).map(|i| msg(i, &format!("short {i}"))).collect();
    s.commit("short", 0, &append(short), &w(), 1.0)
        .await
        .unwrap();

    let t_write = now();
    let mut version = 0;
    for b in 0..TOTAL / BATCH {
        let msgs: Vec<Message> = (b * BATCH + 1..=(b + 1) * BATCH)
            .map(|i| msg(i, &format!("message number {i} of the long thread")))
            .collect();
        let t0 = now();
        let r = s
            .commit("long", version, &append(msgs), &w(), b as f64)
            .await
            .unwrap();
        if b == 0 || b + 1 == TOTAL / BATCH {
            console_log!(
                "commit of {BATCH} messages (batch {}): {:.0} ms",
                b + 1,
                now() - t0
            );
        }
        version = r.version;
    }
    console_log!(
        "wrote {TOTAL} messages in {} commits: {:.0} ms",
        TOTAL / BATCH,
        now() - t_write
    );

    let snap = s.load("long", 0.0).await.unwrap();
    assert_eq!(snap.record.message_count, TOTAL);
    assert_eq!(snap.record.version, TOTAL / BATCH);
    assert_eq!(
        snap.tail,
        Some(msg(
            TOTAL,
            &format!("message number {TOTAL} of the long thread")
        ))
    );
    let t0 = now();
    let last = s.page("long", None, 20).await.unwrap();
    let t_page = now() - t0;
    assert_eq!(seqs(&last), (99_981..=100_000).collect::<Vec<_>>());
    assert_eq!(
        last[0].message().unwrap().text(),
        "message number 99981 of the long thread"
    );
    let t0 = now();
    let middle = s.page("long", Some(50_001), 20).await.unwrap();
    let t_mid = now() - t0;
    assert_eq!(seqs(&middle), (49_981..=50_000).collect::<Vec<_>>());

    // A typical commit (one message) costs the same on both threads: medians of 5 each,
    // alternating (the first small write after the bulk ones may wait for a flush).
    let (mut short_v, mut long_v) = (1, TOTAL / BATCH);
    let (mut t_short, mut t_long) = (Vec::new(), Vec::new());
    for i in 0..5 {
        for (thread, v, times) in [
            ("short", &mut short_v, &mut t_short),
            ("long", &mut long_v, &mut t_long),
        ] {
            let t0 = now();
            *v = s
                .commit(
                    thread,
                    *v,
                    &append(vec![msg(TOTAL + 1 + i, "one more")]),
                    &w(),
                    0.0,
                )
                .await
                .unwrap()
                .version;
            times.push(now() - t0);
        }
    }
    t_short.sort_by(f64::total_cmp);
    t_long.sort_by(f64::total_cmp);
    console_log!(
        "commit of 1 message, median of 5: 10-message thread {:.2} ms, {TOTAL}-message thread {:.2} ms",
        t_short[2],
        t_long[2]
    );
    assert_eq!(
        seqs(&s.page("long", None, 6).await.unwrap()),
        (TOTAL..=TOTAL + 5).collect::<Vec<_>>()
    );

    let (short_first, short_median) = time_loads(&s, "short", 21).await;
    let (long_first, long_median) = time_loads(&s, "long", 21).await;
    console_log!(
        "load, 10 messages: first {short_first:.2} ms, median of 21 {short_median:.2} ms; \
         load, {TOTAL} messages: first {long_first:.2} ms, median of 21 {long_median:.2} ms; \
         page(None, 20) {t_page:.2} ms, page(Some(50001), 20) {t_mid:.2} ms"
    );
    drop(s);
    let t0 = now();
    cleanup(&name).await;
    console_log!("delete_database: {:.0} ms", now() - t0);
}
