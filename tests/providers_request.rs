//! Request building: the exact JSON each provider receives for a thread with every message
//! kind, headers, endpoints and the model config as JS writes it.

use gatehouse_agent::providers::{ModelConfig, ProviderKind, ToolDef, build_request};
use gatehouse_agent::thread::{Approval, ApprovalState, Message, MessageId, ToolEntry};
use serde_json::{Value, json};

const REJECTED: &str = "TOOL NOT EXECUTED. The user rejected this action. User instruction: Do not email the team. Do not attempt this tool again. Follow the user's instruction or reconsider your plan.";

fn id(n: u64) -> MessageId {
    MessageId::from_number(n)
}

fn entry(call_id: &str, name: &str, inputs: Value, result: Option<&str>) -> ToolEntry {
    let mut e = ToolEntry::new(call_id, name);
    e.inputs = inputs.as_object().cloned().unwrap_or_default();
    e.result = result.map(str::to_owned);
    e
}

/// user → tool_call (one approved, one rejected) → tool_call_result → assistant → user.
fn history() -> Vec<Message> {
    let mut delete = entry(
        "call_1",
        "delete_file",
        json!({ "path": "C:/old_logs.txt" }),
        None,
    );
    delete.approval = Some(Approval {
        state: ApprovalState::Approved,
        reason: None,
        reject_reason: None,
    });
    let mut email = entry(
        "call_2",
        "send_email",
        json!({ "to": "team@example.com", "subject": "Logs" }),
        None,
    );
    email.approval = Some(Approval {
        state: ApprovalState::Rejected,
        reason: None,
        reject_reason: Some("Do not email the team".into()),
    });
    let results = vec![
        entry(
            "call_1",
            "delete_file",
            json!({ "path": "C:/old_logs.txt" }),
            Some("{\"deleted\":\"C:/old_logs.txt\"}"),
        ),
        entry(
            "call_2",
            "send_email",
            json!({ "to": "team@example.com", "subject": "Logs" }),
            Some(REJECTED),
        ),
    ];
    vec![
        Message::user_text(id(1), "Clean up the old logs and tell the team"),
        Message::tool_call(
            id(2),
            "I'll delete the file and email the team.",
            vec![delete, email],
        ),
        Message::tool_call_result(id(3), results),
        Message::assistant_text(id(4), "Deleted the log; I did not email the team."),
        Message::assistant_text(id(5), ""), // an empty answer is not sent
        Message::user_text(id(6), "Thanks!"),
    ]
}

fn tools() -> Vec<ToolDef> {
    let schema = json!({
        "type": "object",
        "properties": { "path": { "type": "string" } },
        "required": ["path"]
    });
    let mut delete = ToolDef::new(
        "delete_file",
        Some("Delete a file from the filesystem"),
        schema,
    );
    delete.extra.insert("strict".into(), json!(true));
    vec![delete, ToolDef::new("send_email", None, Value::Null)]
}

fn config(provider: ProviderKind, model: &str) -> ModelConfig {
    let mut cfg = ModelConfig::new(provider, model);
    cfg.api_key = Some("sk-secret-123".into());
    cfg
}

fn body(req: &gatehouse_agent::providers::HttpRequest) -> Value {
    serde_json::from_str(&req.body).unwrap()
}

