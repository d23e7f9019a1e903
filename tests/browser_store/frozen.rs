//! Databases written by released packages open unchanged (tests/fixtures/store/README.md):
//! each dump is put raw into a fresh IndexedDB, with `indexed_db_futures` directly and not
//! through the store, then read and written through the store.

use super::{append, cleanup, db_name, msg, open, seqs, w};
use gatehouse_agent::store::{
    IndexedDbStore, MessageRow, SCHEMA_VERSION, StoreError, ThreadRecord,
};
use gatehouse_agent::store::{LEASE_MS, Writer};
use gatehouse_agent::thread::Message;
use indexed_db_futures::KeyPath;
use indexed_db_futures::database::Database;
use indexed_db_futures::prelude::*;
use indexed_db_futures::transaction::TransactionMode;
use serde_json::Value;
use std::collections::BTreeMap;
use wasm_bindgen::JsValue;
use wasm_bindgen_test::*;

const RELEASE_1: &str = include_str!("../fixtures/store/db_v1_release_1.json");
const RELEASE_2: &str = include_str!("../fixtures/store/db_v1_release_2.json");

/// What a dump holds, read with serde_json: the records by id and each thread's rows.
struct Dump {
    records: BTreeMap<String, ThreadRecord>,
    rows: BTreeMap<String, Vec<MessageRow>>,
}

impl Dump {
    fn record(&self, id: &str) -> &ThreadRecord {
        &self.records[id]
    }

    fn tail(&self, id: &str) -> Message {
        let row = self.rows[id].last().expect("rows");
        serde_json::from_str(&row.json).expect("tail json")
    }
}

fn js_get(v: &JsValue, key: &str) -> JsValue {
    js_sys::Reflect::get(v, &JsValue::from_str(key)).expect(key)
}

/// Creates database `name` at version 1 with the dump's object stores and puts every stored
/// value in as it was (`JSON.parse` of the dump gives the same plain objects and numbers).
async fn load_raw(name: &str, text: &str) -> Dump {
    let parsed: Value = serde_json::from_str(text).expect("dump");
    assert_eq!(parsed["version"], 1);
    let stores = &parsed["stores"];
    assert_eq!(stores["threads"]["keyPath"], "id");
    assert_eq!(
        stores["messages"]["keyPath"],
        serde_json::json!(["thread", "seq"])
    );
    let db = Database::open(name)
        .with_version(1u32)
        .with_on_upgrade_needed(|_, db| {
            db.create_object_store("threads")
                .with_key_path(KeyPath::One("id"))
                .build()?;
            db.create_object_store("messages")
                .with_key_path(KeyPath::from(["thread", "seq"]))
                .build()?;
            Ok(())
        })
        .await
        .expect("raw open");
    let js = js_sys::JSON::parse(text).expect("dump");
    let js_stores = js_get(&js, "stores");
    let tx = db
        .transaction(["threads", "messages"])
        .with_mode(TransactionMode::Readwrite)
        .build()
        .expect("tx");
    for store in ["threads", "messages"] {
        let os = tx.object_store(store).expect("store");
        let rows: js_sys::Array = js_get(&js_get(&js_stores, store), "rows").into();
        for row in rows.iter() {
            drop(os.put(row).primitive().expect("put"));
        }
    }
    tx.commit().await.expect("commit");
    db.close();

    let mut records = BTreeMap::new();
    for r in stores["threads"]["rows"].as_array().expect("threads") {
        let record: ThreadRecord = serde_json::from_value(r.clone()).expect("record");
        records.insert(record.id.clone(), record);
    }
    let mut rows: BTreeMap<String, Vec<MessageRow>> = BTreeMap::new();
    for r in stores["messages"]["rows"].as_array().expect("messages") {
        let thread = r["thread"].as_str().expect("thread").to_owned();
        rows.entry(thread).or_default().push(MessageRow {
            seq: r["seq"].as_u64().expect("seq"),
            json: r["json"].as_str().expect("json").to_owned(),
        });
    }
    for (id, r) in &records {
        let n = rows.get(id).map_or(0, Vec::len) as u64;
        assert_eq!(r.message_count, n, "{id}: the dump is complete");
    }
    Dump { records, rows }
}

