//! What the property tests (`tests/fuzz_*.rs`) share: their proptest configuration, the
//! skeleton of random JSON, damage to bytes and to JSON, split points, and the SSE parser run
//! over pieces. The random JSON aimed at the providers' parsers is in [`providers`].
#![cfg(not(target_arch = "wasm32"))]
#![allow(dead_code)]

use gatehouse_agent::providers::{SseEvent, SseParser};
use proptest::collection::vec;
use proptest::prelude::*;
use proptest::sample::Index;
use serde_json::Value;

/// 256 cases per property (`PROPTEST_CASES` overrides it); no failure files are written.
pub fn config() -> ProptestConfig {
    let cases = std::env::var("PROPTEST_CASES")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(256);
    ProptestConfig {
        cases,
        failure_persistence: None,
        ..ProptestConfig::default()
    }
}

// ----- random JSON ------------------------------------------------------------------------

/// Any finite float, as a JSON number.
pub fn finite_f64() -> impl Strategy<Value = Value> {
    any::<f64>().prop_filter_map("finite", |f| {
        serde_json::Number::from_f64(f).map(Value::Number)
    })
}

/// JSON built from `leaf`, nested up to four levels: arrays and objects (keys from `key`) of
/// fewer than `branch` members each, about `size` nodes in all.
pub fn json_tree(
    leaf: BoxedStrategy<Value>,
    key: BoxedStrategy<String>,
    size: u32,
    branch: u32,
) -> BoxedStrategy<Value> {
    let members = 0..branch as usize;
    leaf.prop_recursive(4, size, branch, move |inner| {
        prop_oneof![
            vec(inner.clone(), members.clone()).prop_map(Value::Array),
            vec((key.clone(), inner), members.clone())
                .prop_map(|kv| Value::Object(kv.into_iter().collect())),
        ]
    })
    .boxed()
}

/// Equal JSON, floats included: serde_json's `float_roundtrip` feature reads a float back
/// exactly as it was written.
pub fn same_json(a: &Value, b: &Value) -> bool {
    a == b
}

// ----- damage -----------------------------------------------------------------------------

/// The operations of [`mutate_bytes`], by their number (taken modulo 4).
pub const FLIP: u8 = 0;
pub const REMOVE: u8 = 1;
pub const INSERT: u8 = 2;
pub const REPLACE: u8 = 3;

/// Byte-level damage: flips, deletions, insertions, and a cut at the end. An edit of an empty
/// buffer inserts its byte.
pub fn mutate_bytes(mut b: Vec<u8>, edits: &[(Index, u8, u8)], cut: Option<Index>) -> Vec<u8> {
    for (at, op, byte) in edits {
        if b.is_empty() {
            b.push(*byte);
            continue;
        }
        let i = at.index(b.len());
        match op % 4 {
            FLIP => b[i] ^= byte | 1,
            REMOVE => {
                b.remove(i);
            }
            INSERT => b.insert(i, *byte),
            _ => b[i] = *byte,
        }
    }
    if let Some(c) = cut {
        b.truncate(c.index(b.len() + 1));
    }
    b
}

/// Every node of `v` below the root, as (its parent's JSON pointer, its key in the parent).
pub fn nodes(v: &Value, at: &str, out: &mut Vec<(String, String)>) {
    let children: Vec<(String, &Value)> = match v {
        Value::Object(m) => m.iter().map(|(k, c)| (k.clone(), c)).collect(),
        Value::Array(a) => a
            .iter()
            .enumerate()
            .map(|(i, c)| (i.to_string(), c))
            .collect(),
        _ => return,
    };
    for (k, c) in children {
        nodes(
            c,
            &format!("{at}/{}", k.replace('~', "~0").replace('/', "~1")),
            out,
        );
        out.push((at.to_owned(), k));
    }
}

/// Replaces or deletes one node of `v` (the root can only be replaced).
pub fn mutate_value(v: &mut Value, at: Index, delete: bool, with: Value) {
    let mut ns = Vec::new();
    nodes(v, "", &mut ns);
    let pick = at.index(ns.len() + 1);
    let Some((parent, key)) = ns.get(pick) else {
        *v = with;
        return;
    };
    match v.pointer_mut(parent) {
        Some(Value::Object(m)) if delete => {
            m.shift_remove(key);
        }
        Some(Value::Object(m)) => {
            m.insert(key.clone(), with);
        }
        Some(Value::Array(a)) => {
            let i: usize = key.parse().unwrap();
            if delete {
                a.remove(i);
            } else {
                a[i] = with;
            }
        }
        other => panic!("{parent}: {other:?}"),
    }
}

// ----- pieces -----------------------------------------------------------------------------

/// Split points for a buffer, as sorted cut positions.
pub fn cuts(len: usize, picks: &[Index]) -> Vec<usize> {
    let mut c: Vec<usize> = picks.iter().map(|i| i.index(len + 1)).collect();
    c.sort_unstable();
    c.dedup();
    c
}

pub fn chunks<'a>(bytes: &'a [u8], cuts: &[usize]) -> Vec<&'a [u8]> {
    let mut out = Vec::new();
    let mut start = 0;
    for &c in cuts {
        out.push(&bytes[start..c]);
        start = c;
    }
    out.push(&bytes[start..]);
    out
}

/// The events of a stream pushed piece by piece through one [`SseParser`], then finished.
pub fn parse_sse(pieces: &[&[u8]]) -> Vec<SseEvent> {
    let mut p = SseParser::new();
    let mut out = Vec::new();
    for piece in pieces {
        out.extend(p.push(piece));
    }
    out.extend(p.finish());
    out
}

