//! Messages of a thread, serialized exactly as docs/design.md, "The thread JSON", says: `__id`,
//! metadata keys in insertion order, `role`, `content`, `usage` (when known), then `type` and
//! `tools` for tool messages.

use super::entry::ToolEntry;
use super::id::MessageId;
use serde::de::{self, Deserializer, MapAccess, Visitor};
use serde::ser::{SerializeMap, Serializer};
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};
use std::fmt;

pub const META_STOP_REASON: &str = "stop_reason";
pub const META_RESUME_TOKEN: &str = "resume_token";

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Role {
    User,
    Assistant,
}

/// Token usage, all four keys always present.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Usage {
    pub input_tokens: u64,
    pub output_tokens: u64,
    #[serde(default)]
    pub cached_input_tokens: u64,
    #[serde(default)]
    pub reasoning_tokens: u64,
}

/// A content block. Text is typed; any other block (reasoning, image, file...) is kept as it
/// was written so that a round trip loses nothing.
#[derive(Debug, Clone, PartialEq)]
pub enum ContentBlock {
    /// `{"type":"text","content":"…","meta":[]}`; `meta` is `[]` when empty, else an object.
    Text {
        content: String,
        meta: Map<String, Value>,
    },
    Other(Map<String, Value>),
}

impl ContentBlock {
    pub fn text(content: impl Into<String>) -> Self {
        ContentBlock::Text {
            content: content.into(),
            meta: Map::new(),
        }
    }

    pub fn as_text(&self) -> Option<&str> {
        match self {
            ContentBlock::Text { content, .. } => Some(content),
            ContentBlock::Other(_) => None,
        }
    }
}

impl Serialize for ContentBlock {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        match self {
            ContentBlock::Text { content, meta } => {
                let mut m = s.serialize_map(Some(3))?;
                m.serialize_entry("type", "text")?;
                m.serialize_entry("content", content)?;
                if meta.is_empty() {
                    m.serialize_entry("meta", &[] as &[Value])?;
                } else {
                    m.serialize_entry("meta", meta)?;
                }
                m.end()
            }
            ContentBlock::Other(map) => map.serialize(s),
        }
    }
}

impl<'de> Deserialize<'de> for ContentBlock {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let map = Map::<String, Value>::deserialize(d)?;
        let is_plain_text = map.get("type").and_then(Value::as_str) == Some("text")
            && map.get("content").is_some_and(Value::is_string)
            && map
                .keys()
                .all(|k| matches!(k.as_str(), "type" | "content" | "meta"));
        if !is_plain_text {
            return Ok(ContentBlock::Other(map));
        }
        // Taken apart by iteration: `Map::remove` would link IndexMap's swap_remove.
        let (mut content, mut meta) = (String::new(), Map::new());
        for (key, value) in map {
            match (key.as_str(), value) {
                ("content", Value::String(s)) => content = s,
                ("meta", Value::Object(o)) => meta = o,
                _ => {}
            }
        }
        Ok(ContentBlock::Text { content, meta })
    }
}

/// What kind of message this is; tool messages carry their entries.
#[derive(Debug, Clone, PartialEq)]
pub enum MessageKind {
    Plain,
    ToolCall(Vec<ToolEntry>),
    ToolCallResult(Vec<ToolEntry>),
}

#[derive(Debug, Clone, PartialEq)]
pub struct Message {
    pub id: MessageId,
    /// Metadata keys between `__id` and `role`, in insertion order (`stop_reason`,
    /// `resume_token`, and anything another writer put there).
    pub meta: Map<String, Value>,
    pub role: Role,
    pub content: Vec<ContentBlock>,
    pub usage: Option<Usage>,
    pub kind: MessageKind,
}

impl Message {
    pub fn user_text(id: MessageId, text: impl Into<String>) -> Self {
        Message {
            id,
            meta: Map::new(),
            role: Role::User,
            content: vec![ContentBlock::text(text)],
            usage: None,
            kind: MessageKind::Plain,
        }
    }

    pub fn assistant_text(id: MessageId, text: impl Into<String>) -> Self {
        let text = text.into();
        Message {
            id,
            meta: Map::new(),
            role: Role::Assistant,
            content: if text.is_empty() {
                Vec::new()
            } else {
                vec![ContentBlock::text(text)]
            },
            usage: None,
            kind: MessageKind::Plain,
        }
    }

    pub fn tool_call(id: MessageId, text: &str, tools: Vec<ToolEntry>) -> Self {
        let mut m = Message::assistant_text(id, text);
        m.kind = MessageKind::ToolCall(tools);
        m
    }

    pub fn tool_call_result(id: MessageId, tools: Vec<ToolEntry>) -> Self {
        Message {
            id,
            meta: Map::new(),
            role: Role::User,
            content: Vec::new(),
            usage: None,
            kind: MessageKind::ToolCallResult(tools),
        }
    }

