//! Whole (non-streaming) answers and HTTP error bodies of both providers.

use gatehouse_agent::engine::{ModelOutput, ModelToolCall};
use gatehouse_agent::providers::{ProviderError, ProviderKind, parse_response};
use gatehouse_agent::thread::Usage;

#[test]
fn openai_completion_with_a_tool_call() {
    let body = r#"{
      "id": "chatcmpl-BcQ8ko2nz9B7CRvV0uVbcowidHpQU",
      "object": "chat.completion",
      "created": 1748496646,
      "model": "gpt-4o-2024-08-06",
      "choices": [{
        "index": 0,
        "message": {
          "role": "assistant",
          "content": null,
          "refusal": null,
          "annotations": [],
          "tool_calls": [{
            "id": "call_qOfTGgDrItLORNfC6VwUbyLL",
            "type": "function",
            "function": { "name": "get_weather", "arguments": "{\"location\":\"Shanghai\"}" }
          }]
        },
        "logprobs": null,
        "finish_reason": "tool_calls"
      }],
      "usage": {
        "prompt_tokens": 91, "completion_tokens": 14, "total_tokens": 105,
        "prompt_tokens_details": { "cached_tokens": 0, "audio_tokens": 0 },
        "completion_tokens_details": { "reasoning_tokens": 0, "audio_tokens": 0,
          "accepted_prediction_tokens": 0, "rejected_prediction_tokens": 0 }
      },
      "service_tier": "default",
      "system_fingerprint": "fp_76544d79cb"
    }"#;
    let out = parse_response(ProviderKind::OpenAi, 200, body).unwrap();
    assert_eq!(
        out,
        ModelOutput {
            text: String::new(),
            tool_calls: vec![ModelToolCall::new(
                "call_qOfTGgDrItLORNfC6VwUbyLL",
                "get_weather",
                r#"{"location":"Shanghai"}"#
            )],
            usage: Some(Usage {
                input_tokens: 91,
                output_tokens: 14,
                cached_input_tokens: 0,
                reasoning_tokens: 0
            }),
            stop_reason: Some("tool_calls".into()),
        }
    );
}

#[test]
fn openai_completion_with_text_only() {
    let body = r#"{"id":"chatcmpl-1","object":"chat.completion","choices":[{"index":0,
        "message":{"role":"assistant","content":"Why don't skeletons fight? No guts."},
        "finish_reason":"stop"}],"usage":{"prompt_tokens":23,"completion_tokens":14,"total_tokens":37}}"#;
    let out = parse_response(ProviderKind::OpenAi, 200, body).unwrap();
    assert_eq!(out.text, "Why don't skeletons fight? No guts.");
    assert!(out.tool_calls.is_empty());
    assert_eq!(out.stop_reason.as_deref(), Some("stop"));
    assert_eq!(out.usage.map(|u| u.input_tokens), Some(23));
}

#[test]
fn anthropic_message_with_text_and_tool_use() {
    let body = r#"{
      "id": "msg_01Aq9w938a90dw8q",
      "type": "message",
      "role": "assistant",
      "model": "claude-sonnet-4-5",
      "content": [
        { "type": "text", "text": "I'll check the weather." },
        { "type": "tool_use", "id": "toolu_01A09q90qw90lq917835lq9", "name": "get_weather",
          "input": { "location": "San Francisco, CA", "unit": "celsius" } }
      ],
      "stop_reason": "tool_use",
      "stop_sequence": null,
      "usage": { "input_tokens": 384, "cache_creation_input_tokens": 100,
                 "cache_read_input_tokens": 1000, "output_tokens": 92 }
    }"#;
    let out = parse_response(ProviderKind::Anthropic, 200, body).unwrap();
    assert_eq!(
        out,
        ModelOutput {
            text: "I'll check the weather.".into(),
            tool_calls: vec![ModelToolCall::new(
                "toolu_01A09q90qw90lq917835lq9",
                "get_weather",
                r#"{"location":"San Francisco, CA","unit":"celsius"}"#
            )],
            usage: Some(Usage {
                input_tokens: 1484,
                output_tokens: 92,
                cached_input_tokens: 1000,
                reasoning_tokens: 0
            }),
            stop_reason: Some("tool_use".into()),
        }
    );
}

