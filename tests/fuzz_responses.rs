//! Fuzzing of the provider's answers other than streams: whole JSON responses of both
//! providers, HTTP error bodies and `Retry-After` headers. Bounded: 256 cases per property
//! (`PROPTEST_CASES` overrides it); no failure files are written.
#![cfg(not(target_arch = "wasm32"))]

mod fuzz_support;

use fuzz_support::providers::*;
use fuzz_support::{config, mutate_bytes, mutate_value};
use gatehouse_agent::providers::{
    BODY_EXCERPT_CHARS, ProviderError, ProviderKind, RetryPolicy, SseEvent, StreamDecoder,
    parse_http_date, parse_response,
};
use proptest::collection::vec;
use proptest::prelude::*;
use proptest::sample::Index;
use serde_json::{Value, json};

const OPENAI_JSON: &str = r#"{"id":"chatcmpl-BcQ8","object":"chat.completion","created":1748496646,"model":"gpt-4o","choices":[{"index":0,"message":{"role":"assistant","content":null,"refusal":null,"annotations":[],"tool_calls":[{"id":"call_qOfT","type":"function","function":{"name":"get_weather","arguments":"{\"location\":\"Shanghai\"}"}}]},"logprobs":null,"finish_reason":"tool_calls"}],"usage":{"prompt_tokens":91,"completion_tokens":14,"total_tokens":105,"prompt_tokens_details":{"cached_tokens":0},"completion_tokens_details":{"reasoning_tokens":0}}}"#;
const ANTHROPIC_JSON: &str = r#"{"id":"msg_01Aq","type":"message","role":"assistant","model":"claude-sonnet-4-5","content":[{"type":"text","text":"I'll check the weather."},{"type":"tool_use","id":"toolu_01A0","name":"get_weather","input":{"location":"San Francisco, CA","unit":"celsius"}}],"stop_reason":"tool_use","stop_sequence":null,"usage":{"input_tokens":384,"cache_creation_input_tokens":100,"cache_read_input_tokens":1000,"output_tokens":92}}"#;

// ----- generators -------------------------------------------------------------------------

fn openai_response() -> impl Strategy<Value = Value> {
    let call = (
        field(s(arb_string())),
        field(s(arb_string())),
        field(prop_oneof![s(arb_string()), arb_json()]),
    )
        .prop_map(|(id, name, args)| {
            obj(vec![
                ("id", id),
                ("type", Some(json!("function"))),
                (
                    "function",
                    Some(obj(vec![("name", name), ("arguments", args)])),
                ),
            ])
        });
    let part =
        field(s(arb_string())).prop_map(|t| obj(vec![("type", Some(json!("text"))), ("text", t)]));
    let content = prop_oneof![
        s(arb_string()),
        Just(Value::Null),
        vec(part, 0..3).prop_map(Value::Array)
    ];
    let message = openai_message(content, call);
    let choice = (
        field(message),
        field(one_of(&["stop", "tool_calls", "length"])),
    )
        .prop_map(|(message, finish)| obj(vec![("message", message), ("finish_reason", finish)]));
    let usage = (
        field(arb_count()),
        field(arb_count()),
        field(arb_count()),
        field(arb_count()),
    )
        .prop_map(|(p, c, cached, reasoning)| {
            obj(vec![
                ("prompt_tokens", p),
                ("completion_tokens", c),
                (
                    "prompt_tokens_details",
                    cached.map(|n| obj(vec![("cached_tokens", Some(n))])),
                ),
                (
                    "completion_tokens_details",
                    reasoning.map(|n| obj(vec![("reasoning_tokens", Some(n))])),
                ),
            ])
        });
    openai_body(vec(choice, 0..2).prop_map(Value::Array), usage, 0.05)
}

