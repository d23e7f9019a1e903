//! JSON-RPC 2.0 as MCP's Streamable HTTP transport carries it: requests and notifications
//! out, and in a body (JSON) or an SSE event's data, one message or a batch of them.

use super::PROTOCOL_VERSIONS;
use serde_json::{Map, Value, json};

/// A request of ours, as the POST body.
pub fn request(id: u64, method: &str, params: Value) -> String {
    json!({ "jsonrpc": "2.0", "id": id, "method": method, "params": params }).to_string()
}

/// A notification of ours (no id, no answer): `notifications/initialized`,
/// `notifications/cancelled`.
pub fn notification(method: &str, params: Value) -> String {
    json!({ "jsonrpc": "2.0", "method": method, "params": params }).to_string()
}

/// Our answer to a request of the server's (`id` as it sent it): its result, or an error.
pub fn response(id: &Value, outcome: Result<Value, RpcError>) -> String {
    match outcome {
        Ok(result) => json!({ "jsonrpc": "2.0", "id": id, "result": result }),
        Err(e) => json!({ "jsonrpc": "2.0", "id": id,
            "error": { "code": e.code, "message": e.message } }),
    }
    .to_string()
}

/// A JSON-RPC error answer.
#[derive(Debug, Clone, PartialEq)]
pub struct RpcError {
    pub code: i64,
    pub message: String,
}

/// A message from the server.
#[derive(Debug, Clone, PartialEq)]
pub enum Incoming {
    /// The answer to our request `id` (ids are ours: numbers).
    Response {
        id: u64,
        outcome: Result<Value, RpcError>,
    },
    /// E.g. `notifications/tools/list_changed`, `notifications/cancelled`.
    Notification { method: String, params: Value },
    /// A request of the server's (`elicitation/create`, `ping`, …), with its id as sent.
    Request {
        id: Value,
        method: String,
        params: Value,
    },
}

/// The messages of one body or SSE event: an object or a batch array. Anything else (an SSE
/// keep-alive comment's empty data, a priming event) gives none; malformed JSON is an error.
pub fn parse_body(text: &str) -> Result<Vec<Incoming>, String> {
    if text.trim().is_empty() {
        return Ok(Vec::new());
    }
    let v: Value = serde_json::from_str(text)
        .map_err(|e| format!("the server sent a body that is not JSON ({e})"))?;
    Ok(match v {
        Value::Array(items) => items.iter().filter_map(incoming).collect(),
        one => incoming(&one).into_iter().collect(),
    })
}

fn incoming(v: &Value) -> Option<Incoming> {
    let o = v.as_object()?;
    let method = o.get("method").and_then(Value::as_str);
    let params = || o.get("params").cloned().unwrap_or(Value::Null);
    match (o.get("id"), method) {
        (Some(id), Some(m)) => Some(Incoming::Request {
            id: id.clone(),
            method: m.into(),
            params: params(),
        }),
        (None, Some(m)) => Some(Incoming::Notification {
            method: m.into(),
            params: params(),
        }),
        (Some(id), None) => Some(Incoming::Response {
            id: id.as_u64()?,
            outcome: outcome(o),
        }),
        (None, None) => None,
    }
}

fn outcome(o: &Map<String, Value>) -> Result<Value, RpcError> {
    if let Some(e) = o.get("error") {
        return Err(RpcError {
            code: e.get("code").and_then(Value::as_i64).unwrap_or(0),
            message: e
                .get("message")
                .and_then(Value::as_str)
                .unwrap_or("unknown error")
                .to_owned(),
        });
    }
    Ok(o.get("result").cloned().unwrap_or(Value::Null))
}

/// The protocol revision of an `initialize` result, if this client speaks it.
pub fn negotiated(result: &Value) -> Result<String, String> {
    let v = result.get("protocolVersion").and_then(Value::as_str);
    match v {
        Some(v) if PROTOCOL_VERSIONS.contains(&v) => Ok(v.to_owned()),
        Some(v) => Err(format!(
            "the server speaks MCP {v}; this client speaks {}",
            PROTOCOL_VERSIONS.join(", ")
        )),
        None => Err("the server's initialize result has no protocolVersion".into()),
    }
}

