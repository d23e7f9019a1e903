//! The device world's ghost state (what really ran, which chats were stored, who holds the
//! handler's lease and since when, which calls were approved on a device without their tool)
//! and its invariants: those of `simulation/oracle.rs`, judged at the handler (the one clock
//! and the one store that decide), plus the outbox's and the hand-over's.

use super::super::oracle::{conversation_problem, entry_state, kind, regated};
use super::super::world::THREAD;
use super::driver::{Admit, Run};
use super::server::Applied;
use super::world::{Agent, DevSim};
use gatehouse_agent::engine::ToolInvocation;
use gatehouse_agent::engine::results::{code, error_result, output_to_result};
use gatehouse_agent::store::wire::LeaseOp;
use gatehouse_agent::store::{LEASE_MS, Queued, ThreadRecord};
use gatehouse_agent::thread::{ApprovalState, Message, MessageKind, Role, ToolEntry};
use serde_json::Value;
use std::collections::{BTreeMap, BTreeSet};

/// (the `tool_call` message id, the call id).
pub(crate) type Key = (String, String);

pub(crate) struct Exec {
    pub key: Key,
    pub tool: String,
    pub device: usize,
    pub agent: u64,
    /// The agent's id (its lease's owner).
    pub owner: String,
    pub step: u64,
    pub result: String,
    pub completed: bool,
    /// Its result is stored at the handler.
    pub durable: bool,
    /// Its tab went away before the result was stored or queued.
    pub cut: bool,
    /// Its owner's lease lapsed at the handler while it ran, and another agent wrote.
    pub overtaken: bool,
}

