//! Fuzzing of the SSE parser, which reads a provider's stream as it arrives: any bytes, cut
//! anywhere, give the events the standard's algorithm gives for the whole stream. Bounded: 256
//! cases per property (`PROPTEST_CASES` overrides it); no failure files are written.
#![cfg(not(target_arch = "wasm32"))]

mod fuzz_support;

use fuzz_support::{chunks, config, cuts, parse_sse};
use gatehouse_agent::providers::SseEvent;
use proptest::collection::vec;
use proptest::prelude::*;
use proptest::sample::Index;

/// The WHATWG algorithm over the whole stream at once: decode, split lines, interpret; plus
/// the parser's documented extra of dispatching a complete but unterminated final event.
fn reference_sse(bytes: &[u8]) -> Vec<SseEvent> {
    let text = String::from_utf8_lossy(bytes);
    let text = text.strip_prefix('\u{FEFF}').unwrap_or(&text);
    let mut lines = Vec::new();
    let mut cur = String::new();
    let mut it = text.chars().peekable();
    while let Some(c) = it.next() {
        match c {
            '\r' | '\n' => {
                if c == '\r' && it.peek() == Some(&'\n') {
                    it.next();
                }
                lines.push(std::mem::take(&mut cur));
            }
            c => cur.push(c),
        }
    }
    let (mut out, mut event, mut data) = (Vec::new(), String::new(), String::new());
    let dispatch = |event: &mut String, data: &mut String, out: &mut Vec<SseEvent>| {
        let e = std::mem::take(event);
        if !data.is_empty() {
            data.pop();
            out.push(SseEvent {
                event: Some(e).filter(|e| !e.is_empty()),
                data: std::mem::take(data),
            });
        }
    };
    for line in lines {
        if line.is_empty() {
            dispatch(&mut event, &mut data, &mut out);
            continue;
        }
        let (field, value) = match line.split_once(':') {
            Some((f, v)) => (f, v.strip_prefix(' ').unwrap_or(v)),
            None => (line.as_str(), ""),
        };
        match field {
            "" => {}
            "event" => event = value.to_owned(),
            "data" => {
                data.push_str(value);
                data.push('\n');
            }
            _ => {}
        }
    }
    dispatch(&mut event, &mut data, &mut out);
    out
}

fn sse_token() -> impl Strategy<Value = Vec<u8>> {
    const TOKENS: &[&[u8]] = &[
        b"data",
        b"data:",
        b"data: ",
        b"event:",
        b"event: ",
        b"id: 1",
        b"retry: 9",
        b":",
        b": ok",
        b" ",
        b"\n",
        b"\r",
        b"\r\n",
        b"\n\n",
        b"\r\n\r\n",
        "é".as_bytes(),
        "☀".as_bytes(),
        "😀".as_bytes(),
        b"\xFF",
        b"\xC3",
        b"\xE2\x98",
        b"\xF0\x9F\x98",
        b"\xEF\xBB\xBF",
        b"[DONE]",
        b"{\"a\":1}",
        b"x",
    ];
    prop_oneof![
        6 => proptest::sample::select(TOKENS).prop_map(<[u8]>::to_vec),
        1 => vec(any::<u8>(), 1..4),
    ]
}

fn sse_bytes() -> impl Strategy<Value = Vec<u8>> {
    vec(sse_token(), 0..48).prop_map(|t| t.concat())
}

proptest! {
    #![proptest_config(config())]

    /// Any bytes, cut anywhere (inside CRLF, inside a character): the events of the whole
    /// stream read at once by the standard's algorithm.
    #[test]
    fn sse_events_do_not_depend_on_chunking(bytes in sse_bytes(), picks in vec(any::<Index>(), 0..12)) {
        let want = reference_sse(&bytes);
        prop_assert_eq!(&parse_sse(&[&bytes]), &want);
        prop_assert_eq!(&parse_sse(&chunks(&bytes, &cuts(bytes.len(), &picks))), &want);
        let single: Vec<&[u8]> = bytes.chunks(1).collect();
        prop_assert_eq!(&parse_sse(&single), &want);
    }

    /// Uniformly random bytes, mostly not UTF-8 and with few line endings: the same.
    #[test]
    fn sse_random_bytes_read_as_the_standard_says(bytes in vec(any::<u8>(), 0..512), picks in vec(any::<Index>(), 0..6)) {
        prop_assert_eq!(parse_sse(&chunks(&bytes, &cuts(bytes.len(), &picks))), reference_sse(&bytes));
    }
}
