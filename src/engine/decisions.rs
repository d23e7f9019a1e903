//! Decision payloads (docs/design.md, "Approval semantics"): a map keyed by `callId`, each value exactly `"approve"`,
//! `"reject"` or `["reject", "reason"]`. Anything else is refused whole, staging nothing.

use super::error::EngineError;
use serde_json::Value;

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Decision {
    Approve,
    Reject(Option<String>),
}

impl Decision {
    pub fn parse(call_id: &str, v: &Value) -> Result<Decision, EngineError> {
        let invalid = |what: &str| EngineError::InvalidDecision {
            call_id: Some(call_id.to_owned()),
            message: format!(
                "invalid decision for \"{call_id}\": {what}; expected \"approve\", \"reject\" or \
                 [\"reject\", \"reason\"]"
            ),
        };
        match v {
            Value::String(s) if s == "approve" => Ok(Decision::Approve),
            Value::String(s) if s == "reject" => Ok(Decision::Reject(None)),
            Value::Array(a) => match a.as_slice() {
                [Value::String(verb), Value::String(reason)] if verb == "reject" => {
                    // A blank reason is no reason: the model then gets the default text.
                    let reason = if reason.trim().is_empty() {
                        None
                    } else {
                        Some(reason.clone())
                    };
                    Ok(Decision::Reject(reason))
                }
                [Value::String(verb), _] if verb == "approve" => Err(invalid(
                    "approvals are bare, there is no \"approve with comment\"",
                )),
                [Value::String(verb), _] if verb == "reject" => {
                    Err(invalid("the reason must be a string"))
                }
                _ => Err(invalid("unrecognised array")),
            },
            Value::String(s) => Err(invalid(&format!("unknown verb \"{s}\""))),
            _ => Err(invalid("not a string or an array")),
        }
    }
}

/// Parses a whole payload, in the payload's key order. Empty or non-object payloads are refused.
pub fn parse_payload(payload: &Value) -> Result<Vec<(String, Decision)>, EngineError> {
    let map = payload
        .as_object()
        .ok_or_else(|| EngineError::InvalidDecision {
            call_id: None,
            message: "decisions must be an object keyed by callId".into(),
        })?;
    if map.is_empty() {
        return Err(EngineError::InvalidDecision {
            call_id: None,
            message: "the decision map is empty: give at least one decision".into(),
        });
    }
    map.iter()
        .map(|(k, v)| Ok((k.clone(), Decision::parse(k, v)?)))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn the_three_forms() {
        assert_eq!(
            Decision::parse("a", &json!("approve")),
            Ok(Decision::Approve)
        );
        assert_eq!(
            Decision::parse("a", &json!("reject")),
            Ok(Decision::Reject(None))
        );
        assert_eq!(
            Decision::parse("a", &json!(["reject", "too risky"])),
            Ok(Decision::Reject(Some("too risky".into())))
        );
        assert_eq!(
            Decision::parse("a", &json!(["reject", "  "])),
            Ok(Decision::Reject(None))
        );
    }

    #[test]
    fn everything_else_is_invalid() {
        for bad in [
            json!(["approve", "note"]),
            json!("Approve"),
            json!(true),
            json!(null),
            json!(["reject"]),
            json!(["reject", 5]),
            json!(["reject", "a", "b"]),
            json!({"decision": "approve"}),
        ] {
            let e = Decision::parse("toolu_1", &bad).unwrap_err();
            assert_eq!(e.code(), "invalid_decision", "{bad}");
        }
        assert_eq!(
            parse_payload(&json!({})).unwrap_err().code(),
            "invalid_decision"
        );
        assert_eq!(
            parse_payload(&json!(["approve"])).unwrap_err().code(),
            "invalid_decision"
        );
    }
}
