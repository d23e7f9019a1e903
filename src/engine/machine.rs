//! The agent state machine. Inputs are `handle`-style methods (a user message, a model
//! output, policy verdicts, a tool outcome, decisions, tool results); outputs are [`Step`]s
//! drained with [`Engine::poll`]. It never awaits, never reads the clock and does no I/O: the
//! time comes in as `now_ms`, randomness as the `machine` seed.
//!
//! Drain rule: after every input, call `poll()` until it returns `None`, carrying out each
//! step in order. A `Persist` must be durable before the next step is carried out; if it
//! fails, drop the engine (or [`Engine::reset`] it from the stored state).

mod approval;
mod execution;
mod recovery;
mod turn;

use execution::{end_audit, not_run, tool_result};

use super::audit::{AuditOutcome, AuditRecord, OpenAudit};
use super::decisions::{Decision, DecisionKind};
use super::error::EngineError;
use super::grants::{GrantBook, Grants};
use super::inputs::{Decisions, ToolResults};
use super::model::{ModelOutput, ModelToolCall};
use super::results::{
    EXPIRED_TEXT, GRANT_GONE_REASON, REGATE_REASON, UNRECORDED_REASON, code, edited_result,
    error_result, output_to_result, rejection_text,
};
use super::state::{Commit, RunJournal, ThreadState, ThreadStatus, shrink_message_results};
use super::tools::{Gate, PolicyVerdict, ToolPolicy, ToolSet, ToolSpec};
use crate::schema;
use crate::thread::{
    Approval, ApprovalState, IdGen, META_RESUME_TOKEN, META_STOP_REASON, Message, Role, ToolEntry,
    Usage,
};
use serde_json::{Map, Value};
use std::collections::VecDeque;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct EngineConfig {
    /// Model calls allowed in one run (one `chat`, `submitDecisions`, `submitToolResults` or
    /// `retry`); bounds loops of unknown tools or invalid inputs.
    pub max_steps: u32,
    /// The thread is shared with other devices (a remote store): a tool this engine does not
    /// have may be defined on another, so an approved call of one waits for that device
    /// instead of failing as unknown (docs/design.md, "Across devices").
    pub tools_elsewhere: bool,
    /// The model can be called here. An agent opened without a model on a remote thread (an
    /// approver's phone) leaves the model's turn to a device that has one.
    pub model_here: bool,
}

impl Default for EngineConfig {
    fn default() -> Self {
        EngineConfig {
            max_steps: 10,
            tools_elsewhere: false,
            model_here: true,
        }
    }
}

/// Ask the tool's `approvalPolicy(inputs)` for this call.
#[derive(Debug, Clone, PartialEq)]
pub struct PolicyQuery {
    pub call_id: String,
    pub tool: String,
    pub inputs: Map<String, Value>,
}

/// Run the tool's `execute(inputs)` for this call, then report with `tool_outcome`.
#[derive(Debug, Clone, PartialEq)]
pub struct ToolInvocation {
    pub call_id: String,
    pub tool: String,
    pub inputs: Map<String, Value>,
}

/// How the call that started the run ends.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Outcome {
    Completed {
        max_steps_reached: bool,
    },
    AwaitingApproval,
    AwaitingToolResults,
    /// The next step needs a tool or a model that only another device has: the run goes on
    /// there ([`EngineConfig::tools_elsewhere`], [`EngineConfig::model_here`]).
    AwaitingDevice,
}

/// What the driver must do next. Exhaustive on purpose: a new step must be handled everywhere.
/// `Persist` is the large variant and the common one (most steps are writes): boxing it would
/// add an allocation to every write to save stack space on the others.
#[allow(clippy::large_enum_variant)]
#[derive(Debug, Clone, PartialEq)]
pub enum Step {
    /// Write this atomically with the thread record.
    Persist(Commit),
    /// Call the model with the thread's history and the offered tools; then `model_output`.
    CallModel,
    /// Evaluate these approval policies; then `policy_verdicts`.
    EvaluatePolicies(Vec<PolicyQuery>),
    /// Execute this tool; then `tool_outcome`.
    RunTool(ToolInvocation),
    /// The run stops here; return this outcome (and the tail) to the caller.
    Yield(Outcome),
}

