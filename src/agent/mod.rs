//! The Rust API: an [`Agent`] on one thread, with the same calls, errors and guarantees as
//! the JS `Agent` (which is a binding over this one; docs/design.md, "Layers").

mod options;
mod tool;

pub use options::{McpServer, Model, OpenOptions, Storage};
pub use tool::{NeedsApproval, ToolError};

use crate::driver::changes;
use crate::driver::error::AgentError;
use crate::driver::live::{self, ThreadChange, ThreadListChange, ThreadsSubscription};
use crate::driver::store::Store;
use crate::driver::{self, RunOptions, Setup, Shared};
use crate::engine::{
    AuditRecord, Decision, Decisions, EngineError, Outcome, PolicyChange, ThreadStatus, ToolResults,
};
use crate::store::StoreError;
use crate::store::page::{Rows, json_array};
use crate::store::summary::{AgentStatus, ThreadSummary};
use crate::thread::{Message, ToolEntry};
use serde::Serialize;
use serde_json::Value;
use std::rc::Rc;

/// An agent on one thread. Cloning it gives another handle on the same agent.
///
/// ```no_run
/// # async fn demo() -> Result<(), gatehouse_agent::AgentError> {
/// use gatehouse_agent::{Agent, Decision, Model, OpenOptions, Status, Tool};
/// use serde_json::json;
///
/// let schema = json!({ "type": "object", "properties": { "path": { "type": "string" } } });
/// let delete_file = Tool::new("delete_file", "Delete a file", schema, |inputs, _ctx| async move {
///     Ok(json!({ "deleted": inputs["path"] }))
/// })
/// .require_approval();
/// let model = Model::openai("https://my-app.example/llm/v1", "gpt-4o-mini");
/// let agent = Agent::open(OpenOptions::new("thread_42").model(model).tool(delete_file)).await?;
/// let state = agent.chat("Clean up the old logs").await?;
/// if state.status == Status::AwaitingApproval {
///     let call = &agent.pending_tools()[0];
///     agent.submit_decisions([(call.call_id.clone(), Decision::Approve)]).await?;
/// }
/// # Ok(())
/// # }
/// ```
#[derive(Clone)]
pub struct Agent {
    s: Shared,
}

/// How a run ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Status {
    Completed,
    AwaitingApproval,
    AwaitingToolResults,
    /// The run goes on on a device that has the tool or the model this one lacks.
    AwaitingDevice,
    /// The message or decisions wait on this device to be sent (a remote thread whose store
    /// cannot be reached): they are, by themselves, when it can.
    Queued,
}

/// Why a completed run stopped, when it is not the model's own answer.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum StopReason {
    /// The run made `max_steps` model calls.
    MaxSteps,
}

/// What a run resolves to: how it ended and the thread's last message.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct AgentState {
    pub status: Status,
    pub message: Option<Message>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub stop_reason: Option<StopReason>,
}

/// What starts a run.
#[derive(Debug, Clone, PartialEq)]
pub enum Input {
    /// A user message (not empty).
    Message(String),
    Decisions(Decisions),
    ToolResults(ToolResults),
    /// Answers the last user message again, or finishes an interrupted run.
    Retry,
}

/// One page of a thread's rows (`messages`, `audit`), oldest first: at most `limit` of them,
/// ending before the row at 0-based position `before_index` (default: the newest).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Page {
    pub limit: Option<u32>,
    pub before_index: Option<u64>,
}

/// A tool's policy in this thread, the per-thread override applied to its defaults.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct EffectivePolicy {
    pub enabled: bool,
    pub auto_approve: bool,
}

/// A listener of [`Agent::subscribe`]; [`Subscription::cancel`] removes it (dropping the
/// handle does not).
pub struct Subscription {
    s: driver::WeakShared,
    id: u32,
}

impl Subscription {
    pub fn cancel(&self) {
        if let Some(s) = self.s.upgrade() {
            live::unsubscribe(&mut s.borrow_mut(), self.id);
        }
    }
}

impl Agent {
    /// Opens (or creates) a thread: reads its record and tail only, and re-gates a tool call
    /// whose execution was cut off by a closed page.
    pub async fn open(options: OpenOptions) -> Result<Agent, AgentError> {
        let (o, config) = options.checked()?;
        let store = open_store(&o.storage).await?;
        let s = driver::open(Setup {
            thread_id: o.thread_id,
            store,
            model: o.model.0,
            instructions: o.instructions,
            tools: o.tools,
            config,
            history_limit: o.history_limit,
            mcp: o.mcp_servers,
        })
        .await?;
        Ok(Agent { s })
    }

