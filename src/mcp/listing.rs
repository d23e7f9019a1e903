//! A server's `tools/list` as the agent's tools: which are kept (the allow-list, valid names
//! and schemas, no collisions), how they are named, gated and shown. A listed tool stays the
//! server's JSON object (its `name`, `title`, `description`, `inputSchema`, `annotations`):
//! that is also how it is stored with the thread, and typed copies would cost wasm bytes.

use super::{McpServerConfig, namespaced};
use crate::engine::{ToolSpec, check_tool_name};
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

/// The keys of a listed tool this client reads (and stores).
const KEPT: [&str; 5] = ["name", "title", "description", "inputSchema", "annotations"];

/// The server's annotations that are shown on the card, as hints.
const HINTS: [&str; 3] = ["readOnlyHint", "destructiveHint", "openWorldHint"];

/// A listed tool left out, and why (a `warning` event).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Skipped {
    pub tool: String,
    pub reason: String,
}

/// One page of a `tools/list` result: its tools, trimmed to the keys this client reads (an
/// entry without a string `name` is skipped), and the cursor of the next page.
pub fn parse_tools_page(result: &Value) -> (Vec<Result<Value, Skipped>>, Option<String>) {
    let tools = result.get("tools").and_then(Value::as_array);
    let listed = tools
        .into_iter()
        .flatten()
        .map(
            |t| match (t.as_object(), t.get("name").and_then(Value::as_str)) {
                (Some(o), Some(_)) => {
                    let mut o = o.clone();
                    o.retain(|k, _| KEPT.contains(&k.as_str()));
                    Ok(Value::Object(o))
                }
                _ => Err(Skipped {
                    tool: "?".into(),
                    reason: "its listing has no name".into(),
                }),
            },
        )
        .collect();
    let next = result.get("nextCursor").and_then(Value::as_str);
    (listed, next.map(str::to_owned))
}

fn text<'a>(t: &'a Value, key: &str) -> Option<&'a str> {
    t.get(key).and_then(Value::as_str)
}

/// The tools of `server` the agent offers, as tool definitions, and those skipped: not in
/// its allow-list (silently), an invalid input schema or name, or a name `taken` already.
/// Every kept tool asks a human, except a `readOnlyHint` one when the app trusts the hint.
pub fn select(
    server: &McpServerConfig,
    listed: &[Value],
    taken: &[&str],
) -> (Vec<ToolSpec>, Vec<Skipped>) {
    let mut specs: Vec<ToolSpec> = Vec::new();
    let mut skipped = Vec::new();
    for t in listed {
        let own = text(t, "name").unwrap_or_default();
        if server
            .tools
            .as_ref()
            .is_some_and(|a| !a.iter().any(|n| n == own))
        {
            continue;
        }
        let name = namespaced(&server.name, own);
        let skip = |reason: String| Skipped {
            tool: own.into(),
            reason,
        };
        if t.pointer("/inputSchema/type").and_then(Value::as_str) != Some("object") {
            skipped.push(skip("its inputSchema is not an object schema".into()));
        } else if let Err(e) = check_tool_name(&name) {
            skipped.push(skip(e));
        } else if taken.contains(&name.as_str()) || specs.iter().any(|s| s.name == name) {
            skipped.push(skip(format!("another tool is already named {name:?}")));
        } else {
            specs.push(spec(server, t, own, name));
        }
    }
    (specs, skipped)
}

