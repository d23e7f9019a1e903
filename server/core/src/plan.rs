//! What the handler decides, pure: JSON text in, JSON text out, with the crate's own rules
//! (`store::wire`, `plan_commit`, `plan_renew`, `plan_release`, `page::window`). The handler
//! (`pkg-template/server.js`) does the I/O: it reads what these need inside its transaction and
//! writes what they plan (docs/design.md, "Across devices").
//!
//! Every answer is a JSON object: a refusal is `{"status": N, "error": WireError}`, anything
//! else is what the function documents.

use gatehouse_agent::engine::{Grant, GrantRequest};
use gatehouse_agent::store::authority::{
    DecideRequest, Granted, Refused, check_granted_write, cited_grants, plan_decide as decide,
    stamp_grants,
};
use gatehouse_agent::store::page::{Rows, window};
use gatehouse_agent::store::wire::{
    CommitRequest, Committed, LeaseRequest, WireError, action_of, plan_lease_request,
    remote_writer, stamp_identity,
};
use gatehouse_agent::store::{MessageRow, StoreError, Stored, ThreadRecord, plan_commit as plan};
use gatehouse_agent::thread::Message;
use serde_json::{Value, json};

/// A refusal: the HTTP status and the wire's error body.
fn refusal(status: u16, error: WireError) -> String {
    json!({ "status": status, "error": error }).to_string()
}

fn invalid(message: String) -> String {
    refusal(400, WireError::new("invalid_request", message))
}

/// A store refusal: `conflict` and `busy` are the caller's to retry (409); the rest (a
/// record of a newer release, stored data that cannot be read) is the storage's (500).
fn store_refusal(e: &StoreError) -> String {
    let status = match e {
        StoreError::Conflict { .. } | StoreError::Owned { .. } => 409,
        StoreError::Unauthorized(_) => 403,
        StoreError::Quota(_)
        | StoreError::Unavailable(_)
        | StoreError::Corrupt(_)
        | StoreError::Newer(_)
        | StoreError::Other(_) => 500,
    };
    refusal(status, WireError::of(e))
}

fn read_request<T: serde::de::DeserializeOwned>(body: &str, what: &str) -> Result<T, String> {
    serde_json::from_str(body).map_err(|e| invalid(format!("the {what} request is not valid: {e}")))
}

/// The stored record's text, read as a record: `Corrupt` when it is not one.
fn read_stored(thread_id: &str, text: &str) -> Result<ThreadRecord, StoreError> {
    serde_json::from_str(text).map_err(|e| {
        StoreError::Corrupt(format!(
            "the record of thread {thread_id:?} is unreadable: {e}"
        ))
    })
}

/// `{"action", "commitId"}` of a commit body, checked before anything is read. A commit is
/// always a `write`: a decision is sent as one ([`plan_decide`]).
pub fn commit_action(body: &str) -> String {
    match read_request::<CommitRequest>(body, "commit") {
        Ok(r) => json!({
            "action": action_of(&r.commit),
            "commitId": r.commit_id,
            "owner": r.owner,
            "leaseToken": r.lease_token,
            "grants": cited_grants(&r.commit),
        })
        .to_string(),
        Err(refused) => refused,
    }
}

/// `{"commitId", "decisions": [{"callId", "decision"}]}` of a decide body, for `authorize`,
/// or a refusal (`invalid_request`, `invalid_decision`).
pub fn decide_intent(body: &str) -> String {
    let request: DecideRequest = match read_request(body, "decide") {
        Ok(r) => r,
        Err(refused) => return refused,
    };
    match request.intent() {
        Ok(list) => json!({
            "commitId": request.commit_id,
            "decisions": list
                .into_iter()
                .map(|(call_id, kind)| json!({ "callId": call_id, "decision": kind }))
                .collect::<Vec<_>>(),
        })
        .to_string(),
        Err(e) => authority_refusal(&Refused::Engine(e)),
    }
}

fn authority_refusal(r: &Refused) -> String {
    match r {
        Refused::Store(e) => store_refusal(e),
        other => refusal(
            other.status(),
            WireError::new(other.code(), other.to_string()),
        ),
    }
}

