//! Streaming decoders on documented transcripts: text, two tool calls with fragmented
//! arguments, usage, terminal events; truncation and in-stream errors.

use gatehouse_agent::engine::{ModelOutput, ModelToolCall};
use gatehouse_agent::providers::{
    ProviderError, ProviderKind, ResponseStream, SseEvent, StreamDecoder, StreamDelta,
};
use gatehouse_agent::thread::Usage;

const OPENAI: &str = include_str!("fixtures/providers/openai_stream_tools.sse");
const ANTHROPIC: &str = include_str!("fixtures/providers/anthropic_stream_tools.sse");

/// Feeds `body` in chunks of `size` bytes; returns every delta and the final output.
fn run(
    kind: ProviderKind,
    body: &[u8],
    size: usize,
) -> Result<(Vec<StreamDelta>, ModelOutput), ProviderError> {
    let mut stream = ResponseStream::new(kind)?;
    let mut deltas = Vec::new();
    for chunk in body.chunks(size) {
        deltas.extend(stream.push(chunk)?);
    }
    let (last, out) = stream.finish()?;
    deltas.extend(last);
    Ok((deltas, out))
}

/// Text and per-call arguments rebuilt from the deltas alone, as a UI would.
fn replay(deltas: &[StreamDelta]) -> (String, Vec<(String, String, String)>) {
    let mut text = String::new();
    let mut calls: Vec<(String, String, String)> = Vec::new();
    for d in deltas {
        match d {
            StreamDelta::Text(t) => text.push_str(t),
            StreamDelta::ToolCallStarted { index, id, name } => {
                assert_eq!(*index, calls.len(), "calls start in index order");
                calls.push((id.clone(), name.clone(), String::new()));
            }
            StreamDelta::ToolCallArguments { index, delta } => calls[*index].2.push_str(delta),
        }
    }
    (text, calls)
}

fn openai_expected() -> ModelOutput {
    ModelOutput {
        text: "Let me check the weather and tell Ana.".into(),
        tool_calls: vec![
            ModelToolCall::new(
                "call_DdmO9pD3xa9XTPNJ32zg2hcA",
                "get_weather",
                r#"{"location": "Paris, France"}"#,
            ),
            ModelToolCall::new(
                "call_Ff3wq8FZ1gTu9IvdQ3tuP5nK",
                "send_email",
                r#"{"to": "ana@example.com", "subject": "Weather in Paris été ☀"}"#,
            ),
        ],
        usage: Some(Usage {
            input_tokens: 1117,
            output_tokens: 146,
            cached_input_tokens: 1024,
            reasoning_tokens: 64,
        }),
        stop_reason: Some("tool_calls".into()),
    }
}

fn anthropic_expected() -> ModelOutput {
    ModelOutput {
        text: "Okay, let's check the weather for San Francisco, CA:".into(),
        tool_calls: vec![
            ModelToolCall::new(
                "toolu_01T1x1fJ34qAmk2tNTrN7Up6",
                "get_weather",
                r#"{"location": "San Francisco, CA", "unit": "fahrenheit"}"#,
            ),
            ModelToolCall::new(
                "toolu_01A09q90qw90lq917835lq9",
                "send_email",
                r#"{"to": "ana@example.com", "subject": "Météo ☀"}"#,
            ),
        ],
        // input_tokens excludes cache reads on the wire; the thread counts the whole prompt.
        usage: Some(Usage {
            input_tokens: 472 + 2048,
            output_tokens: 89,
            cached_input_tokens: 2048,
            reasoning_tokens: 0,
        }),
        stop_reason: Some("tool_use".into()),
    }
}

#[test]
fn openai_stream_with_text_and_two_fragmented_tool_calls() {
    for size in [OPENAI.len(), 1, 3, 17, 64] {
        let (deltas, out) = run(ProviderKind::OpenAi, OPENAI.as_bytes(), size).unwrap();
        assert_eq!(out, openai_expected(), "chunk size {size}");
        let (text, calls) = replay(&deltas);
        assert_eq!(text, out.text);
        let rebuilt: Vec<_> = calls
            .iter()
            .map(|(i, n, a)| ModelToolCall::new(i, n, a))
            .collect();
        assert_eq!(rebuilt, out.tool_calls);
    }
    let (deltas, _) = run(ProviderKind::OpenAi, OPENAI.as_bytes(), OPENAI.len()).unwrap();
    // Arguments arrive as the fragments the server sent, not all at once.
    let arg_deltas = deltas
        .iter()
        .filter(|d| matches!(d, StreamDelta::ToolCallArguments { .. }));
    assert_eq!(arg_deltas.count(), 11);
    assert_eq!(deltas[0], StreamDelta::Text("Let me".into()));
}

