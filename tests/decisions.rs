//! Transcript tests of the decision forms (docs/design.md, "Approval semantics"): approve,
//! reject, reject with a reason, edit (valid, invalid, revised), and each tool's
//! `allowedDecisions`; with the decision journal's record of edited inputs.

mod support;

use gatehouse_agent::engine::*;
use gatehouse_agent::thread::{ApprovalState, Message};
use serde_json::{Value, json};
use support::*;

/// What the model reads for `toolu_01` when `delete_file` was edited from /var/log to
/// /var/log/old: pinned byte for byte, like the rejection text.
const EDITED_TEXT: &str = "TOOL EXECUTED WITH EDITED ARGUMENTS. The user changed the arguments \
before approving this action. You proposed: {\"path\":\"/var/log\"}. It ran with: \
{\"path\":\"/var/log/old\"}. Result: {\"ok\":\"delete_file\"}";

fn decisions(h: &Harness) -> Value {
    serde_json::to_value(&h.store.run.as_ref().expect("a journal").decisions).unwrap()
}

/// One gated `delete_file` call, suspended.
fn one_call() -> Harness {
    let mut h = Harness::new(standard_tools());
    let outcome = h.one_gated_call("toolu_01", "/var/log", "Clean up the logs");
    assert_eq!(outcome, Some(Outcome::AwaitingApproval));
    h.script([answer("Done.")]);
    h.take_log();
    h
}

/// Two gated calls, so a decision on the first is partial.
fn two_calls() -> Harness {
    let mut h = Harness::new(standard_tools());
    h.script([
        calls(vec![
            call("c1", "delete_file", json!({"path": "/a"})),
            call("c2", "delete_file", json!({"path": "/b"})),
        ]),
        answer("Done."),
    ]);
    h.chat("delete /a and /b").unwrap();
    h.take_log();
    h
}

fn refused(h: &mut Harness, payload: Value) -> EngineError {
    let writes = h.store.writes;
    let before = h.thread();
    let run = h.store.run.clone();
    let e = h.decide(payload).unwrap_err();
    assert_eq!(h.store.writes, writes, "a refused payload writes nothing");
    assert_eq!(h.thread(), before, "and changes no message");
    assert_eq!(h.store.run, run, "and records no decision");
    assert!(h.executed.is_empty());
    e
}