    pub fn thread_id(&self) -> String {
        self.s.thread_id()
    }

    /// How many messages the thread has.
    pub fn message_count(&self) -> u64 {
        self.s.borrow().message_count
    }

    /// Runs `input` to its end: until the model answers, a call waits for a decision or an
    /// external result, or `max_steps` model calls were made.
    pub async fn run(&self, input: Input, options: &RunOptions) -> Result<AgentState, AgentError> {
        let input = match input {
            // Providers refuse empty turns: refused here, before anything is stored.
            Input::Message(text) if text.trim().is_empty() => {
                return Err(AgentError::InvalidConfig("the message is empty".into()));
            }
            Input::Message(text) => driver::Input::Message(text, None),
            Input::Decisions(d) => driver::Input::Decisions(d),
            Input::ToolResults(r) => driver::Input::ToolResults(r),
            Input::Retry => driver::Input::Retry,
        };
        match driver::outbox::run_or_queue(&self.s, input, options).await? {
            driver::outbox::Ran::Done(outcome) => Ok(self.state(outcome)),
            driver::outbox::Ran::Queued => Ok(AgentState {
                status: Status::Queued,
                message: self.s.borrow().engine.tail().cloned(),
                stop_reason: None,
            }),
        }
    }

    /// Sends a user message and runs until the model answers or a tool call waits.
    pub async fn chat(&self, text: &str) -> Result<AgentState, AgentError> {
        self.run(Input::Message(text.to_owned()), &RunOptions::default())
            .await
    }

    /// Decisions on the calls waiting for approval, keyed by call id. Partial and revisable
    /// until every gated call is decided; the last one runs the tools and calls the model.
    pub async fn submit_decisions<K: Into<String>>(
        &self,
        decisions: impl IntoIterator<Item = (K, Decision)>,
    ) -> Result<AgentState, AgentError> {
        let d = Decisions::new(decisions.into_iter().map(|(k, d)| (k.into(), d)))?;
        self.run(Input::Decisions(d), &RunOptions::default()).await
    }

    /// Outputs of external tools keyed by call id; partial submissions are kept.
    pub async fn submit_tool_results<K: Into<String>>(
        &self,
        results: impl IntoIterator<Item = (K, Value)>,
    ) -> Result<AgentState, AgentError> {
        let r = ToolResults::new(results.into_iter().map(|(k, v)| (k.into(), v)))?;
        self.run(Input::ToolResults(r), &RunOptions::default())
            .await
    }

    /// Answers the last user message again after a failure, or finishes an interrupted run.
    pub async fn retry(&self) -> Result<AgentState, AgentError> {
        self.run(Input::Retry, &RunOptions::default()).await
    }

    /// Entries of the last message whose approval is pending. No I/O.
    pub fn pending_tools(&self) -> Vec<ToolEntry> {
        let g = self.s.borrow();
        g.engine.pending_tools().into_iter().cloned().collect()
    }

    /// How far the pending call `call_id` is on the store handler's approver rules (a remote
    /// thread: the approvals counted toward its quorum, how many it needs, and why this user
    /// may not decide it), as the thread was last read; one approval needed, by anyone, where
    /// no rule applies (docs/design.md, "Approver rules").
    pub fn approval_progress(&self, call_id: &str) -> crate::store::wire::ApprovalProgress {
        let thread = self.s.thread_id();
        self.s
            .remote()
            .and_then(|r| r.progress(&thread, call_id))
            .unwrap_or_default()
    }

    /// External calls waiting for `submit_tool_results`.
    pub fn pending_tool_results(&self) -> Vec<ToolEntry> {
        let g = self.s.borrow();
        g.engine.awaiting_results().into_iter().cloned().collect()
    }

    /// What the thread is doing: `Running` while this agent or, as far as it knows, another
    /// agent (another tab) runs it.
    pub fn status(&self) -> AgentStatus {
        driver::status(&self.s.borrow())
    }

    pub fn last_message(&self) -> Option<Message> {
        self.s.borrow().engine.tail().cloned()
    }

    /// The thread's messages, oldest first: all of them, or one page read without loading
    /// the rest.
    pub async fn messages(&self, page: Page) -> Result<Vec<Message>, AgentError> {
        let rows = self.rows(Rows::Messages, page).await?;
        rows.iter()
            .map(|r| r.message().map_err(AgentError::from))
            .collect()
    }

