//! Fuzzing of what is read back from storage (or handed over as a seed thread): thread
//! records, message rows, and the message ids in them. Bounded: 256 cases per property
//! (`PROPTEST_CASES` overrides it); no failure files are written.
#![cfg(not(target_arch = "wasm32"))]

mod fuzz_support;

use fuzz_support::{
    FLIP, INSERT, REMOVE, config, finite_f64, json_tree, mutate_bytes, mutate_value, same_json,
};
use gatehouse_agent::store::{MessageRow, StoreError, ThreadRecord};
use gatehouse_agent::thread::{IdGen, Message, MessageId};
use proptest::collection::vec;
use proptest::prelude::*;
use proptest::sample::Index;
use serde_json::{Map, Value, json};

const RECORD: &str = include_str!("fixtures/store/v1_thread_record.json");
const GOLDEN: &str = include_str!("fixtures/golden/mixed_approval.txt");
const MESSAGES: &[&str] = &[
    include_str!("fixtures/thread/assistant.json"),
    include_str!("fixtures/thread/mixed_blocks.json"),
    include_str!("fixtures/thread/seed_tool_call_pending.json"),
    include_str!("fixtures/thread/tool_call_result.json"),
    include_str!("fixtures/thread/user.json"),
];

// ----- generators -------------------------------------------------------------------------

#[rustfmt::skip]
const KEYS: &[&str] = &[
    "__id", "role", "content", "usage", "type", "tools", "meta", "text", "callId", "name",
    "description", "parameters", "inputs", "result", "approval", "approvalReason", "rejectReason",
    "input_tokens", "output_tokens", "id", "schemaVersion", "version", "createdAt", "updatedAt",
    "messageCount", "title", "policies", "run", "pendingApprovals", "callMessageId", "results",
    "started", "enabled", "autoApprove",
];
#[rustfmt::skip]
const WORDS: &[&str] = &[
    "user", "assistant", "text", "tool_call", "tool_call_result", "pending", "approved",
    "rejected", "msg_1", "msg_18446744073709551615", "reasoning",
];

/// Any string Rust can hold: any scalar value, so no lone surrogate.
fn arb_string() -> impl Strategy<Value = String> {
    prop_oneof![
        2 => "[a-z_ ]{0,8}",
        3 => vec(any::<char>(), 0..12).prop_map(String::from_iter),
        1 => prop::sample::select(WORDS).prop_map(str::to_owned),
    ]
}

fn arb_int() -> impl Strategy<Value = Value> {
    prop_oneof![
        (0u64..10).prop_map(Value::from),
        any::<u64>().prop_map(Value::from),
        any::<i64>().prop_map(Value::from),
        prop::sample::select(&[u64::MAX, 1 << 53, (1 << 53) + 1, 1 << 63][..])
            .prop_map(Value::from),
        Just(Value::from(i64::MIN)),
    ]
}

/// JSON whose numbers come from `number`, nested up to four levels.
fn json_with(number: BoxedStrategy<Value>) -> BoxedStrategy<Value> {
    let leaf = prop_oneof![
        Just(Value::Null),
        any::<bool>().prop_map(Value::Bool),
        number,
        arb_string().prop_map(Value::String),
    ];
    let key = prop_oneof![
        prop::sample::select(KEYS).prop_map(str::to_owned),
        arb_string()
    ];
    json_tree(leaf.boxed(), key.boxed(), 24, 4)
}

fn arb_json() -> BoxedStrategy<Value> {
    json_with(prop_oneof![arb_int(), finite_f64()].boxed())
}

fn nullable(s: impl Strategy<Value = String>) -> impl Strategy<Value = Value> {
    prop::option::of(s).prop_map(|s| s.map_or(Value::Null, Value::String))
}

fn object(v: BoxedStrategy<Value>) -> impl Strategy<Value = Map<String, Value>> {
    vec((arb_string(), v), 0..4).prop_map(|kv| kv.into_iter().collect())
}

