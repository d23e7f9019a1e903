//! Transcript tests of the engine's part of "exactly once" (docs/design.md): the decision
//! journal, call ids a UI can key by, results that arrive late, results too big to store, and
//! a turn whose first answer failed.

mod support;

use gatehouse_agent::engine::*;
use gatehouse_agent::thread::{ApprovalState, Message};
use serde_json::{Value, json};
use support::*;

fn ids(h: &Harness) -> Vec<String> {
    h.tail()
        .tool_calls()
        .unwrap()
        .iter()
        .map(|e| e.call_id.clone())
        .collect()
}

/// Rewrites the stored tail by hand (what a bug or a person with the devtools could do),
/// bypassing every decision call.
fn edit_tail(h: &mut Harness, f: impl FnOnce(&mut Message)) {
    let tail = h.store.messages.last_mut().unwrap();
    f(tail);
    h.engine = Engine::new(h.tools.clone(), EngineConfig::default(), h.store.state(), 3);
}

/// The edit a bug or a person could make: the first pending entry says "approved".
fn mark_first_approved(t: &mut Message) {
    if let Some(a) = t.tool_calls_mut().unwrap()[0].approval.as_mut() {
        a.state = ApprovalState::Approved;
    }
}

#[test]
fn colliding_duplicate_call_ids_get_distinct_ids_and_each_call_runs_once() {
    let mut h = Harness::new(standard_tools());
    h.script([
        calls(vec![
            call("a", "delete_file", json!({"path": "/1"})),
            call("a_2", "delete_file", json!({"path": "/2"})),
            call("a", "delete_file", json!({"path": "/3"})),
        ]),
        answer("done"),
    ]);
    h.chat("delete three").unwrap();
    let ids = ids(&h);
    assert_eq!(ids.len(), 3);
    assert_eq!(ids[..2], ["a", "a_2"]);
    assert!(!ids[..2].contains(&ids[2]), "the third id is new: {ids:?}");
    let all: Value = ids
        .iter()
        .map(|id| (id.clone(), json!("approve")))
        .collect();
    assert_eq!(h.decide(all).unwrap(), COMPLETED);
    let ran: Vec<Value> = h.executed.iter().map(|(_, i)| i["path"].clone()).collect();
    assert_eq!(
        ran,
        ["/1", "/2", "/3"],
        "each call once, with its own inputs"
    );
    for id in &ids {
        assert!(h.result_of(id).is_some(), "{id} has its own result");
    }
}

#[test]
fn a_proto_call_id_is_replaced_so_a_plain_js_object_can_hold_its_decision() {
    let mut h = Harness::new(standard_tools());
    h.script([
        calls(vec![
            call("__proto__", "delete_file", json!({"path": "/x"})),
            call("call_0", "delete_file", json!({"path": "/y"})),
        ]),
        answer("done"),
    ]);
    h.chat("go").unwrap();
    let ids = ids(&h);
    assert!(!ids.contains(&"__proto__".to_string()), "{ids:?}");
    assert_eq!(ids.len(), 2);
    assert_ne!(ids[0], ids[1]);
}

#[test]
fn a_stored_tail_edited_to_approved_is_regated_on_retry_not_run() {
    let mut h = Harness::new(standard_tools());
    h.script([
        calls(vec![call("c1", "delete_file", json!({"path": "/etc"}))]),
        answer("done"),
    ]);
    h.chat("delete /etc").unwrap();
    edit_tail(&mut h, mark_first_approved);
    assert_eq!(h.engine.status(), ThreadStatus::Interrupted);
    log_clear(&mut h);
    assert_eq!(h.retry().unwrap(), Some(Outcome::AwaitingApproval));
    assert!(
        h.executed.is_empty(),
        "nothing runs without a recorded decision"
    );
    let e = h.tail_entry("c1");
    assert_eq!(e.approval_state(), Some(ApprovalState::Pending));
    assert!(
        e.approval
            .as_ref()
            .unwrap()
            .reason
            .as_deref()
            .unwrap()
            .contains("No decision")
    );
    // A real decision runs it.
    assert_eq!(h.decide(json!({"c1": "approve"})).unwrap(), COMPLETED);
    assert_eq!(h.executed.len(), 1);
}