    /// The thread's audit trail, oldest first, paged like `messages`: one record per gated
    /// call, including what other tabs decided.
    pub async fn audit(&self, page: Page) -> Result<Vec<AuditRecord>, AgentError> {
        let rows = self.rows(Rows::Audit, page).await?;
        rows.iter()
            .map(|r| {
                serde_json::from_str(&r.json).map_err(|e| {
                    StoreError::Corrupt(format!("audit record {} is unreadable: {e}", r.seq)).into()
                })
            })
            .collect()
    }

    /// A page of rows as one JSON array (what the JS binding hands to `JSON.parse`).
    pub(crate) async fn rows_json(&self, kind: Rows, page: Page) -> Result<String, AgentError> {
        Ok(json_array(&self.rows(kind, page).await?))
    }

    async fn rows(
        &self,
        kind: Rows,
        page: Page,
    ) -> Result<Vec<crate::store::MessageRow>, AgentError> {
        let (store, thread) = self.s.at();
        let limit = page.limit.unwrap_or(u32::MAX);
        // Rows are numbered from 1: the row at 0-based index i is seq i + 1.
        let before = page.before_index.map(|i| i + 1);
        Ok(store.rows(kind, &thread, before, limit).await?)
    }

    /// This thread's override of a tool's defaults; persisted with the thread, inherited by
    /// no other thread.
    pub async fn set_tool_policy(
        &self,
        name: &str,
        change: PolicyChange,
    ) -> Result<(), AgentError> {
        let p = change.applied(&self.s.borrow().engine.state().policies, name);
        driver::run(
            &self.s,
            driver::Input::SetPolicy(name.to_owned(), p),
            &RunOptions::default(),
        )
        .await?;
        Ok(())
    }

    /// Makes a remembered grant (docs/design.md, "Remembered grants") from `request`, the
    /// JSON `{ tool, scope, match?, expiresIn? }`, by `by` on a local store.
    #[cfg(feature = "grants")]
    pub async fn grant(
        &self,
        request: serde_json::Value,
        by: Option<String>,
    ) -> Result<crate::engine::Grant, AgentError> {
        let made = self.grant_json(request, by).await?;
        read_grant(&made)
    }

    /// The remembered grants in force for this thread.
    #[cfg(feature = "grants")]
    pub async fn grants(&self) -> Result<Vec<crate::engine::Grant>, AgentError> {
        let texts = self.grants_json().await?;
        texts.iter().map(|t| read_grant(t)).collect()
    }

    /// [`Agent::grant`], as the grant's JSON (the JS layer's).
    #[cfg(feature = "grants")]
    #[doc(hidden)]
    pub async fn grant_json(
        &self,
        request: serde_json::Value,
        by: Option<String>,
    ) -> Result<String, AgentError> {
        driver::grants::make(&self.s, request, by).await
    }

    /// [`Agent::grants`], as each grant's JSON.
    #[cfg(feature = "grants")]
    #[doc(hidden)]
    pub async fn grants_json(&self) -> Result<Vec<String>, AgentError> {
        driver::grants::list(&self.s).await
    }

    /// Keeps the grant `id` (`grant`, its JSON, made from `request`): the npm package's
    /// `grant()`, whose grants' module made it (docs/design.md, "The grants' module").
    #[doc(hidden)]
    pub async fn put_grant_json(
        &self,
        id: &str,
        grant: &str,
        request: &str,
    ) -> Result<String, AgentError> {
        driver::grants::put(&self.s, id, grant, request).await
    }

    /// What the thread's store keeps of grants that may apply to it, as JSON.
    #[doc(hidden)]
    pub async fn grant_texts(&self) -> Result<Vec<String>, AgentError> {
        driver::grants::texts(&self.s).await
    }

    /// Revokes a remembered grant: calls it approved that have not started ask a human.
    pub async fn revoke_grant(&self, id: &str) -> Result<(), AgentError> {
        driver::grants::revoke(&self.s, id).await
    }

    /// The effective policy of every tool in this thread, in the tools' order.
    pub fn tool_policies(&self) -> Vec<(String, EffectivePolicy)> {
        let g = self.s.borrow();
        let policies = &g.engine.state().policies;
        let tools = g.engine.tools();
        tools
            .iter()
            .map(|t| {
                let p = EffectivePolicy {
                    enabled: tools.is_enabled(t, policies),
                    auto_approve: tools.is_auto_approved(t, policies),
                };
                (t.name.clone(), p)
            })
            .collect()
    }

