//! The demo model (`gatehouse_agent::providers::demo`) as a wasm module of its own. The npm
//! package's main wasm leaves it out: `gatehouse.js` loads this module only when an agent
//! opens with `provider: "demo"` (or no `model`), and hands its answers to the agent as a
//! custom model does (docs/design.md, "The demo model").
//!
//! One export, JSON text in and out: `respond(messages, tools)` takes the request's messages
//! (thread JSON) and tools (`{ name, description, parameters }`), and returns the answer as a
//! `CustomModelAnswer` plus `deltas`, the answer as a real model would stream it.

use gatehouse_agent::Message;
use gatehouse_agent::providers::demo::{self, Unicode};
use gatehouse_agent::providers::{StreamDelta, ToolDef};
use serde::Deserialize;
use serde_json::{Value, json};
use wasm_bindgen::prelude::*;

#[derive(Deserialize)]
struct ToolIn {
    name: String,
    description: Option<String>,
    #[serde(default)]
    parameters: Value,
}

/// The demo's answer to `messages` given `tools`, as JSON text (see the module's doc).
#[wasm_bindgen]
pub fn respond(messages: &str, tools: &str) -> Result<String, JsError> {
    let history: Vec<Message> =
        serde_json::from_str(messages).map_err(|e| JsError::new(&format!("messages: {e}")))?;
    let tools: Vec<ToolIn> =
        serde_json::from_str(tools).map_err(|e| JsError::new(&format!("tools: {e}")))?;
    let defs: Vec<ToolDef> = tools
        .into_iter()
        .map(|t| ToolDef::new(t.name, t.description.as_deref(), t.parameters))
        .collect();
    Ok(answer(&history, &defs, JS_UNICODE).to_string())
}

/// The answer and its deltas, as `respond` returns them (natively testable).
pub fn answer(history: &[Message], tools: &[ToolDef], uni: Unicode) -> Value {
    let out = demo::respond_with(history, tools, uni);
    let deltas: Vec<Value> = demo::stream_deltas(&out)
        .into_iter()
        .map(|d| match d {
            StreamDelta::Text(text) => json!({ "text": text }),
            StreamDelta::ToolCallStarted { index, id, name } => {
                json!({ "index": index, "id": id, "name": name })
            }
            StreamDelta::ToolCallArguments { index, delta } => {
                json!({ "index": index, "arguments": delta })
            }
        })
        .collect();
    json!({
        "text": out.text,
        "toolCalls": out.tool_calls.iter().map(|c| json!({
            "id": c.id, "name": c.name, "arguments": c.arguments,
        })).collect::<Vec<_>>(),
        "usage": out.usage,
        "stopReason": out.stop_reason,
        "deltas": deltas,
    })
}

/// The demo's Unicode operations, by the browser's own code (see `demo::Unicode`): std's
/// would bring ~20 KB of Unicode tables into this module.
const JS_UNICODE: Unicode = Unicode {
    lowercase: |s| js_sys::JsString::from(s).to_lower_case().into(),
    is_alphanumeric: |c| {
        c.is_ascii_alphanumeric() || !c.is_ascii() && js_test(c, "^[\\p{Alphabetic}\\p{N}]$")
    },
    is_uppercase: |c| c.is_ascii_uppercase() || !c.is_ascii() && js_test(c, "^\\p{Uppercase}$"),
};

/// Whether the Unicode regexp `pattern` matches `c` (for the non-ASCII chars of demo texts).
fn js_test(c: char, pattern: &str) -> bool {
    js_sys::RegExp::new(pattern, "u").test(c.encode_utf8(&mut [0; 4]))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// What `respond` hands demo-model/index.js: the answer as a `CustomModelAnswer`, and its
    /// deltas in the order the old in-process demo emitted them.
    #[test]
    fn the_answer_and_its_deltas() {
        let history: Vec<Message> = serde_json::from_value(json!([{
            "__id": "msg_1", "role": "user",
            "content": [{ "type": "text", "content": "delete /tmp/a.txt", "meta": [] }],
        }]))
        .unwrap();
        let tools = [ToolDef::new(
            "delete_file",
            Some("Delete a file"),
            json!({ "type": "object", "properties": { "path": { "type": "string" } } }),
        )];
        let a = answer(&history, &tools, Unicode::STD);
        let call = &a["toolCalls"][0];
        assert_eq!(call["name"], "delete_file");
        assert_eq!(
            serde_json::from_str::<Value>(call["arguments"].as_str().unwrap()).unwrap(),
            json!({ "path": "/tmp/a.txt" })
        );
        assert_eq!(a["stopReason"], "tool_calls");
        assert!(a["usage"]["input_tokens"].as_u64().unwrap() > 0);
        let deltas = a["deltas"].as_array().unwrap();
        let text: String = deltas.iter().filter_map(|d| d["text"].as_str()).collect();
        assert_eq!(text, a["text"].as_str().unwrap());
        let start = deltas.iter().position(|d| d.get("name").is_some()).unwrap();
        assert_eq!(
            deltas[start],
            json!({ "index": 0, "id": call["id"], "name": "delete_file" })
        );
        assert!(deltas[..start].iter().all(|d| d.get("text").is_some()));
        let args: String = deltas[start + 1..]
            .iter()
            .map(|d| d["arguments"].as_str().unwrap())
            .collect();
        assert_eq!(args, call["arguments"].as_str().unwrap());
    }
}
