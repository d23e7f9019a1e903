//! A scripted driver for the engine: a model that replays outputs, tools that answer from a
//! closure, and a store that applies commits to a message list. It logs every step so tests
//! read like transcripts.
#![allow(dead_code)]

pub mod forge;

use gatehouse_agent::engine::*;
use gatehouse_agent::thread::{Message, ToolEntry};
use serde_json::{Value, json};
use std::collections::VecDeque;

pub const T0: u64 = 1_795_000_000_000;

#[derive(Default, Clone)]
pub struct Stored {
    pub messages: Vec<Message>,
    pub run: Option<RunJournal>,
    pub policies: ToolPolicies,
    pub writes: usize,
    /// The status the last commit carried (what `Agent.listThreads` reports).
    pub status: Option<ThreadStatus>,
    /// The audit trail as the store keeps it: put by `seq`.
    pub audit: Vec<AuditRecord>,
    /// Every commit applied, in order (what a store would have been sent).
    pub commits: Vec<Commit>,
}

impl Stored {
    pub fn state(&self) -> ThreadState {
        ThreadState {
            tail: self.messages.last().cloned(),
            policies: self.policies.clone(),
            run: self.run.clone(),
            audit_count: self.audit.len() as u64,
        }
    }

    pub fn apply(&mut self, c: Commit) {
        self.commits.push(c.clone());
        if let Some(t) = c.replace_tail {
            let last = self.messages.last_mut().expect("replace_tail needs a tail");
            assert_eq!(last.id, t.id, "the tail is rewritten in place");
            *last = t;
        }
        self.messages.extend(c.append);
        self.run = c.run;
        self.policies = c.policies;
        self.status = Some(c.status);
        for a in c.audit {
            match self.audit.iter_mut().find(|b| b.seq == a.seq) {
                Some(b) => *b = a,
                None => {
                    assert_eq!(
                        a.seq,
                        self.audit.len() as u64 + 1,
                        "audit seqs follow each other"
                    );
                    self.audit.push(a);
                }
            }
        }
        self.writes += 1;
    }
}

pub type ToolFn = Box<dyn FnMut(&ToolInvocation) -> Result<Value, String>>;
pub type PolicyFn = Box<dyn FnMut(&PolicyQuery) -> PolicyVerdict>;

pub struct Harness {
    pub engine: Engine,
    pub tools: ToolSet,
    pub store: Stored,
    pub model: VecDeque<ModelOutput>,
    pub tool_fn: ToolFn,
    pub policy_fn: PolicyFn,
    pub log: Vec<String>,
    pub executed: Vec<(String, Value)>,
    pub now: u64,
    /// Simulate the page dying when this call starts executing.
    pub die_on_tool: Option<String>,
    /// The model calls seen, with the history length they were made with.
    pub model_calls: usize,
}

impl Harness {
    pub fn new(tools: Vec<ToolSpec>) -> Self {
        Self::with_config(tools, EngineConfig::default())
    }

    pub fn with_config(tools: Vec<ToolSpec>, config: EngineConfig) -> Self {
        let tools = ToolSet::new(tools);
        Harness {
            engine: Engine::new(tools.clone(), config, ThreadState::default(), 5),
            tools,
            store: Stored::default(),
            model: VecDeque::new(),
            tool_fn: Box::new(|inv| Ok(json!({ "ok": inv.tool }))),
            policy_fn: Box::new(|_| PolicyVerdict::Require(None)),
            log: Vec::new(),
            executed: Vec::new(),
            now: T0,
            die_on_tool: None,
            model_calls: 0,
        }
    }

    pub fn script(&mut self, outputs: impl IntoIterator<Item = ModelOutput>) -> &mut Self {
        self.model.extend(outputs);
        self
    }

    fn tick(&mut self) -> u64 {
        self.now += 1000;
        self.now
    }