#[test]
fn openai_request_for_a_full_thread() {
    let cfg = config(ProviderKind::OpenAi, "gpt-4o-mini");
    let req = build_request(&cfg, Some("You are careful."), &history(), &tools()).unwrap();
    assert_eq!(req.url, "https://api.openai.com/v1/chat/completions");
    assert_eq!(
        req.headers,
        vec![
            ("content-type".to_owned(), "application/json".to_owned()),
            ("accept".to_owned(), "text/event-stream".to_owned()),
            (
                "Authorization".to_owned(),
                "Bearer sk-secret-123".to_owned()
            ),
        ]
    );
    assert!(!req.body.contains("sk-secret"));
    let expected = json!({
        "model": "gpt-4o-mini",
        "messages": [
            { "role": "system", "content": "You are careful." },
            { "role": "user", "content": "Clean up the old logs and tell the team" },
            {
                "role": "assistant",
                "content": "I'll delete the file and email the team.",
                "tool_calls": [
                    { "id": "call_1", "type": "function",
                      "function": { "name": "delete_file", "arguments": "{\"path\":\"C:/old_logs.txt\"}" } },
                    { "id": "call_2", "type": "function",
                      "function": { "name": "send_email", "arguments": "{\"to\":\"team@example.com\",\"subject\":\"Logs\"}" } }
                ]
            },
            { "role": "tool", "tool_call_id": "call_1", "content": "{\"deleted\":\"C:/old_logs.txt\"}" },
            { "role": "tool", "tool_call_id": "call_2", "content": REJECTED },
            { "role": "assistant", "content": "Deleted the log; I did not email the team." },
            { "role": "user", "content": "Thanks!" }
        ],
        "tools": [
            { "type": "function", "function": {
                "name": "delete_file",
                "description": "Delete a file from the filesystem",
                "parameters": { "type": "object", "properties": { "path": { "type": "string" } }, "required": ["path"] },
                "strict": true
            } },
            { "type": "function", "function": {
                "name": "send_email",
                "parameters": { "type": "object", "properties": {} }
            } }
        ],
        "stream": true,
        "stream_options": { "include_usage": true }
    });
    assert_eq!(body(&req), expected);
    // Key order is part of the contract of a readable request.
    assert!(
        req.body
            .starts_with(r#"{"model":"gpt-4o-mini","messages":[{"role":"system""#)
    );
}

#[test]
fn anthropic_request_for_a_full_thread() {
    let mut cfg = config(ProviderKind::Anthropic, "claude-sonnet-4-5");
    cfg.temperature = Some(0.5);
    let req = build_request(&cfg, Some("You are careful."), &history(), &tools()).unwrap();
    assert_eq!(req.url, "https://api.anthropic.com/v1/messages");
    assert_eq!(req.header("x-api-key"), Some("sk-secret-123"));
    assert_eq!(req.header("anthropic-version"), Some("2023-06-01"));
    assert_eq!(
        req.header("anthropic-dangerous-direct-browser-access"),
        Some("true")
    );
    assert_eq!(req.header("Accept"), Some("text/event-stream"));
    assert_eq!(req.header("content-type"), Some("application/json"));
    assert_eq!(req.header("authorization"), None);
    assert!(!req.body.contains("sk-secret"));
    let expected = json!({
        "model": "claude-sonnet-4-5",
        "max_tokens": 4096,
        "system": "You are careful.",
        "messages": [
            { "role": "user", "content": [{ "type": "text", "text": "Clean up the old logs and tell the team" }] },
            { "role": "assistant", "content": [
                { "type": "text", "text": "I'll delete the file and email the team." },
                { "type": "tool_use", "id": "call_1", "name": "delete_file", "input": { "path": "C:/old_logs.txt" } },
                { "type": "tool_use", "id": "call_2", "name": "send_email", "input": { "to": "team@example.com", "subject": "Logs" } }
            ] },
            { "role": "user", "content": [
                { "type": "tool_result", "tool_use_id": "call_1", "content": "{\"deleted\":\"C:/old_logs.txt\"}" },
                { "type": "tool_result", "tool_use_id": "call_2", "content": REJECTED }
            ] },
            { "role": "assistant", "content": [{ "type": "text", "text": "Deleted the log; I did not email the team." }] },
            { "role": "user", "content": [{ "type": "text", "text": "Thanks!" }] }
        ],
        "tools": [
            { "name": "delete_file", "description": "Delete a file from the filesystem",
              "input_schema": { "type": "object", "properties": { "path": { "type": "string" } }, "required": ["path"] },
              "strict": true },
            { "name": "send_email", "input_schema": { "type": "object", "properties": {} } }
        ],
        "temperature": 0.5,
        "stream": true
    });
    assert_eq!(body(&req), expected);
}

#[test]
fn anthropic_merges_consecutive_turns_of_one_role() {
    let h = vec![
        Message::user_text(id(1), "delete a.txt"),
        Message::tool_call(
            id(2),
            "",
            vec![entry("toolu_1", "delete_file", json!({}), None)],
        ),
        Message::tool_call_result(
            id(3),
            vec![entry("toolu_1", "delete_file", json!({}), None)],
        ),
        Message::user_text(id(4), "and b.txt"),
    ];
    let cfg = config(ProviderKind::Anthropic, "claude-sonnet-4-5");
    let req = build_request(&cfg, None, &h, &[]).unwrap();
    let b = body(&req);
    assert_eq!(b.get("system"), None);
    assert_eq!(b.get("tools"), None);
    assert_eq!(
        b["messages"],
        json!([
            { "role": "user", "content": [{ "type": "text", "text": "delete a.txt" }] },
            { "role": "assistant", "content": [{ "type": "tool_use", "id": "toolu_1", "name": "delete_file", "input": {} }] },
            { "role": "user", "content": [
                { "type": "tool_result", "tool_use_id": "toolu_1" },
                { "type": "text", "text": "and b.txt" }
            ] }
        ])
    );
}

#[test]
fn openai_tool_message_without_result_and_assistant_without_text() {
    let h = vec![
        Message::tool_call(id(1), "", vec![entry("call_9", "now", json!({}), None)]),
        Message::tool_call_result(id(2), vec![entry("call_9", "now", json!({}), None)]),
    ];
    let cfg = config(ProviderKind::OpenAi, "llama3.1");
    let b = body(&build_request(&cfg, Some("  "), &h, &[]).unwrap());
    assert_eq!(
        b["messages"],
        json!([
            { "role": "assistant", "content": null, "tool_calls": [
                { "id": "call_9", "type": "function", "function": { "name": "now", "arguments": "{}" } }
            ] },
            { "role": "tool", "tool_call_id": "call_9", "content": "" }
        ])
    );
}

#[test]
fn non_streaming_requests_and_token_limits() {
    let mut cfg = config(ProviderKind::OpenAi, "o4-mini");
    cfg.stream = false;
    cfg.max_tokens = Some(300);
    let req = build_request(&cfg, None, &[], &[]).unwrap();
    assert_eq!(req.header("accept"), Some("application/json"));
    let b = body(&req);
    assert_eq!(b.get("stream"), None);
    assert_eq!(b.get("stream_options"), None);
    // api.openai.com: reasoning models only take max_completion_tokens.
    assert_eq!(b["max_completion_tokens"], json!(300));

    cfg.base_url = Some("http://localhost:11434/v1/".into());
    let req = build_request(&cfg, None, &[], &[]).unwrap();
    assert_eq!(req.url, "http://localhost:11434/v1/chat/completions");
    assert_eq!(body(&req)["max_tokens"], json!(300));

    let mut cfg = config(ProviderKind::Anthropic, "claude-haiku-4-5");
    cfg.max_tokens = Some(1024);
    cfg.stream = false;
    let b = body(&build_request(&cfg, None, &[], &[]).unwrap());
    assert_eq!(b["max_tokens"], json!(1024));
    assert_eq!(b.get("stream"), None);
}

#[test]
fn endpoints_tolerate_trailing_slashes_and_full_paths() {
    let cases = [
        (
            ProviderKind::OpenAi,
            None,
            "https://api.openai.com/v1/chat/completions",
        ),
        (
            ProviderKind::OpenAi,
            Some("https://openrouter.ai/api/v1///"),
            "https://openrouter.ai/api/v1/chat/completions",
        ),
        (
            ProviderKind::OpenAi,
            Some("http://h:8000/v1/chat/completions"),
            "http://h:8000/v1/chat/completions",
        ),
        (
            ProviderKind::Anthropic,
            Some("https://api.anthropic.com/"),
            "https://api.anthropic.com/v1/messages",
        ),
        (
            ProviderKind::Anthropic,
            Some("https://proxy.example/anthropic/v1"),
            "https://proxy.example/anthropic/v1/messages",
        ),
        (
            ProviderKind::Anthropic,
            Some("https://proxy.example/v1/messages/"),
            "https://proxy.example/v1/messages",
        ),
    ];
    for (kind, base, url) in cases {
        let mut cfg = config(kind, "m");
        cfg.base_url = base.map(str::to_owned);
        assert_eq!(cfg.endpoint(), url);
    }
}

#[test]
fn extra_headers_are_added_and_replace_defaults() {
    let cfg = ModelConfig::from_json(
        r#"{"provider":"anthropic","model":"claude-sonnet-4-5","apiKey":"k",
            "headers":{"anthropic-beta":"token-efficient-tools-2025-02-19","Anthropic-Version":"2025-01-01"}}"#,
    )
    .unwrap();
    let req = build_request(&cfg, None, &[], &[]).unwrap();
    assert_eq!(
        req.header("anthropic-beta"),
        Some("token-efficient-tools-2025-02-19")
    );
    assert_eq!(req.header("anthropic-version"), Some("2025-01-01"));
    assert_eq!(
        req.headers
            .iter()
            .filter(|(n, _)| n.eq_ignore_ascii_case("anthropic-version"))
            .count(),
        1
    );
}

