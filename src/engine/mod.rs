//! The sans-IO agent state machine: gating, suspension, decisions, tool runs, and what must be
//! written when (see [`Engine`] for the drain rule).

mod audit;
mod decisions;
mod error;
mod grants;
mod inputs;
mod machine;
mod model;
mod policies;
mod policy_change;
pub mod results;
mod state;
mod tools;

pub use audit::{AuditDecision, AuditOutcome, AuditRecord, OpenAudit};
pub use decisions::{AllowedDecisions, Decision, DecisionKind};
pub use error::EngineError;
pub use grants::{
    Grant, GrantBook, GrantRequest, GrantScope, Grants, NoGrants, in_force, in_force_json,
    make_json,
};
pub use inputs::{Decisions, ToolResults};
pub use machine::{Engine, EngineConfig, Outcome, PolicyQuery, Step, ToolInvocation};
pub use model::{ModelOutput, ModelToolCall};
pub use policy_change::{PolicyChange, Setting};
pub use state::{CallDeadline, CallResult, Commit, RunJournal, ThreadState, ThreadStatus};
pub use tools::{
    Gate, PolicyVerdict, ToolPolicies, ToolPolicy, ToolSet, ToolSpec, check_tool_name,
};