/// A stored record, checked and rewritten as this release reads it, with what the handler
/// needs to read its rows: `{"record": text, "version", "messageCount", "auditCount"}`.
pub fn read_record(thread_id: &str, text: &str) -> String {
    match read_stored(thread_id, text) {
        Ok(r) => json!({
            "record": serde_json::to_string(&r).unwrap_or_default(),
            "version": r.version,
            "messageCount": r.message_count,
            "auditCount": r.audit_count,
            "leaseOwner": r.lease.as_ref().map(|l| l.owner.clone()),
        })
        .to_string(),
        Err(e) => store_refusal(&e),
    }
}

/// A stored record as a thread list shows it: as [`read_record`] reads it, without the MCP
/// servers' tool lists the thread was run with. `{"record": text}`, or a refusal.
pub fn list_record(thread_id: &str, text: &str) -> String {
    match read_stored(thread_id, text) {
        Ok(r) => json!({
            "record": serde_json::to_string(&ThreadRecord { mcp_tools: None, ..r })
                .unwrap_or_default(),
        })
        .to_string(),
        Err(e) => store_refusal(&e),
    }
}

/// Plans a commit the way the local stores do (`plan_commit`), with the handler's writer and
/// clock and the identity `authorize` returned. `record` is the stored record's text (`None`:
/// never written), `tail` the text of the row at its `messageCount`, `row_after_tail` whether
/// a row is stored after it. Answers `{"version", "updatedAt", "messageCount", "record": text, "answer": text, "rows":
/// [{seq, json}], "audit": [{seq, json}]}`, `answer` being the [`Committed`] body.
#[allow(clippy::too_many_arguments)]
pub fn plan_commit(
    thread_id: &str,
    record: Option<&str>,
    tail: Option<&str>,
    row_after_tail: bool,
    body: &str,
    now_ms: f64,
    identity: &str,
    holder: bool,
    grants: Option<&str>,
) -> String {
    // The grants the commit cites, as the handler read them (unrevoked): a JSON array of
    // their stored JSON texts.
    let grants: Vec<Grant> = match grants.map(serde_json::from_str::<Vec<String>>) {
        None => Vec::new(),
        Some(Ok(texts)) => texts
            .iter()
            .filter_map(|t| serde_json::from_str(t).ok())
            .collect(),
        Some(Err(e)) => return invalid(format!("the grants are not a list of texts: {e}")),
    };
    let granted = Granted {
        thread: thread_id,
        identity,
        grants: &grants,
        now_ms,
    };
    let mut request: CommitRequest = match read_request(body, "commit") {
        Ok(r) => r,
        Err(refused) => return refused,
    };
    let current = match record {
        Some(text) => match read_stored(thread_id, text) {
            Ok(r) => r,
            Err(e) => return store_refusal(&e),
        },
        None => ThreadRecord::new(thread_id, now_ms),
    };
    // An unreadable tail has no id: a rewrite cannot name it (as in memory.rs).
    let tail = tail.and_then(|t| serde_json::from_str::<Message>(t).ok());
    let tail_id = tail.as_ref().map(|m| m.id.to_string());
    // The run's lease is its holder's: a request that names the owner without the lease's
    // token is another writer, kept out while the lease is live.
    if let Some(l) = current
        .lease
        .as_ref()
        .filter(|l| l.owner == request.owner && !holder && l.until > now_ms)
    {
        return store_refusal(&StoreError::Owned {
            owner: l.owner.clone(),
        });
    }
    stamp_identity(&current, &mut request.commit, identity);
    stamp_grants(&mut request.commit, &granted);
    let writer = remote_writer(&request.owner, request.keep, now_ms);
    let stored = Stored {
        record: &current,
        tail_id: tail_id.as_deref(),
        row_after_tail,
    };
    // Whether the commit may be written now (a newer record, a stale version, another run's
    // lease, a tail it does not name: `storage`, `conflict`, `busy`), then whether it is a
    // step the writing device's engine could take (`illegal_write`).
    let planned = plan(
        stored,
        request.expected_version,
        &request.commit,
        &writer,
        now_ms,
    )
    .map_err(Refused::Store)
    .and_then(|p| {
        check_granted_write(
            &current,
            tail.as_ref(),
            &request.commit,
            request.keep,
            &granted,
        )
        .map(|()| p)
    });
    match planned {
        Ok(p) => {
            let record_text = serde_json::to_string(&p.record).unwrap_or_default();
            let answer = serde_json::to_string(&Committed {
                record: p.record.clone(),
                lease_token: None,
            })
            .unwrap_or_default();
            json!({
                "version": p.record.version,
                "updatedAt": p.record.updated_at,
                "messageCount": p.record.message_count,
                "record": record_text,
                "leased": p.record.lease.is_some(),
                "answer": answer,
                "rows": rows(&p.rows),
                "audit": rows(&p.audit),
            })
            .to_string()
        }
        Err(e) => authority_refusal(&e),
    }
}

