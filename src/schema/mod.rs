//! JSON Schema validation of tool inputs.
//!
//! Before a tool call is gated, the engine checks the model's arguments against the tool's
//! `parameters` schema with [`validate`]. Every problem found becomes a [`SchemaError`] whose
//! path and message are written for the model to read and correct itself, e.g.
//! `at /items/0/qty: expected integer, found string "3"`.
//!
//! This is a hand-written validator for the subset of JSON Schema that tool schemas use
//! (hand-written OpenAI/Anthropic tool schemas, zod-to-json-schema output, OpenAPI-style
//! schemas). The `jsonschema` crate was measured and rejected: it added ~800 KB gzipped to a
//! wasm32 build, against an SDK budget of ~75 KB.
//!
//! # Checked
//!
//! - `type` (a name or an array of names): `object`, `array`, `string`, `number`, `integer`,
//!   `boolean`, `null`. `integer` accepts any number with no fractional part (`3.0`).
//! - `nullable: true` (OpenAPI): a `null` instance is accepted by that schema outright.
//! - `enum`, `const` (numbers compare by value: `1` equals `1.0`).
//! - Objects: `properties`, `required`, `additionalProperties` (boolean or schema),
//!   `minProperties`, `maxProperties`.
//! - Arrays: `items` (one schema, or the draft 4-7 tuple form with `additionalItems`),
//!   `prefixItems` (then `items` covers the rest), `minItems`, `maxItems`, `uniqueItems`.
//! - Strings: `minLength`, `maxLength`, counted in Unicode scalar values, not bytes.
//! - Numbers: `minimum`, `maximum`, `exclusiveMinimum`, `exclusiveMaximum` (the numeric form,
//!   and the draft-4 boolean form that makes `minimum`/`maximum` strict), `multipleOf`.
//! - `allOf`, `anyOf`, `oneOf`, `not`.
//! - `$ref` to the same document: `#`, `#/$defs/...`, `#/definitions/...` and any other JSON
//!   Pointer fragment into the root schema (zod-to-json-schema emits e.g.
//!   `#/properties/a`). Keywords beside `$ref` are applied as well (2019-09+ behaviour).
//! - Boolean schemas: `true` accepts anything, `false` rejects anything.
//!
//! When a value fails `type`, the same schema's other keywords are not reported: they would
//! only repeat that the value is of the wrong kind. A failed `anyOf`/`oneOf` is explained by
//! one "expected A or B" message when every alternative failed on its type, by the errors of
//! the only alternative of the right type, or else by a summary followed by the errors of the
//! alternative with the fewest errors.
//!
//! # Not checked (ignored)
//!
//! `pattern`, `format`, `patternProperties`, `propertyNames`, `dependencies`,
//! `dependentRequired`, `dependentSchemas`, `if`/`then`/`else`, `contains`/`minContains`/
//! `maxContains`, `unevaluatedProperties`, `unevaluatedItems`, `contentEncoding`,
//! `contentMediaType`, `contentSchema`, `$dynamicRef`/`$recursiveRef`/`$anchor`, `$id`-based
//! resolution and remote `$ref`s (anything not starting with `#`). Unknown keywords and
//! annotations (`title`, `description`, `default`, `examples`, ...) are ignored too.
//! When a schema has a non-empty `patternProperties`, its `additionalProperties` is not
//! checked either, since we cannot tell which properties the patterns would have matched.
//!
//! # Malformed schemas
//!
//! Validation never panics. A keyword whose value has the wrong shape (`"minimum": "3"`,
//! `"required": "path"`, `"properties": []`, a negative `maxLength`, a `$ref` that does not
//! resolve, an unknown `type` name, ...) is ignored, as if absent: the schema is the app
//! developer's, and the model could not fix it anyway. The one schema-related failure that is
//! reported is exceeding a work bound, which fails closed with an error: [`MAX_DEPTH`] nested
//! schema evaluations (a `$ref` cycle such as `{"$ref": "#"}`, or an absurdly deep instance),
//! or [`MAX_STEPS`] evaluations in all (a combinatorial schema).
//!
//! # Bounds
//!
//! At most [`MAX_ERRORS`] errors are returned; when there were more, the last one says so.

mod keywords;
mod value;
mod walk;

use serde_json::Value;
use std::fmt;

/// The most errors [`validate`] returns (the last one notes any that were left out).
pub const MAX_ERRORS: usize = 20;

/// The most nested schema evaluations (subschemas and `$ref` hops) on one path.
pub const MAX_DEPTH: usize = 128;

/// The most schema evaluations in one [`validate`] call; past it, validation fails with an
/// error. Bounds the work of hostile or combinatorial schemas (alternatives within
/// alternatives of a recursive schema).
pub const MAX_STEPS: usize = 200_000;

/// One reason the instance does not match the schema.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SchemaError {
    /// JSON Pointer into the instance (`""` for the root, e.g. `"/items/0/name"`).
    pub path: String,
    /// What was expected and what was found, for a reader who sees the schema.
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

/// Checks `instance` against `schema`, collecting all errors (up to [`MAX_ERRORS`]).
pub fn validate(schema: &Value, instance: &Value) -> Result<(), Vec<SchemaError>> {
    let issues = walk::Validator::run(schema, instance, MAX_ERRORS + 1);
    if issues.is_empty() {
        return Ok(());
    }
    let mut errors: Vec<SchemaError> = issues
        .into_iter()
        .map(|i| SchemaError {
            path: i.path,
            message: i.message,
        })
        .collect();
    if errors.len() > MAX_ERRORS {
        errors.truncate(MAX_ERRORS - 1);
        errors.push(SchemaError {
            path: String::new(),
            message: format!(
                "too many errors; only the first {} are listed",
                MAX_ERRORS - 1
            ),
        });
    }
    Err(errors)
}

/// Formats errors one per line, as sent back to the model in an `input_validation` result.
pub fn format_errors(errors: &[SchemaError]) -> String {
    let mut out = String::new();
    for (i, e) in errors.iter().enumerate() {
        if i > 0 {
            out.push('\n');
        }
        out.push_str(&e.to_string());
    }
    out
}
