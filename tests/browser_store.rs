//! The thread stores in a real browser (wasm-bindgen-test; `scripts/wasm-browser-test.sh` runs
//! it in Chromium, Firefox and WebKit): every check of the store contract
//! (`tests/store_contract`) against IndexedDB and against the memory store, then what only
//! IndexedDB has: the stored shape, records of later releases with fields this one does not
//! know, opens that are blocked or refused, deleting the database under open handles, a
//! 100,000-message thread, and databases written by released packages (`frozen.rs`).
//!
//! Run: `CARGO_TARGET_WASM32_UNKNOWN_UNKNOWN_RUNNER=wasm-bindgen-test-runner
//! CHROMEDRIVER=/usr/bin/chromedriver WASM_BINDGEN_TEST_TIMEOUT=180 cargo test
//! --target wasm32-unknown-unknown --test browser_store` (add `-- --nocapture` for timings).
#![cfg(target_arch = "wasm32")]

mod store_contract;

use gatehouse_agent::engine::AuditRecord;
use gatehouse_agent::store::{IndexedDbStore, MemoryStore, StoreError};
use gatehouse_agent::thread::Message;
use indexed_db_futures::database::Database;
use indexed_db_futures::prelude::*;
use store_contract::indexeddb::{json, raw, raw_get, raw_put, row_key};
pub(crate) use store_contract::{append, msg, w};
use wasm_bindgen::JsValue;
use wasm_bindgen_test::*;

wasm_bindgen_test_configure!(run_in_browser);

#[path = "browser_store/frozen.rs"]
mod frozen;

// ---------------------------------------------------------------------------------------
// the store contract, on each store

mod contract_on_indexeddb {
    use super::*;

    macro_rules! on_indexeddb {
        ($check:ident) => {
            #[wasm_bindgen_test]
            async fn $check() {
                let db = db_name(stringify!($check));
                store_contract::$check::<IndexedDbStore>(&db).await;
                cleanup(&db).await;
            }
        };
    }

    store_contract::for_each_check!(on_indexeddb);
}

mod contract_on_remote {
    use super::*;
    use store_contract::remote::Remote;

    macro_rules! on_remote {
        ($check:ident) => {
            #[wasm_bindgen_test]
            async fn $check() {
                let db = db_name(stringify!($check));
                store_contract::$check::<Remote>(&db).await;
            }
        };
    }

    store_contract::for_each_check!(on_remote);
}

mod contract_on_memory {
    use super::*;

    macro_rules! on_memory {
        ($check:ident) => {
            #[wasm_bindgen_test]
            async fn $check() {
                let db = db_name(stringify!($check));
                store_contract::$check::<MemoryStore>(&db).await;
                MemoryStore::drop_database(&db);
            }
        };
    }

    store_contract::for_each_check!(on_memory);
}

// ---------------------------------------------------------------------------------------
// helpers

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

fn stringify(v: &JsValue) -> String {
    js_sys::JSON::stringify(v)
        .expect("stringify")
        .as_string()
        .unwrap_or_default()
}

// ---------------------------------------------------------------------------------------
// IndexedDB only: the stored shape, later schema versions, refused opens

#[wasm_bindgen_test]
async fn the_stored_shape_is_the_documented_one() {
    let name = db_name("shape");
    let s = open(&name).await;
    let m = msg(1, "hello");
    s.commit("a", 0, &append(vec![m.clone()]), &w(), 1.0)
        .await
        .unwrap();
    let db = raw(&name).await;
    assert_eq!(db.version(), 3.0);
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
    // Audit records: the same row shape in their own object store, counted by the record.
    let inputs = serde_json::Map::new();
    let mut c = append(vec![]);
    c.audit = vec![AuditRecord::requested(
        1,
        "c1",
        "delete_file",
        None,
        &inputs,
        10,
    )];
    s.commit("a", 1, &c, &w(), 2.0).await.unwrap();
    let record = raw_get(&db, "threads", JsValue::from_str("a"))
        .await
        .unwrap();
    assert_eq!(
        js_sys::Reflect::get(&record, &"auditCount".into()).unwrap(),
        JsValue::from_f64(1.0)
    );
    let row = raw_get(&db, "audit", row_key("a", 1.0)).await.unwrap();
    assert_eq!(
        stringify(&row),
        format!(
            r#"{{"thread":"a","seq":1,"json":{}}}"#,
            serde_json::to_string(&serde_json::to_string(&c.audit[0]).unwrap()).unwrap()
        )
    );
    // Deleting the thread deletes its rows in both stores, not its neighbours'.
    s.commit("b", 0, &append(vec![msg(1, "b")]), &w(), 3.0)
        .await
        .unwrap();
    s.delete("a").await.unwrap();
    assert!(
        raw_get(&db, "threads", JsValue::from_str("a"))
            .await
            .is_none()
    );
    assert!(raw_get(&db, "messages", row_key("a", 1.0)).await.is_none());
    assert!(raw_get(&db, "audit", row_key("a", 1.0)).await.is_none());
    assert!(raw_get(&db, "messages", row_key("b", 1.0)).await.is_some());
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
