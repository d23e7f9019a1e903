//! One JSON fixture per `onEvent` event, written from the `Event` enum, in
//! `tests/fixtures/events/<type>.json`. `make test-types` compiles them against the TypeScript
//! union `AgentEvent`, so the declared union and the enum cannot drift apart: a variant added
//! to the enum fails here until its fixture is written (UPDATE_GOLDEN=1), and then fails `tsc`
//! until the union has it.

use gatehouse_agent::engine::Outcome;
use gatehouse_agent::event::{Event, EventError};
use gatehouse_agent::thread::{Message, Usage};
use serde::Deserialize;
use serde::de::value::MapDeserializer;
use serde_json::json;
use std::borrow::Cow;
use std::collections::BTreeSet;
use std::path::PathBuf;

fn fixture_message(name: &str) -> Message {
    let path = PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures/thread")
        .join(name);
    serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap()
}

/// One event of each kind, with realistic contents.
fn examples() -> Vec<Event<'static>> {
    let user = fixture_message("user.json");
    let pending = fixture_message("seed_tool_call_pending.json");
    let answer = fixture_message("assistant.json");
    vec![
        Event::TextDelta {
            delta: "I deleted ".into(),
        },
        Event::ToolCallStarted {
            index: 0,
            call_id: "toolu_01A2B3C4D5E6F7".into(),
            name: "delete_file".into(),
        },
        Event::ToolCallDelta {
            index: 0,
            delta: "{\"path\": \"C:/old".into(),
        },
        Event::Message {
            message: Cow::Owned(user),
        },
        Event::MessageUpdated {
            message: Cow::Owned(pending.clone()),
        },
        Event::ModelCallStarted {},
        Event::ModelCallEnded {
            ok: true,
            usage: Some(Usage {
                input_tokens: 412,
                output_tokens: 38,
                cached_input_tokens: 0,
                reasoning_tokens: 0,
            }),
            stop_reason: Some("tool_use".into()),
            error: None,
        },
        Event::ToolStarted {
            call_id: "toolu_01A2B3C4D5E6F7".into(),
            name: "delete_file".into(),
            inputs: Cow::Owned(
                json!({ "path": "C:/old_logs.txt" })
                    .as_object()
                    .unwrap()
                    .clone(),
            ),
        },
        Event::ToolResult {
            call_id: "toolu_01A2B3C4D5E6F7".into(),
            name: "delete_file".into(),
            ok: true,
            result: Cow::Owned(json!({ "deleted": "C:/old_logs.txt" })),
        },
        Event::Retry {
            attempt: 1,
            delay_ms: 500,
            error: EventError {
                code: "provider".into(),
                message: "the provider answered HTTP 529: overloaded".into(),
                status: Some(529),
            },
        },
        Event::McpError {
            server: "github".into(),
            code: "unauthorized".into(),
            message: "The MCP server \"github\" refused the credentials (HTTP 401)".into(),
            status: Some(401),
        },
        Event::Warning {
            code: "mcp_tool_skipped".into(),
            message: "The MCP server \"github\" lists the tool \"x\", left out: its \
                inputSchema is not an object schema"
                .into(),
        },
        Event::ModelProgress {
            phase: "download".into(),
            loaded: 4_194_304,
            total: Some(98_362_432),
        },
        Event::ModelRuntime {
            device: "cpu".into(),
            threads: 1,
            single_thread_reason: Some("not_isolated".into()),
            cpu_reason: Some("no_webgpu".into()),
        },
        Event::Completed {
            message: Some(Cow::Owned(answer)),
        },
        Event::AwaitingApproval {
            message: Some(Cow::Owned(pending.clone())),
        },
        Event::AwaitingToolResults {
            message: Some(Cow::Owned(pending.clone())),
        },
        Event::AwaitingDevice {
            message: Some(Cow::Owned(pending)),
        },
    ]
}

/// Every variant's `type`, as serde's derive lists them: asked for an unknown variant, it
/// answers with the list.
fn all_types() -> Vec<&'static str> {
    #[derive(Debug)]
    struct Variants(&'static [&'static str]);
    impl std::fmt::Display for Variants {
        fn fmt(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
            write!(f, "{:?}", self.0)
        }
    }
    impl std::error::Error for Variants {}
    impl serde::de::Error for Variants {
        fn custom<T: std::fmt::Display>(msg: T) -> Self {
            panic!("expected an unknown-variant error, got: {msg}")
        }
        fn unknown_variant(_: &str, expected: &'static [&'static str]) -> Self {
            Variants(expected)
        }
    }
    let probe = MapDeserializer::<_, Variants>::new(std::iter::once(("type", "")));
    Event::deserialize(probe).unwrap_err().0.to_vec()
}

fn type_of(event: &Event) -> String {
    serde_json::to_value(event).unwrap()["type"]
        .as_str()
        .unwrap()
        .to_owned()
}

#[test]
fn one_example_per_variant() {
    let types: BTreeSet<String> = examples().iter().map(type_of).collect();
    let all: BTreeSet<String> = all_types().into_iter().map(str::to_owned).collect();
    assert_eq!(types.len(), examples().len(), "one example per variant");
    assert_eq!(types, all, "every variant of `Event` has an example");
}

#[test]
fn fixtures_match_the_enum() {
    let dir = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/events");
    let update = std::env::var_os("UPDATE_GOLDEN").is_some();
    if update {
        std::fs::create_dir_all(&dir).unwrap();
    }
    let mut names = BTreeSet::new();
    for event in examples() {
        let name = format!("{}.json", type_of(&event));
        let text = serde_json::to_string_pretty(&event).unwrap() + "\n";
        let path = dir.join(&name);
        if update {
            std::fs::write(&path, &text).unwrap();
        }
        let want = std::fs::read_to_string(&path)
            .unwrap_or_else(|_| panic!("{name} is missing: run with UPDATE_GOLDEN=1 once"));
        assert_eq!(
            text, want,
            "{name} drifted from the enum (UPDATE_GOLDEN=1 rewrites it)"
        );
        // And it reads back as the same event.
        assert_eq!(
            serde_json::from_str::<Event>(&want).unwrap(),
            event,
            "{name}"
        );
        names.insert(name);
    }
    let on_disk: BTreeSet<String> = std::fs::read_dir(&dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().into_string().unwrap())
        .collect();
    assert_eq!(
        on_disk, names,
        "a fixture without a variant in tests/fixtures/events"
    );
}

#[test]
fn field_names_are_camel_case_and_type_comes_first() {
    let e = Event::ToolCallStarted {
        index: 2,
        call_id: "c".into(),
        name: "n".into(),
    };
    assert_eq!(
        serde_json::to_string(&e).unwrap(),
        r#"{"type":"tool_call_started","index":2,"callId":"c","name":"n"}"#
    );
    let e = Event::finished(Outcome::AwaitingToolResults, None);
    assert_eq!(
        serde_json::to_string(&e).unwrap(),
        r#"{"type":"awaiting_tool_results","message":null}"#
    );
}
