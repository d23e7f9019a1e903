//! What the engine knows of a thread (its tail, its policies, the journal of a run in
//! progress) and what it asks the store to write.

use super::audit::{AuditRecord, OpenAudit};
use super::tools::ToolPolicies;
use crate::thread::context::RequestSize;
use crate::thread::{Message, MessageId};
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

/// One finished call of a run: its result string as the model will see it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct CallResult {
    pub call_id: String,
    pub result: String,
}

/// A human decision as `submit_decisions` recorded it, for exactly these inputs. A gated call
/// runs only when the journal holds an approving record whose inputs equal the entry's: the
/// `approval` fields of the stored tail are what a UI reads, never what lets a call run
/// (docs/design.md, "The decision journal").
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct DecisionRecord {
    pub call_id: String,
    pub approved: bool,
    pub inputs: Map<String, Value>,
    /// The remembered grant that approved the call instead of a human (docs/design.md,
    /// "Remembered grants"): the call runs only while the grant still covers it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub grant: Option<String>,
}

/// The execution journal of the tail `tool_call` message while its calls are being decided,
/// run or awaited. It lives in the thread record, beside the messages, so the message JSON stays
/// exactly the documented shape. It exists from the moment the `tool_call` message is written
/// until its `tool_call_result` message is.
///
/// `gated` and `decisions` are absent in schema 1 records: a call approved there has no
/// record, so it is re-gated rather than run (the safe reading of data we cannot vouch for).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct RunJournal {
    /// The `tool_call` message this journal belongs to (always the tail while it exists).
    pub call_message_id: MessageId,
    /// Results known so far, in the order they became known.
    pub results: Vec<CallResult>,
    /// A call whose `execute` began and has not finished. Written before the tool runs, cleared
    /// in the same write as its result; found set on reload, it means the page died mid-call.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub started: Option<String>,
    /// Calls that were gated when the message was written, or re-gated since: each needs an
    /// approving `DecisionRecord` to run, whatever the tail says.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub gated: Vec<String>,
    /// The decisions made so far (last write wins per call).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub decisions: Vec<DecisionRecord>,
    /// Approval deadlines of gated calls whose tool has an `approvalTimeout`, by call id.
    /// Absent when no call has one, so threads without timeouts store what they always did.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub deadlines: Vec<CallDeadline>,
    /// What the journal keeps of the audit records of gated calls that have not ended yet
    /// (docs/design.md, "The audit trail"). Absent when there are none.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub audit: Vec<OpenAudit>,
}

/// When a gated call expires (docs/design.md, "Approval expiry"): `at`, in ms since the epoch,
/// is the time it was gated plus its tool's `approvalTimeout`. A decision at `at` or later is
/// too late.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct CallDeadline {
    pub call_id: String,
    pub at: u64,
}

impl RunJournal {
    pub fn new(call_message_id: MessageId) -> Self {
        RunJournal {
            call_message_id,
            results: Vec::new(),
            started: None,
            gated: Vec::new(),
            decisions: Vec::new(),
            deadlines: Vec::new(),
            audit: Vec::new(),
        }
    }

    /// The open audit record of a call, if it has one (it was gated in this run).
    pub fn audit(&self, call_id: &str) -> Option<&OpenAudit> {
        self.audit.iter().find(|a| a.call_id == call_id)
    }

    /// The open audit record of a call, if it has one.
    pub fn audit_mut(&mut self, call_id: &str) -> Option<&mut OpenAudit> {
        self.audit.iter_mut().find(|a| a.call_id == call_id)
    }

    /// Removes and returns a call's open audit record (it has ended).
    pub fn take_audit(&mut self, call_id: &str) -> Option<OpenAudit> {
        let i = self.audit.iter().position(|a| a.call_id == call_id)?;
        Some(self.audit.remove(i))
    }

