//! The result strings the model sees for calls that did not run normally.

use crate::thread::json_text;
use serde_json::{Map, Value, json};

/// Neuron's default reason. With the template's own ". " it reads "provided.. Do not", byte
/// for byte as Neuron produces it (docs/design.md, "Approval semantics").
pub const DEFAULT_REJECT_REASON: &str = "No specific instruction provided.";

/// What the model sees for a rejected call: the reason is substituted verbatim.
pub fn rejection_text(reason: Option<&str>) -> String {
    let reason = reason.unwrap_or(DEFAULT_REJECT_REASON);
    let mut s = String::with_capacity(200 + reason.len());
    s.push_str("TOOL NOT EXECUTED. The user rejected this action. User instruction: ");
    s.push_str(reason);
    s.push_str(
        ". Do not attempt this tool again. Follow the user's instruction or reconsider your plan.",
    );
    s
}

/// What the model sees for a gated call nobody decided before its deadline (docs/design.md,
/// "Approval expiry"). Distinct from the rejection: nobody said no.
pub const EXPIRED_TEXT: &str = "TOOL NOT EXECUTED. The approval request for this action \
expired before anyone approved or rejected it, so it did not run. The user did not reject it. \
Do not assume it took effect; ask the user before trying it again.";

/// What the model sees for a call a human edited before approving it: what it proposed, what
/// ran, then the tool's result string (docs/design.md, "Approval semantics"). The inputs are
/// compact JSON in their own key order.
pub fn edited_result(
    proposed: &Map<String, Value>,
    inputs: &Map<String, Value>,
    result: &str,
) -> String {
    let proposed = json_text(&Value::Object(proposed.clone()));
    let inputs = json_text(&Value::Object(inputs.clone()));
    let mut s = String::with_capacity(160 + proposed.len() + inputs.len() + result.len());
    s.push_str(
        "TOOL EXECUTED WITH EDITED ARGUMENTS. The user changed the arguments before approving \
         this action. You proposed: ",
    );
    s.push_str(&proposed);
    s.push_str(". It ran with: ");
    s.push_str(&inputs);
    s.push_str(". Result: ");
    s.push_str(result);
    s
}

/// The `approvalReason` of a call re-gated because its execution was cut off (docs/design.md, "Run
/// ownership").
pub const REGATE_REASON: &str = "The earlier attempt to run this tool was interrupted before it \
finished, so it may or may not have taken effect. Check before approving it again.";

/// The `approvalReason` of a call re-gated because the journal holds no decision for it, or
/// one for other inputs: the stored thread was changed outside a decision call.
/// The re-gate reason of a call a remembered grant approved, when the grant was revoked or
/// expired before the call started (docs/design.md, "Remembered grants").
pub const GRANT_GONE_REASON: &str = "The grant that allowed this call was revoked or has \
                                     expired before it ran, so a human must decide.";
pub const UNRECORDED_REASON: &str = "No decision for this call with these inputs was recorded, \
so it was not run. Decide again.";

/// The result of a call that ran but whose result could not be stored (storage quota).
pub fn unstorable_result(len: usize) -> String {
    error_result(
        code::RESULT_NOT_STORED,
        &format!(
            "The tool ran, but its result ({len} bytes) could not be stored: the browser's \
             storage quota is exhausted. Do not run it again to get the result."
        ),
        &[],
    )
}

/// Stable codes of error results, as the model and the UI see them in `result`.
pub mod code {
    pub const UNKNOWN_TOOL: &str = "unknown_tool";
    pub const PERMISSION_DENIED: &str = "tool_permission_denied";
    pub const INPUT_VALIDATION: &str = "input_validation";
    pub const TOOL_ERROR: &str = "tool_error";
    pub const RESULT_NOT_STORED: &str = "result_not_stored";
}

/// A structured error result: `{"error":"<code>","message":"…"[,"details":[…]]}`.
pub fn error_result(code: &str, message: &str, details: &[String]) -> String {
    let mut v = json!({ "error": code, "message": message });
    if !details.is_empty() {
        v["details"] = Value::from(details.to_vec());
    }
    json_text(&v)
}

/// A tool's output as the `result` string: strings as they are, anything else JSON-encoded.
pub fn output_to_result(output: &Value) -> String {
    match output {
        Value::String(s) => s.clone(),
        other => json_text(other),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rejection_text_is_byte_exact() {
        assert_eq!(
            rejection_text(None),
            "TOOL NOT EXECUTED. The user rejected this action. User instruction: No specific \
             instruction provided.. Do not attempt this tool again. Follow the user's instruction \
             or reconsider your plan."
        );
        assert_eq!(
            rejection_text(Some("Use the cached report")),
            "TOOL NOT EXECUTED. The user rejected this action. User instruction: Use the cached \
             report. Do not attempt this tool again. Follow the user's instruction or reconsider \
             your plan."
        );
    }

    #[test]
    fn expired_text_is_byte_exact() {
        assert_eq!(
            EXPIRED_TEXT,
            "TOOL NOT EXECUTED. The approval request for this action expired before anyone \
             approved or rejected it, so it did not run. The user did not reject it. Do not \
             assume it took effect; ask the user before trying it again."
        );
        assert_ne!(EXPIRED_TEXT, rejection_text(None));
    }

    #[test]
    fn edited_result_is_byte_exact() {
        let proposed = json!({"path": "/var/log", "force": true});
        let inputs = json!({"path": "/var/log/old", "force": false});
        assert_eq!(
            edited_result(
                proposed.as_object().unwrap(),
                inputs.as_object().unwrap(),
                r#"{"deleted":3}"#
            ),
            "TOOL EXECUTED WITH EDITED ARGUMENTS. The user changed the arguments before \
             approving this action. You proposed: {\"path\":\"/var/log\",\"force\":true}. It \
             ran with: {\"path\":\"/var/log/old\",\"force\":false}. Result: {\"deleted\":3}"
        );
    }

    #[test]
    fn error_results_are_json() {
        let r = error_result(code::TOOL_ERROR, "disk \"full\"", &[]);
        let v: Value = serde_json::from_str(&r).unwrap();
        assert_eq!(
            v,
            json!({"error": "tool_error", "message": "disk \"full\""})
        );
        assert_eq!(output_to_result(&json!({"a": 1})), r#"{"a":1}"#);
        assert_eq!(output_to_result(&json!("plain")), "plain");
    }
}
