//! The offline demo model: calls the tools the user mentions, with inputs from the schema and
//! the user's words, and summarises results (rejections included). Deterministic.

use gatehouse_agent::engine::ModelToolCall;
use gatehouse_agent::providers::demo::{respond, stream_deltas};
use gatehouse_agent::providers::{StreamDelta, ToolDef};
use gatehouse_agent::thread::{Message, MessageId, ToolEntry};
use serde_json::{Value, json};

fn id(n: u64) -> MessageId {
    MessageId::from_number(n)
}

fn tools() -> Vec<ToolDef> {
    vec![
        ToolDef::new(
            "delete_file",
            Some("Delete a file from the filesystem"),
            json!({ "type": "object", "properties": { "path": { "type": "string" } }, "required": ["path"] }),
        ),
        ToolDef::new(
            "send_email",
            Some("Send an e-mail"),
            json!({
                "type": "object",
                "properties": {
                    "to": { "type": "string", "format": "email" },
                    "subject": { "type": "string" },
                    "body": { "type": "string" },
                    "cc": { "type": "string" }
                },
                "required": ["to", "subject", "body"]
            }),
        ),
        ToolDef::new(
            "searchOrders",
            None,
            json!({
                "type": "object",
                "properties": {
                    "limit": { "type": "integer", "minimum": 1 },
                    "status": { "type": "string", "enum": ["open", "shipped", "returned"] }
                },
                "required": ["status"]
            }),
        ),
    ]
}

fn args(call: &ModelToolCall) -> Value {
    serde_json::from_str(&call.arguments).unwrap()
}

#[test]
fn delete_request_calls_the_gated_tool_with_the_path() {
    let history = vec![Message::user_text(id(1), "delete C:/old_logs.txt")];
    let out = respond(&history, &tools());
    assert!(out.text.starts_with("(demo) "), "{}", out.text);
    assert_eq!(out.tool_calls.len(), 1);
    let call = &out.tool_calls[0];
    assert_eq!(
        (call.id.as_str(), call.name.as_str()),
        ("demo_call_1_0", "delete_file")
    );
    assert_eq!(args(call), json!({ "path": "C:/old_logs.txt" }));
    assert_eq!(out.stop_reason.as_deref(), Some("tool_calls"));
    // Deterministic: same history, same answer.
    assert_eq!(respond(&history, &tools()), out);
}

#[test]
fn several_tools_in_the_order_mentioned_with_values_from_the_text() {
    let text =
        "Please email bob@example.com with subject \"Old logs\" and then delete /var/log/old.log.";
    let out = respond(&[Message::user_text(id(1), text)], &tools());
    let names: Vec<_> = out.tool_calls.iter().map(|c| c.name.as_str()).collect();
    assert_eq!(names, ["send_email", "delete_file"]);
    assert_eq!(
        args(&out.tool_calls[0]),
        json!({ "to": "bob@example.com", "subject": "Old logs", "body": text })
    );
    assert_eq!(
        args(&out.tool_calls[1]),
        json!({ "path": "/var/log/old.log" })
    );
    assert_ne!(out.tool_calls[0].id, out.tool_calls[1].id);
}

#[test]
fn camel_case_names_numbers_and_enums() {
    let out = respond(
        &[Message::user_text(
            id(1),
            "search the 5 most recent shipped orders",
        )],
        &tools(),
    );
    assert_eq!(out.tool_calls.len(), 1);
    assert_eq!(
        args(&out.tool_calls[0]),
        json!({ "limit": 5, "status": "shipped" })
    );

    // Required values it cannot find get placeholders.
    let out = respond(&[Message::user_text(id(1), "send an email")], &tools());
    let a = args(&out.tool_calls[0]);
    assert_eq!(a["to"], json!("someone@example.com"));
    assert!(a.get("cc").is_none());
}

#[test]
fn no_tool_mentioned_echoes_and_lists_tools() {
    let out = respond(&[Message::user_text(id(1), "Hello there")], &tools());
    assert!(out.tool_calls.is_empty());
    assert!(
        out.text.starts_with("(demo) You said: Hello there"),
        "{}",
        out.text
    );
    assert!(
        out.text.contains("delete_file, send_email, searchOrders"),
        "{}",
        out.text
    );
    assert_eq!(out.usage.map(|u| u.input_tokens), Some(2));
}