/// Applies a decide body's decisions to the stored thread ([`decide`]), as `identity`, at the
/// handler's clock. Answers as [`plan_commit`] does, the `answer` being `{"record", "tail"}`
/// (the tail as written, its JSON text).
#[allow(clippy::too_many_arguments)]
pub fn plan_decide(
    thread_id: &str,
    record: Option<&str>,
    tail: Option<&str>,
    row_after_tail: bool,
    body: &str,
    now_ms: f64,
    identity: &str,
    machine: f64,
) -> String {
    let request: DecideRequest = match read_request(body, "decide") {
        Ok(r) => r,
        Err(refused) => return refused,
    };
    let current = match record {
        Some(text) => match read_stored(thread_id, text) {
            Ok(r) => r,
            Err(e) => return store_refusal(&e),
        },
        None => ThreadRecord::new(thread_id, now_ms),
    };
    let tail = tail.and_then(|t| serde_json::from_str::<Message>(t).ok());
    let tail_id = tail.as_ref().map(|m| m.id.to_string());
    let stored = Stored {
        record: &current,
        tail_id: tail_id.as_deref(),
        row_after_tail,
    };
    match decide(
        stored,
        tail.as_ref(),
        &request,
        identity,
        now_ms,
        machine as u64,
    ) {
        Ok(d) => {
            let p = d.plan;
            let record_text = serde_json::to_string(&p.record).unwrap_or_default();
            let tail_text = d.tail.map(|m| m.to_json_string());
            let answer = json!({ "record": p.record, "tail": tail_text }).to_string();
            json!({
                "version": p.record.version,
                "updatedAt": p.record.updated_at,
                "messageCount": p.record.message_count,
                "record": record_text,
                "leased": p.record.lease.is_some(),
                "answer": answer,
                "rows": rows(&p.rows),
                "audit": rows(&p.audit),
            })
            .to_string()
        }
        Err(e) => authority_refusal(&e),
    }
}

fn rows(rows: &[MessageRow]) -> Value {
    Value::Array(
        rows.iter()
            .map(|r| json!({ "seq": r.seq, "json": r.json }))
            .collect(),
    )
}

/// `{"owner", "op"}` of a lease body, or a refusal.
pub fn lease_request(body: &str) -> String {
    match read_request::<LeaseRequest>(body, "lease") {
        Ok(r) => serde_json::to_string(&r).unwrap_or_default(),
        Err(refused) => refused,
    }
}

/// Renews (to the handler's clock plus `LEASE_MS`) or releases `owner`'s lease on the stored
/// record: `{"ok": true, "record": text}` to write, `{"ok": false}` when the lease is not
/// `owner`'s (nothing to write). A thread never written has no lease.
pub fn plan_lease(
    thread_id: &str,
    record: Option<&str>,
    body: &str,
    now_ms: f64,
    holder: bool,
) -> String {
    let request: LeaseRequest = match read_request(body, "lease") {
        Ok(r) => r,
        Err(refused) => return refused,
    };
    // Only the holder of the lease's token renews or releases it.
    if !holder {
        return json!({ "ok": false }).to_string();
    }
    let Some(text) = record else {
        return json!({ "ok": false }).to_string();
    };
    let current = match read_stored(thread_id, text) {
        Ok(r) => r,
        Err(e) => return store_refusal(&e),
    };
    let planned = match plan_lease_request(&current, &request, now_ms) {
        Ok(r) => r,
        Err(e) => return store_refusal(&e),
    };
    match planned {
        Some(r) => json!({
            "ok": true,
            "version": r.version,
            "leased": r.lease.is_some(),
            "record": serde_json::to_string(&r).unwrap_or_default(),
        })
        .to_string(),
        None => json!({ "ok": false }).to_string(),
    }
}

