//! Inputs for a demo tool call: each property of the tool's JSON Schema takes a value of its
//! kind from the user's text (e-mail addresses, URLs, paths, quoted strings, numbers, enum
//! words), in order of appearance; required ones it cannot find get a placeholder.

use super::{Unicode, word_positions};
use serde_json::{Map, Value, json};

/// The arguments object for a tool with `schema`, from the user's `text`.
pub(super) fn fill(schema: &Value, text: &str, uni: Unicode) -> Map<String, Value> {
    fill_object(schema, &Found::scan(text, uni), text, &mut Used::default())
}

/// Values found in the user's text, in order of appearance.
struct Found {
    uni: Unicode,
    quoted: Vec<String>,
    paths: Vec<String>,
    emails: Vec<String>,
    urls: Vec<String>,
    numbers: Vec<f64>,
}

/// How many of each kind one tool call has taken.
#[derive(Default)]
struct Used {
    quoted: usize,
    paths: usize,
    emails: usize,
    urls: usize,
    numbers: usize,
}

impl Found {
    fn scan(text: &str, uni: Unicode) -> Found {
        let mut f = Found {
            uni,
            quoted: Vec::new(),
            paths: Vec::new(),
            emails: Vec::new(),
            urls: Vec::new(),
            numbers: Vec::new(),
        };
        let mut rest = text;
        while let Some(open) = rest.find(['"', '“', '`']) {
            f.words(&rest[..open]);
            let quote_len = rest[open..].chars().next().map_or(1, char::len_utf8);
            let after = &rest[open + quote_len..];
            let Some(close) = after.find(['"', '”', '`']) else {
                rest = after;
                break;
            };
            f.value(&after[..close], true);
            let close_len = after[close..].chars().next().map_or(1, char::len_utf8);
            rest = &after[close + close_len..];
        }
        f.words(rest);
        f
    }

    fn words(&mut self, text: &str) {
        for raw in text.split_whitespace() {
            let tok = raw
                .trim_start_matches(['(', '[', '<', '\'', '‘'])
                .trim_end_matches(['.', ',', ';', ':', '!', '?', ')', ']', '>', '\'', '’']);
            self.value(tok, false);
        }
    }

    /// Sorts one token (or a quoted string) into its kind. A number is one as JSON writes it
    /// (`5`, `-2.5`, `1e3`), read by serde_json's parser: core's would add ~12 KB gzip.
    fn value(&mut self, tok: &str, quoted: bool) {
        if tok.trim().is_empty() {
            return;
        }
        if quoted {
            self.quoted.push(tok.to_owned());
        }
        if tok.starts_with("http://") || tok.starts_with("https://") {
            self.urls.push(tok.to_owned());
        } else if tok.contains('@') && tok.rsplit('@').next().is_some_and(|d| d.contains('.')) {
            self.emails.push(tok.to_owned());
        } else if let Ok(n) = serde_json::from_str::<f64>(tok) {
            if n.is_finite() && !quoted {
                self.numbers.push(n);
            }
        } else if is_path_like(tok) {
            self.paths.push(tok.to_owned());
        }
    }
}

fn is_path_like(tok: &str) -> bool {
    if tok.contains('/') || tok.contains('\\') || tok.starts_with('~') {
        return true;
    }
    // name.ext
    match tok.rsplit_once('.') {
        Some((stem, ext)) => {
            !stem.is_empty()
                && (1..=5).contains(&ext.len())
                && ext.chars().all(|c| c.is_ascii_alphanumeric())
                && ext.chars().any(|c| c.is_ascii_alphabetic())
        }
        None => false,
    }
}

fn take<T: Clone>(list: &[T], used: &mut usize) -> Option<T> {
    let v = list.get(*used).cloned();
    if v.is_some() {
        *used += 1;
    }
    v
}

