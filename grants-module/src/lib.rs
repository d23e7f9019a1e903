//! Remembered grants' own code (`gatehouse_agent::engine`'s `GrantRequest`, `Grant` and its
//! matcher) as a wasm module of its own. The npm package's main wasm keeps grants as JSON
//! text and leaves this out: `gatehouse.js` loads it only when a grant is made or listed, or
//! when the thread's store holds one as calls are gated (docs/design.md, "The grants'
//! module"). JSON text in and out; times are milliseconds since the epoch.

use gatehouse_agent::engine::{GrantBook, Grants, in_force, in_force_json, make_json};
use serde_json::{Map, Value};
use wasm_bindgen::prelude::*;

/// The grant `request` (an agent's `{ tool, scope, match?, expiresIn? }`) makes for its thread
/// `thread`, with `id`, at `now`, by `by`, as JSON; a malformed request throws the
/// `invalid_grant` message (a string).
#[wasm_bindgen]
pub fn make(
    request: &str,
    thread: &str,
    id: &str,
    now: f64,
    by: Option<String>,
) -> Result<String, String> {
    let value: Value = serde_json::from_str(request).map_err(|e| format!("invalid grant: {e}"))?;
    make_json(&value, thread, id, now as u64, by)
}

/// The grants among `texts` in force for `thread` at `now` (unreadable, expired and other
/// threads' left out), as JSON, in their order.
#[wasm_bindgen(js_name = inForce)]
pub fn in_force_of(texts: Vec<String>, thread: &str, now: f64) -> Vec<String> {
    in_force_json(texts.iter().map(String::as_str), thread, now as u64)
}

fn book(texts: &[String], thread: &str) -> Grants {
    Grants {
        thread: thread.to_owned(),
        list: in_force(texts.iter().map(String::as_str), thread, 0),
    }
}

fn inputs_of(inputs: &str) -> Map<String, Value> {
    serde_json::from_str(inputs).unwrap_or_default()
}

/// The grant among `texts` that approves a call of `tool` with `inputs` (JSON) in `thread`
/// at `now`: `[id, maker]` (the maker may be undefined), or undefined.
#[wasm_bindgen]
pub fn approving(
    texts: Vec<String>,
    thread: &str,
    tool: &str,
    inputs: &str,
    now: f64,
) -> Option<Vec<JsValue>> {
    let (id, by) = book(&texts, thread).approving(tool, &inputs_of(inputs), now as u64)?;
    Some(vec![
        id.into(),
        by.map_or(JsValue::UNDEFINED, JsValue::from),
    ])
}

/// Whether the grant `id` among `texts` still approves a call of `tool` with `inputs` in
/// `thread` at `now`.
#[wasm_bindgen(js_name = stillApproves)]
pub fn still_approves(
    texts: Vec<String>,
    thread: &str,
    id: &str,
    tool: &str,
    inputs: &str,
    now: f64,
) -> bool {
    book(&texts, thread).still_approves(id, tool, &inputs_of(inputs), now as u64)
}
