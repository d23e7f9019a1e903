//! The store handler's authority (docs/design.md, "Threat model"): the browser proposes, the
//! server checks and applies. Pure: the handler's core (`server/core`) calls these inside its
//! transaction, and the device simulation's handler does the same.
//!
//! Two kinds of request change a remote thread:
//!
//! - **A decision is an intent** ([`plan_decide`]): `callId` → decision, applied to the stored
//!   thread by the engine's own rules ([`Engine::submit_decisions`]), at the handler's clock,
//!   attributed to the identity `authorize` returned. The client sends no state at all.
//! - **A write is a proposed next state** ([`check_write`]): a commit as the writing device's
//!   engine made it, accepted only when it is a step the engine could have taken from the
//!   stored thread without a human: it cannot approve, un-gate, rewrite a gated call, clear a
//!   "started" mark without that call's result or a new gate, forget a result, or write audit
//!   records out of the server's sequence.

use super::ownership::Writer;
use super::record::{CommitPlan, StoreError, Stored, ThreadRecord, check_writable, plan_commit};
use crate::engine::results::unstorable_result;
use crate::engine::{
    Commit, Decisions, Engine, EngineConfig, EngineError, Grant, GrantScope, RunJournal, Step,
    ThreadState, ToolSet,
};
use crate::thread::{ApprovalState, Message, MessageKind, ToolEntry};
use serde::{Deserialize, Serialize};
use serde_json::Value;
use std::fmt;

/// `POST B/threads/{id}/decide`: decisions on the tail's gated calls, in the JS API's form
/// (`{ callId: "approve" | "reject" | ["reject", reason] | ["edit", inputs] }`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct DecideRequest {
    /// Unique per request and kept across its retries, as a commit's.
    pub commit_id: String,
    pub decisions: Value,
    /// The `resume_token` of the tail the decisions were made on: decisions made before their
    /// calls were gated again (a run cut off elsewhere) answer nothing (`not_suspended`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub resume_token: Option<String>,
}

impl DecideRequest {
    /// The call ids the request decides, and each decision's kind, for `authorize`.
    pub fn intent(&self) -> Result<Vec<(String, &'static str)>, EngineError> {
        let d = Decisions::from_json(&self.decisions)?;
        Ok(d.iter()
            .map(|(id, decision)| (id.clone(), decision.kind().as_str()))
            .collect())
    }
}

/// Why the handler refuses a request.
#[derive(Debug, Clone, PartialEq)]
pub enum Refused {
    /// The stored thread refuses it (`conflict`, `busy`, a newer record, corrupt data).
    Store(StoreError),
    /// The engine refuses the decisions (`invalid_decision`, `unknown_call_id`, `expired`,
    /// `not_suspended`): as `submitDecisions` refuses them on a local thread.
    Engine(EngineError),
    /// A write that is not a step the writing device's engine could take from the stored
    /// thread (`illegal_write`, 403): it changes what only a decision or the server may.
    Illegal(String),
    /// A write that starts a call a remembered grant approved, when the grant no longer
    /// covers it (revoked, expired): the writer reads the grants again and asks a human
    /// (`grant_revoked`, 409; docs/design.md, "Remembered grants").
    GrantGone(String),
}

impl Refused {
    pub fn code(&self) -> &'static str {
        match self {
            Refused::Store(e) => e.code(),
            Refused::Engine(e) => e.code(),
            Refused::Illegal(_) => "illegal_write",
            Refused::GrantGone(_) => "grant_revoked",
        }
    }

    /// The HTTP status the handler answers with.
    pub fn status(&self) -> u16 {
        match self {
            Refused::Store(StoreError::Conflict { .. } | StoreError::Owned { .. }) => 409,
            Refused::Store(StoreError::Unauthorized(_)) => 403,
            Refused::Store(_) => 500,
            Refused::Engine(EngineError::InvalidDecision { .. }) => 400,
            Refused::Engine(_) => 409,
            Refused::Illegal(_) => 403,
            Refused::GrantGone(_) => 409,
        }
    }
}

