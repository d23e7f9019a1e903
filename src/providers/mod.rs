//! Provider wire formats, pure: no I/O, no clock, no JS. The fetch driver asks this module for
//! an [`HttpRequest`], sends it, and feeds the answer back: a whole body to
//! [`parse_response`], or the bytes of an SSE body to a [`ResponseStream`] (or an
//! [`sse::SseParser`] plus a [`StreamDecoder`]). [`RetryPolicy`] says how long to wait before
//! trying again; [`demo`] is a deterministic model for the offline mode.
//!
//! ```text
//! build_request(cfg, instructions, history, tools) -> HttpRequest        (POST, JSON body)
//! non-2xx status                -> ProviderError::http(status, body, retry_after_header)
//! 2xx, cfg.stream == false      -> parse_response(kind, status, body) -> ModelOutput
//! 2xx, cfg.stream == true       -> ResponseStream::feed(chunk) -> StreamDelta* (lazily); finish()
//! ```

mod anthropic;
mod config;
pub mod demo;
mod error;
mod openai;
mod retry;
pub mod sse;
mod stream;

pub use anthropic::AnthropicStream;
pub use config::{
    ANTHROPIC_DEFAULT_BASE, ANTHROPIC_DEFAULT_MAX_TOKENS, ModelConfig, ModelParams,
    OPENAI_DEFAULT_BASE, ProviderKind, WireFormat,
};
pub use error::{BODY_EXCERPT_CHARS, ProviderError};
pub use openai::OpenAiStream;
pub use retry::{RetryPolicy, parse_http_date};
pub use sse::{SseEvent, SseParser};
pub use stream::{Deltas, ResponseStream, StreamDecoder, StreamDelta};

use crate::engine::ModelOutput;
use crate::thread::{Message, Usage};
use serde_json::{Map, Value};

/// A tool offered to the model.
#[derive(Debug, Clone, PartialEq)]
pub struct ToolDef {
    pub name: String,
    pub description: Option<String>,
    /// The JSON Schema of the inputs (an object schema; `{}`/`null` mean "no inputs").
    pub parameters: Value,
    /// Provider-specific keys merged into the definition: into `function` for OpenAI (e.g.
    /// `strict`), into the tool object for Anthropic (e.g. `cache_control`).
    pub extra: Map<String, Value>,
}

impl ToolDef {
    pub fn new(name: impl Into<String>, description: Option<&str>, parameters: Value) -> Self {
        ToolDef {
            name: name.into(),
            description: description.map(str::to_owned),
            parameters,
            extra: Map::new(),
        }
    }

    /// Takes the provider-specific keys from a JSON object (the thread's `parameters` shape:
    /// `[]` when there are none, which is ignored like any non-object).
    pub fn with_extra(mut self, extra: &Value) -> Self {
        if let Value::Object(o) = extra {
            self.extra = o.clone();
        }
        self
    }

    /// The definition as both wire formats write it: name, description, the schema under
    /// `schema_key`, then the provider-specific extra keys.
    pub(crate) fn definition(&self, schema_key: &str) -> Map<String, Value> {
        let mut o = Map::new();
        o.insert("name".into(), Value::String(self.name.clone()));
        if let Some(d) = &self.description {
            o.insert("description".into(), Value::String(d.clone()));
        }
        o.insert(schema_key.into(), self.schema());
        for (k, v) in &self.extra {
            o.insert(k.clone(), v.clone());
        }
        o
    }

    /// The schema as providers require it: always an object schema.
    pub(crate) fn schema(&self) -> Value {
        match &self.parameters {
            Value::Object(o) if !o.is_empty() => self.parameters.clone(),
            _ => serde_json::json!({ "type": "object", "properties": {} }),
        }
    }
}

/// A request for the driver to send: always `POST` with a JSON body.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct HttpRequest {
    pub url: String,
    pub headers: Vec<(String, String)>,
    pub body: String,
}

impl HttpRequest {
    /// The value of a header (names compare case-insensitively).
    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|(n, _)| n.eq_ignore_ascii_case(name))
            .map(|(_, v)| v.as_str())
    }
}

/// Builds the HTTP request for one model call over `history` (oldest first).
pub fn build_request(
    cfg: &ModelConfig,
    instructions: Option<&str>,
    history: &[Message],
    tools: &[ToolDef],
) -> Result<HttpRequest, ProviderError> {
    cfg.validate()?;
    let instructions = instructions.filter(|s| !s.trim().is_empty());
    Ok(match cfg.provider.wire_format()? {
        WireFormat::OpenAi => openai::build(cfg, instructions, history, tools),
        WireFormat::Anthropic => anthropic::build(cfg, instructions, history, tools),
    })
}

/// Reads a whole (non-streaming) answer. A non-2xx `status` becomes an HTTP error; attach the
/// `Retry-After` header with [`ProviderError::with_retry_after`] (or build the error with
/// [`ProviderError::http`]).
pub fn parse_response(
    kind: ProviderKind,
    status: u16,
    body: &str,
) -> Result<ModelOutput, ProviderError> {
    if !(200..300).contains(&status) {
        return Err(ProviderError::http(status, body, None));
    }
    match kind.wire_format()? {
        WireFormat::OpenAi => openai::parse(body),
        WireFormat::Anthropic => anthropic::parse(body),
    }
}

/// Default headers followed by the app's extra headers; an extra header replaces a default
/// one of the same name.
pub(crate) fn with_extra_headers(
    mut headers: Vec<(String, String)>,
    cfg: &ModelConfig,
) -> Vec<(String, String)> {
    for (name, value) in &cfg.headers {
        headers.retain(|(n, _)| !n.eq_ignore_ascii_case(name));
        headers.push((name.clone(), value.clone()));
    }
    headers
}

/// `content-type` and `accept` for a JSON request answered by SSE or by JSON.
pub(crate) fn json_headers(cfg: &ModelConfig) -> Vec<(String, String)> {
    let accept = if cfg.stream {
        "text/event-stream"
    } else {
        "application/json"
    };
    vec![
        header("content-type", "application/json"),
        header("accept", accept),
    ]
}

pub(crate) fn header(name: &str, value: &str) -> (String, String) {
    (name.to_owned(), value.to_owned())
}

/// A count at `path` in a JSON object, 0 when absent or not a number.
pub(crate) fn count_at(v: &Value, path: &[&str]) -> u64 {
    let mut cur = v;
    for key in path {
        match cur.get(key) {
            Some(next) => cur = next,
            None => return 0,
        }
    }
    cur.as_u64().unwrap_or(0)
}

pub(crate) fn usage(input: u64, output: u64, cached: u64, reasoning: u64) -> Usage {
    Usage {
        input_tokens: input,
        output_tokens: output,
        cached_input_tokens: cached,
        reasoning_tokens: reasoning,
    }
}

/// Compact JSON of a tool entry's inputs (serializing a JSON map cannot fail).
pub(crate) fn compact_json(inputs: &Map<String, Value>) -> String {
    serde_json::to_string(inputs).unwrap_or_else(|_| "{}".to_owned())
}

pub(crate) fn str_at<'a>(v: &'a Value, key: &str) -> &'a str {
    v.get(key).and_then(Value::as_str).unwrap_or("")
}
