//! Remembered grants (docs/design.md, "Remembered grants"): "always allow this tool", for a
//! thread, a user or the whole app, optionally only for inputs that match a pattern and only
//! until a time. A grant approves a call that would ask a human, as a decision the journal
//! records with the grant's id; it never covers a tool whose `allowedDecisions` excludes
//! "approve", and a call approved by a grant that is gone by the time it would start is asked
//! again.

use super::tools::check_tool_name;
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

/// Where a grant applies.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum GrantScope {
    /// One thread (`threadId`).
    Thread,
    /// Every thread of the identity that made it (on a local store: of this browser profile).
    User,
    /// Every thread, whoever runs it.
    App,
}

/// A stored grant, as `grants()` lists it. A key it does not know is refused: a record this
/// release cannot read approves nothing.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct Grant {
    pub id: String,
    pub tool: String,
    pub scope: GrantScope,
    /// The thread of a `thread` grant; absent otherwise.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub thread_id: Option<String>,
    /// Argument patterns: each key an input's name, each value what it must be (see
    /// [`matches`]). Absent: every call of the tool.
    #[serde(default, rename = "match", skip_serializing_if = "Option::is_none")]
    pub pattern: Option<Map<String, Value>>,
    pub created_at: u64,
    /// Who made it: on a remote store the identity `authorize` returned; locally the `by` the
    /// app passed, if any. A call it approves is decided by them.
    pub created_by: Option<String>,
    /// When it stops covering calls (ms since the epoch); `null`: never.
    pub expires_at: Option<u64>,
}

/// `grant({ tool, scope, match?, expiresIn? })`, as the app sends it (and the store handler's
/// `POST B/grants`, with `threadId` for a thread grant), checked: the grant it makes, less
/// what its maker's store gives it (id, time, maker).
#[derive(Debug, Clone, PartialEq)]
pub struct GrantRequest {
    grant: Grant,
    /// Milliseconds from now.
    expires_in: Option<u64>,
}

/// At most this many argument patterns in one grant, and this many bytes in one pattern.
pub const MAX_PATTERNS: usize = 16;
pub const MAX_PATTERN_BYTES: usize = 1024;
/// The longest `expiresIn`: a year.
pub const MAX_EXPIRES_IN_MS: u64 = 366 * 24 * 3600 * 1000;

/// The keys of a stored grant its maker's store fills in, never a request's.
const MADE: [&str; 4] = ["id", "createdAt", "createdBy", "expiresAt"];

impl GrantRequest {
    /// Reads and checks a request; the error is the `invalid_grant` message. It is read as
    /// the [`Grant`] it makes (one deserializer for both: the main wasm holds one).
    pub fn parse(value: &Value) -> Result<GrantRequest, String> {
        let bad = |m: String| format!("invalid grant: {m}");
        let Value::Object(fields) = value else {
            return Err(bad(
                "expected an object { tool, scope, match?, expiresIn? }".into(),
            ));
        };
        let mut fields = fields.clone();
        if let Some(k) = MADE.iter().find(|k| fields.contains_key(**k)) {
            return Err(bad(format!("unknown field `{k}`")));
        }
        let expires_in = match fields.remove("expiresIn") {
            None => None,
            Some(v) => match v.as_u64().filter(|ms| (1..=MAX_EXPIRES_IN_MS).contains(ms)) {
                Some(ms) => Some(ms),
                None => {
                    return Err(bad(format!(
                        "`expiresIn` is 1 to {MAX_EXPIRES_IN_MS} milliseconds, not {v}"
                    )));
                }
            },
        };
        fields.insert("id".into(), Value::String(String::new()));
        fields.insert("createdAt".into(), Value::from(0));
        fields.insert("createdBy".into(), Value::Null);
        fields.insert("expiresAt".into(), Value::Null);
        let grant: Grant = serde_json::from_str(&Value::Object(fields).to_string())
            .map_err(|e| bad(e.to_string()))?;
        check_tool_name(&grant.tool).map_err(bad)?;
        if let Some(p) = &grant.pattern {
            if p.is_empty() || p.len() > MAX_PATTERNS {
                return Err(bad(format!("`match` names 1 to {MAX_PATTERNS} inputs")));
            }
            for (k, v) in p {
                if v.to_string().len() + k.len() > MAX_PATTERN_BYTES {
                    return Err(bad(format!(
                        "the pattern for \"{k}\" exceeds {MAX_PATTERN_BYTES} bytes"
                    )));
                }
            }
        }
        match (grant.scope, &grant.thread_id) {
            (GrantScope::Thread, None) => Err(bad("a thread grant needs its thread".into())),
            (GrantScope::User | GrantScope::App, Some(_)) => {
                Err(bad("only a thread grant names a thread".into()))
            }
            _ => Ok(GrantRequest { grant, expires_in }),
        }
    }