impl fmt::Display for Refused {
    fn fmt(&self, f: &mut fmt::Formatter) -> fmt::Result {
        match self {
            Refused::Store(e) => e.fmt(f),
            Refused::Engine(e) => e.fmt(f),
            Refused::Illegal(m) | Refused::GrantGone(m) => write!(f, "{m}; nothing was written"),
        }
    }
}

impl From<StoreError> for Refused {
    fn from(e: StoreError) -> Refused {
        Refused::Store(e)
    }
}

impl From<EngineError> for Refused {
    fn from(e: EngineError) -> Refused {
        Refused::Engine(e)
    }
}

/// What a decision wrote: the plan, and the tail after it (the deciding device did not make
/// it, so it is sent back).
#[derive(Debug, Clone, PartialEq)]
pub struct DecidePlan {
    pub plan: CommitPlan,
    /// The engine's commit the plan writes (a store without the handler's SQL applies it with
    /// [`decide_writer`]).
    pub commit: Commit,
    pub tail: Option<Message>,
}

/// The writer of a decision: it holds no lease and takes none, so a live run's lease keeps it
/// out (`busy`), and a lapsed one is cleared.
pub fn decide_writer(identity: &str) -> Writer {
    Writer {
        owner: format!("decide:{identity}"),
        lease: None,
        lock_held: false,
    }
}

/// Applies `request`'s decisions to the stored thread as the engine does, at the handler's
/// clock, with `identity` as `decidedBy` of each decision it makes or revises. The server
/// has no tools and no model: once every gated call is decided, the step it starts is left
/// to a device that has them (`awaiting_device`), and the server writes only the decisions
/// and what follows from them alone (rejections' results). A live run's lease keeps it out
/// (`busy`), as any write; it does not take or keep a lease itself. `machine` seeds the ids
/// of messages it appends (a random number per request).
pub fn plan_decide(
    stored: Stored<'_>,
    tail: Option<&Message>,
    request: &DecideRequest,
    identity: &str,
    now_ms: f64,
    machine: u64,
) -> Result<DecidePlan, Refused> {
    let record = stored.record;
    check_writable(record)?;
    if let Some(token) = &request.resume_token {
        if tail.and_then(Message::resume_token) != Some(token.as_str()) {
            return Err(EngineError::NotSuspended(
                "these decisions were made before their calls were gated again; decide anew".into(),
            )
            .into());
        }
    }
    let decisions = Decisions::from_json(&request.decisions)?;
    let config = EngineConfig {
        tools_elsewhere: true,
        model_here: false,
        ..EngineConfig::default()
    };
    let state = ThreadState {
        tail: tail.cloned(),
        policies: record.policies.clone(),
        run: record.run.clone(),
        audit_count: record.audit_count,
    };
    let mut engine = Engine::new(ToolSet::default(), config, state, machine);
    let now = now_ms.max(0.0) as u64;
    engine.submit_decisions(&decisions, now, Some(identity))?;
    let mut commit: Option<Commit> = None;
    while let Some(step) = engine.poll() {
        match step {
            Step::Persist(c) => {
                commit = Some(match commit {
                    Some(earlier) => earlier.then(c),
                    None => c,
                });
            }
            // Without tools or a model the engine stops at the first step that needs one.
            Step::Yield(_) | Step::CallModel | Step::EvaluatePolicies(_) | Step::RunTool(_) => {
                break;
            }
        }
    }
    let Some(commit) = commit else {
        return Err(EngineError::Internal("the decisions changed nothing".into()).into());
    };
    let plan = plan_commit(
        stored,
        record.version,
        &commit,
        &decide_writer(identity),
        now_ms,
    )?;
    let tail = commit
        .append
        .last()
        .or(commit.replace_tail.as_ref())
        .cloned()
        .or_else(|| tail.cloned());
    Ok(DecidePlan { plan, commit, tail })
}

fn illegal(message: impl Into<String>) -> Refused {
    Refused::Illegal(message.into())
}