#[test]
fn a_gated_entry_stripped_of_its_approval_fields_is_still_gated() {
    let mut h = Harness::new(standard_tools());
    h.script([
        calls(vec![call("c1", "delete_file", json!({"path": "/x"}))]),
        answer("done"),
    ]);
    h.chat("go").unwrap();
    edit_tail(&mut h, |t| t.tool_calls_mut().unwrap()[0].approval = None);
    assert_eq!(h.retry().unwrap(), Some(Outcome::AwaitingApproval));
    assert!(h.executed.is_empty());
}

#[test]
fn inputs_changed_after_the_approval_are_regated_the_approved_inputs_are_the_executed_ones() {
    let mut h = Harness::new(standard_tools());
    h.script([
        calls(vec![
            call("c1", "delete_file", json!({"path": "/tmp/a"})),
            call("c2", "delete_file", json!({"path": "/tmp/b"})),
        ]),
        answer("done"),
    ]);
    h.chat("go").unwrap();
    h.decide(json!({"c1": "approve"})).unwrap();
    // c1 is approved for /tmp/a; someone rewrites its inputs before c2 is decided.
    edit_tail(&mut h, |t| {
        t.tool_calls_mut().unwrap()[0]
            .inputs
            .insert("path".into(), json!("/"));
    });
    assert_eq!(
        h.decide(json!({"c2": "approve"})).unwrap(),
        Some(Outcome::AwaitingApproval)
    );
    assert!(h.executed.is_empty());
    assert_eq!(
        h.tail_entry("c1").approval_state(),
        Some(ApprovalState::Pending)
    );
    assert_eq!(
        h.tail_entry("c2").approval_state(),
        Some(ApprovalState::Approved)
    );
}

#[test]
fn a_schema_1_journal_without_decisions_reruns_nothing_it_cannot_vouch_for() {
    // A run journal written before decision records existed, with an approved call.
    let mut h = Harness::new(standard_tools());
    h.script([
        calls(vec![call("c1", "delete_file", json!({"path": "/x"}))]),
        answer("done"),
    ]);
    h.chat("go").unwrap();
    edit_tail(&mut h, mark_first_approved);
    let journal: RunJournal = serde_json::from_value(json!({
        "callMessageId": h.tail().id.as_str(), "results": []
    }))
    .unwrap();
    h.store.run = Some(journal);
    h.engine = Engine::new(h.tools.clone(), EngineConfig::default(), h.store.state(), 3);
    assert_eq!(h.retry().unwrap(), Some(Outcome::AwaitingApproval));
    assert!(h.executed.is_empty());
}

#[test]
fn decisions_are_recorded_in_the_journal_with_the_inputs_in_the_same_write() {
    let mut h = Harness::new(standard_tools());
    h.script([calls(vec![
        call("c1", "delete_file", json!({"path": "/a"})),
        call("c2", "delete_file", json!({"path": "/b"})),
    ])]);
    h.chat("go").unwrap();
    let writes = h.store.writes;
    h.decide(json!({"c1": ["reject", "no"]})).unwrap();
    assert_eq!(
        h.store.writes,
        writes + 1,
        "one write: the tail and the record"
    );
    let run = h.store.run.as_ref().unwrap();
    assert_eq!(run.gated, ["c1", "c2"]);
    assert_eq!(
        serde_json::to_value(&run.decisions).unwrap(),
        json!([{"callId": "c1", "approved": false, "inputs": {"path": "/a"}}])
    );
    // Revised: last write wins, one record per call.
    h.decide(json!({"c1": "approve"})).unwrap();
    let run = h.store.run.as_ref().unwrap();
    assert_eq!(run.decisions.len(), 1);
    assert!(run.decisions[0].approved);
}

/// A call whose `execute` the run gave up on (an abort while it had not settled).
fn abandoned(h: &mut Harness) {
    h.script([
        calls(vec![call("c1", "delete_file", json!({"path": "/x"}))]),
        answer("it is done"),
    ]);
    h.chat("go").unwrap();
    h.die_on_tool = Some("c1".into());
    assert_eq!(h.decide(json!({"c1": "approve"})).unwrap(), None);
    h.die_on_tool = None;
    h.engine.abandon_tool("c1", T0 + 50_000).unwrap();
    h.drive();
}

