//! OpenAI Chat Completions (`POST {base}/chat/completions`) and compatible servers.

use super::error::{ProviderError, error_fields};
use super::sse::SseEvent;
use super::stream::{StreamDelta, ToolCallSlots};
use super::{HttpRequest, OPENAI_DEFAULT_BASE, json_headers};
use super::{ModelConfig, ToolDef, compact_json, count_at, str_at, usage, with_extra_headers};
use crate::engine::{ModelOutput, ModelToolCall};
use crate::thread::{Message, MessageKind, Role, Usage, json_text};
use serde::Serialize;
use serde_json::{Value, json};
use std::borrow::Cow;

/// The request body. Serialized straight from borrowed parts: a whole history as a
/// `serde_json::Value` tree first cost an ordered map and copies of every string per message.
/// The keys come out in this order (tests pin the bytes).
#[derive(Serialize)]
struct Body<'a> {
    model: &'a str,
    messages: Vec<WireMessage<'a>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    tools: Option<Vec<Value>>,
    /// OpenAI's reasoning models refuse `max_tokens`; compatible servers mostly know only it.
    #[serde(skip_serializing_if = "Option::is_none")]
    max_completion_tokens: Option<u32>,
    #[serde(skip_serializing_if = "Option::is_none")]
    max_tokens: Option<u32>,
    #[serde(skip_serializing_if = "Option::is_none")]
    temperature: Option<f64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    stream: Option<bool>,
    #[serde(skip_serializing_if = "Option::is_none")]
    stream_options: Option<StreamOptions>,
}

#[derive(Serialize)]
struct StreamOptions {
    include_usage: bool,
}

/// One Chat Completions message: `{role, content}`, `{role, content, tool_calls}` or
/// `{role, tool_call_id, content}`.
#[derive(Serialize)]
struct WireMessage<'a> {
    role: &'static str,
    #[serde(skip_serializing_if = "Option::is_none")]
    tool_call_id: Option<&'a str>,
    /// `null` for a tool call without text.
    content: Option<Cow<'a, str>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    tool_calls: Option<Vec<WireCall<'a>>>,
}

#[derive(Serialize)]
struct WireCall<'a> {
    id: &'a str,
    #[serde(rename = "type")]
    kind: &'static str,
    function: WireFunction<'a>,
}

#[derive(Serialize)]
struct WireFunction<'a> {
    name: &'a str,
    arguments: String,
}

pub(crate) fn build(
    cfg: &ModelConfig,
    instructions: Option<&str>,
    history: &[Message],
    tools: &[ToolDef],
) -> HttpRequest {
    let url = cfg.endpoint();
    let reasoning_key = url.starts_with(OPENAI_DEFAULT_BASE);
    let body = Body {
        model: &cfg.model,
        messages: messages(instructions, history),
        // An empty `tools` array is a 400 on OpenAI: leave the key out instead.
        tools: (!tools.is_empty()).then(|| tools.iter().map(tool).collect()),
        max_completion_tokens: cfg.max_tokens.filter(|_| reasoning_key),
        max_tokens: cfg.max_tokens.filter(|_| !reasoning_key),
        temperature: cfg.temperature,
        stream: cfg.stream.then_some(true),
        stream_options: cfg.stream.then_some(StreamOptions {
            include_usage: true,
        }),
    };
    let mut headers = json_headers(cfg);
    if let Some(key) = &cfg.api_key {
        headers.push(("Authorization".into(), format!("Bearer {key}")));
    }
    HttpRequest {
        url,
        headers: with_extra_headers(headers, cfg),
        body: serde_json::to_string(&body).unwrap_or_default(),
    }
}

fn tool(t: &ToolDef) -> Value {
    json!({ "type": "function", "function": t.definition("parameters") })
}