fn anthropic_response() -> impl Strategy<Value = Value> {
    let block = anthropic_block(&["text", "tool_use", "thinking"]);
    (
        field(one_of(&["message", "error"])),
        field(vec(block, 0..4).prop_map(Value::Array)),
        field(anthropic_usage()),
        field(one_of(&["end_turn", "tool_use"])),
        field(arb_json()),
    )
        .prop_map(|(t, content, usage, stop, error)| {
            obj(vec![
                ("type", t),
                ("content", content),
                ("usage", usage),
                ("stop_reason", stop),
                ("error", error),
            ])
        })
}

/// Anthropic's whole prompt: input, cache reads and cache writes added up (saturating).
fn anthropic_input_tokens(usage: &Value) -> u64 {
    [
        "input_tokens",
        "cache_read_input_tokens",
        "cache_creation_input_tokens",
    ]
    .iter()
    .map(|k| usage.get(*k).and_then(Value::as_u64).unwrap_or(0))
    .fold(0, u64::saturating_add)
}

// ----- Retry-After ------------------------------------------------------------------------

const DAYS: [&str; 7] = ["Mon", "Tue", "Wed", "Thu", "Fri", "Sat", "Sun"];
#[rustfmt::skip]
const LONG_DAYS: [&str; 7] = [
    "Monday", "Tuesday", "Wednesday", "Thursday", "Friday", "Saturday", "Sunday",
];
const MONTHS: [&str; 12] = [
    "Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec",
];

/// Header values: dates and delays well- and ill-formed, built from the grammar's pieces.
fn arb_retry_after() -> impl Strategy<Value = String> {
    let token = prop_oneof![
        prop::sample::select(&DAYS[..]).prop_map(str::to_owned),
        prop::sample::select(&LONG_DAYS[..]).prop_map(str::to_owned),
        prop::sample::select(&MONTHS[..]).prop_map(str::to_owned),
        prop::sample::select(&[", ", " ", "  ", "-", ":", ".", "GMT", "\t", "e5", "+"][..])
            .prop_map(str::to_owned),
        "[0-9]{1,4}",
    ];
    prop_oneof![
        vec(token, 0..12).prop_map(|t| t.concat()),
        "[0-9]{0,30}(\\.[0-9]{0,30})?",
        "[0-9.]{0,12}",
        "[0-9]{300,400}\\.?[0-9]{0,10}",
        "0\\.0{300,400}1",
        vec(any::<char>(), 0..20).prop_map(String::from_iter),
    ]
}

fn is_leap(y: u64) -> bool {
    (y % 4 == 0 && y % 100 != 0) || y % 400 == 0
}

fn month_days(y: u64, m: u64) -> u64 {
    [
        31,
        if is_leap(y) { 29 } else { 28 },
        31,
        30,
        31,
        30,
        31,
        31,
        30,
        31,
        30,
        31,
    ][m as usize - 1]
}

/// Unix milliseconds by counting days, the slow and obvious way (0 before 1970).
fn naive_ms(y: u64, mo: u64, d: u64, h: u64, mi: u64, s: u64) -> u64 {
    if y < 1970 {
        return 0;
    }
    let days: u64 = (1970..y)
        .map(|y| if is_leap(y) { 366 } else { 365 })
        .sum::<u64>()
        + (1..mo).map(|m| month_days(y, m)).sum::<u64>()
        + d
        - 1;
    (days * 86_400 + h * 3600 + mi * 60 + s) * 1000
}

