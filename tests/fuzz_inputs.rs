//! Fuzzing of the payloads the app hands over: decisions (`submitDecisions`) and tool results
//! (`submitToolResults`). Bounded: 256 cases per property (`PROPTEST_CASES` overrides it); no
//! failure files are written.
#![cfg(not(target_arch = "wasm32"))]

mod fuzz_support;

use fuzz_support::{config, finite_f64, json_tree, same_json};
use gatehouse_agent::engine::results::output_to_result;
use gatehouse_agent::engine::{
    Decision, Decisions, Engine, EngineConfig, EngineError, Step, ThreadState, ThreadStatus,
    ToolResults, ToolSet, ToolSpec,
};
use gatehouse_agent::thread::{Message, MessageId, ToolEntry};
use proptest::collection::vec;
use proptest::prelude::*;
use serde_json::{Map, Value, json};

fn arb_string() -> impl Strategy<Value = String> {
    prop_oneof![
        3 => "[a-z_ ]{0,8}",
        2 => vec(any::<char>(), 0..10).prop_map(String::from_iter),
        1 => prop::sample::select(&["approve", "reject", "error", "message", "t1", " ", ""][..])
            .prop_map(str::to_owned),
    ]
}

fn arb_json() -> impl Strategy<Value = Value> {
    let leaf = prop_oneof![
        Just(Value::Null),
        any::<bool>().prop_map(Value::Bool),
        any::<u64>().prop_map(Value::from),
        any::<i64>().prop_map(Value::from),
        finite_f64(),
        arb_string().prop_map(Value::String),
    ];
    json_tree(leaf.boxed(), arb_string().boxed(), 32, 5)
}

// ----- decisions --------------------------------------------------------------------------

/// The documented forms, their near misses, and anything else.
fn arb_decision() -> impl Strategy<Value = Value> {
    prop_oneof![
        2 => Just(json!("approve")),
        2 => Just(json!("reject")),
        2 => arb_string().prop_map(|r| json!(["reject", r])),
        3 => prop::sample::select(vec![
            json!("Approve"), json!(" approve"), json!("reject "), json!("REJECT"), json!([]),
            json!(["reject"]), json!(["approve"]), json!(["reject", null]), json!(["reject", 5]),
            json!(["approve", "ok"]), json!(["reject", "a", "b"]), json!({"reject": "x"}),
            json!([["reject", "x"]]), json!(["Reject", "x"]), json!(true), json!(null),
        ]),
        2 => arb_json(),
    ]
}

fn arb_payload() -> impl Strategy<Value = Value> {
    let key = prop_oneof![3 => "t[0-9]", 1 => arb_string()];
    prop_oneof![
        6 => vec((key, arb_decision()), 0..5).prop_map(|kv| Value::Object(kv.into_iter().collect())),
        1 => arb_json(),
    ]
}

/// The decision rules (docs/design.md, "Approval semantics"), written out again: a non-empty object
/// whose every value is `"approve"`, `"reject"` or `["reject", string]` (a blank reason is no
/// reason). Else the first offending call id (none for a payload that is not a non-empty object).
fn expected_decisions(payload: &Value) -> Result<Vec<(String, Decision)>, Option<String>> {
    let map = payload.as_object().filter(|m| !m.is_empty()).ok_or(None)?;
    let mut out = Vec::new();
    for (id, v) in map {
        let d = match v {
            Value::String(s) if s == "approve" => Decision::Approve,
            Value::String(s) if s == "reject" => Decision::Reject(None),
            Value::Array(a) if a.len() == 2 && a[0] == "reject" && a[1].is_string() => {
                let r = a[1].as_str().unwrap();
                Decision::Reject(Some(r.to_owned()).filter(|r| !r.trim().is_empty()))
            }
            _ => return Err(Some(id.clone())),
        };
        out.push((id.clone(), d));
    }
    Ok(out)
}

// ----- tool results -----------------------------------------------------------------------

