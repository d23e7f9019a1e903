//! Remembered grants (docs/design.md, "Remembered grants"): a grant approves, when the tool
//! call is written, a call that would ask a human; it never covers a tool that cannot be
//! approved; a call it approved runs only while it still covers it; and the store handler's
//! authority accepts a grant's approval only for a grant it holds, for this writer, covering
//! exactly that call, and stamps who decided.

mod support;

use gatehouse_agent::engine::results::GRANT_GONE_REASON;
use gatehouse_agent::engine::*;
use gatehouse_agent::store::authority::{
    DecideRequest, Granted, Refused, check_granted_write, cited_grants, decide_writer, plan_decide,
    stamp_grants,
};
use gatehouse_agent::store::wire::{remote_writer, stamp_identity};
use gatehouse_agent::store::{MemoryStore, ThreadRecord};
use gatehouse_agent::thread::ApprovalState;
use serde_json::{Value, json};
use support::*;

const THREAD: &str = "t";

fn grant(id: &str, scope: &str, pattern: Value, by: &str) -> Grant {
    let mut request = json!({ "tool": "delete_file", "scope": scope });
    if scope == "thread" {
        request["threadId"] = json!(THREAD);
    }
    if !pattern.is_null() {
        request["match"] = pattern;
    }
    GrantRequest::parse(&request)
        .expect("a well-formed grant")
        .into_grant(id.into(), T0, Some(by.into()))
}

fn with_grants(grants: Vec<Grant>) -> Harness {
    let mut h = Harness::new(standard_tools());
    h.engine.set_grants(THREAD, grants);
    h
}

#[test]
fn a_covering_grant_approves_the_call_as_its_maker_and_the_trail_names_it() {
    let mut h = with_grants(vec![grant(
        "g1",
        "user",
        json!({ "path": "/tmp/**" }),
        "ann",
    )]);
    h.script([
        calls(vec![call(
            "c1",
            "delete_file",
            json!({ "path": "/tmp/a/b.txt" }),
        )]),
        answer("deleted"),
    ]);
    let out = h.chat("clean up").unwrap();
    assert_eq!(
        out,
        Some(Outcome::Completed {
            max_steps_reached: false
        })
    );
    assert_eq!(h.executed.len(), 1, "the call ran without asking");
    let call_msg = &h.store.messages[1];
    let e = &call_msg.tool_calls().unwrap()[0];
    assert_eq!(e.approval_state(), Some(ApprovalState::Approved));
    assert!(
        call_msg.resume_token().is_none(),
        "nothing waited: no resume token"
    );
    let a = &h.store.audit[0];
    assert_eq!(a.decision, Some(AuditDecision::Approved));
    assert_eq!(a.grant_id.as_deref(), Some("g1"));
    assert_eq!(a.decided_by.as_deref(), Some("ann"));
    assert_eq!(a.decided_at, Some(a.requested_at));
    assert_eq!(a.outcome, Some(AuditOutcome::Ok));
    let json = serde_json::to_value(a).unwrap();
    let keys: Vec<&str> = json
        .as_object()
        .unwrap()
        .keys()
        .map(String::as_str)
        .collect();
    assert_eq!(
        keys,
        [
            "seq",
            "callId",
            "tool",
            "reason",
            "proposedInputs",
            "requestedAt",
            "decision",
            "rejectReason",
            "decidedAt",
            "decidedBy",
            "grantId",
            "inputs",
            "startedAt",
            "endedAt",
            "outcome"
        ]
    );
}

