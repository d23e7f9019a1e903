//! What an agent is opened with (`OpenOptions`, `Model`, `Storage`) and what a run is given
//! (`RunOptions`): builders over the driver's types, checked when the agent opens.

use crate::driver::RunOptions;
use crate::driver::error::AgentError;
use crate::driver::events::Emitter;
use crate::driver::model::{CustomModel, ModelHandle, ModelRequest};
use crate::driver::store::{RemoteAt, StorageKind};
use crate::driver::tools::Tool;
use crate::engine::{EngineConfig, ModelOutput, check_tool_name};
use crate::event::Event;
use crate::mcp::{McpServerConfig, check_server_name};
use crate::providers::{ModelConfig, ProviderError, ProviderKind, RetryPolicy};
use std::future::Future;
use std::rc::Rc;
use web_sys::AbortSignal;

/// The model an agent calls.
#[derive(Clone)]
pub struct Model(pub(crate) ModelHandle);

impl Model {
    fn of(provider: ProviderKind, model: &str) -> Model {
        Model(ModelHandle {
            cfg: ModelConfig::new(provider, model.trim()),
            custom: None,
            retry: RetryPolicy::default(),
        })
    }

    /// OpenAI Chat Completions, or any compatible server (Ollama, vLLM, LM Studio), at
    /// `base_url` (e.g. `https://my-app.example/llm/v1`; empty: OpenAI's public API).
    pub fn openai(base_url: &str, model: &str) -> Model {
        Model::of(ProviderKind::OpenAi, model).base_url(base_url)
    }

    /// Anthropic Messages at `base_url` (empty: Anthropic's public API).
    pub fn anthropic(base_url: &str, model: &str) -> Model {
        Model::of(ProviderKind::Anthropic, model).base_url(base_url)
    }

    /// The offline, deterministic demo model: no key, no network.
    pub fn demo() -> Model {
        Model::of(ProviderKind::Demo, "")
    }

    /// A model the app runs itself: `call` is given each request and answers with the
    /// model's output. Its `Err` text is a `provider` error of the run.
    pub fn custom<F, Fut>(call: F) -> Model
    where
        F: Fn(ModelRequest<'_>) -> Fut + 'static,
        Fut: Future<Output = Result<ModelOutput, String>> + 'static,
    {
        Model::custom_model(Rc::new(move |req| {
            let answer = call(req);
            Box::pin(async move {
                answer.await.map_err(|message| {
                    AgentError::Provider(ProviderError::Stream {
                        error_type: Some("custom_provider_error".into()),
                        message,
                    })
                })
            })
        }))
    }

    /// A custom model whose errors are the driver's own (the JS binding's `model.call`).
    pub(crate) fn custom_model(call: CustomModel) -> Model {
        let mut m = Model::of(ProviderKind::Custom, "");
        m.0.custom = Some(call);
        m
    }

    /// The model's config as the providers read it, for the bindings.
    pub(crate) fn from_config(cfg: ModelConfig, retry: RetryPolicy) -> Model {
        Model(ModelHandle {
            cfg,
            custom: None,
            retry,
        })
    }

    pub fn base_url(mut self, url: &str) -> Model {
        self.0.cfg.base_url = Some(url.trim().to_owned()).filter(|u| !u.is_empty());
        self
    }

    /// Sent as the provider's auth header; kept in memory only, never stored.
    pub fn api_key(mut self, key: &str) -> Model {
        self.0.cfg.api_key = Some(key.to_owned()).filter(|k| !k.is_empty());
        self
    }

    pub fn max_tokens(mut self, n: u32) -> Model {
        self.0.cfg.max_tokens = Some(n);
        self
    }

    pub fn temperature(mut self, t: f64) -> Model {
        self.0.cfg.temperature = Some(t);
        self
    }

    /// Stream the answer with SSE (the default) or ask for one JSON body.
    pub fn stream(mut self, yes: bool) -> Model {
        self.0.cfg.stream = yes;
        self
    }

    /// An extra request header; it replaces a default header of the same name.
    pub fn header(mut self, name: &str, value: &str) -> Model {
        self.0.cfg.headers.push((name.to_owned(), value.to_owned()));
        self
    }

    /// Retries after a network error, 429 or 5xx (default 3, at most 10).
    pub fn max_retries(mut self, n: u32) -> Model {
        self.0.retry.max_retries = n.min(10);
        self
    }

    /// The model's context window in tokens (default: the model name's known window).
    pub fn context_window(mut self, tokens: u64) -> Model {
        self.0.cfg.context_window = Some(tokens);
        self
    }
}

/// Where threads are stored: IndexedDB (the default in browsers) or this page's memory, in
/// the database named `database` (default `"gatehouse"`), or the app's Postgres behind its
/// store handler ([`Storage::remote`]).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Storage {
    pub(crate) kind: Option<StorageKind>,
    pub(crate) database: String,
    pub(crate) remote: Option<RemoteAt>,
}