#[test]
fn an_abandoned_call_is_regated_and_its_late_result_is_kept_not_refused() {
    let mut h = Harness::new(standard_tools());
    abandoned(&mut h);
    assert_eq!(h.engine.status(), ThreadStatus::AwaitingApproval);
    assert!(h.store.run.as_ref().unwrap().started.is_none());
    assert_eq!(
        h.tail_entry("c1").approval_state(),
        Some(ApprovalState::Pending)
    );
    // The tool settles after all: its result is kept and the call is no longer pending.
    assert_eq!(
        h.engine
            .late_result("c1", Ok(json!("deleted /x")), T0 + 60_000),
        Ok(true)
    );
    h.drive();
    assert_eq!(
        h.tail_entry("c1").approval_state(),
        Some(ApprovalState::Approved)
    );
    assert_eq!(h.engine.status(), ThreadStatus::Interrupted);
    assert_eq!(h.retry().unwrap(), COMPLETED);
    assert_eq!(h.result_of("c1").as_deref(), Some("deleted /x"));
    assert!(h.executed.is_empty(), "never run a second time");
}

#[test]
fn a_late_result_after_the_human_rejected_the_regated_call_changes_nothing() {
    let mut h = Harness::new(standard_tools());
    abandoned(&mut h);
    h.decide(json!({"c1": ["reject", "check first"]})).unwrap();
    let thread = h.thread();
    assert_eq!(
        h.engine.late_result("c1", Ok(json!("late")), T0 + 90_000),
        Ok(false)
    );
    assert_eq!(h.engine.poll(), None);
    assert_eq!(h.thread(), thread);
}

/// Found by the device simulation (tests/simulation/devices): a device that lost the handler
/// mid-call queued the call's result; its outbox flush re-gates first, but offline that write
/// fails, and the late result then met a call still marked started. It answered "nothing to
/// do", the flush took that as written, and the result left the outbox for good. Now it is
/// refused with `conflict`, which keeps it queued.
#[test]
fn a_late_result_for_a_call_still_marked_started_is_refused_not_dropped() {
    let mut h = Harness::new(standard_tools());
    h.script([
        calls(vec![call("c1", "delete_file", json!({"path": "/x"}))]),
        answer("it is done"),
    ]);
    h.chat("go").unwrap();
    h.die_on_tool = Some("c1".into());
    assert_eq!(h.decide(json!({"c1": "approve"})).unwrap(), None);
    // Another page opens the thread as stored, without recovering it (it could not write).
    h.engine = Engine::new(h.tools.clone(), EngineConfig::default(), h.store.state(), 9);
    assert_eq!(h.store.run.as_ref().unwrap().started.as_deref(), Some("c1"));
    let late = h
        .engine
        .late_result("c1", Ok(json!("deleted /x")), T0 + 60_000);
    assert_eq!(late.map_err(|e| e.code()), Err("conflict"));
    assert_eq!(h.engine.poll(), None, "nothing to write");
    // Once recovered (re-gated), the same late result is kept.
    assert!(h.engine.recover(T0 + 61_000));
    h.drive();
    assert_eq!(
        h.engine
            .late_result("c1", Ok(json!("deleted /x")), T0 + 62_000),
        Ok(true)
    );
    h.drive();
    assert_eq!(h.retry().unwrap(), COMPLETED);
    assert_eq!(h.result_of("c1").as_deref(), Some("deleted /x"));
    assert!(h.executed.is_empty(), "never run a second time");
}

/// Found by the device simulation (tests/simulation/devices): a phone queued "approve" while
/// offline; another device approved and started the call, then died mid-call; a third
/// re-gated it; the phone's flush then approved the re-gated call with its old decision, and
/// `delete_file` ran twice. Queued decisions now carry the tail's `resume_token`, and answer
/// only the suspension they were made on.
#[test]
fn queued_decisions_do_not_answer_a_call_gated_again_since() {
    let mut h = Harness::new(standard_tools());
    h.script([calls(vec![call(
        "c1",
        "delete_file",
        json!({"path": "/x"}),
    )])]);
    h.chat("go").unwrap();
    let gated = h.engine.tail().cloned();
    let queued = gatehouse_agent::store::Queued::decisions_on(
        json!({"c1": "approve"}),
        None,
        gated.as_ref(),
    );
    assert!(queued.answers(gated.as_ref()));
    // Approved elsewhere, cut off mid-call, re-gated when the thread is opened again.
    h.die_on_tool = Some("c1".into());
    assert_eq!(h.decide(json!({"c1": "approve"})).unwrap(), None);
    h.die_on_tool = None;
    h.reload();
    assert_eq!(h.engine.status(), ThreadStatus::AwaitingApproval);
    assert!(
        !queued.answers(h.engine.tail()),
        "a decision from before it ran"
    );
    let fresh = gatehouse_agent::store::Queued::decisions_on(
        json!({"c1": "reject"}),
        None,
        h.engine.tail(),
    );
    assert!(fresh.answers(h.engine.tail()));
}

