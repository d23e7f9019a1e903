//! Tool-input validation: anyOf/oneOf/allOf/not, $ref, generator output (zod, OpenAI-style),
//! and schemas that are malformed or hostile (which must never panic).

use gatehouse_agent::schema::validate;
use serde_json::{Value, json};

fn errors(schema: Value, instance: Value) -> Vec<String> {
    match validate(&schema, &instance) {
        Ok(()) => Vec::new(),
        Err(errs) => errs.iter().map(ToString::to_string).collect(),
    }
}

/// zod-to-json-schema output for `z.object({ path: z.string(), note:
/// z.string().nullable().optional(), count: z.number().int() })`.
fn zod_schema() -> Value {
    json!({
        "type": "object",
        "properties": {
            "path": { "type": "string" },
            "note": { "anyOf": [{ "type": "string" }, { "type": "null" }] },
            "count": { "type": "integer" }
        },
        "required": ["path", "count"],
        "additionalProperties": false,
        "$schema": "http://json-schema.org/draft-07/schema#"
    })
}

#[test]
fn zod_optional_nullable_accepts_null_absent_and_string() {
    let schema = zod_schema();
    assert!(validate(&schema, &json!({ "path": "a", "count": 1 })).is_ok());
    assert!(validate(&schema, &json!({ "path": "a", "count": 1, "note": null })).is_ok());
    assert!(validate(&schema, &json!({ "path": "a", "count": 1, "note": "hi" })).is_ok());
}

#[test]
fn any_of_type_mismatches_merge_into_one_message() {
    assert_eq!(
        errors(zod_schema(), json!({ "path": "a", "count": 1, "note": 5 })),
        ["at /note: expected string or null, found integer 5"]
    );
    // Nested alternatives merge too, without repeating a type.
    let nested = json!({ "anyOf": [{ "type": "string" }, { "anyOf": [{ "type": "null" }, { "type": "string" }] }] });
    assert_eq!(
        errors(nested, json!([])),
        ["at root: expected string or null, found array of 0 items"]
    );
}

#[test]
fn any_of_reports_the_only_alternative_of_the_right_type() {
    let schema = json!({ "anyOf": [
        { "type": "object", "properties": { "n": { "type": "integer", "maximum": 3 } }, "required": ["n"] },
        { "type": "null" }
    ]});
    assert_eq!(
        errors(schema.clone(), json!({ "n": 4 })),
        ["at /n: must be at most 3; found 4"]
    );
    assert_eq!(
        errors(schema, json!("x")),
        ["at root: expected object or null, found string \"x\""]
    );
}

#[test]
fn any_of_discriminated_union_reports_closest_alternative() {
    let schema = json!({ "anyOf": [
        { "type": "object", "properties": { "kind": { "const": "circle" }, "r": { "type": "number" } },
          "required": ["kind", "r"], "additionalProperties": false },
        { "type": "object", "properties": { "kind": { "const": "rect" }, "w": { "type": "number" }, "h": { "type": "number" } },
          "required": ["kind", "w", "h"], "additionalProperties": false }
    ]});
    assert!(validate(&schema, &json!({ "kind": "rect", "w": 1, "h": 2 })).is_ok());
    assert_eq!(
        errors(schema, json!({ "kind": "rect", "w": 1 })),
        [
            "at root: matches none of the 2 alternatives in anyOf; the errors of the closest one (#2) follow",
            "at root: missing required property \"h\"",
        ]
    );
}

#[test]
fn one_of_requires_exactly_one_match() {
    let schema = json!({ "oneOf": [{ "type": "integer" }, { "type": "number", "minimum": 10 }] });
    assert!(validate(&schema, &json!(3)).is_ok());
    assert!(validate(&schema, &json!(10.5)).is_ok());
    assert_eq!(
        errors(schema.clone(), json!(12)),
        [
            "at root: must match exactly one of the 2 alternatives in oneOf, but matches alternatives #1 and #2"
        ]
    );
    assert_eq!(
        errors(schema, json!("x")),
        ["at root: expected integer or number, found string \"x\""]
    );
}

#[test]
fn all_of_and_not() {
    let schema = json!({ "allOf": [{ "type": "string", "minLength": 2 }, { "maxLength": 3 }], "not": { "const": "no" } });
    assert!(validate(&schema, &json!("yes")).is_ok());
    assert_eq!(
        errors(schema.clone(), json!("a")),
        ["at root: must be at least 2 characters long; found 1"]
    );
    assert_eq!(
        errors(schema.clone(), json!("abcd")),
        ["at root: must be at most 3 characters long; found 4"]
    );
    assert_eq!(
        errors(schema, json!("no")),
        ["at root: must not match the schema under \"not\"; found string \"no\""]
    );
}

