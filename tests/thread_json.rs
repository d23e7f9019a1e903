//! Golden fixtures pin the documented thread JSON (docs/design.md, "The thread JSON") byte for
//! byte, key order included.

mod support;

use gatehouse_agent::thread::{ApprovalState, Message, MessageKind};
use serde_json::{Value, json};
use std::path::PathBuf;
use support::*;

fn fixture(name: &str) -> String {
    let p = PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures")
        .join(name);
    std::fs::read_to_string(&p).unwrap_or_else(|e| panic!("{}: {e}", p.display()))
}

/// The fixture's own compact form, keys in the order written (serde_json keeps it).
fn compact(text: &str) -> String {
    serde_json::from_str::<Value>(text).unwrap().to_string()
}

fn round_trip(name: &str) -> Message {
    let text = fixture(name);
    let msg: Message = serde_json::from_str(&text).unwrap();
    assert_eq!(
        serde_json::to_string(&msg).unwrap(),
        compact(&text),
        "{name} round trip"
    );
    msg
}

#[test]
fn the_seed_example_round_trips_with_the_same_key_order() {
    let msg = round_trip("thread/seed_tool_call_pending.json");
    assert!(msg.is_suspended());
    assert_eq!(msg.resume_token(), Some("workflow_6650a1b2c3d4e"));
    let tools = msg.tool_calls().unwrap();
    assert_eq!(tools[0].approval_state(), Some(ApprovalState::Pending));
    assert_eq!(tools[1].approval_state(), Some(ApprovalState::Rejected));
    let r = tools[1].approval.as_ref().unwrap();
    assert_eq!(
        r.reason.as_deref(),
        Some("Outbound email reaches people outside this workspace")
    );
    assert_eq!(
        r.reject_reason.as_deref(),
        Some("Do not email the whole team")
    );
    // Exactly the documented keys, in the documented order.
    let v = serde_json::to_value(&msg).unwrap();
    let keys: Vec<&String> = v.as_object().unwrap().keys().collect();
    assert_eq!(
        keys,
        ["__id", "resume_token", "role", "content", "type", "tools"]
    );
    let entry_keys: Vec<&String> = v["tools"][0].as_object().unwrap().keys().collect();
    assert_eq!(
        entry_keys,
        [
            "callId",
            "name",
            "description",
            "parameters",
            "inputs",
            "result",
            "approval",
            "approvalReason",
            "rejectReason"
        ]
    );
}