#[test]
fn a_call_the_grant_does_not_cover_asks_a_human() {
    // Outside the pattern, another thread's grant, an expired grant, an engine told no grants.
    let cases: Vec<(&str, Vec<Grant>, &str)> = vec![
        (
            "outside the pattern",
            vec![grant("g1", "user", json!({ "path": "/tmp/*" }), "ann")],
            "/tmp/a/b.txt",
        ),
        (
            "a dot-dot escape",
            vec![grant("g1", "app", json!({ "path": "/tmp/**" }), "ann")],
            "/tmp/../etc/passwd",
        ),
        ("no grants", vec![], "/tmp/a.txt"),
        (
            "expired",
            vec![Grant {
                expires_at: Some(T0 + 1),
                ..grant("g1", "user", Value::Null, "ann")
            }],
            "/tmp/a.txt",
        ),
        (
            "another thread's",
            vec![Grant {
                thread_id: Some("other".into()),
                ..grant("g1", "thread", Value::Null, "ann")
            }],
            "/tmp/a.txt",
        ),
    ];
    for (why, grants, path) in cases {
        let mut h = with_grants(grants);
        let out = h.one_gated_call("c1", path, "delete");
        assert_eq!(out, Some(Outcome::AwaitingApproval), "{why}");
        assert!(h.executed.is_empty(), "{why}");
        assert_eq!(h.store.audit[0].grant_id, None, "{why}");
        assert_eq!(h.store.audit[0].decision, None, "{why}");
    }
}

#[test]
fn a_grant_never_covers_a_tool_that_cannot_be_approved() {
    let mut tools = standard_tools();
    tools[0].allowed_decisions = AllowedDecisions::parse(&["reject"]).unwrap();
    let mut h = Harness::new(tools);
    h.engine
        .set_grants(THREAD, vec![grant("g1", "app", Value::Null, "ann")]);
    let out = h.one_gated_call("c1", "/tmp/a.txt", "delete");
    assert_eq!(out, Some(Outcome::AwaitingApproval));
    assert!(h.executed.is_empty());
}

#[test]
fn a_call_whose_grant_is_revoked_before_it_starts_asks_a_human() {
    let mut h = with_grants(vec![grant("g1", "user", Value::Null, "ann")]);
    // c1 is covered; c2 (send_email, gated by its policy) waits for a human, so c1 waits too.
    h.script([calls(vec![
        call("c1", "delete_file", json!({ "path": "/tmp/a.txt" })),
        call("c2", "send_email", json!({ "to": "bob@example.com" })),
    ])]);
    assert_eq!(h.chat("go").unwrap(), Some(Outcome::AwaitingApproval));
    assert_eq!(
        h.tail_entry("c1").approval_state(),
        Some(ApprovalState::Approved)
    );
    assert!(h.tail_entry("c2").is_pending());
    // Revoked meanwhile (another tab, another device): the list no longer has it.
    h.engine.set_grants(THREAD, vec![]);
    let out = h.decide(json!({ "c2": "approve" })).unwrap();
    assert_eq!(out, Some(Outcome::AwaitingApproval));
    assert!(h.executed.is_empty(), "nothing ran");
    let c1 = h.tail_entry("c1");
    assert!(c1.is_pending());
    assert_eq!(
        c1.approval.as_ref().unwrap().reason.as_deref(),
        Some(GRANT_GONE_REASON)
    );
    let first = &h.store.audit[0];
    assert_eq!(
        (first.grant_id.as_deref(), first.outcome),
        (Some("g1"), Some(AuditOutcome::Regated))
    );
    // A human approves it now: both run, in message order.
    h.script([answer("done")]);
    h.decide_by(json!({ "c1": "approve" }), Some("bob"))
        .unwrap();
    let ran: Vec<&str> = h.executed.iter().map(|(id, _)| id.as_str()).collect();
    assert_eq!(ran, ["c1", "c2"]);
    let last = h.store.audit.iter().rfind(|a| a.call_id == "c1").unwrap();
    assert_eq!(
        (last.grant_id.as_deref(), last.decided_by.as_deref()),
        (None, Some("bob"))
    );
}

#[test]
fn an_engine_that_does_not_know_the_grants_does_not_second_guess_them() {
    // The store handler's decide has no grants: a call a grant approved stays approved.
    let mut h = with_grants(vec![grant("g1", "user", Value::Null, "ann")]);
    h.script([calls(vec![
        call("c1", "delete_file", json!({ "path": "/tmp/a.txt" })),
        call("c2", "send_email", json!({ "to": "bob@example.com" })),
    ])]);
    h.chat("go").unwrap();
    let state = h.store.state();
    let mut server = Engine::new(
        ToolSet::default(),
        EngineConfig {
            tools_elsewhere: true,
            model_here: false,
            ..EngineConfig::default()
        },
        state,
        3,
    );
    server
        .submit_decisions(
            &decisions(json!({ "c2": "approve" })),
            T0 + 99_000,
            Some("bob"),
        )
        .unwrap();
    while let Some(step) = server.poll() {
        if let Step::Persist(c) = step {
            let t = c.replace_tail.or(c.append.last().cloned()).unwrap();
            let e = &t.tool_calls().unwrap()[0];
            assert_eq!(e.approval_state(), Some(ApprovalState::Approved));
        }
    }
}