    /// Sets (or with `None` clears) a call's approval deadline.
    pub fn set_deadline(&mut self, call_id: &str, at: Option<u64>) {
        self.deadlines.retain(|d| d.call_id != call_id);
        if let Some(at) = at {
            self.deadlines.push(CallDeadline {
                call_id: call_id.to_owned(),
                at,
            });
        }
    }

    pub fn deadline(&self, call_id: &str) -> Option<u64> {
        self.deadlines
            .iter()
            .find(|d| d.call_id == call_id)
            .map(|d| d.at)
    }

    /// Records a decision (replacing an earlier one for the same call).
    pub fn decide(&mut self, call_id: &str, approved: bool, inputs: &Map<String, Value>) {
        self.forget_decision(call_id);
        self.decisions.push(DecisionRecord {
            call_id: call_id.to_owned(),
            approved,
            inputs: inputs.clone(),
            grant: None,
        });
    }

    /// The grant whose approval of `call_id` the journal holds, if a grant approved it.
    pub fn granted_by(&self, call_id: &str) -> Option<&str> {
        self.decisions
            .iter()
            .find(|d| d.call_id == call_id && d.approved)
            .and_then(|d| d.grant.as_deref())
    }

    pub fn forget_decision(&mut self, call_id: &str) {
        self.decisions.retain(|d| d.call_id != call_id);
    }

    /// Marks a call as needing a recorded decision before it may run.
    pub fn gate(&mut self, call_id: &str) {
        if !self.gated.iter().any(|g| g == call_id) {
            self.gated.push(call_id.to_owned());
        }
    }

    pub fn is_gated(&self, call_id: &str) -> bool {
        self.gated.iter().any(|g| g == call_id)
    }

    /// True when a decision call approved this call for exactly `inputs`.
    pub fn approved_for(&self, call_id: &str, inputs: &Map<String, Value>) -> bool {
        self.decisions
            .iter()
            .any(|d| d.call_id == call_id && d.approved && d.inputs == *inputs)
    }

    pub fn result(&self, call_id: &str) -> Option<&str> {
        self.results
            .iter()
            .find(|r| r.call_id == call_id)
            .map(|r| r.result.as_str())
    }

    pub fn has_result(&self, call_id: &str) -> bool {
        self.result(call_id).is_some()
    }

    /// See [`Commit::shrink_results`].
    pub fn shrink_results(&mut self, max_len: usize) -> bool {
        let mut changed = false;
        for r in self.results.iter_mut().filter(|r| r.result.len() > max_len) {
            r.result = super::results::unstorable_result(r.result.len());
            changed = true;
        }
        changed
    }

    pub fn record(&mut self, call_id: &str, result: String) {
        if let Some(r) = self.results.iter_mut().find(|r| r.call_id == call_id) {
            r.result = result;
        } else {
            self.results.push(CallResult {
                call_id: call_id.to_owned(),
                result,
            });
        }
    }
}

/// The engine's view of a thread: enough to continue it without reading its history.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct ThreadState {
    pub tail: Option<Message>,
    pub policies: ToolPolicies,
    pub run: Option<RunJournal>,
    /// How many audit records the thread has: the next gated call's record is `seq + 1`.
    pub audit_count: u64,
}

/// One atomic write: the store applies all of it, with the thread record, or none of it.
/// Serialized only where a commit crosses a network to a server store (`store::wire`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct Commit {
    /// The current tail, rewritten in place (same `__id`).
    #[serde(default)]
    pub replace_tail: Option<Message>,
    /// New messages after the tail, oldest first; the last becomes the tail.
    #[serde(default)]
    pub append: Vec<Message>,
    /// The journal after this write (`None` clears it).
    pub run: Option<RunJournal>,
    /// The policies after this write.
    #[serde(default)]
    pub policies: ToolPolicies,
    /// Where the thread stands after this write, as the engine that made it sees it (it
    /// knows which tools are external). Stored in the record, so a thread list can tell an
    /// unanswered message from an answered one without reading messages.
    pub status: ThreadStatus,
    /// Audit records to store (put by `seq`, so a later version of a record replaces an
    /// earlier one): every open record of the journal, and those that ended in this step.
    #[serde(default)]
    pub audit: Vec<AuditRecord>,
    /// The estimated size of the request behind an answer this commit appends, for the
    /// context window's calibration. The engine leaves it `None`; the driver, which sized the
    /// request, fills it in.
    #[serde(default)]
    pub request_size: Option<RequestSize>,
    /// The MCP tool lists to store in the record when they changed (docs/design.md, "MCP
    /// tools"). The engine leaves it `None`; the driver, which lists them, fills it in.
    pub mcp_tools: Option<serde_json::Value>,
}

