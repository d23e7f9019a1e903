//! Fuzzing of the streaming decoders of both providers, which read model answers from the
//! network: random event sequences, the real transcripts damaged event by event and byte by
//! byte, and the real transcripts cut anywhere. The SSE parser under them has its own file,
//! `fuzz_sse.rs`. Bounded: 256 cases per property (`PROPTEST_CASES` overrides it); no failure
//! files are written.
#![cfg(not(target_arch = "wasm32"))]

mod fuzz_support;

use fuzz_support::providers::*;
use fuzz_support::{chunks, config, cuts, mutate_bytes, mutate_value, parse_sse};
use gatehouse_agent::engine::ModelOutput;
use gatehouse_agent::providers::{
    ProviderError, ProviderKind, ResponseStream, SseEvent, StreamDecoder, StreamDelta,
};
use proptest::collection::vec;
use proptest::prelude::*;
use proptest::sample::Index;
use serde_json::Value;

const OPENAI_SSE: &str = include_str!("fixtures/providers/openai_stream_tools.sse");
const ANTHROPIC_SSE: &str = include_str!("fixtures/providers/anthropic_stream_tools.sse");

// ----- generators -------------------------------------------------------------------------

fn arb_index() -> impl Strategy<Value = Value> {
    prop_oneof![4 => (0u64..3).prop_map(Value::from), 1 => arb_count()]
}

fn openai_usage() -> impl Strategy<Value = Value> {
    (field(arb_count()), field(arb_count()), field(arb_count())).prop_map(|(p, c, cached)| {
        obj(vec![
            ("prompt_tokens", p),
            ("completion_tokens", c),
            (
                "prompt_tokens_details",
                cached.map(|n| obj(vec![("cached_tokens", Some(n))])),
            ),
        ])
    })
}

fn openai_chunk() -> impl Strategy<Value = Value> {
    let tool_call = (
        field(arb_index()),
        field(s(arb_string())),
        field(s(arb_string())),
        field(s(arb_string())),
    )
        .prop_map(|(index, id, name, args)| {
            obj(vec![
                ("index", index),
                ("id", id),
                (
                    "function",
                    Some(obj(vec![("name", name), ("arguments", args)])),
                ),
            ])
        });
    let delta = openai_message(s(arb_string()), tool_call);
    let choice = (
        field(arb_index()),
        field(delta),
        field(one_of(&["stop", "tool_calls", "length"])),
    )
        .prop_map(|(index, delta, finish)| {
            obj(vec![
                ("index", index),
                ("delta", delta),
                ("finish_reason", finish),
            ])
        });
    openai_body(
        vec(choice, 0..3).prop_map(Value::Array),
        openai_usage(),
        0.01,
    )
}

fn anthropic_event() -> impl Strategy<Value = Value> {
    #[rustfmt::skip]
    const TYPES: &[&str] = &[
        "message_start", "content_block_start", "content_block_start", "content_block_start",
        "content_block_delta", "content_block_delta", "content_block_delta", "content_block_delta",
        "content_block_stop", "message_delta", "message_stop", "ping", "error",
    ];
    let block = anthropic_block(&["text", "tool_use", "tool_use", "tool_use", "thinking"]);
    let delta = (
        field(one_of(&["text_delta", "input_json_delta"])),
        field(s(arb_string())),
        field(one_of(&["end_turn", "tool_use"])),
    )
        .prop_map(|(t, text, stop)| {
            obj(vec![
                ("type", t),
                ("text", text.clone()),
                ("partial_json", text),
                ("stop_reason", stop),
            ])
        });
    (
        field(one_of(TYPES)),
        field(arb_index()),
        field(block),
        field(delta),
        field(anthropic_usage()),
    )
        .prop_map(|(t, index, block, delta, usage)| {
            let message = usage.clone().map(|u| obj(vec![("usage", Some(u))]));
            obj(vec![
                ("type", t),
                ("index", index),
                ("message", message),
                ("content_block", block),
                ("delta", delta),
                ("usage", usage),
            ])
        })
}