/// The seqs of a page (`page::window` over the record's count of `kind`, "messages" or
/// "audit"): `{"first", "last"}`, inclusive, empty when `first > last`.
pub fn rows_window(
    thread_id: &str,
    record: &str,
    kind: &str,
    before_seq: Option<f64>,
    limit: u32,
) -> String {
    let kind = match kind {
        "messages" => Rows::Messages,
        "audit" => Rows::Audit,
        other => return invalid(format!("no rows named {other:?}")),
    };
    let current = match read_stored(thread_id, record) {
        Ok(r) => r,
        Err(e) => return store_refusal(&e),
    };
    let w = window(kind.count(&current), before_seq.map(|s| s as u64), limit);
    json!({ "first": w.start + 1, "last": w.end }).to_string()
}

/// A page that lacks a row its record counts: stored data changed outside Gatehouse.
pub fn missing_row(thread_id: &str, kind: &str, seq: f64) -> String {
    store_refusal(&StoreError::Corrupt(format!(
        "{kind} row {} of thread {thread_id:?} is missing",
        seq as u64
    )))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn value(text: &str) -> Value {
        serde_json::from_str(text).unwrap()
    }

    #[test]
    fn a_commit_body_with_an_unknown_key_is_invalid() {
        let v = value(&commit_action(r#"{"commitId":"c","bogus":1}"#));
        assert_eq!(v["status"], 400);
        assert_eq!(v["error"]["code"], "invalid_request");
        assert_eq!(value(&commit_action("not json"))["status"], 400);
    }

    #[test]
    fn an_unreadable_record_is_a_storage_refusal() {
        let v = value(&read_record("t", r#"{"id":"t","version":"x"}"#));
        assert_eq!(
            (v["status"].as_u64(), v["error"]["code"].as_str()),
            (Some(500), Some("storage"))
        );
    }

    #[test]
    fn a_newer_or_unreadable_record_reads_back_as_the_local_stores_say() {
        let newer = ThreadRecord {
            schema_version: 99,
            ..ThreadRecord::new("t", 0.0)
        };
        let text = serde_json::to_string(&newer).unwrap();
        let v = value(&plan_lease(
            "t",
            Some(&text),
            r#"{"owner":"a","op":"renew"}"#,
            0.0,
            true,
        ));
        let e: WireError = serde_json::from_value(v["error"].clone()).unwrap();
        assert_eq!(e.into_store_error(), StoreError::Newer(99));
        let v = value(&read_record("t", "{}"));
        let e: WireError = serde_json::from_value(v["error"].clone()).unwrap();
        assert!(matches!(e.into_store_error(), StoreError::Corrupt(_)));
    }

    #[test]
    fn a_window_names_seqs_not_indexes() {
        let r = serde_json::to_string(&ThreadRecord {
            message_count: 10,
            ..ThreadRecord::new("t", 0.0)
        })
        .unwrap();
        let v = value(&rows_window("t", &r, "messages", Some(8.0), 3));
        assert_eq!(
            (v["first"].as_u64(), v["last"].as_u64()),
            (Some(5), Some(7))
        );
        let v = value(&rows_window("t", &r, "audit", None, 3));
        assert_eq!(
            (v["first"].as_u64(), v["last"].as_u64()),
            (Some(1), Some(0))
        );
    }

    #[test]
    fn a_lease_of_a_thread_never_written_is_not_the_owners() {
        let v = value(&plan_lease(
            "t",
            None,
            r#"{"owner":"a","op":"renew"}"#,
            0.0,
            true,
        ));
        assert_eq!(v, json!({"ok": false}));
        let v = value(&plan_lease(
            "t",
            None,
            r#"{"owner":"a","op":"steal"}"#,
            0.0,
            true,
        ));
        assert_eq!(v["status"], 400);
    }

    #[test]
    fn expiry_from_delivery_moves_an_open_deadline_by_the_delay_only() {
        let mut r = serde_json::to_value(ThreadRecord::new("t", 0.0)).unwrap();
        r["version"] = json!(3);
        r["run"] = json!({"callMessageId": "m", "results": [], "gated": ["c1", "c2"],
            "deadlines": [{"callId": "c1", "at": 1000}],
            "audit": [{"seq": 1, "callId": "c1", "requestedAt": 400}, {"seq": 2, "callId": "c2", "requestedAt": 400}]});
        let text = r.to_string();
        let v = value(&plan_extend("t", &text, "c1", 700.0));
        assert_eq!(
            (
                v["changed"].as_bool(),
                v["version"].as_u64(),
                v["deadline"].as_u64()
            ),
            (Some(true), Some(4), Some(1300))
        );
        let moved: ThreadRecord = serde_json::from_str(v["record"].as_str().unwrap()).unwrap();
        assert_eq!(
            (moved.version, moved.run.unwrap().deadline("c1")),
            (4, Some(1300))
        );
        // Delivered no later than requested, no deadline, or already decided: unchanged.
        assert_eq!(
            value(&plan_extend("t", &text, "c1", 400.0)),
            json!({"changed": false})
        );
        assert_eq!(
            value(&plan_extend("t", &text, "c2", 700.0)),
            json!({"changed": false})
        );
        r["run"]["decisions"] = json!([{"callId": "c1", "approved": true, "inputs": {}}]);
        assert_eq!(
            value(&plan_extend("t", &r.to_string(), "c1", 700.0)),
            json!({"changed": false})
        );
        assert_eq!(value(&plan_extend("t", "{}", "c1", 700.0))["status"], 500);
    }
}

/// Expiry counted from delivery (docs/design.md, "Approval requests", `expireFrom`): the
/// deadline of the pending call `call_id` moved by the time between its request and its first
/// delivery, so the approver gets the whole `approvalTimeout` from the moment they were told.
/// `{"changed": false}` when the call has no deadline, is not open, or would not move; else
/// `{"changed": true, "version", "record"}`, one version on (every device reloads and re-arms
/// its expiry timer). Never shortens a deadline.
pub fn plan_extend(thread_id: &str, record: &str, call_id: &str, delivered_ms: f64) -> String {
    let unchanged = json!({ "changed": false }).to_string();
    let mut current = match read_stored(thread_id, record) {
        Ok(r) => r,
        Err(e) => return store_refusal(&e),
    };
    let delivered = delivered_ms.max(0.0) as u64;
    let Some(run) = current.run.as_mut() else {
        return unchanged;
    };
    let (Some(at), Some(requested)) = (
        run.deadline(call_id),
        run.audit(call_id).map(|a| a.requested_at),
    ) else {
        return unchanged;
    };
    if run.decisions.iter().any(|d| d.call_id == call_id) || delivered <= requested {
        return unchanged;
    }
    let moved = at.saturating_add(delivered - requested);
    run.set_deadline(call_id, Some(moved));
    current.version += 1;
    current.updated_at = current.updated_at.max(delivered_ms);
    json!({
        "changed": true,
        "version": current.version,
        "deadline": moved,
        "record": serde_json::to_string(&current).unwrap_or_default(),
    })
    .to_string()
}

/// A grant request (`POST B/grants`, docs/design.md "Remembered grants") checked before
/// `authorize`: `{"tool", "scope", "threadId"}` for it, or a refusal (`invalid_grant`, 400).
pub fn grant_intent(body: &str) -> String {
    match read_grant(body) {
        Ok(r) => {
            json!({ "tool": r.tool(), "scope": r.scope(), "threadId": r.thread_id() }).to_string()
        }
        Err(refused) => refused,
    }
}

/// The grant a checked request makes, with the handler's id and clock, by `identity`:
/// `{"grant": text, "expiresAt": ms | null}`, or a refusal.
pub fn make_grant(body: &str, id: &str, now_ms: f64, identity: &str) -> String {
    match read_grant(body) {
        Ok(r) => {
            let g = r.into_grant(
                id.to_owned(),
                now_ms.max(0.0) as u64,
                Some(identity.to_owned()),
            );
            json!({
                "grant": serde_json::to_string(&g).unwrap_or_default(),
                "expiresAt": g.expires_at,
            })
            .to_string()
        }
        Err(refused) => refused,
    }
}

fn read_grant(body: &str) -> Result<GrantRequest, String> {
    let bad = |m: String| refusal(400, WireError::new("invalid_grant", m));
    let value: Value =
        serde_json::from_str(body).map_err(|e| bad(format!("invalid grant: {e}")))?;
    GrantRequest::parse(&value).map_err(bad)
}