/// Checks that `commit`, proposed by a writing device from the stored thread, is a step its
/// engine could have taken without a human (see the module's documentation). `keeps_lease`:
/// the writer holds the run's lease after this write (a "started" mark needs it). `now_ms` is
/// the handler's clock (an expiry is checked against it).
pub fn check_write(
    record: &ThreadRecord,
    tail: Option<&Message>,
    commit: &Commit,
    keeps_lease: bool,
    now_ms: f64,
) -> Result<(), Refused> {
    let none = Granted {
        thread: &record.id,
        identity: "",
        grants: &[],
        now_ms,
    };
    check_granted_write(record, tail, commit, keeps_lease, &none)
}

/// The remembered grants a write may cite (docs/design.md, "Remembered grants"): those the
/// handler found, unrevoked, for the ids the commit names ([`cited_grants`]), checked here
/// against the thread, the writer's identity (a user grant is its maker's) and the clock.
#[derive(Debug, Clone, Copy)]
pub struct Granted<'a> {
    pub thread: &'a str,
    pub identity: &'a str,
    pub grants: &'a [Grant],
    pub now_ms: f64,
}

impl Granted<'_> {
    /// The grant `id`, when it may approve a call of `tool` with `inputs` for this writer now.
    fn covering(
        &self,
        id: &str,
        tool: &str,
        inputs: &serde_json::Map<String, Value>,
    ) -> Option<&Grant> {
        let now = self.now_ms.max(0.0) as u64;
        self.grants.iter().find(|g| {
            g.id == id
                && (g.scope != GrantScope::User || g.created_by.as_deref() == Some(self.identity))
                && g.covers(tool, inputs, self.thread, now)
        })
    }
}

/// The grant ids a commit cites: the approving decisions of its journal that name one (the
/// handler reads just these rows, and none when there are none).
pub fn cited_grants(commit: &Commit) -> Vec<String> {
    let mut ids: Vec<String> = commit
        .run
        .iter()
        .flat_map(|r| r.decisions.iter())
        .filter(|d| d.approved)
        .filter_map(|d| d.grant.clone())
        .collect();
    ids.sort_unstable();
    ids.dedup();
    ids
}

/// [`check_write`] with the remembered grants the commit may cite: a call a grant approved is
/// appended approved, and started, only while the grant covers it.
pub fn check_granted_write(
    record: &ThreadRecord,
    tail: Option<&Message>,
    commit: &Commit,
    keeps_lease: bool,
    granted: &Granted<'_>,
) -> Result<(), Refused> {
    let now_ms = granted.now_ms;
    let stored_run = record.run.as_ref();
    let new_tail = commit
        .append
        .last()
        .or(commit.replace_tail.as_ref())
        .or(tail);
    // A rewrite of a tail the thread does not have (or that cannot be read) names no stored
    // tail: the commit rule refuses it (`conflict`).
    if let (Some(replaced), Some(before)) = (&commit.replace_tail, tail) {
        check_tail_rewrite(before, replaced, commit, stored_run, now_ms)?;
    }
    // The journal the commit leaves: the same as the stored one (it names the same message),
    // or a new one for a tool call it appends.
    let same = |j: &RunJournal| stored_run.is_some_and(|s| s.call_message_id == j.call_message_id);
    check_results(tail, commit)?;
    match (&commit.run, stored_run) {
        (Some(j), Some(s)) if same(j) => check_same_journal(s, j, new_tail, granted)?,
        (j, s) => {
            if let Some(s) = s {
                check_journal_ended(s, commit)?;
            }
            if let Some(j) = j {
                check_new_journal(j, commit, new_tail, granted)?;
            }
        }
    }
    if let Some(j) = &commit.run {
        check_started(
            stored_run.filter(|_| same(j)),
            j,
            new_tail,
            keeps_lease,
            granted,
        )?;
    }
    check_audit(record, tail, commit)
}

