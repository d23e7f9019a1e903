//! MCP elicitation, the pure part (docs/design.md, "MCP elicitation"): an `elicitation/create`
//! request's params read into an [`Elicitation`] (form mode with a flat schema of primitives,
//! or URL mode), and the app's answer checked against it into the `ElicitResult` the server
//! gets. Protocol revision 2025-11-25, which added URL mode; a 2025-06-18 server sends form
//! requests without `mode`, read the same.

use serde::Serialize;
use serde_json::{Map, Value, json};

/// What the server asks, as `pendingElicitations()` and the tail's entry show it (without the
/// agent's `id`, `callId` and `server`, which the driver adds).
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Elicitation {
    /// `"form"`: fields the user fills in here; `"url"`: a page the user opens (sensitive
    /// input never passes through the agent).
    pub mode: &'static str,
    pub message: String,
    /// Form mode: the flat object schema the answer's `content` must satisfy.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub requested_schema: Option<Value>,
    /// URL mode: the page to open, and the server's id of this elicitation.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub url: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub elicitation_id: Option<String>,
}

/// The JSON-RPC error code of a request the client refuses to show (malformed params).
pub const INVALID_PARAMS: i64 = -32602;

/// Reads `elicitation/create` params; `Err` says what is wrong (the server gets it as an
/// `Invalid params` error, and nothing is shown).
pub fn parse(params: &Value) -> Result<Elicitation, String> {
    let p = params.as_object().ok_or("params must be an object")?;
    let message = p
        .get("message")
        .and_then(Value::as_str)
        .ok_or("`message` must be a string")?
        .to_owned();
    match p.get("mode").and_then(Value::as_str).unwrap_or("form") {
        "form" => {
            let schema = p
                .get("requestedSchema")
                .ok_or("`requestedSchema` is missing")?;
            check_schema(schema)?;
            Ok(Elicitation {
                mode: "form",
                message,
                requested_schema: Some(schema.clone()),
                url: None,
                elicitation_id: None,
            })
        }
        "url" => {
            let url = p
                .get("url")
                .and_then(Value::as_str)
                .ok_or("`url` must be a string")?;
            check_url(url)?;
            let id = p
                .get("elicitationId")
                .and_then(Value::as_str)
                .ok_or("`elicitationId` must be a string")?;
            Ok(Elicitation {
                mode: "url",
                message,
                requested_schema: None,
                url: Some(url.to_owned()),
                elicitation_id: Some(id.to_owned()),
            })
        }
        other => Err(format!("unknown mode {other:?}")),
    }
}

/// A form's schema as the protocol restricts it: an object whose properties are strings
/// (optionally an enum, titled with `oneOf`), numbers, integers, booleans, or arrays of enum
/// strings (multi-select). Nested objects are refused.
fn check_schema(schema: &Value) -> Result<(), String> {
    let s = schema
        .as_object()
        .ok_or("`requestedSchema` must be an object")?;
    if s.get("type").and_then(Value::as_str) != Some("object") {
        return Err("`requestedSchema` must have type \"object\"".into());
    }
    let props = s
        .get("properties")
        .and_then(Value::as_object)
        .ok_or("`requestedSchema.properties` must be an object")?;
    for (name, p) in props {
        let kind = p.get("type").and_then(Value::as_str).unwrap_or("");
        let ok = match kind {
            "string" | "number" | "integer" | "boolean" => true,
            "array" => p
                .get("items")
                .is_some_and(|i| i.get("enum").is_some() || i.get("anyOf").is_some()),
            _ => false,
        };
        if !ok {
            return Err(format!(
                "the field {name:?} must be a string, number, integer, boolean or a \
                 multi-select (array of enum strings)"
            ));
        }
    }
    match s.get("required") {
        None => Ok(()),
        Some(Value::Array(r))
            if r.iter()
                .all(|n| n.as_str().is_some_and(|n| props.contains_key(n))) =>
        {
            Ok(())
        }
        Some(_) => Err("`requestedSchema.required` must name its properties".into()),
    }
}

/// A URL the user may be sent to: absolute `https:` (or `http:`, for local servers), with no
/// whitespace or control characters that could hide its real host.
fn check_url(url: &str) -> Result<(), String> {
    let rest = url
        .strip_prefix("https://")
        .or_else(|| url.strip_prefix("http://"))
        .ok_or("`url` must be an absolute https: or http: URL")?;
    let host = rest.split(['/', '?', '#']).next().unwrap_or("");
    if host.is_empty() || url.chars().any(|c| c.is_whitespace() || c.is_control()) {
        return Err("`url` must name a host and hold no whitespace".into());
    }
    Ok(())
}