    /// The entries of a `tool_call` message; `None` for any other kind.
    pub fn tool_calls(&self) -> Option<&[ToolEntry]> {
        match &self.kind {
            MessageKind::ToolCall(t) => Some(t),
            MessageKind::Plain | MessageKind::ToolCallResult(_) => None,
        }
    }

    pub fn tool_calls_mut(&mut self) -> Option<&mut Vec<ToolEntry>> {
        match &mut self.kind {
            MessageKind::ToolCall(t) => Some(t),
            MessageKind::Plain | MessageKind::ToolCallResult(_) => None,
        }
    }

    pub fn tool_results(&self) -> Option<&[ToolEntry]> {
        match &self.kind {
            MessageKind::ToolCallResult(t) => Some(t),
            MessageKind::Plain | MessageKind::ToolCall(_) => None,
        }
    }

    pub fn tool_results_mut(&mut self) -> Option<&mut Vec<ToolEntry>> {
        match &mut self.kind {
            MessageKind::ToolCallResult(t) => Some(t),
            MessageKind::Plain | MessageKind::ToolCall(_) => None,
        }
    }

    /// A UI's suspension test: a `tool_call` with at least one pending entry.
    pub fn is_suspended(&self) -> bool {
        self.tool_calls()
            .is_some_and(|t| t.iter().any(ToolEntry::is_pending))
    }

    /// All text blocks joined, for providers and previews.
    pub fn text(&self) -> String {
        let mut out = String::new();
        for b in &self.content {
            if let Some(t) = b.as_text() {
                out.push_str(t);
            }
        }
        out
    }

    pub fn meta_str(&self, key: &str) -> Option<&str> {
        self.meta.get(key).and_then(Value::as_str)
    }

    /// Sets a metadata key, keeping its position if it exists (insertion order otherwise).
    pub fn set_meta(&mut self, key: &str, value: Value) {
        self.meta.insert(key.to_owned(), value);
    }

    pub fn stop_reason(&self) -> Option<&str> {
        self.meta_str(META_STOP_REASON)
    }

    pub fn resume_token(&self) -> Option<&str> {
        self.meta_str(META_RESUME_TOKEN)
    }

    pub fn to_json_string(&self) -> String {
        // Serializing our own types to a String cannot fail (no non-string map keys).
        serde_json::to_string(self).unwrap_or_default()
    }
}

impl Serialize for Message {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let mut m = s.serialize_map(None)?;
        m.serialize_entry("__id", &self.id)?;
        for (k, v) in &self.meta {
            m.serialize_entry(k, v)?;
        }
        m.serialize_entry("role", &self.role)?;
        m.serialize_entry("content", &self.content)?;
        if let Some(u) = &self.usage {
            m.serialize_entry("usage", u)?;
        }
        match &self.kind {
            MessageKind::Plain => {}
            MessageKind::ToolCall(tools) => {
                m.serialize_entry("type", "tool_call")?;
                m.serialize_entry("tools", tools)?;
            }
            MessageKind::ToolCallResult(tools) => {
                m.serialize_entry("type", "tool_call_result")?;
                m.serialize_entry("tools", tools)?;
            }
        }
        m.end()
    }
}

impl<'de> Deserialize<'de> for Message {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        d.deserialize_map(MessageVisitor)
    }
}

struct MessageVisitor;

impl<'de> Visitor<'de> for MessageVisitor {
    type Value = Message;

    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("a thread message object")
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Message, A::Error> {
        let mut id = None;
        let mut meta = Map::new();
        let mut role = None;
        let mut content: Option<Vec<ContentBlock>> = None;
        let mut usage = None;
        let mut kind_name: Option<String> = None;
        let mut tools: Option<Vec<ToolEntry>> = None;
        while let Some(key) = map.next_key::<String>()? {
            match key.as_str() {
                "__id" => id = Some(map.next_value::<MessageId>()?),
                "role" => role = Some(map.next_value::<Role>()?),
                "content" => content = Some(map.next_value()?),
                "usage" => usage = map.next_value::<Option<Usage>>()?,
                "type" => kind_name = map.next_value::<Option<String>>()?,
                "tools" => tools = Some(map.next_value()?),
                _ => {
                    let v: Value = map.next_value()?;
                    meta.insert(key, v);
                }
            }
        }
        let kind = match kind_name.as_deref() {
            None => MessageKind::Plain,
            Some("tool_call") => MessageKind::ToolCall(tools.unwrap_or_default()),
            Some("tool_call_result") => MessageKind::ToolCallResult(tools.unwrap_or_default()),
            Some(other) => {
                return Err(de::Error::unknown_variant(
                    other,
                    &["tool_call", "tool_call_result"],
                ));
            }
        };
        Ok(Message {
            id: id.ok_or_else(|| de::Error::missing_field("__id"))?,
            meta,
            role: role.ok_or_else(|| de::Error::missing_field("role"))?,
            content: content.unwrap_or_default(),
            usage,
            kind,
        })
    }
}
