//! Leases (docs/design.md, "Run ownership"): each commit carries the writer's, another
//! agent's live lease refuses a write (`Writer::may_write`), renewals and releases touch only
//! the lease.

use super::*;

pub async fn a_commit_takes_the_writers_lease_and_a_last_write_clears_it<S: ContractStore>(
    db: &str,
) {
    let s = S::open(db).await;
    let a_mid = Writer::new("a", false, true, 1_000.0);
    let r = s
        .commit("t", 0, &append(vec![msg(1, "hi")]), &a_mid, 1_000.0)
        .await
        .unwrap();
    let lease = Lease {
        owner: "a".into(),
        until: 1_000.0 + LEASE_MS,
        locked: false,
    };
    assert_eq!(r.lease.as_ref(), Some(&lease));
    assert_eq!(s.record("t", 0.0).await.unwrap().lease, Some(lease));
    // The owner writes on under its lease.
    s.commit("t", 1, &append(vec![msg(2, "more")]), &a_mid, 1_500.0)
        .await
        .unwrap();
    // Another agent's write while A's lease is live: refused, nothing written.
    let b = Writer::new("b", false, false, 2_000.0);
    let e = s
        .commit("t", 2, &append(vec![msg(3, "from b")]), &b, 2_000.0)
        .await
        .unwrap_err();
    assert_eq!(e, StoreError::Owned { owner: "a".into() });
    assert_eq!((e.code(), e.retryable()), ("busy", true));
    let snap = s.load("t", 0.0).await.unwrap();
    assert_eq!((snap.record.version, snap.record.message_count), (2, 2));
    assert_eq!(snap.record.lease.unwrap().owner, "a");
    // A's last write ends the lease; then B may write.
    let a_last = Writer::new("a", false, false, 3_000.0);
    let r = s
        .commit("t", 2, &append(vec![msg(3, "done")]), &a_last, 3_000.0)
        .await
        .unwrap();
    assert_eq!(r.lease, None);
    assert_eq!(s.record("t", 0.0).await.unwrap().lease, None);
    s.commit("t", 3, &append(vec![msg(4, "from b")]), &b, 4_000.0)
        .await
        .unwrap();
}

pub async fn a_lapsed_lease_may_be_taken_over_but_only_from_the_current_version<
    S: ContractStore,
>(
    db: &str,
) {
    let s = S::open(db).await;
    s.commit(
        "t",
        0,
        &append(vec![msg(1, "hi")]),
        &Writer::new("a", false, true, 0.0),
        0.0,
    )
    .await
    .unwrap();
    let b = Writer::new("b", false, true, LEASE_MS);
    // At the lease's last moment it is still A's...
    assert!(matches!(
        s.commit("t", 1, &append(vec![msg(2, "b")]), &b, LEASE_MS - 1.0)
            .await,
        Err(StoreError::Owned { .. })
    ));
    // ...once it lapsed, a stale view still never takes over, lease or not...
    assert!(matches!(
        s.commit("t", 0, &append(vec![msg(2, "b")]), &b, LEASE_MS)
            .await,
        Err(StoreError::Conflict { .. })
    ));
    // ...and a current one does.
    let r = s
        .commit("t", 1, &append(vec![msg(2, "b")]), &b, LEASE_MS)
        .await
        .unwrap();
    assert_eq!(r.lease.unwrap().owner, "b");
    assert_eq!(r.version, 2);
}

pub async fn a_lease_written_with_the_lock_yields_only_to_a_writer_holding_the_lock<
    S: ContractStore,