    /// [`GrantRequest::parse`] of an agent's request (`grant()`): for its thread `thread`,
    /// which a thread grant gets here; the request names none.
    pub fn parse_in(value: &Value, thread: &str) -> Result<GrantRequest, String> {
        let mut value = value.clone();
        if let Value::Object(fields) = &mut value {
            if fields.contains_key("threadId") {
                return Err(
                    "invalid grant: unknown field `threadId` (a thread grant is for \
                    the agent's thread)"
                        .into(),
                );
            }
            if fields.get("scope").and_then(Value::as_str) == Some("thread") {
                fields.insert("threadId".into(), Value::String(thread.to_owned()));
            }
        }
        GrantRequest::parse(&value)
    }

    pub fn tool(&self) -> &str {
        &self.grant.tool
    }

    pub fn scope(&self) -> GrantScope {
        self.grant.scope
    }

    pub fn thread_id(&self) -> Option<&str> {
        self.grant.thread_id.as_deref()
    }

    /// The grant this request makes, with its id, at `now_ms`, by `by`.
    pub fn into_grant(self, id: String, now_ms: u64, by: Option<String>) -> Grant {
        Grant {
            id,
            created_at: now_ms,
            created_by: by,
            expires_at: self.expires_in.map(|ms| now_ms.saturating_add(ms)),
            ..self.grant
        }
    }
}

impl Grant {
    /// Whether the grant may approve a call of `tool` with `inputs` in `thread` at `now_ms`.
    /// The caller has checked that the tool allows "approve".
    pub fn covers(
        &self,
        tool: &str,
        inputs: &Map<String, Value>,
        thread: &str,
        now_ms: u64,
    ) -> bool {
        self.tool == tool
            && self.live(now_ms)
            && (self.scope != GrantScope::Thread || self.thread_id.as_deref() == Some(thread))
            && self.pattern.as_ref().is_none_or(|p| {
                p.iter()
                    .all(|(k, want)| inputs.get(k).is_some_and(|got| matches(want, got)))
            })
    }

    /// Whether the grant is live at `now_ms`.
    pub fn live(&self, now_ms: u64) -> bool {
        self.expires_at.is_none_or(|at| now_ms < at)
    }
}

/// What the engine asks of the grants in force for a thread (docs/design.md, "Remembered
/// grants"). [`Grants`] answers from the grants themselves; the npm package's main wasm asks
/// the grants' own module instead, so that it holds no grant reader or matcher
/// (src/driver/grants.rs).
pub trait GrantBook {
    /// The grant that approves a call of `tool` with `inputs` at `now_ms`: its id and its
    /// maker. The caller has checked that the tool allows "approve".
    fn approving(
        &self,
        tool: &str,
        inputs: &Map<String, Value>,
        now_ms: u64,
    ) -> Option<(String, Option<String>)>;

    /// Whether the grant `id` still approves that call at `now_ms`.
    fn still_approves(
        &self,
        id: &str,
        tool: &str,
        inputs: &Map<String, Value>,
        now_ms: u64,
    ) -> bool;
}

/// The grants in force for `thread`, matched here.
#[derive(Debug, Clone, Default)]
pub struct Grants {
    pub thread: String,
    pub list: Vec<Grant>,
}