fn messages<'a>(instructions: Option<&'a str>, history: &'a [Message]) -> Vec<WireMessage<'a>> {
    let plain = |role, content| WireMessage {
        role,
        tool_call_id: None,
        content: Some(content),
        tool_calls: None,
    };
    let mut out = Vec::with_capacity(history.len() + 1);
    if let Some(system) = instructions {
        out.push(plain("system", Cow::Borrowed(system)));
    }
    for m in history {
        let text = m.text();
        match &m.kind {
            MessageKind::ToolCall(entries) if !entries.is_empty() => {
                let calls = entries
                    .iter()
                    .map(|e| WireCall {
                        id: &e.call_id,
                        kind: "function",
                        function: WireFunction {
                            name: &e.name,
                            arguments: compact_json(&e.inputs),
                        },
                    })
                    .collect();
                out.push(WireMessage {
                    role: "assistant",
                    tool_call_id: None,
                    content: (!text.is_empty()).then_some(Cow::Owned(text)),
                    tool_calls: Some(calls),
                });
            }
            MessageKind::ToolCallResult(entries) => {
                for e in entries {
                    out.push(WireMessage {
                        role: "tool",
                        tool_call_id: Some(&e.call_id),
                        content: Some(Cow::Borrowed(e.result.as_deref().unwrap_or(""))),
                        tool_calls: None,
                    });
                }
            }
            // A `tool_call` message without entries is plain text.
            MessageKind::Plain | MessageKind::ToolCall(_) if text.is_empty() => {}
            MessageKind::Plain | MessageKind::ToolCall(_) => {
                let role = if m.role == Role::User {
                    "user"
                } else {
                    "assistant"
                };
                out.push(plain(role, Cow::Owned(text)));
            }
        }
    }
    out
}

pub(crate) fn parse(body: &str) -> Result<ModelOutput, ProviderError> {
    let v: Value =
        serde_json::from_str(body).map_err(|e| ProviderError::malformed("OpenAI response", e))?;
    check_error(&v, None)?;
    let choice = v
        .get("choices")
        .and_then(|c| c.get(0))
        .ok_or_else(|| ProviderError::malformed("OpenAI response", "no `choices[0]`"))?;
    let msg = choice.get("message").unwrap_or(&Value::Null);
    let mut text = content_text(msg.get("content"));
    if text.is_empty() {
        text = str_at(msg, "refusal").to_owned();
    }
    let mut tool_calls = Vec::new();
    for (i, tc) in msg
        .get("tool_calls")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .enumerate()
    {
        let f = tc.get("function").unwrap_or(&Value::Null);
        let id = match str_at(tc, "id") {
            "" => format!("call_{i}"),
            id => id.to_owned(),
        };
        let arguments = match f.get("arguments") {
            Some(Value::String(s)) if !s.trim().is_empty() => s.clone(),
            // Some compatible servers send the arguments as an object, not as JSON text.
            Some(obj @ Value::Object(_)) => json_text(obj),
            _ => "{}".to_owned(),
        };
        tool_calls.push(ModelToolCall {
            id,
            name: str_at(f, "name").to_owned(),
            arguments,
        });
    }
    Ok(ModelOutput {
        text,
        tool_calls,
        usage: v.get("usage").filter(|u| u.is_object()).map(parse_usage),
        stop_reason: choice
            .get("finish_reason")
            .and_then(Value::as_str)
            .map(str::to_owned),
    })
}

/// `content` is a string, `null`, or (some servers) an array of `{type:"text", text}` parts.
fn content_text(content: Option<&Value>) -> String {
    match content {
        Some(Value::String(s)) => s.clone(),
        Some(Value::Array(parts)) => parts.iter().map(|p| str_at(p, "text")).collect(),
        _ => String::new(),
    }
}

fn parse_usage(u: &Value) -> Usage {
    usage(
        count_at(u, &["prompt_tokens"]),
        count_at(u, &["completion_tokens"]),
        count_at(u, &["prompt_tokens_details", "cached_tokens"]),
        count_at(u, &["completion_tokens_details", "reasoning_tokens"]),
    )
}

/// An `{"error": {...}}` object where an answer was expected (also sent mid-stream).
fn check_error(v: &Value, sse_event: Option<&str>) -> Result<(), ProviderError> {
    let has_error = v.get("error").is_some_and(|e| !e.is_null());
    if !has_error && sse_event != Some("error") {
        return Ok(());
    }
    let (message, error_type) = error_fields(v);
    Err(ProviderError::Stream {
        error_type,
        message: message.unwrap_or_else(|| json_text(v)),
    })
}

