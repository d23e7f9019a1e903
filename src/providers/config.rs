//! The model config as the app writes it in `Agent.open({ model: {...} })`:
//! `{ provider, baseUrl, apiKey, model, maxTokens, temperature, stream, headers }`.
//!
//! The API key lives only in memory and in request headers: `Serialize` leaves it out (and
//! any extra header that looks like a credential), and `Debug` redacts it.

use super::error::ProviderError;
use crate::thread::context::{DEFAULT_CONTEXT_WINDOW, known_context_window};
use serde::ser::{SerializeMap, Serializer};
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};
use std::fmt;

pub const OPENAI_DEFAULT_BASE: &str = "https://api.openai.com/v1";
pub const ANTHROPIC_DEFAULT_BASE: &str = "https://api.anthropic.com";
pub const ANTHROPIC_DEFAULT_MAX_TOKENS: u32 = 4096;

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum ProviderKind {
    /// OpenAI Chat Completions and compatible servers (Ollama, vLLM, LM Studio).
    OpenAi,
    Anthropic,
    /// The offline deterministic model in [`super::demo`].
    Demo,
    /// A JS function supplied by the app; no HTTP request is built for it.
    Custom,
}

#[derive(Clone, PartialEq, Deserialize)]
#[serde(try_from = "RawModelConfig")]
pub struct ModelConfig {
    pub provider: ProviderKind,
    /// As given; [`ModelConfig::endpoint`] appends the API path (and copes with trailing
    /// slashes). `None`: the provider's public API.
    pub base_url: Option<String>,
    pub api_key: Option<String>,
    /// Required for `openai` and `anthropic`; may be empty for `demo` and `custom`.
    pub model: String,
    pub max_tokens: Option<u32>,
    pub temperature: Option<f64>,
    /// Stream with SSE (the default) or ask for one JSON body.
    pub stream: bool,
    /// Extra request headers, in the order given; they replace default headers of the same name.
    pub headers: Vec<(String, String)>,
    /// The model's context window in tokens (`contextWindow`); `None`: the model name's known
    /// window, else [`DEFAULT_CONTEXT_WINDOW`].
    pub context_window: Option<u64>,
}

/// The JS-facing shape without `headers`, before the checks. Unknown keys are ignored. The
/// JS glue reads `headers` apart, as JSON (like every free-form record of the options), and
/// joins them with [`ModelConfig::checked`].
#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ModelParams {
    provider: ProviderKind,
    base_url: Option<String>,
    api_key: Option<String>,
    model: Option<String>,
    max_tokens: Option<u32>,
    temperature: Option<f64>,
    stream: Option<bool>,
    context_window: Option<u64>,
}

/// The whole JS-facing shape, as JSON text writes it ([`ModelConfig::from_json`]).
#[derive(Deserialize)]
struct RawModelConfig {
    #[serde(flatten)]
    params: ModelParams,
    headers: Option<Map<String, Value>>,
}

impl TryFrom<RawModelConfig> for ModelConfig {
    type Error = String;

    fn try_from(raw: RawModelConfig) -> Result<Self, String> {
        ModelConfig::checked(raw.params, raw.headers)
    }
}

impl ModelConfig {
    /// The config of `raw` and its extra `headers` (string, number or boolean values), checked.
    pub fn checked(raw: ModelParams, headers: Option<Map<String, Value>>) -> Result<Self, String> {
        let mut extra = Vec::new();
        for (name, value) in headers.unwrap_or_default() {
            let value = match value {
                Value::String(s) => s,
                Value::Number(n) => n.to_string(),
                Value::Bool(b) => b.to_string(),
                _ => return Err(format!("model.headers.{name} must be a string")),
            };
            extra.push((name, value));
        }
        let model = raw.model.map(|m| m.trim().to_owned()).unwrap_or_default();
        let cfg = ModelConfig {
            provider: raw.provider,
            base_url: raw.base_url.filter(|b| !b.trim().is_empty()),
            api_key: raw.api_key.filter(|k| !k.is_empty()),
            model,
            max_tokens: raw.max_tokens,
            temperature: raw.temperature,
            stream: raw.stream.unwrap_or(true),
            headers: extra,
            context_window: raw.context_window,
        };
        cfg.validate().map_err(|e| match e {
            ProviderError::InvalidConfig { message } => message,
            other => other.to_string(),
        })?;
        Ok(cfg)
    }

