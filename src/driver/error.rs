//! The one error type of the driver, with the stable codes of docs/design.md, "Errors". `js::error`
//! turns it into a JS `Error` in exactly one place.

use crate::engine::EngineError;
use crate::providers::ProviderError;
use crate::store::StoreError;
use std::fmt;

#[derive(Debug, Clone)]
pub enum AgentError {
    Engine(EngineError),
    Store(StoreError),
    Provider(ProviderError),
    /// fetch failed before an answer (offline, DNS, CORS, connection reset).
    Network(String),
    /// The caller's AbortSignal fired.
    Aborted,
    InvalidConfig(String),
    /// The latest turn does not fit the model's context window (docs/design.md, "The context
    /// window"): nothing was sent.
    ContextOverflow(String),
}

impl AgentError {
    pub fn code(&self) -> &'static str {
        match self {
            AgentError::Engine(e) => e.code(),
            AgentError::Store(e) => e.code(),
            AgentError::Provider(e) => e.code(),
            AgentError::Network(_) => "network",
            AgentError::Aborted => "aborted",
            AgentError::InvalidConfig(_) => "invalid_config",
            AgentError::ContextOverflow(_) => "context_overflow",
        }
    }

    pub fn retryable(&self) -> bool {
        match self {
            AgentError::Engine(e) => e.retryable(),
            AgentError::Store(e) => e.retryable(),
            AgentError::Provider(e) => e.retryable(),
            AgentError::Network(_) => true,
            AgentError::Aborted => true,
            AgentError::InvalidConfig(_) | AgentError::ContextOverflow(_) => false,
        }
    }

    /// A stale write or a new message while calls wait (`conflict`): read the thread again.
    pub fn is_conflict(&self) -> bool {
        self.code() == "conflict"
    }

    /// Another run holds the thread (`busy`).
    pub fn is_busy(&self) -> bool {
        self.code() == "busy"
    }

    pub fn call_id(&self) -> Option<&str> {
        match self {
            AgentError::Engine(
                EngineError::UnknownCallId { call_id, .. } | EngineError::Expired { call_id, .. },
            ) => Some(call_id),
            AgentError::Engine(EngineError::InvalidDecision { call_id, .. }) => call_id.as_deref(),
            _ => None,
        }
    }
}

impl fmt::Display for AgentError {
    fn fmt(&self, f: &mut fmt::Formatter) -> fmt::Result {
        match self {
            AgentError::Engine(e) => e.fmt(f),
            AgentError::Store(e) => e.fmt(f),
            AgentError::Provider(e) => e.fmt(f),
            AgentError::Network(m) => write!(f, "network error: {m}"),
            AgentError::Aborted => f.write_str("the operation was aborted"),
            AgentError::InvalidConfig(m) => write!(f, "invalid configuration: {m}"),
            AgentError::ContextOverflow(m) => write!(f, "context window exceeded: {m}"),
        }
    }
}

impl From<EngineError> for AgentError {
    fn from(e: EngineError) -> Self {
        AgentError::Engine(e)
    }
}

impl From<StoreError> for AgentError {
    fn from(e: StoreError) -> Self {
        AgentError::Store(e)
    }
}

impl From<ProviderError> for AgentError {
    fn from(e: ProviderError) -> Self {
        match e {
            ProviderError::InvalidConfig { message } => AgentError::InvalidConfig(message),
            other => AgentError::Provider(other),
        }
    }
}
