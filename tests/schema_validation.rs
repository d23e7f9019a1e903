//! Tool-input validation: types, objects, arrays, strings, numbers, enum/const.
//! Messages are asserted exactly: they are what the model reads to correct itself.

use gatehouse_agent::schema::{MAX_ERRORS, SchemaError, format_errors, validate};
use serde_json::{Value, json};

/// The errors as `at PATH: MESSAGE` lines; empty when valid.
fn errors(schema: Value, instance: Value) -> Vec<String> {
    match validate(&schema, &instance) {
        Ok(()) => Vec::new(),
        Err(errs) => errs.iter().map(ToString::to_string).collect(),
    }
}

fn spec_schema() -> Value {
    json!({ "type": "object", "properties": { "path": { "type": "string" } }, "required": ["path"] })
}

#[test]
fn spec_example_accepts_valid_input() {
    assert!(validate(&spec_schema(), &json!({ "path": "/tmp/a.txt" })).is_ok());
}

#[test]
fn spec_example_missing_required_property() {
    let errs = validate(&spec_schema(), &json!({})).unwrap_err();
    assert_eq!(
        errs,
        vec![SchemaError {
            path: String::new(),
            message: "missing required property \"path\"".into()
        }]
    );
    assert_eq!(
        errs[0].to_string(),
        "at root: missing required property \"path\""
    );
}

#[test]
fn spec_example_wrong_property_type() {
    let errs = validate(&spec_schema(), &json!({ "path": 42 })).unwrap_err();
    assert_eq!(errs[0].path, "/path");
    assert_eq!(errs[0].message, "expected string, found integer 42");
    assert_eq!(
        errs[0].to_string(),
        "at /path: expected string, found integer 42"
    );
}

#[test]
fn spec_example_root_not_an_object() {
    assert_eq!(
        errors(spec_schema(), json!("/tmp/a.txt")),
        ["at root: expected object, found string \"/tmp/a.txt\""]
    );
}

#[test]
fn additional_properties_false_names_the_extra_and_the_allowed() {
    let mut schema = spec_schema();
    schema["additionalProperties"] = json!(false);
    assert_eq!(
        errors(
            schema.clone(),
            json!({ "path": "a", "mode": "w", "force": true })
        ),
        [
            "at root: unexpected property \"mode\"; allowed properties are \"path\"",
            "at root: unexpected property \"force\"; allowed properties are \"path\"",
        ]
    );
    assert_eq!(
        errors(
            json!({ "type": "object", "additionalProperties": false }),
            json!({ "a": 1 })
        ),
        ["at root: unexpected property \"a\"; no properties are allowed here"]
    );
}

#[test]
fn additional_properties_schema_applies_to_unlisted_keys() {
    let schema = json!({
        "type": "object",
        "properties": { "name": { "type": "string" } },
        "additionalProperties": { "type": "number" }
    });
    assert!(validate(&schema, &json!({ "name": "x", "a": 1, "b": 2.5 })).is_ok());
    assert_eq!(
        errors(schema, json!({ "name": "x", "a": "1" })),
        ["at /a: expected number, found string \"1\""]
    );
}

#[test]
fn pattern_properties_disable_additional_properties_check() {
    let schema = json!({
        "type": "object",
        "patternProperties": { "^x-": { "type": "string" } },
        "additionalProperties": false
    });
    assert!(validate(&schema, &json!({ "x-a": 1, "other": 2 })).is_ok());
}

#[test]
fn nested_arrays_of_objects_report_full_paths() {
    let schema = json!({
        "type": "object",
        "properties": {
            "items": {
                "type": "array",
                "items": {
                    "type": "object",
                    "properties": {
                        "name": { "type": "string", "minLength": 1 },
                        "tags": { "type": "array", "items": { "type": "string" } }
                    },
                    "required": ["name"]
                }
            }
        }
    });
    let instance = json!({ "items": [
        { "name": "ok", "tags": ["a"] },
        { "name": "", "tags": ["b", 3] },
        { "tags": [] },
        "nope"
    ]});
    assert_eq!(
        errors(schema, instance),
        [
            "at /items/1/name: must be at least 1 character long; found 0",
            "at /items/1/tags/1: expected string, found integer 3",
            "at /items/2: missing required property \"name\"",
            "at /items/3: expected object, found string \"nope\"",
        ]
    );
}

#[test]
fn pointer_tokens_are_escaped() {
    let schema =
        json!({ "properties": { "a/b": { "type": "string" }, "c~d": { "type": "string" } } });
    assert_eq!(
        errors(schema, json!({ "a/b": 1, "c~d": 2 })),
        [
            "at /a~1b: expected string, found integer 1",
            "at /c~0d: expected string, found integer 2"
        ]
    );
}

