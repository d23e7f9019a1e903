//! The commit rule (docs/design.md, "Stored data"): a commit lands whole from the version it
//! was made from, or is a conflict that writes nothing; a tail rewrite names the stored tail;
//! the record counts what it holds.

use super::*;

pub async fn a_new_thread_has_version_zero_and_no_tail<S: ContractStore>(db: &str) {
    let s = S::open(db).await;
    let snap = s.load("a", 1.0).await.unwrap();
    assert_eq!(snap.record, ThreadRecord::new("a", 1.0));
    assert!(snap.tail.is_none());
    assert_eq!(
        s.record("a", 2.0).await.unwrap(),
        ThreadRecord::new("a", 2.0)
    );
    assert!(s.list().await.unwrap().is_empty(), "reading writes nothing");
    assert!(messages(&s, "a", None, 10).await.is_empty());
    assert!(audit_rows(&s, "a", None, 10).await.is_empty());
}

pub async fn commits_append_and_load_returns_the_record_and_the_tail<S: ContractStore>(db: &str) {
    let s = S::open(db).await;
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
    assert_eq!(r1.title.as_deref(), Some("hello"), "the first user message");
    assert_eq!((r1.created_at, r1.updated_at), (5.0, 5.0));
    assert_eq!(r1.schema_version, SCHEMA_VERSION);
    let snap = s.load("a", 9.0).await.unwrap();
    assert_eq!(snap.record, r1);
    assert_eq!(snap.tail, Some(msg(2, "world")));
    assert_eq!(s.record("a", 9.0).await.unwrap(), r1);
    let r2 = s
        .commit("a", 1, &append(vec![msg(3, "again")]), &w(), 6.0)
        .await
        .unwrap();
    assert_eq!(
        (r2.version, r2.message_count, r2.created_at, r2.updated_at),
        (2, 3, 5.0, 6.0)
    );
    assert_eq!(r2.title.as_deref(), Some("hello"), "the title stays");
    assert_eq!(s.load("a", 9.0).await.unwrap().tail, Some(msg(3, "again")));
    assert_eq!(s.list().await.unwrap(), vec![r2]);
}

pub async fn a_stale_commit_is_a_conflict_and_writes_nothing<S: ContractStore>(db: &str) {
    let s = S::open(db).await;
    s.commit("a", 0, &append(vec![msg(1, "hello")]), &w(), 1.0)
        .await
        .unwrap();
    s.commit("a", 1, &append(vec![msg(2, "second")]), &w(), 2.0)
        .await
        .unwrap();
    let mut stale = append(vec![msg(3, "stale"), msg(4, "stale too")]);
    stale
        .policies
        .insert("search".into(), policy(Some(false), None));
    stale.run = Some(RunJournal::new(MessageId::from_number(4)));
    let e = s.commit("a", 1, &stale, &w(), 3.0).await.unwrap_err();
    assert_eq!(
        e,
        StoreError::Conflict {
            expected: 1,
            found: 2
        }
    );
    assert_eq!((e.code(), e.retryable()), ("conflict", true));
    let snap = s.load("a", 4.0).await.unwrap();
    assert_eq!((snap.record.version, snap.record.message_count), (2, 2));
    assert_eq!(snap.record.updated_at, 2.0);
    assert!(snap.record.policies.is_empty() && snap.record.run.is_none());
    assert_eq!(snap.tail.unwrap().text(), "second");
    assert_eq!(seqs(&messages(&s, "a", None, 10).await), vec![1, 2]);
    // No row was written past the tail either: an append over one would be refused.
    let r = s
        .commit("a", 2, &append(vec![msg(3, "third")]), &w(), 5.0)
        .await
        .unwrap();
    assert_eq!((r.version, r.message_count), (3, 3));
    // A commit from a version a thread never had, on a thread that does not exist.
    assert_eq!(
        s.commit("b", 4, &append(vec![msg(1, "x")]), &w(), 5.0)
            .await,
        Err(StoreError::Conflict {
            expected: 4,
            found: 0
        })
    );
    assert_eq!(ids(&s.list().await.unwrap()), ["a"]);
    assert_eq!(s.load("b", 6.0).await.unwrap().record.version, 0);
}