proptest! {
    #![proptest_config(config())]

    /// Whole responses: random JSON, structured responses with random fields, and the real
    /// responses damaged. Only an error a 2xx body can produce (`Malformed`, `Stream`) may come
    /// out.
    #[test]
    fn whole_responses_never_panic(
        kind in prop_oneof![Just(ProviderKind::OpenAi), Just(ProviderKind::Anthropic)],
        body in prop_oneof![
            1 => arb_json(),
            2 => openai_response(),
            2 => anthropic_response(),
            2 => (any::<bool>(), vec((any::<Index>(), any::<bool>(), arb_json()), 1..4)).prop_map(|(oa, edits)| {
                let mut v: Value = serde_json::from_str(if oa { OPENAI_JSON } else { ANTHROPIC_JSON }).unwrap();
                for (at, delete, with) in edits {
                    mutate_value(&mut v, at, delete, with);
                }
                v
            }),
        ].prop_map(|v| v.to_string()),
        edits in prop::option::weighted(0.2, (vec((any::<Index>(), any::<u8>(), any::<u8>()), 0..6), prop::option::of(any::<Index>()))),
    ) {
        let body = match edits {
            Some((edits, cut)) => String::from_utf8_lossy(&mutate_bytes(body.into_bytes(), &edits, cut)).into_owned(),
            None => body,
        };
        match parse_response(kind, 200, &body) {
            // OpenAI calls always get an id and arguments; Anthropic's are taken as sent.
            Ok(out) if kind == ProviderKind::OpenAi => {
                for c in &out.tool_calls {
                    prop_assert!(!c.id.is_empty() && !c.arguments.trim().is_empty(), "{c:?}");
                }
            }
            Ok(out) => {
                let v: Value = serde_json::from_str(&body).unwrap();
                if let Some(u) = v.get("usage") {
                    prop_assert_eq!(out.usage.map(|u| u.input_tokens), Some(anthropic_input_tokens(u)));
                }
            }
            Err(e @ (ProviderError::Malformed { .. } | ProviderError::Stream { .. })) => {
                prop_assert!(!e.to_string().is_empty());
            }
            Err(e) => prop_assert!(false, "unexpected error {e:?}"),
        }
    }

    /// Error bodies are anything a server or a proxy sends.
    #[test]
    fn http_error_bodies(
        status in prop_oneof![Just(429u16), Just(500), Just(400), any::<u16>()],
        body in prop_oneof![
            arb_json().prop_map(|v| v.to_string()),
            (arb_json(), arb_json()).prop_map(|(e, m)| json!({"error": e, "message": m, "type": "error"}).to_string()),
            vec(any::<char>(), 0..700).prop_map(String::from_iter),
        ],
        retry_after in prop::option::of(arb_retry_after()),
        attempt in 0u32..6,
    ) {
        let err = ProviderError::http(status, &body, retry_after.as_deref());
        let ProviderError::Http { body_excerpt, .. } = &err else { unreachable!() };
        prop_assert!(body.starts_with(body_excerpt.as_str()));
        prop_assert_eq!(body_excerpt.chars().count(), body.chars().count().min(BODY_EXCERPT_CHARS));
        prop_assert!(!err.to_string().is_empty());
        let p = RetryPolicy::default();
        if let Some(d) = p.delay_for(&err, attempt, 1_800_000_000_000, 0.5) {
            prop_assert!(err.retryable() && d <= p.max_delay_ms);
        }
    }

    /// Any header: a wait no longer than the cap, and `None` only when retries are used up.
    #[test]
    fn retry_after_never_panics(
        value in arb_retry_after(),
        attempt in 0u32..6,
        now in prop_oneof![Just(0u64), any::<u64>(), Just(1_800_000_000_000)],
        jitter in prop_oneof![0.0..=1.0, any::<f64>()],
    ) {
        let p = RetryPolicy::default();
        let d = p.delay_ms(attempt, Some(&value), now, jitter);
        prop_assert_eq!(d.is_some(), attempt.max(1) <= p.max_retries);
        prop_assert!(d.is_none_or(|d| d <= p.max_delay_ms));
        let _ = parse_http_date(&value);
    }

    /// Delay-seconds, whole or (as some servers send them) fractional: the value read as
    /// `str::parse` reads it; text that is no number falls back to the plain backoff.
    #[test]
    fn retry_after_seconds(value in prop_oneof!["[0-9]{1,30}", "[0-9]{0,25}\\.?[0-9]{0,25}", "[0-9.]{0,8}"], attempt in 1u32..4) {
        let p = RetryPolicy { max_retries: 3, base_delay_ms: 500, max_delay_ms: u64::MAX };
        let got = p.delay_ms(attempt, Some(&format!(" {value}\t")), 0, 0.0);
        let want = if !value.is_empty() && value.bytes().all(|b| b.is_ascii_digit()) {
            p.delay_ms(attempt, None, 0, 0.0).map(|_| value.parse::<u64>().map_or(u64::MAX, |s| s.saturating_mul(1000)))
        } else {
            match value.parse::<f64>() {
                Ok(secs) => Some((secs * 1000.0).ceil() as u64),
                Err(_) => p.delay_ms(attempt, None, 0, 0.0),
            }
        };
        prop_assert_eq!(got, want);
    }

    /// The three HTTP-date forms of one instant read as that instant; an impossible date
    /// (31 April, 29 February of a common year...) reads as nothing.
    #[test]
    fn http_dates(
        y in prop_oneof![1900u64..2300, prop::sample::select(&[1900u64, 1969, 1970, 2000, 2023, 2024, 2100, 2200][..])],
        mo in prop_oneof![1u64..=12, Just(2)],
        d in prop_oneof![1u64..=31, 28u64..=31],
        h in 0u64..24, mi in 0u64..60, s in 0u64..=60, wd in 0usize..7,
    ) {
        let m = MONTHS[mo as usize - 1];
        let imf = format!("{}, {d:02} {m} {y} {h:02}:{mi:02}:{s:02} GMT", DAYS[wd]);
        let asctime = format!("{} {m} {d:>2} {h:02}:{mi:02}:{s:02} {y}", DAYS[wd]);
        let want = (d <= month_days(y, mo)).then(|| naive_ms(y, mo, d, h, mi, s));
        prop_assert_eq!(parse_http_date(&imf), want, "{}", imf);
        prop_assert_eq!(parse_http_date(&asctime), want, "{}", asctime);
        if (1970..2070).contains(&y) {
            let rfc850 = format!("{}, {d:02}-{m}-{:02} {h:02}:{mi:02}:{s:02} GMT", LONG_DAYS[wd], y % 100);
            prop_assert_eq!(parse_http_date(&rfc850), want, "{}", rfc850);
        }
        let p = RetryPolicy { max_delay_ms: u64::MAX, ..RetryPolicy::default() };
        let now = 1_800_000_000_000;
        if let Some(at) = want {
            prop_assert_eq!(p.delay_ms(1, Some(&imf), now, 0.0), Some(at.saturating_sub(now)));
        }
    }
}

// ----- regressions found by the properties above -------------------------------------------

/// Anthropic's input counters are added up (input + cache reads + cache writes): counts near
/// `u64::MAX` overflowed (a panic in debug builds, a wrapped count in release).
#[test]
fn anthropic_usage_sums_saturate() {
    let body = r#"{"content":[],"usage":{"input_tokens":2,"output_tokens":0,"cache_read_input_tokens":0,"cache_creation_input_tokens":18446744073709551614}}"#;
    let out = parse_response(ProviderKind::Anthropic, 200, body).unwrap();
    assert_eq!(out.usage.unwrap().input_tokens, u64::MAX);
    // The streaming decoder adds them up the same way.
    let mut d = StreamDecoder::new(ProviderKind::Anthropic).unwrap();
    for data in [
        r#"{"type":"message_start","message":{"usage":{"input_tokens":18446744073709551615,"cache_read_input_tokens":1}}}"#,
        r#"{"type":"message_stop"}"#,
    ] {
        d.on_event(&SseEvent {
            event: None,
            data: data.to_owned(),
        })
        .unwrap();
    }
    assert_eq!(d.finish().unwrap().usage.unwrap().input_tokens, u64::MAX);
}
