//! Decision payloads (docs/design.md, "Approval semantics"): a map keyed by `callId`, each value
//! exactly `"approve"`, `"reject"`, `["reject", "reason"]` or `["edit", inputs]`. Anything else is
//! refused whole, staging nothing.

use super::error::EngineError;
use serde_json::Value;

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Decision {
    Approve,
    Reject(Option<String>),
    /// Approve, with these inputs (an object) instead of the model's.
    Edit(Value),
}

/// The three kinds of decision, as a tool's `allowedDecisions` names them.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum DecisionKind {
    Approve,
    Reject,
    Edit,
}

impl DecisionKind {
    const ALL: [DecisionKind; 3] = [
        DecisionKind::Approve,
        DecisionKind::Reject,
        DecisionKind::Edit,
    ];

    pub fn as_str(self) -> &'static str {
        match self {
            DecisionKind::Approve => "approve",
            DecisionKind::Reject => "reject",
            DecisionKind::Edit => "edit",
        }
    }

    fn bit(self) -> u8 {
        1 << self as u8
    }
}

const NOT_NAMES: &str = "`allowedDecisions` must be an array of decision names";

/// The decisions a tool accepts (`allowedDecisions`); all three by default.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct AllowedDecisions(u8);

impl Default for AllowedDecisions {
    fn default() -> Self {
        AllowedDecisions(0b111)
    }
}

impl AllowedDecisions {
    /// Reads a tool's `allowedDecisions` list: names out of `approve`, `reject`, `edit`, at
    /// least one (repeats are harmless).
    pub fn parse<S: AsRef<str>>(names: &[S]) -> Result<Self, String> {
        Self::from_json(&Value::from(
            names.iter().map(|n| n.as_ref()).collect::<Vec<&str>>(),
        ))
    }

    /// [`AllowedDecisions::parse`] of the JSON value the JS option is read as.
    pub fn from_json(names: &Value) -> Result<Self, String> {
        let not_names = || NOT_NAMES.to_owned();
        let mut bits = 0;
        for name in names.as_array().ok_or_else(not_names)? {
            let name = name.as_str().ok_or_else(not_names)?;
            let kind = DecisionKind::ALL
                .into_iter()
                .find(|k| k.as_str() == name)
                .ok_or_else(|| {
                    format!(
                        "unknown decision {name:?} in `allowedDecisions`: use \"approve\", \
                         \"reject\" or \"edit\""
                    )
                })?;
            bits |= kind.bit();
        }
        if bits == 0 {
            return Err("`allowedDecisions` is empty: list at least one decision".into());
        }
        Ok(AllowedDecisions(bits))
    }

    pub fn allows(self, kind: DecisionKind) -> bool {
        self.0 & kind.bit() != 0
    }

    /// The allowed names, in the order approve, reject, edit.
    pub fn names(self) -> impl Iterator<Item = &'static str> {
        DecisionKind::ALL
            .into_iter()
            .filter(move |k| self.allows(*k))
            .map(DecisionKind::as_str)
    }
}

/// The allowed names as the refusal message lists them: `["approve", "reject"]`.
impl std::fmt::Display for AllowedDecisions {
    fn fmt(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
        f.write_str("[")?;
        for (i, name) in self.names().enumerate() {
            f.write_str(if i == 0 { "\"" } else { ", \"" })?;
            f.write_str(name)?;
            f.write_str("\"")?;
        }
        f.write_str("]")
    }
}

impl Decision {
    pub fn kind(&self) -> DecisionKind {
        match self {
            Decision::Approve => DecisionKind::Approve,
            Decision::Reject(_) => DecisionKind::Reject,
            Decision::Edit(_) => DecisionKind::Edit,
        }
    }

    /// The refusal of a malformed decision for `call_id`.
    pub(super) fn invalid(call_id: &str, what: &str) -> EngineError {
        EngineError::InvalidDecision {
            call_id: Some(call_id.to_owned()),
            message: format!(
                "invalid decision for \"{call_id}\": {what}; expected \"approve\", \"reject\", \
                 [\"reject\", \"reason\"] or [\"edit\", inputs]"
            ),
        }
    }

    /// Reads one decision in the JS API's form.
    pub fn parse(call_id: &str, v: &Value) -> Result<Decision, EngineError> {
        let invalid = |what: &str| Decision::invalid(call_id, what);
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
                [Value::String(verb), inputs @ Value::Object(_)] if verb == "edit" => {
                    Ok(Decision::Edit(inputs.clone()))
                }
                [Value::String(verb), _] if verb == "approve" => Err(invalid(
                    "approvals are bare, there is no \"approve with comment\"",
                )),
                [Value::String(verb), _] if verb == "reject" => {
                    Err(invalid("the reason must be a string"))
                }
                [Value::String(verb), _] if verb == "edit" => {
                    Err(invalid("the edited inputs must be an object"))
                }
                _ => Err(invalid("unrecognised array")),
            },
            Value::String(s) => Err(invalid(&format!("unknown verb \"{s}\""))),
            _ => Err(invalid("not a string or an array")),
        }
    }
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
        let edit = Decision::parse("a", &json!(["edit", {"path": "/tmp/a"}])).unwrap();
        assert_eq!(edit.kind(), DecisionKind::Edit);
        assert_eq!(edit, Decision::Edit(json!({"path": "/tmp/a"})));
    }

    #[test]
    fn allowed_decisions_name_one_to_three_kinds() {
        assert_eq!(
            AllowedDecisions::default().to_string(),
            r#"["approve", "reject", "edit"]"#
        );
        let ar = AllowedDecisions::parse(&["reject", "approve", "reject"]).unwrap();
        assert_eq!(ar.to_string(), r#"["approve", "reject"]"#);
        for bad in [json!("approve"), json!(["approve", 1]), json!(null)] {
            let e = AllowedDecisions::from_json(&bad).unwrap_err();
            assert!(
                e.contains("must be an array of decision names"),
                "{bad}: {e}"
            );
        }
        assert!(!ar.allows(DecisionKind::Edit));
        assert!(
            AllowedDecisions::parse(&["edit"])
                .unwrap()
                .allows(DecisionKind::Edit)
        );
        let empty: [&str; 0] = [];
        assert!(
            AllowedDecisions::parse(&empty)
                .unwrap_err()
                .contains("empty")
        );
        for bad in ["Approve", "approved", "respond", ""] {
            let e = AllowedDecisions::parse(&["approve", bad]).unwrap_err();
            assert!(e.contains("unknown decision"), "{bad}: {e}");
        }
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
            json!(["edit"]),
            json!(["edit", ["path"]]),
            json!(["edit", "{\"path\":\"/tmp\"}"]),
            json!(["edit", {"path": "/tmp"}, "why"]),
            json!("edit"),
        ] {
            let e = Decision::parse("toolu_1", &bad).unwrap_err();
            assert_eq!(e.code(), "invalid_decision", "{bad}");
        }
    }
}
