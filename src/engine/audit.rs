//! The audit trail (docs/design.md, "The audit trail"): one record per gated call, from the moment
//! it asks a human until it ends. While it is open the run journal keeps what the call's entry
//! cannot tell ([`OpenAudit`]), so each change is written by the same commit as the step it
//! describes; a record that ends leaves the journal in the commit that ends it. The store keeps
//! every record beside the thread's messages, keyed by `seq`.

use crate::thread::{ApprovalState, ToolEntry};
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

impl AuditOutcome {
    /// How a call that ran ended: its tool's outcome (`Err`: the error the model gets).
    pub fn of_run<T>(outcome: &Result<T, String>) -> Self {
        if outcome.is_ok() {
            AuditOutcome::Ok
        } else {
            AuditOutcome::ToolError
        }
    }
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
    /// The remembered grant that approved it instead of a human; absent when a human (or the
    /// clock) decided.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub grant_id: Option<String>,
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
            grant_id: None,
            inputs: None,
            started_at: None,
            ended_at: None,
            outcome: None,
        }
    }

    /// The record of `open`'s call as its entry `e` shows it now, ended with `end` (an outcome
    /// and when) if it ends here. The entry holds the rest: the tool, the reason, the model's
    /// and the executed inputs, and the decision (read only once one was made: a call re-gated
    /// and then finished by a late result shows approved, but nobody decided it again).
    pub fn of(open: &OpenAudit, e: &ToolEntry, end: Option<(AuditOutcome, u64)>) -> Self {
        let approval = e.approval.as_ref();
        let decision = match (open.decided_at, e.approval_state()) {
            (None, _) | (_, None | Some(ApprovalState::Pending)) => None,
            (Some(_), Some(ApprovalState::Approved)) if e.proposed_inputs.is_some() => {
                Some(AuditDecision::Edited)
            }
            (Some(_), Some(ApprovalState::Approved)) => Some(AuditDecision::Approved),
            (Some(_), Some(ApprovalState::Rejected)) => Some(AuditDecision::Rejected),
            (Some(_), Some(ApprovalState::Expired)) => Some(AuditDecision::Expired),
        };
        let ran = open.started_at.is_some()
            || matches!(end, Some((AuditOutcome::Ok | AuditOutcome::ToolError, _)));
        AuditRecord {
            seq: open.seq,
            call_id: open.call_id.clone(),
            tool: e.name.clone(),
            reason: approval.and_then(|a| a.reason.clone()),
            proposed_inputs: e.proposed_inputs.as_ref().unwrap_or(&e.inputs).clone(),
            requested_at: open.requested_at,
            decision,
            reject_reason: match decision {
                Some(AuditDecision::Rejected) => approval.and_then(|a| a.reject_reason.clone()),
                _ => None,
            },
            decided_at: decision.and(open.decided_at),
            decided_by: decision.and(open.decided_by.clone()),
            grant_id: decision.and(open.grant.clone()),
            inputs: ran.then(|| e.inputs.clone()),
            started_at: open.started_at,
            ended_at: end.map(|(_, at)| at),
            outcome: end.map(|(o, _)| o),
        }
    }
}

/// What the run journal keeps of a gated call's record until it ends (`run.audit`): what its
/// entry cannot tell. [`AuditRecord::of`] makes the full record from it and the entry.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct OpenAudit {
    pub seq: u64,
    pub call_id: String,
    pub requested_at: u64,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub decided_at: Option<u64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub decided_by: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub started_at: Option<u64>,
    /// The remembered grant that decided the call (docs/design.md, "Remembered grants").
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub grant: Option<String>,
}

impl OpenAudit {
    pub fn new(seq: u64, call_id: &str, now_ms: u64) -> Self {
        OpenAudit {
            seq,
            call_id: call_id.to_owned(),
            requested_at: now_ms,
            decided_at: None,
            decided_by: None,
            started_at: None,
            grant: None,
        }
    }
}