/// A tool-call message waiting for its policy verdicts.
#[derive(Debug, Clone)]
struct Gating {
    text: String,
    usage: Option<Usage>,
    entries: Vec<ToolEntry>,
    gates: Vec<Gate>,
}

#[derive(Debug, Clone)]
enum Phase {
    Idle,
    NeedModel,
    WaitingModel,
    WaitingPolicies(Box<Gating>),
    Running,
    WaitingTool(String),
}

pub struct Engine {
    tools: ToolSet,
    config: EngineConfig,
    state: ThreadState,
    ids: IdGen,
    phase: Phase,
    outbox: VecDeque<Step>,
    steps: u32,
    /// The time of the latest input, for ids made while draining.
    now: u64,
    /// Audit records that ended since the last `Persist`: written by the next one.
    ended_audit: Vec<AuditRecord>,
    /// The remembered grants that apply to this thread, as the store last listed them, and
    /// the thread's id; `None`: this engine does not know them (the store handler's decide),
    /// and neither uses nor second-guesses a grant (docs/design.md, "Remembered grants").
    grants: Option<Box<dyn GrantBook>>,
}

impl Engine {
    pub fn new(tools: ToolSet, config: EngineConfig, state: ThreadState, machine: u64) -> Self {
        let mut ids = IdGen::new(machine);
        if let Some(t) = &state.tail {
            ids.observe(&t.id);
        }
        Engine {
            tools,
            config,
            state,
            ids,
            phase: Phase::Idle,
            outbox: VecDeque::new(),
            steps: 0,
            now: 0,
            ended_audit: Vec::new(),
            grants: None,
        }
    }

    /// The remembered grants that apply to `thread` now (the store's list): gated calls they
    /// cover are approved by them, and a call one approved runs only while it is listed.
    pub fn set_grants(&mut self, thread: &str, grants: Vec<crate::engine::Grant>) {
        self.set_grant_book(Box::new(Grants {
            thread: thread.to_owned(),
            list: grants,
        }));
    }

    /// [`Engine::set_grants`], answered by `book`: the grants in force for this thread.
    pub fn set_grant_book(&mut self, book: Box<dyn GrantBook>) {
        self.grants = Some(book);
    }

    /// The grant that approves a gated call of `tool` with `inputs` at `now_ms`, if any (its
    /// id and maker): never for a tool whose `allowedDecisions` excludes "approve".
    fn grant_for(
        &self,
        tool: &str,
        inputs: &Map<String, Value>,
        now_ms: u64,
    ) -> Option<(String, Option<String>)> {
        let book = self.grants.as_ref()?;
        let spec = self.tools.get(tool)?;
        if !spec.allowed_decisions.allows(DecisionKind::Approve) {
            return None;
        }
        book.approving(tool, inputs, now_ms)
    }

    /// A call a grant approved whose grant is no longer listed or has expired (only when this
    /// engine knows the grants).
    fn grant_gone(&self, run: &RunJournal, e: &ToolEntry) -> bool {
        let (Some(id), Some(book)) = (run.granted_by(&e.call_id), &self.grants) else {
            return false;
        };
        !book.still_approves(id, &e.name, &e.inputs, self.now)
    }

    /// Forget any run in progress and take this stored state (after a failed write or a
    /// change made by another tab).
    pub fn reset(&mut self, state: ThreadState) {
        if let Some(t) = &state.tail {
            self.ids.observe(&t.id);
        }
        self.state = state;
        self.phase = Phase::Idle;
        self.outbox.clear();
        self.ended_audit.clear();
    }

    pub fn state(&self) -> &ThreadState {
        &self.state
    }

    pub fn config(&self) -> EngineConfig {
        self.config
    }