impl Default for Storage {
    fn default() -> Self {
        Storage {
            kind: None,
            database: "gatehouse".into(),
            remote: None,
        }
    }
}

impl Storage {
    pub fn indexed_db(database: &str) -> Storage {
        Storage::of(Some(StorageKind::IndexedDb), Some(database.into()))
    }

    pub fn memory(database: &str) -> Storage {
        Storage::of(Some(StorageKind::Memory), Some(database.into()))
    }

    /// The app's Postgres behind the store handler mounted at `url` (docs/design.md,
    /// "Across devices"): the thread follows the user to every device. (With the `remote`
    /// feature, a default one.)
    #[cfg(feature = "remote")]
    pub fn remote(url: &str) -> Storage {
        Storage {
            remote: Some(RemoteAt {
                url: url.to_owned(),
                headers: Vec::new(),
            }),
            ..Storage::of(Some(StorageKind::Remote), None)
        }
    }

    /// A header every request to the remote store's handler carries (`authorization`…).
    pub fn header(mut self, name: &str, value: &str) -> Storage {
        if let Some(at) = self.remote.as_mut() {
            at.headers.push((name.to_owned(), value.to_owned()));
        }
        self
    }

    pub(crate) fn of(kind: Option<StorageKind>, database: Option<String>) -> Storage {
        Storage {
            kind,
            database: database.unwrap_or_else(|| "gatehouse".into()),
            remote: None,
        }
    }

    pub fn database(&self) -> &str {
        &self.database
    }

    /// The kind to open: IndexedDB where there is one, else memory, unless one was named.
    pub(crate) fn kind(&self) -> Result<StorageKind, AgentError> {
        let kind = match self.kind {
            Some(k) => k,
            None if has_indexed_db() => StorageKind::IndexedDb,
            None => StorageKind::Memory,
        };
        if kind == StorageKind::IndexedDb && !has_indexed_db() {
            return Err(AgentError::InvalidConfig(
                "IndexedDB is not available here: use `storage: { kind: \"memory\" }`".into(),
            ));
        }
        Ok(kind)
    }
}

fn has_indexed_db() -> bool {
    let g = js_sys::global();
    js_sys::Reflect::get(&g, &"indexedDB".into()).is_ok_and(|v| !v.is_undefined() && !v.is_null())
}

/// What `Agent::open` is given.
pub struct OpenOptions {
    pub(crate) thread_id: String,
    pub(crate) model: Model,
    /// A model was given (a remote thread opened without one leaves the model's turns to
    /// a device that has one).
    model_given: bool,
    pub(crate) instructions: Option<String>,
    pub(crate) tools: Vec<Tool>,
    pub(crate) storage: Storage,
    pub(crate) max_steps: Option<u32>,
    pub(crate) history_limit: Option<u32>,
    pub(crate) approval_timeout: Option<u64>,
    pub(crate) mcp_servers: Vec<McpServerConfig>,
}

/// An MCP server whose tools the agent offers as `<name>__<tool>`, each asking a human
/// first (docs/design.md, "MCP tools").
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct McpServer(pub(crate) McpServerConfig);

impl McpServer {
    /// The server `name` (the tools' prefix) at its Streamable HTTP endpoint `url`.
    pub fn new(name: impl Into<String>, url: impl Into<String>) -> McpServer {
        McpServer(McpServerConfig {
            name: name.into(),
            url: url.into(),
            headers: Vec::new(),
            trust_read_only_hint: false,
            tools: None,
            approval_timeout: None,
        })
    }

    /// A header sent with every request (e.g. `authorization`); never stored.
    pub fn header(mut self, name: &str, value: &str) -> McpServer {
        self.0.headers.push((name.to_owned(), value.to_owned()));
        self
    }

    /// Tools the server annotates `readOnlyHint: true` run without asking.
    pub fn trust_read_only_hint(mut self, yes: bool) -> McpServer {
        self.0.trust_read_only_hint = yes;
        self
    }

    /// Only these of the server's tools (its own names).
    pub fn tools<S: Into<String>>(mut self, names: impl IntoIterator<Item = S>) -> McpServer {
        self.0.tools = Some(names.into_iter().map(Into::into).collect());
        self
    }
}

impl OpenOptions {
    /// The thread to open (or create): the unit of persistence.
    pub fn new(thread_id: impl Into<String>) -> OpenOptions {
        OpenOptions {
            thread_id: thread_id.into(),
            model: Model::demo(),
            model_given: false,
            instructions: None,
            tools: Vec::new(),
            storage: Storage::default(),
            max_steps: None,
            history_limit: None,
            approval_timeout: None,
            mcp_servers: Vec::new(),
        }
    }

    /// An MCP server whose tools the agent offers (listed when the agent opens).
    pub fn mcp_server(mut self, server: McpServer) -> OpenOptions {
        self.mcp_servers.push(server.0);
        self
    }