    /// A config with the defaults: streaming on, no base URL, key or extra headers.
    pub fn new(provider: ProviderKind, model: impl Into<String>) -> Self {
        ModelConfig {
            provider,
            base_url: None,
            api_key: None,
            model: model.into(),
            max_tokens: None,
            temperature: None,
            stream: true,
            headers: Vec::new(),
            context_window: None,
        }
    }

    /// The context window in tokens: `contextWindow`, else the model's known one, else
    /// [`DEFAULT_CONTEXT_WINDOW`].
    pub fn context_window(&self) -> u64 {
        self.context_window
            .or_else(|| known_context_window(&self.model))
            .unwrap_or(DEFAULT_CONTEXT_WINDOW)
    }

    /// The tokens a request's input may use: the window less the room kept for the answer
    /// (`maxTokens`, or Anthropic's default when it is not set).
    pub fn input_budget(&self) -> u64 {
        let reserve = match self.max_tokens {
            Some(n) => u64::from(n),
            None => self.provider.default_answer_reserve(),
        };
        self.context_window().saturating_sub(reserve)
    }

    /// Parses the JS-facing JSON shape.
    pub fn from_json(json: &str) -> Result<Self, ProviderError> {
        serde_json::from_str(json).map_err(|e| ProviderError::invalid_config(e.to_string()))
    }

    /// The checks a request needs; deserialization runs them too.
    pub fn validate(&self) -> Result<(), ProviderError> {
        // The providers that need a model name, with an example of one.
        let example_model = match self.provider {
            ProviderKind::OpenAi => Some("gpt-4o-mini"),
            ProviderKind::Anthropic => Some("claude-sonnet-4-5"),
            ProviderKind::Demo | ProviderKind::Custom => None,
        };
        if let Some(example) = example_model.filter(|_| self.model.trim().is_empty()) {
            return Err(ProviderError::invalid_config(format!(
                "`model` is required for provider \"{}\" (for example \"{example}\")",
                self.provider.as_str(),
            )));
        }
        if self.max_tokens == Some(0) {
            return Err(ProviderError::invalid_config(
                "`maxTokens` must be at least 1",
            ));
        }
        if self.context_window == Some(0) || self.input_budget() == 0 {
            return Err(ProviderError::invalid_config(format!(
                "`contextWindow` ({} tokens) must leave room for the input after `maxTokens`",
                self.context_window()
            )));
        }
        if let Some(t) = self.temperature {
            if !t.is_finite() || t < 0.0 {
                return Err(ProviderError::invalid_config(
                    "`temperature` must be a non-negative number",
                ));
            }
        }
        Ok(())
    }

    /// The full URL requests go to: `baseUrl` (or the provider's default) plus the API path.
    /// Trailing slashes are ignored, and a base that already ends with the path (or, for
    /// Anthropic, with `/v1`) is not extended twice.
    pub fn endpoint(&self) -> String {
        let (default_base, path) = match self.provider {
            ProviderKind::Anthropic => (ANTHROPIC_DEFAULT_BASE, "/v1/messages"),
            // `demo` and `custom` send no request; their URL is never used.
            ProviderKind::OpenAi | ProviderKind::Demo | ProviderKind::Custom => {
                (OPENAI_DEFAULT_BASE, "/chat/completions")
            }
        };
        let base = self
            .base_url
            .as_deref()
            .map(str::trim)
            .unwrap_or(default_base);
        let base = base.trim_end_matches('/');
        if base.ends_with(path) {
            return base.to_owned();
        }
        if self.provider == ProviderKind::Anthropic && base.ends_with("/v1") {
            return format!("{base}/messages");
        }
        format!("{base}{path}")
    }
}

