//! Helpers on JSON values: equality by value, short descriptions for messages, JSON Pointers.

use serde_json::{Number, Value};

/// Longest string or rendered value quoted in a message, in characters.
const PREVIEW_CHARS: usize = 40;

/// JSON equality where numbers compare by value (`1 == 1.0`) and key order does not matter.
pub fn json_eq(a: &Value, b: &Value) -> bool {
    match (a, b) {
        (Value::Null, Value::Null) => true,
        (Value::Bool(x), Value::Bool(y)) => x == y,
        (Value::Number(x), Value::Number(y)) => num_eq(x, y),
        (Value::String(x), Value::String(y)) => x == y,
        (Value::Array(x), Value::Array(y)) => {
            x.len() == y.len() && x.iter().zip(y).all(|(p, q)| json_eq(p, q))
        }
        (Value::Object(x), Value::Object(y)) => {
            x.len() == y.len()
                && x.iter()
                    .all(|(k, v)| y.get(k).is_some_and(|w| json_eq(v, w)))
        }
        _ => false,
    }
}

fn num_eq(x: &Number, y: &Number) -> bool {
    if let (Some(p), Some(q)) = (x.as_i64(), y.as_i64()) {
        return p == q;
    }
    if let (Some(p), Some(q)) = (x.as_u64(), y.as_u64()) {
        return p == q;
    }
    match (x.as_f64(), y.as_f64()) {
        (Some(p), Some(q)) => p == q,
        _ => false,
    }
}

/// Whether a number has no fractional part (`3` and `3.0` do, `3.5` does not).
pub fn is_integer(n: &Number) -> bool {
    n.is_i64()
        || n.is_u64()
        || n.as_f64()
            .is_some_and(|f| f.is_finite() && f.fract() == 0.0)
}

/// Whether `value` is of the JSON Schema type `name`; unknown names match anything.
pub fn has_type(value: &Value, name: &str) -> bool {
    match name {
        "null" => value.is_null(),
        "boolean" => value.is_boolean(),
        "string" => value.is_string(),
        "array" => value.is_array(),
        "object" => value.is_object(),
        "number" => value.is_number(),
        "integer" => matches!(value, Value::Number(n) if is_integer(n)),
        _ => true,
    }
}

/// The value's type and, for scalars, the value itself: `string "abc"`, `integer 3`,
/// `array of 2 items`, `object`.
pub fn describe(value: &Value) -> String {
    match value {
        Value::Null => "null".to_string(),
        Value::Bool(b) => if *b { "boolean true" } else { "boolean false" }.to_string(),
        Value::Number(n) if is_integer(n) => format!("integer {n}"),
        Value::Number(n) => format!("number {n}"),
        Value::String(_) => format!("string {}", render(value)),
        Value::Array(a) if a.len() == 1 => "array of 1 item".to_string(),
        Value::Array(a) => format!("array of {} items", a.len()),
        Value::Object(_) => "object".to_string(),
    }
}

/// Compact JSON text of a value, cut to [`PREVIEW_CHARS`] characters with `...`.
pub fn render(value: &Value) -> String {
    let text = crate::thread::json_text(value);
    match text.char_indices().nth(PREVIEW_CHARS) {
        Some((cut, _)) => {
            let mut short = text[..cut].to_string();
            short.push_str("...");
            short
        }
        None => text,
    }
}

/// `["a","b"]`-style list of rendered values, at most `max` of them.
pub fn render_list(values: &[Value], max: usize) -> String {
    let mut out = String::new();
    for (i, v) in values.iter().take(max).enumerate() {
        if i > 0 {
            out.push_str(", ");
        }
        out.push_str(&render(v));
    }
    if values.len() > max {
        out.push_str(&format!(", ... ({} more)", values.len() - max));
    }
    out
}

/// `a`, `a or b`, `a, b or c`.
pub fn join_or(names: &[String]) -> String {
    let mut out = String::new();
    for (i, n) in names.iter().enumerate() {
        if i > 0 {
            out.push_str(if i + 1 == names.len() { " or " } else { ", " });
        }
        out.push_str(n);
    }
    out
}

/// Appends `/token` to a JSON Pointer, escaping `~` and `/`.
pub fn push_token(path: &mut String, token: &str) {
    path.push('/');
    for c in token.chars() {
        match c {
            '~' => path.push_str("~0"),
            '/' => path.push_str("~1"),
            _ => path.push(c),
        }
    }
}

/// Appends `/index` to a JSON Pointer.
pub fn push_index(path: &mut String, index: usize) {
    use std::fmt::Write;
    let _ = write!(path, "/{index}");
}

/// Resolves a same-document `$ref` (`#` or `#/json/pointer`, percent-encoded or not) in `root`.
/// Anything else (remote refs, `#anchor`) resolves to `None`.
pub fn resolve_ref<'s>(root: &'s Value, reference: &str) -> Option<&'s Value> {
    let fragment = reference.strip_prefix('#')?;
    if fragment.is_empty() {
        return Some(root);
    }
    let pointer = fragment.strip_prefix('/')?;
    let mut node = root;
    for raw in pointer.split('/') {
        let token = decode_token(raw)?;
        node = match node {
            Value::Object(map) => map.get(&token)?,
            Value::Array(items) => items.get(token.parse::<usize>().ok()?)?,
            _ => return None,
        };
    }
    Some(node)
}

/// Undoes the URI fragment's percent-encoding, then the pointer's `~1` (`/`) and `~0` (`~`).
fn decode_token(raw: &str) -> Option<String> {
    let hex = |b: Option<&u8>| (*b? as char).to_digit(16);
    let bytes = raw.as_bytes();
    let mut decoded = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while let Some(&b) = bytes.get(i) {
        if b == b'%' {
            let (hi, lo) = (hex(bytes.get(i + 1))?, hex(bytes.get(i + 2))?);
            decoded.push((hi * 16 + lo) as u8);
            i += 3;
        } else {
            decoded.push(b);
            i += 1;
        }
    }
    let mut out = Vec::with_capacity(decoded.len());
    let mut i = 0;
    while let Some(&b) = decoded.get(i) {
        match (b, decoded.get(i + 1)) {
            (b'~', Some(b'1')) => (out.push(b'/'), i += 2),
            (b'~', Some(b'0')) => (out.push(b'~'), i += 2),
            _ => (out.push(b), i += 1),
        };
    }
    String::from_utf8(out).ok()
}