    /// The model (default: the offline demo model; on a remote thread, none: a device that
    /// has one answers).
    pub fn model(mut self, model: Model) -> OpenOptions {
        self.model = model;
        self.model_given = true;
        self
    }

    /// The system prompt.
    pub fn instructions(mut self, text: impl Into<String>) -> OpenOptions {
        self.instructions = Some(text.into());
        self
    }

    pub fn tool(mut self, tool: Tool) -> OpenOptions {
        self.tools.push(tool);
        self
    }

    pub fn tools(mut self, tools: impl IntoIterator<Item = Tool>) -> OpenOptions {
        self.tools.extend(tools);
        self
    }

    pub fn storage(mut self, storage: Storage) -> OpenOptions {
        self.storage = storage;
        self
    }

    /// Model calls per run (default 10); the run then stops with `StopReason::MaxSteps`.
    pub fn max_steps(mut self, n: u32) -> OpenOptions {
        self.max_steps = Some(n);
        self
    }

    /// Send at most the latest `n` messages (default: as many as the context window holds).
    pub fn history_limit(mut self, n: u32) -> OpenOptions {
        self.history_limit = Some(n);
        self
    }

    /// Pending calls of tools that set no timeout of their own expire after `ms`.
    pub fn approval_timeout(mut self, ms: u64) -> OpenOptions {
        self.approval_timeout = Some(ms);
        self
    }

    /// Checks the options: a thread id, distinct valid tool names, limits of at least 1, a
    /// valid model config. Tools without a timeout of their own take the default.
    pub(crate) fn checked(mut self) -> Result<(OpenOptions, EngineConfig), AgentError> {
        let bad = |m: String| Err(AgentError::InvalidConfig(m));
        if self.thread_id.trim().is_empty() {
            return bad("`threadId` is required (a non-empty string)".into());
        }
        for (i, t) in self.tools.iter().enumerate() {
            check_tool_name(&t.spec.name).map_err(AgentError::InvalidConfig)?;
            if self.tools[..i].iter().any(|x| x.spec.name == t.spec.name) {
                return bad(format!("two tools are named \"{}\"", t.spec.name));
            }
        }
        for (i, m) in self.mcp_servers.iter().enumerate() {
            check_server_name(&m.name).map_err(AgentError::InvalidConfig)?;
            if self.mcp_servers[..i].iter().any(|x| x.name == m.name) {
                return bad(format!("two MCP servers are named \"{}\"", m.name));
            }
            if m.url.trim().is_empty() {
                return bad(format!("MCP server \"{}\": `url` is required", m.name));
            }
        }
        let mut config = EngineConfig::default();
        // A remote thread is shared with other devices: what this one lacks, another may
        // have (docs/design.md, "Across devices").
        config.tools_elsewhere = self.storage.kind == Some(StorageKind::Remote);
        config.model_here = self.model_given || !config.tools_elsewhere;
        match self.max_steps {
            None => {}
            Some(n) if n >= 1 => config.max_steps = n.min(1000),
            Some(_) => return bad("`maxSteps` must be a number of at least 1".into()),
        }
        if self.history_limit == Some(0) {
            return bad("`historyLimit` must be a number of at least 1".into());
        }
        if self.approval_timeout == Some(0) {
            return bad("`approvalTimeout` must be a number of milliseconds of at least 1".into());
        }
        for t in &mut self.tools {
            if t.approval_timeout.flatten() == Some(0) {
                return bad(format!(
                    "tool \"{}\": `approvalTimeout` must be a number of milliseconds of at least 1",
                    t.spec.name
                ));
            }
            t.spec.approval_timeout = t.approval_timeout.unwrap_or(self.approval_timeout);
        }
        for m in &mut self.mcp_servers {
            m.approval_timeout = self.approval_timeout;
        }
        let cfg = &self.model.0;
        cfg.cfg.validate().map_err(|e| {
            AgentError::InvalidConfig(match e {
                ProviderError::InvalidConfig { message } => format!("`model`: {message}"),
                other => format!("`model`: {other}"),
            })
        })?;
        if cfg.cfg.provider == ProviderKind::Custom && cfg.custom.is_none() {
            return bad("`model.call` must be a function for the custom provider".into());
        }
        Ok((self, config))
    }
}

impl RunOptions {
    pub fn new() -> RunOptions {
        RunOptions::default()
    }

    /// Aborts the run (`aborted`): the model call stops, a running tool is not waited for.
    pub fn signal(mut self, signal: AbortSignal) -> RunOptions {
        self.signal = Some(signal);
        self
    }

    /// Hears the run's events (deltas, tool calls, messages, retries) as they happen.
    pub fn on_event(mut self, listener: impl Fn(&Event) + 'static) -> RunOptions {
        self.events = Emitter::new(Some(Rc::new(listener)));
        self
    }

    /// Who makes this run's decisions, for the audit trail's `decidedBy`.
    pub fn by(mut self, who: impl Into<String>) -> RunOptions {
        self.by = Some(who.into());
        self
    }
}
