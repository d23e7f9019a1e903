//! Errors of the engine, each with a stable string code. The engine only reports errors the
//! caller is to blame for; model, tool and network failures are data (results, outcomes).

use std::fmt;

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum EngineError {
    /// A new message while tool calls wait for a decision or a result; nothing was stored.
    Conflict(String),
    /// Decisions or tool results when nothing waits at all.
    NotSuspended(String),
    /// A decision payload that is not a non-empty map of the three documented forms.
    InvalidDecision {
        call_id: Option<String>,
        message: String,
    },
    /// A tool-results payload that is not a non-empty map keyed by call id.
    InvalidToolResults(String),
    /// A call id that is not among the calls waiting.
    UnknownCallId { call_id: String, message: String },
    /// A decision for a call whose approval deadline has passed (docs/design.md, "Approval
    /// expiry"); nothing of the payload was staged.
    Expired { call_id: String, message: String },
    /// `retry` when there is no unanswered turn or interrupted run.
    NothingToRetry,
    /// A tool policy for a tool the agent does not have.
    UnknownTool(String),
    /// A second call while a run is in progress.
    Busy(String),
    /// An input arrived that the engine was not waiting for: a bug in the driver.
    Internal(String),
}

impl EngineError {
    /// The refusal of a decision for `call_id` after its approval deadline.
    pub fn expired(call_id: &str) -> EngineError {
        EngineError::Expired {
            call_id: call_id.to_owned(),
            message: format!(
                "the approval request for \"{call_id}\" expired before this decision arrived; \
                 nothing was staged"
            ),
        }
    }

    pub fn code(&self) -> &'static str {
        match self {
            EngineError::Conflict(_) => "conflict",
            EngineError::NotSuspended(_) => "not_suspended",
            EngineError::InvalidDecision { .. } => "invalid_decision",
            EngineError::InvalidToolResults(_) => "invalid_tool_results",
            EngineError::UnknownCallId { .. } => "unknown_call_id",
            EngineError::Expired { .. } => "expired",
            EngineError::NothingToRetry => "nothing_to_retry",
            EngineError::UnknownTool(_) => "unknown_tool",
            EngineError::Busy(_) => "busy",
            EngineError::Internal(_) => "internal",
        }
    }

    /// The caller can do the same thing again later and expect it to work.
    pub fn retryable(&self) -> bool {
        matches!(self, EngineError::Busy(_))
    }
}

impl fmt::Display for EngineError {
    fn fmt(&self, f: &mut fmt::Formatter) -> fmt::Result {
        match self {
            EngineError::Conflict(m)
            | EngineError::NotSuspended(m)
            | EngineError::InvalidToolResults(m)
            | EngineError::Busy(m)
            | EngineError::Internal(m) => f.write_str(m),
            EngineError::InvalidDecision { message, .. } => f.write_str(message),
            EngineError::UnknownCallId { message, .. } | EngineError::Expired { message, .. } => {
                f.write_str(message)
            }
            EngineError::NothingToRetry => {
                f.write_str("there is no unanswered turn or interrupted run to retry")
            }
            EngineError::UnknownTool(name) => write!(f, "this agent has no tool named \"{name}\""),
        }
    }
}

impl std::error::Error for EngineError {}
