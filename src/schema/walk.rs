//! The validator's walk: boolean schemas, `nullable`, `$ref`, `type`, `enum`, `const` and the
//! combinators. Object, array, string and number keywords are in `keywords`.

use super::keywords;
use super::value::{describe, has_type, join_or, json_eq, push_index, push_token, render};
use super::value::{render_list, resolve_ref};
use super::{MAX_DEPTH, MAX_STEPS};
use serde_json::{Map, Value};

/// Most `enum` values quoted in a message.
const ENUM_PREVIEW: usize = 10;

/// An error as collected; `expected` is set for a type mismatch (the accepted type names), so
/// that failed `anyOf`/`oneOf` alternatives can be merged into one "expected A or B" message.
pub struct Issue {
    pub path: String,
    pub message: String,
    pub expected: Option<Vec<String>>,
}

pub struct Validator<'s> {
    root: &'s Value,
    /// JSON Pointer to the instance value being checked; pushed and truncated while walking.
    path: String,
    issues: Vec<Issue>,
    limit: usize,
    depth: usize,
    /// Schema evaluations so far, against [`MAX_STEPS`].
    steps: usize,
    /// Whether an evaluation was refused for lack of steps.
    exhausted: bool,
}

impl<'s> Validator<'s> {
    /// Collects at most `limit` issues of `instance` against `schema`.
    pub fn run(schema: &'s Value, instance: &Value, limit: usize) -> Vec<Issue> {
        let mut v = Validator {
            root: schema,
            path: String::new(),
            issues: Vec::new(),
            limit,
            depth: 0,
            steps: 0,
            exhausted: false,
        };
        v.check(schema, instance);
        if v.exhausted {
            // Every refused evaluation reported (so that no alternative matched by default);
            // one error says it all.
            let message = format!(
                "not validated: more than {MAX_STEPS} schema evaluation steps \
                 (the schema or the value is too large)"
            );
            return vec![Issue {
                path: String::new(),
                message,
                expected: None,
            }];
        }
        v.issues
    }

    /// Whether no more issues are wanted (the walk stops early then).
    pub fn full(&self) -> bool {
        self.issues.len() >= self.limit
    }

    /// Records an issue at the current path.
    pub fn report(&mut self, message: String) {
        if !self.full() {
            self.issues.push(Issue {
                path: self.path.clone(),
                message,
                expected: None,
            });
        }
    }

    fn report_type(&mut self, expected: Vec<String>, instance: &Value) {
        let message = format!(
            "expected {}, found {}",
            join_or(&expected),
            describe(instance)
        );
        if !self.full() {
            self.issues.push(Issue {
                path: self.path.clone(),
                message,
                expected: Some(expected),
            });
        }
    }

    /// Checks the value under object key `key`.
    pub fn check_key(&mut self, key: &str, schema: &'s Value, value: &Value) {
        let len = self.path.len();
        push_token(&mut self.path, key);
        self.check(schema, value);
        self.path.truncate(len);
    }

    /// Checks the value at array index `index`.
    pub fn check_index(&mut self, index: usize, schema: &'s Value, value: &Value) {
        let len = self.path.len();
        push_index(&mut self.path, index);
        self.check(schema, value);
        self.path.truncate(len);
    }

    /// Checks `instance` against `schema` (any JSON value; non-schemas are ignored).
    pub fn check(&mut self, schema: &'s Value, instance: &Value) {
        if self.full() {
            return;
        }
        if self.depth >= MAX_DEPTH {
            self.report(format!(
                "not validated: more than {MAX_DEPTH} nested schema levels \
                 (the schema may contain a $ref cycle)"
            ));
            return;
        }
        if self.steps >= MAX_STEPS {
            self.exhausted = true;
            self.report(String::new());
            return;
        }
        self.steps += 1;
        self.depth += 1;
        match schema {
            Value::Object(map) => self.check_object_schema(map, instance),
            Value::Bool(false) => self.report(format!(
                "no value is allowed here (the schema is false); found {}",
                describe(instance)
            )),
            // `true` accepts everything; any other JSON is not a schema and is ignored.
            _ => {}
        }
        self.depth -= 1;
    }

    fn check_object_schema(&mut self, map: &'s Map<String, Value>, instance: &Value) {
        if instance.is_null() && map.get("nullable") == Some(&Value::Bool(true)) {
            return;
        }
        if let Some(Value::String(reference)) = map.get("$ref") {
            if let Some(target) = resolve_ref(self.root, reference) {
                self.check(target, instance);
            }
        }
        if let Some(types) = map.get("type") {
            if !self.check_type(types, instance) {
                // Other keywords would only repeat that the value is of the wrong kind.
                return;
            }
        }
        if let Some(Value::Array(options)) = map.get("enum") {
            if !options.is_empty() && !options.iter().any(|o| json_eq(o, instance)) {
                self.report(format!(
                    "must be one of {}; found {}",
                    render_list(options, ENUM_PREVIEW),
                    describe(instance)
                ));
            }
        }
        if let Some(expected) = map.get("const") {
            if !json_eq(expected, instance) {
                self.report(format!(
                    "must be exactly {}; found {}",
                    render(expected),
                    describe(instance)
                ));
            }
        }
        match instance {
            Value::Object(obj) => keywords::object(self, map, obj),
            Value::Array(items) => keywords::array(self, map, items),
            Value::String(s) => keywords::string(self, map, s),
            Value::Number(n) => keywords::number(self, map, n),
            Value::Null | Value::Bool(_) => {}
        }
        self.check_combinators(map, instance);
    }