/// Every message of `thread`, read backwards in pages of 5.
async fn all_pages(s: &IndexedDbStore, thread: &str) -> Vec<MessageRow> {
    let mut out = Vec::new();
    let mut before = None;
    loop {
        let page = s.page(thread, before, 5).await.expect("page");
        let Some(first) = page.first() else {
            return out;
        };
        assert!(page.len() <= 5);
        before = Some(first.seq);
        out.splice(0..0, page);
    }
}

/// What both releases wrote alike: every thread listed and loaded as stored, its tail, its
/// pages, pending approvals, policies, the run journal's results and started mark, and a
/// commit on top of the stored data.
async fn reads_and_writes(tag: &str, text: &str) -> (String, IndexedDbStore, Dump) {
    let name = db_name(tag);
    let dump = load_raw(&name, text).await;
    let s = open(&name).await;

    let listed = s.list().await.expect("list");
    assert_eq!(
        listed.iter().map(|r| r.id.as_str()).collect::<Vec<_>>(),
        dump.records.keys().map(String::as_str).collect::<Vec<_>>()
    );
    for r in &listed {
        assert_eq!(r, dump.record(&r.id), "listed {}", r.id);
    }
    for id in dump.records.keys() {
        let snap = s.load(id, 0.0).await.expect("load");
        assert_eq!(&snap.record, dump.record(id), "record {id}");
        assert_eq!(snap.tail, Some(dump.tail(id)), "tail {id}");
        assert_eq!(all_pages(&s, id).await, dump.rows[id], "pages {id}");
    }

    let done = s.load("t-done", 0.0).await.expect("t-done");
    assert_eq!(done.record.message_count, 12);
    assert_eq!(
        seqs(&s.page("t-done", Some(8), 5).await.expect("page")),
        vec![3, 4, 5, 6, 7]
    );
    assert_eq!(done.tail.expect("tail").text(), "Answer number 6.");

    let pending = s.load("t-pending", 0.0).await.expect("t-pending");
    assert_eq!(pending.record.pending_approvals, 2);
    let calls = pending.tail.expect("tail");
    let calls = calls.tool_calls().expect("a tool_call tail");
    assert_eq!(
        calls
            .iter()
            .map(|e| (e.call_id.as_str(), e.is_pending()))
            .collect::<Vec<_>>(),
        [("call_p1", true), ("call_p2", true)]
    );

    let policies = s.load("t-policies", 0.0).await.expect("t-policies").record;
    assert_eq!(policies.policies["search"].auto_approve, Some(true));
    assert_eq!(policies.policies["search"].enabled, None);
    assert_eq!(policies.policies["delete_file"].enabled, Some(false));

    let running = s.load("t-running", 0.0).await.expect("t-running").record;
    let run = running.run.expect("a run journal");
    assert_eq!(run.started.as_deref(), Some("call_r3"));
    assert_eq!(
        run.results
            .iter()
            .map(|r| r.call_id.as_str())
            .collect::<Vec<_>>(),
        ["call_r2", "call_r1"]
    );
    assert!(run.results[0].result.contains("Keep that one"));

    // A commit on top: appended after the stored rows, written in this release's schema, the
    // stored rows untouched.
    let r = s
        .commit(
            "t-done",
            done.record.version,
            &append(vec![msg(1, "one more")]),
            &w(),
            5.0,
        )
        .await
        .expect("commit on top");
    assert_eq!(
        (r.version, r.message_count, r.schema_version),
        (done.record.version + 1, 13, SCHEMA_VERSION)
    );
    assert_eq!(r.created_at, done.record.created_at);
    let last = s.page("t-done", None, 2).await.expect("page");
    assert_eq!(seqs(&last), vec![12, 13]);
    assert_eq!(last[0], dump.rows["t-done"][11]);
    assert_eq!(
        s.load("t-done", 0.0).await.expect("load").tail,
        Some(msg(1, "one more"))
    );
    // The upgrade added the audit trail's store: an old thread has an empty trail.
    assert!(
        s.audit_page("t-done", None, 10)
            .await
            .expect("audit")
            .is_empty()
    );
    (name, s, dump)
}