#[test]
fn anthropic_stream_with_text_and_two_fragmented_tool_calls() {
    for size in [ANTHROPIC.len(), 1, 5, 33] {
        let (deltas, out) = run(ProviderKind::Anthropic, ANTHROPIC.as_bytes(), size).unwrap();
        assert_eq!(out, anthropic_expected(), "chunk size {size}");
        let (text, calls) = replay(&deltas);
        assert_eq!(text, out.text);
        assert_eq!(calls[0].0, "toolu_01T1x1fJ34qAmk2tNTrN7Up6");
        assert_eq!(calls[1].2, out.tool_calls[1].arguments);
    }
}

#[test]
fn the_decoder_reports_the_terminal_event() {
    for (kind, body) in [
        (ProviderKind::OpenAi, OPENAI),
        (ProviderKind::Anthropic, ANTHROPIC),
    ] {
        let mut stream = ResponseStream::new(kind).unwrap();
        let cut = body.len() - 30;
        stream.push(&body.as_bytes()[..cut]).unwrap();
        assert!(!stream.is_finished());
        stream.push(&body.as_bytes()[cut..]).unwrap();
        assert!(stream.is_finished(), "{kind:?}");
    }
}

#[test]
fn crlf_transcripts_decode_the_same() {
    let crlf = ANTHROPIC.replace('\n', "\r\n");
    let (_, out) = run(ProviderKind::Anthropic, crlf.as_bytes(), 7).unwrap();
    assert_eq!(out, anthropic_expected());
}