/// Who decided a call a remembered grant approved: the grant's maker, as the handler stored
/// it (a new record's `decidedBy` is the server's word, like every other; [`stamp_identity`]
/// cleared what the writer said). Call after the commit passed [`check_granted_write`].
///
/// [`stamp_identity`]: super::wire::stamp_identity
pub fn stamp_grants(commit: &mut Commit, granted: &Granted<'_>) {
    let maker = |id: &Option<String>| {
        let id = id.as_deref()?;
        granted
            .grants
            .iter()
            .find(|g| g.id == id)?
            .created_by
            .clone()
    };
    if let Some(run) = commit.run.as_mut() {
        for open in run
            .audit
            .iter_mut()
            .filter(|o| o.grant.is_some() && o.decided_by.is_none())
        {
            open.decided_by = maker(&open.grant);
        }
    }
    for a in commit
        .audit
        .iter_mut()
        .filter(|a| a.grant_id.is_some() && a.decided_by.is_none())
    {
        a.decided_by = maker(&a.grant_id);
    }
}

fn entries(m: &Message) -> &[ToolEntry] {
    match &m.kind {
        MessageKind::ToolCall(e) | MessageKind::ToolCallResult(e) => e,
        MessageKind::Plain => &[],
    }
}

fn same_kind(a: &MessageKind, b: &MessageKind) -> bool {
    matches!(
        (a, b),
        (MessageKind::Plain, MessageKind::Plain)
            | (MessageKind::ToolCall(_), MessageKind::ToolCall(_))
            | (
                MessageKind::ToolCallResult(_),
                MessageKind::ToolCallResult(_)
            )
    )
}

/// A rewrite of the tail keeps what it is: its role, its kind, its calls and their tools; a
/// gated call stays gated and keeps its inputs (an edit is a decision); approval states move
/// only as the engine moves them without a human.
fn check_tail_rewrite(
    before: &Message,
    after: &Message,
    commit: &Commit,
    stored_run: Option<&RunJournal>,
    now_ms: f64,
) -> Result<(), Refused> {
    if before.role != after.role || !same_kind(&before.kind, &after.kind) {
        return Err(illegal(
            "the commit turns the tail into another kind of message",
        ));
    }
    let (old, new) = (entries(before), entries(after));
    if old.len() != new.len()
        || old
            .iter()
            .zip(new)
            .any(|(a, b)| a.call_id != b.call_id || a.name != b.name)
    {
        return Err(illegal(
            "the commit adds, removes or renames the tail's calls",
        ));
    }
    for (a, b) in old.iter().zip(new) {
        let id = &a.call_id;
        if a.approval.is_some() && b.approval.is_none() {
            return Err(illegal(format!("the commit un-gates call {id:?}")));
        }
        let restored = a.proposed_inputs.as_ref() == Some(&b.inputs);
        if b.inputs != a.inputs && !restored {
            return Err(illegal(format!(
                "the commit changes the inputs of call {id:?}: only an edit decision may"
            )));
        }
        if b.proposed_inputs.is_some() && b.proposed_inputs != a.proposed_inputs {
            return Err(illegal(format!(
                "the commit changes the proposed inputs of call {id:?}"
            )));
        }
        let has_result = result_known(commit, id);
        let due = stored_run
            .and_then(|r| r.deadline(id))
            .is_some_and(|at| (at as f64) <= now_ms);
        match (a.approval_state(), b.approval_state()) {
            (x, y) if x == y => {}
            // Gated again (a run cut off mid-call, or a tail that says approved without the
            // record): it needs a new decision, which only the server records.
            (_, Some(ApprovalState::Pending)) => {}
            (Some(ApprovalState::Pending), Some(ApprovalState::Expired)) if due => {}
            // A call gated again whose run's result arrived late: it ran, with what was
            // approved, and runs no more.
            (Some(ApprovalState::Pending), Some(ApprovalState::Approved)) if has_result => {}
            (_, to) => {
                return Err(illegal(format!(
                    "the commit decides call {id:?} ({}): decisions are sent as decisions, \
                     and the server applies them",
                    to.map_or("ungated", |s| match s {
                        ApprovalState::Pending => "pending",
                        ApprovalState::Approved => "approved",
                        ApprovalState::Rejected => "rejected",
                        ApprovalState::Expired => "expired",
                    })
                )));
            }
        }
    }
    Ok(())
}

/// The commit records `call_id`'s result: in its journal, or in the `tool_call_result` it
/// appends. A call with its result never runs again.
fn result_known(commit: &Commit, call_id: &str) -> bool {
    commit.run.as_ref().is_some_and(|r| r.has_result(call_id))
        || commit.append.iter().any(|m| {
            m.tool_results()
                .unwrap_or(&[])
                .iter()
                .any(|e| e.call_id == call_id && e.result.is_some())
        })
}

