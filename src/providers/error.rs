//! Errors of the provider layer, grouped by who is to blame: the provider's HTTP answer, an
//! error the provider sent inside a stream, a stream cut short (the network), a body we cannot
//! read (the provider), or a model config the app got wrong.

use serde_json::Value;
use std::fmt;

/// The longest body excerpt kept in an HTTP error, in characters.
pub const BODY_EXCERPT_CHARS: usize = 500;

#[derive(Debug, Clone, PartialEq)]
pub enum ProviderError {
    /// The provider answered with a non-success HTTP status.
    Http {
        status: u16,
        /// The provider's own message (`error.message` and friends) when the body is JSON.
        message: Option<String>,
        /// The provider's error type or code (`rate_limit_error`, `insufficient_quota`, ...).
        error_type: Option<String>,
        /// At most [`BODY_EXCERPT_CHARS`] characters of the body.
        body_excerpt: String,
        /// The `Retry-After` header exactly as the server sent it.
        retry_after: Option<String>,
    },
    /// An error event inside an otherwise successful stream (Anthropic `event: error`,
    /// OpenAI `data: {"error":{...}}`).
    Stream {
        error_type: Option<String>,
        message: String,
    },
    /// The stream ended before its terminal event (`[DONE]` / `message_stop`).
    Truncated { detail: String },
    /// The provider sent something that is not the JSON its format promises.
    Malformed { detail: String },
    /// The model config cannot produce a request (missing model, wrong provider kind...).
    InvalidConfig { message: String },
}

/// Error types that mean "try again later" whatever the transport said.
const TRANSIENT_TYPES: &[&str] = &[
    "overloaded_error",
    "rate_limit_error",
    "rate_limit_exceeded",
    "api_error",
    "server_error",
    "timeout_error",
];

impl ProviderError {
    /// Builds the error for a non-success HTTP answer. `retry_after` is the raw header value.
    pub fn http(status: u16, body: &str, retry_after: Option<&str>) -> Self {
        let (message, error_type) = extract_error(body);
        ProviderError::Http {
            status,
            message,
            error_type,
            body_excerpt: excerpt(body, BODY_EXCERPT_CHARS),
            retry_after: retry_after.map(str::to_owned),
        }
    }

    pub fn invalid_config(message: impl Into<String>) -> Self {
        ProviderError::InvalidConfig {
            message: message.into(),
        }
    }

    pub(crate) fn malformed(what: &str, err: impl fmt::Display) -> Self {
        ProviderError::Malformed {
            detail: format!("{what}: {err}"),
        }
    }

    /// Attaches the `Retry-After` header to an HTTP error (other variants are unchanged).
    pub fn with_retry_after(mut self, value: Option<&str>) -> Self {
        if let ProviderError::Http { retry_after, .. } = &mut self {
            *retry_after = value.map(str::to_owned);
        }
        self
    }

    /// The stable code the JS error carries.
    pub fn code(&self) -> &'static str {
        match self {
            ProviderError::Http { .. } | ProviderError::Stream { .. } => "provider",
            ProviderError::Malformed { .. } => "provider",
            ProviderError::Truncated { .. } => "network",
            ProviderError::InvalidConfig { .. } => "invalid_config",
        }
    }

    /// Whether the same request may succeed if sent again later.
    pub fn retryable(&self) -> bool {
        match self {
            ProviderError::Http {
                status, error_type, ..
            } => {
                // A 429 for an exhausted quota will not clear by waiting.
                if error_type.as_deref() == Some("insufficient_quota") {
                    return false;
                }
                matches!(status, 408 | 409 | 429 | 500..=599)
            }
            ProviderError::Stream { error_type, .. } => error_type
                .as_deref()
                .is_some_and(|t| TRANSIENT_TYPES.contains(&t)),
            ProviderError::Truncated { .. } => true,
            ProviderError::Malformed { .. } | ProviderError::InvalidConfig { .. } => false,
        }
    }

    /// The raw `Retry-After` value, for [`super::RetryPolicy::delay_ms`].
    pub fn retry_after(&self) -> Option<&str> {
        match self {
            ProviderError::Http { retry_after, .. } => retry_after.as_deref(),
            _ => None,
        }
    }

    /// The HTTP status, when the error is an HTTP answer.
    pub fn status(&self) -> Option<u16> {
        match self {
            ProviderError::Http { status, .. } => Some(*status),
            _ => None,
        }
    }
}

