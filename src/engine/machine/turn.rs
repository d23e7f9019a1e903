//! A turn: the user's message (or a retry), the model's answer, and the tool-call message it
//! becomes once the approval policies have answered.

use super::*;
use crate::thread::MessageId;

impl Engine {
    /// A new user message starts a run.
    pub fn user_message(&mut self, text: &str, now_ms: u64) -> Result<(), EngineError> {
        let id = self.ids.next(now_ms);
        self.user_message_as(text, id, now_ms)
    }

    /// A new id for a message this engine will make: a message queued while its thread's
    /// store could not be reached keeps the id it is sent with later, so a copy that did
    /// land is recognised.
    pub fn new_message_id(&mut self, now_ms: u64) -> MessageId {
        self.ids.next(now_ms)
    }

    /// [`Engine::user_message`], stored under `id`.
    pub fn user_message_as(
        &mut self,
        text: &str,
        id: MessageId,
        now_ms: u64,
    ) -> Result<(), EngineError> {
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
        let msg = Message::user_text(id, text);
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
                entry.parameters = match &t.shown {
                    Value::Null => t.extra.clone(),
                    shown => shown.clone(),
                };
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

    pub(super) fn resume_token(&mut self, now_ms: u64) -> String {
        format!("run_{:016x}", self.ids.next_number(now_ms))
    }

    /// The gating precedence for one call (docs/design.md, "Approval semantics").
    pub(super) fn gate(
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
    pub(super) fn deadline(&self, name: &str, now_ms: u64) -> Option<u64> {
        let ms = self.tools.get(name)?.approval_timeout?;
        Some(now_ms.saturating_add(ms))
    }

    /// Writes the `tool_call` message with its gates; suspends if any call is gated.
    pub(super) fn write_tool_call(&mut self, gating: Gating, now_ms: u64) {
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
                }
                // Resolved by `policy_verdicts` before we get here; fail closed regardless.
                Gate::AskPolicy => {
                    entry.approval = Some(Approval::pending(fallback()));
                }
            }
            if entry.approval.is_some() {
                run.gate(&entry.call_id);
                self.state.audit_count += 1;
                let mut audit = OpenAudit::new(self.state.audit_count, &entry.call_id, now_ms);
                // A remembered grant decides it at once, as its maker: it runs with the rest
                // (docs/design.md, "Remembered grants").
                if let Some((grant, by)) = self.grant_for(&entry.name, &entry.inputs, now_ms) {
                    if let Some(a) = entry.approval.as_mut() {
                        a.state = ApprovalState::Approved;
                    }
                    run.decide(&entry.call_id, true, &entry.inputs);
                    if let Some(d) = run.decisions.last_mut() {
                        d.grant = Some(grant.clone());
                    }
                    audit.decided_at = Some(now_ms);
                    audit.decided_by = by;
                    audit.grant = Some(grant);
                } else {
                    gated = true;
                    run.set_deadline(&entry.call_id, self.deadline(&entry.name, now_ms));
                }
                run.audit.push(audit);
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
}

/// The model's argument text as an object: `""` and `null` mean no arguments.
pub(super) fn parse_arguments(raw: &str) -> Result<Map<String, Value>, String> {
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
pub(super) fn unique_call_id(call: &ModelToolCall, index: usize, earlier: &[ToolEntry]) -> String {
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