/// The handler's commit path, reduced to its rules, with the grants it read for the commit.
struct Handler {
    store: MemoryStore,
    now: f64,
}

impl Handler {
    fn new(name: &str) -> Self {
        Handler {
            store: MemoryStore::open(name),
            now: T0 as f64,
        }
    }

    fn write(
        &self,
        c: &Commit,
        keep: bool,
        who: &str,
        grants: &[Grant],
    ) -> Result<ThreadRecord, Refused> {
        let s = self.store.load(THREAD, self.now).unwrap();
        let granted = Granted {
            thread: THREAD,
            identity: who,
            grants,
            now_ms: self.now,
        };
        let mut c = c.clone();
        stamp_identity(&s.record, &mut c, who);
        stamp_grants(&mut c, &granted);
        check_granted_write(&s.record, s.tail.as_ref(), &c, keep, &granted)?;
        self.store
            .commit(
                THREAD,
                s.record.version,
                &c,
                &remote_writer("w1", keep, self.now),
                self.now,
            )
            .map_err(Refused::Store)
    }
}

/// A device whose grant `g` approves c1: its commits (user message, model answer with the
/// approved call, started mark, result, answer).
fn granted_run(g: &Grant) -> Vec<Commit> {
    let mut h = with_grants(vec![g.clone()]);
    h.script([
        calls(vec![call(
            "c1",
            "delete_file",
            json!({ "path": "/tmp/a.txt" }),
        )]),
        answer("deleted"),
    ]);
    h.chat("clean up").unwrap();
    assert_eq!(h.executed.len(), 1);
    h.store.commits.clone()
}

#[test]
fn the_handler_accepts_a_grants_approval_only_for_a_grant_it_holds_for_this_writer() {
    let ann = grant("g1", "user", json!({ "path": "/tmp/**" }), "ann");
    let run = granted_run(&ann);
    assert_eq!(
        cited_grants(&run[1]),
        ["g1"],
        "the tool call commit cites its grant"
    );

    // The grant's maker, with the grant: every write is legal; the trail says ann decided.
    let h = Handler::new("grants-ok");
    for (i, c) in run.iter().enumerate() {
        h.write(c, i + 1 < run.len(), "ann", std::slice::from_ref(&ann))
            .unwrap_or_else(|e| panic!("write {i}: {e}"));
    }
    let trail = h
        .store
        .rows(gatehouse_agent::store::page::Rows::Audit, THREAD, None, 10)
        .unwrap();
    let rec: AuditRecord = serde_json::from_str(&trail[0].json).unwrap();
    assert_eq!(
        (
            rec.grant_id.as_deref(),
            rec.decided_by.as_deref(),
            rec.outcome
        ),
        (Some("g1"), Some("ann"), Some(AuditOutcome::Ok))
    );

    // Each forgery is refused at the tool call's write, which writes nothing.
    let other_thread = Grant {
        scope: GrantScope::Thread,
        thread_id: Some("other".into()),
        created_by: Some("ann".into()),
        ..ann.clone()
    };
    let narrower = grant("g1", "user", json!({ "path": "/home/*" }), "ann");
    let expired = Grant {
        expires_at: Some(T0),
        ..ann.clone()
    };
    let cases: Vec<(&str, &str, Vec<Grant>)> = vec![
        (
            "a grant the handler does not hold (unknown or revoked)",
            "ann",
            vec![],
        ),
        ("another user's user grant", "mallory", vec![ann.clone()]),
        ("another thread's grant", "ann", vec![other_thread]),
        (
            "a grant that does not cover the inputs",
            "ann",
            vec![narrower],
        ),
        ("an expired grant", "ann", vec![expired]),
    ];
    for (i, (why, who, grants)) in cases.into_iter().enumerate() {
        let h = Handler::new(&format!("grants-forged-{i}"));
        h.write(&run[0], true, who, &grants)
            .expect("the user message");
        let e = h.write(&run[1], true, who, &grants).expect_err(why);
        assert_eq!(e.code(), "illegal_write", "{why}: {e}");
        assert_eq!(
            h.store.load(THREAD, h.now).unwrap().record.version,
            1,
            "{why}"
        );
    }

    // An app grant may be cited by anyone the app lets write.
    let app = grant("g2", "app", Value::Null, "admin");
    let run = granted_run(&app);
    let h = Handler::new("grants-app");
    for (i, c) in run.iter().enumerate() {
        h.write(c, i + 1 < run.len(), "carol", std::slice::from_ref(&app))
            .unwrap_or_else(|e| panic!("write {i}: {e}"));
    }
}