impl GrantBook for Grants {
    fn approving(
        &self,
        tool: &str,
        inputs: &Map<String, Value>,
        now_ms: u64,
    ) -> Option<(String, Option<String>)> {
        self.list
            .iter()
            .find(|g| g.covers(tool, inputs, &self.thread, now_ms))
            .map(|g| (g.id.clone(), g.created_by.clone()))
    }

    fn still_approves(
        &self,
        id: &str,
        tool: &str,
        inputs: &Map<String, Value>,
        now_ms: u64,
    ) -> bool {
        self.list
            .iter()
            .any(|g| g.id == id && g.covers(tool, inputs, &self.thread, now_ms))
    }
}

/// No grant: approves nothing, and a call a grant approved is asked again.
#[derive(Debug, Clone, Copy, Default)]
pub struct NoGrants;

impl GrantBook for NoGrants {
    fn approving(
        &self,
        _: &str,
        _: &Map<String, Value>,
        _: u64,
    ) -> Option<(String, Option<String>)> {
        None
    }

    fn still_approves(&self, _: &str, _: &str, _: &Map<String, Value>, _: u64) -> bool {
        false
    }
}

/// The grants in force for `thread` at `now_ms` among `texts` (stored grants' JSON): a text
/// that cannot be read, another thread's thread grant and an expired grant are left out.
pub fn in_force<'a>(
    texts: impl IntoIterator<Item = &'a str>,
    thread: &str,
    now_ms: u64,
) -> Vec<Grant> {
    texts
        .into_iter()
        .filter_map(|t| serde_json::from_str::<Grant>(t).ok())
        .filter(|g| {
            g.live(now_ms)
                && (g.scope != GrantScope::Thread || g.thread_id.as_deref() == Some(thread))
        })
        .collect()
}

/// The grant an agent's `request` makes for its thread `thread`, with `id`, at `now_ms`, by
/// `by`, as the JSON the stores keep; the error is the `invalid_grant` message.
pub fn make_json(
    request: &Value,
    thread: &str,
    id: &str,
    now_ms: u64,
    by: Option<String>,
) -> Result<String, String> {
    let grant = GrantRequest::parse_in(request, thread)?.into_grant(id.to_owned(), now_ms, by);
    serde_json::to_string(&grant).map_err(|e| e.to_string())
}

/// [`in_force`], as the JSON of each grant.
pub fn in_force_json<'a>(
    texts: impl IntoIterator<Item = &'a str>,
    thread: &str,
    now_ms: u64,
) -> Vec<String> {
    in_force(texts, thread, now_ms)
        .iter()
        .filter_map(|g| serde_json::to_string(g).ok())
        .collect()
}

/// One argument pattern: a string is a glob for a string input (`*` is any run of characters
/// but `/`, `**` any run at all; nothing else is special), any other JSON value must be equal.
/// A value with a `..` path segment never matches a pattern with a wildcard: "under `/tmp/`"
/// does not cover `/tmp/../etc/passwd`.
pub fn matches(pattern: &Value, value: &Value) -> bool {
    match (pattern, value) {
        (Value::String(p), Value::String(v)) => {
            if !p.contains('*') {
                return p == v;
            }
            let dotdot = v.split(['/', '\\']).any(|s| s == "..");
            !dotdot && glob(p.as_bytes(), v.as_bytes())
        }
        _ => pattern == value,
    }
}

