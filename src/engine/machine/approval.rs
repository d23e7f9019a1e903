//! Approvals: decisions on the tail's gated calls, their deadlines, and per-thread tool
//! policies (docs/design.md, "Approval semantics", "Approval expiry").

use super::*;

impl Engine {
    /// Human decisions (docs/design.md, "Approval semantics"). Partial and revisable until every
    /// gated entry is decided.
    ///
    /// `by` (who decided, as the app names them) goes into the calls' audit records.
    pub fn submit_decisions(
        &mut self,
        decisions: &Decisions,
        now_ms: u64,
        by: Option<&str>,
    ) -> Result<(), EngineError> {
        self.expect_idle()?;
        let Some(tail) = self.tail().filter(|t| t.is_suspended()) else {
            return Err(EngineError::NotSuspended(
                "no tool call is awaiting approval".into(),
            ));
        };
        let run = self.state.run.clone();
        let mut tail = tail.clone();
        let entries = tail
            .tool_calls_mut()
            .map(std::mem::take)
            .unwrap_or_default();
        let mut entries = entries;
        // Check everything before changing anything: a refused payload stages nothing.
        for (call_id, _) in decisions.iter() {
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
        for (call_id, decision) in decisions.iter() {
            if let Some(e) = entries.iter().find(|e| e.call_id == *call_id) {
                self.check_decision(e, decision)?;
            }
        }
        let journal = self
            .state
            .run
            .get_or_insert_with(|| RunJournal::new(tail.id.clone()));
        for (call_id, decision) in decisions.iter() {
            if let Some(e) = entries.iter_mut().find(|e| e.call_id == *call_id) {
                apply_decision(e, decision.clone());
                // The record is what lets the call run, for exactly the inputs the entry now
                // shows; the tail is what a UI reads.
                let approved = e.approval_state() == Some(ApprovalState::Approved);
                journal.decide(call_id, approved, &e.inputs);
                if let Some(a) = journal.audit_mut(call_id) {
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
    pub(super) fn settle(&mut self, mut tail: Message, entries: Vec<ToolEntry>, now_ms: u64) {
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
    pub(super) fn check_decision(
        &self,
        e: &ToolEntry,
        decision: &Decision,
    ) -> Result<(), EngineError> {
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
            // A thread shared with other devices (a remote thread, or the store handler's
            // own engine): the device that runs the call checks the edit against its tool
            // before running it (`advance_run`).
            if self.config.tools_elsewhere {
                return Ok(());
            }
            return Err(invalid(format!(
                "cannot edit \"{}\": this agent has no tool \"{}\" to check the inputs against",
                e.call_id, e.name
            )));
        };
        schema::validate(&tool.schema, inputs).map_err(|errors| {
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
}

/// Stages one checked decision on its entry. `approve` approves the inputs the entry shows
/// (edited or not); `reject` drops an edit, since nothing will run; an edit replaces the
/// inputs and keeps the model's own as `proposedInputs` while they differ.
pub(super) fn apply_decision(e: &mut ToolEntry, decision: Decision) {
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
            // `Decisions` holds only object inputs.
            let Value::Object(inputs) = inputs else {
                return;
            };
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