/// JSON text as a stream carries it, now and then cut short or not JSON at all.
fn data_of(v: impl Strategy<Value = Value>) -> impl Strategy<Value = String> {
    (v, any::<Index>(), 0u8..40).prop_map(|(v, cut, how)| {
        let text = serde_json::to_string(&v).unwrap();
        match how {
            0 => "[DONE]".to_owned(),
            1 => String::new(),
            2 => text
                .chars()
                .take(cut.index(text.chars().count() + 1))
                .collect(),
            _ => text,
        }
    })
}

/// Random events, most often followed by the provider's terminal event so that many runs
/// get as far as an answer.
fn arb_events(kind: ProviderKind) -> BoxedStrategy<Vec<SseEvent>> {
    let (data, end) = match kind {
        ProviderKind::OpenAi => (
            prop_oneof![7 => data_of(openai_chunk()), 1 => data_of(arb_json())].boxed(),
            r#"{"choices":[{"index":0,"delta":{},"finish_reason":"stop"}]}"#,
        ),
        _ => (
            prop_oneof![7 => data_of(anthropic_event()), 1 => data_of(arb_json())].boxed(),
            r#"{"type":"message_stop"}"#,
        ),
    };
    let name = prop::option::weighted(
        0.1,
        one_of(&["error", "message_stop", "message_delta", "ping"]),
    )
    .prop_map(|n| n.map(|v| v.as_str().unwrap_or("").to_owned()));
    let event = (name, data).prop_map(|(event, data)| SseEvent { event, data });
    (vec(event, 0..12), prop::bool::weighted(0.7))
        .prop_map(move |(mut evs, terminal)| {
            if terminal {
                evs.push(SseEvent {
                    event: None,
                    data: end.to_owned(),
                });
            }
            evs
        })
        .boxed()
}

fn kinds() -> impl Strategy<Value = ProviderKind> {
    prop_oneof![Just(ProviderKind::OpenAi), Just(ProviderKind::Anthropic)]
}

// ----- oracles ----------------------------------------------------------------------------

type Outcome = (Vec<StreamDelta>, bool, Result<ModelOutput, ProviderError>);

/// Events through a decoder as the driver does it: stop at the first error.
fn decode(kind: ProviderKind, events: &[SseEvent]) -> Outcome {
    let mut d = StreamDecoder::new(kind).unwrap();
    let mut deltas = Vec::new();
    for ev in events {
        match d.on_event(ev) {
            Ok(ds) => deltas.extend(ds),
            Err(e) => return (deltas, d.is_finished(), Err(e)),
        }
    }
    let finished = d.is_finished();
    (deltas, finished, d.finish())
}

/// Bytes through a [`ResponseStream`], chunk by chunk, as the driver's read loop does.
fn stream(kind: ProviderKind, pieces: &[&[u8]]) -> Outcome {
    let mut st = ResponseStream::new(kind).unwrap();
    let mut deltas = Vec::new();
    for piece in pieces {
        match st.push(piece) {
            Ok(ds) => deltas.extend(ds),
            Err(e) => return (deltas, st.is_finished(), Err(e)),
        }
    }
    let finished = st.is_finished();
    match st.finish() {
        Ok((last, out)) => {
            deltas.extend(last);
            (deltas, finished, Ok(out))
        }
        Err(e) => (deltas, finished, Err(e)),
    }
}

