//! Anthropic Messages (`POST {base}/v1/messages`, `anthropic-version: 2023-06-01`).

use super::error::{ProviderError, error_fields};
use super::sse::SseEvent;
use super::stream::{StreamDelta, ToolCallSlots};
use super::{
    ANTHROPIC_DEFAULT_MAX_TOKENS, HttpRequest, ModelConfig, ToolDef, count_at, header,
    json_headers, str_at, usage, with_extra_headers,
};
use crate::engine::{ModelOutput, ModelToolCall};
use crate::thread::{Message, MessageKind, Role, Usage, json_text};
use serde_json::{Map, Value, json};

pub const ANTHROPIC_VERSION: &str = "2023-06-01";

pub(crate) fn build(
    cfg: &ModelConfig,
    instructions: Option<&str>,
    history: &[Message],
    tools: &[ToolDef],
) -> HttpRequest {
    let mut body = Map::new();
    body.insert("model".into(), json!(cfg.model));
    body.insert(
        "max_tokens".into(),
        json!(cfg.max_tokens.unwrap_or(ANTHROPIC_DEFAULT_MAX_TOKENS)),
    );
    if let Some(system) = instructions {
        body.insert("system".into(), json!(system));
    }
    body.insert("messages".into(), Value::Array(messages(history)));
    if !tools.is_empty() {
        body.insert("tools".into(), tools.iter().map(tool).collect());
    }
    if let Some(t) = cfg.temperature {
        body.insert("temperature".into(), json!(t));
    }
    if cfg.stream {
        body.insert("stream".into(), json!(true));
    }
    let mut headers = json_headers(cfg);
    if let Some(key) = &cfg.api_key {
        headers.push(header("x-api-key", key));
    }
    headers.push(header("anthropic-version", ANTHROPIC_VERSION));
    // Without it the API refuses calls that carry a browser Origin (CORS).
    headers.push(header("anthropic-dangerous-direct-browser-access", "true"));
    HttpRequest {
        url: cfg.endpoint(),
        headers: with_extra_headers(headers, cfg),
        body: json_text(&Value::Object(body)),
    }
}

fn tool(t: &ToolDef) -> Value {
    Value::Object(t.definition("input_schema"))
}

