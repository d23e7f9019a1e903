//! Transcript tests of the audit trail (docs/design.md, "The audit trail"): one record per
//! gated call with its inputs, decision, decider, run and outcome, written by the same commit
//! as the step it describes. After every run the test checks the trail against the stored
//! thread, so a record that lagged or ran ahead of the thread would fail here.

mod support;

use gatehouse_agent::engine::*;
use gatehouse_agent::store::{MemoryStore, Writer};
use gatehouse_agent::thread::ApprovalState;
use serde_json::{Map, Value, json};
use support::*;

fn obj(v: Value) -> Map<String, Value> {
    v.as_object().expect("an object").clone()
}

/// The stored record `seq`.
fn rec(h: &Harness, seq: u64) -> &AuditRecord {
    h.store
        .audit
        .iter()
        .find(|a| a.seq == seq)
        .expect("a record")
}

/// The trail agrees with the stored thread: open records are stored as the journal holds
/// them, an ended record's call has the matching result and approval, and every gated entry
/// of the tail has an open record unless it ended.
fn assert_agrees(h: &Harness) {
    let open = h.store.run.as_ref().map_or(&[][..], |r| &r.audit[..]);
    for a in open {
        let stored = rec(h, a.seq);
        assert_eq!(
            (&stored.call_id, stored.requested_at, stored.started_at),
            (&a.call_id, a.requested_at, a.started_at),
            "an open record is stored as the journal holds it"
        );
        if stored.decision.is_some() {
            assert_eq!(
                (stored.decided_at, &stored.decided_by),
                (a.decided_at, &a.decided_by)
            );
        }
        assert!(stored.outcome.is_none(), "an open record has no outcome");
    }
    let results = |call_id: &str| {
        let from_run = h
            .store
            .run
            .as_ref()
            .and_then(|r| r.result(call_id).map(str::to_owned));
        from_run.or_else(|| h.result_of(call_id))
    };
    for a in &h.store.audit {
        let Some(outcome) = a.outcome else {
            assert!(
                open.iter().any(|o| o.seq == a.seq),
                "record {} is lost",
                a.seq
            );
            continue;
        };
        assert!(a.ended_at.is_some());
        if outcome == AuditOutcome::Regated {
            continue;
        }
        let result = results(&a.call_id).expect("an ended call has its result stored");
        match outcome {
            AuditOutcome::Ok => assert!(a.inputs.is_some() && !result.contains("TOOL NOT")),
            AuditOutcome::ToolError => assert!(result.contains("error")),
            AuditOutcome::Rejected => assert!(result.starts_with("TOOL NOT EXECUTED. The user")),
            AuditOutcome::Expired => assert!(result.contains("expired")),
            AuditOutcome::Regated => unreachable!(),
        }
        if matches!(outcome, AuditOutcome::Rejected | AuditOutcome::Expired) {
            assert_eq!(a.inputs, None, "a call that never ran has no inputs run");
        }
    }
    let max = h.store.audit.iter().map(|a| a.seq).max().unwrap_or(0);
    assert_eq!(h.store.state().audit_count, max);
}

fn mixed() -> Harness {
    let mut h = Harness::new(standard_tools());
    h.policy_fn = Box::new(|_| PolicyVerdict::Require(Some("Emails leave the company".into())));
    h.script([
        calls(vec![
            call("a", "delete_file", json!({"path": "/a"})),
            call("r", "delete_file", json!({"path": "/r"})),
            call("e", "send_email", json!({"to": "x@example.com"})),
            call("l", "list_files", json!({})),
        ]),
        answer("Done."),
    ]);
    assert_eq!(h.chat("go").unwrap(), Some(Outcome::AwaitingApproval));
    assert_agrees(&h);
    h
}