#[wasm_bindgen_test]
async fn a_database_of_release_1_opens_unchanged() {
    let (name, s, dump) = reads_and_writes("frozen-1", RELEASE_1).await;
    for r in dump.records.values() {
        assert_eq!(r.schema_version, 1, "{}", r.id);
        assert!(r.lease.is_none());
    }
    let run = dump.record("t-running").run.clone().expect("run");
    assert!(run.gated.is_empty() && run.decisions.is_empty());
    // A schema-1 record takes this release's schema with its first write; its policies stay.
    let p = dump.record("t-policies");
    let mut c = append(vec![msg(2, "hello again")]);
    c.policies = p.policies.clone();
    let r = s
        .commit("t-policies", p.version, &c, &w(), 6.0)
        .await
        .expect("commit");
    assert_eq!((r.schema_version, r.message_count), (SCHEMA_VERSION, 3));
    assert_eq!(r.policies, p.policies);
    drop(s);
    cleanup(&name).await;
}

#[wasm_bindgen_test]
async fn a_database_of_release_2_opens_unchanged() {
    let (name, s, dump) = reads_and_writes("frozen-2", RELEASE_2).await;

    // The schema-1 thread an upgraded user kept: waiting for approval, a tool disabled.
    let legacy = s.load("t-legacy", 0.0).await.expect("t-legacy");
    assert_eq!(legacy.record.schema_version, 1);
    assert_eq!(legacy.record.pending_approvals, 1);
    assert_eq!(legacy.record.policies["search"].enabled, Some(false));
    let tail = legacy.tail.expect("tail");
    assert!(tail.tool_calls().expect("tool_call")[0].is_pending());

    let pending = dump.record("t-pending").run.clone().expect("run");
    assert_eq!(pending.gated, ["call_p1", "call_p2"]);
    assert!(pending.decisions.is_empty());

    // The run journal of a tool still executing: gated, decisions and the owner's lease.
    let running = s.load("t-running", 0.0).await.expect("t-running").record;
    let run = running.run.clone().expect("run");
    assert_eq!(run.gated, ["call_r2", "call_r3"]);
    assert_eq!(
        run.decisions
            .iter()
            .map(|d| (
                d.call_id.as_str(),
                d.approved,
                Value::Object(d.inputs.clone())
            ))
            .collect::<Vec<_>>(),
        [
            (
                "call_r2",
                false,
                serde_json::json!({ "path": "/var/log/keep.log" })
            ),
            (
                "call_r3",
                true,
                serde_json::json!({ "path": "/var/log/old.log" })
            ),
        ]
    );
    let lease = running.lease.clone().expect("a lease");
    assert!(lease.locked);
    assert_eq!(lease.until, running.updated_at + LEASE_MS);
    // The lease is enforced: another agent without the lock may not write while it is live...
    let other = Writer::new("other-agent", false, false, 0.0);
    let c = append(vec![msg(3, "from another tab")]);
    assert_eq!(
        s.commit("t-running", running.version, &c, &other, lease.until - 1.0)
            .await,
        Err(StoreError::Owned {
            owner: lease.owner.clone()
        })
    );
    // ...its owner renews and releases it without a new version.
    assert!(
        s.renew("t-running", &lease.owner, lease.until + 1.0)
            .await
            .expect("renew")
    );
    assert!(
        !s.renew("t-running", "other-agent", 1.0)
            .await
            .expect("renew")
    );
    s.release("t-running", &lease.owner).await.expect("release");
    let after = s.load("t-running", 0.0).await.expect("load").record;
    assert_eq!(after.lease, None);
    assert_eq!(after.version, running.version);
    assert_eq!(after.run, running.run);
    drop(s);
    cleanup(&name).await;
}
