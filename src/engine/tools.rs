//! Tool definitions as the engine sees them, per-thread policies, and the gating precedence
//! (docs/design.md, "Approval semantics").

use super::decisions::AllowedDecisions;
use serde::{Deserialize, Serialize};
use serde_json::Value;

/// A tool as configured on the agent. The JS `execute` and `approvalPolicy` functions stay in
/// the driver; the engine only knows whether they exist.
#[derive(Debug, Clone, PartialEq)]
pub struct ToolSpec {
    pub name: String,
    pub description: Option<String>,
    pub label: Option<String>,
    /// The JSON Schema of the inputs.
    pub schema: Value,
    /// Provider-specific extra keys of the definition, shown as the entry's `parameters`.
    pub extra: Value,
    /// The flat override: `Some(true)` always gates, `Some(false)` never does.
    pub require_approval: Option<bool>,
    /// Whether an `approvalPolicy` function exists (evaluated by the driver).
    pub has_policy: bool,
    pub enabled: bool,
    pub auto_approve: bool,
    /// Safe to run again after a crash cut off an earlier attempt (docs/design.md, "Run
    /// ownership").
    pub idempotent: bool,
    /// No `execute`: the app supplies the result with `submitToolResults` (docs/design.md,
    /// "Approval semantics").
    pub external: bool,
    /// The decisions a human may give its gated calls (`allowedDecisions`).
    pub allowed_decisions: AllowedDecisions,
    /// How long (ms) a gated call may wait for a decision before it expires (the tool's
    /// `approvalTimeout`, else the `Agent.open` default); `None`: it waits forever.
    pub approval_timeout: Option<u64>,
    /// Why its calls ask a human, shown as the entry's `approvalReason` when neither a policy
    /// string nor a re-gate gives one (the tool's `approvalReason`).
    pub approval_reason: Option<String>,
    /// What the entry's `parameters` shows instead of `extra` when not `Null`: an MCP tool's
    /// server and hints (docs/design.md, "MCP tools"); never sent to the model.
    pub shown: Value,
}

impl ToolSpec {
    pub fn new(name: impl Into<String>) -> Self {
        ToolSpec {
            name: name.into(),
            description: None,
            label: None,
            schema: Value::Object(Default::default()),
            extra: Value::Array(Vec::new()),
            require_approval: None,
            has_policy: false,
            enabled: true,
            auto_approve: false,
            idempotent: false,
            external: false,
            allowed_decisions: AllowedDecisions::default(),
            approval_timeout: None,
            approval_reason: None,
            shown: Value::Null,
        }
    }
}

/// The tool names every provider accepts (OpenAI's rule, the strictest): 1 to 64 ASCII
/// letters, digits, `_` or `-`. Checked when the agent is opened, so a name the provider would
/// refuse (or one with a NUL, or a megabyte long) fails at once with `invalid_config`.
pub fn check_tool_name(name: &str) -> Result<(), String> {
    let valid = (1..=64).contains(&name.len())
        && name
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b == b'_' || b == b'-');
    if valid {
        return Ok(());
    }
    let shown: String = name.chars().take(40).collect();
    Err(format!(
        "tool name {shown:?}{} must be 1 to 64 characters of a-z, A-Z, 0-9, _ or -",
        if shown.len() < name.len() { "…" } else { "" }
    ))
}

/// Per-thread overrides of a tool's defaults. `None` means "use the tool's own value".
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ToolPolicy {
    #[serde(skip_serializing_if = "Option::is_none")]
    pub enabled: Option<bool>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub auto_approve: Option<bool>,
}

impl ToolPolicy {
    pub fn is_empty(&self) -> bool {
        self.enabled.is_none() && self.auto_approve.is_none()
    }
}

pub use super::policies::ToolPolicies;

/// The tools of an agent, in the order they were given.
#[derive(Debug, Clone, Default)]
pub struct ToolSet {
    tools: Vec<ToolSpec>,
}

impl ToolSet {
    pub fn new(tools: Vec<ToolSpec>) -> Self {
        ToolSet { tools }
    }

    pub fn get(&self, name: &str) -> Option<&ToolSpec> {
        self.tools.iter().find(|t| t.name == name)
    }

    pub fn iter(&self) -> impl Iterator<Item = &ToolSpec> {
        self.tools.iter()
    }

    pub fn names(&self) -> Vec<&str> {
        self.tools.iter().map(|t| t.name.as_str()).collect()
    }

    pub fn is_enabled(&self, tool: &ToolSpec, policies: &ToolPolicies) -> bool {
        policies
            .get(&tool.name)
            .and_then(|p| p.enabled)
            .unwrap_or(tool.enabled)
    }

    pub fn is_auto_approved(&self, tool: &ToolSpec, policies: &ToolPolicies) -> bool {
        policies
            .get(&tool.name)
            .and_then(|p| p.auto_approve)
            .unwrap_or(tool.auto_approve)
    }

    /// The tools offered to the model in a thread: the enabled ones.
    pub fn offered<'a>(&'a self, policies: &'a ToolPolicies) -> impl Iterator<Item = &'a ToolSpec> {
        self.tools
            .iter()
            .filter(move |t| self.is_enabled(t, policies))
    }
}

/// What the gate decided for one call, before any policy function ran.
#[derive(Debug, Clone, PartialEq)]
pub enum Gate {
    /// Not executed; this result string goes to the model (unknown tool, disabled, bad input).
    Refuse(String),
    /// Runs without asking.
    Run,
    /// Waits for a human; the reason is shown on the card.
    Approval(Option<String>),
    /// The tool's `approvalPolicy(inputs)` decides.
    AskPolicy,
}

/// What an `approvalPolicy` function answered.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum PolicyVerdict {
    /// `false`: not gated.
    Allow,
    /// `true` (no reason) or a string (the reason).
    Require(Option<String>),
    /// The policy threw or returned something else; the call is gated (fail closed).
    Failed(String),
}

impl PolicyVerdict {
    pub fn into_gate(self) -> Gate {
        match self {
            PolicyVerdict::Allow => Gate::Run,
            PolicyVerdict::Require(reason) => Gate::Approval(reason),
            PolicyVerdict::Failed(why) => Gate::Approval(Some(format!(
                "The approval policy of this tool failed ({why}), so a human must decide."
            ))),
        }
    }
}
