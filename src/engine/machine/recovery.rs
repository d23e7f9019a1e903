//! Recovery: a call cut off by a closed page is re-gated, a late result is kept, an
//! unstorable result is shrunk (docs/design.md, "The run journal", "Late results").

use super::*;

impl Engine {
    /// On reload: a call whose execution was cut off is re-gated (or, for an idempotent
    /// tool, left to run again: not on a remote thread, whose store handler lets a "started"
    /// mark go only with the call's result or a new gate, since it cannot tell an idempotent
    /// tool from a device that says so: docs/design.md, "Threat model"). Returns true when it
    /// changed the thread.
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
        let idempotent = !self.config.tools_elsewhere
            && tail
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
    pub(super) fn regate(&mut self, call_ids: &[String], reason: &str, now_ms: u64) {
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
    /// changed the thread (a `Persist` follows). Never runs anything. While the journal still
    /// marks a call started (the run that ran it is not recovered yet: its re-gate could not
    /// be written, or a live run elsewhere holds it), it is refused with `conflict`, not
    /// dropped: the result can be offered again once the thread is recovered.
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
        if run.has_result(call_id) {
            return Ok(false);
        }
        if let Some(started) = &run.started {
            return Err(EngineError::Conflict(format!(
                "call {started:?} is still marked started: the run must be recovered before a \
                 late result is recorded. Nothing was stored."
            )));
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
}
