//! What the `Agent` methods resolve to, as serde types (converted by `js::convert::to_js`).

use crate::thread::Message;
use serde::{Serialize, Serializer};

#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
pub struct AgentState<'a> {
    pub status: RunStatus,
    pub message: Option<&'a Message>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub stop_reason: Option<StopReason>,
}

#[derive(Serialize)]
#[serde(rename_all = "snake_case")]
pub enum RunStatus {
    Completed,
    AwaitingApproval,
    AwaitingToolResults,
}

#[derive(Serialize)]
#[serde(rename_all = "snake_case")]
pub enum StopReason {
    /// The run made `maxSteps` model calls.
    MaxSteps,
}

/// What `handle` resolves to instead of throwing `conflict`.
#[derive(Serialize)]
#[serde(tag = "status", rename_all = "snake_case")]
pub enum HandleConflict {
    Conflict { error: String },
}

#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
pub struct EffectivePolicy {
    pub enabled: bool,
    pub auto_approve: bool,
}

/// A JS object keyed by name, in this order.
pub struct ByName<'a, T>(pub Vec<(&'a str, T)>);

impl<T: Serialize> Serialize for ByName<'_, T> {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.collect_map(self.0.iter().map(|(k, v)| (k, v)))
    }
}