pub async fn two_handles_on_one_database_are_two_tabs<S: ContractStore>(db: &str) {
    let tab_a = S::open(db).await;
    let tab_b = S::open(db).await;
    tab_a
        .commit("t", 0, &append(vec![msg(1, "hello")]), &w(), 1.0)
        .await
        .unwrap();
    assert_eq!(tab_b.load("t", 2.0).await.unwrap().record.version, 1);
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
        texts(&messages(&tab_b, "t", None, 10).await),
        ["hello", "from tab B", "from tab A"]
    );
}

/// Both commits are under way before either is answered (for IndexedDB: both transactions
/// are queued before either runs); the store runs them one at a time.
pub async fn two_handles_committing_at_once_cannot_both_win<S: ContractStore>(db: &str) {
    let a = S::open(db).await;
    let b = S::open(db).await;
    let (ca, cb) = (append(vec![msg(1, "A")]), append(vec![msg(1, "B")]));
    let (ra, rb) = both(
        a.commit("t", 0, &ca, &w(), 1.0),
        b.commit("t", 0, &cb, &w(), 1.0),
    )
    .await;
    let winner = match (&ra, &rb) {
        (Ok(_), Err(StoreError::Conflict { .. })) => "A",
        (Err(StoreError::Conflict { .. }), Ok(_)) => "B",
        _ => panic!("exactly one wins: {ra:?} {rb:?}"),
    };
    let snap = a.load("t", 2.0).await.unwrap();
    assert_eq!((snap.record.version, snap.record.message_count), (1, 1));
    assert_eq!(snap.tail.unwrap().text(), winner);
}

pub async fn a_tail_rewrite_keeps_its_seq_and_must_name_the_stored_tail<S: ContractStore>(
    db: &str,
) {
    let s = S::open(db).await;
    s.commit(
        "a",
        0,
        &append(vec![msg(1, "one"), msg(2, "two")]),
        &w(),
        1.0,
    )
    .await
    .unwrap();
    let mut c = rewrite(msg(2, "two, edited"));
    c.run = Some(RunJournal::new(MessageId::from_number(2)));
    let r = s.commit("a", 1, &c, &w(), 2.0).await.unwrap();
    assert_eq!((r.version, r.message_count), (2, 2));
    assert!(r.run.is_some());
    assert_eq!(
        s.load("a", 3.0).await.unwrap().tail.unwrap().text(),
        "two, edited"
    );
    let rows = messages(&s, "a", None, 10).await;
    assert_eq!(seqs(&rows), [1, 2]);
    assert_eq!(texts(&rows), ["one", "two, edited"]);
    // A rewrite plus appends: the tail in place, the new ones after it.
    let mut c = rewrite(msg(2, "two, final"));
    c.append.push(msg(3, "three"));
    let r = s.commit("a", 2, &c, &w(), 4.0).await.unwrap();
    assert_eq!((r.version, r.message_count), (3, 3));
    assert_eq!(
        texts(&messages(&s, "a", None, 10).await),
        ["one", "two, final", "three"]
    );
    // Naming a message that is not the tail: a conflict, nothing written.
    assert!(matches!(
        s.commit("a", 3, &rewrite(msg(1, "not the tail")), &w(), 5.0)
            .await,
        Err(StoreError::Conflict { .. })
    ));
    // Rewriting the tail of an empty thread.
    assert!(matches!(
        s.commit("b", 0, &rewrite(msg(1, "nothing to rewrite")), &w(), 5.0)
            .await,
        Err(StoreError::Conflict { .. })
    ));
    let snap = s.load("a", 6.0).await.unwrap();
    assert_eq!((snap.record.version, snap.record.message_count), (3, 3));
    assert_eq!(snap.tail.unwrap().text(), "three");
    assert_eq!(
        texts(&messages(&s, "a", None, 10).await),
        ["one", "two, final", "three"]
    );
    assert_eq!(ids(&s.list().await.unwrap()), ["a"]);
}

