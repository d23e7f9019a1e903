//! A server's `tools/list` as the agent's tools: which are kept (the allow-list, valid names
//! and schemas, no collisions), how they are named, gated and shown.

use super::{McpServerConfig, namespaced};
use crate::engine::{ToolSpec, check_tool_name};
use serde::{Deserialize, Serialize};
use serde_json::{Value, json};

/// A tool as the server lists it (the fields this client reads, in MCP's own names). Stored
/// with the thread (`StoredTools`), so a thread reopened offline keeps its MCP tools.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ListedTool {
    pub name: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub title: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
    #[serde(default)]
    pub input_schema: Value,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub annotations: Option<Annotations>,
}

/// The server's annotations: hints from a server the app may not control.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Annotations {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub title: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub read_only_hint: Option<bool>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub destructive_hint: Option<bool>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub idempotent_hint: Option<bool>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub open_world_hint: Option<bool>,
}

/// One server's tool list as stored in the thread record (`mcpTools`: docs/design.md, "MCP
/// tools"), so a thread reopened offline keeps its MCP tools and their cards.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ServerTools {
    pub server: String,
    pub tools: Vec<ListedTool>,
}

/// What the approval card shows of an MCP tool, under `mcp` in the entry's `parameters`:
/// the server, the tool's own name and title, and the server's hints (absent when unset).
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct McpHints<'a> {
    pub server: &'a str,
    pub tool: &'a str,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub title: Option<&'a str>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub read_only_hint: Option<bool>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub destructive_hint: Option<bool>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub open_world_hint: Option<bool>,
}

/// A listed tool left out, and why (a `warning` event).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Skipped {
    pub tool: String,
    pub reason: String,
}

/// One page of a `tools/list` result: its tools (an entry that is not a tool object is
/// skipped) and the cursor of the next page.
pub fn parse_tools_page(result: &Value) -> (Vec<Result<ListedTool, Skipped>>, Option<String>) {
    let tools = result.get("tools").and_then(Value::as_array);
    let listed = tools
        .into_iter()
        .flatten()
        .map(|t| {
            ListedTool::deserialize(t).map_err(|e| Skipped {
                tool: t.get("name").and_then(Value::as_str).unwrap_or("?").into(),
                reason: format!("its listing is malformed ({e})"),
            })
        })
        .collect();
    let next = result.get("nextCursor").and_then(Value::as_str);
    (listed, next.map(str::to_owned))
}

/// The tools of `server` the agent offers, as tool definitions, and those skipped: not in
/// its allow-list (silently), an invalid input schema or name, or a name `taken` already.
/// Every kept tool asks a human, except a `readOnlyHint` one when the app trusts the hint.
pub fn select(
    server: &McpServerConfig,
    listed: &[ListedTool],
    taken: &[&str],
) -> (Vec<ToolSpec>, Vec<Skipped>) {
    let mut specs: Vec<ToolSpec> = Vec::new();
    let mut skipped = Vec::new();
    for t in listed {
        if server.tools.as_ref().is_some_and(|a| !a.contains(&t.name)) {
            continue;
        }
        let name = namespaced(&server.name, &t.name);
        let skip = |reason: String| Skipped {
            tool: t.name.clone(),
            reason,
        };
        if t.input_schema.get("type").and_then(Value::as_str) != Some("object") {
            skipped.push(skip("its inputSchema is not an object schema".into()));
        } else if let Err(e) = check_tool_name(&name) {
            skipped.push(skip(e));
        } else if taken.contains(&name.as_str()) || specs.iter().any(|s| s.name == name) {
            skipped.push(skip(format!("another tool is already named {name:?}")));
        } else {
            specs.push(spec(server, t, name));
        }
    }
    (specs, skipped)
}

fn spec(server: &McpServerConfig, t: &ListedTool, name: String) -> ToolSpec {
    let a = t.annotations.clone().unwrap_or_default();
    let title = t.title.as_deref().or(a.title.as_deref());
    let hints = McpHints {
        server: &server.name,
        tool: &t.name,
        title,
        read_only_hint: a.read_only_hint,
        destructive_hint: a.destructive_hint,
        open_world_hint: a.open_world_hint,
    };
    let mut spec = ToolSpec::new(name);
    spec.description = t.description.clone();
    spec.label = title.map(str::to_owned);
    spec.schema = t.input_schema.clone();
    spec.shown = json!({ "mcp": hints });
    let trusted = server.trust_read_only_hint && a.read_only_hint == Some(true);
    spec.require_approval = (!trusted).then_some(true);
    spec
}

#[cfg(test)]
mod tests {
    use super::*;

    fn server(trust: bool, tools: Option<Vec<String>>) -> McpServerConfig {
        McpServerConfig {
            name: "files".into(),
            url: "http://127.0.0.1:1/mcp".into(),
            headers: Vec::new(),
            trust_read_only_hint: trust,
            tools,
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

    fn listed(v: &Value) -> (Vec<ListedTool>, Vec<Skipped>) {
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
    fn a_listing_round_trips_as_stored() {
        let (tools, _) = listed(&page());
        let text = serde_json::to_string(&tools).unwrap();
        let back: Vec<ListedTool> = serde_json::from_str(&text).unwrap();
        assert_eq!(back, tools);
    }
}