>(
    db: &str,
) {
    let s = S::open(db).await;
    s.commit(
        "locked",
        0,
        &append(vec![msg(1, "hi")]),
        &Writer::new("a", true, true, 0.0),
        0.0,
    )
    .await
    .unwrap();
    if !S::WEB_LOCKS {
        // A lock held on one device proves nothing on another: the lease is stored unlocked,
        // and refuses a writer holding its own lock until it lapses.
        assert!(!s.record("locked", 0.0).await.unwrap().lease.unwrap().locked);
        let b_locked = Writer::new("b", true, true, 10.0);
        assert_eq!(
            s.commit("locked", 1, &append(vec![msg(2, "b")]), &b_locked, 10.0)
                .await,
            Err(StoreError::Owned { owner: "a".into() })
        );
        let lapsed = Writer::new("b", true, true, LEASE_MS);
        let r = s
            .commit("locked", 1, &append(vec![msg(2, "b")]), &lapsed, LEASE_MS)
            .await
            .unwrap();
        assert_eq!(r.lease.unwrap().owner, "b");
        return;
    }
    assert!(s.record("locked", 0.0).await.unwrap().lease.unwrap().locked);
    let b_unlocked = Writer::new("b", false, true, 10.0);
    assert_eq!(
        s.commit("locked", 1, &append(vec![msg(2, "b")]), &b_unlocked, 10.0)
            .await,
        Err(StoreError::Owned { owner: "a".into() })
    );
    // Holding the lock A held proves A gone.
    let b_locked = Writer::new("b", true, true, 10.0);
    let r = s
        .commit("locked", 1, &append(vec![msg(2, "b")]), &b_locked, 10.0)
        .await
        .unwrap();
    assert_eq!(r.lease.unwrap().owner, "b");
    // A lease written without the lock does not yield to the lock.
    s.commit(
        "unlocked",
        0,
        &append(vec![msg(1, "hi")]),
        &Writer::new("a", false, true, 0.0),
        0.0,
    )
    .await
    .unwrap();
    assert_eq!(
        s.commit("unlocked", 1, &append(vec![msg(2, "b")]), &b_locked, 10.0)
            .await,
        Err(StoreError::Owned { owner: "a".into() })
    );
}

pub async fn renewal_and_release_touch_only_the_owners_lease_and_never_the_version<
    S: ContractStore,
>(
    db: &str,
) {
    let s = S::open(db).await;
    let mut c = append(vec![msg(1, "hi")]);
    c.run = Some(RunJournal::new(MessageId::from_number(1)));
    let written = s
        .commit("t", 0, &c, &Writer::new("a", false, true, 0.0), 0.0)
        .await
        .unwrap();
    assert_eq!(s.renew("t", "a", 500_000.0).await, Ok(true));
    assert_eq!(s.renew("t", "b", 900_000.0).await, Ok(false));
    let r = s.load("t", 0.0).await.unwrap().record;
    assert_eq!(r.lease.as_ref().unwrap().until, 500_000.0);
    assert_eq!(
        ThreadRecord {
            lease: written.lease.clone(),
            ..r.clone()
        },
        written,
        "a renewal changes the lease's expiry and nothing else"
    );
    // Without the renewal B could have taken over at LEASE_MS.
    let b = Writer::new("b", false, true, LEASE_MS + 1.0);
    assert!(matches!(
        s.commit("t", 1, &append(vec![msg(2, "b")]), &b, LEASE_MS + 1.0)
            .await,
        Err(StoreError::Owned { .. })
    ));
    s.release("t", "b").await.unwrap();
    assert!(
        s.record("t", 0.0).await.unwrap().lease.is_some(),
        "not B's to release"
    );
    s.release("t", "a").await.unwrap();
    let r = s.load("t", 0.0).await.unwrap().record;
    assert_eq!(
        r,
        ThreadRecord {
            lease: None,
            ..written
        },
        "a release clears the lease and nothing else"
    );
    // Nothing left to renew or release; the views stay current.
    assert_eq!(s.renew("t", "a", 600_000.0).await, Ok(false));
    s.release("t", "a").await.unwrap();
    assert_eq!(s.renew("missing", "a", 1.0).await, Ok(false));
    s.release("missing", "a").await.unwrap();
    assert_eq!(s.load("missing", 0.0).await.unwrap().record.version, 0);
    s.commit("t", 1, &append(vec![msg(2, "b")]), &b, LEASE_MS + 1.0)
        .await
        .unwrap();
}
