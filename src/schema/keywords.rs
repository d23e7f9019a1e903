//! Keywords that apply to one kind of instance: objects, arrays, strings and numbers.
//! A keyword whose value has the wrong shape is ignored (see the module doc).

use super::value::{json_eq, render};
use super::walk::Validator;
use serde_json::{Map, Number, Value};
use std::fmt::Display;

/// Most property names listed after an "unexpected property" error.
const ALLOWED_PREVIEW: usize = 20;

/// A non-negative integer count (`3` or `3.0`); anything else is malformed.
fn count(value: Option<&Value>) -> Option<usize> {
    let n = value?.as_number()?;
    if let Some(u) = n.as_u64() {
        return Some(usize::try_from(u).unwrap_or(usize::MAX));
    }
    let f = n.as_f64()?;
    (f >= 0.0 && f.fract() == 0.0).then_some(f as usize)
}

fn is_schema(value: &Value) -> bool {
    value.is_object() || value.is_boolean()
}

/// Reports `{rule} {limit}{unit}; found {found}`, the shape of every bound message (one
/// formatting site keeps the wasm small).
fn bound_error(
    v: &mut Validator<'_>,
    rule: &str,
    limit: &dyn Display,
    unit: &str,
    found: &dyn Display,
) {
    v.report(format!("{rule} {limit}{unit}; found {found}"));
}

/// A pair of count bounds (`minItems`/`maxItems`, ...) against `len`; `units` are the
/// singular and plural unit texts.
fn check_counts(
    v: &mut Validator<'_>,
    [min, max]: [Option<&Value>; 2],
    len: usize,
    [at_least, at_most]: [&str; 2],
    units: [&str; 2],
) {
    if let Some(min) = count(min).filter(|&m| len < m) {
        bound_error(v, at_least, &min, units[usize::from(min != 1)], &len);
    }
    if let Some(max) = count(max).filter(|&m| len > m) {
        bound_error(v, at_most, &max, units[usize::from(max != 1)], &len);
    }
}

fn quote(s: &str) -> String {
    crate::thread::json_text(&Value::String(s.to_string()))
}

pub fn object<'s>(v: &mut Validator<'s>, map: &'s Map<String, Value>, obj: &Map<String, Value>) {
    if let Some(Value::Array(required)) = map.get("required") {
        for name in required.iter().filter_map(Value::as_str) {
            if !obj.contains_key(name) {
                v.report(format!("missing required property {}", quote(name)));
            }
        }
    }
    check_counts(
        v,
        [map.get("minProperties"), map.get("maxProperties")],
        obj.len(),
        ["must have at least", "must have at most"],
        [" property", " properties"],
    );
    let properties = match map.get("properties") {
        Some(Value::Object(p)) => Some(p),
        _ => None,
    };
    let has_patterns =
        matches!(map.get("patternProperties"), Some(Value::Object(p)) if !p.is_empty());
    let additional = map
        .get("additionalProperties")
        .filter(|a| is_schema(a) && !has_patterns);
    for (key, value) in obj {
        if v.full() {
            return;
        }
        if let Some(sub) = properties.and_then(|p| p.get(key)) {
            v.check_key(key, sub, value);
        } else if let Some(Value::Bool(false)) = additional {
            v.report(unexpected_property(key, properties));
        } else if let Some(sub) = additional {
            v.check_key(key, sub, value);
        }
    }
}

fn unexpected_property(key: &str, properties: Option<&Map<String, Value>>) -> String {
    let mut message = format!("unexpected property {}", quote(key));
    match properties {
        Some(p) if !p.is_empty() => {
            message.push_str("; allowed properties are ");
            for (i, name) in p.keys().take(ALLOWED_PREVIEW).enumerate() {
                if i > 0 {
                    message.push_str(", ");
                }
                message.push_str(&quote(name));
            }
            if p.len() > ALLOWED_PREVIEW {
                message.push_str(", ...");
            }
        }
        _ => message.push_str("; no properties are allowed here"),
    }
    message
}

