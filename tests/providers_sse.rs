//! The SSE parser against the WHATWG rules, fed in every way a network can cut a body.

use gatehouse_agent::providers::{SseEvent, SseParser};

fn ev(event: Option<&str>, data: &str) -> SseEvent {
    SseEvent {
        event: event.map(str::to_owned),
        data: data.to_owned(),
    }
}

fn whole(bytes: &[u8]) -> Vec<SseEvent> {
    let mut p = SseParser::new();
    let mut out = p.push(bytes);
    out.extend(p.finish());
    out
}

fn byte_by_byte(bytes: &[u8]) -> Vec<SseEvent> {
    let mut p = SseParser::new();
    let mut out = Vec::new();
    for b in bytes {
        out.extend(p.push(std::slice::from_ref(b)));
    }
    out.extend(p.finish());
    out
}

fn in_chunks(bytes: &[u8], size: usize) -> Vec<SseEvent> {
    let mut p = SseParser::new();
    let mut out = Vec::new();
    for c in bytes.chunks(size) {
        out.extend(p.push(c));
    }
    out.extend(p.finish());
    out
}

/// Every split point, every chunk size: the same events as in one piece.
fn assert_split_invariant(bytes: &[u8], expected: &[SseEvent]) {
    assert_eq!(whole(bytes), expected);
    assert_eq!(byte_by_byte(bytes), expected);
    for size in 2..8 {
        assert_eq!(in_chunks(bytes, size), expected, "chunk size {size}");
    }
    for cut in 0..=bytes.len() {
        let mut p = SseParser::new();
        let mut out = p.push(&bytes[..cut]);
        out.extend(p.push(&bytes[cut..]));
        out.extend(p.finish());
        assert_eq!(out, expected, "cut at byte {cut}");
    }
}

#[test]
fn named_and_unnamed_events_fed_byte_by_byte() {
    let body = b"event: message_start\ndata: {\"a\":1}\n\ndata: [DONE]\n\n";
    assert_split_invariant(
        body,
        &[ev(Some("message_start"), "{\"a\":1}"), ev(None, "[DONE]")],
    );
}

#[test]
fn multi_byte_characters_split_across_chunks() {
    let body = "data: {\"text\":\"Grüße, 世界 ☀ 🦀\"}\n\n".as_bytes();
    // The 4-byte crab is cut at each of its inner positions by the cut loop.
    assert_split_invariant(body, &[ev(None, "{\"text\":\"Grüße, 世界 ☀ 🦀\"}")]);
}

#[test]
fn crlf_cr_and_lf_line_endings_and_mixtures() {
    let expected = [ev(Some("a"), "1"), ev(None, "2"), ev(None, "3")];
    assert_split_invariant(
        b"event: a\r\ndata: 1\r\n\r\ndata: 2\r\n\r\ndata: 3\r\n\r\n",
        &expected,
    );
    assert_split_invariant(b"event: a\rdata: 1\r\rdata: 2\r\rdata: 3\r\r", &expected);
    assert_split_invariant(
        b"event: a\r\ndata: 1\n\ndata: 2\r\rdata: 3\r\n\n",
        &expected,
    );
}

#[test]
fn a_cr_at_a_chunk_end_then_lf_is_one_line_ending() {
    let mut p = SseParser::new();
    assert_eq!(p.push(b"data: x\r"), vec![]);
    // The LF completes the CRLF of the data line; only the next CRLF is the blank line.
    assert_eq!(p.push(b"\n"), vec![]);
    assert_eq!(p.push(b"\r"), vec![ev(None, "x")]);
    assert_eq!(p.push(b"\ndata: y\n\n"), vec![ev(None, "y")]);
}

#[test]
fn comments_are_ignored() {
    let body = b": keep-alive\n\n: OPENROUTER PROCESSING\ndata: 1\n: in the middle\ndata: 2\n\n";
    assert_split_invariant(body, &[ev(None, "1\n2")]);
}

#[test]
fn multi_line_data_is_joined_with_lf() {
    let body = b"data: {\ndata:   \"a\": 1\ndata:}\n\n";
    assert_split_invariant(body, &[ev(None, "{\n  \"a\": 1\n}")]);
}

#[test]
fn data_with_and_without_the_space() {
    assert_split_invariant(b"data:1\n\ndata: 2\n\n", &[ev(None, "1"), ev(None, "2")]);
}

#[test]
fn id_retry_and_unknown_fields_do_not_disturb_the_event() {
    let body = b"id: 7\nretry: 1000\nfoo: bar\nevent: ping\ndata: {}\n\n";
    assert_split_invariant(body, &[ev(Some("ping"), "{}")]);
}

#[test]
fn events_without_data_are_not_dispatched_and_their_type_resets() {
    assert_split_invariant(b"event: ping\n\ndata: x\n\n", &[ev(None, "x")]);
}

#[test]
fn a_leading_byte_order_mark_is_dropped() {
    let body = b"\xEF\xBB\xBFdata: 1\n\n";
    assert_split_invariant(body, &[ev(None, "1")]);
}

#[test]
fn invalid_utf8_becomes_replacement_characters() {
    assert_eq!(whole(b"data: a\xFFb\n\n"), vec![ev(None, "a\u{FFFD}b")]);
}

#[test]
fn finish_returns_an_event_missing_its_blank_line() {
    assert_eq!(
        whole(b"data: {\"type\":\"message_stop\"}\n"),
        vec![ev(None, "{\"type\":\"message_stop\"}")]
    );
    assert_eq!(whole(b"data: [DONE]\r\n"), vec![ev(None, "[DONE]")]);
}

#[test]
fn finish_drops_a_line_cut_before_its_end() {
    // The connection died mid-line: the fragment is not a line, so no half JSON comes out.
    assert_eq!(
        whole(b"data: 1\n\ndata: {\"choices\":[{\"del"),
        vec![ev(None, "1")]
    );
    let mut p = SseParser::new();
    p.push(b"data: a\ndata: {\"cut");
    assert_eq!(p.finish(), Some(ev(None, "a")));
    assert_eq!(p.finish(), None);
}