/// Only the server records an approving decision: every approving record of the journal
/// after a write is one the stored journal has, for the same inputs, or is for a call whose
/// result is recorded (a late result: the call ran, and runs no more).
fn check_approvals(
    stored: Option<&RunJournal>,
    next: &RunJournal,
    new_tail: Option<&Message>,
    granted: &Granted<'_>,
) -> Result<(), Refused> {
    for d in next.decisions.iter().filter(|d| d.approved) {
        let known = stored.is_some_and(|s| s.decisions.iter().any(|k| k == d));
        // A remembered grant approves a call when the tool call is written: the grant must
        // cover the call, for this writer, now (docs/design.md, "Remembered grants").
        let appended = stored.is_none_or(|s| !s.decisions.iter().any(|k| k.call_id == d.call_id));
        let by_grant = appended
            && d.grant.as_deref().is_some_and(|id| {
                new_tail.map(entries).unwrap_or(&[]).iter().any(|e| {
                    e.call_id == d.call_id
                        && e.inputs == d.inputs
                        && granted.covering(id, &e.name, &d.inputs).is_some()
                })
            });
        if !known && !by_grant && d.grant.is_some() && !next.has_result(&d.call_id) {
            return Err(illegal(format!(
                "the commit records an approval of call {:?} by a grant that does not cover \
                 it for this writer",
                d.call_id
            )));
        }
        if !known && !by_grant && !next.has_result(&d.call_id) {
            return Err(illegal(format!(
                "the commit records an approval of call {:?}: decisions are sent as \
                 decisions, and the server applies them",
                d.call_id
            )));
        }
    }
    Ok(())
}

fn check_same_journal(
    stored: &RunJournal,
    next: &RunJournal,
    new_tail: Option<&Message>,
    granted: &Granted<'_>,
) -> Result<(), Refused> {
    check_approvals(Some(stored), next, new_tail, granted)?;
    if let Some(g) = stored.gated.iter().find(|g| !next.is_gated(g)) {
        return Err(illegal(format!("the commit un-gates call {g:?}")));
    }
    for r in &stored.results {
        match next.result(&r.call_id) {
            Some(text) if text == r.result || text == unstorable_result(r.result.len()) => {}
            _ => {
                return Err(illegal(format!(
                    "the commit drops or changes the result of call {:?}",
                    r.call_id
                )));
            }
        }
    }
    // A call started and not finished stays started until its result is recorded or it is
    // gated again (and then needs a new decision). Not even the writer that set it clears it
    // otherwise: a device that ran the call and said it did not would have it run again.
    if let Some(x) = &stored.started {
        if next.started.as_ref() != Some(x) && !next.has_result(x) && !regated(next, new_tail, x) {
            return Err(illegal(format!(
                "the commit clears the \"started\" mark of call {x:?} without its result"
            )));
        }
    }
    Ok(())
}

/// A `tool_call_result` message is what the engine appends when every call of the tool call
/// before it has its result: the same calls (ids, tools, inputs), in order, each with a
/// result. A rewritten results message keeps its results (or shrinks one to the unstorable
/// marker).
fn check_results(tail: Option<&Message>, commit: &Commit) -> Result<(), Refused> {
    let answers = |calls: &[ToolEntry], results: &[ToolEntry]| {
        calls.len() == results.len()
            && calls
                .iter()
                .zip(results)
                .all(|(c, r)| c.call_id == r.call_id && c.name == r.name && c.inputs == r.inputs)
    };
    if let (Some(before), Some(after)) = (tail, &commit.replace_tail) {
        if let (Some(old), Some(new)) = (before.tool_results(), after.tool_results()) {
            let kept = old
                .iter()
                .zip(new)
                .all(|(a, b)| match (&a.result, &b.result) {
                    (Some(x), Some(y)) => x == y || *y == unstorable_result(x.len()),
                    (x, y) => x == y,
                });
            if !kept {
                return Err(illegal("the commit changes a stored result"));
            }
        }
    }
    let mut before = commit.replace_tail.as_ref().or(tail);
    for m in &commit.append {
        if let Some(results) = m.tool_results() {
            let calls = before.and_then(Message::tool_calls);
            let ok = calls.is_some_and(|c| answers(c, results))
                && results.iter().all(|r| r.result.is_some());
            if !ok {
                return Err(illegal(
                    "the commit appends results that do not answer the calls before them, \
                     each with its result",
                ));
            }
        }
        before = Some(m);
    }
    Ok(())
}