#[test]
fn refs_to_defs_definitions_and_pointers() {
    let schema = json!({
        "type": "object",
        "properties": {
            "a": { "$ref": "#/$defs/name" },
            "b": { "$ref": "#/definitions/count" },
            "c": { "$ref": "#/properties/a" },
            "d": { "$ref": "#/$defs/with%20space" }
        },
        "$defs": { "name": { "type": "string" }, "with space": { "type": "boolean" } },
        "definitions": { "count": { "type": "integer", "minimum": 0 } }
    });
    assert!(validate(&schema, &json!({ "a": "x", "b": 1, "c": "y", "d": true })).is_ok());
    assert_eq!(
        errors(schema, json!({ "a": 1, "b": -1, "c": null, "d": 0 })),
        [
            "at /a: expected string, found integer 1",
            "at /b: must be at least 0; found -1",
            "at /c: expected string, found null",
            "at /d: expected boolean, found integer 0",
        ]
    );
}

#[test]
fn recursive_ref_validates_a_tree() {
    let schema = json!({
        "$ref": "#/$defs/node",
        "$defs": { "node": {
            "type": "object",
            "properties": {
                "name": { "type": "string" },
                "children": { "type": "array", "items": { "$ref": "#/$defs/node" } }
            },
            "required": ["name"]
        }}
    });
    let tree = json!({ "name": "root", "children": [
        { "name": "a", "children": [{ "name": "a1" }, { "name": 2 }] },
        { "children": [] }
    ]});
    assert_eq!(
        errors(schema.clone(), tree),
        [
            "at /children/0/children/1/name: expected string, found integer 2",
            "at /children/1: missing required property \"name\""
        ]
    );
    // The whole document as `#`.
    let self_ref = json!({ "type": "object", "properties": { "next": { "$ref": "#" }, "v": { "type": "integer" } } });
    assert_eq!(
        errors(self_ref, json!({ "next": { "next": { "v": "x" } } })),
        ["at /next/next/v: expected integer, found string \"x\""]
    );
}

#[test]
fn ref_cycles_and_deep_instances_stop_at_the_depth_guard() {
    let message =
        "not validated: more than 128 nested schema levels (the schema may contain a $ref cycle)";
    assert_eq!(
        errors(json!({ "$ref": "#" }), json!(1)),
        [format!("at root: {message}")]
    );
    let cycle = json!({ "$defs": { "a": { "$ref": "#/$defs/b" }, "b": { "anyOf": [{ "$ref": "#/$defs/a" }] } }, "$ref": "#/$defs/a" });
    assert!(validate(&cycle, &json!({})).is_err());
    // A list nested 200 deep against a recursive schema: an error, not a stack overflow.
    let schema = json!({ "type": "array", "items": { "$ref": "#" } });
    let mut deep = json!([]);
    for _ in 0..200 {
        deep = json!([deep]);
    }
    let errs = validate(&schema, &deep).unwrap_err();
    assert_eq!(errs.len(), 1);
    assert!(
        errs[0].message.starts_with("not validated: more than 128"),
        "{}",
        errs[0]
    );
}

#[test]
fn openai_strict_style_schema() {
    let schema = json!({
        "type": "object",
        "properties": {
            "location": { "type": "string", "description": "City and country" },
            "units": { "type": ["string", "null"], "enum": ["celsius", "fahrenheit", null] }
        },
        "required": ["location", "units"],
        "additionalProperties": false
    });
    assert!(validate(&schema, &json!({ "location": "Paris", "units": null })).is_ok());
    assert_eq!(
        errors(schema, json!({ "location": "Paris", "units": "kelvin" })),
        ["at /units: must be one of \"celsius\", \"fahrenheit\", null; found string \"kelvin\""]
    );
}

#[test]
fn ignored_keywords_do_not_reject() {
    let schema = json!({
        "type": "object",
        "properties": {
            "email": { "type": "string", "format": "email", "pattern": "^[a-z]+$" },
            "x": { "if": { "const": 1 }, "then": false }
        },
        "dependencies": { "email": ["x"] },
        "propertyNames": false,
        "unevaluatedProperties": false,
        "x-custom": 1
    });
    assert!(validate(&schema, &json!({ "email": "NOT AN EMAIL", "x": 1 })).is_ok());
}