#[test]
fn the_handler_refuses_to_start_a_call_whose_grant_was_revoked_meanwhile() {
    let ann = grant("g1", "user", Value::Null, "ann");
    let ours = std::slice::from_ref(&ann);
    // c1 is approved by the grant; c2 (send_email) waits for bob, so c1 waits too.
    let mut device = with_grants(vec![ann.clone()]);
    device.script([calls(vec![
        call("c1", "delete_file", json!({ "path": "/tmp/a.txt" })),
        call("c2", "send_email", json!({ "to": "bob@example.com" })),
    ])]);
    device.chat("go").unwrap();
    let h = Handler::new("grants-revoked");
    for c in &device.store.commits {
        h.write(c, false, "ann", ours).unwrap();
    }
    // Bob approves c2 at the handler.
    let s = h.store.load(THREAD, h.now).unwrap();
    let tail_id = s.tail.as_ref().map(|m| m.id.to_string());
    let stored = gatehouse_agent::store::Stored {
        record: &s.record,
        tail_id: tail_id.as_deref(),
        row_after_tail: false,
    };
    let request = DecideRequest {
        commit_id: "d1".into(),
        decisions: json!({ "c2": "approve" }),
        resume_token: None,
    };
    let plan = plan_decide(stored, s.tail.as_ref(), &request, "bob", h.now, 7).unwrap();
    h.store
        .commit(
            THREAD,
            s.record.version,
            &plan.commit,
            &decide_writer("bob"),
            h.now,
        )
        .unwrap();
    // The device goes on with the grant it read before; ann revoked it meanwhile.
    let s = h.store.load(THREAD, h.now).unwrap();
    device.store.messages.pop();
    device.store.messages.extend(s.tail.clone());
    device.store.run = s.record.run.clone();
    device.engine.reset(s.state());
    let from = device.store.commits.len();
    device.script([answer("done")]);
    device.engine.retry(T0 + 50_000).unwrap();
    device.drive();
    let start = &device.store.commits[from];
    assert_eq!(start.run.as_ref().unwrap().started.as_deref(), Some("c1"));
    let e = h.write(start, true, "ann", &[]).expect_err("revoked");
    assert_eq!((e.code(), e.status()), ("grant_revoked", 409));
    // With the grant still in force the same write is legal.
    h.write(start, true, "ann", ours).unwrap();
}

#[test]
fn a_write_cannot_pin_a_grant_on_a_record_it_did_not_decide() {
    let ann = grant("g1", "user", Value::Null, "ann");
    let mut h = with_grants(vec![]);
    h.one_gated_call("c1", "/tmp/a.txt", "delete");
    let mut forged = h.store.commits[1].clone();
    forged.run.as_mut().unwrap().audit[0].grant = Some("g1".into());
    let handler = Handler::new("grants-pinned");
    handler
        .write(&h.store.commits[0], true, "ann", std::slice::from_ref(&ann))
        .unwrap();
    let e = handler
        .write(&forged, false, "ann", std::slice::from_ref(&ann))
        .expect_err("a grant on a pending call's record");
    assert_eq!(e.code(), "illegal_write", "{e}");
    // The same commit without the pinned grant is legal: the refusal above was the grant's.
    handler
        .write(
            &h.store.commits[1],
            false,
            "ann",
            std::slice::from_ref(&ann),
        )
        .unwrap();
}
