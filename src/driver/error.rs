//! The one error type of the driver, with the stable codes of docs/design.md, "Errors". `js::error`
//! turns it into a JS `Error` in exactly one place.

use crate::engine::EngineError;
use crate::providers::ProviderError;
use crate::store::StoreError;
use std::fmt;

/// What a call on an agent failed with. Its stable code is [`AgentError::code`], derived from
/// the variant here and nowhere else; code that decides by kind matches the variants.
#[derive(Debug, Clone)]
#[non_exhaustive]
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
    /// A model that runs in the page could not get or open its file (docs/design.md, "A model
    /// in the page"); the message says which file and why.
    ModelFile(ModelFileError, String),
    /// A remembered grant refused (docs/design.md, "Remembered grants").
    Grant(GrantError, String),
}

/// Why a remembered grant was refused, each with its own stable code.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum GrantError {
    /// Malformed, or for a tool that cannot be approved.
    Invalid,
    /// A revoke of a grant not in force.
    Unknown,
    /// Over the store's cap.
    TooMany,
    /// The store handler refused to start a call whose grant was revoked meanwhile:
    /// `retry()` asks a human for it.
    Revoked,
}

impl GrantError {
    const ALL: [GrantError; 4] = [
        GrantError::Invalid,
        GrantError::Unknown,
        GrantError::TooMany,
        GrantError::Revoked,
    ];

    pub fn code(self) -> &'static str {
        match self {
            GrantError::Invalid => "invalid_grant",
            GrantError::Unknown => "unknown_grant",
            GrantError::TooMany => "too_many_grants",
            GrantError::Revoked => "grant_revoked",
        }
    }
}

/// Why a model file failed, each with its own stable code. A custom model (the `local`
/// provider is one) reports one by throwing an error whose `code` is that code.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ModelFileError {
    /// The file does not start with the GGUF magic bytes.
    NotGguf,
    /// Its SHA-256 is not the one the options name.
    Checksum,
    /// The download failed (HTTP status, offline before the file was cached).
    Download,
    /// The storage quota refused the file.
    Quota,
    /// The file did not fit in memory.
    Memory,
    /// `device: "webgpu"` was asked for and the browser gives no WebGPU adapter.
    NoWebGpu,
}

impl ModelFileError {
    pub const ALL: [ModelFileError; 6] = [
        ModelFileError::NotGguf,
        ModelFileError::Checksum,
        ModelFileError::Download,
        ModelFileError::Quota,
        ModelFileError::Memory,
        ModelFileError::NoWebGpu,
    ];

    pub fn code(self) -> &'static str {
        match self {
            ModelFileError::NotGguf => "model_not_gguf",
            ModelFileError::Checksum => "model_checksum",
            ModelFileError::Download => "model_download",
            ModelFileError::Quota => "quota_exceeded",
            ModelFileError::Memory => "out_of_memory",
            ModelFileError::NoWebGpu => "webgpu_unavailable",
        }
    }

    pub fn from_code(code: &str) -> Option<Self> {
        Self::ALL.into_iter().find(|e| e.code() == code)
    }
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
            AgentError::ModelFile(e, _) => e.code(),
            AgentError::Grant(e, _) => e.code(),
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
            AgentError::ModelFile(e, _) => *e == ModelFileError::Download,
            AgentError::Grant(e, _) => *e == GrantError::Revoked,
        }
    }

    /// A stale write or a new message while calls wait (`conflict`): read the thread again.
    pub fn is_conflict(&self) -> bool {
        matches!(
            self,
            AgentError::Store(StoreError::Conflict { .. })
                | AgentError::Engine(EngineError::Conflict(_))
        )
    }

    /// Another run holds the thread (`busy`).
    pub fn is_busy(&self) -> bool {
        matches!(
            self,
            AgentError::Store(StoreError::Owned { .. }) | AgentError::Engine(EngineError::Busy(_))
        )
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

/// An event's account of the error (`retry`, `model_call_ended`): its code, its message, and a
/// provider's HTTP status.
impl From<&AgentError> for crate::event::EventError {
    fn from(e: &AgentError) -> Self {
        crate::event::EventError {
            code: e.code().into(),
            message: e.to_string(),
            status: match e {
                AgentError::Provider(ProviderError::Http { status, .. }) => Some(*status),
                _ => None,
            },
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
            AgentError::ModelFile(_, m) | AgentError::Grant(_, m) => f.write_str(m),
        }
    }
}

impl std::error::Error for AgentError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            AgentError::Engine(e) => Some(e),
            AgentError::Store(e) => Some(e),
            AgentError::Provider(e) => Some(e),
            _ => None,
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
        // The store handler's grant refusals keep their codes (`WireError::into_store_error`
        // passes them on as `code: message`).
        if let StoreError::Other(m) = &e {
            for kind in GrantError::ALL {
                let code = kind.code();
                if let Some(rest) = m.strip_prefix(code).and_then(|r| r.strip_prefix(": ")) {
                    return AgentError::Grant(kind, rest.to_owned());
                }
            }
        }
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
