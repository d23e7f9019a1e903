//! What the engine receives from a model call, whatever the provider's wire format.

use crate::thread::Usage;

/// One tool call the model asked for. `arguments` is the raw JSON text as the model produced
/// it (possibly invalid: the engine validates it and answers the model with an error result).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ModelToolCall {
    pub id: String,
    pub name: String,
    pub arguments: String,
}

/// A complete model answer: text, tool calls (in the order the model sent them), usage and the
/// provider's own stop reason (`"stop"`, `"end_turn"`, `"tool_calls"`, `"length"`, ...).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ModelOutput {
    pub text: String,
    pub tool_calls: Vec<ModelToolCall>,
    pub usage: Option<Usage>,
    pub stop_reason: Option<String>,
}

impl ModelOutput {
    pub fn text(text: impl Into<String>) -> Self {
        ModelOutput {
            text: text.into(),
            ..Default::default()
        }
    }

    pub fn calls(calls: Vec<ModelToolCall>) -> Self {
        ModelOutput {
            tool_calls: calls,
            ..Default::default()
        }
    }
}

impl ModelToolCall {
    pub fn new(
        id: impl Into<String>,
        name: impl Into<String>,
        arguments: impl Into<String>,
    ) -> Self {
        ModelToolCall {
            id: id.into(),
            name: name.into(),
            arguments: arguments.into(),
        }
    }
}