/// The call is waiting for a new decision: pending in the tail, gated, and not approved.
fn regated(run: &RunJournal, tail: Option<&Message>, call_id: &str) -> bool {
    let pending = tail
        .map(entries)
        .unwrap_or(&[])
        .iter()
        .any(|e| e.call_id == call_id && e.is_pending());
    pending
        && run.is_gated(call_id)
        && !run
            .decisions
            .iter()
            .any(|d| d.call_id == call_id && d.approved)
}

/// A journal ends with the `tool_call_result` message that carries its results: a result
/// known, or a call started, cannot vanish with it.
fn check_journal_ended(stored: &RunJournal, commit: &Commit) -> Result<(), Refused> {
    let results = commit.append.first().and_then(Message::tool_results);
    let result_of = |id: &str| {
        results
            .unwrap_or(&[])
            .iter()
            .find(|e| e.call_id == id)
            .and_then(|e| e.result.as_deref())
    };
    for r in &stored.results {
        match result_of(&r.call_id) {
            Some(t) if t == r.result || t == unstorable_result(r.result.len()) => {}
            _ => {
                return Err(illegal(format!(
                    "the commit ends the run without the result of call {:?}",
                    r.call_id
                )));
            }
        }
    }
    if let Some(x) = &stored.started {
        if result_of(x).is_none() {
            return Err(illegal(format!(
                "the commit ends the run while call {x:?} is started, without its result"
            )));
        }
    }
    Ok(())
}

/// A journal for the tail after the commit (a tool call it appends, or, for a record written
/// before journals were kept, the stored one): nothing in it is approved yet.
fn check_new_journal(
    next: &RunJournal,
    commit: &Commit,
    new_tail: Option<&Message>,
    granted: &Granted<'_>,
) -> Result<(), Refused> {
    let Some(message) = new_tail.filter(|m| m.id == next.call_message_id) else {
        return Err(illegal(
            "the commit's run journal names a message that is not the tail",
        ));
    };
    let appended = commit.append.iter().any(|m| m.id == next.call_message_id);
    check_approvals(None, next, new_tail, granted)?;
    for e in entries(message).iter().filter(|_| appended) {
        // Approved as it is written only by a grant `check_approvals` accepted.
        let granted = next.granted_by(&e.call_id).is_some();
        if e.approval_state() == Some(ApprovalState::Approved) && !granted {
            return Err(illegal(format!(
                "the commit appends call {:?} already approved",
                e.call_id
            )));
        }
        if e.approval.is_some() && !next.is_gated(&e.call_id) {
            return Err(illegal(format!(
                "the commit appends gated call {:?} outside the journal's gate",
                e.call_id
            )));
        }
    }
    Ok(())
}

/// A "started" mark is set only by the run's lease holder, on a call of the tail that may
/// run: not gated, or approved by a decision the server recorded, for exactly its inputs.
fn check_started(
    stored: Option<&RunJournal>,
    next: &RunJournal,
    tail: Option<&Message>,
    keeps_lease: bool,
    granted: &Granted<'_>,
) -> Result<(), Refused> {
    let Some(x) = &next.started else {
        return Ok(());
    };
    if stored.and_then(|s| s.started.as_ref()) == Some(x) {
        return Ok(());
    }
    if !keeps_lease {
        return Err(illegal(format!(
            "the commit starts call {x:?} without holding the run's lease"
        )));
    }
    let Some(e) = tail
        .map(entries)
        .unwrap_or(&[])
        .iter()
        .find(|e| &e.call_id == x)
    else {
        return Err(illegal(format!(
            "the commit starts call {x:?}, not in the tail"
        )));
    };
    if next.has_result(x) {
        return Err(illegal(format!(
            "the commit starts call {x:?}, which has its result"
        )));
    }
    let gated = e.approval.is_some() || next.is_gated(x);
    if gated && !next.approved_for(x, &e.inputs) {
        return Err(illegal(format!(
            "the commit starts call {x:?}, which nobody approved for these inputs"
        )));
    }
    if let Some(id) = next.granted_by(x) {
        if granted.covering(id, &e.name, &e.inputs).is_none() {
            return Err(Refused::GrantGone(format!(
                "the grant {id:?} that approved call {x:?} no longer covers it (revoked or \
                 expired): read the grants again, and the call asks a human"
            )));
        }
    }
    Ok(())
}