#[test]
fn summarises_results_and_says_plainly_when_a_tool_was_rejected() {
    let mut delete_call = ToolEntry::new("demo_call_1_0", "delete_file");
    delete_call.inputs = json!({ "path": "C:/old_logs.txt" })
        .as_object()
        .cloned()
        .unwrap();
    let mut deleted = delete_call.clone();
    deleted.result = Some("{\"deleted\":\"C:/old_logs.txt\"}".into());
    let mut email = ToolEntry::new("demo_call_1_1", "send_email");
    email.result = Some("TOOL NOT EXECUTED. The user rejected this action. User instruction: Do not email the team. Do not attempt this tool again. Follow the user's instruction or reconsider your plan.".into());
    let mut bare = ToolEntry::new("demo_call_1_2", "searchOrders");
    bare.result = Some("TOOL NOT EXECUTED. The user rejected this action. User instruction: No specific instruction provided.. Do not attempt this tool again. Follow the user's instruction or reconsider your plan.".into());
    let history = vec![
        Message::user_text(
            id(1),
            "delete C:/old_logs.txt, email the team, search orders",
        ),
        Message::tool_call(id(2), "(demo) Calling delete_file.", vec![delete_call]),
        Message::tool_call_result(id(3), vec![deleted, email, bare]),
    ];
    let out = respond(&history, &tools());
    assert!(out.tool_calls.is_empty());
    assert_eq!(
        out.text,
        "(demo) Tool results:\n\
         - delete_file returned: {\"deleted\":\"C:/old_logs.txt\"}\n\
         - send_email was not run: you rejected it (Do not email the team).\n\
         - searchOrders was not run: you rejected it (No specific instruction provided).\n\
         I will not try the rejected action again."
    );
    assert_eq!(out.stop_reason.as_deref(), Some("stop"));
}

#[test]
fn an_expired_request_is_not_called_a_rejection() {
    let mut expired = ToolEntry::new("demo_call_1_0", "delete_file");
    expired.approval = Some(gatehouse_agent::thread::Approval {
        state: gatehouse_agent::thread::ApprovalState::Expired,
        reason: None,
        reject_reason: None,
    });
    expired.result = Some(gatehouse_agent::engine::results::EXPIRED_TEXT.into());
    let history = vec![
        Message::user_text(id(1), "delete C:/old_logs.txt"),
        Message::tool_call(id(2), "(demo) Calling delete_file.", vec![expired.clone()]),
        Message::tool_call_result(id(3), vec![expired]),
    ];
    let out = respond(&history, &tools());
    assert_eq!(
        out.text,
        "(demo) Tool results:\n- delete_file was not run: nobody decided in time."
    );
}

#[test]
fn streams_like_a_real_model() {
    let out = respond(
        &[Message::user_text(id(1), "delete C:/old_logs.txt")],
        &tools(),
    );
    let deltas = stream_deltas(&out);
    let mut text = String::new();
    let mut arguments = String::new();
    for d in &deltas {
        match d {
            StreamDelta::Text(t) => {
                assert!(t.split_whitespace().count() <= 1, "word-sized: {t:?}");
                text.push_str(t);
            }
            StreamDelta::ToolCallStarted { index, id, name } => {
                assert_eq!(
                    (*index, id.as_str(), name.as_str()),
                    (0, "demo_call_1_0", "delete_file")
                );
            }
            StreamDelta::ToolCallArguments { index: 0, delta } => arguments.push_str(delta),
            other => panic!("{other:?}"),
        }
    }
    assert_eq!(text, out.text);
    assert_eq!(arguments, out.tool_calls[0].arguments);
    let fragments = deltas
        .iter()
        .filter(|d| matches!(d, StreamDelta::ToolCallArguments { .. }));
    assert!(fragments.count() > 1);
}

#[test]
fn a_tool_named_by_its_phrase_and_a_quoted_path_are_understood() {
    use gatehouse_agent::providers::{ToolDef, demo};
    use gatehouse_agent::thread::{Message, MessageId};
    use serde_json::json;
    let tools = vec![
        ToolDef::new(
            "list_files",
            Some("List files"),
            json!({"type": "object", "properties": {}}),
        ),
        ToolDef::new(
            "delete_file",
            Some("Delete a file"),
            json!({"type": "object", "properties": {"path": {"type": "string"}}, "required": ["path"]}),
        ),
    ];
    let out = demo::respond(
        &[Message::user_text(
            MessageId::from_number(1),
            "please list files",
        )],
        &tools,
    );
    assert_eq!(out.tool_calls.len(), 1);
    assert_eq!(out.tool_calls[0].name, "list_files");
    let out = demo::respond(
        &[Message::user_text(
            MessageId::from_number(1),
            "delete \"<img src=x onerror=alert(1)>\"",
        )],
        &tools,
    );
    let args: serde_json::Value = serde_json::from_str(&out.tool_calls[0].arguments).unwrap();
    assert_eq!(args["path"], "<img src=x onerror=alert(1)>");
}