    /// Calls `listener` after every change to the thread: by this agent, by another agent
    /// on it in this page, or by another tab.
    pub fn subscribe(&self, listener: impl Fn(&ThreadChange) + 'static) -> Subscription {
        let id = live::subscribe(&self.s, Rc::new(listener));
        Subscription {
            s: self.s.downgrade(),
            id,
        }
    }

    /// Hears the runs this agent starts by itself, not from a call: the expiry timer, the
    /// outbox sent once online, a live feed's retry. For telemetry (the package's
    /// `telemetry` option); `None` stops it.
    #[doc(hidden)]
    pub fn set_background_hook(&self, hook: Option<driver::events::BackgroundHook>) {
        self.s.borrow_mut().background = hook;
    }

    /// Where the npm package's MCP servers ask their questions (docs/design.md, "MCP
    /// elicitation"): `hook(callId, server, signal, question, withdrawn)`, a promise of the
    /// result as JSON text.
    #[cfg(not(feature = "mcp"))]
    pub(crate) fn set_elicitation_hook(&self, hook: Option<js_sys::Function>) {
        self.s.borrow_mut().elicitation_hook = hook;
    }

    /// Re-reads the thread after another tab changed it. `busy` while a run is under way here.
    pub async fn refresh(&self) -> Result<(), AgentError> {
        let running = {
            let g = self.s.borrow();
            driver::running_here(&g) || g.engine.is_running()
        };
        if running {
            return Err(EngineError::Busy("a run is in progress".into()).into());
        }
        driver::reload(&self.s).await
    }

    /// The threads of a database, newest first, from their records alone.
    pub async fn list_threads(storage: &Storage) -> Result<Vec<ThreadSummary>, AgentError> {
        driver::summaries(&open_store(storage).await?).await
    }

    /// Deletes a thread with its messages and audit trail; thread lists hear of it.
    pub async fn delete_thread(thread_id: &str, storage: &Storage) -> Result<(), AgentError> {
        let store = open_store(storage).await?;
        store.delete(thread_id).await?;
        live::deleted(store.name(), thread_id);
        Ok(())
    }

    /// Calls `listener` whenever a thread of the database is created, changes status or is
    /// deleted, in this page or another tab (for a remote store: on any device).
    pub fn subscribe_threads(
        storage: &Storage,
        listener: impl Fn(&ThreadListChange) + 'static,
    ) -> ThreadsSubscription {
        if let (Some(at), Ok(controller)) = (&storage.remote, web_sys::AbortController::new()) {
            let store = Rc::new(at.open(&storage.database));
            changes::follow_list(store, controller.signal(), Rc::new(listener));
            return ThreadsSubscription::remote(controller);
        }
        live::subscribe_threads(&storage.database, Rc::new(listener))
    }

    /// The state a run leaves: its outcome, or (for a run that ended without a yield, such
    /// as one that only wrote a policy) what the thread waits for.
    fn state(&self, outcome: Option<Outcome>) -> AgentState {
        let g = self.s.borrow();
        let status = match outcome {
            Some(Outcome::Completed { .. }) => Status::Completed,
            Some(Outcome::AwaitingApproval) => Status::AwaitingApproval,
            Some(Outcome::AwaitingToolResults) => Status::AwaitingToolResults,
            Some(Outcome::AwaitingDevice) => Status::AwaitingDevice,
            None => match g.engine.status() {
                ThreadStatus::AwaitingApproval => Status::AwaitingApproval,
                ThreadStatus::AwaitingToolResults => Status::AwaitingToolResults,
                ThreadStatus::AwaitingDevice => Status::AwaitingDevice,
                ThreadStatus::Idle | ThreadStatus::Interrupted => Status::Completed,
            },
        };
        let max_steps = matches!(
            outcome,
            Some(Outcome::Completed {
                max_steps_reached: true
            })
        );
        AgentState {
            status,
            message: g.engine.tail().cloned(),
            stop_reason: max_steps.then_some(StopReason::MaxSteps),
        }
    }
}

async fn open_store(storage: &Storage) -> Result<Store, AgentError> {
    Store::open(storage.kind()?, &storage.database, storage.remote.as_ref()).await
}

/// A grant the store kept, read.
#[cfg(feature = "grants")]
fn read_grant(text: &str) -> Result<crate::engine::Grant, AgentError> {
    serde_json::from_str(text).map_err(|e| {
        AgentError::Grant(
            crate::driver::error::GrantError::Invalid,
            format!("a grant could not be read: {e}"),
        )
    })
}
