//! Transcript tests of the approval engine: a scripted model, then the sequence of steps and
//! the thread JSON it leaves (docs/design.md, "Approval semantics", "Run ownership").

mod support;

use gatehouse_agent::engine::*;
use gatehouse_agent::thread::ApprovalState;
use serde_json::{Value, json};
use support::*;

fn log(h: &mut Harness) -> Vec<String> {
    h.take_log()
}

#[test]
fn a_turn_without_tools_is_one_user_and_one_assistant_message() {
    let mut h = Harness::new(standard_tools());
    h.script([answer("Hello!")]);
    assert_eq!(h.chat("Hi").unwrap(), COMPLETED);
    assert_eq!(
        log(&mut h),
        [
            "persist(+user)",
            "call_model",
            "persist(+assistant)",
            "yield(completed)"
        ]
    );
    let t = h.thread();
    assert_eq!(t[1]["stop_reason"], "end_turn");
    assert_eq!(
        t[1]["content"][0],
        json!({"type": "text", "content": "Hello!", "meta": []})
    );
    assert_eq!(h.engine.status(), ThreadStatus::Idle);
}

#[test]
fn a_failed_model_call_leaves_the_record_saying_interrupted() {
    let mut h = Harness::new(standard_tools());
    assert_eq!(h.chat("Hi").unwrap(), None);
    assert_eq!(
        log(&mut h),
        ["persist(+user)", "call_model", "model_failed"]
    );
    // No run journal and no pending approval: only the stored status tells a thread list
    // that the message is unanswered.
    assert!(h.store.run.is_none());
    assert_eq!(h.store.status, Some(ThreadStatus::Interrupted));
    h.script([answer("Hello!")]);
    assert_eq!(h.retry().unwrap(), COMPLETED);
    assert_eq!(h.store.status, Some(ThreadStatus::Idle));
}