#[test]
fn a_record_per_gated_call_from_request_to_outcome() {
    let mut h = mixed();
    let requested = h.now;
    // Three gated calls (list_files runs without asking: no record).
    assert_eq!(h.store.audit.len(), 3);
    let a = rec(&h, 1).clone();
    assert_eq!(
        (a.call_id.as_str(), a.tool.as_str(), a.requested_at),
        ("a", "delete_file", requested)
    );
    assert_eq!(a.proposed_inputs, obj(json!({"path": "/a"})));
    assert_eq!(
        (a.decision, a.decided_at, a.inputs.clone(), a.outcome),
        (None, None, None, None)
    );
    assert_eq!(
        rec(&h, 3).reason.as_deref(),
        Some("Emails leave the company"),
        "the reason the human was given"
    );

    let out = h.decide_by(
        json!({
            "a": "approve",
            "r": ["reject", "Keep it"],
            "e": ["edit", {"to": "team@example.com"}],
        }),
        Some("user-42"),
    );
    assert_eq!(out.unwrap(), COMPLETED);
    assert_agrees(&h);
    let decided = h.now - 4000; // the decision, then two tool runs and the model call
    let [a, r, e] = [rec(&h, 1), rec(&h, 2), rec(&h, 3)];
    assert_eq!(a.decision, Some(AuditDecision::Approved));
    assert_eq!(a.decided_by.as_deref(), Some("user-42"));
    assert_eq!(a.decided_at, Some(decided));
    assert_eq!(a.inputs, Some(obj(json!({"path": "/a"}))));
    assert_eq!(a.outcome, Some(AuditOutcome::Ok));
    assert!(a.started_at.unwrap() >= decided && a.ended_at.unwrap() > a.started_at.unwrap());

    assert_eq!(r.decision, Some(AuditDecision::Rejected));
    assert_eq!(r.reject_reason.as_deref(), Some("Keep it"));
    assert_eq!((r.inputs.clone(), r.started_at), (None, None));
    assert_eq!(
        (r.outcome, r.ended_at),
        (Some(AuditOutcome::Rejected), Some(decided))
    );

    assert_eq!(e.decision, Some(AuditDecision::Edited));
    assert_eq!(e.proposed_inputs, obj(json!({"to": "x@example.com"})));
    assert_eq!(e.inputs, Some(obj(json!({"to": "team@example.com"}))));
    assert_eq!(e.outcome, Some(AuditOutcome::Ok));
    assert!(
        h.store.run.is_none(),
        "the journal is gone, and with it every open record"
    );
}

#[test]
fn each_change_is_written_with_the_step_it_describes() {
    let mut h = mixed();
    h.die_on_tool = Some("a".into());
    h.decide(json!({"a": "approve", "r": "reject", "e": "approve"}))
        .unwrap();
    // The page died as `a` started: the "started" write carried the decisions, the rejection's
    // end and `a`'s start, and nothing of what did not happen.
    assert_agrees(&h);
    let a = rec(&h, 1);
    assert!(a.started_at.is_some() && a.outcome.is_none());
    assert_eq!(rec(&h, 2).outcome, Some(AuditOutcome::Rejected));
    assert_eq!(rec(&h, 3).started_at, None);
}

#[test]
fn a_crash_ends_the_record_as_regated_and_opens_another() {
    let mut h = mixed();
    h.die_on_tool = Some("a".into());
    h.decide_by(
        json!({"a": "approve", "r": "approve", "e": "approve"}),
        Some("ann"),
    )
    .unwrap();
    h.die_on_tool = None;
    h.reload();
    assert_agrees(&h);
    let first = rec(&h, 1).clone();
    assert_eq!(first.outcome, Some(AuditOutcome::Regated));
    assert_eq!(first.decision, Some(AuditDecision::Approved));
    assert_eq!(first.decided_by.as_deref(), Some("ann"));
    assert!(first.started_at.is_some() && first.ended_at.is_some());
    let again = rec(&h, 4).clone();
    assert_eq!((again.call_id.as_str(), again.outcome), ("a", None));
    assert_eq!(again.decision, None);
    assert!(again.reason.as_deref().unwrap().contains("interrupted"));
    assert_eq!(again.requested_at, first.ended_at.unwrap());

    h.decide_by(json!({"a": "approve"}), Some("bob")).unwrap();
    assert_agrees(&h);
    let again = rec(&h, 4);
    assert_eq!(again.decided_by.as_deref(), Some("bob"));
    assert_eq!(again.outcome, Some(AuditOutcome::Ok));
    assert_eq!(
        rec(&h, 1).outcome,
        Some(AuditOutcome::Regated),
        "an ended record never changes"
    );
}