#[derive(Clone, Copy, Debug, PartialEq)]
pub(crate) enum ChatEnd {
    Ok,
    /// Refused before anything was written (the view, or the handler at its first write).
    Refused(&'static str),
    /// Failed after its first write, or without knowing whether it landed.
    Failed(&'static str),
}

pub(crate) struct Chat {
    pub text: String,
    pub id: String,
    pub device: usize,
    pub stored: bool,
    pub queued: bool,
    pub end: Option<ChatEnd>,
    /// Stored by a delayed copy of a commit the handler had refused (see `Ghost::refused`).
    pub late: bool,
}

/// Who set the stored `started` mark.
pub(crate) struct Mark {
    pub key: Key,
    pub owner: String,
    pub run: u64,
}

/// The lease the handler holds: whose, which run's, and when the handler last wrote it.
pub(crate) struct Holder {
    pub owner: String,
    pub run: u64,
    pub refreshed: u64,
}

#[derive(Default)]
pub(crate) struct Ghost {
    pub execs: Vec<Exec>,
    pub chats: Vec<Chat>,
    pub mirror: Vec<Message>,
    pub record: Option<ThreadRecord>,
    pub started: Option<Mark>,
    pub holder: Option<Holder>,
    /// Runs that ended without an answer from the handler (`unavailable`).
    pub lost_contact: BTreeSet<u64>,
    /// Calls approved on a device that lacks their tool, with that device.
    pub elsewhere: Vec<(Key, usize)>,
    /// Commit ids the handler refused (`conflict`, `busy`). The handler keeps only applied
    /// commits' answers, so a delayed copy of a refused commit is planned afresh and may
    /// apply after its sender was told it was refused: counted, and excepted from 4.
    pub refused: BTreeSet<String>,
    /// Approvals people made at `/decide`: (the call's message id, its id, the inputs it was
    /// approved or edited for, as JSON). 11: a gated call runs only with one of them.
    pub approved: BTreeSet<(String, String, String)>,
    /// Who decided each call (approved or rejected it) at `/decide`. 12: `decidedBy`.
    pub deciders: BTreeMap<String, BTreeSet<String>>,
}

const LEASE: u64 = LEASE_MS as u64;
/// Marks the owner of a "started" mark the hostile device wrote.
const HOSTILE: &str = "hostile:";

impl DevSim {
    pub(crate) fn register_chat(&mut self, d: usize, text: &str, id: &str) -> usize {
        self.ghost.chats.push(Chat {
            text: text.to_owned(),
            id: id.to_owned(),
            device: d,
            stored: false,
            queued: false,
            end: None,
            late: false,
        });
        self.ghost.chats.len() - 1
    }

    pub(crate) fn chat_by_id(&self, id: &str) -> Option<usize> {
        self.ghost.chats.iter().position(|c| c.id == id)
    }

    /// The live agent named `owner`, if its run `run` is still driving.
    fn driving(&self, owner: &str, run: u64) -> bool {
        self.devices.iter().flat_map(|d| &d.tabs).any(|t| {
            t.agent.as_ref().is_some_and(|a| {
                a.me == owner && a.run.as_ref().is_some_and(|r| r.id == run && r.driving)
            })
        })
    }

    fn alive(&self, owner: &str) -> Option<&Agent> {
        self.devices
            .iter()
            .flat_map(|d| &d.tabs)
            .find_map(|t| t.agent.as_ref().filter(|a| a.me == owner))
    }

    /// `execute` begins: invariant 1, and 10's "on a device that has it".
    pub(crate) fn exec_start(
        &mut self,
        d: usize,
        t: usize,
        inv: &ToolInvocation,
        msg: String,
    ) -> (usize, Result<Value, String>) {
        let key: Key = (msg, inv.call_id.clone());
        let all = super::super::actors::tools();
        let idempotent = all.get(&inv.tool).is_some_and(|s| s.idempotent);
        let (serial, owner) = {
            let a = self.agent(d, t);
            (a.serial, a.me.clone())
        };
        // 11: a gated call (its stored entry was gated, or the journal says so) runs only as
        // a person approved it at `/decide`, with exactly those inputs.
        let record = self.server.store.record(THREAD, self.server_wall() as f64);
        let journal_gated = record
            .run
            .as_ref()
            .is_some_and(|r| r.call_message_id.as_str() == key.0 && r.gated.contains(&inv.call_id));
        let entry_gated = self
            .mirror_entry(&key)
            .is_some_and(|e| e.approval.is_some());
        if journal_gated || entry_gated {
            let inputs = serde_json::to_string(&inv.inputs).unwrap_or_default();
            let paid = (key.0.clone(), key.1.clone(), inputs);
            if !self.ghost.approved.contains(&paid) {
                self.fail(
                    11,
                    format!(
                        "gated call {key:?} ({}) runs on device{d} with {} although no person \
                         approved it with those inputs",
                        inv.tool, paid.2
                    ),
                );
            }
        }
        if self.devices[d].tools.get(&inv.tool).is_none() {
            self.fail(
                10,
                format!("{} runs on device{d}, which lacks it", inv.tool),
            );
        }
        let prior: Vec<usize> = (0..self.ghost.execs.len())
            .filter(|&i| self.ghost.execs[i].key == key)
            .collect();
        let earlier = |e: &Exec, i: usize| {
            format!(
                "execution #{i} on device{}/a{} at step {} (completed {}, durable {}, cut {}, \
                 overtaken {})",
                e.device, e.agent, e.step, e.completed, e.durable, e.cut, e.overtaken
            )
        };
        if let Some(&p) = prior.first() {
            self.stats.reruns += 1;
            if !idempotent {
                let e = earlier(&self.ghost.execs[p], p);
                self.fail(
                    1,
                    format!(
                        "call {key:?} ({}) runs again on device{d}/a{serial}; earlier: {e}",
                        inv.tool
                    ),
                );
            } else if let Some(&p) = prior.iter().find(|&&p| {
                // Again only after every earlier execution ended without its result reaching
                // the handler (a crash, a lapsed lease, a lost connection), never beside one
                // still running.
                let e = &self.ghost.execs[p];
                e.durable || (!e.completed && !e.cut && !e.overtaken)
            }) {
                let e = earlier(&self.ghost.execs[p], p);
                self.fail(1, format!("idempotent call {key:?} runs again on device{d}/a{serial} although an earlier execution's result is stored or it still runs: {e}"));
            }
        }
        self.next_exec += 1;
        let outcome = super::super::actors::tool_outcome(&mut self.rng, self.next_exec, &inv.tool);
        let result = match &outcome {
            Ok(v) => output_to_result(v),
            Err(m) => error_result(code::TOOL_ERROR, m, &[]),
        };
        self.ghost.execs.push(Exec {
            key,
            tool: inv.tool.clone(),
            device: d,
            agent: serial,
            owner,
            step: self.step,
            result,
            completed: false,
            durable: false,
            cut: false,
            overtaken: false,
        });
        self.stats.executions += 1;
        (self.ghost.execs.len() - 1, outcome)
    }

    /// The handler applied something: 7 (one live owner, judged by the handler's clock), then
    /// the ghost follows the store, with 4 (no message twice), 6 (a crashed or cut-off
    /// run's `started` is recovered by the next other write) and 10's bookkeeping.
    pub(crate) fn on_applied(&mut self, d: usize, _t: usize, run: u64, applied: Applied) {
        match applied {
            Applied::Nothing => {}
            Applied::Deduped => self.stats.deduped += 1,
            Applied::Lease(op, owner) => match (op, &mut self.ghost.holder) {
                (LeaseOp::Renew, Some(h)) if h.owner == owner => h.refreshed = self.real,
                (LeaseOp::Release, Some(h)) if h.owner == owner => {
                    let live = h.run;
                    if live != run && self.driving(&owner, live) {
                        // Another run of the same agent cleared the lease of its run that
                        // still drives (a delayed release). A release names the version its
                        // run last saw (`LeaseRequest::version`), so the handler refuses it.
                        self.stats.stale_releases += 1;
                        return self.fail(
                            7,
                            format!("a delayed release of {owner}'s earlier run cleared the lease of its live run #{live}"),
                        );
                    }
                    self.ghost.holder = None
                }
                _ => {}
            },
            Applied::Illegal(_) => {}
            Applied::Commit {
                request,
                record,
                who,
                decided,
            } => {
                let owner = request.owner.clone();
                let late = self.ghost.refused.contains(&request.commit_id);
                if late {
                    // Its run was told the write was refused: the handler remembers refusals
                    // under their commit ids, so a delayed copy is refused again.
                    self.stats.applied_after_refusal += 1;
                    return self.fail(
                        4,
                        format!(
                            "a delayed copy of the refused commit {} was applied",
                            request.commit_id
                        ),
                    );
                }
                if let Some(h) = self.ghost.holder.take() {
                    let live = self.real < h.refreshed + LEASE;
                    if h.owner != owner && live && self.driving(&h.owner, h.run) {
                        self.stats.ownership_breaks += 1;
                        if self.cfg.check_ownership {
                            return self.fail(7, format!(
                                "device{d} ({owner}) wrote v{} while {} (run #{}) drives the run and renewed its lease {:.1}s ago at the handler",
                                record.version, h.owner, h.run, (self.real - h.refreshed) as f64 / 1000.0));
                        }
                    }
                    if h.owner != owner {
                        self.stats.takeovers += 1;
                        self.note(
                            None,
                            format!(
                                "{owner} takes over from {} (renewed {:.1}s ago)",
                                h.owner,
                                (self.real - h.refreshed) as f64 / 1000.0
                            ),
                        );
                        if !live {
                            for e in &mut self.ghost.execs {
                                if e.owner == h.owner && !e.durable {
                                    e.overtaken = true;
                                }
                            }
                        }
                    }
                }
                self.ghost.holder = request.keep.then(|| super::oracle::Holder {
                    owner: owner.clone(),
                    run,
                    refreshed: self.real,
                });
                let before = self.ghost.mirror.last().cloned();
                self.follow(d, run, &owner, &request.commit, &record);
                if let Some(calls) = decided {
                    self.decided(before, &who, &calls);
                }
            }
        }
    }

    /// A person decided `calls` at `/decide` (new decisions, or revisions of ones not acted
    /// on yet): who decided each, and the inputs of those it leaves approved (edited ones with
    /// their new inputs); a call it leaves rejected has no approval left.
    fn decided(&mut self, before: Option<Message>, who: &str, calls: &[String]) {
        // The calls' message as the decision left it (rejections' results may follow it).
        let Some(before) = before else { return };
        let Some(after) = self
            .ghost
            .mirror
            .iter()
            .rev()
            .find(|m| m.id == before.id)
            .cloned()
        else {
            return;
        };
        let msg = after.id.as_str().to_owned();
        for e in after.tool_calls().unwrap_or(&[]) {
            if !calls.contains(&e.call_id) {
                continue;
            }
            let state = e.approval_state();
            if !matches!(
                state,
                Some(ApprovalState::Approved | ApprovalState::Rejected)
            ) {
                continue;
            }
            self.ghost
                .deciders
                .entry(e.call_id.clone())
                .or_default()
                .insert(who.to_owned());
            self.ghost
                .approved
                .retain(|(m, id, _)| !(*m == msg && *id == e.call_id));
            if state == Some(ApprovalState::Approved) {
                let inputs = serde_json::to_string(&e.inputs).unwrap_or_default();
                self.ghost
                    .approved
                    .insert((msg.clone(), e.call_id.clone(), inputs));
            }
        }
    }

    fn follow(
        &mut self,
        d: usize,
        run: u64,
        owner: &str,
        c: &gatehouse_agent::engine::Commit,
        record: &ThreadRecord,
    ) {
        let prev_tail = self.ghost.mirror.last().cloned();
        let changed = c.append.len() + usize::from(c.replace_tail.is_some());
        let rows = match self.server.store.page(THREAD, None, changed as u32) {
            Ok(r) => r,
            Err(e) => return self.fail(8, format!("page: {e}")),
        };
        let start = (record.message_count as usize).saturating_sub(rows.len());
        if start > self.ghost.mirror.len() {
            return self.fail(8, "the handler skipped message rows".into());
        }
        self.ghost.mirror.truncate(start);
        for r in rows {
            match r.message() {
                Ok(m) => self.ghost.mirror.push(m),
                Err(e) => return self.fail(8, format!("row {}: {e}", r.seq)),
            }
        }
        self.ghost.record = Some(record.clone());
        // 4: a message is stored once.
        for m in &c.append {
            if m.role != Role::User || !matches!(m.kind, MessageKind::Plain) {
                continue;
            }
            if let Some(i) = self.chat_by_id(m.id.as_str()) {
                if self.ghost.chats[i].stored {
                    let text = self.ghost.chats[i].text.clone();
                    return self.fail(4, format!("the message {text:?} is stored a second time"));
                }
                self.ghost.chats[i].stored = true;
                self.stats.chats_stored += 1;
            }
        }
        for i in 0..self.ghost.execs.len() {
            if self.ghost.execs[i].completed && !self.ghost.execs[i].durable {
                let key = self.ghost.execs[i].key.clone();
                if self.stored_result(&key).as_deref() == Some(self.ghost.execs[i].result.as_str())
                {
                    self.ghost.execs[i].durable = true;
                }
            }
        }
        // 10: calls this commit approved on a device without their tool.
        if let Some(tail) = self.ghost.mirror.last().cloned() {
            let before = prev_tail.filter(|p| p.id == tail.id);
            let was = |id: &str| {
                before
                    .as_ref()
                    .and_then(|b| b.tool_calls())
                    .is_some_and(|b| {
                        b.iter().any(|x| {
                            x.call_id == id && x.approval_state() == Some(ApprovalState::Approved)
                        })
                    })
            };
            for e in tail.tool_calls().unwrap_or(&[]) {
                let known = super::super::actors::tools().get(&e.name).is_some();
                if known
                    && e.approval_state() == Some(ApprovalState::Approved)
                    && !was(&e.call_id)
                    && self.devices[d].tools.get(&e.name).is_none()
                {
                    self.stats.elsewhere += 1;
                    let key = (tail.id.as_str().to_owned(), e.call_id.clone());
                    self.ghost.elsewhere.push((key, d));
                }
            }
        }
        // 6: who set `started`; another writer must recover a mark it replaces.
        let new = record.run.as_ref().and_then(|r| {
            r.started
                .as_ref()
                .map(|s| (r.call_message_id.as_str().to_owned(), s.clone()))
        });
        match self.ghost.started.take() {
            // A write that keeps the mark (a policy change after a takeover) does not take it.
            Some(p) if Some(&p.key) == new.as_ref() => self.ghost.started = Some(p),
            prev => {
                if let Some(p) = prev.filter(|p| p.owner != owner || p.run != run) {
                    self.check_recovered(&p.key, record);
                }
                // A mark the hostile device set (legal: a writer holding the lease starts an
                // approved call) belongs to no run: 6 does not apply to it, but the write
                // that replaces it must recover it.
                let hostile = self.devices[d].hostile;
                self.ghost.started = new.map(|key| Mark {
                    key,
                    owner: match hostile {
                        true => format!("{HOSTILE}{owner}"),
                        false => owner.to_owned(),
                    },
                    run,
                });
            }
        }
    }

    fn mirror_entry(&self, key: &Key) -> Option<ToolEntry> {
        self.ghost
            .mirror
            .iter()
            .rev()
            .find(|m| m.id.as_str() == key.0)
            .and_then(|m| m.tool_calls())
            .and_then(|c| c.iter().find(|e| e.call_id == key.1))
            .cloned()
    }

    fn check_recovered(&mut self, key: &Key, record: &ThreadRecord) {
        let entry = self.mirror_entry(key);
        let idempotent = entry
            .as_ref()
            .and_then(|e| {
                super::super::actors::tools()
                    .get(&e.name)
                    .map(|s| s.idempotent)
            })
            .unwrap_or(false);
        let run = record.run.as_ref();
        let ok = if idempotent {
            run.is_some_and(|r| {
                r.call_message_id.as_str() == key.0 && r.started.is_none() && !r.has_result(&key.1)
            })
        } else {
            run.is_some_and(|r| r.started.is_none()) && entry.as_ref().is_some_and(regated)
        };
        if !ok {
            self.fail(6, format!(
                "call {key:?} was left started by a run that is gone or lost contact, and another \
                 write changed that without recovering it (entry now {:?}, journal {run:?})",
                entry.as_ref().map(entry_state)));
        }
    }

    /// A run ended: 4 for its chat.
    pub(crate) fn on_run_end(
        &mut self,
        _d: usize,
        _t: usize,
        run: &Run,
        res: Result<(), &'static str>,
    ) {
        if res == Err("unavailable") {
            self.ghost.lost_contact.insert(run.id);
        }
        let Some(c) = run.chat else { return };
        let refused = run.admission == Admit::Refused || run.input_error.is_some();
        let end = match res {
            Ok(()) => ChatEnd::Ok,
            Err(code @ ("busy" | "conflict")) if refused => ChatEnd::Refused(code),
            Err(code) => ChatEnd::Failed(code),
        };
        self.ghost.chats[c].end = Some(end);
        if end == ChatEnd::Ok && !self.ghost.chats[c].stored {
            let text = self.ghost.chats[c].text.clone();
            self.fail(4, format!("chat {text:?} returned Ok but is not stored"));
        }
    }

    /// A page went away.
    pub(crate) fn on_gone(&mut self, d: usize, a: &Agent) {
        let outbox = &self.devices[d].outbox;
        for e in &mut self.ghost.execs {
            let queued = outbox.iter().any(|q| {
                matches!(q, Queued::Result { call_id, result } if *call_id == e.key.1 && *result == e.result)
            });
            if e.agent == a.serial && !e.durable && !queued {
                e.cut = true;
            }
        }
        if let Some(c) = a.run.as_ref().and_then(|r| r.chat) {
            if self.ghost.chats[c].end.is_none() {
                self.ghost.chats[c].end = Some(ChatEnd::Failed("crashed"));
            }
        }
    }

    /// After every step: 6, a `started` mark belongs to a live run, or to one that crashed or
    /// lost contact with the handler.
    pub(crate) fn check_step(&mut self) {
        let Some(m) = &self.ghost.started else { return };
        if m.owner.starts_with(HOSTILE) {
            return;
        }
        let Some(a) = self.alive(&m.owner) else {
            return;
        };
        if a.run.as_ref().is_some_and(|r| r.id == m.run) || self.ghost.lost_contact.contains(&m.run)
        {
            return;
        }
        let d = format!(
            "the journal says call {:?} started (run #{} of {}), but that agent is alive, the run \
             is over, and it did not lose contact with the handler",
            m.key, m.run, m.owner
        );
        self.fail(6, d);
    }

    /// 5: what is sent to the model is a valid conversation.
    pub(crate) fn check_request(&mut self, d: usize, t: usize, history: &[Message]) {
        if let Some(p) = conversation_problem(history, true) {
            let kinds: Vec<String> = history.iter().map(kind).collect();
            let v = self.agent(d, t).version;
            self.fail(
                5,
                format!(
                    "device{d}/tab{t} (view v{v}) sends an invalid conversation: {p}: [{}]",
                    kinds.join(" ")
                ),
            );
        }
    }

    pub(crate) fn stored_result(&self, key: &Key) -> Option<String> {
        let pos = self
            .ghost
            .mirror
            .iter()
            .rposition(|m| m.id.as_str() == key.0)?;
        if let Some(next) = self.ghost.mirror.get(pos + 1) {
            return next
                .tool_results()?
                .iter()
                .find(|e| e.call_id == key.1)?
                .result
                .clone();
        }
        let run = self.ghost.record.as_ref()?.run.as_ref()?;
        if run.call_message_id.as_str() != key.0 {
            return None;
        }
        run.result(&key.1).map(str::to_owned)
    }
}
