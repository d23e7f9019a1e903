//! Rows (messages and audit records): paged backwards from the last, oldest first; written
//! with their commit; listed and deleted with their thread.

use super::*;

pub async fn pages_read_backwards_from_the_tail_oldest_first<S: ContractStore>(db: &str) {
    let s = S::open(db).await;
    let msgs: Vec<Message> = (1..=25).map(|i| msg(i, &format!("m{i}"))).collect();
    s.commit("a", 0, &append(msgs), &w(), 1.0).await.unwrap();
    // Threads whose ids sort next to this one's: their rows must not leak in.
    s.commit("a2", 0, &append(vec![msg(100, "other")]), &w(), 1.0)
        .await
        .unwrap();
    s.commit("", 0, &append(vec![msg(101, "empty id")]), &w(), 1.0)
        .await
        .unwrap();
    let page = |before, limit| messages(&s, "a", before, limit);
    let last = page(None, 10).await;
    assert_eq!(seqs(&last), (16..=25).collect::<Vec<_>>());
    assert_eq!(last[0].message().unwrap().text(), "m16");
    assert_eq!(last[9].message().unwrap(), msg(25, "m25"));
    assert_eq!(
        seqs(&page(Some(16), 10).await),
        (6..=15).collect::<Vec<_>>()
    );
    assert_eq!(seqs(&page(Some(6), 10).await), (1..=5).collect::<Vec<_>>());
    assert_eq!(seqs(&page(Some(3), 10).await), [1, 2]);
    assert!(
        page(Some(1), 10).await.is_empty(),
        "nothing before the first"
    );
    assert!(page(Some(0), 10).await.is_empty());
    assert!(page(None, 0).await.is_empty());
    assert_eq!(
        seqs(&page(Some(1000), 3).await),
        [23, 24, 25],
        "from the tail"
    );
    assert_eq!(page(None, 1000).await.len(), 25);
    assert!(messages(&s, "nope", None, 10).await.is_empty());
    assert_eq!(texts(&messages(&s, "a2", None, 10).await), ["other"]);
    assert_eq!(texts(&messages(&s, "", None, 10).await), ["empty id"]);
    // Paging back to the start, page by page, gives every message once, in order.
    let mut all = Vec::new();
    let mut before = None;
    loop {
        let p = page(before, 7).await;
        let Some(first) = p.first() else { break };
        before = Some(first.seq);
        all.splice(0..0, p);
    }
    assert_eq!(seqs(&all), (1..=25).collect::<Vec<_>>());
}

/// The audit trail (docs/design.md, "The audit trail") is written by the commit it belongs
/// to — all of it with the record, or none of it — paged like messages, and deleted with the
/// thread.
pub async fn the_audit_trail_is_written_with_its_commit_and_deleted_with_its_thread<
    S: ContractStore,