pub async fn the_record_counts_the_tails_pending_approvals_and_keeps_the_status<
    S: ContractStore,
>(
    db: &str,
) {
    let s = S::open(db).await;
    let mut gated = ToolEntry::new("c1", "delete_file");
    gated.approval = Some(Approval::pending(None));
    let mut also = ToolEntry::new("c3", "delete_file");
    also.approval = Some(Approval::pending(Some("why".into())));
    let call = Message::tool_call(
        MessageId::from_number(2),
        "",
        vec![gated, ToolEntry::new("c2", "x"), also],
    );
    let mut journal = RunJournal::new(call.id.clone());
    journal.gate("c1");
    journal.gate("c3");
    let mut c = append(vec![msg(1, "go"), call.clone()]);
    c.run = Some(journal.clone());
    c.status = ThreadStatus::AwaitingApproval;
    let r = s.commit("a", 0, &c, &w(), 1.0).await.unwrap();
    assert_eq!(r.pending_approvals, 2);
    assert_eq!(r.status(), ThreadStatus::AwaitingApproval);
    // A call stops waiting as an engine writes it without a person: its late result arrived
    // (a checked store refuses an approval a write makes up).
    let mut decided = call;
    decided.tool_calls_mut().unwrap()[0]
        .approval
        .as_mut()
        .unwrap()
        .state = ApprovalState::Approved;
    journal.record("c1", "done".into());
    let mut c = rewrite(decided.clone());
    c.run = Some(journal.clone());
    c.status = ThreadStatus::AwaitingApproval;
    assert_eq!(
        s.commit("a", 1, &c, &w(), 2.0)
            .await
            .unwrap()
            .pending_approvals,
        1
    );
    // A commit that writes no message keeps the count, and stores its own status.
    let mut c = append(vec![]);
    c.run = Some(journal.clone());
    c.status = ThreadStatus::Interrupted;
    let r = s.commit("a", 2, &c, &w(), 3.0).await.unwrap();
    assert_eq!((r.pending_approvals, r.message_count), (1, 2));
    let listed = s.list().await.unwrap();
    assert_eq!(listed[0].status(), ThreadStatus::Interrupted);
    assert_eq!(listed[0].status.as_deref(), Some("interrupted"));
    decided.tool_calls_mut().unwrap()[2]
        .approval
        .as_mut()
        .unwrap()
        .state = ApprovalState::Approved;
    journal.record("c3", "done".into());
    let mut c = rewrite(decided);
    c.run = Some(journal);
    let r = s.commit("a", 3, &c, &w(), 4.0).await.unwrap();
    assert_eq!((r.pending_approvals, r.status()), (0, ThreadStatus::Idle));
}

pub async fn policies_the_run_journal_the_request_size_and_mcp_tools_round_trip<
    S: ContractStore,