#[test]
fn a_failing_tool_ends_its_record_as_tool_error() {
    let mut h = mixed();
    h.tool_fn = Box::new(|inv| {
        if inv.call_id == "a" {
            Err("disk on fire".into())
        } else {
            Ok(json!("ok"))
        }
    });
    h.decide(json!({"a": "approve", "r": "approve", "e": "approve"}))
        .unwrap();
    assert_agrees(&h);
    assert_eq!(rec(&h, 1).outcome, Some(AuditOutcome::ToolError));
    assert_eq!(rec(&h, 2).outcome, Some(AuditOutcome::Ok));
}

#[test]
fn revised_decisions_keep_the_last_one_and_who_made_it() {
    let mut h = mixed();
    h.decide_by(json!({"a": "approve"}), Some("ann")).unwrap();
    assert_agrees(&h);
    assert_eq!(rec(&h, 1).decided_by.as_deref(), Some("ann"));
    assert_eq!(rec(&h, 1).outcome, None, "nothing runs while calls wait");
    h.decide_by(json!({"a": ["reject", "no"]}), Some("bob"))
        .unwrap();
    assert_agrees(&h);
    let a = rec(&h, 1);
    assert_eq!(a.decision, Some(AuditDecision::Rejected));
    assert_eq!(
        (a.reject_reason.as_deref(), a.decided_by.as_deref()),
        (Some("no"), Some("bob"))
    );
    h.decide(json!({"r": "approve", "e": "approve"})).unwrap();
    assert_agrees(&h);
    let a = rec(&h, 1);
    assert_eq!(a.outcome, Some(AuditOutcome::Rejected));
    assert_eq!(
        rec(&h, 2).decided_by,
        None,
        "decisions without `by` name nobody"
    );
}

#[test]
fn a_refused_payload_changes_no_record() {
    let mut h = mixed();
    let before = h.store.audit.clone();
    let e = h
        .decide_by(json!({"a": "approve", "nope": "approve"}), Some("ann"))
        .unwrap_err();
    assert_eq!(e.code(), "unknown_call_id");
    assert_eq!(h.store.audit, before);
}

#[test]
fn an_expired_call_is_decided_by_the_clock() {
    let mut tools = standard_tools();
    tools[0].approval_timeout = Some(60_000);
    let mut h = Harness::new(tools);
    h.script([
        calls(vec![call("c1", "delete_file", json!({"path": "/a"}))]),
        answer("ok"),
    ]);
    h.chat("go").unwrap();
    let deadline = h.engine.next_deadline().unwrap();
    assert!(h.engine.expire(deadline).unwrap());
    h.now = deadline;
    h.drive();
    assert_agrees(&h);
    let a = rec(&h, 1);
    assert_eq!(a.decision, Some(AuditDecision::Expired));
    assert_eq!((a.decided_at, a.decided_by.clone()), (Some(deadline), None));
    assert_eq!(
        (a.outcome, a.ended_at, a.inputs.clone()),
        (Some(AuditOutcome::Expired), Some(deadline), None)
    );
    let entry = h
        .store
        .messages
        .iter()
        .rev()
        .find_map(|m| m.tool_results())
        .unwrap();
    assert_eq!(entry[0].approval_state(), Some(ApprovalState::Expired));
}

