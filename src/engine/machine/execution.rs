//! Execution: running the tail's calls in message order, their outcomes, external tools'
//! results, and the `tool_call_result` message.

use super::*;

impl Engine {
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
    /// (it never ran) and the run stops; `retry` continues it later. On a remote thread the
    /// store handler cannot tell "it never ran" from a device that ran it and says otherwise,
    /// so it lets a mark go only with the call's result or a new gate (docs/design.md,
    /// "Threat model"): the call is gated again, as a cut-off one is.
    pub fn cancel_tool(&mut self, call_id: &str) -> Result<(), EngineError> {
        match &self.phase {
            Phase::WaitingTool(id) if id == call_id => {}
            _ => return Err(unexpected("a cancelled tool")),
        }
        if self.config.tools_elsewhere {
            self.phase = Phase::Idle;
            self.recover(self.now);
            return Ok(());
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

    /// The result string the model gets for a call that ran: the tool's own, or, for a call
    /// a human edited, [`edited_result`] around it.
    pub(super) fn model_result(&self, call_id: &str, result: String) -> String {
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

    /// Outputs of external tools (docs/design.md, "Approval semantics"), by call id; partial
    /// submissions are kept.
    pub fn submit_tool_results(
        &mut self,
        results: &ToolResults,
        now_ms: u64,
    ) -> Result<(), EngineError> {
        self.expect_idle()?;
        let status = self.status();
        if status != ThreadStatus::AwaitingToolResults && status != ThreadStatus::AwaitingApproval {
            return Err(EngineError::NotSuspended(
                "no tool call is waiting for a result".into(),
            ));
        }
        let waiting: Vec<String> = self
            .awaiting_results()
            .into_iter()
            .map(|e| e.call_id.clone())
            .collect();
        if let Some(id) = results
            .call_ids()
            .find(|id| !waiting.iter().any(|w| w == id))
        {
            return Err(EngineError::UnknownCallId {
                call_id: id.to_owned(),
                message: format!("\"{id}\" is not among the calls waiting for a result"),
            });
        }
        self.now = now_ms;
        let recorded: Vec<(&String, String)> = results
            .iter()
            .map(|(id, v)| (id, self.model_result(id, output_to_result(v))))
            .collect();
        if let Some(run) = &mut self.state.run {
            for (id, result) in recorded {
                run.record(id, result);
            }
        }
        for id in results.call_ids() {
            // An external call "runs" when the app hands in its result.
            if let Some(a) = self.state.run.as_mut().and_then(|r| r.audit_mut(id)) {
                a.started_at = Some(now_ms);
            }
            self.end_tail_audit(id, AuditOutcome::Ok, now_ms);
        }
        if waiting.len() > results.len() {
            self.persist(None, Vec::new());
            self.finish(Outcome::AwaitingToolResults);
        } else {
            self.start(Phase::Running);
        }
        Ok(())
    }

    /// One step of running the tail's calls in message order.
    pub(super) fn advance_run(&mut self) {
        // A call a remembered grant approved runs only while the grant covers it: one revoked
        // (or expired) before the call started asks a human.
        let gone: Vec<String> = self
            .tail_calls()
            .iter()
            .filter(|e| {
                self.state.run.as_ref().is_some_and(|run| {
                    !run.has_result(&e.call_id)
                        && run.started.as_ref() != Some(&e.call_id)
                        && self.grant_gone(run, e)
                })
            })
            .map(|e| e.call_id.clone())
            .collect();
        if !gone.is_empty() {
            let now = self.now;
            self.regate(&gone, GRANT_GONE_REASON, now);
            return;
        }
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
                    || !allowed_here(self.tools.get(&e.name), e)
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
        let mut elsewhere = false;
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
                // Calls run in message order: this one, and those after it, wait for a
                // device that has its tool.
                None if self.config.tools_elsewhere => {
                    elsewhere = true;
                    break;
                }
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
        if elsewhere {
            self.persist(None, Vec::new());
            self.finish(Outcome::AwaitingDevice);
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

/// Whether this device's tool allows the decision that approved `e`: one made where the tool
/// is not defined (an approver's phone, the store handler) was not checked against its
/// `allowedDecisions` or, for an edit, its schema. A call it does not allow is gated again.
fn allowed_here(tool: Option<&ToolSpec>, e: &ToolEntry) -> bool {
    let Some(t) = tool else {
        return true;
    };
    if e.proposed_inputs.is_none() {
        return t.allowed_decisions.allows(DecisionKind::Approve);
    }
    t.allowed_decisions.allows(DecisionKind::Edit)
        && schema::validate(&t.schema, &Value::Object(e.inputs.clone())).is_ok()
}

/// Ends the open audit record of `e`'s call, if it has one, as `e` shows it now: the full
/// record goes out with the next `Persist`.
pub(super) fn end_audit(
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
pub(super) fn not_run(e: &ToolEntry) -> AuditOutcome {
    if e.approval_state() == Some(ApprovalState::Expired) {
        AuditOutcome::Expired
    } else {
        AuditOutcome::Rejected
    }
}

/// A tool's outcome as its result string.
pub(super) fn tool_result(outcome: Result<Value, String>) -> String {
    match outcome {
        Ok(v) => output_to_result(&v),
        Err(message) => error_result(code::TOOL_ERROR, &message, &[]),
    }
}