/// The app's answer as the server's `ElicitResult`: `"decline"`, `"cancel"`, `"accept"` (a
/// URL, or a form without required fields), or `{ action, content? }` as the protocol writes
/// it (`content` only for a form's accept, checked against its schema by [`fits`]). `Err`
/// says why the answer was refused; nothing is sent then.
pub fn answer(e: &Elicitation, given: &Value) -> Result<Value, String> {
    let result = shaped(e, given)?;
    if let (Some(schema), Some(content)) = (&e.requested_schema, result.get("content")) {
        fits(schema, content)?;
    }
    Ok(result)
}

/// [`answer`] without the schema's check of the content: the MCP client's module does this
/// part, and the package's JS the rest with the main wasm's validator ([`fits_text`]), which
/// the module would otherwise carry a second copy of.
pub fn shaped(e: &Elicitation, given: &Value) -> Result<Value, String> {
    let (action, content) = match given {
        Value::String(a) => (a.as_str(), None),
        Value::Object(o) => {
            if let Some(k) = o.keys().find(|k| *k != "action" && *k != "content") {
                return Err(format!("an answer has no key {k:?}"));
            }
            let action = o
                .get("action")
                .and_then(Value::as_str)
                .ok_or("an answer's `action` must be \"accept\", \"decline\" or \"cancel\"")?;
            (action, o.get("content"))
        }
        _ => {
            return Err(
                "an answer is \"accept\", \"decline\", \"cancel\" or { action, content }".into(),
            );
        }
    };
    match (action, content) {
        ("decline" | "cancel", None) => Ok(json!({ "action": action })),
        ("decline" | "cancel", Some(_)) => Err(format!("a {action} carries no content")),
        ("accept", content) => match &e.requested_schema {
            None if content.is_some() => {
                Err("an accepted URL elicitation carries no content".into())
            }
            None => Ok(json!({ "action": "accept" })),
            Some(schema) => {
                let content = content.cloned().unwrap_or(Value::Object(Map::new()));
                let fields = content.as_object().ok_or("`content` must be an object")?;
                let props = schema.get("properties").and_then(Value::as_object);
                if let Some(k) = fields
                    .keys()
                    .find(|k| !props.is_some_and(|p| p.contains_key(*k)))
                {
                    return Err(format!("the form has no field {k:?}"));
                }
                Ok(json!({ "action": "accept", "content": content }))
            }
        },
        (other, _) => Err(format!(
            "an answer's action is \"accept\", \"decline\" or \"cancel\", not {other:?}"
        )),
    }
}

/// [`shaped`] for an answer as the agent's JS holds it (the question as [`parse`] read it,
/// both JSON text): the result to send once its content [`fits`], or why the answer was
/// refused.
pub fn check(question: &str, given: &str) -> Result<String, String> {
    let q: Value = serde_json::from_str(question).map_err(|e| format!("the question: {e}"))?;
    let given: Value = serde_json::from_str(given).map_err(|e| format!("the answer: {e}"))?;
    Ok(shaped(&parse(&q)?, &given)?.to_string())
}

/// A form's content against its schema (required fields, types, enums, lengths, ranges).
pub fn fits(schema: &Value, content: &Value) -> Result<(), String> {
    crate::schema::validate(schema, content).map_err(|errors| {
        format!(
            "the answer does not fit the form: {}",
            crate::schema::format_errors(&errors)
        )
    })
}

