//! The audit trail (docs/design.md, "The audit trail"): one record per gated call, from the
//! moment it asks a human until it ends. Open records live in the run journal, so each change
//! is written by the same commit as the step it describes; a record that ends leaves the
//! journal in the commit that ends it. The store keeps every record beside the thread's
//! messages, keyed by `seq`.

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

/// How a human (or the clock) decided a gated call.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum AuditDecision {
    Approved,
    /// Approved with inputs a human changed (`inputs` differs from `proposedInputs`).
    Edited,
    Rejected,
    /// Nobody decided before the tool's `approvalTimeout` ran out.
    Expired,
}

/// How a gated call ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum AuditOutcome {
    /// It ran and returned a result (or an external tool's result was submitted).
    Ok,
    /// It ran and failed (its `execute` threw, or the tool is gone).
    ToolError,
    /// It never ran: rejected.
    Rejected,
    /// It never ran: expired.
    Expired,
    /// Its execution was cut off (a closed page, an abandoned `execute`) and it was asked
    /// again: the next record of the same call follows it.
    Regated,
}

/// One gated call's record. Times are ms since the epoch; a field that has not happened yet is
/// `null`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct AuditRecord {
    /// Its place in the thread's trail, from 1 (`audit()` pages by it).
    pub seq: u64,
    pub call_id: String,
    pub tool: String,
    /// Why a human was asked: the entry's `approvalReason` when it was gated.
    pub reason: Option<String>,
    /// The inputs the model proposed.
    pub proposed_inputs: Map<String, Value>,
    pub requested_at: u64,
    pub decision: Option<AuditDecision>,
    /// The human's reason for a rejection.
    pub reject_reason: Option<String>,
    pub decided_at: Option<u64>,
    /// Who decided: the `by` the app passed with the decisions.
    pub decided_by: Option<String>,
    /// The inputs it ran with; `null` while it has not run, and for good when it never does.
    pub inputs: Option<Map<String, Value>>,
    pub started_at: Option<u64>,
    pub ended_at: Option<u64>,
    pub outcome: Option<AuditOutcome>,
}

impl AuditRecord {
    /// A call gated at `now_ms`, waiting for a decision.
    pub fn requested(
        seq: u64,
        call_id: &str,
        tool: &str,
        reason: Option<&str>,
        proposed: &Map<String, Value>,
        now_ms: u64,
    ) -> Self {
        AuditRecord {
            seq,
            call_id: call_id.to_owned(),
            tool: tool.to_owned(),
            reason: reason.map(str::to_owned),
            proposed_inputs: proposed.clone(),
            requested_at: now_ms,
            decision: None,
            reject_reason: None,
            decided_at: None,
            decided_by: None,
            inputs: None,
            started_at: None,
            ended_at: None,
            outcome: None,
        }
    }

    /// A decision (a later one for the same call replaces it: decisions are revisable until
    /// the last pending call is decided).
    pub fn decide(
        &mut self,
        decision: AuditDecision,
        reject_reason: Option<&str>,
        by: Option<&str>,
        now_ms: u64,
    ) {
        self.decision = Some(decision);
        self.reject_reason = reject_reason.map(str::to_owned);
        self.decided_at = Some(now_ms);
        self.decided_by = by.map(str::to_owned);
    }

    /// The call is ending: nothing about it changes after this.
    pub fn end(&mut self, outcome: AuditOutcome, now_ms: u64) {
        self.outcome = Some(outcome);
        self.ended_at = Some(now_ms);
    }
}