/// The HTTP wire format a provider speaks.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum WireFormat {
    /// Chat Completions (`providers::openai`).
    OpenAi,
    /// Messages (`providers::anthropic`).
    Anthropic,
}

impl ProviderKind {
    /// The tokens kept for the answer when `maxTokens` is not set: what the provider's request
    /// sends as its own default (Anthropic requires one), else nothing.
    pub fn default_answer_reserve(self) -> u64 {
        match self {
            ProviderKind::Anthropic => u64::from(ANTHROPIC_DEFAULT_MAX_TOKENS),
            ProviderKind::OpenAi | ProviderKind::Demo | ProviderKind::Custom => 0,
        }
    }

    pub fn as_str(self) -> &'static str {
        match self {
            ProviderKind::OpenAi => "openai",
            ProviderKind::Anthropic => "anthropic",
            ProviderKind::Demo => "demo",
            ProviderKind::Custom => "custom",
        }
    }

    /// The wire format its requests and answers use; `demo` and `custom` build no request.
    pub fn wire_format(self) -> Result<WireFormat, ProviderError> {
        let why = match self {
            ProviderKind::OpenAi => return Ok(WireFormat::OpenAi),
            ProviderKind::Anthropic => return Ok(WireFormat::Anthropic),
            ProviderKind::Demo => "the demo model runs in-process (providers::demo::respond)",
            ProviderKind::Custom => "the custom provider calls the app's JS function",
        };
        Err(ProviderError::invalid_config(format!(
            "provider \"{}\" has no HTTP wire format: {why}",
            self.as_str()
        )))
    }
}

/// Extra header names that carry credentials: never serialized.
fn is_secret_header(name: &str) -> bool {
    let n = name.to_ascii_lowercase();
    matches!(
        n.as_str(),
        "authorization" | "proxy-authorization" | "cookie" | "x-api-key" | "api-key"
    ) || n.contains("token")
        || n.contains("secret")
        || n.contains("key")
}

impl Serialize for ModelConfig {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let mut m = s.serialize_map(None)?;
        m.serialize_entry("provider", &self.provider)?;
        if let Some(b) = &self.base_url {
            m.serialize_entry("baseUrl", b)?;
        }
        // `apiKey` is never written: keys must not reach storage.
        m.serialize_entry("model", &self.model)?;
        if let Some(n) = self.max_tokens {
            m.serialize_entry("maxTokens", &n)?;
        }
        if let Some(t) = self.temperature {
            m.serialize_entry("temperature", &t)?;
        }
        m.serialize_entry("stream", &self.stream)?;
        if let Some(n) = self.context_window {
            m.serialize_entry("contextWindow", &n)?;
        }
        let headers: Map<String, Value> = self
            .headers
            .iter()
            .filter(|(n, _)| !is_secret_header(n))
            .map(|(n, v)| (n.clone(), Value::String(v.clone())))
            .collect();
        if !headers.is_empty() {
            m.serialize_entry("headers", &headers)?;
        }
        m.end()
    }
}

impl fmt::Debug for ModelConfig {
    fn fmt(&self, f: &mut fmt::Formatter) -> fmt::Result {
        let header_names: Vec<&str> = self.headers.iter().map(|(n, _)| n.as_str()).collect();
        f.debug_struct("ModelConfig")
            .field("provider", &self.provider)
            .field("base_url", &self.base_url)
            .field("api_key", &self.api_key.as_ref().map(|_| "<redacted>"))
            .field("model", &self.model)
            .field("max_tokens", &self.max_tokens)
            .field("temperature", &self.temperature)
            .field("stream", &self.stream)
            .field("headers", &header_names)
            .finish()
    }
}