/// Decodes `chat.completion.chunk` events.
#[derive(Debug, Default)]
pub struct OpenAiStream {
    text: String,
    calls: ToolCallSlots,
    /// The current slot for each wire `index`, latest last.
    slots: Vec<(u64, usize)>,
    usage: Option<Usage>,
    stop_reason: Option<String>,
    done: bool,
}

impl OpenAiStream {
    pub fn on_event(&mut self, ev: &SseEvent) -> Result<Vec<StreamDelta>, ProviderError> {
        let data = ev.data.trim();
        if self.done || data.is_empty() {
            return Ok(Vec::new());
        }
        if data == "[DONE]" {
            self.done = true;
            return Ok(Vec::new());
        }
        let v: Value = serde_json::from_str(data)
            .map_err(|e| ProviderError::malformed("OpenAI stream chunk", e))?;
        check_error(&v, ev.event.as_deref())?;
        if let Some(u) = v.get("usage").filter(|u| u.is_object()) {
            self.usage = Some(parse_usage(u));
        }
        let mut out = Vec::new();
        for choice in v
            .get("choices")
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
        {
            // One answer per request: further choices (`n` > 1) are not ours to merge.
            if choice.get("index").and_then(Value::as_u64).unwrap_or(0) != 0 {
                continue;
            }
            let delta = choice.get("delta").unwrap_or(&Value::Null);
            for key in ["content", "refusal"] {
                if let Some(t) = delta
                    .get(key)
                    .and_then(Value::as_str)
                    .filter(|t| !t.is_empty())
                {
                    self.text.push_str(t);
                    out.push(StreamDelta::Text(t.to_owned()));
                }
            }
            for tc in delta
                .get("tool_calls")
                .and_then(Value::as_array)
                .into_iter()
                .flatten()
            {
                self.on_tool_fragment(tc, &mut out);
            }
            if let Some(r) = choice.get("finish_reason").and_then(Value::as_str) {
                self.stop_reason = Some(r.to_owned());
            }
        }
        Ok(out)
    }

    fn on_tool_fragment(&mut self, tc: &Value, out: &mut Vec<StreamDelta>) {
        let wire_index = tc.get("index").and_then(Value::as_u64);
        let id = str_at(tc, "id");
        let f = tc.get("function").unwrap_or(&Value::Null);
        let name = str_at(f, "name");
        let current = match wire_index {
            Some(i) => self
                .slots
                .iter()
                .rev()
                .find(|(w, _)| *w == i)
                .map(|(_, s)| *s),
            None => self.calls.len().checked_sub(1),
        };
        // A new id at a known index is a new call: Ollama numbers every parallel call 0.
        let same_call = |slot: usize| {
            let known = self.calls.id(slot).unwrap_or("");
            id.is_empty() || known.is_empty() || known == id
        };
        let slot = match current {
            Some(slot) if same_call(slot) => {
                self.calls.complete(slot, id, name);
                slot
            }
            _ => {
                let order = wire_index.unwrap_or(self.calls.len() as u64);
                let (slot, started) = self.calls.start(order, id, name);
                self.slots.push((order, slot));
                out.push(started);
                slot
            }
        };
        if let Some(args) = f.get("arguments").and_then(Value::as_str) {
            out.extend(self.calls.append(slot, args));
        }
    }

    pub fn is_finished(&self) -> bool {
        self.done
    }

    pub fn finish(self) -> Result<ModelOutput, ProviderError> {
        if !self.done && self.stop_reason.is_none() {
            return Err(ProviderError::Truncated {
                detail: format!(
                    "OpenAI stream closed without `finish_reason` or `[DONE]`, after {} \
                     characters of text and {} tool call(s)",
                    self.text.chars().count(),
                    self.calls.len()
                ),
            });
        }
        Ok(ModelOutput {
            text: self.text,
            tool_calls: self.calls.into_calls(),
            usage: self.usage,
            stop_reason: self.stop_reason,
        })
    }
}