    /// Drains the engine, carrying out each step. Returns the outcome of the run, or None if
    /// the page "died" or the engine went idle without yielding.
    pub fn drive(&mut self) -> Option<Outcome> {
        while let Some(step) = self.engine.poll() {
            match step {
                Step::Persist(c) => {
                    self.log.push(describe_commit(&c));
                    self.store.apply(c);
                }
                Step::CallModel => {
                    self.log.push("call_model".into());
                    self.model_calls += 1;
                    match self.model.pop_front() {
                        Some(out) => {
                            let now = self.tick();
                            self.engine
                                .model_output(out, now)
                                .expect("model output accepted");
                        }
                        None => {
                            self.log.push("model_failed".into());
                            self.engine.model_failed();
                        }
                    }
                }
                Step::EvaluatePolicies(qs) => {
                    let ids: Vec<&str> = qs.iter().map(|q| q.call_id.as_str()).collect();
                    self.log.push(format!("policies[{}]", ids.join(",")));
                    let verdicts = qs
                        .iter()
                        .map(|q| (q.call_id.clone(), (self.policy_fn)(q)))
                        .collect();
                    let now = self.tick();
                    self.engine.policy_verdicts(verdicts, now).unwrap();
                }
                Step::RunTool(inv) => {
                    self.log.push(format!("run_tool({})", inv.call_id));
                    if self.die_on_tool.as_deref() == Some(inv.call_id.as_str()) {
                        self.log.push("page_died".into());
                        return None;
                    }
                    self.executed
                        .push((inv.call_id.clone(), Value::Object(inv.inputs.clone())));
                    let out = (self.tool_fn)(&inv);
                    let now = self.tick();
                    self.engine.tool_outcome(&inv.call_id, out, now).unwrap();
                }
                Step::Yield(o) => {
                    self.log.push(format!("yield({})", describe_outcome(o)));
                    self.assert_stored_status();
                    return Some(o);
                }
            }
        }
        self.assert_stored_status();
        None
    }

    /// Whenever a run stops, the record says what `status()` says: a thread list reads only
    /// the record, and must agree with an open agent.
    fn assert_stored_status(&self) {
        if self.store.writes > 0 {
            assert_eq!(
                self.store.status,
                Some(self.engine.status()),
                "the last commit's status is the engine's status when the run stops"
            );
        }
    }

    /// The start most scenarios share: the user says `message`, and the model answers with
    /// one call of the gated `delete_file` (`call_id`, `{"path": path}`). Returns how the chat
    /// ended (awaiting approval, unless the scenario's tools say otherwise).
    pub fn one_gated_call(&mut self, call_id: &str, path: &str, message: &str) -> Option<Outcome> {
        self.script([calls(vec![call(
            call_id,
            "delete_file",
            json!({"path": path}),
        )])]);
        self.chat(message).expect("the chat runs")
    }

    pub fn chat(&mut self, text: &str) -> Result<Option<Outcome>, EngineError> {
        let now = self.tick();
        self.engine.user_message(text, now)?;
        Ok(self.drive())
    }

    pub fn decide(&mut self, payload: Value) -> Result<Option<Outcome>, EngineError> {
        self.decide_by(payload, None)
    }

    /// Decisions made by `by` (the audit trail's `decidedBy`).
    pub fn decide_by(
        &mut self,
        payload: Value,
        by: Option<&str>,
    ) -> Result<Option<Outcome>, EngineError> {
        let now = self.tick();
        self.engine
            .submit_decisions(&Decisions::from_json(&payload)?, now, by)?;
        Ok(self.drive())
    }

    pub fn results(&mut self, payload: Value) -> Result<Option<Outcome>, EngineError> {
        let now = self.tick();
        self.engine
            .submit_tool_results(&ToolResults::from_json(&payload)?, now)?;
        Ok(self.drive())
    }

    pub fn retry(&mut self) -> Result<Option<Outcome>, EngineError> {
        let now = self.tick();
        self.engine.retry(now)?;
        Ok(self.drive())
    }

    /// A reload: a fresh engine (of the same configuration) over what was stored, then
    /// recovery.
    pub fn reload(&mut self) {
        self.engine = Engine::new(
            self.tools.clone(),
            self.engine.config(),
            self.store.state(),
            9,
        );
        let now = self.tick();
        if self.engine.recover(now) {
            self.log.push("recover".into());
            self.drive();
        }
    }

    pub fn store_apply(&mut self, c: Commit) {
        self.store.apply(c);
    }

    pub fn take_log(&mut self) -> Vec<String> {
        std::mem::take(&mut self.log)
    }

    pub fn thread(&self) -> Value {
        serde_json::to_value(&self.store.messages).unwrap()
    }

    pub fn tail(&self) -> &Message {
        self.store.messages.last().expect("a tail")
    }

    pub fn tail_entry(&self, call_id: &str) -> &ToolEntry {
        let tail = self.tail();
        tail.tool_calls()
            .or_else(|| tail.tool_results())
            .and_then(|t| t.iter().find(|e| e.call_id == call_id))
            .expect("entry in tail")
    }