>(
    db: &str,
) {
    let s = S::open(db).await;
    let inputs = serde_json::json!({"path": "/a"})
        .as_object()
        .unwrap()
        .clone();
    let mut records: Vec<AuditRecord> = (1..=3)
        .map(|seq| {
            AuditRecord::requested(seq, &format!("c{seq}"), "delete_file", None, &inputs, 10)
        })
        .collect();
    // Three gated calls, each with its record (as an engine writes them).
    let (call, run) = gated_call(2, &["c1", "c2", "c3"], 1, 10);
    let mut c = append(vec![msg(1, "go"), call]);
    c.run = Some(run);
    c.audit = records.clone();
    let r = s.commit("t", 0, &c, &w(), 1.0).await.unwrap();
    assert_eq!(r.audit_count, 3);
    assert_eq!(s.record("t", 0.0).await.unwrap().audit_count, 3);
    // A later commit replaces a record by its seq.
    let r0 = &mut records[0];
    (r0.decision, r0.reject_reason) = (Some(AuditDecision::Rejected), Some("no".into()));
    (r0.decided_at, r0.decided_by) = (Some(20), Some("ann".into()));
    (r0.outcome, r0.ended_at) = (Some(AuditOutcome::Rejected), Some(20));
    let mut c = append(vec![msg(2, "more")]);
    c.audit = vec![records[0].clone()];
    let r = s.commit("t", 1, &c, &w(), 2.0).await.unwrap();
    assert_eq!(r.audit_count, 3, "a replaced record adds nothing");
    let page = audit_rows(&s, "t", None, 10).await;
    assert_eq!(seqs(&page), [1, 2, 3]);
    let back: Vec<AuditRecord> = page
        .iter()
        .map(|r| serde_json::from_str(&r.json).expect("record json"))
        .collect();
    let mut expected = records.clone();
    for r in expected.iter_mut().filter(|r| r.decision.is_some()) {
        // A checked store keeps who decided as it knows it (nobody decided here through it).
        if S::CHECKED {
            r.decided_by = None;
        }
    }
    assert_eq!(back, expected);
    assert_eq!(seqs(&audit_rows(&s, "t", Some(3), 1).await), [2]);
    assert_eq!(seqs(&audit_rows(&s, "t", None, 2).await), [2, 3]);
    // A stale commit writes no record, and neither does one refused for a lease.
    let mut stale = append(vec![msg(3, "stale")]);
    let mut changed = records[1].clone();
    changed.decided_by = Some("stale".into());
    stale.audit = vec![
        changed,
        AuditRecord::requested(4, "c4", "x", None, &inputs, 30),
    ];
    assert!(matches!(
        s.commit("t", 1, &stale, &w(), 3.0).await,
        Err(StoreError::Conflict { .. })
    ));
    s.commit(
        "u",
        0,
        &append(vec![]),
        &Writer::new("a", false, true, 0.0),
        0.0,
    )
    .await
    .unwrap();
    assert!(matches!(
        s.commit("u", 1, &stale, &w(), 3.0).await,
        Err(StoreError::Owned { .. })
    ));
    assert_eq!(s.record("t", 0.0).await.unwrap().audit_count, 3);
    let second = &audit_rows(&s, "t", Some(3), 1).await[0];
    assert_eq!(
        serde_json::from_str::<AuditRecord>(&second.json).unwrap(),
        records[1]
    );
    assert_eq!(seqs(&audit_rows(&s, "t", None, 10).await), [1, 2, 3]);
    assert!(audit_rows(&s, "u", None, 10).await.is_empty());
    // Deleted with the thread: a thread of the same id starts with an empty trail.
    s.delete("t").await.unwrap();
    assert!(audit_rows(&s, "t", None, 10).await.is_empty());
    let (call, run) = gated_call(2, &["n1"], 1, 40);
    let mut again = append(vec![msg(1, "again"), call]);
    again.run = Some(run);
    again.audit = vec![AuditRecord::requested(1, "n1", "x", None, &inputs, 40)];
    let r = s.commit("t", 0, &again, &w(), 4.0).await.unwrap();
    assert_eq!(r.audit_count, 1);
    let rows = audit_rows(&s, "t", None, 10).await;
    assert_eq!(
        serde_json::from_str::<AuditRecord>(&rows[0].json).unwrap(),
        again.audit[0]
    );
    assert_eq!(rows.len(), 1);
}

pub async fn list_and_delete<S: ContractStore>(db: &str) {
    let s = S::open(db).await;
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
    let listed = s.list().await.unwrap();
    assert_eq!(ids(&listed), ["a", "b", "c"], "by id");
    assert_eq!(listed[0], s.load("a", 0.0).await.unwrap().record);
    s.delete("b").await.unwrap();
    assert_eq!(ids(&s.list().await.unwrap()), ["a", "c"]);
    let gone = s.load("b", 10.0).await.unwrap();
    assert_eq!(gone.record, ThreadRecord::new("b", 10.0));
    assert!(gone.tail.is_none());
    assert!(messages(&s, "b", None, 10).await.is_empty());
    // The neighbours' rows are kept.
    assert_eq!(texts(&messages(&s, "a", None, 10).await), ["a", "x"]);
    assert_eq!(texts(&messages(&s, "c", None, 10).await), ["c", "x"]);
    // Deleting twice, or a thread that never was, is fine.
    s.delete("b").await.unwrap();
    s.delete("never").await.unwrap();
    // A deleted thread starts again at version 0, and none of its rows are left: a one-row
    // thread of the same id takes a second message (an append over a row is refused).
    let r = s
        .commit("b", 0, &append(vec![msg(7, "again")]), &w(), 11.0)
        .await
        .unwrap();
    assert_eq!((r.version, r.message_count, r.created_at), (1, 1, 11.0));
    s.commit("b", 1, &append(vec![msg(8, "and again")]), &w(), 12.0)
        .await
        .unwrap();
    assert_eq!(
        texts(&messages(&s, "b", None, 10).await),
        ["again", "and again"]
    );
}