/// The positions of `v` reachable after each pattern token, one pass per token: O(pattern ×
/// value), never the exponential backtracking of a naive matcher (a pattern is at most
/// [`MAX_PATTERN_BYTES`]).
fn glob(p: &[u8], v: &[u8]) -> bool {
    let mut at = vec![false; v.len() + 1];
    at[0] = true;
    let mut i = 0;
    while i < p.len() {
        if p[i] == b'*' {
            let across = p.get(i + 1) == Some(&b'*');
            i += if across { 2 } else { 1 };
            let mut reach = false;
            for j in 0..=v.len() {
                reach = (reach && (across || v[j - 1] != b'/')) || at[j];
                at[j] = reach;
            }
        } else {
            for j in (0..=v.len()).rev() {
                at[j] = j > 0 && at[j - 1] && v[j - 1] == p[i];
            }
            i += 1;
        }
        if !at.contains(&true) {
            return false;
        }
    }
    at[v.len()]
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn grant(pattern: Value) -> Grant {
        let mut request = json!({ "tool": "delete_file", "scope": "user" });
        if !pattern.is_null() {
            request["match"] = pattern;
        }
        GrantRequest::parse(&request)
            .unwrap()
            .into_grant("g1".into(), 1000, Some("ann".into()))
    }

    fn inputs(v: Value) -> Map<String, Value> {
        v.as_object().cloned().unwrap()
    }

    #[test]
    fn globs_stay_in_their_segment_unless_doubled() {
        let s = |p: &str, v: &str| matches(&json!(p), &json!(v));
        assert!(s("/tmp/*", "/tmp/a.txt"));
        assert!(!s("/tmp/*", "/tmp/a/b.txt"));
        assert!(s("/tmp/**", "/tmp/a/b.txt"));
        assert!(!s("/tmp/**", "/tmpx/a"));
        assert!(s("*.txt", "notes.txt"));
        assert!(!s("*.txt", "notes.txt.exe"));
        assert!(s("report", "report"));
        assert!(!s("report", "report2"));
        // No normalization: a `..` segment never matches a wildcard.
        assert!(!s("/tmp/**", "/tmp/../etc/passwd"));
        assert!(!s("/tmp/*", "/tmp/.."));
        assert!(!s("C:\\tmp\\**", "C:\\tmp\\..\\x"));
        // Other JSON values: equality; a string pattern never matches a number.
        assert!(matches(&json!(5), &json!(5)));
        assert!(!matches(&json!("5"), &json!(5)));
        assert!(matches(&json!({"a": [1]}), &json!({"a": [1]})));
    }

    #[test]
    fn a_grant_covers_its_tool_its_pattern_its_thread_and_its_time() {
        let g = grant(json!({ "path": "/tmp/**" }));
        let tmp = inputs(json!({ "path": "/tmp/x", "force": true }));
        assert!(g.covers("delete_file", &tmp, "t1", 2000));
        assert!(!g.covers("send_email", &tmp, "t1", 2000));
        assert!(!g.covers(
            "delete_file",
            &inputs(json!({ "path": "/etc/x" })),
            "t1",
            2000
        ));
        assert!(!g.covers("delete_file", &inputs(json!({})), "t1", 2000));
        let mut t = g.clone();
        t.scope = GrantScope::Thread;
        t.thread_id = Some("t1".into());
        assert!(t.covers("delete_file", &tmp, "t1", 2000));
        assert!(!t.covers("delete_file", &tmp, "t2", 2000));
        let mut e = g.clone();
        e.expires_at = Some(3000);
        assert!(e.covers("delete_file", &tmp, "t1", 2999));
        assert!(!e.covers("delete_file", &tmp, "t1", 3000));
        assert!(grant(Value::Null).covers("delete_file", &inputs(json!({})), "t", 0));
    }

    #[test]
    fn an_agents_request_is_for_its_thread_and_names_none() {
        let r = GrantRequest::parse_in(&json!({ "tool": "x", "scope": "thread" }), "t1").unwrap();
        assert_eq!(r.thread_id(), Some("t1"));
        let r = GrantRequest::parse_in(&json!({ "tool": "x", "scope": "user" }), "t1").unwrap();
        assert_eq!(r.thread_id(), None);
        let e = GrantRequest::parse_in(
            &json!({ "tool": "x", "scope": "thread", "threadId": "t2" }),
            "t1",
        )
        .unwrap_err();
        assert!(e.contains("unknown field `threadId`"), "{e}");
        assert!(
            GrantRequest::parse_in(&json!("x"), "t1")
                .unwrap_err()
                .contains("expected an object")
        );
    }

    #[test]
    fn in_force_reads_the_texts_of_this_thread_and_now_and_skips_the_rest() {
        let text = |g: &Grant| serde_json::to_string(g).unwrap();
        let user = grant(Value::Null);
        let mut mine = user.clone();
        (mine.id, mine.scope, mine.thread_id) =
            ("g2".into(), GrantScope::Thread, Some("t1".into()));
        let mut other = mine.clone();
        (other.id, other.thread_id) = ("g3".into(), Some("t2".into()));
        let mut old = user.clone();
        (old.id, old.expires_at) = ("g4".into(), Some(1500));
        let texts = [
            text(&user),
            text(&mine),
            text(&other),
            text(&old),
            "{\"id\":\"g5\",\"future\":1}".into(),
            "not json".into(),
        ];
        let ids = |at| -> Vec<String> {
            in_force(texts.iter().map(String::as_str), "t1", at)
                .into_iter()
                .map(|g| g.id)
                .collect()
        };
        assert_eq!(ids(1000), ["g1", "g2", "g4"]);
        assert_eq!(ids(2000), ["g1", "g2"]);
    }

    #[test]
    fn a_book_answers_the_grant_and_its_maker_and_no_grants_none() {
        let tmp = inputs(json!({ "path": "/tmp/x" }));
        let book = Grants {
            thread: "t1".into(),
            list: vec![grant(json!({ "path": "/tmp/**" }))],
        };
        assert_eq!(
            book.approving("delete_file", &tmp, 2000),
            Some(("g1".into(), Some("ann".into())))
        );
        assert_eq!(
            book.approving("delete_file", &inputs(json!({ "path": "/etc" })), 2000),
            None
        );
        assert!(book.still_approves("g1", "delete_file", &tmp, 2000));
        assert!(!book.still_approves("g9", "delete_file", &tmp, 2000));
        assert_eq!(NoGrants.approving("delete_file", &tmp, 2000), None);
        assert!(!NoGrants.still_approves("g1", "delete_file", &tmp, 2000));
    }

    #[test]
    fn malformed_requests_are_refused_with_the_reason() {
        let bad = |v: Value, part: &str| {
            let e = GrantRequest::parse(&v).unwrap_err();
            assert!(e.contains(part), "{e}");
        };
        bad(
            json!({ "tool": "x", "scope": "session" }),
            "unknown variant",
        );
        bad(
            json!({ "tool": "x", "scope": "user", "mach": {} }),
            "unknown field",
        );
        bad(
            json!({ "tool": "bad name", "scope": "user" }),
            "must be 1 to 64",
        );
        bad(
            json!({ "tool": "x", "scope": "user", "match": {} }),
            "1 to 16",
        );
        bad(
            json!({ "tool": "x", "scope": "user", "match": [] }),
            "invalid type",
        );
        bad(
            json!({ "tool": "x", "scope": "user", "expiresIn": 0 }),
            "expiresIn",
        );
        bad(
            json!({ "tool": "x", "scope": "user", "expiresIn": -5 }),
            "not -5",
        );
        bad(
            json!({ "tool": "x", "scope": "user", "id": "mine" }),
            "unknown field `id`",
        );
        bad(json!("x"), "expected an object");
        bad(
            json!({ "tool": "x", "scope": "thread" }),
            "needs its thread",
        );
        bad(
            json!({ "tool": "x", "scope": "app", "threadId": "t" }),
            "only a thread grant",
        );
        let big = "x".repeat(2000);
        bad(
            json!({ "tool": "x", "scope": "user", "match": { "p": big } }),
            "exceeds",
        );
        let r = GrantRequest::parse(&json!({ "tool": "x", "scope": "user", "expiresIn": 60000 }))
            .unwrap();
        let g = r.into_grant("g".into(), 10, None);
        assert_eq!(g.expires_at, Some(60010));
        assert_eq!(
            serde_json::to_string(&g).unwrap(),
            r#"{"id":"g","tool":"x","scope":"user","createdAt":10,"createdBy":null,"expiresAt":60010}"#
        );
    }
}