#[test]
fn approve_all_runs_the_tool_and_calls_the_model_again() {
    let mut h = Harness::new(standard_tools());
    h.script([
        calls(vec![call(
            "toolu_01",
            "delete_file",
            json!({"path": "C:/old_logs.txt"}),
        )]),
        answer("Deleted."),
    ]);
    assert_eq!(
        h.chat("Clean up the old logs").unwrap(),
        Some(Outcome::AwaitingApproval)
    );
    assert_eq!(
        log(&mut h),
        [
            "persist(+user)",
            "call_model",
            "persist(+tool_call)",
            "yield(awaiting_approval)"
        ]
    );
    // Suspension is visible from the last message alone, and nothing ran.
    let tail = h.thread()[1].clone();
    assert_eq!(tail["type"], "tool_call");
    assert_eq!(tail["tools"][0]["approval"], "pending");
    assert_eq!(tail["tools"][0]["approvalReason"], Value::Null);
    assert!(tail["resume_token"].as_str().unwrap().starts_with("run_"));
    assert!(h.executed.is_empty());
    assert_eq!(h.engine.pending_tools().len(), 1);

    assert_eq!(h.decide(json!({"toolu_01": "approve"})).unwrap(), COMPLETED);
    assert_eq!(
        log(&mut h),
        [
            // The last decision and the first tool's start mark: one write.
            "persist(~tool_call started:toolu_01)",
            "run_tool(toolu_01)",
            "persist(+tool_call_result)",
            "call_model",
            "persist(+assistant)",
            "yield(completed)"
        ]
    );
    assert_eq!(
        h.executed,
        [("toolu_01".to_string(), json!({"path": "C:/old_logs.txt"}))]
    );
    let t = h.thread();
    // The tail keeps its final state as history, with the token.
    assert_eq!(t[1]["tools"][0]["approval"], "approved");
    assert_eq!(t[1]["tools"][0]["result"], Value::Null);
    assert!(t[1]["resume_token"].is_string());
    assert_eq!(t[2]["type"], "tool_call_result");
    assert_eq!(t[2]["role"], "user");
    assert_eq!(t[2]["tools"][0]["result"], r#"{"ok":"delete_file"}"#);
    assert_eq!(t[3]["content"][0]["content"], "Deleted.");
    assert!(
        h.store.run.is_none(),
        "the journal is cleared with the result message"
    );
}

#[test]
fn reject_without_reason_uses_the_default_text_with_two_periods() {
    let mut h = Harness::new(standard_tools());
    h.script([
        calls(vec![call(
            "toolu_01",
            "delete_file",
            json!({"path": "/tmp/x"}),
        )]),
        answer("OK"),
    ]);
    h.chat("delete /tmp/x").unwrap();
    h.decide(json!({"toolu_01": "reject"})).unwrap();
    assert!(h.executed.is_empty(), "a rejected tool never runs");
    assert_eq!(
        h.result_of("toolu_01").unwrap(),
        "TOOL NOT EXECUTED. The user rejected this action. User instruction: No specific \
         instruction provided.. Do not attempt this tool again. Follow the user's instruction or \
         reconsider your plan."
    );
    let t = h.thread();
    assert_eq!(t[1]["tools"][0]["approval"], "rejected");
    assert_eq!(t[1]["tools"][0]["rejectReason"], Value::Null);
}

#[test]
fn reject_with_reason_reaches_the_model_verbatim() {
    let mut h = Harness::new(standard_tools());
    h.script([
        calls(vec![call(
            "toolu_01",
            "delete_file",
            json!({"path": "/tmp/x"}),
        )]),
        answer("OK"),
    ]);
    h.chat("delete /tmp/x").unwrap();
    h.decide(json!({"toolu_01": ["reject", "Keep the logs until Friday"]}))
        .unwrap();
    assert_eq!(
        h.result_of("toolu_01").unwrap(),
        "TOOL NOT EXECUTED. The user rejected this action. User instruction: Keep the logs until \
         Friday. Do not attempt this tool again. Follow the user's instruction or reconsider your \
         plan."
    );
    assert_eq!(
        h.thread()[1]["tools"][0]["rejectReason"],
        "Keep the logs until Friday"
    );
}

#[test]
fn mixed_gated_non_gated_and_external_calls_in_one_message() {
    let mut h = Harness::new(standard_tools());
    h.policy_fn = Box::new(|q| {
        let to = q.inputs.get("to").and_then(Value::as_str).unwrap_or("");
        if to.ends_with("@example.com") {
            PolicyVerdict::Require(Some(
                "Outbound email reaches people outside this workspace".into(),
            ))
        } else {
            PolicyVerdict::Allow
        }
    });
    h.script([
        calls(vec![
            call("c1", "list_files", json!({})),
            call("c2", "delete_file", json!({"path": "a.log"})),
            call("c3", "open_ticket", json!({"title": "disk"})),
            call("c4", "send_email", json!({"to": "team@example.com"})),
        ]),
        answer("All done."),
    ]);
    assert_eq!(
        h.chat("do it all").unwrap(),
        Some(Outcome::AwaitingApproval)
    );
    assert_eq!(
        log(&mut h),
        [
            "persist(+user)",
            "call_model",
            "policies[c4]",
            "persist(+tool_call)",
            "yield(awaiting_approval)"
        ]
    );
    let tail = h.thread()[1].clone();
    // Non-gated entries carry no approval keys at all.
    assert!(tail["tools"][0].get("approval").is_none());
    assert!(tail["tools"][2].get("approval").is_none());
    assert_eq!(tail["tools"][1]["approval"], "pending");
    assert_eq!(
        tail["tools"][3]["approvalReason"],
        "Outbound email reaches people outside this workspace"
    );
    assert!(
        h.executed.is_empty(),
        "non-gated calls wait for the gate too"
    );

    assert_eq!(
        h.decide(json!({"c2": "approve", "c4": "reject"})).unwrap(),
        Some(Outcome::AwaitingToolResults)
    );
    assert_eq!(
        log(&mut h),
        [
            "persist(~tool_call started:c1)",
            "run_tool(c1)",
            "persist(started:c2)",
            "run_tool(c2)",
            "persist(record)",
            "yield(awaiting_tool_results)"
        ]
    );
    // Message order, rejected one skipped.
    let ran: Vec<&str> = h.executed.iter().map(|(id, _)| id.as_str()).collect();
    assert_eq!(ran, ["c1", "c2"]);
    assert_eq!(h.engine.status(), ThreadStatus::AwaitingToolResults);
    assert_eq!(h.engine.awaiting_results().len(), 1);

    // A new message while the external call waits is a conflict; nothing is written.
    let writes = h.store.writes;
    assert_eq!(h.chat("hello?").unwrap_err().code(), "conflict");
    assert_eq!(h.store.writes, writes);

    assert_eq!(h.results(json!({"c3": {"ticket": 42}})).unwrap(), COMPLETED);
    let t = h.thread();
    let results = &t[2]["tools"];
    assert_eq!(results.as_array().unwrap().len(), 4);
    let ids: Vec<&str> = results
        .as_array()
        .unwrap()
        .iter()
        .map(|e| e["callId"].as_str().unwrap())
        .collect();
    assert_eq!(
        ids,
        ["c1", "c2", "c3", "c4"],
        "one result message, in message order"
    );
    assert_eq!(results[2]["result"], r#"{"ticket":42}"#);
    assert!(
        results[3]["result"]
            .as_str()
            .unwrap()
            .starts_with("TOOL NOT EXECUTED.")
    );
    assert_eq!(results[3]["approval"], "rejected");
}

#[test]
fn partial_decisions_rewrite_the_tail_in_place_and_stay_revisable() {
    let mut h = Harness::new(standard_tools());
    h.script([
        calls(vec![
            call("toolu_01", "delete_file", json!({"path": "a"})),
            call("toolu_02", "delete_file", json!({"path": "b"})),
        ]),
        answer("Done"),
    ]);
    h.chat("delete a and b").unwrap();
    let id_before = h.tail().id.clone();
    log(&mut h);

    assert_eq!(
        h.decide(json!({"toolu_02": ["reject", "Do not email the whole team"]}))
            .unwrap(),
        Some(Outcome::AwaitingApproval)
    );
    assert_eq!(
        log(&mut h),
        ["persist(~tool_call)", "yield(awaiting_approval)"]
    );
    assert_eq!(h.tail().id, id_before, "rewritten in place, not appended");
    assert_eq!(h.store.messages.len(), 2);
    assert_eq!(
        h.tail_entry("toolu_02").approval_state(),
        Some(ApprovalState::Rejected)
    );

    // Revise: last write wins, and the reject reason goes away with the rejection.
    h.decide(json!({"toolu_02": "approve"})).unwrap();
    assert_eq!(
        h.tail_entry("toolu_02").approval_state(),
        Some(ApprovalState::Approved)
    );
    assert_eq!(
        h.tail_entry("toolu_02")
            .approval
            .as_ref()
            .unwrap()
            .reject_reason,
        None
    );
    assert!(
        h.executed.is_empty(),
        "nothing runs before the set is complete"
    );

    h.decide(json!({"toolu_01": "approve"})).unwrap();
    let ran: Vec<&str> = h.executed.iter().map(|(id, _)| id.as_str()).collect();
    assert_eq!(ran, ["toolu_01", "toolu_02"]);

    // After the point of no return the decisions are history: no longer revisable.
    let e = h.decide(json!({"toolu_01": "reject"})).unwrap_err();
    assert_eq!(e.code(), "not_suspended");
}

#[test]
fn a_decision_for_an_unknown_id_stages_nothing() {
    let mut h = Harness::new(standard_tools());
    h.script([calls(vec![
        call("toolu_01", "delete_file", json!({"path": "a"})),
        call("toolu_02", "delete_file", json!({"path": "b"})),
    ])]);
    h.chat("x").unwrap();
    let before = h.thread();
    let writes = h.store.writes;
    let e = h
        .decide(json!({"toolu_01": "approve", "toolu_99": "approve"}))
        .unwrap_err();
    assert_eq!(e.code(), "unknown_call_id");
    assert!(e.to_string().contains("toolu_99"));
    assert_eq!(h.thread(), before, "the valid half was not applied either");
    assert_eq!(h.store.writes, writes);
    assert_eq!(h.engine.pending_tools().len(), 2);
}

#[test]
fn approve_with_a_note_is_an_invalid_decision() {
    let mut h = Harness::new(standard_tools());
    h.one_gated_call("toolu_01", "a", "x");
    let before = h.thread();
    let e = h
        .decide(json!({"toolu_01": ["approve", "note"]}))
        .unwrap_err();
    assert_eq!(e.code(), "invalid_decision");
    assert!(e.to_string().contains("approvals are bare"));
    assert_eq!(h.thread(), before);
    // Other malformed payloads.
    for bad in [
        json!({"toolu_01": "yes"}),
        json!({"toolu_01": ["reject", 1]}),
        json!("approve"),
        json!(null),
    ] {
        assert_eq!(h.decide(bad).unwrap_err().code(), "invalid_decision");
    }
    assert_eq!(h.thread(), before);
}

#[test]
fn an_empty_decision_map_is_refused() {
    let mut h = Harness::new(standard_tools());
    h.one_gated_call("toolu_01", "a", "x");
    let e = h.decide(json!({})).unwrap_err();
    assert_eq!(e.code(), "invalid_decision");
    assert_eq!(h.engine.status(), ThreadStatus::AwaitingApproval);
}

#[test]
fn decisions_when_nothing_waits_are_not_suspended() {
    let mut h = Harness::new(standard_tools());
    assert_eq!(
        h.decide(json!({"x": "approve"})).unwrap_err().code(),
        "not_suspended"
    );
    h.script([answer("hi")]);
    h.chat("hi").unwrap();
    assert_eq!(
        h.decide(json!({"x": "approve"})).unwrap_err().code(),
        "not_suspended"
    );
    assert_eq!(
        h.results(json!({"x": 1})).unwrap_err().code(),
        "not_suspended"
    );
}

#[test]
fn a_new_user_message_while_pending_is_a_conflict_and_nothing_is_stored() {
    let mut h = Harness::new(standard_tools());
    h.one_gated_call("toolu_01", "a", "x");
    let before = h.thread();
    let writes = h.store.writes;
    let e = h.chat("never mind").unwrap_err();
    assert_eq!(e.code(), "conflict");
    assert!(e.to_string().contains("awaiting approval"));
    assert_eq!(h.thread(), before);
    assert_eq!(h.store.writes, writes);
    assert_eq!(h.model_calls, 1, "nothing was sent to the model");
}

#[test]
fn a_policy_returning_a_reason_gates_and_shows_the_reason() {
    let mut h = Harness::new(standard_tools());
    h.policy_fn = Box::new(|q| {
        if q.inputs["to"].as_str().unwrap().contains("boss") {
            PolicyVerdict::Require(Some("Emails to the boss need a look".into()))
        } else {
            PolicyVerdict::Allow
        }
    });
    h.script([
        calls(vec![
            call("e1", "send_email", json!({"to": "boss@corp"})),
            call("e2", "send_email", json!({"to": "me@corp"})),
        ]),
        answer("sent"),
    ]);
    assert_eq!(h.chat("mail").unwrap(), Some(Outcome::AwaitingApproval));
    let tail = h.thread()[1].clone();
    assert_eq!(tail["tools"][0]["approval"], "pending");
    assert_eq!(
        tail["tools"][0]["approvalReason"],
        "Emails to the boss need a look"
    );
    assert!(
        tail["tools"][1].get("approval").is_none(),
        "false from the policy: not gated"
    );
}

#[test]
fn a_policy_that_fails_gates_the_call() {
    let mut h = Harness::new(standard_tools());
    h.policy_fn = Box::new(|_| PolicyVerdict::Failed("TypeError: x is undefined".into()));
    h.script([calls(vec![call("e1", "send_email", json!({"to": "a@b"}))])]);
    assert_eq!(h.chat("mail").unwrap(), Some(Outcome::AwaitingApproval));
    let reason = h.thread()[1]["tools"][0]["approvalReason"]
        .as_str()
        .unwrap()
        .to_string();
    assert!(reason.contains("TypeError: x is undefined"), "{reason}");
}

#[test]
fn a_disabled_tool_called_anyway_gets_permission_denied_and_is_not_offered() {
    let mut tools = standard_tools();
    tools[2].enabled = false; // list_files
    let mut h = Harness::new(tools);
    let offered: Vec<&str> = h.engine.offered_tools().map(|t| t.name.as_str()).collect();
    assert!(!offered.contains(&"list_files"));
    h.script([
        calls(vec![call("c1", "list_files", json!({}))]),
        answer("sorry"),
    ]);
    assert_eq!(h.chat("list").unwrap(), COMPLETED);
    assert!(h.executed.is_empty());
    let r: Value = serde_json::from_str(&h.result_of("c1").unwrap()).unwrap();
    assert_eq!(r["error"], "tool_permission_denied");
    assert!(
        h.thread()[1]["tools"][0].get("approval").is_none(),
        "refused calls are not gated"
    );
}

#[test]
fn invalid_inputs_are_never_gated_and_the_model_gets_input_validation() {
    let mut h = Harness::new(standard_tools());
    h.script([
        calls(vec![
            call("c1", "delete_file", json!({"file": "a"})),
            ModelToolCall::new("c2", "delete_file", "{\"path\": \"a\""),
        ]),
        answer("let me fix that"),
    ]);
    assert_eq!(h.chat("delete").unwrap(), COMPLETED);
    let tail = &h.thread()[1];
    assert!(tail["tools"][0].get("approval").is_none());
    assert_eq!(tail["tools"][0]["inputs"], json!({"file": "a"}));
    assert_eq!(
        tail["tools"][1]["inputs"],
        json!({}),
        "unparseable arguments are kept as an empty object"
    );
    let r1: Value = serde_json::from_str(&h.result_of("c1").unwrap()).unwrap();
    assert_eq!(r1["error"], "input_validation");
    assert!(r1["details"][0].as_str().unwrap().contains("path"), "{r1}");
    let r2: Value = serde_json::from_str(&h.result_of("c2").unwrap()).unwrap();
    assert_eq!(r2["error"], "input_validation");
    assert!(
        r2["message"].as_str().unwrap().contains("invalid JSON"),
        "{r2}"
    );
    assert!(h.executed.is_empty());
}

#[test]
fn an_unknown_tool_gets_an_error_result_listing_the_tools() {
    let mut h = Harness::new(standard_tools());
    h.script([
        calls(vec![call("c1", "format_disk", json!({}))]),
        answer("ok"),
    ]);
    h.chat("format").unwrap();
    let tail = &h.thread()[1];
    assert_eq!(tail["tools"][0]["description"], Value::Null);
    let r: Value = serde_json::from_str(&h.result_of("c1").unwrap()).unwrap();
    assert_eq!(r["error"], "unknown_tool");
    assert!(r["message"].as_str().unwrap().contains("delete_file"));
}

#[test]
fn an_unknown_tool_loop_is_bounded_by_max_steps() {
    let mut h = Harness::with_config(
        standard_tools(),
        EngineConfig {
            max_steps: 3,
            ..EngineConfig::default()
        },
    );
    h.script((0..10).map(|i| calls(vec![call(&format!("c{i}"), "nope", json!({}))])));
    assert_eq!(
        h.chat("go").unwrap(),
        Some(Outcome::Completed {
            max_steps_reached: true
        })
    );
    assert_eq!(h.model_calls, 3);
    assert_eq!(
        h.tail().tool_results().map(|t| t.len()),
        Some(1),
        "stops after the last result"
    );
    // The thread can go on: retry continues, a new message is accepted.
    assert_eq!(h.engine.status(), ThreadStatus::Interrupted);
    h.model.clear();
    h.script([answer("giving up")]);
    assert_eq!(h.chat("stop").unwrap(), COMPLETED);
}

#[test]
fn a_tool_that_fails_becomes_a_structured_error_result_and_the_thread_goes_on() {
    let mut tools = standard_tools();
    tools[0].require_approval = Some(false);
    let mut h = Harness::new(tools);
    h.tool_fn = Box::new(|_| Err("EACCES: permission denied".into()));
    h.script([
        calls(vec![call("c1", "delete_file", json!({"path": "/root"}))]),
        answer("It failed."),
    ]);
    assert_eq!(h.chat("delete /root").unwrap(), COMPLETED);
    let r: Value = serde_json::from_str(&h.result_of("c1").unwrap()).unwrap();
    assert_eq!(
        r,
        json!({"error": "tool_error", "message": "EACCES: permission denied"})
    );
    assert_eq!(h.thread()[3]["content"][0]["content"], "It failed.");
}

#[test]
fn a_run_interrupted_between_started_and_finished_is_regated_not_rerun() {
    let mut h = Harness::new(standard_tools());
    h.script([
        calls(vec![
            call("c1", "delete_file", json!({"path": "a"})),
            call("c2", "list_files", json!({})),
        ]),
        answer("done"),
    ]);
    h.chat("go").unwrap();
    h.die_on_tool = Some("c1".into());
    assert_eq!(h.decide(json!({"c1": "approve"})).unwrap(), None);
    assert_eq!(h.store.run.as_ref().unwrap().started.as_deref(), Some("c1"));
    log(&mut h);

    h.die_on_tool = None;
    h.reload();
    assert_eq!(
        log(&mut h),
        ["recover", "persist(~tool_call)", "yield(awaiting_approval)"]
    );
    let e = h.tail_entry("c1");
    assert_eq!(e.approval_state(), Some(ApprovalState::Pending));
    let reason = e.approval.as_ref().unwrap().reason.clone().unwrap();
    assert!(
        reason.contains("may or may not have taken effect"),
        "{reason}"
    );
    assert!(h.executed.is_empty(), "not silently re-run");
    assert_eq!(h.engine.status(), ThreadStatus::AwaitingApproval);

    // The human decides again; then c1 and c2 run once each.
    h.decide(json!({"c1": "approve"})).unwrap();
    let ran: Vec<&str> = h.executed.iter().map(|(id, _)| id.as_str()).collect();
    assert_eq!(ran, ["c1", "c2"]);
}

#[test]
fn an_interrupted_non_gated_call_becomes_gated() {
    let mut h = Harness::new(standard_tools());
    h.script([
        calls(vec![call("c1", "list_files", json!({}))]),
        answer("done"),
    ]);
    h.die_on_tool = Some("c1".into());
    assert_eq!(h.chat("list").unwrap(), None);
    h.die_on_tool = None;
    h.reload();
    let tail = h.thread()[1].clone();
    assert_eq!(tail["tools"][0]["approval"], "pending");
    assert!(
        tail["tools"][0]["approvalReason"]
            .as_str()
            .unwrap()
            .contains("interrupted")
    );
    assert_eq!(
        h.decide(json!({"c1": ["reject", "it probably ran"]}))
            .unwrap(),
        COMPLETED
    );
    assert!(h.executed.is_empty());
}

#[test]
fn an_interrupted_idempotent_call_runs_again_on_retry() {
    let mut tools = standard_tools();
    tools[2].idempotent = true;
    let mut h = Harness::new(tools);
    h.script([
        calls(vec![call("c1", "list_files", json!({}))]),
        answer("done"),
    ]);
    h.die_on_tool = Some("c1".into());
    h.chat("list").unwrap();
    h.die_on_tool = None;
    h.reload();
    assert!(
        h.thread()[1]["tools"][0].get("approval").is_none(),
        "not re-gated"
    );
    assert_eq!(h.engine.status(), ThreadStatus::Interrupted);
    assert_eq!(h.retry().unwrap(), COMPLETED);
    assert_eq!(h.executed.len(), 1);
}

/// On a remote thread the handler lets a "started" mark go only with the call's result or a new
/// gate (it cannot tell an idempotent tool from a device that says so: docs/design.md, "Threat
/// model"), so a cut-off idempotent call is gated again there, like any other.
#[test]
fn on_a_remote_thread_an_interrupted_idempotent_call_is_gated_again() {
    let mut tools = standard_tools();
    tools[2].idempotent = true;
    let remote = EngineConfig {
        tools_elsewhere: true,
        ..EngineConfig::default()
    };
    let mut h = Harness::with_config(tools, remote);
    h.script([calls(vec![call("c1", "list_files", json!({}))])]);
    h.die_on_tool = Some("c1".into());
    h.chat("list").unwrap();
    h.die_on_tool = None;
    h.reload();
    assert_eq!(h.thread()[1]["tools"][0]["approval"], "pending");
    assert_eq!(h.engine.status(), ThreadStatus::AwaitingApproval);
    assert!(h.executed.is_empty(), "not run again without a decision");
}

#[test]
fn executed_calls_cannot_be_decided_again_after_a_regate() {
    let mut h = Harness::new(standard_tools());
    h.script([calls(vec![
        call("c1", "delete_file", json!({"path": "a"})),
        call("c2", "delete_file", json!({"path": "b"})),
    ])]);
    h.chat("go").unwrap();
    h.die_on_tool = Some("c2".into());
    h.decide(json!({"c1": "approve", "c2": "approve"})).unwrap();
    h.die_on_tool = None;
    h.reload();
    assert_eq!(h.executed.len(), 1, "c1 ran before the page died");
    let e = h.decide(json!({"c1": "reject"})).unwrap_err();
    assert_eq!(e.code(), "unknown_call_id");
    assert_eq!(h.engine.pending_tools().len(), 1);
}

#[test]
fn a_failed_model_call_keeps_the_user_message_and_retry_does_not_duplicate_it() {
    let mut h = Harness::new(standard_tools());
    assert_eq!(h.chat("hello").unwrap(), None); // the model fails (script empty)
    assert_eq!(
        log(&mut h),
        ["persist(+user)", "call_model", "model_failed"]
    );
    assert_eq!(h.store.messages.len(), 1);
    assert_eq!(h.engine.status(), ThreadStatus::Interrupted);
    h.script([answer("hi there")]);
    assert_eq!(h.retry().unwrap(), COMPLETED);
    assert_eq!(
        log(&mut h),
        ["call_model", "persist(+assistant)", "yield(completed)"]
    );
    assert_eq!(h.store.messages.len(), 2);
    assert_eq!(h.retry().unwrap_err().code(), "nothing_to_retry");
}

#[test]
fn external_tool_results_partial_and_unknown_ids() {
    let mut h = Harness::new(standard_tools());
    h.script([
        calls(vec![
            call("t1", "open_ticket", json!({"title": "a"})),
            call("t2", "open_ticket", json!({"title": "b"})),
        ]),
        answer("tickets opened"),
    ]);
    assert_eq!(
        h.chat("tickets").unwrap(),
        Some(Outcome::AwaitingToolResults)
    );
    let before = h.store.clone().messages;
    assert_eq!(
        h.results(json!({"t9": "x"})).unwrap_err().code(),
        "unknown_call_id"
    );
    assert_eq!(
        h.results(json!({})).unwrap_err().code(),
        "invalid_tool_results"
    );
    assert_eq!(
        h.results(json!({"t1": "x", "t9": "y"})).unwrap_err().code(),
        "unknown_call_id"
    );
    assert_eq!(h.store.messages, before);
    assert!(
        h.store.run.as_ref().unwrap().results.is_empty(),
        "nothing staged"
    );
    assert_eq!(
        h.results(json!({"t2": "#2"})).unwrap(),
        Some(Outcome::AwaitingToolResults)
    );
    assert_eq!(
        h.results(json!({"t2": "#2 again"})).unwrap_err().code(),
        "unknown_call_id"
    );
    assert_eq!(h.results(json!({"t1": "#1"})).unwrap(), COMPLETED);
    assert_eq!(h.result_of("t1").unwrap(), "#1");
    assert_eq!(h.result_of("t2").unwrap(), "#2");
}

#[test]
fn a_gated_external_tool_waits_for_approval_then_for_its_result() {
    let mut tools = standard_tools();
    tools[3].require_approval = Some(true);
    let mut h = Harness::new(tools);
    h.script([
        calls(vec![call("t1", "open_ticket", json!({}))]),
        answer("ok"),
    ]);
    assert_eq!(h.chat("ticket").unwrap(), Some(Outcome::AwaitingApproval));
    // Results for a call still awaiting approval: not among the calls waiting for a result.
    assert_eq!(
        h.results(json!({"t1": "x"})).unwrap_err().code(),
        "unknown_call_id"
    );
    assert_eq!(
        h.decide(json!({"t1": "approve"})).unwrap(),
        Some(Outcome::AwaitingToolResults)
    );
    assert_eq!(h.results(json!({"t1": "x"})).unwrap(), COMPLETED);
}

#[test]
fn per_thread_policies_replace_tool_defaults_both_ways() {
    let mut h = Harness::new(standard_tools());
    // autoApprove on the thread lets a requireApproval tool through.
    h.engine
        .set_tool_policy(
            "delete_file",
            ToolPolicy {
                enabled: None,
                auto_approve: Some(true),
            },
        )
        .unwrap();
    h.drive();
    assert_eq!(
        h.store.policies["delete_file"].auto_approve,
        Some(true),
        "persisted with the thread"
    );
    h.script([
        calls(vec![call("c1", "delete_file", json!({"path": "a"}))]),
        answer("ok"),
    ]);
    assert_eq!(h.chat("delete a").unwrap(), COMPLETED);
    assert!(
        h.thread()[1]["tools"][0].get("approval").is_none(),
        "autoApprove: not gated"
    );

    // A tool that auto-approves by default, switched off for this thread.
    let mut tools = standard_tools();
    tools[0].auto_approve = true;
    let mut h = Harness::new(tools);
    h.engine
        .set_tool_policy(
            "delete_file",
            ToolPolicy {
                enabled: None,
                auto_approve: Some(false),
            },
        )
        .unwrap();
    h.drive();
    assert_eq!(
        h.one_gated_call("c1", "a", "delete a"),
        Some(Outcome::AwaitingApproval)
    );

    // Disabling on the thread hides the tool from the model.
    h.engine
        .set_tool_policy(
            "list_files",
            ToolPolicy {
                enabled: Some(false),
                auto_approve: None,
            },
        )
        .unwrap();
    h.drive();
    assert!(!h.engine.offered_tools().any(|t| t.name == "list_files"));
    assert_eq!(
        h.engine
            .set_tool_policy("nope", ToolPolicy::default())
            .unwrap_err()
            .code(),
        "unknown_tool"
    );
}

#[test]
fn a_new_thread_inherits_no_policy() {
    use gatehouse_agent::store::{MemoryStore, Writer};
    // One agent's two threads: one store, one tool set. A policy set on one thread is that
    // thread's alone, however the other is opened.
    let db = MemoryStore::open("a_new_thread_inherits_no_policy");
    let tools = ToolSet::new(standard_tools());
    let open = |thread: &str| {
        let mut h = Harness::new(standard_tools());
        let state = db.load(thread, 0.0).unwrap().state();
        h.engine = Engine::new(tools.clone(), EngineConfig::default(), state, 1);
        h.tools = tools.clone();
        h.script([
            calls(vec![call("c1", "delete_file", json!({"path": "x"}))]),
            answer("done"),
        ]);
        h
    };
    let mut a = open("a");
    let auto = ToolPolicy {
        enabled: None,
        auto_approve: Some(true),
    };
    a.engine.set_tool_policy("delete_file", auto).unwrap();
    while let Some(step) = a.engine.poll() {
        let Step::Persist(c) = step else {
            panic!("a policy change only writes")
        };
        let version = db.record("a", 0.0).version;
        let w = Writer::new("agent", false, false, 0.0);
        db.commit("a", version, &c, &w, 0.0).unwrap();
    }
    // Thread a, opened again, keeps it: its call runs without asking.
    let mut a = open("a");
    assert_eq!(a.chat("delete x").unwrap(), COMPLETED);
    assert_eq!(a.executed.len(), 1);
    // Thread b, opened from the same store with the same tools, asks.
    let mut b = open("b");
    assert!(b.engine.state().policies.is_empty());
    assert_eq!(b.chat("delete x").unwrap(), Some(Outcome::AwaitingApproval));
    assert!(b.executed.is_empty());
    assert_eq!(
        b.tail_entry("c1").approval_state(),
        Some(ApprovalState::Pending)
    );
}

#[test]
fn the_approved_inputs_are_exactly_the_inputs_executed() {
    let mut h = Harness::new(standard_tools());
    let inputs = json!({"path": "C:/old_logs.txt", "z": [1, {"b": 2, "a": 1}]});
    h.script([
        calls(vec![call("c1", "delete_file", inputs.clone())]),
        answer("ok"),
    ]);
    h.chat("go").unwrap();
    assert_eq!(h.thread()[1]["tools"][0]["inputs"], inputs);
    h.decide(json!({"c1": "approve"})).unwrap();
    assert_eq!(h.executed[0].1, inputs);
    // Key order as the model sent it.
    assert_eq!(
        serde_json::to_string(&h.executed[0].1).unwrap(),
        inputs.to_string()
    );
}

#[test]
fn duplicate_or_missing_call_ids_are_made_unique() {
    let mut h = Harness::new(standard_tools());
    h.script([calls(vec![
        call("", "delete_file", json!({"path": "a"})),
        call("dup", "delete_file", json!({"path": "b"})),
        call("dup", "delete_file", json!({"path": "c"})),
    ])]);
    h.chat("go").unwrap();
    let ids: Vec<String> = h
        .engine
        .pending_tools()
        .iter()
        .map(|e| e.call_id.clone())
        .collect();
    assert_eq!(ids, ["call_0", "dup", "dup_2"]);
}

#[test]
fn message_ids_are_increasing_and_well_formed() {
    let mut h = Harness::new(standard_tools());
    h.script([
        calls(vec![call("c1", "list_files", json!({}))]),
        answer("ok"),
    ]);
    h.chat("go").unwrap();
    let nums: Vec<u64> = h
        .store
        .messages
        .iter()
        .map(|m| m.id.number().unwrap())
        .collect();
    assert_eq!(nums.len(), 4);
    assert!(nums.windows(2).all(|w| w[0] < w[1]), "{nums:?}");
    assert!(nums.iter().all(|n| *n > 0 && *n < (1 << 63)));
}

#[test]
fn busy_while_a_run_is_in_progress() {
    let mut h = Harness::new(standard_tools());
    h.engine.user_message("hi", T0).unwrap();
    assert_eq!(
        h.engine.user_message("again", T0).unwrap_err().code(),
        "busy"
    );
    assert_eq!(
        h.engine
            .submit_decisions(&decisions(json!({"a": "approve"})), T0, None)
            .unwrap_err()
            .code(),
        "busy"
    );
}

#[test]
fn a_tool_cancelled_before_it_ran_is_not_regated_and_retry_runs_it() {
    let mut h = Harness::new(standard_tools());
    h.script([
        calls(vec![call("c1", "list_files", json!({}))]),
        answer("done"),
    ]);
    h.engine.user_message("list", T0).unwrap();
    // Drive by hand up to the RunTool step, then cancel (the caller aborted).
    loop {
        match h.engine.poll().unwrap() {
            Step::Persist(c) => h.store_apply(c),
            Step::CallModel => {
                let out = h.model.pop_front().unwrap();
                h.engine.model_output(out, T0 + 1).unwrap();
            }
            Step::RunTool(inv) => {
                h.engine.cancel_tool(&inv.call_id).unwrap();
                break;
            }
            other => panic!("unexpected {other:?}"),
        }
    }
    h.drive();
    assert!(h.store.run.as_ref().unwrap().started.is_none());
    h.reload();
    assert_eq!(
        h.engine.status(),
        ThreadStatus::Interrupted,
        "not re-gated: it never started"
    );
    assert_eq!(h.retry().unwrap(), COMPLETED);
    assert_eq!(h.executed.len(), 1);
}

/// On a remote thread a cancel before the tool began cannot clear its "started" mark (the
/// handler would take the device's word that it never ran): the call is gated again.
#[test]
fn on_a_remote_thread_a_tool_cancelled_before_it_ran_is_gated_again() {
    let remote = EngineConfig {
        tools_elsewhere: true,
        ..EngineConfig::default()
    };
    let mut h = Harness::with_config(standard_tools(), remote);
    h.script([calls(vec![call("c1", "list_files", json!({}))])]);
    h.engine.user_message("list", T0).unwrap();
    loop {
        match h.engine.poll().unwrap() {
            Step::Persist(c) => h.store_apply(c),
            Step::CallModel => {
                let out = h.model.pop_front().unwrap();
                h.engine.model_output(out, T0 + 1).unwrap();
            }
            Step::RunTool(inv) => {
                h.engine.cancel_tool(&inv.call_id).unwrap();
                break;
            }
            other => panic!("unexpected {other:?}"),
        }
    }
    h.drive();
    let run = h.store.run.as_ref().unwrap();
    assert!(run.started.is_none() && run.is_gated("c1"));
    assert_eq!(h.engine.status(), ThreadStatus::AwaitingApproval);
    assert!(h.executed.is_empty());
}

#[test]
fn a_tool_call_message_and_its_first_start_mark_are_one_write() {
    let mut h = Harness::new(standard_tools());
    h.script([
        calls(vec![call("c1", "list_files", json!({}))]),
        answer("ok"),
    ]);
    h.chat("list").unwrap();
    assert_eq!(
        log(&mut h),
        [
            "persist(+user)",
            "call_model",
            "persist(+tool_call started:c1)",
            "run_tool(c1)",
            "persist(+tool_call_result)",
            "call_model",
            "persist(+assistant)",
            "yield(completed)"
        ]
    );
}

fn audit(seq: u64, outcome: Option<AuditOutcome>) -> AuditRecord {
    let mut a = AuditRecord::requested(seq, "c", "t", None, &serde_json::Map::new(), T0);
    a.outcome = outcome;
    a
}

#[test]
fn merged_commits_rewrite_the_message_they_follow() {
    use gatehouse_agent::thread::{Message, MessageId};
    let base = Commit {
        replace_tail: None,
        append: vec![Message::user_text(MessageId::from_number(1), "a")],
        run: None,
        policies: Default::default(),
        status: ThreadStatus::Interrupted,
        audit: vec![audit(1, None), audit(2, None)],
        request_size: None,
        mcp_tools: None,
    };
    let next = Commit {
        replace_tail: Some(Message::user_text(MessageId::from_number(1), "a, edited")),
        append: vec![Message::user_text(MessageId::from_number(2), "b")],
        run: Some(RunJournal::new(MessageId::from_number(2))),
        policies: Default::default(),
        status: ThreadStatus::AwaitingToolResults,
        audit: vec![audit(2, Some(AuditOutcome::Ok)), audit(3, None)],
        request_size: None,
        mcp_tools: None,
    };
    let c = base.then(next);
    // One put per record, the later version of a record replacing the earlier.
    let seqs: Vec<(u64, Option<AuditOutcome>)> =
        c.audit.iter().map(|a| (a.seq, a.outcome)).collect();
    assert_eq!(seqs, [(1, None), (2, Some(AuditOutcome::Ok)), (3, None)]);
    assert!(c.replace_tail.is_none());
    assert_eq!(
        c.append.iter().map(|m| m.text()).collect::<Vec<_>>(),
        ["a, edited", "b"]
    );
    assert!(c.run.is_some());
    assert_eq!(c.status, ThreadStatus::AwaitingToolResults);
}
