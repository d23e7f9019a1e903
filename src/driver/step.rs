//! The step loop: the engine's steps carried out against the model, the tools and the store,
//! each write durable before the next step.

use super::admission::{Admit, Ownership};
use super::*;

/// How `drive` ended.
pub(super) enum Ended {
    Done(Option<Outcome>),
    /// The caller aborted while this call's `execute` had not settled: the execution.
    Detached(String, tools::LocalFuture<Result<Value, String>>),
}

/// A future behind a pointer: `drive`'s state machine then holds a box, not the callee's
/// whole state, and the callee's poll is compiled once, out of line.
pub(super) fn boxed<'a, T>(
    f: impl std::future::Future<Output = T> + 'a,
) -> std::pin::Pin<Box<dyn std::future::Future<Output = T> + 'a>> {
    Box::pin(f)
}

pub(super) async fn drive(
    s: &Shared,
    opts: &RunOptions,
    owner: &Ownership,
) -> Result<Ended, AgentError> {
    let ev = &opts.events;
    loop {
        let step = s.borrow_mut().engine.poll();
        if !matches!(step, Some(Step::Persist(_))) {
            boxed(owner.admit_by_read(s)).await?;
        }
        let Some(step) = step else {
            return Ok(Ended::Done(None));
        };
        match step {
            Step::Persist(commit) => {
                let keep = !s.borrow().engine.run_ends_after_write();
                let writer = Writer::new(&owner.me, owner.lock_held, keep, now());
                boxed(persist(s, commit, &writer, ev, &owner.admission)).await?
            }
            Step::CallModel => {
                if opts.signal.as_ref().is_some_and(AbortSignal::aborted) {
                    s.borrow_mut().engine.model_failed();
                    return Err(AgentError::Aborted);
                }
                boxed(mcp::refresh(s, ev)).await;
                let (handle, instructions, defs) = {
                    let g = s.borrow();
                    (g.model.clone(), g.instructions.clone(), tool_defs(&g))
                };
                let fixed = history::fixed_tokens(instructions.as_deref(), &defs);
                let history = match boxed(history::for_request(s, fixed)).await {
                    Ok(h) => h,
                    Err(e) => {
                        s.borrow_mut().engine.model_failed();
                        return Err(e);
                    }
                };
                if ev.enabled() {
                    ev.emit(&Event::ModelCallStarted {});
                }
                let out = boxed(model::call(
                    &handle,
                    instructions.as_deref(),
                    &history.messages,
                    &defs,
                    opts.signal.as_ref(),
                    ev,
                ))
                .await;
                if ev.enabled() {
                    ev.emit(&match &out {
                        Ok(o) => Event::ModelCallEnded {
                            ok: true,
                            usage: o.usage,
                            stop_reason: o.stop_reason.as_deref().map(Cow::Borrowed),
                            error: None,
                        },
                        Err(e) => Event::ModelCallEnded {
                            ok: false,
                            usage: None,
                            stop_reason: None,
                            error: Some(e.into()),
                        },
                    });
                }
                s.borrow_mut().history = Some(history);
                match out {
                    Ok(out) => {
                        // The grants in force now gate the model's calls (read only when a
                        // call may ask a human: a turn of other tools reads nothing more).
                        if grants::may_apply(s, &out.tool_calls) {
                            boxed(grants::refresh(s)).await;
                        }
                        s.borrow_mut().engine.model_output(out, now() as u64)?
                    }
                    Err(e) => {
                        s.borrow_mut().engine.model_failed();
                        return Err(e);
                    }
                }
            }
            Step::EvaluatePolicies(queries) => {
                let mut verdicts = Vec::with_capacity(queries.len());
                for q in queries {
                    let (tool, thread) = (s.tool(&q.tool), s.thread_id());
                    let v = match tool {
                        Some(t) => {
                            match boxed(tools::verdict(
                                &t,
                                &q.call_id,
                                &thread,
                                &q.inputs,
                                opts.signal.as_ref(),
                            ))
                            .await
                            {
                                Some(v) => v,
                                // Aborted while the policy had not answered: nothing of the
                                // model's answer is written; `retry` asks the model again.
                                None => {
                                    s.borrow_mut().engine.stop();
                                    return Err(AgentError::Aborted);
                                }
                            }
                        }
                        None => PolicyVerdict::Failed("the tool is gone".into()),
                    };
                    verdicts.push((q.call_id, v));
                }
                s.borrow_mut()
                    .engine
                    .policy_verdicts(verdicts, now() as u64)?;
            }
            Step::RunTool(inv) => {
                if opts.signal.as_ref().is_some_and(AbortSignal::aborted) {
                    s.borrow_mut().engine.cancel_tool(&inv.call_id)?;
                    let _ = Box::pin(drive(s, &RunOptions::default(), owner)).await;
                    return Err(AgentError::Aborted);
                }
                let tool = s.tool(&inv.tool);
                let outcome = match tool {
                    Some(t) => {
                        let approval = boxed(approval_of(s, &inv.call_id, &inv.tool)).await;
                        if ev.enabled() {
                            ev.emit(&Event::ToolStarted {
                                call_id: Cow::Borrowed(&inv.call_id),
                                name: Cow::Borrowed(&inv.tool),
                                inputs: Cow::Borrowed(&inv.inputs),
                            });
                        }
                        match boxed(tools::execute(
                            &t,
                            &inv.call_id,
                            s,
                            &inv.inputs,
                            opts.signal.as_ref(),
                            ev,
                            approval,
                        ))
                        .await
                        {
                            tools::Execution::Settled(outcome) => outcome,
                            // It may or may not have taken effect: re-gated, never re-sent.
                            tools::Execution::CutOff => {
                                let t = now() as u64;
                                s.borrow_mut().engine.abandon_tool(&inv.call_id, t)?;
                                continue;
                            }
                            // Aborted while `execute` had not settled: it may still take
                            // effect. `run` decides what happens to it.
                            tools::Execution::Abandoned(pending) => {
                                return Ok(Ended::Detached(inv.call_id, pending));
                            }
                        }
                    }
                    None => Err(format!("the tool \"{}\" is not available", inv.tool)),
                };
                if ev.enabled() {
                    ev.emit(&Event::ToolResult {
                        call_id: Cow::Borrowed(&inv.call_id),
                        name: Cow::Borrowed(&inv.tool),
                        ok: outcome.is_ok(),
                        result: match &outcome {
                            Ok(v) => Cow::Borrowed(v),
                            Err(m) => Cow::Owned(Value::String(m.clone())),
                        },
                    });
                }
                s.borrow_mut()
                    .engine
                    .tool_outcome(&inv.call_id, outcome, now() as u64)?;
            }
            Step::Yield(outcome) => {
                if ev.enabled() {
                    // The listener may call the agent (subscribe, unsubscribe, status…): no
                    // borrow of the session is held while it runs.
                    let tail = s.borrow().engine.tail().cloned();
                    ev.emit(&Event::finished(outcome, tail.as_ref()));
                }
                return Ok(Ended::Done(Some(outcome)));
            }
        }
    }
}