/// An engine whose tail asked for two external calls, `t1` and `t2`, both still waiting.
fn awaiting_results() -> Engine {
    let ext = ToolSpec {
        external: true,
        ..ToolSpec::new("ext")
    };
    let id = MessageId::from_number(1 << 40);
    let tail = Message::tool_call(
        id.clone(),
        "",
        vec![ToolEntry::new("t1", "ext"), ToolEntry::new("t2", "ext")],
    );
    let state = ThreadState {
        tail: Some(tail),
        run: Some(gatehouse_agent::engine::RunJournal::new(id)),
        ..ThreadState::default()
    };
    let e = Engine::new(ToolSet::new(vec![ext]), EngineConfig::default(), state, 1);
    assert_eq!(e.status(), ThreadStatus::AwaitingToolResults);
    e
}

proptest! {
    #![proptest_config(config())]

    #[test]
    fn decisions_accept_exactly_the_documented_forms(payload in arb_payload()) {
        match (Decisions::from_json(&payload), expected_decisions(&payload)) {
            (Ok(got), Ok(want)) => prop_assert_eq!(got.into_vec(), want),
            (Err(e), Err(call_id)) => {
                prop_assert_eq!(e.code(), "invalid_decision");
                let EngineError::InvalidDecision { call_id: got, .. } = &e else {
                    return Err(TestCaseError::fail(format!("{e:?}")));
                };
                prop_assert_eq!(got, &call_id);
                prop_assert!(!e.to_string().is_empty());
            }
            (got, want) => prop_assert!(false, "{payload}: got {got:?}, want {want:?}"),
        }
    }

    /// A result is the output itself when it is a string, else JSON that reads back as it.
    #[test]
    fn tool_outputs_become_result_strings(output in arb_json()) {
        let r = output_to_result(&output);
        match &output {
            Value::String(s) => prop_assert_eq!(&r, s),
            other => {
                let back: Value = serde_json::from_str(&r).unwrap();
                prop_assert!(same_json(&back, other), "{r} read back as {back}");
            }
        }
    }

    /// `submitToolResults`: a non-empty object keyed by waiting call ids, else refused whole.
    #[test]
    fn tool_result_payloads(
        payload in prop_oneof![
            4 => vec((prop_oneof![3 => "t[1-3]", 1 => arb_string()], arb_json()), 0..4)
                .prop_map(|kv| Value::Object(kv.into_iter().collect::<Map<_, _>>())),
            1 => arb_json(),
        ],
    ) {
        let mut e = awaiting_results();
        let before = e.state().clone();
        let res = ToolResults::from_json(&payload)
            .and_then(|r| e.submit_tool_results(&r, 1_800_000_000_000));
        let map = payload.as_object().filter(|m| !m.is_empty());
        match (map, res) {
            (None, Err(err)) => {
                prop_assert_eq!(err.code(), "invalid_tool_results");
                prop_assert_eq!(e.state(), &before);
            }
            (Some(m), Err(err)) => {
                let unknown = m.keys().find(|k| *k != "t1" && *k != "t2");
                prop_assert_eq!(Some(err.clone()), unknown.map(|id| EngineError::UnknownCallId {
                    call_id: id.clone(),
                    message: format!("\"{id}\" is not among the calls waiting for a result"),
                }));
                prop_assert_eq!(e.state(), &before);
            }
            (Some(m), Ok(())) => {
                let run = e.state().run.as_ref().unwrap();
                prop_assert_eq!(run.results.len(), m.len());
                for (id, v) in m {
                    let want = output_to_result(v);
                    prop_assert_eq!(run.result(id), Some(want.as_str()));
                }
                if m.len() < 2 {
                    prop_assert!(matches!(e.poll(), Some(Step::Persist(_))));
                    prop_assert_eq!(e.status(), ThreadStatus::AwaitingToolResults);
                } else {
                    prop_assert!(e.is_running());
                }
            }
            (None, Ok(())) => prop_assert!(false, "accepted {payload}"),
        }
    }
}
