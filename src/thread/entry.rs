//! A tool entry inside `tools[]` of a `tool_call` or `tool_call_result` message (docs/design.md,
//! "The thread JSON").

use serde::de::{self, Deserializer, MapAccess, Visitor};
use serde::ser::{SerializeMap, Serializer};
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};
use std::fmt;

/// Where a gated call stands. Serialized as `"pending" | "approved" | "rejected" | "expired"`;
/// `expired` appears only on calls of tools with an `approvalTimeout` (docs/design.md,
/// "Approval expiry").
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum ApprovalState {
    Pending,
    Approved,
    Rejected,
    /// Nobody decided before the call's deadline: it never runs.
    Expired,
}

/// The approval fields of a gated entry. An entry without them was never gated.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Approval {
    pub state: ApprovalState,
    /// The tool talking to the human: why it asks (policy string, or the SDK's re-gate text).
    pub reason: Option<String>,
    /// The human talking to the model: set only while `state` is `Rejected`.
    pub reject_reason: Option<String>,
}

impl Approval {
    pub fn pending(reason: Option<String>) -> Self {
        Approval {
            state: ApprovalState::Pending,
            reason,
            reject_reason: None,
        }
    }
}

/// One tool call as the thread records it. Key order on the wire:
/// `callId, name, description, parameters, inputs, result[, approval, approvalReason,
/// rejectReason][, proposedInputs]`.
#[derive(Debug, Clone, PartialEq)]
pub struct ToolEntry {
    pub call_id: String,
    pub name: String,
    pub description: Option<String>,
    /// Provider-specific extra keys of the tool definition; `[]` when none.
    pub parameters: Value,
    /// The arguments the call runs with, always an object (`{}` when empty): the model's, or
    /// a human's edit of them.
    pub inputs: Map<String, Value>,
    /// `None` until the tool ran; then a string (non-string outputs are JSON-encoded).
    pub result: Option<String>,
    pub approval: Option<Approval>,
    /// The model's own arguments, kept only while a human's edit replaces them in `inputs`
    /// (docs/design.md, "Approval semantics"). Absent on every entry nobody edited, so such
    /// threads keep exactly the documented shape.
    pub proposed_inputs: Option<Map<String, Value>>,
}

impl ToolEntry {
    pub fn new(call_id: impl Into<String>, name: impl Into<String>) -> Self {
        ToolEntry {
            call_id: call_id.into(),
            name: name.into(),
            description: None,
            parameters: Value::Array(Vec::new()),
            inputs: Map::new(),
            result: None,
            approval: None,
            proposed_inputs: None,
        }
    }

    pub fn is_pending(&self) -> bool {
        matches!(&self.approval, Some(a) if a.state == ApprovalState::Pending)
    }

    pub fn approval_state(&self) -> Option<ApprovalState> {
        self.approval.as_ref().map(|a| a.state)
    }
}

impl Serialize for ToolEntry {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let n = 6
            + 3 * usize::from(self.approval.is_some())
            + usize::from(self.proposed_inputs.is_some());
        let mut m = s.serialize_map(Some(n))?;
        m.serialize_entry("callId", &self.call_id)?;
        m.serialize_entry("name", &self.name)?;
        m.serialize_entry("description", &self.description)?;
        m.serialize_entry("parameters", &self.parameters)?;
        m.serialize_entry("inputs", &self.inputs)?;
        m.serialize_entry("result", &self.result)?;
        if let Some(a) = &self.approval {
            m.serialize_entry("approval", &a.state)?;
            m.serialize_entry("approvalReason", &a.reason)?;
            m.serialize_entry("rejectReason", &a.reject_reason)?;
        }
        if let Some(p) = &self.proposed_inputs {
            m.serialize_entry("proposedInputs", p)?;
        }
        m.end()
    }
}

impl<'de> Deserialize<'de> for ToolEntry {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        d.deserialize_map(EntryVisitor)
    }
}

struct EntryVisitor;

impl<'de> Visitor<'de> for EntryVisitor {
    type Value = ToolEntry;

    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("a tool entry object")
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<ToolEntry, A::Error> {
        let mut call_id: Option<Option<String>> = None;
        let mut name = None;
        let mut description = None;
        let mut parameters = None;
        let mut inputs: Option<Value> = None;
        // `result` and `proposedInputs` are read as a `Value` (`null` when absent), like
        // `inputs`: an `Option<Value>` costs serde_json a deserializer of its own (1.3 K).
        let mut result = Value::Null;
        let mut state: Option<ApprovalState> = None;
        let mut reason = None;
        let mut reject_reason = None;
        let mut proposed_inputs = Value::Null;
        while let Some(key) = map.next_key::<String>()? {
            match key.as_str() {
                "callId" => call_id = Some(map.next_value()?),
                "name" => name = Some(map.next_value::<String>()?),
                "description" => description = map.next_value::<Option<String>>()?,
                "parameters" => parameters = Some(map.next_value::<Value>()?),
                "inputs" => inputs = Some(map.next_value()?),
                "result" => result = map.next_value()?,
                "approval" => state = map.next_value::<Option<ApprovalState>>()?,
                "approvalReason" => reason = map.next_value::<Option<String>>()?,
                "rejectReason" => reject_reason = map.next_value::<Option<String>>()?,
                "proposedInputs" => proposed_inputs = map.next_value()?,
                // Unknown keys from other writers are tolerated and dropped.
                _ => {
                    map.next_value::<de::IgnoredAny>()?;
                }
            }
        }
        let inputs = match inputs {
            None | Some(Value::Null) => Map::new(),
            Some(Value::Object(o)) => o,
            // PHP writes an empty array for empty inputs in some versions.
            Some(Value::Array(a)) if a.is_empty() => Map::new(),
            Some(_) => return Err(de::Error::custom("`inputs` must be an object")),
        };
        let proposed_inputs = match proposed_inputs {
            Value::Null => None,
            Value::Object(o) => Some(o),
            _ => return Err(de::Error::custom("`proposedInputs` must be an object")),
        };
        let result = match result {
            Value::Null => None,
            Value::String(s) => Some(s),
            other => Some(super::json_text(&other)),
        };
        Ok(ToolEntry {
            call_id: call_id.flatten().unwrap_or_default(),
            name: name.ok_or_else(|| de::Error::missing_field("name"))?,
            description,
            parameters: parameters.unwrap_or(Value::Array(Vec::new())),
            inputs,
            result,
            approval: state.map(|state| Approval {
                state,
                reason,
                reject_reason,
            }),
            proposed_inputs,
        })
    }
}