#[test]
fn type_arrays_integers_and_nullable() {
    let int = json!({ "type": "integer" });
    assert!(validate(&int, &json!(3)).is_ok());
    assert!(validate(&int, &json!(3.0)).is_ok());
    assert!(validate(&int, &json!(-7)).is_ok());
    assert_eq!(
        errors(int, json!(2.5)),
        ["at root: expected integer, found number 2.5"]
    );
    let multi = json!({ "type": ["string", "number", "null"] });
    assert!(validate(&multi, &Value::Null).is_ok());
    assert_eq!(
        errors(multi, json!(true)),
        ["at root: expected string, number or null, found boolean true"]
    );
    let nullable = json!({ "type": "string", "nullable": true, "minLength": 2 });
    assert!(validate(&nullable, &Value::Null).is_ok());
    assert_eq!(
        errors(nullable, json!("a")),
        ["at root: must be at least 2 characters long; found 1"]
    );
    assert_eq!(
        errors(json!({ "type": "string" }), Value::Null),
        ["at root: expected string, found null"]
    );
}

#[test]
fn enum_and_const() {
    let schema =
        json!({ "properties": { "mode": { "type": "string", "enum": ["read", "write"] } } });
    assert!(validate(&schema, &json!({ "mode": "read" })).is_ok());
    assert_eq!(
        errors(schema, json!({ "mode": "append" })),
        ["at /mode: must be one of \"read\", \"write\"; found string \"append\""]
    );
    // Numbers compare by value, objects regardless of key order.
    assert!(validate(&json!({ "enum": [1, { "a": 1, "b": [2] }] }), &json!(1.0)).is_ok());
    assert!(
        validate(
            &json!({ "enum": [{ "a": 1, "b": [2] }] }),
            &json!({ "b": [2.0], "a": 1 })
        )
        .is_ok()
    );
    assert_eq!(
        errors(json!({ "const": "x" }), json!("y")),
        ["at root: must be exactly \"x\"; found string \"y\""]
    );
    assert_eq!(
        errors(json!({ "const": null }), json!(0)),
        ["at root: must be exactly null; found integer 0"]
    );
    let many: Vec<i32> = (0..15).collect();
    assert_eq!(
        errors(json!({ "enum": many }), json!(99)),
        ["at root: must be one of 0, 1, 2, 3, 4, 5, 6, 7, 8, 9, ... (5 more); found integer 99"]
    );
}

#[test]
fn string_lengths_count_unicode_scalar_values() {
    let schema = json!({ "type": "string", "minLength": 2, "maxLength": 3 });
    assert!(validate(&schema, &json!("héé")).is_ok()); // 5 bytes, 3 characters
    assert!(validate(&schema, &json!("🦀🦀")).is_ok());
    assert_eq!(
        errors(schema.clone(), json!("é")),
        ["at root: must be at least 2 characters long; found 1"]
    );
    assert_eq!(
        errors(schema, json!("abcd")),
        ["at root: must be at most 3 characters long; found 4"]
    );
    let long = "x".repeat(60);
    assert_eq!(
        errors(json!({ "type": "number" }), json!(long)),
        [format!(
            "at root: expected number, found string \"{}...",
            "x".repeat(39)
        )]
    );
}

#[test]
fn numeric_bounds() {
    let schema = json!({ "type": "number", "minimum": 1, "maximum": 10, "multipleOf": 0.5 });
    assert!(validate(&schema, &json!(1)).is_ok());
    assert!(validate(&schema, &json!(10.0)).is_ok());
    assert!(validate(&schema, &json!(2.5)).is_ok());
    assert_eq!(
        errors(schema.clone(), json!(0)),
        ["at root: must be at least 1; found 0"]
    );
    assert_eq!(
        errors(schema.clone(), json!(11)),
        ["at root: must be at most 10; found 11"]
    );
    assert_eq!(
        errors(schema, json!(2.3)),
        ["at root: must be a multiple of 0.5; found 2.3"]
    );
    let exclusive = json!({ "exclusiveMinimum": 0, "exclusiveMaximum": 1 });
    assert!(validate(&exclusive, &json!(0.5)).is_ok());
    assert_eq!(
        errors(exclusive.clone(), json!(0)),
        ["at root: must be greater than 0; found 0"]
    );
    assert_eq!(
        errors(exclusive, json!(1)),
        ["at root: must be less than 1; found 1"]
    );
    let draft4 =
        json!({ "minimum": 0, "exclusiveMinimum": true, "maximum": 5, "exclusiveMaximum": true });
    assert!(validate(&draft4, &json!(4.9)).is_ok());
    assert_eq!(
        errors(draft4.clone(), json!(0)),
        ["at root: must be greater than 0; found 0"]
    );
    assert_eq!(
        errors(draft4, json!(5)),
        ["at root: must be less than 5; found 5"]
    );
    assert!(validate(&json!({ "multipleOf": 0.1 }), &json!(0.3)).is_ok());
    assert!(validate(&json!({ "multipleOf": 3 }), &json!(9)).is_ok());
    assert_eq!(
        errors(json!({ "multipleOf": 3 }), json!(10)),
        ["at root: must be a multiple of 3; found 10"]
    );
    // Bounds only apply to numbers.
    assert!(validate(&json!({ "minimum": 5, "minLength": 3 }), &json!("abc")).is_ok());
}

