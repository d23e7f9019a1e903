//! Data changed outside Gatehouse (a newer release, a damaged disk, a hand edit), made by
//! each store's own [`ContractStore::change_outside`]: read where it can be, refused where a
//! write would lose something, `Corrupt` where it cannot be read, and never a panic.

use super::*;

pub async fn a_record_of_a_newer_release_is_read_but_never_written<S: ContractStore>(db: &str) {
    let s = S::open(db).await;
    let written = s
        .commit(
            "f",
            0,
            &append(vec![msg(1, "from the future")]),
            &Writer::new("a", false, true, 0.0),
            0.0,
        )
        .await
        .unwrap();
    let newer = SCHEMA_VERSION + 1;
    s.change_outside("f", Outside::SchemaVersion(newer))
        .await
        .expect("every store can hold a record of a later schema version");
    let snap = s.load("f", 0.0).await.unwrap();
    assert_eq!(snap.record.schema_version, newer);
    assert_eq!((snap.record.version, snap.record.message_count), (1, 1));
    assert_eq!(snap.tail.unwrap().text(), "from the future");
    assert_eq!(ids(&s.list().await.unwrap()), ["f"]);
    // Not even its own lease's owner writes it, renews it or clears it.
    let e = s
        .commit(
            "f",
            1,
            &append(vec![msg(2, "x")]),
            &Writer::new("a", false, false, 1.0),
            1.0,
        )
        .await
        .unwrap_err();
    assert_eq!(e, StoreError::Newer(newer));
    assert_eq!((e.code(), e.retryable()), ("storage", false));
    assert_eq!(s.renew("f", "a", 99.0).await, Err(StoreError::Newer(newer)));
    s.release("f", "a").await.unwrap();
    let after = s.load("f", 2.0).await.unwrap().record;
    assert_eq!(
        after,
        ThreadRecord {
            schema_version: newer,
            ..written
        }
    );
    assert_eq!(seqs(&messages(&s, "f", None, 10).await), [1]);
}

pub async fn an_unreadable_tail_is_corrupt_and_cannot_be_rewritten<S: ContractStore>(db: &str) {
    let s = S::open(db).await;
    s.commit(
        "a",
        0,
        &append(vec![msg(1, "fine"), msg(2, "tail")]),
        &w(),
        1.0,
    )
    .await
    .unwrap();
    s.change_outside("a", Outside::UnreadableRow(2))
        .await
        .expect("every store can hold a row of any text");
    assert!(matches!(
        s.load("a", 0.0).await,
        Err(StoreError::Corrupt(_))
    ));
    assert_eq!(s.record("a", 0.0).await.unwrap().message_count, 2);
    // Pages hand rows out as text: the bad one fails when it is read, the first is fine.
    let rows = messages(&s, "a", None, 5).await;
    assert_eq!(seqs(&rows), [1, 2]);
    assert!(matches!(rows[1].message(), Err(StoreError::Corrupt(_))));
    assert_eq!(texts(&messages(&s, "a", Some(2), 5).await), ["fine"]);
    assert_eq!(ids(&s.list().await.unwrap()), ["a"]);
    // An unreadable tail has no id: a rewrite cannot name it, and writes nothing.
    assert!(matches!(
        s.commit("a", 1, &rewrite(msg(2, "fixed")), &w(), 2.0).await,
        Err(StoreError::Conflict { .. })
    ));
    assert_eq!(s.record("a", 0.0).await.unwrap().version, 1);
    assert!(matches!(
        s.load("a", 0.0).await,
        Err(StoreError::Corrupt(_))
    ));
    // Deleting the thread is the way out.
    s.delete("a").await.unwrap();
    assert_eq!(s.load("a", 0.0).await.unwrap().record.version, 0);
}

