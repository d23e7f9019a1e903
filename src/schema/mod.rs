//! JSON Schema validation of tool inputs (temporary stand-in; the full subset lands separately).

use serde_json::Value;
use std::fmt;

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SchemaError {
    pub path: String,
    pub message: String,
}

impl fmt::Display for SchemaError {
    fn fmt(&self, f: &mut fmt::Formatter) -> fmt::Result {
        if self.path.is_empty() {
            write!(f, "at root: {}", self.message)
        } else {
            write!(f, "at {}: {}", self.path, self.message)
        }
    }
}

pub fn validate(schema: &Value, instance: &Value) -> Result<(), Vec<SchemaError>> {
    let mut errors = Vec::new();
    if let (Some(req), Some(obj)) = (
        schema.get("required").and_then(Value::as_array),
        instance.as_object(),
    ) {
        for r in req.iter().filter_map(Value::as_str) {
            if !obj.contains_key(r) {
                errors.push(SchemaError {
                    path: String::new(),
                    message: format!("missing required property \"{r}\""),
                });
            }
        }
    }
    if errors.is_empty() {
        Ok(())
    } else {
        Err(errors)
    }
}