#[test]
fn an_external_call_ends_when_its_result_is_submitted() {
    let mut tools = standard_tools();
    tools[3].require_approval = Some(true);
    let mut h = Harness::new(tools);
    h.script([
        calls(vec![call("t", "open_ticket", json!({"title": "x"}))]),
        answer("ok"),
    ]);
    h.chat("go").unwrap();
    h.decide(json!({"t": "approve"})).unwrap();
    assert_agrees(&h);
    assert_eq!(
        rec(&h, 1).outcome,
        None,
        "approved, waiting for the app's result"
    );
    h.results(json!({"t": {"id": 7}})).unwrap();
    assert_agrees(&h);
    let a = rec(&h, 1);
    assert_eq!(a.outcome, Some(AuditOutcome::Ok));
    assert_eq!(a.inputs, Some(obj(json!({"title": "x"}))));
    assert_eq!(a.started_at, a.ended_at);
}

#[test]
fn threads_without_gated_calls_have_no_trail() {
    let mut h = Harness::new(standard_tools());
    h.script([
        calls(vec![call("l", "list_files", json!({}))]),
        answer("ok"),
    ]);
    h.chat("go").unwrap();
    assert!(h.store.audit.is_empty());
    assert_eq!(h.store.state().audit_count, 0);
}

/// The memory store keeps the trail with the record (the IndexedDB store is tested the same
/// way in tests/browser_store): written by the commit, paged, counted, deleted with the
/// thread; a refused commit writes none of it.
#[test]
fn the_store_keeps_the_trail_beside_the_thread() {
    let store = MemoryStore::open("audit-store");
    let mut h = mixed();
    h.decide(json!({"a": "approve", "r": "reject", "e": "approve"}))
        .unwrap();
    let records: Vec<AuditRecord> = h.store.audit.clone();
    let commit = Commit {
        replace_tail: None,
        append: h.store.messages.clone(),
        run: None,
        policies: Default::default(),
        status: ThreadStatus::Idle,
        audit: records.clone(),
        request_size: None,
        mcp_tools: None,
    };
    let w = Writer::new("test-agent", false, false, 0.0);
    let r = store.commit("t", 0, &commit, &w, 1.0).unwrap();
    assert_eq!(r.audit_count, 3);
    let rows = store.audit_page("t", None, 2).unwrap();
    let seqs: Vec<u64> = rows.iter().map(|r| r.seq).collect();
    assert_eq!(seqs, [2, 3], "the latest page, oldest first");
    let back: AuditRecord = serde_json::from_str(&rows[1].json).unwrap();
    assert_eq!(back, records[2]);
    assert_eq!(store.audit_page("t", Some(2), 10).unwrap().len(), 1);
    // A stale commit writes no record.
    let mut late = records[0].clone();
    late.decided_by = Some("stale".into());
    let stale = Commit {
        audit: vec![late],
        ..commit.clone()
    };
    assert!(store.commit("t", 0, &stale, &w, 2.0).is_err());
    let first: AuditRecord =
        serde_json::from_str(&store.audit_page("t", Some(2), 1).unwrap()[0].json).unwrap();
    assert_eq!(first, records[0]);
    store.delete("t");
    assert!(store.audit_page("t", None, 10).unwrap().is_empty());
    MemoryStore::drop_database("audit-store");
}

#[test]
fn the_record_json_is_documented_shape() {
    let mut a =
        AuditRecord::requested(1, "c", "delete_file", Some("why"), &obj(json!({"p": 1})), 5);
    (a.decision, a.decided_at) = (Some(AuditDecision::Edited), Some(6));
    a.decided_by = Some("u".into());
    a.inputs = Some(obj(json!({"p": 2})));
    a.started_at = Some(7);
    (a.outcome, a.ended_at) = (Some(AuditOutcome::ToolError), Some(8));
    assert_eq!(
        serde_json::to_string(&a).unwrap(),
        r#"{"seq":1,"callId":"c","tool":"delete_file","reason":"why","proposedInputs":{"p":1},"requestedAt":5,"decision":"edited","rejectReason":null,"decidedAt":6,"decidedBy":"u","inputs":{"p":2},"startedAt":7,"endedAt":8,"outcome":"tool_error"}"#
    );
}
