//! The agent state machine. Inputs are `handle`-style methods (a user message, a model
//! output, policy verdicts, a tool outcome, decisions, tool results); outputs are [`Step`]s
//! drained with [`Engine::poll`]. It never awaits, never reads the clock and does no I/O: the
//! time comes in as `now_ms`, randomness as the `machine` seed.
//!
//! Drain rule: after every input, call `poll()` until it returns `None`, carrying out each
//! step in order. A `Persist` must be durable before the next step is carried out; if it
//! fails, drop the engine (or [`Engine::reset`] it from the stored state).

use super::audit::{AuditOutcome, AuditRecord, OpenAudit};
use super::decisions::{Decision, parse_payload};
use super::error::EngineError;
use super::model::{ModelOutput, ModelToolCall};
use super::results::{
    EXPIRED_TEXT, REGATE_REASON, UNRECORDED_REASON, code, edited_result, error_result,
    output_to_result, rejection_text,
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
}

impl Default for EngineConfig {
    fn default() -> Self {
        EngineConfig { max_steps: 10 }
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
    Completed { max_steps_reached: bool },
    AwaitingApproval,
    AwaitingToolResults,
}

/// What the driver must do next. Exhaustive on purpose: a new step must be handled everywhere.
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
        }
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

    pub fn tools(&self) -> &ToolSet {
        &self.tools
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
                if self.steps >= self.config.max_steps {
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

    /// A new user message starts a run.
    pub fn user_message(&mut self, text: &str, now_ms: u64) -> Result<(), EngineError> {
        self.expect_idle()?;
        self.now = now_ms;
        if let Some(tail) = self.tail().filter(|t| t.is_suspended()) {
            let n = tail
                .tool_calls()
                .map_or(0, |t| t.iter().filter(|e| e.is_pending()).count());
            return Err(EngineError::Conflict(format!(
                "{n} tool call(s) are awaiting approval: submit decisions before sending a new \
                 message. Nothing was stored or sent."
            )));
        }
        if self.state.run.is_some() {
            let why = match self.status() {
                ThreadStatus::AwaitingToolResults => {
                    "tool calls are waiting for results: submit them before sending a new message"
                }
                _ => "a run was interrupted while running tools: call retry() to finish it first",
            };
            return Err(EngineError::Conflict(format!(
                "{why}. Nothing was stored or sent."
            )));
        }
        let msg = Message::user_text(self.ids.next(now_ms), text);
        self.append(msg);
        self.start(Phase::NeedModel);
        Ok(())
    }

    /// Continue an unanswered turn or an interrupted run, without adding a message.
    pub fn retry(&mut self, now_ms: u64) -> Result<(), EngineError> {
        self.expect_idle()?;
        self.now = now_ms;
        if self.recover(now_ms) {
            return Ok(());
        }
        match self.status() {
            ThreadStatus::Interrupted if self.state.run.is_some() => self.start(Phase::Running),
            ThreadStatus::Interrupted => self.start(Phase::NeedModel),
            _ => return Err(EngineError::NothingToRetry),
        }
        Ok(())
    }

    /// The model answered the `CallModel` step.
    pub fn model_output(&mut self, out: ModelOutput, now_ms: u64) -> Result<(), EngineError> {
        if !matches!(self.phase, Phase::WaitingModel) {
            return Err(unexpected("a model output"));
        }
        self.steps += 1;
        self.now = now_ms;
        if out.tool_calls.is_empty() {
            let mut msg = Message::assistant_text(self.ids.next(now_ms), out.text);
            if let Some(r) = out.stop_reason {
                msg.set_meta(META_STOP_REASON, Value::String(r));
            }
            msg.usage = out.usage;
            self.append(msg);
            self.finish(Outcome::Completed {
                max_steps_reached: false,
            });
            return Ok(());
        }
        let mut entries = Vec::with_capacity(out.tool_calls.len());
        let mut gates = Vec::with_capacity(out.tool_calls.len());
        let mut queries = Vec::new();
        for (i, call) in out.tool_calls.iter().enumerate() {
            let call_id = unique_call_id(call, i, &entries);
            let tool = self.tools.get(&call.name);
            let mut entry = ToolEntry::new(call_id, &call.name);
            entry.description = tool.and_then(|t| t.description.clone());
            if let Some(t) = tool {
                entry.parameters = t.extra.clone();
            }
            let parsed = parse_arguments(&call.arguments);
            if let Ok(inputs) = &parsed {
                entry.inputs = inputs.clone();
            }
            let gate = self.gate(tool, &call.name, parsed);
            if gate == Gate::AskPolicy {
                queries.push(PolicyQuery {
                    call_id: entry.call_id.clone(),
                    tool: entry.name.clone(),
                    inputs: entry.inputs.clone(),
                });
            }
            entries.push(entry);
            gates.push(gate);
        }
        let gating = Gating {
            text: out.text,
            usage: out.usage,
            entries,
            gates,
        };
        if queries.is_empty() {
            self.write_tool_call(gating, now_ms);
        } else {
            self.phase = Phase::WaitingPolicies(Box::new(gating));
            self.outbox.push_back(Step::EvaluatePolicies(queries));
        }
        Ok(())
    }

    /// The model call failed or was aborted: the run stops, the thread stays as it was (the
    /// user's message is kept; `retry` answers it).
    pub fn model_failed(&mut self) {
        if matches!(self.phase, Phase::WaitingModel) {
            self.phase = Phase::Idle;
            self.outbox.clear();
        }
    }

    /// Verdicts for the `EvaluatePolicies` step. A call without a verdict is gated.
    pub fn policy_verdicts(
        &mut self,
        verdicts: Vec<(String, PolicyVerdict)>,
        now_ms: u64,
    ) -> Result<(), EngineError> {
        let Phase::WaitingPolicies(gating) = std::mem::replace(&mut self.phase, Phase::Idle) else {
            return Err(unexpected("policy verdicts"));
        };
        let mut gating = *gating;
        for (entry, gate) in gating.entries.iter().zip(gating.gates.iter_mut()) {
            if *gate == Gate::AskPolicy {
                let verdict = verdicts
                    .iter()
                    .find(|(id, _)| *id == entry.call_id)
                    .map(|(_, v)| v.clone())
                    .unwrap_or_else(|| PolicyVerdict::Failed("no verdict was given".into()));
                *gate = verdict.into_gate();
            }
        }
        self.write_tool_call(gating, now_ms);
        Ok(())
    }

    /// The tool of the `RunTool` step finished: `Ok(output)` or `Err(error message)`.
    pub fn tool_outcome(
        &mut self,
        call_id: &str,
        outcome: Result<Value, String>,
        now_ms: u64,
    ) -> Result<(), EngineError> {
        match &self.phase {
            Phase::WaitingTool(id) if id == call_id => {}
            _ => return Err(unexpected("a tool outcome")),
        }
        let ended = AuditOutcome::of_run(&outcome);
        let result = self.model_result(call_id, tool_result(outcome));
        self.now = now_ms;
        if let Some(run) = &mut self.state.run {
            run.record(call_id, result);
            run.started = None;
        }
        self.end_tail_audit(call_id, ended, now_ms);
        // Persisted together with the next step's write (the next "started" mark or the
        // result message), so a call costs one write, not two.
        self.phase = Phase::Running;
        Ok(())
    }

    /// The run is cancelled before this tool began executing: its "started" mark is cleared
    /// (it never ran) and the run stops; `retry` continues it later.
    pub fn cancel_tool(&mut self, call_id: &str) -> Result<(), EngineError> {
        match &self.phase {
            Phase::WaitingTool(id) if id == call_id => {}
            _ => return Err(unexpected("a cancelled tool")),
        }
        if let Some(run) = &mut self.state.run {
            run.started = None;
            if let Some(a) = run.audit_mut(call_id) {
                a.started_at = None;
            }
        }
        self.phase = Phase::Idle;
        self.persist(None, Vec::new());
        Ok(())
    }

    /// The run gives up waiting for the tool of the `RunTool` step, which began and has not
    /// finished (an abort while `execute` never settles): like a page that died mid-call, the
    /// call is re-gated (unless its tool is idempotent) and the run ends. If the tool's result
    /// arrives later, [`Engine::late_result`] keeps it.
    pub fn abandon_tool(&mut self, call_id: &str, now_ms: u64) -> Result<(), EngineError> {
        match &self.phase {
            Phase::WaitingTool(id) if id == call_id => {}
            _ => return Err(unexpected("an abandoned tool")),
        }
        self.phase = Phase::Idle;
        self.now = now_ms;
        self.recover(now_ms);
        Ok(())
    }

    /// Human decisions (docs/design.md, "Approval semantics"). Partial and revisable until every gated entry is decided.
    ///
    /// `by` (who decided, as the app names them) goes into the calls' audit records.
    pub fn submit_decisions(
        &mut self,
        payload: &Value,
        now_ms: u64,
        by: Option<&str>,
    ) -> Result<(), EngineError> {
        self.expect_idle()?;
        let Some(tail) = self.tail().filter(|t| t.is_suspended()) else {
            return Err(EngineError::NotSuspended(
                "no tool call is awaiting approval".into(),
            ));
        };
        let decisions = parse_payload(payload)?;
        let run = self.state.run.clone();
        let mut tail = tail.clone();
        let entries = tail
            .tool_calls_mut()
            .map(std::mem::take)
            .unwrap_or_default();
        let mut entries = entries;
        // Check everything before changing anything: a refused payload stages nothing.
        for (call_id, _) in &decisions {
            if let Some(e) = entries.iter().find(|e| e.call_id == *call_id) {
                let due = run
                    .as_ref()
                    .and_then(|r| r.deadline(call_id))
                    .is_some_and(|at| at <= now_ms);
                let expired = e.approval_state() == Some(ApprovalState::Expired);
                if expired || (due && e.approval.is_some()) {
                    return Err(EngineError::expired(call_id));
                }
            }
            let decidable = entries.iter().any(|e| {
                e.call_id == *call_id
                    && e.approval.is_some()
                    && !run.as_ref().is_some_and(|r| r.has_result(call_id))
            });
            if !decidable {
                return Err(EngineError::UnknownCallId {
                    call_id: call_id.clone(),
                    message: format!("\"{call_id}\" is not among the calls awaiting approval"),
                });
            }
        }
        for (call_id, decision) in &decisions {
            if let Some(e) = entries.iter().find(|e| e.call_id == *call_id) {
                self.check_decision(e, decision)?;
            }
        }
        let journal = self
            .state
            .run
            .get_or_insert_with(|| RunJournal::new(tail.id.clone()));
        for (call_id, decision) in decisions {
            if let Some(e) = entries.iter_mut().find(|e| e.call_id == call_id) {
                apply_decision(e, decision);
                // The record is what lets the call run, for exactly the inputs the entry now
                // shows; the tail is what a UI reads.
                let approved = e.approval_state() == Some(ApprovalState::Approved);
                journal.decide(&call_id, approved, &e.inputs);
                if let Some(a) = journal.audit_mut(&call_id) {
                    a.decided_at = Some(now_ms);
                    a.decided_by = by.map(str::to_owned);
                }
            }
        }
        self.settle(tail, entries, now_ms);
        Ok(())
    }

    /// Writes the decided `entries` into the tail; once none is pending, the step goes on:
    /// rejections get their result, approved and non-gated calls run.
    fn settle(&mut self, mut tail: Message, entries: Vec<ToolEntry>, now_ms: u64) {
        let complete = !entries.iter().any(ToolEntry::is_pending);
        if complete {
            // The point of no return: rejections get their result now, the rest runs.
            let run = self
                .state
                .run
                .get_or_insert_with(|| RunJournal::new(tail.id.clone()));
            for e in entries.iter().filter(|e| is_rejected(e)) {
                if !run.has_result(&e.call_id) {
                    let reason = e.approval.as_ref().and_then(|a| a.reject_reason.as_deref());
                    run.record(&e.call_id, rejection_text(reason));
                }
            }
            for e in entries.iter().filter(|e| is_rejected(e)) {
                end_audit(
                    Some(&mut *run),
                    &mut self.ended_audit,
                    e,
                    not_run(e),
                    now_ms,
                );
            }
        }
        if let Some(t) = tail.tool_calls_mut() {
            *t = entries;
        }
        self.now = now_ms;
        self.replace_tail(tail);
        if complete {
            self.start(Phase::Running);
        } else {
            self.finish(Outcome::AwaitingApproval);
        }
    }

    /// The earliest approval deadline of a call still pending in the tail, if any: the
    /// driver calls [`Engine::expire`] at that time (docs/design.md, "Approval expiry").
    pub fn next_deadline(&self) -> Option<u64> {
        let run = self.state.run.as_ref()?;
        self.pending_tools()
            .iter()
            .filter_map(|e| run.deadline(&e.call_id))
            .min()
    }

    /// Decides every pending call whose deadline is at or before `now_ms` as expired: it never
    /// runs, and the model gets [`EXPIRED_TEXT`]. Like the last decision, expiring the last
    /// pending call lets the step go on. Returns false, with nothing to do, when no call is
    /// due.
    pub fn expire(&mut self, now_ms: u64) -> Result<bool, EngineError> {
        self.expect_idle()?;
        if self.next_deadline().is_none_or(|at| at > now_ms) {
            return Ok(false);
        }
        let (Some(mut tail), Some(run)) = (self.state.tail.clone(), self.state.run.as_mut()) else {
            return Ok(false);
        };
        let mut entries = tail
            .tool_calls_mut()
            .map(std::mem::take)
            .unwrap_or_default();
        for e in entries.iter_mut().filter(|e| e.is_pending()) {
            if run.deadline(&e.call_id).is_none_or(|at| at > now_ms) {
                continue;
            }
            if let Some(a) = e.approval.as_mut() {
                a.state = ApprovalState::Expired;
                a.reject_reason = None;
            }
            // Nothing ran: the entry shows the model's own inputs again.
            if let Some(proposed) = e.proposed_inputs.take() {
                e.inputs = proposed;
            }
            run.decide(&e.call_id, false, &e.inputs);
            run.record(&e.call_id, EXPIRED_TEXT.to_owned());
            if let Some(a) = run.audit_mut(&e.call_id) {
                a.decided_at = Some(now_ms);
                a.decided_by = None;
            }
        }
        self.settle(tail, entries, now_ms);
        Ok(true)
    }

    /// Refuses a decision the call's tool does not allow, and an edit whose inputs fail the
    /// tool's schema (docs/design.md, "Approval semantics").
    fn check_decision(&self, e: &ToolEntry, decision: &Decision) -> Result<(), EngineError> {
        let invalid = |message: String| EngineError::InvalidDecision {
            call_id: Some(e.call_id.clone()),
            message,
        };
        let tool = self.tools.get(&e.name);
        let kind = decision.kind();
        if let Some(t) = tool.filter(|t| !t.allowed_decisions.allows(kind)) {
            return Err(invalid(format!(
                "\"{}\" is not an allowed decision for \"{}\" (tool \"{}\"): its \
                 allowedDecisions are {}",
                kind.as_str(),
                e.call_id,
                t.name,
                t.allowed_decisions
            )));
        }
        let Decision::Edit(inputs) = decision else {
            return Ok(());
        };
        let Some(tool) = tool else {
            return Err(invalid(format!(
                "cannot edit \"{}\": this agent has no tool \"{}\" to check the inputs against",
                e.call_id, e.name
            )));
        };
        // The inputs are the decision's own JSON value; the copy is what the schema walks.
        schema::validate(&tool.schema, &Value::Object(inputs.clone())).map_err(|errors| {
            let mut message = format!(
                "the edited inputs for \"{}\" do not match the schema of \"{}\": ",
                e.call_id, e.name
            );
            for (i, error) in errors.iter().enumerate() {
                if i > 0 {
                    message.push_str("; ");
                }
                message.push_str(&error.to_string());
            }
            invalid(message)
        })
    }

    /// The result string the model gets for a call that ran: the tool's own, or, for a call
    /// a human edited, [`edited_result`] around it.
    fn model_result(&self, call_id: &str, result: String) -> String {
        let edited = self
            .tail_calls()
            .iter()
            .find(|e| e.call_id == call_id)
            .and_then(|e| Some((e.proposed_inputs.as_ref()?, &e.inputs)));
        match edited {
            Some((proposed, inputs)) => edited_result(proposed, inputs, &result),
            None => result,
        }
    }

    /// Outputs of external tools (docs/design.md, "Approval semantics"), by call id; partial submissions are kept.
    pub fn submit_tool_results(&mut self, payload: &Value, now_ms: u64) -> Result<(), EngineError> {
        self.expect_idle()?;
        let status = self.status();
        if status != ThreadStatus::AwaitingToolResults && status != ThreadStatus::AwaitingApproval {
            return Err(EngineError::NotSuspended(
                "no tool call is waiting for a result".into(),
            ));
        }
        let map = payload
            .as_object()
            .filter(|m| !m.is_empty())
            .ok_or_else(|| {
                EngineError::InvalidToolResults(
                    "tool results must be a non-empty object keyed by callId".into(),
                )
            })?;
        let waiting: Vec<String> = self
            .awaiting_results()
            .into_iter()
            .map(|e| e.call_id.clone())
            .collect();
        if let Some(id) = map.keys().find(|id| !waiting.contains(id)) {
            return Err(EngineError::UnknownCallId {
                call_id: id.clone(),
                message: format!("\"{id}\" is not among the calls waiting for a result"),
            });
        }
        self.now = now_ms;
        let results: Vec<(&String, String)> = map
            .iter()
            .map(|(id, v)| (id, self.model_result(id, output_to_result(v))))
            .collect();
        if let Some(run) = &mut self.state.run {
            for (id, result) in results {
                run.record(id, result);
            }
        }
        for id in map.keys() {
            // An external call "runs" when the app hands in its result.
            if let Some(a) = self.state.run.as_mut().and_then(|r| r.audit_mut(id)) {
                a.started_at = Some(now_ms);
            }
            self.end_tail_audit(id, AuditOutcome::Ok, now_ms);
        }
        if waiting.len() > map.len() {
            self.persist(None, Vec::new());
            self.finish(Outcome::AwaitingToolResults);
        } else {
            self.start(Phase::Running);
        }
        Ok(())
    }

    /// Sets (or with both fields `None`, clears) a per-thread policy for one tool.
    pub fn set_tool_policy(&mut self, tool: &str, policy: ToolPolicy) -> Result<(), EngineError> {
        self.expect_idle()?;
        if self.tools.get(tool).is_none() {
            return Err(EngineError::UnknownTool(tool.to_owned()));
        }
        if policy.is_empty() {
            self.state.policies.remove(tool);
        } else {
            self.state.policies.insert(tool.to_owned(), policy);
        }
        self.persist(None, Vec::new());
        Ok(())
    }

    /// On reload: a call whose execution was cut off is re-gated (or, for an idempotent
    /// tool, left to run again). Returns true when it changed the thread.
    pub fn recover(&mut self, now_ms: u64) -> bool {
        let Some(call_id) = self.state.run.as_ref().and_then(|r| r.started.clone()) else {
            return false;
        };
        if let Some(run) = &mut self.state.run {
            run.started = None;
        }
        let Some(tail) = self.state.tail.clone() else {
            return false;
        };
        let idempotent = tail
            .tool_calls()
            .and_then(|t| t.iter().find(|e| e.call_id == call_id))
            .and_then(|e| self.tools.get(&e.name))
            .is_some_and(|t| t.idempotent);
        if idempotent {
            self.persist(None, Vec::new());
            return true;
        }
        self.regate(&[call_id], REGATE_REASON, now_ms);
        true
    }

    /// Makes these calls of the tail pending again with `reason`, forgetting their decisions,
    /// and ends the run waiting for approval.
    fn regate(&mut self, call_ids: &[String], reason: &str, now_ms: u64) {
        let Some(mut tail) = self.state.tail.clone() else {
            return;
        };
        let run = self
            .state
            .run
            .get_or_insert_with(|| RunJournal::new(tail.id.clone()));
        for e in tail
            .tool_calls_mut()
            .into_iter()
            .flatten()
            .filter(|e| call_ids.contains(&e.call_id))
        {
            // Its record ends here, as the entry shows it before the re-gate; the new request
            // gets a record of its own.
            let regated = AuditOutcome::Regated;
            end_audit(Some(&mut *run), &mut self.ended_audit, e, regated, now_ms);
            self.state.audit_count += 1;
            run.audit
                .push(OpenAudit::new(self.state.audit_count, &e.call_id, now_ms));
            e.approval = Some(Approval::pending(Some(reason.to_owned())));
            run.gate(&e.call_id);
            run.forget_decision(&e.call_id);
            // It waits for a human again, for as long as a new call would.
            let at = self
                .tools
                .get(&e.name)
                .and_then(|t| t.approval_timeout)
                .map(|ms| now_ms.saturating_add(ms));
            run.set_deadline(&e.call_id, at);
        }
        let token = self.resume_token(now_ms);
        tail.set_meta(META_RESUME_TOKEN, Value::String(token));
        self.replace_tail(tail);
        self.finish(Outcome::AwaitingApproval);
    }

    /// The result of a call whose attempt this engine gave up on (an abort while `execute`
    /// never settled, or another tab taking over an expired lease) arrived after all. If the
    /// call is still waiting for a new decision and has no result, the result is kept: the
    /// call ran, with its approved inputs, and is no longer pending. Returns true when it
    /// changed the thread (a `Persist` follows). Never runs anything.
    pub fn late_result(
        &mut self,
        call_id: &str,
        outcome: Result<Value, String>,
        now_ms: u64,
    ) -> Result<bool, EngineError> {
        self.expect_idle()?;
        let Some(mut tail) = self.state.tail.clone() else {
            return Ok(false);
        };
        let Some(run) = self.state.run.as_mut() else {
            return Ok(false);
        };
        if run.has_result(call_id) || run.started.is_some() {
            return Ok(false);
        }
        let Some(e) = tail
            .tool_calls_mut()
            .and_then(|t| t.iter_mut().find(|e| e.call_id == call_id))
            .filter(|e| e.is_pending())
        else {
            return Ok(false);
        };
        if let Some(a) = e.approval.as_mut() {
            a.state = ApprovalState::Approved;
        }
        run.decide(call_id, true, &e.inputs);
        let ended = AuditOutcome::of_run(&outcome);
        let result = match &e.proposed_inputs {
            Some(proposed) => edited_result(proposed, &e.inputs, &tool_result(outcome)),
            None => tool_result(outcome),
        };
        run.record(call_id, result);
        // The re-gated request's record ends with the outcome of the attempt that did run,
        // undecided: nobody approved it again.
        end_audit(Some(run), &mut self.ended_audit, e, ended, now_ms);
        self.now = now_ms;
        self.replace_tail(tail);
        Ok(true)
    }

    /// Replaces every recorded result longer than `max_len` bytes by a short error result
    /// saying the tool ran but its result could not be stored (the browser's quota). Used when
    /// a write with a tool's result fails for lack of space: the call ran, so it must not look
    /// interrupted and be offered again. Returns true when something was replaced.
    pub fn shrink_results(&mut self, max_len: usize) -> bool {
        let in_run = self
            .state
            .run
            .as_mut()
            .is_some_and(|r| r.shrink_results(max_len));
        let in_tail = self
            .state
            .tail
            .as_mut()
            .is_some_and(|m| shrink_message_results(m, max_len));
        in_run || in_tail
    }

    /// Stops the run in progress without writing anything: the state is kept as this view
    /// last knew it (used when the stored state cannot even be read back).
    pub fn stop(&mut self) {
        self.phase = Phase::Idle;
        self.outbox.clear();
    }

    /// True right after `poll` returned a `Persist` that is the last write of the run (the
    /// run yields next, or ends with nothing more to do).
    pub fn run_ends_after_write(&self) -> bool {
        match self.outbox.front() {
            Some(Step::Yield(_)) => true,
            Some(_) => false,
            // A run that needs the model with its step budget spent yields next.
            None => match self.phase {
                Phase::Idle => true,
                Phase::NeedModel => self.steps >= self.config.max_steps,
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

    fn resume_token(&mut self, now_ms: u64) -> String {
        format!("run_{:016x}", self.ids.next_number(now_ms))
    }

    /// The gating precedence for one call (docs/design.md, "Approval semantics").
    fn gate(
        &self,
        tool: Option<&ToolSpec>,
        name: &str,
        parsed: Result<Map<String, Value>, String>,
    ) -> Gate {
        let Some(tool) = tool else {
            let offered: Vec<&str> = self.offered_tools().map(|t| t.name.as_str()).collect();
            return Gate::Refuse(error_result(
                code::UNKNOWN_TOOL,
                &format!(
                    "There is no tool named \"{name}\". Available tools: {}.",
                    offered.join(", ")
                ),
                &[],
            ));
        };
        if !self.tools.is_enabled(tool, &self.state.policies) {
            return Gate::Refuse(error_result(
                code::PERMISSION_DENIED,
                &format!("The tool \"{name}\" is disabled in this conversation. Do not call it."),
                &[],
            ));
        }
        let inputs = match parsed {
            Ok(inputs) => inputs,
            Err(why) => {
                return Gate::Refuse(error_result(
                    code::INPUT_VALIDATION,
                    &format!("The arguments for \"{name}\" are not a JSON object: {why}"),
                    &[],
                ));
            }
        };
        if let Err(errors) = schema::validate(&tool.schema, &Value::Object(inputs)) {
            let details: Vec<String> = errors.iter().map(ToString::to_string).collect();
            return Gate::Refuse(error_result(
                code::INPUT_VALIDATION,
                &format!(
                    "The arguments for \"{name}\" do not match its schema. Fix them and call the \
                     tool again."
                ),
                &details,
            ));
        }
        if self.tools.is_auto_approved(tool, &self.state.policies) {
            return Gate::Run;
        }
        match tool.require_approval {
            Some(true) => Gate::Approval(None),
            Some(false) => Gate::Run,
            None if tool.has_policy => Gate::AskPolicy,
            None => Gate::Run,
        }
    }

    /// The approval deadline of a call of tool `name` gated at `now_ms`, if its tool has a
    /// timeout.
    fn deadline(&self, name: &str, now_ms: u64) -> Option<u64> {
        let ms = self.tools.get(name)?.approval_timeout?;
        Some(now_ms.saturating_add(ms))
    }

    /// Writes the `tool_call` message with its gates; suspends if any call is gated.
    fn write_tool_call(&mut self, gating: Gating, now_ms: u64) {
        let Gating {
            text,
            usage,
            mut entries,
            gates,
        } = gating;
        let id = self.ids.next(now_ms);
        let mut run = RunJournal::new(id.clone());
        let mut gated = false;
        for (entry, gate) in entries.iter_mut().zip(gates) {
            // The policy's own string wins; else the tool's static `approvalReason`.
            let fallback = || self.tools.get(&entry.name)?.approval_reason.clone();
            match gate {
                Gate::Refuse(result) => run.record(&entry.call_id, result),
                Gate::Run => {}
                Gate::Approval(reason) => {
                    entry.approval = Some(Approval::pending(reason.or_else(fallback)));
                    gated = true;
                }
                // Resolved by `policy_verdicts` before we get here; fail closed regardless.
                Gate::AskPolicy => {
                    entry.approval = Some(Approval::pending(fallback()));
                    gated = true;
                }
            }
            if entry.approval.is_some() {
                run.gate(&entry.call_id);
                run.set_deadline(&entry.call_id, self.deadline(&entry.name, now_ms));
                self.state.audit_count += 1;
                run.audit.push(OpenAudit::new(
                    self.state.audit_count,
                    &entry.call_id,
                    now_ms,
                ));
            }
        }
        let mut msg = Message::tool_call(id, &text, entries);
        msg.usage = usage;
        if gated {
            let token = self.resume_token(now_ms);
            msg.set_meta(META_RESUME_TOKEN, Value::String(token));
        }
        self.state.run = Some(run);
        self.append(msg);
        if gated {
            self.finish(Outcome::AwaitingApproval);
        } else {
            self.phase = Phase::Running;
        }
    }

    /// One step of running the tail's calls in message order.
    fn advance_run(&mut self) {
        let (Some(tail), Some(run)) = (self.state.tail.as_ref(), self.state.run.as_mut()) else {
            // Nothing to run (defensive: Running is only entered with a journal).
            self.phase = Phase::NeedModel;
            return;
        };
        // A call that needs a decision runs only with an approving record for exactly its
        // inputs; a tail that says otherwise was changed outside a decision: re-gate.
        let undecided: Vec<String> = tail
            .tool_calls()
            .unwrap_or(&[])
            .iter()
            .filter(|e| !run.has_result(&e.call_id) && !is_rejected(e))
            .filter(|e| e.approval.is_some() || run.is_gated(&e.call_id))
            .filter(|e| {
                e.approval_state() != Some(ApprovalState::Approved)
                    || !run.approved_for(&e.call_id, &e.inputs)
            })
            .map(|e| e.call_id.clone())
            .collect();
        if !undecided.is_empty() {
            let now = self.now;
            self.regate(&undecided, UNRECORDED_REASON, now);
            return;
        }
        let Some(run) = self.state.run.as_mut() else {
            return;
        };
        let mut awaiting_external = false;
        let mut next = None;
        let mut ended = Vec::new();
        let entries = tail.tool_calls().unwrap_or(&[]);
        for e in entries {
            if run.has_result(&e.call_id) {
                continue;
            }
            if e.approval_state() == Some(ApprovalState::Expired) {
                run.record(&e.call_id, EXPIRED_TEXT.to_owned());
                ended.push((e, AuditOutcome::Expired));
                continue;
            }
            if is_rejected(e) {
                let reason = e.approval.as_ref().and_then(|a| a.reject_reason.as_deref());
                run.record(&e.call_id, rejection_text(reason));
                ended.push((e, AuditOutcome::Rejected));
                continue;
            }
            match self.tools.get(&e.name) {
                None => {
                    run.record(
                        &e.call_id,
                        error_result(
                            code::UNKNOWN_TOOL,
                            &format!("The tool \"{}\" is no longer available.", e.name),
                            &[],
                        ),
                    );
                    ended.push((e, AuditOutcome::ToolError));
                }
                Some(t) if t.external => awaiting_external = true,
                Some(_) => {
                    next = Some(ToolInvocation {
                        call_id: e.call_id.clone(),
                        tool: e.name.clone(),
                        inputs: e.inputs.clone(),
                    });
                    break;
                }
            }
        }
        let now = self.now;
        if let Some(inv) = &next {
            if let Some(a) = run.audit_mut(&inv.call_id) {
                a.started_at = Some(now);
            }
        }
        for (e, outcome) in ended {
            end_audit(Some(&mut *run), &mut self.ended_audit, e, outcome, now);
        }
        if let Some(inv) = next {
            run.started = Some(inv.call_id.clone());
            self.phase = Phase::WaitingTool(inv.call_id.clone());
            self.persist(None, Vec::new());
            self.outbox.push_back(Step::RunTool(inv));
            return;
        }
        if awaiting_external {
            self.persist(None, Vec::new());
            self.finish(Outcome::AwaitingToolResults);
            return;
        }
        // Every call has its result: one `tool_call_result` message, in message order.
        let entries: Vec<ToolEntry> = tail
            .tool_calls()
            .unwrap_or(&[])
            .iter()
            .map(|e| {
                let mut r = e.clone();
                r.result = run.result(&e.call_id).map(str::to_owned);
                r
            })
            .collect();
        let msg = Message::tool_call_result(self.ids.next(self.now), entries);
        self.state.run = None;
        self.append(msg);
        self.phase = Phase::NeedModel;
    }
}

/// Ends the open audit record of `e`'s call, if it has one, as `e` shows it now: the full
/// record goes out with the next `Persist`.
fn end_audit(
    run: Option<&mut RunJournal>,
    ended: &mut Vec<AuditRecord>,
    e: &ToolEntry,
    outcome: AuditOutcome,
    now_ms: u64,
) {
    if let Some(open) = run.and_then(|r| r.take_audit(&e.call_id)) {
        ended.push(AuditRecord::of(&open, e, Some((outcome, now_ms))));
    }
}

/// How the audit record of a call decided not to run ends.
fn not_run(e: &ToolEntry) -> AuditOutcome {
    if e.approval_state() == Some(ApprovalState::Expired) {
        AuditOutcome::Expired
    } else {
        AuditOutcome::Rejected
    }
}

/// Decided not to run: rejected by a human, or expired.
fn is_rejected(e: &ToolEntry) -> bool {
    matches!(
        e.approval_state(),
        Some(ApprovalState::Rejected | ApprovalState::Expired)
    )
}

/// Stages one checked decision on its entry. `approve` approves the inputs the entry shows
/// (edited or not); `reject` drops an edit, since nothing will run; an edit replaces the
/// inputs and keeps the model's own as `proposedInputs` while they differ.
fn apply_decision(e: &mut ToolEntry, decision: Decision) {
    let Some(a) = e.approval.as_mut() else {
        return;
    };
    match decision {
        Decision::Approve => {
            a.state = ApprovalState::Approved;
            a.reject_reason = None;
        }
        Decision::Reject(reason) => {
            a.state = ApprovalState::Rejected;
            a.reject_reason = reason;
            if let Some(proposed) = e.proposed_inputs.take() {
                e.inputs = proposed;
            }
        }
        Decision::Edit(inputs) => {
            a.state = ApprovalState::Approved;
            a.reject_reason = None;
            let proposed = e
                .proposed_inputs
                .take()
                .unwrap_or_else(|| std::mem::take(&mut e.inputs));
            if proposed != inputs {
                e.proposed_inputs = Some(proposed);
            }
            e.inputs = inputs;
        }
    }
}

fn unexpected(what: &str) -> EngineError {
    EngineError::Internal(format!("the engine was not waiting for {what}"))
}

/// The model's argument text as an object: `""` and `null` mean no arguments.
fn parse_arguments(raw: &str) -> Result<Map<String, Value>, String> {
    if raw.trim().is_empty() {
        return Ok(Map::new());
    }
    match serde_json::from_str::<Value>(raw) {
        Ok(Value::Object(m)) => Ok(m),
        Ok(Value::Null) => Ok(Map::new()),
        Ok(_) => Err("the arguments are JSON but not an object".into()),
        Err(e) => Err(format!("invalid JSON ({e})")),
    }
}

/// Call ids must be unique within a message (decisions are keyed by them); a provider that
/// sends none, repeats one, or sends `__proto__` (which a plain JS object cannot hold as a
/// key: `decisions[id] = …` would set its prototype) gets a stable derived id, itself checked
/// against every id taken so far.
fn unique_call_id(call: &ModelToolCall, index: usize, earlier: &[ToolEntry]) -> String {
    let taken = |id: &str| earlier.iter().any(|e| e.call_id == id);
    let base = if call.id.is_empty() || call.id == "__proto__" {
        format!("call_{index}")
    } else {
        call.id.clone()
    };
    if !taken(&base) {
        return base;
    }
    let mut n = index;
    loop {
        let id = format!("{base}_{n}");
        if !taken(&id) {
            return id;
        }
        n += 1;
    }
}

/// A tool's outcome as its result string.
fn tool_result(outcome: Result<Value, String>) -> String {
    match outcome {
        Ok(v) => output_to_result(&v),
        Err(message) => error_result(code::TOOL_ERROR, &message, &[]),
    }
}
