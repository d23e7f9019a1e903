//! The store handler's core (`gatehouse-agent/server`, docs/design.md "Across devices"): the
//! crate's commit rule and the wire's rules, exported to JS as JSON text in, JSON text out.
//! Glue only: every function is [`plan`]'s.

pub mod plan;

use wasm_bindgen::prelude::wasm_bindgen;

#[wasm_bindgen(js_name = commitAction)]
pub fn commit_action(body: &str) -> String {
    plan::commit_action(body)
}

#[wasm_bindgen(js_name = decideIntent)]
pub fn decide_intent(body: &str) -> String {
    plan::decide_intent(body)
}

#[wasm_bindgen(js_name = readRecord)]
pub fn read_record(thread_id: &str, text: &str) -> String {
    plan::read_record(thread_id, text)
}

#[allow(clippy::too_many_arguments)]
#[wasm_bindgen(js_name = listRecord)]
pub fn list_record(thread_id: &str, text: &str) -> String {
    plan::list_record(thread_id, text)
}

#[allow(clippy::too_many_arguments)]
#[wasm_bindgen(js_name = planCommit)]
pub fn plan_commit(
    thread_id: &str,
    record: Option<String>,
    tail: Option<String>,
    row_after_tail: bool,
    body: &str,
    now_ms: f64,
    identity: &str,
    holder: bool,
    grants: Option<String>,
) -> String {
    plan::plan_commit(
        thread_id,
        record.as_deref(),
        tail.as_deref(),
        row_after_tail,
        body,
        now_ms,
        identity,
        holder,
        grants.as_deref(),
    )
}

#[allow(clippy::too_many_arguments)]
#[wasm_bindgen(js_name = planDecide)]
pub fn plan_decide(
    thread_id: &str,
    record: Option<String>,
    tail: Option<String>,
    row_after_tail: bool,
    body: &str,
    now_ms: f64,
    identity: &str,
    machine: f64,
) -> String {
    plan::plan_decide(
        thread_id,
        record.as_deref(),
        tail.as_deref(),
        row_after_tail,
        body,
        now_ms,
        identity,
        machine,
    )
}

#[wasm_bindgen(js_name = leaseRequest)]
pub fn lease_request(body: &str) -> String {
    plan::lease_request(body)
}

#[wasm_bindgen(js_name = planLease)]
pub fn plan_lease(
    thread_id: &str,
    record: Option<String>,
    body: &str,
    now_ms: f64,
    holder: bool,
) -> String {
    plan::plan_lease(thread_id, record.as_deref(), body, now_ms, holder)
}

#[wasm_bindgen(js_name = rowsWindow)]
pub fn rows_window(
    thread_id: &str,
    record: &str,
    kind: &str,
    before_seq: Option<f64>,
    limit: u32,
) -> String {
    plan::rows_window(thread_id, record, kind, before_seq, limit)
}

#[wasm_bindgen(js_name = missingRow)]
pub fn missing_row(thread_id: &str, kind: &str, seq: f64) -> String {
    plan::missing_row(thread_id, kind, seq)
}

#[wasm_bindgen(js_name = planExtend)]
pub fn plan_extend(thread_id: &str, record: &str, call_id: &str, delivered_ms: f64) -> String {
    plan::plan_extend(thread_id, record, call_id, delivered_ms)
}

#[wasm_bindgen(js_name = grantIntent)]
pub fn grant_intent(body: &str) -> String {
    plan::grant_intent(body)
}

#[wasm_bindgen(js_name = makeGrant)]
pub fn make_grant(body: &str, id: &str, now_ms: f64, identity: &str) -> String {
    plan::make_grant(body, id, now_ms, identity)
}