#[test]
fn user_assistant_and_result_messages_round_trip() {
    let user = round_trip("thread/user.json");
    assert!(matches!(user.kind, MessageKind::Plain));
    assert!(
        !serde_json::to_value(&user)
            .unwrap()
            .as_object()
            .unwrap()
            .contains_key("type")
    );
    let a = round_trip("thread/assistant.json");
    assert_eq!(a.stop_reason(), Some("end_turn"));
    assert_eq!(a.usage.unwrap().output_tokens, 5);
    let r = round_trip("thread/tool_call_result.json");
    let tools = r.tool_results().unwrap();
    assert!(
        tools[1].approval.is_none(),
        "a non-gated entry has no approval keys"
    );
    assert_eq!(tools[1].result.as_deref(), Some(r#"{"a":1}"#));
}

#[test]
fn an_edited_entry_adds_only_proposed_inputs_after_the_documented_keys() {
    let r = round_trip("thread/tool_call_result_edited.json");
    let e = &r.tool_results().unwrap()[0];
    let (proposed, inputs) = (e.proposed_inputs.as_ref().unwrap(), &e.inputs);
    assert_eq!(
        inputs["path"], "C:/logs/old",
        "inputs are the inputs that ran"
    );
    assert_eq!(proposed["path"], "C:/logs");
    assert_eq!(
        e.result.as_deref(),
        Some(
            gatehouse_agent::engine::results::edited_result(proposed, inputs, r#"{"deleted":3}"#)
                .as_str()
        )
    );
    let v = serde_json::to_value(&r).unwrap();
    let keys: Vec<&String> = v["tools"][0].as_object().unwrap().keys().collect();
    assert_eq!(
        keys,
        [
            "callId",
            "name",
            "description",
            "parameters",
            "inputs",
            "result",
            "approval",
            "approvalReason",
            "rejectReason",
            "proposedInputs"
        ]
    );
}

#[test]
fn other_content_blocks_and_text_meta_survive_a_round_trip() {
    let m = round_trip("thread/mixed_blocks.json");
    assert_eq!(m.text(), "Answer");
}

#[test]
fn a_neuron_reloaded_message_is_read_and_written_in_the_documented_order() {
    // Neuron 3.x reloads write `type` and `tools` before `role` (the order its serializer
    // writes the keys in: docs/design.md, "The thread JSON").
    let reloaded = r#"{"__id":"msg_1","type":"tool_call","tools":[{"callId":"a","name":"x","description":null,"parameters":[],"inputs":[],"result":null}],"role":"assistant","content":[]}"#;
    let m: Message = serde_json::from_str(reloaded).unwrap();
    assert_eq!(
        serde_json::to_string(&m).unwrap(),
        r#"{"__id":"msg_1","role":"assistant","content":[],"type":"tool_call","tools":[{"callId":"a","name":"x","description":null,"parameters":[],"inputs":{},"result":null}]}"#
    );
}

#[test]
fn malformed_messages_are_errors_not_panics() {
    for bad in [
        json!({"role": "user", "content": []}),
        json!({"__id": "msg_1", "content": []}),
        json!({"__id": "msg_1", "role": "robot", "content": []}),
        json!({"__id": "msg_1", "role": "user", "content": [], "type": "weird"}),
        json!({"__id": "msg_1", "role": "assistant", "content": [], "type": "tool_call",
               "tools": [{"callId": "a", "name": "x", "inputs": 5}]}),
        json!([1, 2]),
    ] {
        assert!(
            serde_json::from_value::<Message>(bad.clone()).is_err(),
            "{bad}"
        );
    }
}

/// The whole thread of a scenario (mixed calls, a policy reason, a partial rejection, then
/// approval), against a golden file. Set UPDATE_GOLDEN=1 to rewrite it after a deliberate change.
#[test]
fn golden_thread_of_a_mixed_approval_scenario() {
    let mut h = Harness::new(standard_tools());
    h.policy_fn = Box::new(|_| {
        gatehouse_agent::engine::PolicyVerdict::Require(Some(
            "Outbound email reaches people outside this workspace".into(),
        ))
    });
    h.script([
        calls(vec![
            call(
                "toolu_01A2B3C4D5E6F7",
                "delete_file",
                json!({"path": "C:/old_logs.txt"}),
            ),
            call(
                "toolu_08G9H0I1J2K3L4",
                "send_email",
                json!({"to": "team@example.com", "subject": "Logs cleanup"}),
            ),
            call("toolu_03", "list_files", json!({})),
        ]),
        answer("I deleted the old logs and did not email the team."),
    ]);
    h.chat("Clean up the old logs and tell the team").unwrap();
    h.decide(json!({"toolu_08G9H0I1J2K3L4": ["reject", "Do not email the whole team"]}))
        .unwrap();
    let suspended = serde_json::to_string_pretty(h.tail()).unwrap();
    h.decide(json!({"toolu_01A2B3C4D5E6F7": "approve"}))
        .unwrap();
    let thread = serde_json::to_string_pretty(&h.store.messages).unwrap();
    let text = format!("{suspended}\n{thread}\n");

    let path =
        PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/golden/mixed_approval.txt");
    if std::env::var_os("UPDATE_GOLDEN").is_some() {
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(&path, &text).unwrap();
    }
    let want = std::fs::read_to_string(&path).expect("golden file (run with UPDATE_GOLDEN=1 once)");
    assert_eq!(
        text, want,
        "thread JSON drifted from tests/fixtures/golden/mixed_approval.txt"
    );
}