pub async fn a_record_counting_missing_rows_is_corrupt<S: ContractStore>(db: &str) {
    let s = S::open(db).await;
    s.commit(
        "hole",
        0,
        &append(vec![msg(1, "one"), msg(2, "two")]),
        &w(),
        1.0,
    )
    .await
    .unwrap();
    s.change_outside("hole", Outside::MessageCount(3))
        .await
        .expect("every store can hold a record whatever its rows");
    assert!(matches!(
        s.load("hole", 0.0).await,
        Err(StoreError::Corrupt(_))
    ));
    for (before, limit) in [(None, 5), (None, 1), (Some(4), 2)] {
        let r = s.rows(Rows::Messages, "hole", before, limit).await;
        assert!(
            matches!(r, Err(StoreError::Corrupt(_))),
            "{before:?} {limit}: {r:?}"
        );
    }
    // The rows that exist are still read.
    assert_eq!(
        texts(&messages(&s, "hole", Some(3), 5).await),
        ["one", "two"]
    );
    assert_eq!(ids(&s.list().await.unwrap()), ["hole"]);
}

/// The record counts fewer messages than are stored (the count was lowered outside
/// Gatehouse): an append would overwrite a message, so it is refused and writes nothing.
/// IndexedDB reads the rows it checks at the count it last saw with this handle together with
/// the record; the count read in the commit's own transaction must decide.
pub async fn an_append_over_a_row_after_the_tail_is_refused_and_writes_nothing<S: ContractStore>(
    db: &str,
) {
    let s = S::open(db).await;
    let r = s
        .commit("a", 0, &append(vec![msg(1, "a"), msg(2, "b")]), &w(), 1.0)
        .await
        .unwrap();
    assert_eq!((r.version, r.message_count), (1, 2));
    s.change_outside("a", Outside::MessageCount(1))
        .await
        .expect("every store can hold a record whatever its rows");
    let e = s
        .commit("a", 1, &append(vec![msg(3, "c")]), &w(), 2.0)
        .await
        .unwrap_err();
    assert!(matches!(e, StoreError::Corrupt(_)), "{e:?}");
    assert_eq!(e.code(), "storage");
    let snap = s.load("a", 3.0).await.unwrap();
    assert_eq!((snap.record.version, snap.record.message_count), (1, 1));
    assert_eq!(snap.tail.unwrap().text(), "a");
    // The row after the tail is the one written first, untouched.
    assert_eq!(seqs(&messages(&s, "a", None, 5).await), [1]);
    s.change_outside("a", Outside::MessageCount(2))
        .await
        .expect("every store can hold a record whatever its rows");
    let rows = messages(&s, "a", None, 5).await;
    assert_eq!(rows[1].json, msg(2, "b").to_json_string());
    // A commit that appends nothing (a policy change, a tail rewrite) touches no such row.
    s.change_outside("a", Outside::MessageCount(1))
        .await
        .expect("every store can hold a record whatever its rows");
    let mut c = rewrite(msg(1, "a, edited"));
    c.policies
        .insert("search".into(), policy(Some(false), None));
    let r = s.commit("a", 1, &c, &w(), 4.0).await.unwrap();
    assert_eq!((r.version, r.message_count), (2, 1));
}

/// A record that is not a thread record (IndexedDB: a value some other program put; the
/// memory store holds typed records and cannot have one).
pub async fn an_unreadable_record_is_corrupt_and_left_out_of_the_list<S: ContractStore>(db: &str) {
    let s = S::open(db).await;
    for id in ["a", "bad"] {
        s.commit(id, 0, &append(vec![msg(1, id)]), &w(), 1.0)
            .await
            .unwrap();
    }
    if let Err(Inexpressible(why)) = s.change_outside("bad", Outside::UnreadableRecord).await {
        note!("an_unreadable_record_is_corrupt_and_left_out_of_the_list: not checked: {why}");
        return;
    }
    assert!(matches!(
        s.load("bad", 0.0).await,
        Err(StoreError::Corrupt(_))
    ));
    assert!(matches!(
        s.record("bad", 0.0).await,
        Err(StoreError::Corrupt(_))
    ));
    assert!(matches!(
        s.commit("bad", 1, &append(vec![msg(2, "x")]), &w(), 2.0)
            .await,
        Err(StoreError::Corrupt(_))
    ));
    // Left out of the list; the others are listed.
    assert_eq!(ids(&s.list().await.unwrap()), ["a"]);
    s.delete("bad").await.unwrap();
    assert_eq!(s.load("bad", 0.0).await.unwrap().record.version, 0);
}