#[test]
fn a_truncated_stream_is_a_retryable_network_error() {
    for (kind, body) in [
        (ProviderKind::OpenAi, OPENAI),
        (ProviderKind::Anthropic, ANTHROPIC),
    ] {
        // Cut inside the second tool call's arguments, mid-line.
        let cut = body.find("send_email").unwrap() + 400;
        let err = run(kind, &body.as_bytes()[..cut], 10).unwrap_err();
        assert!(
            matches!(err, ProviderError::Truncated { .. }),
            "{kind:?}: {err:?}"
        );
        assert_eq!(err.code(), "network");
        assert!(err.retryable());
        assert!(err.to_string().contains("ended early"), "{err}");
    }
    // Cut right after a complete event: still truncated.
    let second_call = OPENAI.find(r#""index":1,"id""#).unwrap();
    let cut = OPENAI[..second_call].rfind("data: ").unwrap();
    let err = run(ProviderKind::OpenAi, &OPENAI.as_bytes()[..cut], 4096).unwrap_err();
    assert_eq!(err.code(), "network");
    // An empty body too.
    let err = run(ProviderKind::Anthropic, b"", 1).unwrap_err();
    assert_eq!(err.code(), "network");
}

#[test]
fn a_stream_that_stopped_but_lost_its_last_event_keeps_the_answer() {
    // finish_reason arrived; only the usage chunk and [DONE] are missing.
    let cut = OPENAI.find("\"choices\":[],\"usage\"").unwrap();
    let cut = OPENAI[..cut].rfind("data: ").unwrap();
    let (_, out) = run(ProviderKind::OpenAi, &OPENAI.as_bytes()[..cut], 4096).unwrap();
    assert_eq!(out.tool_calls.len(), 2);
    assert_eq!(out.usage, None);
}

#[test]
fn anthropic_error_event_mid_stream() {
    let body = "event: message_start\n\
        data: {\"type\":\"message_start\",\"message\":{\"id\":\"msg_1\",\"type\":\"message\",\"role\":\"assistant\",\"content\":[],\"model\":\"claude-sonnet-4-5\",\"stop_reason\":null,\"usage\":{\"input_tokens\":10,\"output_tokens\":1}}}\n\n\
        event: error\n\
        data: {\"type\": \"error\", \"error\": {\"type\": \"overloaded_error\", \"message\": \"Overloaded\"}}\n\n";
    let err = run(ProviderKind::Anthropic, body.as_bytes(), 9).unwrap_err();
    assert_eq!(
        err,
        ProviderError::Stream {
            error_type: Some("overloaded_error".into()),
            message: "Overloaded".into()
        }
    );
    assert_eq!(err.code(), "provider");
    assert!(err.retryable());

    let invalid = "event: error\ndata: {\"type\":\"error\",\"error\":{\"type\":\"invalid_request_error\",\"message\":\"prompt is too long\"}}\n\n";
    let err = run(ProviderKind::Anthropic, invalid.as_bytes(), 100).unwrap_err();
    assert_eq!(err.code(), "provider");
    assert!(!err.retryable());
    assert!(err.to_string().contains("prompt is too long"));
}

#[test]
fn openai_error_object_mid_stream() {
    let body = "data: {\"choices\":[{\"index\":0,\"delta\":{\"content\":\"Hi\"},\"finish_reason\":null}]}\n\n\
        data: {\"error\":{\"message\":\"The server had an error while processing your request. Sorry about that!\",\"type\":\"server_error\",\"param\":null,\"code\":null}}\n\n";
    let err = run(ProviderKind::OpenAi, body.as_bytes(), 8).unwrap_err();
    assert!(
        matches!(&err, ProviderError::Stream { error_type: Some(t), .. } if t == "server_error")
    );
    assert_eq!(err.code(), "provider");
    assert!(err.retryable());
}

#[test]
fn malformed_json_in_a_stream_is_a_non_retryable_provider_error() {
    let err = run(ProviderKind::OpenAi, b"data: {not json}\n\n", 100).unwrap_err();
    assert!(matches!(err, ProviderError::Malformed { .. }));
    assert_eq!(err.code(), "provider");
    assert!(!err.retryable());
}

#[test]
fn ollama_style_parallel_calls_that_all_use_index_0() {
    let body = concat!(
        "data: {\"choices\":[{\"index\":0,\"delta\":{\"role\":\"assistant\",\"content\":\"\",\"tool_calls\":[{\"id\":\"call_a\",\"index\":0,\"type\":\"function\",\"function\":{\"name\":\"get_weather\",\"arguments\":\"{\\\"city\\\":\\\"Paris\\\"}\"}}]},\"finish_reason\":null}]}\n\n",
        "data: {\"choices\":[{\"index\":0,\"delta\":{\"role\":\"assistant\",\"content\":\"\",\"tool_calls\":[{\"id\":\"call_b\",\"index\":0,\"type\":\"function\",\"function\":{\"name\":\"get_weather\",\"arguments\":\"{\\\"city\\\":\\\"Rome\\\"}\"}}]},\"finish_reason\":null}]}\n\n",
        "data: {\"choices\":[{\"index\":0,\"delta\":{\"role\":\"assistant\",\"content\":\"\"},\"finish_reason\":\"tool_calls\"}]}\n\n",
        "data: [DONE]\n\n",
    );
    let (_, out) = run(ProviderKind::OpenAi, body.as_bytes(), 50).unwrap();
    let ids: Vec<_> = out.tool_calls.iter().map(|c| c.id.as_str()).collect();
    assert_eq!(ids, ["call_a", "call_b"]);
    assert_eq!(out.tool_calls[1].arguments, r#"{"city":"Rome"}"#);
}

#[test]
fn a_call_without_arguments_gets_an_empty_object() {
    let body = "event: content_block_start\ndata: {\"type\":\"content_block_start\",\"index\":0,\"content_block\":{\"type\":\"tool_use\",\"id\":\"toolu_1\",\"name\":\"now\",\"input\":{}}}\n\n\
        event: content_block_delta\ndata: {\"type\":\"content_block_delta\",\"index\":0,\"delta\":{\"type\":\"input_json_delta\",\"partial_json\":\"\"}}\n\n\
        event: message_delta\ndata: {\"type\":\"message_delta\",\"delta\":{\"stop_reason\":\"tool_use\",\"stop_sequence\":null},\"usage\":{\"output_tokens\":5}}\n\n\
        event: message_stop\ndata: {\"type\":\"message_stop\"}\n\n";
    let (_, out) = run(ProviderKind::Anthropic, body.as_bytes(), 1000).unwrap();
    assert_eq!(
        out.tool_calls,
        vec![ModelToolCall::new("toolu_1", "now", "{}")]
    );
}

#[test]
fn events_after_the_terminal_one_are_ignored() {
    let mut d = StreamDecoder::new(ProviderKind::OpenAi).unwrap();
    let done = SseEvent {
        event: None,
        data: "[DONE]".into(),
    };
    assert!(d.on_event(&done).unwrap().is_empty());
    assert!(d.is_finished());
    let late = SseEvent {
        event: None,
        data: "{broken".into(),
    };
    assert!(d.on_event(&late).unwrap().is_empty());
}

#[test]
fn demo_and_custom_have_no_stream_decoder() {
    for kind in [ProviderKind::Demo, ProviderKind::Custom] {
        let err = StreamDecoder::new(kind).unwrap_err();
        assert_eq!(err.code(), "invalid_config");
    }
}

/// A body of `n` one-token text events in `kind`'s wire format, and the length of its prefix
/// up to the end of the event that carries the first token.
fn long_text_body(kind: ProviderKind, n: usize) -> (String, usize) {
    let mut body = String::new();
    let mut head = 0;
    match kind {
        ProviderKind::OpenAi => {
            for i in 0..n {
                body.push_str(&format!(
                    "data: {{\"choices\":[{{\"index\":0,\"delta\":{{\"content\":\"tok{i} \"}},\"finish_reason\":null}}]}}\n\n"
                ));
                if i == 0 {
                    head = body.len();
                }
            }
            body.push_str("data: {\"choices\":[{\"index\":0,\"delta\":{},\"finish_reason\":\"stop\"}]}\n\ndata: [DONE]\n\n");
        }
        _ => {
            body.push_str("event: message_start\ndata: {\"type\":\"message_start\",\"message\":{\"usage\":{\"input_tokens\":3,\"output_tokens\":1}}}\n\n");
            body.push_str("event: content_block_start\ndata: {\"type\":\"content_block_start\",\"index\":0,\"content_block\":{\"type\":\"text\",\"text\":\"\"}}\n\n");
            for i in 0..n {
                body.push_str(&format!(
                    "event: content_block_delta\ndata: {{\"type\":\"content_block_delta\",\"index\":0,\"delta\":{{\"type\":\"text_delta\",\"text\":\"tok{i} \"}}}}\n\n"
                ));
                if i == 0 {
                    head = body.len();
                }
            }
            body.push_str("event: content_block_stop\ndata: {\"type\":\"content_block_stop\",\"index\":0}\n\n");
            body.push_str("event: message_delta\ndata: {\"type\":\"message_delta\",\"delta\":{\"stop_reason\":\"end_turn\"},\"usage\":{\"output_tokens\":9}}\n\n");
            body.push_str("event: message_stop\ndata: {\"type\":\"message_stop\"}\n\n");
        }
    }
    (body, head)
}

#[test]
fn the_first_delta_of_a_large_chunk_is_out_before_the_rest_of_it_is_parsed() {
    for kind in [ProviderKind::OpenAi, ProviderKind::Anthropic] {
        let (body, head) = long_text_body(kind, 5000);
        let mut stream = ResponseStream::new(kind).unwrap();
        let mut deltas = stream.feed(body.as_bytes());
        let first = deltas.next().unwrap().unwrap();
        assert_eq!(first, StreamDelta::Text("tok0 ".into()), "{kind:?}");
        // Parsed so far: exactly the events up to the first token's, of a chunk of 5,000.
        assert_eq!(body.len() - deltas.unparsed(), head, "{kind:?}");
        let mut lazy = vec![first];
        lazy.extend(deltas.map(Result::unwrap));
        let (last, out) = stream.finish().unwrap();
        assert!(last.is_empty());

        // What is emitted and the answer are those of the whole chunk parsed at once.
        let mut whole = ResponseStream::new(kind).unwrap();
        assert_eq!(lazy, whole.push(body.as_bytes()).unwrap(), "{kind:?}");
        assert!(whole.is_finished());
        assert_eq!(out, whole.finish().unwrap().1, "{kind:?}");
        assert_eq!(lazy.len(), 5000);
    }
}

#[test]
fn deltas_left_unread_still_count_in_the_answer() {
    for kind in [ProviderKind::OpenAi, ProviderKind::Anthropic] {
        let (body, _) = long_text_body(kind, 100);
        let (half, rest) = body.as_bytes().split_at(body.len() / 2);
        let mut stream = ResponseStream::new(kind).unwrap();
        // One delta taken, the rest of the chunk left to the iterator's drop.
        assert!(stream.feed(half).next().is_some());
        assert!(stream.push(rest).unwrap().len() > 10);
        let (_, out) = stream.finish().unwrap();
        let expected: String = (0..100).map(|i| format!("tok{i} ")).collect();
        assert_eq!(out.text, expected, "{kind:?}");
    }
}

#[test]
fn an_error_mid_chunk_ends_its_deltas() {
    let body = "data: {\"choices\":[{\"index\":0,\"delta\":{\"content\":\"Hi\"},\"finish_reason\":null}]}\n\n\
                data: {broken\n\n\
                data: {\"choices\":[{\"index\":0,\"delta\":{\"content\":\" there\"},\"finish_reason\":null}]}\n\n";
    let mut stream = ResponseStream::new(ProviderKind::OpenAi).unwrap();
    let got: Vec<_> = stream.feed(body.as_bytes()).collect();
    assert_eq!(got.len(), 2);
    assert_eq!(got[0], Ok(StreamDelta::Text("Hi".into())));
    assert!(
        matches!(got[1], Err(ProviderError::Malformed { .. })),
        "{got:?}"
    );
    // `push` keeps its rule: an error fails the whole chunk.
    let mut stream = ResponseStream::new(ProviderKind::OpenAi).unwrap();
    assert!(stream.push(body.as_bytes()).is_err());
}