/// [`fits`] from JSON text (the main wasm's part of checking an answer: `checkJson`).
pub fn fits_text(schema: &str, content: &str) -> Result<(), String> {
    let schema: Value = serde_json::from_str(schema).map_err(|e| format!("the form: {e}"))?;
    let content: Value = serde_json::from_str(content).map_err(|e| format!("the answer: {e}"))?;
    fits(&schema, &content)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn form() -> Elicitation {
        parse(&json!({
            "message": "Which branch?",
            "requestedSchema": { "type": "object",
                "properties": {
                    "branch": { "type": "string", "minLength": 1 },
                    "force": { "type": "boolean" },
                    "retries": { "type": "integer", "minimum": 0, "maximum": 5 },
                    "color": { "type": "string", "enum": ["red", "green"] },
                    "tags": { "type": "array", "items": { "type": "string", "enum": ["a", "b"] } } },
                "required": ["branch"] }
        }))
        .unwrap()
    }

    #[test]
    fn a_form_request_reads_with_its_schema_and_a_url_request_with_its_url() {
        let f = form();
        assert_eq!(f.mode, "form");
        assert_eq!(f.message, "Which branch?");
        let shown = serde_json::to_value(&f).unwrap();
        assert_eq!(
            shown.as_object().unwrap().keys().collect::<Vec<_>>(),
            ["mode", "message", "requestedSchema"]
        );
        let u = parse(
            &json!({ "mode": "url", "message": "Sign in", "url": "https://auth.example/x?y=1",
            "elicitationId": "e1" }),
        )
        .unwrap();
        assert_eq!(
            serde_json::to_value(&u).unwrap(),
            json!({ "mode": "url", "message": "Sign in", "url": "https://auth.example/x?y=1", "elicitationId": "e1" })
        );
    }

    #[test]
    fn malformed_requests_are_refused_with_a_reason() {
        let cases = [
            json!("x"),
            json!({ "requestedSchema": { "type": "object", "properties": {} } }),
            json!({ "message": "m" }),
            json!({ "message": "m", "requestedSchema": { "type": "string" } }),
            json!({ "message": "m", "requestedSchema": { "type": "object", "properties": {
                "nested": { "type": "object" } } } }),
            json!({ "message": "m", "requestedSchema": { "type": "object", "properties": {
                "a": { "type": "string" } }, "required": ["b"] } }),
            json!({ "message": "m", "mode": "url", "url": "javascript:alert(1)", "elicitationId": "e" }),
            json!({ "message": "m", "mode": "url", "url": "https://", "elicitationId": "e" }),
            json!({ "message": "m", "mode": "url", "url": "https://a.example/ b", "elicitationId": "e" }),
            json!({ "message": "m", "mode": "url", "url": "https://a.example/" }),
            json!({ "message": "m", "mode": "telepathy" }),
        ];
        for c in cases {
            assert!(parse(&c).is_err(), "{c} was read");
        }
    }

    #[test]
    fn answers_that_fit_become_the_result_the_server_gets() {
        let f = form();
        assert_eq!(
            answer(&f, &json!("decline")).unwrap(),
            json!({ "action": "decline" })
        );
        assert_eq!(
            answer(&f, &json!({ "action": "cancel" })).unwrap(),
            json!({ "action": "cancel" })
        );
        let content =
            json!({ "branch": "main", "force": true, "retries": 2, "color": "red", "tags": ["a"] });
        assert_eq!(
            answer(&f, &json!({ "action": "accept", "content": content })).unwrap(),
            json!({ "action": "accept", "content": content })
        );
        let u = parse(&json!({ "mode": "url", "message": "m", "url": "https://a.example/", "elicitationId": "e" })).unwrap();
        assert_eq!(
            answer(&u, &json!("accept")).unwrap(),
            json!({ "action": "accept" })
        );
    }

    #[test]
    fn a_question_as_shown_reads_back_for_its_answer() {
        let f = form();
        let q = serde_json::to_string(&f).unwrap();
        let ok = check(&q, r#"{"action":"accept","content":{"branch":"main"}}"#).unwrap();
        assert_eq!(ok, r#"{"action":"accept","content":{"branch":"main"}}"#);
        assert!(check(&q, r#"{"action":"accept","content":{"nope":1}}"#).is_err());
        assert!(check(&q, "{oops").is_err());
        assert!(check("{}", r#""decline""#).is_err(), "not a question");
        // The schema's part, from the text the JS side holds: the two together are `answer`.
        let schema = f.requested_schema.as_ref().unwrap().to_string();
        assert_eq!(fits_text(&schema, r#"{"branch":"main"}"#), Ok(()));
        let missing = check(&q, r#""accept""#).unwrap();
        let missing: Value = serde_json::from_str(&missing).unwrap();
        assert!(
            fits_text(&schema, &missing["content"].to_string()).is_err(),
            "branch is required"
        );
        assert!(fits_text(&schema, r#"{"branch":""}"#).is_err());
        assert!(fits_text("{oops", "{}").is_err());
    }

    #[test]
    fn answers_that_do_not_fit_are_refused_with_a_reason() {
        let f = form();
        let u = parse(&json!({ "mode": "url", "message": "m", "url": "https://a.example/", "elicitationId": "e" })).unwrap();
        let bad = [
            (&f, json!("accept")), // branch is required
            (
                &f,
                json!({ "action": "accept", "content": { "branch": "" } }),
            ), // minLength
            (
                &f,
                json!({ "action": "accept", "content": { "branch": "x", "retries": 9 } }),
            ),
            (
                &f,
                json!({ "action": "accept", "content": { "branch": "x", "color": "blue" } }),
            ),
            (
                &f,
                json!({ "action": "accept", "content": { "branch": "x", "tags": ["c"] } }),
            ),
            (
                &f,
                json!({ "action": "accept", "content": { "branch": "x", "extra": 1 } }),
            ),
            (&f, json!({ "action": "accept", "content": "main" })),
            (&f, json!({ "action": "decline", "content": {} })),
            (&f, json!({ "action": "approve" })),
            (
                &f,
                json!({ "action": "accept", "content": { "branch": "x" }, "note": 1 }),
            ),
            (&f, json!(["accept", {}])),
            (&f, json!(null)),
            (&u, json!({ "action": "accept", "content": {} })),
            (&u, json!("yes")),
        ];
        for (e, a) in bad {
            assert!(answer(e, &a).is_err(), "{a} was taken");
        }
    }
}