    pub fn tools(&self) -> &ToolSet {
        &self.tools
    }

    /// Replaces the agent's tools (an MCP server's list changed: docs/design.md, "MCP
    /// tools"). Calls already in the thread keep their entries; new ones are gated by these.
    pub fn set_tools(&mut self, tools: ToolSet) {
        self.tools = tools;
    }

    pub fn tail(&self) -> Option<&Message> {
        self.state.tail.as_ref()
    }

    /// True while a run is in progress (between an input and its `Yield`).
    pub fn is_running(&self) -> bool {
        !matches!(self.phase, Phase::Idle) || !self.outbox.is_empty()
    }

    /// The tools offered to the model in this thread.
    pub fn offered_tools(&self) -> impl Iterator<Item = &ToolSpec> {
        self.tools.offered(&self.state.policies)
    }

    /// Entries of the tail whose approval is pending.
    pub fn pending_tools(&self) -> Vec<&ToolEntry> {
        self.tail_calls()
            .iter()
            .filter(|e| e.is_pending())
            .collect()
    }

    /// External calls of the tail still waiting for `submit_tool_results`.
    pub fn awaiting_results(&self) -> Vec<&ToolEntry> {
        let Some(run) = &self.state.run else {
            return Vec::new();
        };
        if self.tail().is_some_and(Message::is_suspended) {
            return Vec::new();
        }
        self.tail_calls()
            .iter()
            .filter(|e| !run.has_result(&e.call_id) && !is_rejected(e))
            .filter(|e| self.tools.get(&e.name).is_some_and(|t| t.external))
            .collect()
    }

    /// This agent can call the model ([`EngineConfig::model_here`]).
    pub fn model_here(&self) -> bool {
        self.config.model_here
    }

    pub fn status(&self) -> ThreadStatus {
        let Some(tail) = &self.state.tail else {
            return ThreadStatus::Idle;
        };
        if tail.is_suspended() {
            return ThreadStatus::AwaitingApproval;
        }
        if let Some(run) = &self.state.run {
            if run.started.is_some() {
                return ThreadStatus::Interrupted;
            }
            let mut external = false;
            for e in self
                .tail_calls()
                .iter()
                .filter(|e| !run.has_result(&e.call_id))
            {
                match self.tools.get(&e.name) {
                    Some(t) if t.external && !is_rejected(e) => external = true,
                    None if self.config.tools_elsewhere && !is_rejected(e) => {
                        return ThreadStatus::AwaitingDevice;
                    }
                    _ => return ThreadStatus::Interrupted,
                }
            }
            return if external {
                ThreadStatus::AwaitingToolResults
            } else {
                ThreadStatus::Interrupted
            };
        }
        // Whatever its kind, a user message (a question, tool results) is still unanswered.
        match tail.role {
            Role::User if !self.config.model_here => ThreadStatus::AwaitingDevice,
            Role::User => ThreadStatus::Interrupted,
            Role::Assistant => ThreadStatus::Idle,
        }
    }

    /// The next step, or `None` when the engine waits for an input or is idle.
    ///
    /// Writes that follow each other with nothing in between are merged into one `Persist`
    /// (one transaction): the last decision with the "started" mark of the first tool, a
    /// tool-call message with the mark of its first non-gated tool. Merging never moves a
    /// write after the step that needs it durable.
    pub fn poll(&mut self) -> Option<Step> {
        if self.outbox.iter().all(|s| matches!(s, Step::Persist(_))) {
            self.advance();
        }
        match self.outbox.pop_front()? {
            Step::Persist(mut commit) => {
                while let Some(Step::Persist(_)) = self.outbox.front() {
                    if let Some(Step::Persist(next)) = self.outbox.pop_front() {
                        commit = commit.then(next);
                    }
                }
                Some(Step::Persist(commit))
            }
            step => Some(step),
        }
    }