    /// The entry of a call in the latest `tool_call_result` message.
    pub fn result_of(&self, call_id: &str) -> Option<String> {
        self.store
            .messages
            .iter()
            .rev()
            .filter_map(|m| m.tool_results())
            .flat_map(|t| t.iter())
            .find(|e| e.call_id == call_id)
            .and_then(|e| e.result.clone())
    }
}

pub fn describe_commit(c: &Commit) -> String {
    let mut parts = Vec::new();
    if let Some(t) = &c.replace_tail {
        parts.push(format!("~{}", kind(t)));
    }
    for m in &c.append {
        parts.push(format!("+{}", kind(m)));
    }
    if let Some(r) = &c.run {
        if let Some(s) = &r.started {
            parts.push(format!("started:{s}"));
        }
    }
    if parts.is_empty() {
        parts.push("record".into());
    }
    format!("persist({})", parts.join(" "))
}

fn kind(m: &Message) -> String {
    use gatehouse_agent::thread::{MessageKind, Role};
    match (&m.role, &m.kind) {
        (Role::User, MessageKind::Plain) => "user".into(),
        (Role::Assistant, MessageKind::Plain) => "assistant".into(),
        (_, MessageKind::ToolCall(_)) => "tool_call".into(),
        (_, MessageKind::ToolCallResult(_)) => "tool_call_result".into(),
    }
}

/// A run that ended with the model's answer, before `max_steps`.
pub const COMPLETED: Option<Outcome> = Some(Outcome::Completed {
    max_steps_reached: false,
});

pub fn describe_outcome(o: Outcome) -> &'static str {
    match o {
        Outcome::Completed {
            max_steps_reached: false,
        } => "completed",
        Outcome::Completed {
            max_steps_reached: true,
        } => "max_steps",
        Outcome::AwaitingApproval => "awaiting_approval",
        Outcome::AwaitingToolResults => "awaiting_tool_results",
        Outcome::AwaitingDevice => "awaiting_device",
    }
}

pub fn call(id: &str, name: &str, args: Value) -> ModelToolCall {
    ModelToolCall::new(id, name, args.to_string())
}

pub fn calls(list: Vec<ModelToolCall>) -> ModelOutput {
    ModelOutput {
        stop_reason: Some("tool_use".into()),
        ..ModelOutput::calls(list)
    }
}

pub fn answer(text: &str) -> ModelOutput {
    ModelOutput {
        stop_reason: Some("end_turn".into()),
        ..ModelOutput::text(text)
    }
}

pub fn path_schema() -> Value {
    json!({ "type": "object", "properties": { "path": { "type": "string" } }, "required": ["path"] })
}

/// `delete_file`: always gated (flat flag). `send_email`: gated by a policy. `list_files`: not
/// gated. `open_ticket`: external (no execute).
pub fn standard_tools() -> Vec<ToolSpec> {
    let mut delete = ToolSpec::new("delete_file");
    delete.description = Some("Delete a file from the filesystem".into());
    delete.schema = path_schema();
    delete.require_approval = Some(true);

    let mut email = ToolSpec::new("send_email");
    email.description = Some("Send an email to a recipient".into());
    email.schema = json!({ "type": "object", "properties": { "to": { "type": "string" },
        "subject": { "type": "string" } }, "required": ["to"] });
    email.has_policy = true;

    let mut list = ToolSpec::new("list_files");
    list.description = Some("List files in a folder".into());

    let mut ticket = ToolSpec::new("open_ticket");
    ticket.description = Some("Open a support ticket".into());
    ticket.external = true;

    vec![delete, email, list, ticket]
}

/// Decisions in the JS API's JSON form (a test's payload is always well formed).
pub fn decisions(payload: Value) -> Decisions {
    Decisions::from_json(&payload).expect("well-formed decisions")
}

/// A gated call approved by the browser's `by: "mallory"`, run, and answered: every commit
/// the engine made on the way (what a remote store sends; tests/store_wire.rs and the store
/// handler's fixtures, tests/server_fixtures.rs).
pub fn approved_run() -> Vec<Commit> {
    let mut h = Harness::new(standard_tools());
    h.one_gated_call("c1", "/tmp/a.txt", "delete /tmp/a.txt");
    h.script([answer("deleted")]);
    h.decide_by(json!({"c1": "approve"}), Some("mallory"))
        .expect("the decision is taken");
    assert_eq!(h.executed.len(), 1, "the approved call ran");
    h.store.commits.clone()
}