#[test]
fn a_result_too_big_to_store_becomes_a_short_error_result_and_is_never_regated() {
    let mut h = Harness::new(standard_tools());
    h.tool_fn = Box::new(|_| Ok(Value::String("x".repeat(10_000))));
    h.one_gated_call("c1", "/x", "go");
    h.engine
        .submit_decisions(&decisions(json!({"c1": "approve"})), T0 + 1, None)
        .unwrap();
    // The started mark, then the tool, then the write with its result: that one fails for lack
    // of space, so the driver shrinks it (and the engine's view) and writes again.
    let Some(Step::Persist(c)) = h.engine.poll() else {
        panic!("started")
    };
    h.store_apply(c);
    let Some(Step::RunTool(inv)) = h.engine.poll() else {
        panic!("run")
    };
    h.engine
        .tool_outcome(&inv.call_id, Ok(Value::String("x".repeat(10_000))), T0 + 2)
        .unwrap();
    let Some(Step::Persist(mut c)) = h.engine.poll() else {
        panic!("result")
    };
    assert!(c.shrink_results(1024));
    assert!(h.engine.shrink_results(1024));
    h.store_apply(c);
    let result = h.result_of("c1").unwrap();
    let v: Value = serde_json::from_str(&result).unwrap();
    assert_eq!(v["error"], "result_not_stored");
    assert!(v["message"].as_str().unwrap().contains("10000 bytes"));
    assert!(
        h.store.run.is_none(),
        "the call is finished, not interrupted"
    );
}

#[test]
fn after_a_failed_first_answer_the_next_message_is_answered_together_with_it() {
    // Decided and documented (README, "Errors"): chat() after a failed model call stores the
    // new message after the unanswered one, and one model call answers both.
    let mut h = Harness::new(standard_tools());
    h.chat("first").unwrap(); // no scripted answer: the model call fails
    assert_eq!(h.engine.status(), ThreadStatus::Interrupted);
    h.script([answer("Both answered.")]);
    assert_eq!(h.chat("second").unwrap(), COMPLETED);
    let t = h.thread();
    let texts: Vec<&str> = t
        .as_array()
        .unwrap()
        .iter()
        .map(|m| m["content"][0]["content"].as_str().unwrap())
        .collect();
    assert_eq!(texts, ["first", "second", "Both answered."]);
    assert_eq!(h.model_calls, 2);
}

#[test]
fn an_input_the_engine_was_not_waiting_for_is_internal_not_busy() {
    let mut h = Harness::new(standard_tools());
    let e = h.engine.tool_outcome("nope", Ok(json!(1)), T0).unwrap_err();
    assert_eq!((e.code(), e.retryable()), ("internal", false));
}

fn log_clear(h: &mut Harness) {
    h.take_log();
}

#[test]
fn the_write_before_a_max_steps_stop_is_the_runs_last() {
    // The run's last write clears its lease (docs/design.md): the driver must know which it is.
    let mut h = Harness::with_config(
        standard_tools(),
        EngineConfig {
            max_steps: 1,
            ..EngineConfig::default()
        },
    );
    h.script([calls(vec![call("c1", "list_files", json!({}))])]);
    h.engine.user_message("list", T0).unwrap();
    let mut last_write_ends = Vec::new();
    while let Some(step) = h.engine.poll() {
        match step {
            Step::Persist(c) => {
                last_write_ends.push(h.engine.run_ends_after_write());
                h.store_apply(c);
            }
            Step::CallModel => {
                let out = h.model.pop_front().unwrap();
                h.engine.model_output(out, T0 + 1).unwrap();
            }
            Step::RunTool(inv) => h
                .engine
                .tool_outcome(&inv.call_id, Ok(json!([])), T0 + 2)
                .unwrap(),
            Step::EvaluatePolicies(_) => unreachable!(),
            Step::Yield(o) => {
                assert_eq!(
                    o,
                    Outcome::Completed {
                        max_steps_reached: true
                    }
                );
                break;
            }
        }
    }
    assert_eq!(last_write_ends.last(), Some(&true), "{last_write_ends:?}");
    assert!(
        last_write_ends[..last_write_ends.len() - 1]
            .iter()
            .all(|e| !e)
    );
}