// ----- provider answers -------------------------------------------------------------------

/// Random JSON for the providers' parsers (`fuzz_parsers.rs`, `fuzz_responses.rs`): keys and
/// values they look at, structured fields that are sometimes absent or anything.
pub mod providers {
    use super::{finite_f64, json_tree};
    use proptest::collection::vec;
    use proptest::prelude::*;
    use serde_json::{Map, Value};

    /// Every key the provider parsers (whole responses, stream events, error bodies) look at,
    /// so that random objects hit their paths.
    #[rustfmt::skip]
    pub const KEYS: &[&str] = &[
        "choices", "index", "delta", "message", "content", "refusal", "tool_calls", "id",
        "function", "name", "arguments", "finish_reason", "usage", "error", "type", "text",
        "input", "partial_json", "stop_reason", "content_block", "prompt_tokens",
        "completion_tokens", "input_tokens", "output_tokens", "cache_read_input_tokens",
        "cache_creation_input_tokens", "code", "detail",
    ];

    pub fn arb_string() -> impl Strategy<Value = String> {
        prop_oneof![
            3 => "[a-z_ {}\":,]{0,10}",
            2 => vec(any::<char>(), 0..10).prop_map(String::from_iter),
            1 => proptest::sample::select(KEYS).prop_map(str::to_owned),
        ]
    }

    pub fn arb_count() -> impl Strategy<Value = Value> {
        prop_oneof![
            3 => (0u64..5000).prop_map(Value::from),
            1 => any::<u64>().prop_map(Value::from),
            1 => (u64::MAX - 2..=u64::MAX).prop_map(Value::from),
            1 => any::<i64>().prop_map(Value::from),
            1 => finite_f64(),
        ]
    }

    pub fn arb_leaf() -> impl Strategy<Value = Value> {
        prop_oneof![
            Just(Value::Null),
            any::<bool>().prop_map(Value::Bool),
            arb_count(),
            arb_string().prop_map(Value::String),
        ]
    }

    pub fn arb_json() -> impl Strategy<Value = Value> {
        let key = prop_oneof![
            proptest::sample::select(KEYS).prop_map(str::to_owned),
            arb_string()
        ];
        json_tree(arb_leaf().boxed(), key.boxed(), 32, 5)
    }

    /// A field of a structured event: mostly a plausible value, sometimes absent or anything.
    pub fn field(plausible: impl Strategy<Value = Value>) -> impl Strategy<Value = Option<Value>> {
        prop_oneof![6 => plausible.prop_map(Some), 2 => Just(None), 1 => arb_json().prop_map(Some)]
    }

    pub fn obj(fields: Vec<(&str, Option<Value>)>) -> Value {
        let mut m = Map::new();
        for (k, v) in fields {
            if let Some(v) = v {
                m.insert(k.to_owned(), v);
            }
        }
        Value::Object(m)
    }

    pub fn s(v: impl Strategy<Value = String>) -> impl Strategy<Value = Value> {
        v.prop_map(Value::String)
    }

    pub fn one_of(words: &'static [&'static str]) -> impl Strategy<Value = Value> {
        prop_oneof![4 => proptest::sample::select(words).prop_map(Value::from), 1 => s(arb_string())]
    }

    /// An OpenAI message, or a stream chunk's delta: content, refusal and up to two tool
    /// calls.
    pub fn openai_message(
        content: impl Strategy<Value = Value>,
        call: impl Strategy<Value = Value>,
    ) -> impl Strategy<Value = Value> {
        (
            field(content),
            field(s(arb_string())),
            field(vec(call, 0..3).prop_map(Value::Array)),
        )
            .prop_map(|(content, refusal, calls)| {
                obj(vec![
                    ("content", content),
                    ("refusal", refusal),
                    ("tool_calls", calls),
                ])
            })
    }

    /// An OpenAI response, or a stream chunk: `choices` (an array), usage, and with
    /// probability `error` an error of any shape.
    pub fn openai_body(
        choices: impl Strategy<Value = Value>,
        usage: impl Strategy<Value = Value>,
        error: f64,
    ) -> impl Strategy<Value = Value> {
        (
            field(choices),
            field(usage),
            prop::option::weighted(error, arb_json()),
        )
            .prop_map(|(choices, usage, error)| {
                obj(vec![
                    ("choices", choices),
                    ("usage", usage),
                    ("error", error),
                ])
            })
    }

    /// An Anthropic content block of one of `types` (or anything): text, or a tool use's id,
    /// name and input.
    pub fn anthropic_block(types: &'static [&'static str]) -> impl Strategy<Value = Value> {
        (
            field(one_of(types)),
            field(s(arb_string())),
            field(s(arb_string())),
            field(arb_json()),
        )
            .prop_map(|(t, text, id, input)| {
                obj(vec![
                    ("type", t),
                    ("text", text.clone()),
                    ("id", id),
                    ("name", text),
                    ("input", input),
                ])
            })
    }

    pub fn anthropic_usage() -> impl Strategy<Value = Value> {
        (
            field(arb_count()),
            field(arb_count()),
            field(arb_count()),
            field(arb_count()),
        )
            .prop_map(|(i, o, r, w)| {
                obj(vec![
                    ("input_tokens", i),
                    ("output_tokens", o),
                    ("cache_read_input_tokens", r),
                    ("cache_creation_input_tokens", w),
                ])
            })
    }
}