/// What the card shows of an MCP tool, under `mcp` in the entry's `parameters`: the server,
/// the tool's own name and title, and the server's hints that are set.
fn spec(server: &McpServerConfig, t: &Value, own: &str, name: String) -> ToolSpec {
    let annotations = t.get("annotations");
    let hint = |k: &str| annotations.and_then(|a| a.get(k)).and_then(Value::as_bool);
    let title = text(t, "title").or_else(|| annotations.and_then(|a| text(a, "title")));
    let mut shown = Map::new();
    shown.insert("server".into(), server.name.as_str().into());
    shown.insert("tool".into(), own.into());
    if let Some(title) = title {
        shown.insert("title".into(), title.into());
    }
    for k in HINTS {
        if let Some(b) = hint(k) {
            shown.insert(k.into(), b.into());
        }
    }
    let mut spec = ToolSpec::new(name);
    spec.description = text(t, "description").map(str::to_owned);
    spec.label = title.map(str::to_owned);
    spec.schema = t["inputSchema"].clone();
    let mut mcp = Map::new();
    mcp.insert("mcp".into(), Value::Object(shown));
    spec.shown = Value::Object(mcp);
    let trusted = server.trust_read_only_hint && hint("readOnlyHint") == Some(true);
    spec.require_approval = (!trusted).then_some(true);
    spec.approval_timeout = server.approval_timeout;
    spec
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn server(trust: bool, tools: Option<Vec<String>>) -> McpServerConfig {
        McpServerConfig {
            name: "files".into(),
            url: "http://127.0.0.1:1/mcp".into(),
            headers: Vec::new(),
            trust_read_only_hint: trust,
            tools,
            approval_timeout: Some(60_000),
        }
    }

    fn page() -> Value {
        json!({ "tools": [
            { "name": "read", "inputSchema": { "type": "object" },
              "annotations": { "title": "Read a file", "readOnlyHint": true } },
            { "name": "delete", "title": "Delete", "inputSchema": { "type": "object" },
              "annotations": { "destructiveHint": true, "openWorldHint": false } },
            { "name": "bad_schema", "inputSchema": { "type": "string" } },
            { "name": 7 },
        ], "nextCursor": "c2" })
    }

    fn listed(v: &Value) -> (Vec<Value>, Vec<Skipped>) {
        let (all, next) = parse_tools_page(v);
        assert_eq!(next.as_deref(), Some("c2"));
        let (ok, bad): (Vec<_>, Vec<_>) = all.into_iter().partition(Result::is_ok);
        let ok = ok.into_iter().map(Result::unwrap).collect();
        (ok, bad.into_iter().map(Result::unwrap_err).collect())
    }

    #[test]
    fn every_tool_asks_and_a_trusted_read_only_hint_runs() {
        let (tools, malformed) = listed(&page());
        assert_eq!(malformed.len(), 1);
        let (specs, skipped) = select(&server(false, None), &tools, &[]);
        let names: Vec<_> = specs.iter().map(|s| s.name.as_str()).collect();
        assert_eq!(names, ["files__read", "files__delete"]);
        assert!(specs.iter().all(|s| s.require_approval == Some(true)));
        assert!(specs.iter().all(|s| s.approval_timeout == Some(60_000)));
        assert_eq!(skipped[0].tool, "bad_schema");
        let (specs, _) = select(&server(true, None), &tools, &[]);
        assert_eq!(specs[0].require_approval, None);
        assert_eq!(specs[1].require_approval, Some(true));
    }

    #[test]
    fn hints_are_shown_under_mcp() {
        let (tools, _) = listed(&page());
        let (specs, _) = select(&server(false, None), &tools, &[]);
        assert_eq!(specs[0].label.as_deref(), Some("Read a file"));
        assert_eq!(
            specs[1].shown,
            json!({ "mcp": { "server": "files", "tool": "delete", "title": "Delete",
                "destructiveHint": true, "openWorldHint": false } })
        );
    }

    #[test]
    fn allow_list_and_collisions() {
        let (tools, _) = listed(&page());
        let only = server(false, Some(vec!["delete".into()]));
        let (specs, skipped) = select(&only, &tools, &["files__delete"]);
        assert!(specs.is_empty());
        assert_eq!(skipped.len(), 1);
        assert!(skipped[0].reason.contains("already named"), "{skipped:?}");
        let twice = [tools[0].clone(), tools[0].clone()];
        let (specs, skipped) = select(&server(false, None), &twice, &[]);
        assert_eq!((specs.len(), skipped.len()), (1, 1));
    }

    #[test]
    fn only_the_keys_read_are_kept() {
        let page = json!({ "tools": [{ "name": "x", "inputSchema": { "type": "object" },
            "outputSchema": { "type": "object" }, "icons": [], "_meta": {} }] });
        let (tools, next) = parse_tools_page(&page);
        assert_eq!(next, None);
        assert_eq!(
            tools[0].as_ref().unwrap(),
            &json!({ "name": "x", "inputSchema": { "type": "object" } })
        );
    }
}