#[test]
fn model_config_from_the_js_shape() {
    let cfg = ModelConfig::from_json(
        r#"{"provider":"openai","baseUrl":"http://localhost:11434/v1","apiKey":"sk-1","model":"llama3.1",
            "maxTokens":512,"temperature":0.2,"stream":false,"somethingNew":1}"#,
    )
    .unwrap();
    assert_eq!(cfg.provider, ProviderKind::OpenAi);
    assert_eq!(cfg.base_url.as_deref(), Some("http://localhost:11434/v1"));
    assert_eq!(cfg.api_key.as_deref(), Some("sk-1"));
    assert_eq!(
        (
            cfg.model.as_str(),
            cfg.max_tokens,
            cfg.temperature,
            cfg.stream
        ),
        ("llama3.1", Some(512), Some(0.2), false)
    );

    let demo = ModelConfig::from_json(r#"{"provider":"demo"}"#).unwrap();
    assert!(demo.stream);
    assert_eq!(demo.provider, ProviderKind::Demo);
}

#[test]
fn model_config_errors_say_what_to_fix() {
    let err = ModelConfig::from_json(r#"{"provider":"anthropic","apiKey":"k"}"#).unwrap_err();
    assert_eq!(err.code(), "invalid_config");
    assert!(
        err.to_string()
            .contains("`model` is required for provider \"anthropic\""),
        "{err}"
    );

    let err = ModelConfig::from_json(r#"{"provider":"gemini","model":"x"}"#).unwrap_err();
    assert!(err.to_string().contains("openai"), "{err}");

    let err =
        ModelConfig::from_json(r#"{"provider":"openai","model":"x","maxTokens":0}"#).unwrap_err();
    assert!(err.to_string().contains("maxTokens"), "{err}");

    // Built in Rust and never validated: build_request checks too.
    let cfg = ModelConfig::new(ProviderKind::OpenAi, "");
    assert_eq!(
        build_request(&cfg, None, &[], &[]).unwrap_err().code(),
        "invalid_config"
    );
    let cfg = ModelConfig::new(ProviderKind::Demo, "");
    assert_eq!(
        build_request(&cfg, None, &[], &[]).unwrap_err().code(),
        "invalid_config"
    );
}

#[test]
fn the_api_key_never_leaves_through_serialize_or_debug() {
    let cfg = ModelConfig::from_json(
        r#"{"provider":"openai","apiKey":"sk-very-secret","model":"gpt-4o",
            "headers":{"X-Title":"Gatehouse demo","Authorization":"Bearer sk-other-secret","X-Api-Key":"k2"}}"#,
    )
    .unwrap();
    let stored = serde_json::to_string(&cfg).unwrap();
    assert_eq!(
        stored,
        r#"{"provider":"openai","model":"gpt-4o","stream":true,"headers":{"X-Title":"Gatehouse demo"}}"#
    );
    let debug = format!("{cfg:?}");
    assert!(
        !debug.contains("sk-very-secret") && !debug.contains("sk-other-secret"),
        "{debug}"
    );
    // What was stored reads back (without the key).
    let back = ModelConfig::from_json(&stored).unwrap();
    assert_eq!(back.api_key, None);
    assert_eq!(back.model, "gpt-4o");
}

/// The OpenAI body, byte for byte, for every combination of the options that add keys
/// (fixture: one body per line, written by the `serde_json::Value` builder this one replaced).
#[test]
fn openai_request_bodies_are_pinned_byte_for_byte() {
    let mut out = String::new();
    for (base, stream, max, temp) in [
        (None, false, None, None),
        (
            Some("https://api.openai.com/v1"),
            true,
            Some(300u32),
            Some(0.7f64),
        ),
        (Some("http://localhost:1234/v1"), true, Some(5), Some(1.0)),
    ] {
        let mut cfg = config(ProviderKind::OpenAi, "gpt-x");
        if let Some(b) = base {
            cfg.base_url = Some(b.into());
        }
        cfg.stream = stream;
        cfg.max_tokens = max;
        cfg.temperature = temp;
        for instr in [None, Some("Be brief \u{2028} \"quoted\" é")] {
            for t in [vec![], tools()] {
                out.push_str(&build_request(&cfg, instr, &history(), &t).unwrap().body);
                out.push('\n');
            }
        }
    }
    let pinned = include_str!("fixtures/providers/openai_request_bodies.jsonl");
    for (i, (got, want)) in out.lines().zip(pinned.lines()).enumerate() {
        assert_eq!(got, want, "body {i}");
    }
    assert_eq!(out.lines().count(), pinned.lines().count());
}