impl Commit {
    /// This commit followed by `next`, as one write. `next` was made after this one was
    /// applied, so its tail rewrite targets this commit's last message.
    pub fn then(mut self, next: Commit) -> Commit {
        if let Some(tail) = next.replace_tail {
            match self.append.last_mut() {
                Some(last) => *last = tail,
                None => self.replace_tail = Some(tail),
            }
        }
        self.append.extend(next.append);
        self.run = next.run;
        self.policies = next.policies;
        self.status = next.status;
        self.audit
            .retain(|a| next.audit.iter().all(|b| b.seq != a.seq));
        self.audit.extend(next.audit);
        self.request_size = next.request_size.or(self.request_size);
        self.mcp_tools = next.mcp_tools.or(self.mcp_tools);
        self
    }
}

impl Commit {
    /// Replaces every result longer than `max_len` bytes, in the journal and in the messages
    /// written, by [`unstorable_result`]. True when something was replaced.
    ///
    /// [`unstorable_result`]: super::results::unstorable_result
    pub fn shrink_results(&mut self, max_len: usize) -> bool {
        let mut changed = self.run.as_mut().is_some_and(|r| r.shrink_results(max_len));
        for m in self.append.iter_mut().chain(self.replace_tail.as_mut()) {
            changed |= shrink_message_results(m, max_len);
        }
        changed
    }
}

/// Shrinks the results of a `tool_call_result` message (see [`Commit::shrink_results`]).
pub(super) fn shrink_message_results(m: &mut Message, max_len: usize) -> bool {
    let mut changed = false;
    for e in m.tool_results_mut().into_iter().flatten() {
        if let Some(r) = e.result.as_mut().filter(|r| r.len() > max_len) {
            *r = super::results::unstorable_result(r.len());
            changed = true;
        }
    }
    changed
}

/// Where a thread stands, derived from its state alone.
/// Stored by name (`as_str`) in the thread record, read back with `parse`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ThreadStatus {
    /// Nothing waits; a new message may be sent.
    Idle,
    /// The tail has pending approvals.
    AwaitingApproval,
    /// External tool calls wait for `submitToolResults`.
    AwaitingToolResults,
    /// A run stopped between two steps (the page closed, or the model call failed): `retry`
    /// continues it.
    Interrupted,
    /// The next step needs a tool or the model that only another device has (a remote
    /// thread decided on an approver's phone): a device that has it goes on by itself.
    AwaitingDevice,
}

impl ThreadStatus {
    pub fn as_str(self) -> &'static str {
        match self {
            ThreadStatus::Idle => "idle",
            ThreadStatus::AwaitingApproval => "awaiting_approval",
            ThreadStatus::AwaitingToolResults => "awaiting_tool_results",
            ThreadStatus::Interrupted => "interrupted",
            ThreadStatus::AwaitingDevice => "awaiting_device",
        }
    }

    /// The inverse of [`ThreadStatus::as_str`]; `None` for any other text.
    pub fn parse(s: &str) -> Option<Self> {
        [
            ThreadStatus::Idle,
            ThreadStatus::AwaitingApproval,
            ThreadStatus::AwaitingToolResults,
            ThreadStatus::Interrupted,
            ThreadStatus::AwaitingDevice,
        ]
        .into_iter()
        .find(|t| t.as_str() == s)
    }
}