impl fmt::Display for ProviderError {
    fn fmt(&self, f: &mut fmt::Formatter) -> fmt::Result {
        match self {
            ProviderError::Http {
                status,
                message,
                error_type,
                body_excerpt,
                ..
            } => {
                write!(f, "the model provider answered HTTP {status}")?;
                if let Some(t) = error_type {
                    write!(f, " ({t})")?;
                }
                // The hint starts a new sentence: drop the message's own final period.
                match message {
                    Some(m) => write!(f, ": {}", sentence(m))?,
                    None if !body_excerpt.is_empty() => write!(f, ": {}", sentence(body_excerpt))?,
                    None => {}
                }
                f.write_str(http_hint(*status, error_type.as_deref()))
            }
            ProviderError::Stream {
                error_type,
                message,
            } => {
                f.write_str("the model provider reported an error mid-stream")?;
                if let Some(t) = error_type {
                    write!(f, " ({t})")?;
                }
                write!(f, ": {}", sentence(message))?;
                if self.retryable() {
                    f.write_str(". Retrying later may help.")?;
                }
                Ok(())
            }
            ProviderError::Truncated { detail } => write!(
                f,
                "the model's response stream ended early ({detail}); the connection was probably \
                 cut. Retrying may help."
            ),
            ProviderError::Malformed { detail } => write!(
                f,
                "the model provider sent a response that is not in its documented format \
                 ({detail}). Check that baseUrl points at a server speaking this provider's API."
            ),
            ProviderError::InvalidConfig { message } => {
                write!(f, "invalid model config: {message}")
            }
        }
    }
}

impl std::error::Error for ProviderError {}

/// A message without its trailing period and spaces, to be followed by ". Next sentence".
fn sentence(m: &str) -> &str {
    m.trim_end().trim_end_matches('.')
}

fn http_hint(status: u16, error_type: Option<&str>) -> &'static str {
    if error_type == Some("insufficient_quota") {
        return ". The account has no quota left: check its billing; retrying will not help.";
    }
    match status {
        400 | 422 => {
            ". The request was rejected: check the model name, maxTokens and tool schemas."
        }
        401 => ". Check the apiKey in the model config.",
        403 => ". The API key is not allowed to use this model or endpoint.",
        404 => ". Check baseUrl and the model name.",
        408 | 409 => ". Retrying may help.",
        429 => ". Rate limited: retrying after a pause may help.",
        529 => ". The provider is overloaded: retrying later may help.",
        500..=599 => ". The provider had a server error: retrying may help.",
        _ => ".",
    }
}

/// The provider's message and error type from a JSON error body, whatever the dialect:
/// OpenAI `{"error":{"message","type","code"}}`, Anthropic
/// `{"type":"error","error":{"type","message"}}`, Ollama `{"error":"..."}`, FastAPI
/// `{"detail":"..."}`, or a bare `{"message":"..."}`.
pub(crate) fn extract_error(body: &str) -> (Option<String>, Option<String>) {
    let Ok(v) = serde_json::from_str::<Value>(body) else {
        return (None, None);
    };
    error_fields(&v)
}

pub(crate) fn error_fields(v: &Value) -> (Option<String>, Option<String>) {
    let s = |v: Option<&Value>| v.and_then(Value::as_str).map(str::to_owned);
    match v.get("error") {
        Some(Value::Object(e)) => {
            // OpenAI puts the meaningful value in `code` (`insufficient_quota`) and a broad one
            // in `type`; prefer the specific one.
            let kind = s(e.get("code")).or_else(|| s(e.get("type")));
            (s(e.get("message")), kind)
        }
        Some(Value::String(m)) => (Some(m.clone()), None),
        _ => (s(v.get("message")).or_else(|| s(v.get("detail"))), None),
    }
}

/// The first `max` characters of `s` (never splits a character).
pub(crate) fn excerpt(s: &str, max: usize) -> String {
    match s.char_indices().nth(max) {
        Some((i, _)) => s[..i].to_owned(),
        None => s.to_owned(),
    }
}