    /// `type` as a name or an array of names. Returns false (and reports) on a mismatch.
    fn check_type(&mut self, types: &Value, instance: &Value) -> bool {
        let ok = match types {
            Value::String(name) => has_type(instance, name),
            Value::Array(names) => {
                let mut strings = names.iter().filter_map(Value::as_str).peekable();
                // No usable name at all: a malformed `type`, ignored.
                strings.peek().is_none() || strings.any(|n| has_type(instance, n))
            }
            _ => true,
        };
        if !ok {
            let expected = match types {
                Value::String(name) => vec![name.clone()],
                Value::Array(names) => names
                    .iter()
                    .filter_map(Value::as_str)
                    .map(String::from)
                    .collect(),
                _ => Vec::new(),
            };
            self.report_type(expected, instance);
        }
        ok
    }

    fn check_combinators(&mut self, map: &'s Map<String, Value>, instance: &Value) {
        if let Some(Value::Array(all)) = map.get("allOf") {
            for sub in all {
                self.check(sub, instance);
            }
        }
        if let Some(Value::Array(any)) = map.get("anyOf") {
            if !any.is_empty() {
                self.check_any_of(any, instance);
            }
        }
        if let Some(Value::Array(one)) = map.get("oneOf") {
            if !one.is_empty() {
                self.check_one_of(one, instance);
            }
        }
        if let Some(not) = map.get("not") {
            if (not.is_object() || not.is_boolean()) && self.matches(not, instance) {
                self.report(format!(
                    "must not match the schema under \"not\"; found {}",
                    describe(instance)
                ));
            }
        }
    }

    // Each alternative is evaluated once, keeping its errors for the explanation: evaluating
    // again to explain would double the work at every level of a recursive schema.
    fn check_any_of(&mut self, options: &'s [Value], instance: &Value) {
        let limit = self.limit;
        let mut failures = Vec::new();
        for sub in options {
            let issues = self.sub_issues(sub, instance, limit);
            if issues.is_empty() {
                return;
            }
            failures.push(issues);
        }
        self.report_no_match(failures, instance, "anyOf");
    }

    fn check_one_of(&mut self, options: &'s [Value], instance: &Value) {
        let limit = self.limit;
        let mut failures = Vec::new();
        let mut matched = Vec::new();
        for (i, sub) in options.iter().enumerate() {
            let issues = self.sub_issues(sub, instance, limit);
            if issues.is_empty() {
                matched.push(i + 1);
                if matched.len() == 2 {
                    break;
                }
            } else {
                failures.push(issues);
            }
        }
        match matched.as_slice() {
            [] => self.report_no_match(failures, instance, "oneOf"),
            [_] => {}
            [a, b, ..] => self.report(format!(
                "must match exactly one of the {} alternatives in oneOf, \
                 but matches alternatives #{a} and #{b}",
                options.len()
            )),
        }
    }

    /// Issues of `instance` against `schema` at the current path, kept apart from ours.
    fn sub_issues(&mut self, schema: &'s Value, instance: &Value, limit: usize) -> Vec<Issue> {
        let saved = std::mem::take(&mut self.issues);
        let saved_limit = std::mem::replace(&mut self.limit, limit);
        self.check(schema, instance);
        self.limit = saved_limit;
        std::mem::replace(&mut self.issues, saved)
    }

    fn matches(&mut self, schema: &'s Value, instance: &Value) -> bool {
        self.sub_issues(schema, instance, 1).is_empty()
    }

    /// Explains why no alternative of `anyOf`/`oneOf` matched, from each one's errors: when
    /// each failed on the type alone, as one "expected A or B" message; when only one has the
    /// right type, with that one's errors; otherwise with a summary and the errors of the
    /// closest alternative (the one with the fewest errors).
    fn report_no_match(&mut self, branches: Vec<Vec<Issue>>, instance: &Value, keyword: &str) {
        let here = self.path.as_str();
        let type_only = |issues: &[Issue]| {
            issues
                .iter()
                .all(|i| i.expected.is_some() && i.path == here)
        };
        let candidates: Vec<usize> = (0..branches.len())
            .filter(|&b| !type_only(&branches[b]))
            .collect();
        match candidates.as_slice() {
            [] => {
                let mut expected: Vec<String> = Vec::new();
                for issue in branches.iter().flatten() {
                    for name in issue.expected.iter().flatten() {
                        if !expected.contains(name) {
                            expected.push(name.clone());
                        }
                    }
                }
                self.report_type(expected, instance);
            }
            [only] => self.extend(branches.into_iter().nth(*only)),
            _ => {
                let closest = candidates
                    .iter()
                    .copied()
                    .min_by_key(|&b| branches[b].len())
                    .unwrap_or(0);
                self.report(format!(
                    "matches none of the {} alternatives in {keyword}; \
                     the errors of the closest one (#{}) follow",
                    branches.len(),
                    closest + 1
                ));
                self.extend(branches.into_iter().nth(closest));
            }
        }
    }

    fn extend(&mut self, issues: Option<Vec<Issue>>) {
        for issue in issues.into_iter().flatten() {
            if self.full() {
                break;
            }
            self.issues.push(issue);
        }
    }
}
