//! The typed inputs a human (or the app) hands the engine: decisions on gated calls and the
//! results of external tools, each keyed by call id. They are checked when they are made —
//! from Rust values or from the JSON the JS API takes — so the engine only ever sees a
//! well-formed map (docs/design.md, "Approval semantics").

use super::decisions::Decision;
use super::error::EngineError;
use serde_json::Value;

/// Decisions keyed by call id, in the order given: at least one, each call once.
#[derive(Debug, Clone, PartialEq)]
pub struct Decisions(Vec<(String, Decision)>);

impl Decisions {
    /// Checks a set of decisions: not empty, no call twice, an edit's inputs an object.
    pub fn new(
        decisions: impl IntoIterator<Item = (String, Decision)>,
    ) -> Result<Self, EngineError> {
        let decisions: Vec<(String, Decision)> = decisions.into_iter().collect();
        if decisions.is_empty() {
            return Err(invalid(
                None,
                "the decision map is empty: give at least one decision".into(),
            ));
        }
        for (i, (call_id, d)) in decisions.iter().enumerate() {
            if decisions[..i].iter().any(|(c, _)| c == call_id) {
                return Err(invalid(
                    Some(call_id),
                    format!("two decisions for \"{call_id}\": give one decision per call"),
                ));
            }
            if let Decision::Edit(v) = d {
                if !v.is_object() {
                    return Err(Decision::invalid(
                        call_id,
                        "the edited inputs must be an object",
                    ));
                }
            }
        }
        Ok(Decisions(decisions))
    }

    /// Reads the JS API's form: an object keyed by callId, each value `"approve"`,
    /// `"reject"`, `["reject", "reason"]` or `["edit", inputs]`. Anything else is refused
    /// whole.
    pub fn from_json(payload: &Value) -> Result<Self, EngineError> {
        let map = payload
            .as_object()
            .ok_or_else(|| invalid(None, "decisions must be an object keyed by callId".into()))?;
        Self::new(
            map.iter()
                .map(|(k, v)| Ok((k.clone(), Decision::parse(k, v)?)))
                .collect::<Result<Vec<_>, EngineError>>()?,
        )
    }

    pub fn iter(&self) -> impl Iterator<Item = &(String, Decision)> {
        self.0.iter()
    }

    pub fn call_ids(&self) -> impl Iterator<Item = &str> {
        self.0.iter().map(|(c, _)| c.as_str())
    }

    pub fn into_vec(self) -> Vec<(String, Decision)> {
        self.0
    }

    /// The JS API's form, which [`Decisions::from_json`] reads back (a remote thread's outbox
    /// keeps decisions in it).
    pub fn to_json(&self) -> Value {
        let map = self.0.iter().map(|(call_id, d)| {
            let v = match d {
                Decision::Approve => Value::from("approve"),
                Decision::Reject(None) => Value::from("reject"),
                Decision::Reject(Some(r)) => serde_json::json!(["reject", r]),
                Decision::Edit(inputs) => serde_json::json!(["edit", inputs]),
            };
            (call_id.clone(), v)
        });
        Value::Object(map.collect())
    }
}

fn invalid(call_id: Option<&str>, message: String) -> EngineError {
    EngineError::InvalidDecision {
        call_id: call_id.map(str::to_owned),
        message,
    }
}

/// The outputs of external tools keyed by call id, in the order given: at least one, each
/// call once. An output is any JSON value (a string is the result as it is).
#[derive(Debug, Clone, PartialEq)]
pub struct ToolResults(Vec<(String, Value)>);

impl ToolResults {
    pub fn new(results: impl IntoIterator<Item = (String, Value)>) -> Result<Self, EngineError> {
        let results: Vec<(String, Value)> = results.into_iter().collect();
        if results.is_empty() {
            return Err(EngineError::InvalidToolResults(
                "tool results must be a non-empty object keyed by callId".into(),
            ));
        }
        for (i, (call_id, _)) in results.iter().enumerate() {
            if results[..i].iter().any(|(c, _)| c == call_id) {
                return Err(EngineError::InvalidToolResults(format!(
                    "two results for \"{call_id}\": give one result per call"
                )));
            }
        }
        Ok(ToolResults(results))
    }

    /// Reads the JS API's form: an object keyed by callId.
    pub fn from_json(payload: &Value) -> Result<Self, EngineError> {
        match payload.as_object() {
            Some(map) => Self::new(map.iter().map(|(k, v)| (k.clone(), v.clone()))),
            None => Self::new([]),
        }
    }

    pub fn iter(&self) -> impl Iterator<Item = &(String, Value)> {
        self.0.iter()
    }

    pub fn call_ids(&self) -> impl Iterator<Item = &str> {
        self.0.iter().map(|(c, _)| c.as_str())
    }

    pub fn len(&self) -> usize {
        self.0.len()
    }

    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn decisions_are_checked_when_made() {
        let d = Decisions::from_json(&json!({"a": "approve", "b": ["reject", "no"]})).unwrap();
        assert_eq!(d.call_ids().collect::<Vec<_>>(), ["a", "b"]);
        for bad in [json!({}), json!(["approve"]), json!({"a": ["edit", "x"]})] {
            assert_eq!(
                Decisions::from_json(&bad).unwrap_err().code(),
                "invalid_decision"
            );
        }
        let twice = [
            ("a".to_owned(), Decision::Approve),
            ("a".to_owned(), Decision::Reject(None)),
        ];
        assert_eq!(
            Decisions::new(twice).unwrap_err().code(),
            "invalid_decision"
        );
        let edit = [("a".to_owned(), Decision::Edit(json!([1])))];
        assert_eq!(Decisions::new(edit).unwrap_err().code(), "invalid_decision");
    }

    #[test]
    fn tool_results_are_checked_when_made() {
        let r = ToolResults::from_json(&json!({"c": {"ok": true}, "d": "done"})).unwrap();
        assert_eq!(r.call_ids().collect::<Vec<_>>(), ["c", "d"]);
        for bad in [json!({}), json!(null), json!("x")] {
            assert_eq!(
                ToolResults::from_json(&bad).unwrap_err().code(),
                "invalid_tool_results"
            );
        }
        let twice = [("c".to_owned(), json!(1)), ("c".to_owned(), json!(2))];
        assert_eq!(
            ToolResults::new(twice).unwrap_err().code(),
            "invalid_tool_results"
        );
    }
}