/// What a tool's `ctx.approval` holds for the call about to run (`ToolContext::approval`):
/// `None` unless a human approved it in this run; the handler's signed receipt on a remote
/// thread whose handler signs (read from it now: the device that runs the call may not be the
/// one that decided), else the decision as this device knows it, unsigned. A receipt that
/// cannot be read leaves it unsigned: the backend that needs one refuses the action.
async fn approval_of(s: &Shared, call_id: &str, tool: &str) -> Option<Value> {
    let (decided_by, at) = {
        let g = s.borrow();
        let a = g.engine.state().run.as_ref()?.audit(call_id)?;
        (a.decided_by.clone(), a.decided_at?)
    };
    let mut out = serde_json::json!({
        "signed": false,
        "callId": call_id,
        "tool": tool,
        "decision": "approve",
        "decidedBy": decided_by,
        "at": at,
        "receipt": null,
    });
    if let Some(store) = s.remote() {
        if let Ok(Some(receipt)) = store.receipt(&s.thread_id(), call_id).await {
            out["decision"] = receipt["decision"].clone();
            out["decidedBy"] = receipt["decidedBy"].clone();
            out["at"] = receipt["at"].clone();
            out["signed"] = Value::Bool(true);
            out["receipt"] = receipt;
        }
    }
    Some(out)
}

/// Results longer than this are replaced by a short error result when the storage quota
/// refuses a write that holds them (the tool ran: it must not look interrupted).
pub(super) const UNSTORABLE_RESULT_LEN: usize = 1024;

pub(super) async fn persist(
    s: &Shared,
    commit: crate::engine::Commit,
    writer: &Writer,
    ev: &Emitter,
    admission: &Cell<Admit>,
) -> Result<(), AgentError> {
    let (store, thread) = s.at();
    let version = s.borrow().version;
    let mut commit = commit;
    commit.request_size = s
        .borrow_mut()
        .history
        .as_mut()
        .and_then(|h| h.answered(&commit.append));
    let mcp = s.borrow().mcp.clone();
    commit.mcp_tools = mcp.as_ref().and_then(|m| m.unsaved());
    let mut first = store.commit(&thread, version, &commit, writer, now()).await;
    if matches!(first, Err(StoreError::Quota(_))) && commit.shrink_results(UNSTORABLE_RESULT_LEN) {
        s.borrow_mut().engine.shrink_results(UNSTORABLE_RESULT_LEN);
        first = store.commit(&thread, version, &commit, writer, now()).await;
    }
    match first {
        Ok(record) => {
            admission.set(Admit::Done);
            s.committed(&record, &commit, writer.lease.is_some());
            if let Some(t) = &commit.replace_tail {
                ev.emit(&Event::MessageUpdated {
                    message: Cow::Borrowed(t),
                });
            }
            for m in &commit.append {
                ev.emit(&Event::Message {
                    message: Cow::Borrowed(m),
                });
            }
            live::changed(s);
            Ok(())
        }
        Err(e) => {
            if let (Some(m), Some(_)) = (&mcp, &commit.mcp_tools) {
                m.unsave();
            }
            // The stored thread is the truth: take it, so the next call works on fresh state.
            let reloaded = reload(s).await.is_ok();
            // This commit was sent again after its answer was lost, and its first copy was
            // applied; the thread moved on since (the handler answers `conflict` with the
            // version this commit left: docs/design.md, "Across devices"). It landed, and is
            // not refused: the run ends with the thread as it now stands.
            let remote = s.remote().is_some();
            let landed =
                matches!(e, StoreError::Conflict { expected, .. } if expected == version + 1);
            if remote && landed && reloaded {
                admission.set(Admit::Done);
                return Ok(());
            }
            let refusal = matches!(e, StoreError::Conflict { .. } | StoreError::Owned { .. });
            if let Admit::Pending(_) = admission.get() {
                // The run's first write was its admission: refused, it wrote nothing.
                admission.set(if refusal { Admit::Refused } else { Admit::Done });
                return Err(e.into());
            }
            let unreachable = matches!(e, StoreError::Unavailable(_)) && remote;
            if refusal || unreachable {
                // Only a takeover of a lapsed lease lets another agent write during a run; a
                // result computed meanwhile is still the call's result. So is one a remote
                // thread's handler could not be told of: it waits in the outbox.
                s.keep_unwritten(&commit);
            }
            Err(e.into())
        }
    }
}