/// What must hold of any stream's outcome: an error a stream can produce, or an output that
/// the deltas shown on the way agree with.
fn check_outcome((deltas, finished, result): &Outcome) -> Result<(), TestCaseError> {
    let out = match result {
        Err(ProviderError::Truncated { .. }) => {
            prop_assert!(!finished, "truncated after the terminal event");
            return Ok(());
        }
        Err(ProviderError::Malformed { .. } | ProviderError::Stream { .. }) => return Ok(()),
        Err(e) => return Err(TestCaseError::fail(format!("not a stream error: {e:?}"))),
        Ok(out) => out,
    };
    prop_assert!(
        *finished || out.stop_reason.is_some(),
        "complete without an end: {out:?}"
    );
    let mut text = String::new();
    let mut args: Vec<String> = Vec::new();
    for d in deltas {
        match d {
            StreamDelta::Text(t) => text.push_str(t),
            StreamDelta::ToolCallStarted { index, .. } => {
                prop_assert_eq!(*index, args.len(), "calls start in index order");
                args.push(String::new());
            }
            StreamDelta::ToolCallArguments { index, delta } => {
                prop_assert!(*index < args.len(), "arguments for a call not started");
                args[*index].push_str(delta);
            }
        }
    }
    prop_assert_eq!(&out.text, &text);
    prop_assert_eq!(out.tool_calls.len(), args.len());
    let mut left: Vec<&str> = out
        .tool_calls
        .iter()
        .map(|c| c.arguments.as_str())
        .collect();
    for a in args.iter().filter(|a| !a.trim().is_empty()) {
        let Some(i) = left.iter().position(|l| l == a) else {
            return Err(TestCaseError::fail(format!(
                "streamed arguments {a:?} lost: {out:?}"
            )));
        };
        left.remove(i);
    }
    for c in &out.tool_calls {
        prop_assert!(!c.id.is_empty() && !c.arguments.trim().is_empty(), "{c:?}");
    }
    Ok(())
}

fn same_outcome(a: &Outcome, b: &Outcome) -> bool {
    a.0 == b.0 && a.1 == b.1 && a.2 == b.2
}

// ----- properties -------------------------------------------------------------------------

fn fixture(kind: ProviderKind) -> &'static str {
    match kind {
        ProviderKind::OpenAi => OPENAI_SSE,
        _ => ANTHROPIC_SSE,
    }
}

proptest! {
    #![proptest_config(config())]

    #[test]
    fn openai_decoder_on_random_events(events in arb_events(ProviderKind::OpenAi)) {
        check_outcome(&decode(ProviderKind::OpenAi, &events))?;
    }

    #[test]
    fn anthropic_decoder_on_random_events(events in arb_events(ProviderKind::Anthropic)) {
        check_outcome(&decode(ProviderKind::Anthropic, &events))?;
    }

    /// The real transcripts with random nodes of random events replaced, deleted or cut.
    #[test]
    fn decoders_on_mutated_fixture_events(
        kind in kinds(),
        edits in vec((any::<Index>(), any::<Index>(), 0u8..8, arb_json()), 1..5),
    ) {
        let mut events = parse_sse(&[fixture(kind).as_bytes()]);
        for (which, at, op, with) in edits {
            let n = events.len();
            let ev = &mut events[which.index(n)];
            let Ok(mut v) = serde_json::from_str::<Value>(&ev.data) else { continue };
            mutate_value(&mut v, at, op == 0, with);
            ev.data = serde_json::to_string(&v).unwrap();
            if op == 1 {
                ev.data = ev.data.chars().take(at.index(ev.data.chars().count() + 1)).collect();
            }
        }
        check_outcome(&decode(kind, &events))?;
    }

    /// The real transcripts damaged byte by byte, read in random chunks.
    #[test]
    fn decoders_on_mutated_fixture_bytes(
        kind in kinds(),
        edits in vec((any::<Index>(), any::<u8>(), any::<u8>()), 0..8),
        cut in prop::option::of(any::<Index>()),
        picks in vec(any::<Index>(), 0..8),
    ) {
        let bytes = mutate_bytes(fixture(kind).as_bytes().to_vec(), &edits, cut);
        let outcome = stream(kind, &chunks(&bytes, &cuts(bytes.len(), &picks)));
        check_outcome(&outcome)?;
    }

    /// A valid transcript gives the same deltas and answer however it is cut, and whatever
    /// line endings it uses.
    #[test]
    fn decoders_do_not_depend_on_chunking_or_line_endings(
        kind in kinds(),
        ending in prop_oneof![Just("\n"), Just("\r\n"), Just("\r")],
        picks in vec(any::<Index>(), 0..24),
    ) {
        let whole = stream(kind, &[fixture(kind).as_bytes()]);
        prop_assert!(whole.2.is_ok());
        let text = fixture(kind).replace('\n', ending);
        let bytes = text.as_bytes();
        let cut = stream(kind, &chunks(bytes, &cuts(bytes.len(), &picks)));
        prop_assert!(same_outcome(&whole, &cut), "{:?}\nvs\n{:?}", whole, cut);
    }
}