#[test]
fn every_decision_form_in_one_message() {
    let mut h = Harness::new(standard_tools());
    h.script([
        calls(vec![
            call("a", "delete_file", json!({"path": "/a"})),
            call("r", "delete_file", json!({"path": "/r"})),
            call("rr", "delete_file", json!({"path": "/rr"})),
            call("e", "delete_file", json!({"path": "/e"})),
        ]),
        answer("Done."),
    ]);
    h.chat("go").unwrap();
    h.take_log();
    let out = h.decide(json!({
        "a": "approve",
        "r": "reject",
        "rr": ["reject", "Keep it"],
        "e": ["edit", {"path": "/e/old"}],
    }));
    assert_eq!(out.unwrap(), COMPLETED);
    assert_eq!(
        h.take_log(),
        [
            "persist(~tool_call started:a)",
            "run_tool(a)",
            "persist(started:e)",
            "run_tool(e)",
            "persist(+tool_call_result)",
            "call_model",
            "persist(+assistant)",
            "yield(completed)"
        ]
    );
    assert_eq!(
        h.executed,
        [
            ("a".to_string(), json!({"path": "/a"})),
            ("e".to_string(), json!({"path": "/e/old"}))
        ]
    );
    assert_eq!(h.result_of("a").unwrap(), r#"{"ok":"delete_file"}"#);
    assert_eq!(
        h.result_of("r").unwrap(),
        "TOOL NOT EXECUTED. The user rejected this action. User instruction: No specific \
         instruction provided.. Do not attempt this tool again. Follow the user's instruction or \
         reconsider your plan."
    );
    assert_eq!(
        h.result_of("rr").unwrap(),
        "TOOL NOT EXECUTED. The user rejected this action. User instruction: Keep it. Do not \
         attempt this tool again. Follow the user's instruction or reconsider your plan."
    );
    assert_eq!(
        h.result_of("e").unwrap(),
        "TOOL EXECUTED WITH EDITED ARGUMENTS. The user changed the arguments before approving \
         this action. You proposed: {\"path\":\"/e\"}. It ran with: {\"path\":\"/e/old\"}. \
         Result: {\"ok\":\"delete_file\"}"
    );
    // Only the edited entry carries `proposedInputs`; the others keep the documented keys.
    let t = h.thread();
    for (i, entry) in t[1]["tools"].as_array().unwrap().iter().enumerate() {
        let keys: Vec<&String> = entry.as_object().unwrap().keys().collect();
        if i == 3 {
            assert_eq!(keys.last().unwrap().as_str(), "proposedInputs");
            assert_eq!(keys.len(), 10);
        } else {
            assert_eq!(keys.len(), 9, "{entry}");
        }
    }
    assert_eq!(t[1]["tools"][1]["approval"], "rejected");
    assert_eq!(t[1]["tools"][2]["rejectReason"], "Keep it");
}

#[test]
fn edit_then_approve_runs_the_edited_inputs_and_tells_the_model() {
    let mut h = one_call();
    assert_eq!(
        h.decide(json!({"toolu_01": ["edit", {"path": "/var/log/old"}]}))
            .unwrap(),
        COMPLETED
    );
    assert_eq!(
        h.take_log(),
        [
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
        [("toolu_01".to_string(), json!({"path": "/var/log/old"}))]
    );
    let t = h.thread();
    // The call message shows what ran, and keeps what the model proposed.
    assert_eq!(
        t[1]["tools"][0],
        json!({
            "callId": "toolu_01", "name": "delete_file",
            "description": "Delete a file from the filesystem", "parameters": [],
            "inputs": {"path": "/var/log/old"}, "result": null,
            "approval": "approved", "approvalReason": null, "rejectReason": null,
            "proposedInputs": {"path": "/var/log"}
        })
    );
    assert_eq!(t[2]["type"], "tool_call_result");
    assert_eq!(t[2]["tools"][0]["inputs"], json!({"path": "/var/log/old"}));
    assert_eq!(
        t[2]["tools"][0]["proposedInputs"],
        json!({"path": "/var/log"})
    );
    assert_eq!(t[2]["tools"][0]["result"], EDITED_TEXT);
    // The result message round-trips with the same key order.
    let back: Message = serde_json::from_value(t[2].clone()).unwrap();
    assert_eq!(serde_json::to_value(&back).unwrap(), t[2]);
}

#[test]
fn an_edit_with_the_models_own_inputs_is_a_plain_approval() {
    let mut h = one_call();
    h.decide(json!({"toolu_01": ["edit", {"path": "/var/log"}]}))
        .unwrap();
    assert_eq!(
        h.executed,
        [("toolu_01".to_string(), json!({"path": "/var/log"}))]
    );
    assert_eq!(h.result_of("toolu_01").unwrap(), r#"{"ok":"delete_file"}"#);
    assert!(h.thread()[1]["tools"][0].get("proposedInputs").is_none());
}

#[test]
fn an_edit_is_not_put_to_the_approval_policy_again() {
    // send_email is gated by its policy; the human's edit is the approval of those inputs.
    let mut h = Harness::new(standard_tools());
    h.policy_fn = Box::new(|_| PolicyVerdict::Require(Some("Outbound email".into())));
    h.script([
        calls(vec![call(
            "m1",
            "send_email",
            json!({"to": "team@example.com"}),
        )]),
        answer("Sent."),
    ]);
    h.chat("mail the team").unwrap();
    assert!(h.take_log().contains(&"policies[m1]".to_string()));
    h.decide(json!({"m1": ["edit", {"to": "me@example.com", "subject": "Logs"}]}))
        .unwrap();
    let log = h.take_log();
    assert!(!log.iter().any(|l| l.starts_with("policies")), "{log:?}");
    assert_eq!(
        h.executed,
        [(
            "m1".to_string(),
            json!({"to": "me@example.com", "subject": "Logs"})
        )]
    );
    assert_eq!(
        h.thread()[1]["tools"][0]["approvalReason"],
        "Outbound email",
        "the card's reason stays what the human was shown"
    );
}

#[test]
fn an_invalid_edit_is_refused_with_the_schema_errors_and_stages_nothing() {
    let mut h = one_call();
    let e = refused(&mut h, json!({"toolu_01": ["edit", {"path": 5}]}));
    assert_eq!(e.code(), "invalid_decision");
    assert_eq!(
        e.to_string(),
        "the edited inputs for \"toolu_01\" do not match the schema of \"delete_file\": at \
         /path: expected string, found integer 5"
    );
    match &e {
        EngineError::InvalidDecision { call_id, .. } => {
            assert_eq!(call_id.as_deref(), Some("toolu_01"))
        }
        other => panic!("{other:?}"),
    }
    // A missing required property, an inputs value that is not an object, and a valid
    // decision beside an invalid edit: all refused whole.
    let e = refused(&mut h, json!({"toolu_01": ["edit", {}]}));
    assert!(e.to_string().contains("path"), "{e}");
    for bad in [
        json!({"toolu_01": ["edit", "/var/log/old"]}),
        json!({"toolu_01": ["edit", null]}),
        json!({"toolu_01": ["edit"]}),
    ] {
        assert_eq!(refused(&mut h, bad).code(), "invalid_decision");
    }
    let mut h = two_calls();
    let e = refused(
        &mut h,
        json!({"c1": "approve", "c2": ["edit", {"path": ["/b"]}]}),
    );
    assert_eq!(e.code(), "invalid_decision");
    assert_eq!(
        h.tail_entry("c1").approval_state(),
        Some(ApprovalState::Pending)
    );
    // The refusal changed nothing: the same call still takes a valid decision.
    assert_eq!(
        h.decide(json!({"c1": "approve", "c2": "approve"})).unwrap(),
        COMPLETED
    );
}

#[test]
fn an_edit_is_partial_and_revisable_and_the_journal_records_the_edited_inputs() {
    let mut h = two_calls();
    let writes = h.store.writes;
    assert_eq!(
        h.decide(json!({"c1": ["edit", {"path": "/a/1"}]})).unwrap(),
        Some(Outcome::AwaitingApproval)
    );
    assert_eq!(
        h.take_log(),
        ["persist(~tool_call)", "yield(awaiting_approval)"]
    );
    assert_eq!(
        h.store.writes,
        writes + 1,
        "the tail and its record: one write"
    );
    assert_eq!(
        decisions(&h),
        json!([{"callId": "c1", "approved": true, "inputs": {"path": "/a/1"}}])
    );
    let c1 = h.tail_entry("c1");
    assert_eq!(c1.approval_state(), Some(ApprovalState::Approved));
    assert_eq!(Value::Object(c1.inputs.clone()), json!({"path": "/a/1"}));

    // Edited again: the model's proposal stays the original one.
    h.decide(json!({"c1": ["edit", {"path": "/a/2"}]})).unwrap();
    assert_eq!(h.thread()[1]["tools"][0]["inputs"], json!({"path": "/a/2"}));
    assert_eq!(
        h.thread()[1]["tools"][0]["proposedInputs"],
        json!({"path": "/a"})
    );
    assert_eq!(
        decisions(&h),
        json!([{"callId": "c1", "approved": true, "inputs": {"path": "/a/2"}}])
    );

    // Edited back to the proposal: no longer an edit.
    h.decide(json!({"c1": ["edit", {"path": "/a"}]})).unwrap();
    assert!(h.thread()[1]["tools"][0].get("proposedInputs").is_none());

    // A rejection drops the edit: nothing runs, and the entry shows what the model asked.
    h.decide(json!({"c1": ["edit", {"path": "/a/3"}]})).unwrap();
    h.decide(json!({"c1": ["reject", "Not that one"]})).unwrap();
    let t = h.thread();
    assert_eq!(t[1]["tools"][0]["inputs"], json!({"path": "/a"}));
    assert!(t[1]["tools"][0].get("proposedInputs").is_none());
    assert_eq!(
        decisions(&h),
        json!([{"callId": "c1", "approved": false, "inputs": {"path": "/a"}}])
    );

    // `approve` approves the inputs the entry shows: after an edit, the edited ones.
    h.decide(json!({"c1": ["edit", {"path": "/a/4"}]})).unwrap();
    h.decide(json!({"c1": "approve"})).unwrap();
    assert_eq!(
        h.thread()[1]["tools"][0]["proposedInputs"],
        json!({"path": "/a"})
    );
    assert!(
        h.executed.is_empty(),
        "nothing runs before the set is complete"
    );

    assert_eq!(h.decide(json!({"c2": "approve"})).unwrap(), COMPLETED);
    assert_eq!(
        h.executed,
        [
            ("c1".to_string(), json!({"path": "/a/4"})),
            ("c2".to_string(), json!({"path": "/b"}))
        ]
    );
    assert!(
        h.result_of("c1").unwrap().contains(
            "You proposed: {\"path\":\"/a\"}. It ran with: {\"path\":\"/a/4\"}. Result: "
        )
    );
    assert_eq!(h.result_of("c2").unwrap(), r#"{"ok":"delete_file"}"#);
    // After the point of no return an edit is history too.
    let e = h
        .decide(json!({"c1": ["edit", {"path": "/z"}]}))
        .unwrap_err();
    assert_eq!(e.code(), "not_suspended");
}

#[test]
fn an_edited_stored_tail_without_its_record_is_regated_not_run() {
    let mut h = two_calls();
    h.decide(json!({"c1": ["edit", {"path": "/a/1"}]})).unwrap();
    // Someone rewrites the stored edit by hand: the record is for /a/1, the tail says /etc.
    h.store
        .messages
        .last_mut()
        .unwrap()
        .tool_calls_mut()
        .unwrap()[0]
        .inputs
        .insert("path".into(), json!("/etc"));
    h.engine = Engine::new(h.tools.clone(), EngineConfig::default(), h.store.state(), 3);
    assert_eq!(
        h.decide(json!({"c2": "approve"})).unwrap(),
        Some(Outcome::AwaitingApproval)
    );
    assert!(h.executed.is_empty(), "neither /etc nor /a/1 ran");
    let c1 = h.tail_entry("c1");
    assert_eq!(c1.approval_state(), Some(ApprovalState::Pending));
    assert_eq!(
        c1.approval.as_ref().unwrap().reason.as_deref(),
        Some(results::UNRECORDED_REASON)
    );
}

#[test]
fn an_edited_call_cut_off_mid_run_is_regated_with_its_edited_inputs() {
    let mut h = one_call();
    h.die_on_tool = Some("toolu_01".into());
    assert_eq!(
        h.decide(json!({"toolu_01": ["edit", {"path": "/var/log/old"}]}))
            .unwrap(),
        None
    );
    h.die_on_tool = None;
    h.reload();
    // The card shows the inputs that may have run, and what the model proposed.
    let e = h.tail_entry("toolu_01");
    assert!(e.is_pending());
    assert_eq!(
        Value::Object(e.inputs.clone()),
        json!({"path": "/var/log/old"})
    );
    assert_eq!(
        e.proposed_inputs.clone().map(Value::Object),
        Some(json!({"path": "/var/log"}))
    );
    assert!(h.store.run.as_ref().unwrap().decisions.is_empty());
    assert_eq!(h.decide(json!({"toolu_01": "approve"})).unwrap(), COMPLETED);
    assert_eq!(
        h.executed,
        [("toolu_01".to_string(), json!({"path": "/var/log/old"}))]
    );
    assert_eq!(h.result_of("toolu_01").unwrap(), EDITED_TEXT);
}

#[test]
fn an_edited_external_call_gets_the_note_around_the_apps_result() {
    let mut tools = standard_tools();
    let ticket = tools.iter_mut().find(|t| t.name == "open_ticket").unwrap();
    ticket.require_approval = Some(true);
    let mut h = Harness::new(tools);
    h.script([
        calls(vec![call(
            "t1",
            "open_ticket",
            json!({"title": "Disk full"}),
        )]),
        answer("Opened."),
    ]);
    h.chat("open a ticket").unwrap();
    assert_eq!(
        h.decide(json!({"t1": ["edit", {"title": "Disk full on db-2"}]}))
            .unwrap(),
        Some(Outcome::AwaitingToolResults)
    );
    assert_eq!(
        h.engine.awaiting_results()[0].inputs.get("title"),
        Some(&json!("Disk full on db-2"))
    );
    assert_eq!(h.results(json!({"t1": {"id": 7}})).unwrap(), COMPLETED);
    assert_eq!(
        h.result_of("t1").unwrap(),
        "TOOL EXECUTED WITH EDITED ARGUMENTS. The user changed the arguments before approving \
         this action. You proposed: {\"title\":\"Disk full\"}. It ran with: {\"title\":\"Disk \
         full on db-2\"}. Result: {\"id\":7}"
    );
}

fn tools_allowing(delete: &[&str]) -> Vec<ToolSpec> {
    let mut tools = standard_tools();
    tools[0].allowed_decisions = AllowedDecisions::parse(delete).unwrap();
    tools
}

fn suspended_with(tools: Vec<ToolSpec>) -> Harness {
    let mut h = Harness::new(tools);
    h.script([
        calls(vec![
            call("d1", "delete_file", json!({"path": "/a"})),
            call("m1", "send_email", json!({"to": "a@example.com"})),
        ]),
        answer("Done."),
    ]);
    h.chat("go").unwrap();
    h.take_log();
    h
}

#[test]
fn a_decision_outside_allowed_decisions_is_refused_and_stages_nothing() {
    let mut h = suspended_with(tools_allowing(&["approve", "reject"]));
    let e = refused(&mut h, json!({"d1": ["edit", {"path": "/b"}]}));
    assert_eq!(e.code(), "invalid_decision");
    assert_eq!(
        e.to_string(),
        "\"edit\" is not an allowed decision for \"d1\" (tool \"delete_file\"): its \
         allowedDecisions are [\"approve\", \"reject\"]"
    );
    // Refused whole, also beside a decision for another tool that allows everything.
    let e = refused(
        &mut h,
        json!({"m1": ["edit", {"to": "b@example.com"}], "d1": ["edit", {"path": "/b"}]}),
    );
    assert_eq!(e.code(), "invalid_decision");
    assert_eq!(
        h.tail_entry("m1").approval_state(),
        Some(ApprovalState::Pending)
    );
    // What is allowed still works.
    h.decide(json!({"d1": "reject", "m1": ["edit", {"to": "b@example.com"}]}))
        .unwrap();
    assert_eq!(
        h.executed,
        [("m1".to_string(), json!({"to": "b@example.com"}))]
    );

    let mut h = suspended_with(tools_allowing(&["reject"]));
    assert_eq!(
        refused(&mut h, json!({"d1": "approve"})).code(),
        "invalid_decision"
    );
    assert_eq!(
        refused(&mut h, json!({"d1": ["edit", {"path": "/a"}]})).code(),
        "invalid_decision"
    );
    h.decide(json!({"d1": ["reject", "No"]})).unwrap();

    let mut h = suspended_with(tools_allowing(&["approve", "edit"]));
    assert_eq!(
        refused(&mut h, json!({"d1": "reject"})).code(),
        "invalid_decision"
    );
    assert_eq!(
        refused(&mut h, json!({"d1": ["reject", "No"]})).code(),
        "invalid_decision"
    );
    h.decide(json!({"d1": ["edit", {"path": "/c"}], "m1": "approve"}))
        .unwrap();
    assert_eq!(h.executed[0], ("d1".to_string(), json!({"path": "/c"})));
}

#[test]
fn an_allowed_decision_is_checked_before_the_edits_schema() {
    // The refusal names what the tool allows, not what is wrong with inputs it will never take.
    let mut h = suspended_with(tools_allowing(&["approve", "reject"]));
    let e = refused(&mut h, json!({"d1": ["edit", {"path": 5}]}));
    assert!(e.to_string().contains("not an allowed decision"), "{e}");
}

/// A tool's static `approvalReason` is the entry's `approvalReason` when nothing more specific
/// gives one: `requireApproval: true`, or a policy that answers `true`. A policy's own string
/// wins.
#[test]
fn a_static_approval_reason_explains_a_gate_that_has_none() {
    let mut tools = standard_tools();
    tools[0].approval_reason = Some("Deleting cannot be undone".into());
    tools[1].approval_reason = Some("Emails leave the company".into());
    let mut h = Harness::new(tools);
    h.policy_fn = Box::new(|q| {
        if q.inputs["to"] == "ceo@example.com" {
            PolicyVerdict::Require(Some("Writing to the CEO".into()))
        } else {
            PolicyVerdict::Require(None)
        }
    });
    h.script([calls(vec![
        call("d", "delete_file", json!({"path": "/a"})),
        call("e1", "send_email", json!({"to": "team@example.com"})),
        call("e2", "send_email", json!({"to": "ceo@example.com"})),
    ])]);
    assert_eq!(h.chat("go").unwrap(), Some(Outcome::AwaitingApproval));
    let reason = |id: &str| {
        h.tail_entry(id)
            .approval
            .as_ref()
            .and_then(|a| a.reason.clone())
    };
    assert_eq!(reason("d").as_deref(), Some("Deleting cannot be undone"));
    assert_eq!(reason("e1").as_deref(), Some("Emails leave the company"));
    assert_eq!(reason("e2").as_deref(), Some("Writing to the CEO"));
}
