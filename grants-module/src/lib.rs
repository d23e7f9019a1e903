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

/// What the engine asks of a thread's grants, read once from their stored JSON (the main
/// wasm's driver calls it for each gated call and each step of a run with a granted call).
#[wasm_bindgen]
pub struct Book(Grants);

#[wasm_bindgen]
impl Book {
    /// The grants among `texts` that may apply to `thread` (liveness is judged at each call).
    #[wasm_bindgen(constructor)]
    pub fn new(texts: Vec<String>, thread: &str) -> Book {
        Book(Grants {
            thread: thread.to_owned(),
            list: in_force(texts.iter().map(String::as_str), thread, 0),
        })
    }

    /// The grant that approves a call of `tool` with `inputs` (JSON) at `now`: `[id, maker]`
    /// (the maker may be undefined), or undefined.
    pub fn approving(&self, tool: &str, inputs: &str, now: f64) -> Option<Vec<JsValue>> {
        let (id, by) = self.0.approving(tool, &inputs_of(inputs), now as u64)?;
        Some(vec![
            id.into(),
            by.map_or(JsValue::UNDEFINED, JsValue::from),
        ])
    }

    /// Whether the grant `id` still approves a call of `tool` with `inputs` at `now`.
    #[wasm_bindgen(js_name = stillApproves)]
    pub fn still_approves(&self, id: &str, tool: &str, inputs: &str, now: f64) -> bool {
        self.0
            .still_approves(id, tool, &inputs_of(inputs), now as u64)
    }
}

fn inputs_of(inputs: &str) -> Map<String, Value> {
    serde_json::from_str(inputs).unwrap_or_default()
}