>(
    db: &str,
) {
    let s = S::open(db).await;
    let call = Message::tool_call(
        MessageId::from_number(2),
        "let me look",
        vec![
            ToolEntry::new("toolu_01", "search"),
            ToolEntry::new("toolu_02", "delete_logs"),
        ],
    );
    let mut c = append(vec![msg(1, "Clean up the old logs"), call.clone()]);
    c.policies
        .insert("search".into(), policy(Some(true), Some(true)));
    c.policies
        .insert("delete_logs".into(), policy(Some(false), None));
    let mut run = RunJournal::new(MessageId::from_number(2));
    run.results.push(CallResult {
        call_id: "toolu_02".into(),
        result: "TOOL NOT EXECUTED. \"quoted\", ünïcødé, 🚀".into(),
    });
    run.started = Some("toolu_01".into());
    run.gated = vec!["toolu_02".into()];
    c.run = Some(run.clone());
    c.request_size = Some(RequestSize {
        answer: MessageId::from_number(2).to_string(),
        tokens: 1234,
    });
    // The MCP tool lists, in the servers' own JSON (docs/design.md, "MCP tools").
    c.mcp_tools = Some(
        serde_json::json!({ "files": [{ "name": "read_file", "title": "Read",
        "inputSchema": { "type": "object", "properties": { "path": { "type": "string",
        "maxLength": 3, "minLength": 0.5 } } }, "annotations": { "readOnlyHint": true } }] }),
    );
    // A call marked started is its run's, which holds the lease.
    let running = Writer::new("test-agent", false, true, 1.0);
    let r = s.commit("t", 0, &c, &running, 1.0).await.unwrap();
    let snap = s.load("t", 2.0).await.unwrap();
    assert_eq!(snap.record, r);
    assert_eq!(snap.record.policies, c.policies);
    assert_eq!(snap.record.run, Some(run.clone()));
    assert_eq!(snap.record.request_size, c.request_size);
    assert_eq!(snap.record.mcp_tools, c.mcp_tools);
    assert_eq!(snap.tail, Some(call.clone()));
    assert_eq!(snap.state().policies, c.policies);
    // Another thread inherits nothing.
    let other = s.load("u", 2.0).await.unwrap().record;
    assert!(other.policies.is_empty() && other.run.is_none());
    // Clearing the journal (with the results message that ends a run) and a policy; a commit
    // without a request size keeps the last one.
    let results: Vec<ToolEntry> = call
        .tool_calls()
        .unwrap()
        .iter()
        .map(|e| {
            let mut r = e.clone();
            r.result = Some(run.result(&e.call_id).unwrap_or("done").to_owned());
            r
        })
        .collect();
    let mut c2 = append(vec![Message::tool_call_result(
        MessageId::from_number(3),
        results,
    )]);
    c2.policies = c.policies.clone();
    c2.policies.remove("delete_logs");
    let r2 = s.commit("t", 1, &c2, &w(), 3.0).await.unwrap();
    let snap = s.load("t", 4.0).await.unwrap();
    assert_eq!(snap.record, r2);
    assert!(snap.record.run.is_none());
    assert_eq!(snap.record.policies.len(), 1);
    assert_eq!(snap.record.request_size, c.request_size);
    assert_eq!(
        snap.record.mcp_tools, c.mcp_tools,
        "kept by a commit without lists"
    );
}

/// Rows hold each message's JSON text as written: key order, unknown metadata and all.
pub async fn messages_keep_their_json_text_exactly<S: ContractStore>(db: &str) {
    let s = S::open(db).await;
    let mut m = Message::tool_call(
        MessageId::from_number(1),
        "",
        vec![ToolEntry::new("toolu_01", "search")],
    );
    m.set_meta(
        "note",
        serde_json::json!({"z": 1, "a": [true, null], "m": "ünï"}),
    );
    let plain = Message::assistant_text(MessageId::from_number(2), "[not] {json} \"q\"");
    s.commit("a", 0, &append(vec![m.clone(), plain.clone()]), &w(), 1.0)
        .await
        .unwrap();
    let rows = messages(&s, "a", None, 10).await;
    assert_eq!(rows[0].json, m.to_json_string());
    assert_eq!(rows[1].json, plain.to_json_string());
    assert_eq!(rows[0].message().unwrap(), m);
    assert_eq!(s.load("a", 2.0).await.unwrap().tail, Some(plain));
}