#[test]
fn malformed_schemas_are_ignored_without_panicking() {
    let schemas = [
        json!({ "type": 5, "required": "path", "properties": [], "minimum": "3", "maxLength": -1 }),
        json!({ "type": [], "enum": [], "items": 3, "prefixItems": {}, "additionalProperties": "no" }),
        json!({ "type": "any", "$ref": "#/nope/0", "anyOf": [], "oneOf": {}, "allOf": null, "not": 1 }),
        json!({ "$ref": "http://example.com/schema.json", "multipleOf": 0, "minItems": 1.5 }),
        json!({ "$ref": "#/%zz", "multipleOf": -2, "exclusiveMinimum": "a", "uniqueItems": "yes" }),
        json!({ "properties": { "a": 7, "b": "string" }, "items": [1, 2], "additionalItems": 3 }),
        json!({ "$ref": 12, "const": { "a": [1, { "b": null }] }, "minProperties": 1e300 }),
        json!([1, 2, 3]),
        json!("string"),
        json!(null),
    ];
    let instances = [
        json!({ "a": 1, "b": [1, 2] }),
        json!([1, 1, "x"]),
        json!("text"),
        json!(12.5),
        json!(null),
        json!(u64::MAX),
        json!(i64::MIN),
        json!(1e308),
    ];
    for schema in &schemas {
        for instance in &instances {
            let _ = validate(schema, instance);
        }
    }
    // Shapes that cannot be schemas are ignored, so these accept anything.
    assert!(validate(&schemas[0], &json!({ "a": 1 })).is_ok());
    assert!(validate(&schemas[7], &json!("x")).is_ok());
}

#[test]
fn extreme_numbers_do_not_panic() {
    let schema = json!({ "type": "integer", "multipleOf": 7, "minimum": -1e308, "maximum": 1e308 });
    assert!(validate(&schema, &json!(i64::MIN)).is_err()); // not a multiple of 7
    assert!(validate(&schema, &json!(u64::MAX)).is_err());
    assert!(validate(&json!({ "multipleOf": 1e-308 }), &json!(1e308)).is_err());
    assert!(validate(&json!({ "multipleOf": u64::MAX }), &json!(u64::MAX)).is_ok());
    assert!(validate(&json!({ "multipleOf": -1 }), &json!(i64::MIN)).is_ok());
}

#[test]
fn combinatorial_schemas_stop_at_the_step_budget() {
    // Two alternatives that both recurse: 2^128 evaluations without a budget.
    let schema = json!({
        "$defs": { "a": { "anyOf": [{ "$ref": "#/$defs/a" }, { "allOf": [{ "$ref": "#/$defs/a" }] }] } },
        "$ref": "#/$defs/a"
    });
    assert_eq!(
        errors(schema, json!(1)),
        [
            "at root: not validated: more than 200000 schema evaluation steps \
          (the schema or the value is too large)"
        ]
    );
    // A large but legitimate value is far below the budget.
    let rows: Vec<Value> = (0..2000)
        .map(|i| json!({ "id": i, "tags": ["a", "b"] }))
        .collect();
    let table = json!({ "type": "array", "items": { "type": "object",
        "properties": { "id": { "type": "integer" }, "tags": { "type": "array", "items": { "type": "string" } } } } });
    assert!(validate(&table, &json!(rows)).is_ok());
}

#[test]
fn deep_recursive_nullable_list_reports_the_leaf_once() {
    // zod: `const node = z.lazy(() => z.object({ v: z.number(), next: node.nullable() }))`.
    let schema = json!({
        "$ref": "#/definitions/node",
        "definitions": { "node": {
            "type": "object",
            "properties": {
                "v": { "type": "number" },
                "next": { "anyOf": [{ "$ref": "#/definitions/node" }, { "type": "null" }] }
            },
            "required": ["v", "next"]
        }}
    });
    let mut list = json!({ "v": "bad", "next": null });
    let mut path = String::new();
    for i in 0..30 {
        list = json!({ "v": i, "next": list });
        path.push_str("/next");
    }
    assert_eq!(
        errors(schema, list),
        [format!(
            "at {path}/v: expected number, found string \"bad\""
        )]
    );
}

#[test]
fn unresolvable_local_refs_are_ignored() {
    let schema = json!({ "properties": { "a": { "$ref": "#/$defs/missing", "type": "string" } } });
    assert!(validate(&schema, &json!({ "a": "x" })).is_ok());
    assert_eq!(
        errors(schema, json!({ "a": 1 })),
        ["at /a: expected string, found integer 1"]
    );
}