/// A message exactly as this crate writes it (docs/design.md, "The thread JSON"): `__id`, metadata,
/// `role`, `content`, `usage` when known, then `type` and `tools` for tool messages.
fn canonical_message(json: BoxedStrategy<Value>) -> impl Strategy<Value = Value> {
    let text_block = (arb_string(), object(json.clone())).prop_map(|(content, meta)| {
        let meta = if meta.is_empty() {
            json!([])
        } else {
            Value::Object(meta)
        };
        json!({ "type": "text", "content": content, "meta": meta })
    });
    // Any other block is kept as written; only a bare text block is typed.
    let other_block =
        (arb_string(), object(json.clone())).prop_filter_map("a text block", |(t, mut o)| {
            o.insert("type".into(), Value::String(t));
            let plain = o["type"] == "text"
                && o.get("content").is_some_and(Value::is_string)
                && o.keys()
                    .all(|k| matches!(k.as_str(), "type" | "content" | "meta"));
            (!plain).then_some(Value::Object(o))
        });
    let entry = (
        (
            arb_string(),
            arb_string(),
            nullable(arb_string()),
            json.clone(),
        ),
        (object(json.clone()), nullable(arb_string())),
        prop::option::of((
            prop::sample::select(&["pending", "approved", "rejected"][..]),
            nullable(arb_string()),
            nullable(arb_string()),
        )),
    )
        .prop_map(
            |((id, name, description, parameters), (inputs, result), approval)| {
                let mut e = Map::new();
                e.insert("callId".into(), json!(id));
                e.insert("name".into(), json!(name));
                e.insert("description".into(), description);
                e.insert("parameters".into(), parameters);
                e.insert("inputs".into(), Value::Object(inputs));
                e.insert("result".into(), result);
                if let Some((state, reason, reject)) = approval {
                    e.insert("approval".into(), json!(state));
                    e.insert("approvalReason".into(), reason);
                    e.insert("rejectReason".into(), reject);
                }
                Value::Object(e)
            },
        );
    let meta_key = arb_string().prop_filter("a message key", |k| {
        !matches!(
            k.as_str(),
            "__id" | "role" | "content" | "usage" | "type" | "tools"
        )
    });
    (
        prop_oneof![any::<u64>().prop_map(|n| format!("msg_{n}")), arb_string()],
        vec((meta_key, json), 0..3),
        prop::sample::select(&["user", "assistant"][..]),
        vec(prop_oneof![text_block, other_block], 0..4),
        prop::option::of([any::<u64>(), any::<u64>(), any::<u64>(), any::<u64>()]),
        prop::option::of((
            prop::sample::select(&["tool_call", "tool_call_result"][..]),
            vec(entry, 0..3),
        )),
    )
        .prop_map(|(id, meta, role, content, usage, kind)| {
            let mut m = Map::new();
            m.insert("__id".into(), json!(id));
            m.extend(meta);
            m.insert("role".into(), json!(role));
            m.insert("content".into(), Value::Array(content));
            if let Some([i, o, c, r]) = usage {
                m.insert(
                    "usage".into(),
                    json!({ "input_tokens": i, "output_tokens": o,
                    "cached_input_tokens": c, "reasoning_tokens": r }),
                );
            }
            if let Some((kind, tools)) = kind {
                m.insert("type".into(), json!(kind));
                m.insert("tools".into(), Value::Array(tools));
            }
            Value::Object(m)
        })
}

/// Valid text damaged: JSON nodes replaced or deleted, then bytes flipped, inserted, removed
/// or cut.
fn damaged(base: impl Strategy<Value = String>) -> impl Strategy<Value = String> {
    (
        base,
        vec((any::<Index>(), any::<bool>(), arb_json()), 0..4),
        vec((any::<Index>(), 0u8..4, any::<u8>()), 0..4),
        prop::option::weighted(0.3, any::<Index>()),
    )
        .prop_map(|(text, nodes, bytes, cut)| {
            let mut v: Value = serde_json::from_str(&text).unwrap();
            for (at, delete, with) in nodes {
                mutate_value(&mut v, at, delete, with);
            }
            // Of the four operations drawn, one inserts, one flips and two remove.
            let bytes: Vec<(Index, u8, u8)> = bytes
                .into_iter()
                .map(|(at, op, byte)| (at, [INSERT, FLIP, REMOVE, REMOVE][op as usize], byte))
                .collect();
            let b = mutate_bytes(serde_json::to_vec(&v).unwrap(), &bytes, cut);
            String::from_utf8_lossy(&b).into_owned()
        })
}

fn any_message_text() -> impl Strategy<Value = String> {
    // The golden file is the suspended tail, then the whole thread as an array.
    let mut golden: Vec<String> = MESSAGES.iter().map(|s| (*s).to_owned()).collect();
    for v in serde_json::Deserializer::from_str(GOLDEN).into_iter::<Value>() {
        match v.unwrap() {
            Value::Array(a) => golden.extend(a.iter().map(Value::to_string)),
            one => golden.push(one.to_string()),
        }
    }
    prop_oneof![
        3 => damaged(prop::sample::select(golden)),
        2 => damaged(canonical_message(arb_json()).prop_map(|v| v.to_string())),
        1 => arb_json().prop_map(|v| v.to_string()),
        1 => vec(any::<char>(), 0..64).prop_map(String::from_iter),
    ]
}

fn row(json: &str) -> MessageRow {
    MessageRow {
        seq: 7,
        json: json.to_owned(),
    }
}

/// serialize(deserialize(x)) == x, by both the serde path and the store's row path, for the
/// compact text and (to the compact text) for a pretty-printed one.
fn check_round_trip(v: &Value) -> Result<(), TestCaseError> {
    let text = v.to_string();
    let m: Message =
        serde_json::from_str(&text).map_err(|e| TestCaseError::fail(format!("{e}: {text}")))?;
    prop_assert_eq!(&m.to_json_string(), &text);
    prop_assert_eq!(&row(&text).message().unwrap(), &m);
    let pretty = serde_json::to_string_pretty(v).unwrap();
    prop_assert_eq!(&row(&pretty).message().unwrap().to_json_string(), &text);
    Ok(())
}