/// The audit trail is the server's: a write may put the records of calls still open in the
/// stored journal, and new ones numbered right after the stored count; never rewrite an ended
/// record or skip numbers. Who decided is stamped by the handler, whatever the write says.
fn check_audit(
    record: &ThreadRecord,
    tail: Option<&Message>,
    commit: &Commit,
) -> Result<(), Refused> {
    let open = record.run.as_ref().map_or(&[][..], |r| &r.audit[..]);
    let mut next_seq = record.audit_count + 1;
    let mut seqs: Vec<u64> = commit.audit.iter().map(|a| a.seq).collect();
    seqs.sort_unstable();
    seqs.dedup();
    if seqs.len() != commit.audit.len() {
        return Err(illegal("the commit writes an audit record twice"));
    }
    // A record names the call it is of: an open one keeps the call and the time it was asked
    // for; a new one is of a call of the thread's tail.
    let tail_calls: Vec<&str> = commit
        .append
        .iter()
        .chain(commit.replace_tail.as_ref())
        .chain(tail)
        .flat_map(|m| entries(m).iter().map(|e| e.call_id.as_str()))
        .collect();
    // Which grant decided a call is the journal's decision, never a record's own say.
    let granted_by = |call_id: &str| commit.run.as_ref().and_then(|r| r.granted_by(call_id));
    for o in commit.run.iter().flat_map(|r| r.audit.iter()) {
        let ok = match open.iter().find(|s| s.seq == o.seq) {
            Some(s) => s.grant == o.grant,
            None => o.grant.is_none() || o.grant.as_deref() == granted_by(&o.call_id),
        };
        if !ok {
            return Err(illegal(format!(
                "the commit names a grant on audit record {} that did not decide it",
                o.seq
            )));
        }
    }
    for a in &commit.audit {
        let grant = open
            .iter()
            .chain(commit.run.iter().flat_map(|r| r.audit.iter()))
            .find(|o| o.seq == a.seq)
            .map_or(granted_by(&a.call_id), |o| o.grant.as_deref());
        if a.grant_id.is_some() && a.grant_id.as_deref() != grant {
            return Err(illegal(format!(
                "the commit names a grant on audit record {} that did not decide it",
                a.seq
            )));
        }
        let same = match open.iter().find(|o| o.seq == a.seq) {
            Some(o) => o.call_id == a.call_id && o.requested_at == a.requested_at,
            None => tail_calls.contains(&a.call_id.as_str()),
        };
        if !same {
            return Err(illegal(format!(
                "the commit rewrites audit record {} as another call's",
                a.seq
            )));
        }
    }
    for seq in seqs {
        if open.iter().any(|o| o.seq == seq) {
            continue;
        }
        if seq != next_seq {
            return Err(illegal(format!(
                "the commit writes audit record {seq}: the next is {next_seq}, and ended \
                 records are never rewritten"
            )));
        }
        next_seq += 1;
    }
    // Who decided is not the writer's to say: the handler keeps the stored `decidedBy`
    // (`wire::stamp_identity`). A journal record numbered past what this write puts is
    // out of sequence.
    if let Some(run) = &commit.run {
        if let Some(o) = run.audit.iter().find(|o| o.seq >= next_seq) {
            return Err(illegal(format!(
                "the commit's journal numbers audit record {} out of sequence",
                o.seq
            )));
        }
    }
    Ok(())
}