#[test]
fn malformed_success_bodies_are_not_retryable() {
    for (kind, body) in [
        (ProviderKind::OpenAi, "<html>Bad gateway</html>"),
        (ProviderKind::OpenAi, r#"{"object":"list"}"#),
        (ProviderKind::Anthropic, "not json"),
        (ProviderKind::Anthropic, r#"{"type":"message"}"#),
    ] {
        let err = parse_response(kind, 200, body).unwrap_err();
        assert!(
            matches!(err, ProviderError::Malformed { .. }),
            "{body}: {err:?}"
        );
        assert_eq!(err.code(), "provider");
        assert!(!err.retryable());
        assert!(err.to_string().contains("baseUrl"), "{err}");
    }
}

#[test]
fn openai_429_with_retry_after() {
    let body = r#"{"error":{"message":"Rate limit reached for gpt-4o in organization org-x on requests per min (RPM): Limit 500, Used 500, Requested 1. Please try again in 120ms.","type":"requests","param":null,"code":"rate_limit_exceeded"}}"#;
    let err = ProviderError::http(429, body, Some("1"));
    assert_eq!(err.code(), "provider");
    assert!(err.retryable());
    assert_eq!(err.retry_after(), Some("1"));
    assert_eq!(err.status(), Some(429));
    let ProviderError::Http {
        message,
        error_type,
        ..
    } = &err
    else {
        panic!("{err:?}")
    };
    assert!(
        message
            .as_deref()
            .unwrap()
            .starts_with("Rate limit reached for gpt-4o")
    );
    assert_eq!(error_type.as_deref(), Some("rate_limit_exceeded"));
    assert!(err.to_string().contains("HTTP 429"), "{err}");

    // parse_response knows no headers; the driver attaches Retry-After.
    let err = parse_response(ProviderKind::OpenAi, 429, body)
        .unwrap_err()
        .with_retry_after(Some("7"));
    assert_eq!(err.retry_after(), Some("7"));
}

#[test]
fn openai_429_for_an_exhausted_quota_is_not_retried() {
    let body = r#"{"error":{"message":"You exceeded your current quota, please check your plan and billing details.","type":"insufficient_quota","param":null,"code":"insufficient_quota"}}"#;
    let err = ProviderError::http(429, body, None);
    assert!(!err.retryable());
    assert!(err.to_string().contains("billing"), "{err}");
}

#[test]
fn anthropic_429_529_500_and_401() {
    let rate = r#"{"type":"error","error":{"type":"rate_limit_error","message":"Number of request tokens has exceeded your per-minute rate limit"},"request_id":"req_011CSHoEeqs5C35K2UUqR7Fy"}"#;
    let err = ProviderError::http(429, rate, Some("Wed, 21 Oct 2026 07:28:00 GMT"));
    assert!(err.retryable());
    assert_eq!(err.retry_after(), Some("Wed, 21 Oct 2026 07:28:00 GMT"));
    assert!(
        matches!(&err, ProviderError::Http { error_type: Some(t), .. } if t == "rate_limit_error")
    );

    let overloaded =
        r#"{"type":"error","error":{"type":"overloaded_error","message":"Overloaded"}}"#;
    let err = parse_response(ProviderKind::Anthropic, 529, overloaded).unwrap_err();
    assert!(err.retryable());
    assert!(err.to_string().contains("overloaded"), "{err}");

    let api = r#"{"type":"error","error":{"type":"api_error","message":"Internal server error"}}"#;
    let err = parse_response(ProviderKind::Anthropic, 500, api).unwrap_err();
    assert_eq!((err.code(), err.retryable()), ("provider", true));

    let auth = r#"{"type":"error","error":{"type":"authentication_error","message":"invalid x-api-key"},"request_id":"req_1"}"#;
    let err = parse_response(ProviderKind::Anthropic, 401, auth).unwrap_err();
    assert_eq!((err.code(), err.retryable()), ("provider", false));
    let shown = err.to_string();
    assert!(
        shown.contains("HTTP 401") && shown.contains("invalid x-api-key"),
        "{shown}"
    );
    assert!(shown.contains("apiKey"), "{shown}");
}

#[test]
fn openai_401_and_500() {
    let auth = r#"{"error":{"message":"Incorrect API key provided: sk-abc***xyz. You can find your API key at https://platform.openai.com/account/api-keys.","type":"invalid_request_error","param":null,"code":"invalid_api_key"}}"#;
    let err = parse_response(ProviderKind::OpenAi, 401, auth).unwrap_err();
    assert!(!err.retryable());
    assert!(err.to_string().contains("Incorrect API key provided"));

    let err = parse_response(ProviderKind::OpenAi, 500, "Internal Server Error").unwrap_err();
    assert!(err.retryable());
    let ProviderError::Http {
        message,
        body_excerpt,
        ..
    } = &err
    else {
        panic!()
    };
    assert_eq!(message, &None);
    assert_eq!(body_excerpt, "Internal Server Error");
    assert!(err.to_string().contains("Internal Server Error"));
}

#[test]
fn other_dialects_and_status_classes() {
    let ollama = ProviderError::http(
        404,
        r#"{"error":"model \"llama9\" not found, try pulling it first"}"#,
        None,
    );
    assert!(
        ollama
            .to_string()
            .contains("not found, try pulling it first")
    );
    assert!(!ollama.retryable());
    let fastapi = ProviderError::http(400, r#"{"detail":"Invalid model"}"#, None);
    assert!(fastapi.to_string().contains("Invalid model"));
    for (status, retry) in [
        (400, false),
        (403, false),
        (408, true),
        (409, true),
        (502, true),
        (503, true),
        (529, true),
    ] {
        assert_eq!(
            ProviderError::http(status, "", None).retryable(),
            retry,
            "{status}"
        );
    }
}

#[test]
fn body_excerpts_are_capped_at_500_characters() {
    let body = "é".repeat(2000);
    let ProviderError::Http { body_excerpt, .. } = ProviderError::http(502, &body, None) else {
        panic!()
    };
    assert_eq!(body_excerpt.chars().count(), 500);
}

#[test]
fn error_messages_never_end_a_sentence_twice() {
    let e = gatehouse_agent::providers::ProviderError::http(
        503,
        r#"{"error":{"message":"Service unavailable, please try again later.","type":"server_error"}}"#,
        None,
    );
    let text = e.to_string();
    assert!(!text.contains(".."), "{text}");
    assert!(
        text.contains("please try again later. The provider had a server error"),
        "{text}"
    );
}