proptest! {
    #![proptest_config(config())]

    /// Damaged or random rows never panic; what reads back is stable under a write and a read.
    #[test]
    fn message_rows_never_panic(json in any_message_text()) {
        match row(&json).message() {
            Ok(m) => {
                let _ = (m.text(), m.is_suspended(), m.id.number());
                let again = row(&m.to_json_string()).message().unwrap();
                let (a, b) = (serde_json::to_value(&m).unwrap(), serde_json::to_value(&again).unwrap());
                prop_assert!(same_json(&a, &b), "{a}\nvs\n{b}");
            }
            Err(StoreError::Corrupt(msg)) => prop_assert!(msg.starts_with("message 7 ")),
            Err(e) => prop_assert!(false, "{e:?}"),
        }
    }

    #[test]
    fn records_never_panic(
        json in prop_oneof![
            3 => damaged(Just(RECORD.to_owned())),
            1 => arb_json().prop_map(|v| v.to_string()),
        ],
    ) {
        if let Ok(r) = serde_json::from_str::<ThreadRecord>(&json) {
            let text = serde_json::to_string(&r).unwrap();
            let again: ThreadRecord = serde_json::from_str(&text).unwrap();
            let (a, b) = (serde_json::to_value(&r).unwrap(), serde_json::to_value(&again).unwrap());
            prop_assert!(same_json(&a, &b), "{a}\nvs\n{b}");
        }
    }

    /// Messages as this crate writes them, with any text, big integers and nested inputs,
    /// read and written again byte for byte.
    #[test]
    fn valid_messages_round_trip_byte_for_byte(v in canonical_message(json_with(arb_int().boxed()))) {
        check_round_trip(&v)?;
    }

    /// Whatever id a stored tail has, the next ids are well formed, increasing, and after it
    /// when it has our format (a number below 2^63).
    #[test]
    fn ids_after_any_stored_id(
        id in prop_oneof![
            any::<u64>().prop_map(|n| format!("msg_{n}")),
            prop::sample::select(&[u64::MAX, u64::MAX - 1, 1 << 63, (1 << 63) - 1, (1 << 63) - 2, 0][..])
                .prop_map(|n| format!("msg_{n}")),
            "msg_[+0-9]{1,22}",
            arb_string(),
        ],
        machine in any::<u64>(),
        clocks in vec(prop_oneof![any::<u64>(), 1_700_000_000_000u64..1_900_000_000_000], 1..4),
    ) {
        let stored = MessageId::from_raw(id);
        let mut g = IdGen::new(machine);
        g.observe(&stored);
        let mut last = None;
        for now in clocks {
            let next = g.next(now);
            let n = next.number().unwrap();
            prop_assert_eq!(next.as_str(), format!("msg_{n}"));
            // Below 2^63 while there is room (the first id after one of our format).
            if let Some(k) = stored.number().filter(|&k| k < (1 << 63) - 1 && last.is_none()) {
                prop_assert!(n > k && n < 1 << 63, "{n} after {k}");
            }
            prop_assert!(last.is_none_or(|l| n > l));
            last = Some(n);
        }
    }
}

proptest! {
    #![proptest_config(config())]

    /// Floats in messages read back exactly (serde_json's `float_roundtrip` feature: without
    /// it a float can come back one unit off in the last place at every read and write).
    #[test]
    fn float_numbers_round_trip(v in canonical_message(json_with(finite_f64().boxed()))) {
        check_round_trip(&v)?;
    }
}

/// What [`float_numbers_round_trip`] found without `float_roundtrip`: a longitude written as
/// 115.83286009028485 was read as 115.83286009028484, so a tool got a value the model did not
/// send.
#[test]
fn a_float_input_survives_a_read_and_a_write() {
    let text = r#"{"__id":"msg_1","role":"assistant","content":[],"type":"tool_call","tools":[{"callId":"c","name":"n","description":null,"parameters":[],"inputs":{"lon":115.83286009028485},"result":null}]}"#;
    let m = row(text).message().unwrap();
    assert_eq!(m.to_json_string(), text);
}

// ----- regressions found by the properties above -------------------------------------------

/// A stored id of `u64::MAX` (not our format, but any writer may store anything) made the
/// next id overflow: a panic in debug builds, `msg_0` in release.
#[test]
fn an_id_after_the_largest_number() {
    let mut g = IdGen::new(0);
    g.observe(&MessageId::from_raw("msg_18446744073709551615"));
    let n = g.next(0).number().unwrap();
    assert!(n < 1 << 63);
    assert!(g.next(0).number().unwrap() > n);
}