#[test]
fn array_bounds_uniqueness_and_tuples() {
    let schema = json!({ "type": "array", "minItems": 1, "maxItems": 3, "uniqueItems": true });
    assert!(validate(&schema, &json!([1, "1", [1]])).is_ok());
    assert_eq!(
        errors(schema.clone(), json!([])),
        ["at root: must contain at least 1 item; found 0"]
    );
    assert_eq!(
        errors(schema.clone(), json!([1, 2, 3, 4])),
        ["at root: must contain at most 3 items; found 4"]
    );
    assert_eq!(
        errors(schema, json!([{ "a": 1 }, 2, { "a": 1.0 }])),
        ["at root: items must be unique, but the items at indices 0 and 2 are equal ({\"a\":1})"]
    );
    let prefix =
        json!({ "prefixItems": [{ "type": "string" }, { "type": "integer" }], "items": false });
    assert!(validate(&prefix, &json!(["a", 1])).is_ok());
    assert!(validate(&prefix, &json!(["a"])).is_ok());
    assert_eq!(
        errors(prefix.clone(), json!([1, 1, true])),
        [
            "at /0: expected string, found integer 1",
            "at root: must contain at most 2 items (no additional items are allowed); found 3",
        ]
    );
    let tuple =
        json!({ "items": [{ "type": "string" }], "additionalItems": { "type": "boolean" } });
    assert!(validate(&tuple, &json!(["a", true, false])).is_ok());
    assert_eq!(
        errors(tuple, json!(["a", true, 0])),
        ["at /2: expected boolean, found integer 0"]
    );
}

#[test]
fn object_property_counts() {
    let schema = json!({ "type": "object", "minProperties": 1, "maxProperties": 2 });
    assert_eq!(
        errors(schema.clone(), json!({})),
        ["at root: must have at least 1 property; found 0"]
    );
    assert_eq!(
        errors(schema, json!({ "a": 1, "b": 2, "c": 3 })),
        ["at root: must have at most 2 properties; found 3"]
    );
}

#[test]
fn all_errors_are_collected_but_bounded() {
    let schema = json!({ "type": "array", "items": { "type": "string" } });
    let few = errors(schema.clone(), json!([1, "ok", 2]));
    assert_eq!(
        few,
        [
            "at /0: expected string, found integer 1",
            "at /2: expected string, found integer 2"
        ]
    );
    let many: Vec<i32> = (0..100).collect();
    let errs = validate(&schema, &json!(many)).unwrap_err();
    assert_eq!(errs.len(), MAX_ERRORS);
    assert_eq!(
        errs[MAX_ERRORS - 2].to_string(),
        "at /18: expected string, found integer 18"
    );
    assert_eq!(
        errs[MAX_ERRORS - 1].to_string(),
        "at root: too many errors; only the first 19 are listed"
    );
    // Exactly MAX_ERRORS errors are all kept.
    let twenty: Vec<i32> = (0..20).collect();
    let errs = validate(&schema, &json!(twenty)).unwrap_err();
    assert_eq!(errs.len(), MAX_ERRORS);
    assert_eq!(errs[MAX_ERRORS - 1].path, "/19");
}

#[test]
fn format_errors_joins_lines() {
    let errs = validate(&spec_schema(), &json!({ "path": 1 })).unwrap_err();
    assert_eq!(
        format_errors(&errs),
        "at /path: expected string, found integer 1"
    );
    let errs = validate(&json!({ "required": ["a", "b"] }), &json!({})).unwrap_err();
    assert_eq!(
        format_errors(&errs),
        "at root: missing required property \"a\"\nat root: missing required property \"b\""
    );
}

#[test]
fn boolean_schemas() {
    assert!(validate(&json!(true), &json!({ "anything": [1] })).is_ok());
    assert_eq!(
        errors(json!(false), json!(1)),
        ["at root: no value is allowed here (the schema is false); found integer 1"]
    );
    let schema = json!({ "properties": { "legacy": false } });
    assert!(validate(&schema, &json!({ "other": 1 })).is_ok());
    assert_eq!(
        errors(schema, json!({ "legacy": "x" })),
        ["at /legacy: no value is allowed here (the schema is false); found string \"x\""]
    );
}