    /// Produces the steps of the current phase that need no input.
    fn advance(&mut self) {
        match self.phase {
            Phase::NeedModel => {
                if !self.config.model_here {
                    self.finish(Outcome::AwaitingDevice);
                } else if self.steps >= self.config.max_steps {
                    self.finish(Outcome::Completed {
                        max_steps_reached: true,
                    });
                } else {
                    self.phase = Phase::WaitingModel;
                    self.outbox.push_back(Step::CallModel);
                }
            }
            Phase::Running => self.advance_run(),
            // Waiting for an input.
            Phase::Idle
            | Phase::WaitingModel
            | Phase::WaitingPolicies(_)
            | Phase::WaitingTool(_) => {}
        }
    }

    // ----- inputs -----------------------------------------------------------------------

    /// True right after `poll` returned a `Persist` that is the last write of the run (the
    /// run yields next, or ends with nothing more to do).
    pub fn run_ends_after_write(&self) -> bool {
        match self.outbox.front() {
            Some(Step::Yield(_)) => true,
            Some(_) => false,
            // A run that needs the model with its step budget spent yields next.
            None => match self.phase {
                Phase::Idle => true,
                Phase::NeedModel => !self.config.model_here || self.steps >= self.config.max_steps,
                Phase::WaitingModel
                | Phase::WaitingPolicies(_)
                | Phase::Running
                | Phase::WaitingTool(_) => false,
            },
        }
    }

    // ----- internals --------------------------------------------------------------------

    fn expect_idle(&self) -> Result<(), EngineError> {
        if self.is_running() {
            return Err(EngineError::Busy(
                "a run is already in progress on this thread".into(),
            ));
        }
        Ok(())
    }

    fn start(&mut self, phase: Phase) {
        self.steps = 0;
        self.phase = phase;
    }

    fn finish(&mut self, outcome: Outcome) {
        self.phase = Phase::Idle;
        self.outbox.push_back(Step::Yield(outcome));
    }

    fn tail_calls(&self) -> &[ToolEntry] {
        self.state
            .tail
            .as_ref()
            .and_then(Message::tool_calls)
            .unwrap_or(&[])
    }

    fn persist(&mut self, replace_tail: Option<Message>, append: Vec<Message>) {
        let status = self.status();
        let mut audit = std::mem::take(&mut self.ended_audit);
        if let Some(run) = &self.state.run {
            let entries = self.tail_calls();
            for open in &run.audit {
                if let Some(e) = entries.iter().find(|e| e.call_id == open.call_id) {
                    audit.push(AuditRecord::of(open, e, None));
                }
            }
        }
        self.outbox.push_back(Step::Persist(Commit {
            replace_tail,
            append,
            run: self.state.run.clone(),
            policies: self.state.policies.clone(),
            status,
            audit,
            request_size: None,
            mcp_tools: None,
        }));
    }

    /// Ends the open audit record of a call of the tail, as its entry shows it now.
    fn end_tail_audit(&mut self, call_id: &str, outcome: AuditOutcome, now_ms: u64) {
        let entry = self
            .state
            .tail
            .as_ref()
            .and_then(Message::tool_calls)
            .and_then(|t| t.iter().find(|e| e.call_id == call_id));
        if let Some(e) = entry {
            end_audit(
                self.state.run.as_mut(),
                &mut self.ended_audit,
                e,
                outcome,
                now_ms,
            );
        }
    }

    fn append(&mut self, msg: Message) {
        self.state.tail = Some(msg.clone());
        self.persist(None, vec![msg]);
    }

    fn replace_tail(&mut self, msg: Message) {
        self.state.tail = Some(msg.clone());
        self.persist(Some(msg), Vec::new());
    }
}

/// Decided not to run: rejected by a human, or expired.
fn is_rejected(e: &ToolEntry) -> bool {
    matches!(
        e.approval_state(),
        Some(ApprovalState::Rejected | ApprovalState::Expired)
    )
}

fn unexpected(what: &str) -> EngineError {
    EngineError::Internal(format!("the engine was not waiting for {what}"))
}