/// The API wants user and assistant turns to alternate, so consecutive messages of one role
/// are merged into one (tool results followed by a user text become one user turn, results
/// first, as the API requires).
fn messages(history: &[Message]) -> Vec<Value> {
    let mut turns: Vec<(&'static str, Vec<Value>)> = Vec::new();
    for m in history {
        let text = m.text();
        let text_block = || json!({ "type": "text", "text": text });
        let (role, blocks) = match &m.kind {
            MessageKind::ToolCallResult(entries) => {
                let blocks = entries
                    .iter()
                    .map(|e| {
                        let mut b = Map::new();
                        b.insert("type".into(), json!("tool_result"));
                        b.insert("tool_use_id".into(), json!(e.call_id));
                        // `content` is optional; an empty text block would be rejected.
                        if let Some(r) = e.result.as_deref().filter(|r| !r.is_empty()) {
                            b.insert("content".into(), json!(r));
                        }
                        Value::Object(b)
                    })
                    .collect();
                ("user", blocks)
            }
            MessageKind::ToolCall(entries) => {
                let mut blocks = Vec::new();
                if !text.is_empty() {
                    blocks.push(text_block());
                }
                for e in entries {
                    blocks.push(json!({
                        "type": "tool_use",
                        "id": e.call_id,
                        "name": e.name,
                        "input": Value::Object(e.inputs.clone()),
                    }));
                }
                ("assistant", blocks)
            }
            MessageKind::Plain if text.is_empty() => continue,
            MessageKind::Plain => {
                let role = if m.role == Role::User {
                    "user"
                } else {
                    "assistant"
                };
                (role, vec![text_block()])
            }
        };
        if blocks.is_empty() {
            continue;
        }
        match turns.last_mut() {
            Some((last_role, last_blocks)) if *last_role == role => last_blocks.extend(blocks),
            _ => turns.push((role, blocks)),
        }
    }
    turns
        .into_iter()
        .map(|(role, content)| json!({ "role": role, "content": content }))
        .collect()
}

pub(crate) fn parse(body: &str) -> Result<ModelOutput, ProviderError> {
    let v: Value = serde_json::from_str(body)
        .map_err(|e| ProviderError::malformed("Anthropic response", e))?;
    check_error(&v)?;
    let content = v
        .get("content")
        .and_then(Value::as_array)
        .ok_or_else(|| ProviderError::malformed("Anthropic response", "no `content` array"))?;
    let mut out = ModelOutput::default();
    for block in content {
        match str_at(block, "type") {
            "text" => out.text.push_str(str_at(block, "text")),
            "tool_use" => out.tool_calls.push(ModelToolCall {
                id: str_at(block, "id").to_owned(),
                name: str_at(block, "name").to_owned(),
                // An object as JSON text; a string (from a non-conforming server) verbatim,
                // so that the engine reports it for what it is.
                arguments: match block.get("input") {
                    None => "{}".to_owned(),
                    Some(Value::String(raw)) => raw.clone(),
                    Some(v) => json_text(v),
                },
            }),
            // thinking, server tool blocks...: not part of what the engine consumes.
            _ => {}
        }
    }
    let mut counts = Counts::default();
    if let Some(u) = v.get("usage") {
        counts.update(u);
        out.usage = Some(counts.usage());
    }
    out.stop_reason = v
        .get("stop_reason")
        .and_then(Value::as_str)
        .map(str::to_owned);
    Ok(out)
}

fn check_error(v: &Value) -> Result<(), ProviderError> {
    if str_at(v, "type") == "error" {
        Err(reported_error(v))
    } else {
        Ok(())
    }
}

/// `{"type":"error","error":{"type":"overloaded_error","message":"Overloaded"}}`
fn reported_error(v: &Value) -> ProviderError {
    let (message, error_type) = error_fields(v);
    ProviderError::Stream {
        error_type,
        message: message.unwrap_or_else(|| json_text(v)),
    }
}

/// Anthropic's usage counters. `input_tokens` excludes cache reads and writes; the thread's
/// `input_tokens` is the whole prompt (as OpenAI's `prompt_tokens`), so they are added up.
#[derive(Debug, Default, Clone, Copy)]
struct Counts {
    input: u64,
    cache_read: u64,
    cache_write: u64,
    output: u64,
}

impl Counts {
    /// Takes the counters present in `u`; `message_delta` repeats them cumulatively.
    fn update(&mut self, u: &Value) {
        let take = |key: &str, field: &mut u64| {
            if u.get(key).is_some_and(Value::is_u64) {
                *field = count_at(u, &[key]);
            }
        };
        take("input_tokens", &mut self.input);
        take("cache_read_input_tokens", &mut self.cache_read);
        take("cache_creation_input_tokens", &mut self.cache_write);
        take("output_tokens", &mut self.output);
    }

    fn usage(&self) -> Usage {
        usage(
            self.input
                .saturating_add(self.cache_read)
                .saturating_add(self.cache_write),
            self.output,
            self.cache_read,
            0,
        )
    }
}

/// Decodes Messages stream events.
#[derive(Debug, Default)]
pub struct AnthropicStream {
    text: String,
    calls: ToolCallSlots,
    /// Content block index → tool call slot.
    blocks: Vec<(u64, usize)>,
    counts: Option<Counts>,
    stop_reason: Option<String>,
    done: bool,
}

impl AnthropicStream {
    pub fn on_event(&mut self, ev: &SseEvent) -> Result<Vec<StreamDelta>, ProviderError> {
        let data = ev.data.trim();
        if self.done || data.is_empty() {
            return Ok(Vec::new());
        }
        let v: Value = serde_json::from_str(data)
            .map_err(|e| ProviderError::malformed("Anthropic stream event", e))?;
        // The `type` in the data is authoritative; the SSE `event:` name repeats it.
        let kind = match str_at(&v, "type") {
            "" => ev.event.as_deref().unwrap_or(""),
            t => t,
        };
        let mut out = Vec::new();
        let index = v.get("index").and_then(Value::as_u64);
        match kind {
            "message_start" => {
                if let Some(u) = v.get("message").and_then(|m| m.get("usage")) {
                    self.counts.get_or_insert_with(Counts::default).update(u);
                }
            }
            "content_block_start" => {
                let block = v.get("content_block").unwrap_or(&Value::Null);
                match str_at(block, "type") {
                    "text" => self.push_text(str_at(block, "text"), &mut out),
                    "tool_use" => {
                        let order = index.unwrap_or(self.calls.len() as u64);
                        let (slot, started) =
                            self.calls
                                .start(order, str_at(block, "id"), str_at(block, "name"));
                        if let Some(input) = block.get("input").filter(|i| i.is_object()) {
                            self.calls.set_fallback_arguments(slot, json_text(input));
                        }
                        self.blocks.push((order, slot));
                        out.push(started);
                    }
                    _ => {}
                }
            }
            "content_block_delta" => {
                let delta = v.get("delta").unwrap_or(&Value::Null);
                match str_at(delta, "type") {
                    "text_delta" => self.push_text(str_at(delta, "text"), &mut out),
                    "input_json_delta" => {
                        let slot = self.blocks.iter().find(|(b, _)| Some(*b) == index);
                        if let Some(&(_, slot)) = slot {
                            out.extend(self.calls.append(slot, str_at(delta, "partial_json")));
                        }
                    }
                    _ => {}
                }
            }
            "message_delta" => {
                if let Some(r) = v.get("delta").and_then(|d| d.get("stop_reason")) {
                    self.stop_reason = r.as_str().map(str::to_owned);
                }
                if let Some(u) = v.get("usage") {
                    self.counts.get_or_insert_with(Counts::default).update(u);
                }
            }
            "message_stop" => self.done = true,
            "error" => return Err(reported_error(&v)),
            // ping, content_block_stop, and event types added later.
            _ => {}
        }
        Ok(out)
    }

    fn push_text(&mut self, t: &str, out: &mut Vec<StreamDelta>) {
        if !t.is_empty() {
            self.text.push_str(t);
            out.push(StreamDelta::Text(t.to_owned()));
        }
    }

    pub fn is_finished(&self) -> bool {
        self.done
    }

    pub fn finish(self) -> Result<ModelOutput, ProviderError> {
        if !self.done && self.stop_reason.is_none() {
            return Err(ProviderError::Truncated {
                detail: format!(
                    "Anthropic stream closed without `message_stop`, after {} characters of \
                     text and {} tool call(s)",
                    self.text.chars().count(),
                    self.calls.len()
                ),
            });
        }
        Ok(ModelOutput {
            text: self.text,
            tool_calls: self.calls.into_calls(),
            usage: self.counts.map(|c| c.usage()),
            stop_reason: self.stop_reason,
        })
    }
}