fn fill_object(schema: &Value, found: &Found, text: &str, used: &mut Used) -> Map<String, Value> {
    let required: Vec<&str> = schema
        .get("required")
        .and_then(Value::as_array)
        .map(|r| r.iter().filter_map(Value::as_str).collect())
        .unwrap_or_default();
    let mut out = Map::new();
    if let Some(props) = schema.get("properties").and_then(Value::as_object) {
        for (name, prop) in props {
            let req = required.contains(&name.as_str());
            if let Some(v) = value_for(name, prop, req, found, text, used) {
                out.insert(name.clone(), v);
            }
        }
    }
    for name in required {
        if !out.contains_key(name) {
            out.insert(name.to_owned(), json!("demo"));
        }
    }
    out
}

fn value_for(
    name: &str,
    prop: &Value,
    required: bool,
    found: &Found,
    text: &str,
    used: &mut Used,
) -> Option<Value> {
    let lname = (found.uni.lowercase)(name);
    let default = prop.get("default").cloned();
    if let Some(options) = prop.get("enum").and_then(Value::as_array) {
        let lower = (found.uni.lowercase)(text);
        let named = options.iter().find(|o| {
            o.as_str().is_some_and(|s| {
                word_positions(&lower, found.uni)
                    .iter()
                    .any(|(_, w)| *w == (found.uni.lowercase)(s))
            })
        });
        let fallback = || default.clone().or_else(|| options.first().cloned());
        return named
            .cloned()
            .or_else(|| if required { fallback() } else { None });
    }
    let ty = match prop.get("type") {
        Some(Value::String(t)) => t.as_str(),
        Some(Value::Array(ts)) => ts
            .iter()
            .filter_map(Value::as_str)
            .find(|t| *t != "null")
            .unwrap_or("string"),
        _ => "string",
    };
    let minimum = prop.get("minimum").and_then(Value::as_f64).unwrap_or(1.0);
    let found_value = match ty {
        "integer" => take(&found.numbers, &mut used.numbers).map(|n| json!(n.trunc() as i64)),
        "number" => take(&found.numbers, &mut used.numbers).map(|n| json!(n)),
        "boolean" | "object" => None,
        "array" => {
            let items = prop.get("items").unwrap_or(&Value::Null);
            value_for(name, items, false, found, text, used).map(|v| json!([v]))
        }
        _ => {
            let format = prop.get("format").and_then(Value::as_str).unwrap_or("");
            if format == "email"
                || lname.contains("email")
                || ["to", "cc", "bcc", "recipient"].contains(&lname.as_str())
            {
                take(&found.emails, &mut used.emails).map(Value::String)
            } else if format == "uri" || lname.contains("url") || lname.contains("link") {
                take(&found.urls, &mut used.urls).map(Value::String)
            } else if ["path", "file", "dir", "folder"]
                .iter()
                .any(|k| lname.contains(k))
            {
                take(&found.paths, &mut used.paths)
                    .or_else(|| take(&found.quoted, &mut used.quoted))
                    .map(Value::String)
            } else {
                take(&found.quoted, &mut used.quoted).map(Value::String)
            }
        }
    };
    if found_value.is_some() || !required {
        return found_value.or(default);
    }
    if default.is_some() {
        return default;
    }
    Some(match ty {
        "integer" => json!(minimum.max(1.0) as i64),
        "number" => json!(minimum.max(1.0)),
        "boolean" => json!(false),
        "array" => json!([]),
        "object" => Value::Object(fill_object(prop, found, text, used)),
        _ => json!(placeholder(&lname, text)),
    })
}

fn placeholder(lname: &str, text: &str) -> String {
    if lname.contains("email") || ["to", "cc", "bcc", "recipient"].contains(&lname) {
        "someone@example.com".to_owned()
    } else if lname.contains("url") || lname.contains("link") {
        "https://example.com".to_owned()
    } else if ["path", "file", "dir", "folder"]
        .iter()
        .any(|k| lname.contains(k))
    {
        "demo.txt".to_owned()
    } else if ["subject", "title"].iter().any(|k| lname.contains(k)) {
        "Demo".to_owned()
    } else if ["body", "text", "content", "message", "query", "prompt"]
        .iter()
        .any(|k| lname.contains(k))
    {
        text.to_owned()
    } else {
        "demo".to_owned()
    }
}