/// A run of commits, conflicts among them, over three threads: every outcome, then every
/// record field, pinned.
pub async fn a_sequence_of_commits_leaves_exactly_the_expected_records<S: ContractStore>(db: &str) {
    let s = S::open(db).await;
    let mut policies = ToolPolicies::new();
    policies.insert("search".into(), policy(Some(false), None));
    let with = |mut c: Commit| {
        c.policies = policies.clone();
        c
    };
    let call = Message::tool_call(
        MessageId::from_number(3),
        "",
        vec![ToolEntry::new("toolu_01", "search")],
    );
    let mut journal = RunJournal::new(MessageId::from_number(3));
    let mut c2 = with(append(vec![call.clone()]));
    c2.run = Some(journal.clone());
    c2.status = ThreadStatus::AwaitingToolResults;
    let mut edited = call.clone();
    edited.set_meta("note", serde_json::json!({"z": 1}));
    let mut c3 = with(rewrite(edited));
    journal.record("toolu_01", "found it".into());
    c3.run = Some(journal);
    let mut found = ToolEntry::new("toolu_01", "search");
    found.result = Some("found it".into());
    let result = Message::tool_call_result(MessageId::from_number(4), vec![found]);
    let steps: Vec<(&str, u64, Commit)> = vec![
        (
            "a",
            0,
            with(append(vec![msg(1, "Find the report"), msg(2, "Sure.")])),
        ),
        ("a", 1, c2),
        ("a", 2, c3),
        ("a", 2, append(vec![msg(9, "stale")])),
        ("a", 3, rewrite(msg(2, "not the tail"))),
        (
            "a",
            3,
            with(append(vec![
                result,
                Message::assistant_text(MessageId::from_number(5), "Here."),
            ])),
        ),
        ("b", 0, append(vec![msg(10, "another thread")])),
        ("b", 7, append(vec![msg(11, "stale")])),
        ("c", 0, append(vec![])),
    ];
    let mut outcomes = Vec::new();
    for (i, (thread, version, commit)) in steps.iter().enumerate() {
        let r = s
            .commit(thread, *version, commit, &w(), 1000.0 + i as f64)
            .await;
        outcomes.push(
            r.map(|r| (r.version, r.message_count))
                .map_err(|e| e.code()),
        );
    }
    assert_eq!(
        outcomes,
        [
            Ok((1, 2)),
            Ok((2, 3)),
            Ok((3, 3)),
            Err("conflict"),
            Err("conflict"),
            Ok((4, 5)),
            Ok((1, 1)),
            Err("conflict"),
            Ok((1, 0)),
        ]
    );
    let record = |id: &str, version, created_at, updated_at, message_count, title: Option<&str>| {
        ThreadRecord {
            version,
            updated_at,
            message_count,
            title: title.map(str::to_owned),
            status: Some("idle".into()),
            ..ThreadRecord::new(id, created_at)
        }
    };
    let a = ThreadRecord {
        policies: policies.clone(),
        ..record("a", 4, 1000.0, 1005.0, 5, Some("Find the report"))
    };
    let b = record("b", 1, 1006.0, 1006.0, 1, Some("another thread"));
    let c = record("c", 1, 1008.0, 1008.0, 0, None);
    assert_eq!(s.list().await.unwrap(), [a.clone(), b, c.clone()]);
    assert_eq!(s.load("a", 0.0).await.unwrap().record, a);
    assert_eq!(s.load("c", 0.0).await.unwrap().tail, None);
    assert_eq!(
        texts(&messages(&s, "a", None, 100).await),
        ["Find the report", "Sure.", "", "", "Here."]
    );
    s.delete("b").await.unwrap();
    assert_eq!(s.list().await.unwrap(), [a, c]);
}

pub async fn a_new_handle_sees_everything_a_dropped_one_wrote<S: ContractStore>(db: &str) {
    let s = S::open(db).await;
    let (tail, run) = gated_call(2, &["c1"], 1, 10);
    let mut c = append(vec![msg(1, "before the reload"), tail.clone()]);
    c.run = Some(run);
    c.policies.insert("search".into(), policy(None, Some(true)));
    c.audit = vec![AuditRecord::requested(
        1,
        "c1",
        "delete_file",
        None,
        &serde_json::Map::new(),
        10,
    )];
    let written = s.commit("a", 0, &c, &w(), 1.0).await.unwrap();
    let page_before = messages(&s, "a", None, 10).await;
    let audit_before = audit_rows(&s, "a", None, 10).await;
    drop(s); // a page reload
    let s = S::open(db).await;
    let snap = s.load("a", 99.0).await.unwrap();
    assert_eq!(snap.record, written);
    assert_eq!(snap.tail, Some(tail));
    assert_eq!(messages(&s, "a", None, 10).await, page_before);
    assert_eq!(audit_rows(&s, "a", None, 10).await, audit_before);
    assert_eq!(s.list().await.unwrap(), vec![written]);
    // And it is still writable from the version it had.
    s.commit("a", 1, &append(vec![msg(3, "after")]), &w(), 2.0)
        .await
        .unwrap();
}