pub fn array<'s>(v: &mut Validator<'s>, map: &'s Map<String, Value>, items: &[Value]) {
    check_counts(
        v,
        [map.get("minItems"), map.get("maxItems")],
        items.len(),
        ["must contain at least", "must contain at most"],
        [" item", " items"],
    );
    if map.get("uniqueItems") == Some(&Value::Bool(true)) {
        check_unique(v, items);
    }
    // 2020-12: `prefixItems` then `items` for the rest; draft 4-7: an `items` array (tuple)
    // then `additionalItems` for the rest; otherwise `items` for every item.
    let empty: &'s [Value] = &[];
    let (prefix, rest) = match (map.get("prefixItems"), map.get("items")) {
        (Some(Value::Array(prefix)), items) => (prefix.as_slice(), items),
        (_, Some(Value::Array(tuple))) => (tuple.as_slice(), map.get("additionalItems")),
        (_, items) => (empty, items),
    };
    let rest = rest.filter(|r| is_schema(r));
    for (i, item) in items.iter().enumerate() {
        if v.full() {
            return;
        }
        if let Some(sub) = prefix.get(i) {
            v.check_index(i, sub, item);
        } else if let Some(Value::Bool(false)) = rest {
            let unit = if prefix.len() == 1 {
                " item (no additional items are allowed)"
            } else {
                " items (no additional items are allowed)"
            };
            bound_error(v, "must contain at most", &prefix.len(), unit, &items.len());
            return;
        } else if let Some(sub) = rest {
            v.check_index(i, sub, item);
        }
    }
}

fn check_unique(v: &mut Validator<'_>, items: &[Value]) {
    for (i, a) in items.iter().enumerate() {
        for (j, b) in items.iter().enumerate().skip(i + 1) {
            if json_eq(a, b) {
                v.report(format!(
                    "items must be unique, but the items at indices {i} and {j} are equal ({})",
                    render(a)
                ));
                return;
            }
        }
    }
}

pub fn string(v: &mut Validator<'_>, map: &Map<String, Value>, s: &str) {
    let bounds = [map.get("minLength"), map.get("maxLength")];
    if bounds.iter().all(Option::is_none) {
        return;
    }
    // Unicode scalar values: the bytes that do not continue a UTF-8 sequence.
    let len = s.bytes().filter(|b| b & 0xC0 != 0x80).count();
    check_counts(
        v,
        bounds,
        len,
        ["must be at least", "must be at most"],
        [" character long", " characters long"],
    );
}

pub fn number(v: &mut Validator<'_>, map: &Map<String, Value>, n: &Number) {
    let Some(x) = n.as_f64() else { return };
    let bound = |key: &str| match map.get(key) {
        Some(Value::Number(b)) => b.as_f64().map(|f| (f, b)),
        _ => None,
    };
    // Draft 4: `"exclusiveMinimum": true` makes `minimum` strict.
    let strict_min = map.get("exclusiveMinimum") == Some(&Value::Bool(true));
    let strict_max = map.get("exclusiveMaximum") == Some(&Value::Bool(true));
    if let Some((min, text)) = bound("minimum") {
        if strict_min && x <= min {
            bound_error(v, "must be greater than", text, "", n);
        } else if x < min {
            bound_error(v, "must be at least", text, "", n);
        }
    }
    if let Some((max, text)) = bound("maximum") {
        if strict_max && x >= max {
            bound_error(v, "must be less than", text, "", n);
        } else if x > max {
            bound_error(v, "must be at most", text, "", n);
        }
    }
    if let Some((min, text)) = bound("exclusiveMinimum") {
        if x <= min {
            bound_error(v, "must be greater than", text, "", n);
        }
    }
    if let Some((max, text)) = bound("exclusiveMaximum") {
        if x >= max {
            bound_error(v, "must be less than", text, "", n);
        }
    }
    if let Some(Value::Number(m)) = map.get("multipleOf") {
        if !is_multiple(n, m) {
            bound_error(v, "must be a multiple of", m, "", n);
        }
    }
}

/// Whether `n` is a multiple of `m`; a `multipleOf` that is not positive is ignored.
fn is_multiple(n: &Number, m: &Number) -> bool {
    if let (Some(a), Some(b)) = (n.as_i64(), m.as_i64()) {
        return b <= 0 || a % b == 0;
    }
    if let (Some(a), Some(b)) = (n.as_u64(), m.as_u64()) {
        return b == 0 || a % b == 0;
    }
    let (Some(x), Some(d)) = (n.as_f64(), m.as_f64()) else {
        return true;
    };
    if d <= 0.0 || !d.is_finite() {
        return true;
    }
    let q = x / d;
    // Tolerate binary rounding: 0.3 / 0.1 is 2.9999999999999996.
    q.is_finite() && (q - q.round()).abs() <= 1e-9 * q.abs().max(1.0)
}