/// A `tools/call` result as the model sees it: `Ok` the content as text (one line per block;
/// text as it is, other blocks described, `structuredContent` as JSON when no block repeats
/// it), `Err` that text when the server says `isError` (a tool error result).
pub fn call_result(result: &Value) -> Result<Value, String> {
    let mut parts: Vec<String> = Vec::new();
    let blocks = result.get("content").and_then(Value::as_array);
    for b in blocks.into_iter().flatten() {
        let s = |k: &str| b.get(k).and_then(Value::as_str).unwrap_or("");
        parts.push(match s("type") {
            "text" => s("text").to_owned(),
            kind @ ("image" | "audio") => format!(
                "[{kind}: {}, {} bytes of base64 not shown]",
                s("mimeType"),
                s("data").len()
            ),
            "resource_link" => format!("[resource link: {} {}]", s("name"), s("uri")),
            "resource" => match b.get("resource") {
                Some(r) => match r.get("text").and_then(Value::as_str) {
                    Some(t) => t.to_owned(),
                    None => format!(
                        "[resource: {}]",
                        r.get("uri").and_then(Value::as_str).unwrap_or("")
                    ),
                },
                None => continue,
            },
            _ => b.to_string(),
        });
    }
    if let Some(sc) = result.get("structuredContent").filter(|v| !v.is_null()) {
        let json = sc.to_string();
        if !parts.contains(&json) {
            parts.push(json);
        }
    }
    let text = parts.join("\n");
    if result.get("isError").and_then(Value::as_bool) == Some(true) {
        Err(if text.is_empty() {
            "the MCP tool failed".into()
        } else {
            text
        })
    } else {
        Ok(Value::String(text))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn answers_notifications_and_batches() {
        let one = r#"{"jsonrpc":"2.0","id":3,"result":{"tools":[]}}"#;
        assert_eq!(
            parse_body(one).unwrap(),
            [Incoming::Response {
                id: 3,
                outcome: Ok(json!({ "tools": [] }))
            }]
        );
        let batch = r#"[{"jsonrpc":"2.0","method":"notifications/tools/list_changed"},
            {"jsonrpc":"2.0","id":1,"method":"ping"},
            {"jsonrpc":"2.0","id":4,"error":{"code":-32602,"message":"no such tool"}}]"#;
        let got = parse_body(batch).unwrap();
        assert_eq!(
            got[0],
            Incoming::Notification {
                method: "notifications/tools/list_changed".into(),
                params: Value::Null,
            }
        );
        assert_eq!(
            got[1],
            Incoming::Request {
                id: json!(1),
                method: "ping".into(),
                params: Value::Null,
            }
        );
        let Incoming::Response {
            outcome: Err(e), ..
        } = &got[2]
        else {
            panic!("{got:?}")
        };
        assert_eq!((e.code, e.message.as_str()), (-32602, "no such tool"));
        assert_eq!(parse_body("").unwrap(), []);
        assert!(parse_body("{oops").is_err());
    }

    #[test]
    fn the_version_must_be_one_we_speak() {
        let ok = json!({ "protocolVersion": "2025-06-18" });
        assert_eq!(negotiated(&ok).unwrap(), "2025-06-18");
        assert!(negotiated(&json!({ "protocolVersion": "2024-11-05" })).is_err());
        assert!(negotiated(&json!({})).is_err());
        let req: Value = serde_json::from_str(&request(1, "initialize", json!({}))).unwrap();
        assert_eq!(req["method"], "initialize");
        let note: Value = serde_json::from_str(&notification("n", json!({}))).unwrap();
        assert!(note.get("id").is_none());
        // Answers to the server's requests keep its id as it sent it (a string here).
        let ok: Value = serde_json::from_str(&response(&json!("s-1"), Ok(json!({})))).unwrap();
        assert_eq!(ok, json!({ "jsonrpc": "2.0", "id": "s-1", "result": {} }));
        let no = RpcError {
            code: -32601,
            message: "no".into(),
        };
        let no: Value = serde_json::from_str(&response(&json!(7), Err(no))).unwrap();
        assert_eq!(
            no,
            json!({ "jsonrpc": "2.0", "id": 7, "error": { "code": -32601, "message": "no" } })
        );
    }

    #[test]
    fn content_becomes_the_result_the_model_sees() {
        let r = json!({ "content": [
            { "type": "text", "text": "3 issues" },
            { "type": "image", "mimeType": "image/png", "data": "aGVsbG8=" },
            { "type": "resource_link", "uri": "file:///a.txt", "name": "a.txt" },
            { "type": "resource", "resource": { "uri": "file:///b", "text": "inside b" } },
        ], "structuredContent": { "count": 3 } });
        assert_eq!(
            call_result(&r).unwrap(),
            json!(
                "3 issues\n[image: image/png, 8 bytes of base64 not shown]\n\
                 [resource link: a.txt file:///a.txt]\ninside b\n{\"count\":3}"
            )
        );
        // A text block that repeats the structured content is not sent twice.
        let same = json!({ "content": [{ "type": "text", "text": "{\"a\":1}" }],
            "structuredContent": { "a": 1 } });
        assert_eq!(call_result(&same).unwrap(), json!("{\"a\":1}"));
        let failed = json!({ "content": [{ "type": "text", "text": "disk full" }],
            "isError": true });
        assert_eq!(call_result(&failed), Err("disk full".into()));
        assert!(call_result(&json!({ "isError": true })).is_err());
    }
}
