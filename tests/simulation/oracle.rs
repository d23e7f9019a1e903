//! The ghost state the simulation keeps beside the SDK (what really ran, which chats were
//! stored, who set `started`), and the invariants checked against it.

use super::actors;
use super::world::{Agent, Locks, Run, Sim, THREAD};
use gatehouse_agent::engine::results::{REGATE_REASON, code, error_result, output_to_result};
use gatehouse_agent::engine::{Commit, ToolInvocation};
use gatehouse_agent::store::ThreadRecord;
use gatehouse_agent::thread::{ApprovalState, Message, MessageKind, Role, ToolEntry};
use serde_json::Value;
use std::collections::BTreeSet;

/// (the `tool_call` message id, the call id): call ids are unique within a message only.
pub(crate) type Key = (String, String);

/// One execution of a tool: `execute` began.
pub(crate) struct Exec {
    pub key: Key,
    pub tool: String,
    pub agent: u64,
    pub tab: usize,
    pub step: u64,
    /// The result string the thread must hold if this execution's result is kept.
    pub result: String,
    pub completed: bool,
    /// Its result is in the store (journal or result message).
    pub durable: bool,
    /// Its tab went away before the result was durable.
    pub cut: bool,
}

pub(crate) struct Chat {
    pub text: String,
    pub tab: usize,
    pub stored: bool,
    pub outcome: Option<Result<(), &'static str>>,
    pub crashed: bool,
}

/// Who set the stored `started` mark.
pub(crate) struct Mark {
    pub key: Key,
    pub agent: u64,
    pub run: u64,
}

#[derive(Default)]
pub(crate) struct Ghost {
    pub execs: Vec<Exec>,
    pub chats: Vec<Chat>,
    /// The stored thread, parsed, kept up to date from the store after every commit.
    pub mirror: Vec<Message>,
    pub record: Option<ThreadRecord>,
    pub started: Option<Mark>,
    /// Agents whose page went away.
    pub dead: BTreeSet<u64>,
}

pub(crate) fn regated(e: &ToolEntry) -> bool {
    e.is_pending() && e.approval.as_ref().and_then(|a| a.reason.as_deref()) == Some(REGATE_REASON)
}

pub(crate) fn entry_state(e: &ToolEntry) -> String {
    let mark = match &e.approval {
        None => "",
        Some(a) => match a.state {
            ApprovalState::Pending if a.reason.as_deref() == Some(REGATE_REASON) => "?regated",
            ApprovalState::Pending if a.reason.is_some() => "?reason",
            ApprovalState::Pending => "?",
            ApprovalState::Approved => "+",
            ApprovalState::Rejected => "-",
            ApprovalState::Expired => "-expired",
        },
    };
    format!("{}{mark}", e.call_id)
}

pub(crate) fn kind(m: &Message) -> String {
    match (&m.role, &m.kind) {
        (_, MessageKind::ToolCall(c)) => format!(
            "tool_call[{}]",
            c.iter().map(entry_state).collect::<Vec<_>>().join(",")
        ),
        (_, MessageKind::ToolCallResult(r)) => format!(
            "results[{}]",
            r.iter()
                .map(|e| e.call_id.as_str())
                .collect::<Vec<_>>()
                .join(",")
        ),
        (Role::User, _) => format!("user({:?})", m.text()),
        _ => "assistant".into(),
    }
}

pub(crate) fn describe(c: &Commit, keep: bool) -> String {
    let mut parts = Vec::new();
    if let Some(t) = &c.replace_tail {
        parts.push(format!("~{}", kind(t)));
    }
    for m in &c.append {
        parts.push(format!("+{}", kind(m)));
    }
    if let Some(r) = &c.run {
        if let Some(s) = &r.started {
            parts.push(format!("started:{s}"));
        }
        if !r.results.is_empty() {
            let ids: Vec<&str> = r.results.iter().map(|x| x.call_id.as_str()).collect();
            parts.push(format!("results:{}", ids.join(",")));
        }
    }
    parts.push(if keep {
        "lease".into()
    } else {
        "no lease".into()
    });
    parts.join(" ")
}

fn has_dup(ids: &[&str]) -> bool {
    let set: BTreeSet<&str> = ids.iter().copied().collect();
    set.len() != ids.len()
}

/// Why these messages are not a valid conversation (`request`: sent to the model, so the
/// last message must be the user's turn; otherwise the stored thread, whose tail may be an
/// unfinished `tool_call`).
pub(crate) fn conversation_problem(h: &[Message], request: bool) -> Option<String> {
    if request {
        let Some(last) = h.last() else {
            return Some("the request holds no message".into());
        };
        if last.role == Role::Assistant {
            return Some(format!("it ends with an assistant message: {}", kind(last)));
        }
    }
    for (i, m) in h.iter().enumerate() {
        if let Some(calls) = m.tool_calls() {
            let ids: Vec<&str> = calls.iter().map(|e| e.call_id.as_str()).collect();
            if has_dup(&ids) {
                return Some(format!("message {i} repeats a call id: {ids:?}"));
            }
            if !request && i + 1 == h.len() {
                continue;
            }
            let Some(results) = h.get(i + 1).and_then(|n| n.tool_results()) else {
                return Some(format!(
                    "the tool_call message {i} ({ids:?}) is not followed by its results"
                ));
            };
            let rids: Vec<&str> = results.iter().map(|e| e.call_id.as_str()).collect();
            let (mut a, mut b) = (ids.clone(), rids.clone());
            a.sort_unstable();
            b.sort_unstable();
            if a != b {
                return Some(format!(
                    "the calls {ids:?} of message {i} are answered by {rids:?}"
                ));
            }
            if let Some(e) = results.iter().find(|e| e.result.is_none()) {
                return Some(format!(
                    "call {} has no result in message {}",
                    e.call_id,
                    i + 1
                ));
            }
        }
        if m.tool_results().is_some() && (i == 0 || h[i - 1].tool_calls().is_none()) {
            return Some(format!("message {i} holds results without their calls"));
        }
    }
    None
}

impl Sim {
    pub(crate) fn register_chat(&mut self, tab: usize, text: &str) -> usize {
        self.ghost.chats.push(Chat {
            text: text.to_owned(),
            tab,
            stored: false,
            outcome: None,
            crashed: false,
        });
        self.ghost.chats.len() - 1
    }

    /// `execute` begins: invariant 1. Returns the execution's index and its outcome.
    pub(crate) fn exec_start(
        &mut self,
        t: usize,
        inv: &ToolInvocation,
        msg: String,
    ) -> (usize, Result<Value, String>) {
        let key: Key = (msg, inv.call_id.clone());
        let idempotent = self.tools.get(&inv.tool).is_some_and(|s| s.idempotent);
        let serial = self.agent(t).serial;
        let prior: Vec<usize> = (0..self.ghost.execs.len())
            .filter(|&i| self.ghost.execs[i].key == key)
            .collect();
        let describe = |e: &Exec, i: usize| {
            format!(
                "execution #{i} by tab{}/a{} at step {} (completed: {}, result durable: {}, cut \
                 off by a crash: {})",
                e.tab, e.agent, e.step, e.completed, e.durable, e.cut
            )
        };
        if let Some(&p) = prior.first() {
            self.stats.reruns += 1;
            if !idempotent {
                let d = describe(&self.ghost.execs[p], p);
                self.fail(
                    1,
                    format!(
                        "call {key:?} ({}) starts executing again in tab{t}/a{serial}; earlier: {d}",
                        inv.tool
                    ),
                );
            } else if let Some(&p) = prior.iter().find(|&&p| !self.ghost.execs[p].cut) {
                let d = describe(&self.ghost.execs[p], p);
                self.fail(
                    1,
                    format!(
                        "idempotent call {key:?} ({}) runs again in tab{t}/a{serial} although an \
                         earlier execution was not cut off by a crash: {d}",
                        inv.tool
                    ),
                );
            }
        }
        self.next_exec += 1;
        let outcome = actors::tool_outcome(&mut self.rng, self.next_exec, &inv.tool);
        let result = match &outcome {
            Ok(v) => output_to_result(v),
            Err(m) => error_result(code::TOOL_ERROR, m, &[]),
        };
        self.ghost.execs.push(Exec {
            key,
            tool: inv.tool.clone(),
            agent: serial,
            tab: t,
            step: self.step,
            result,
            completed: false,
            durable: false,
            cut: false,
        });
        self.stats.executions += 1;
        (self.ghost.execs.len() - 1, outcome)
    }

    /// A commit succeeded: invariant 7, then the ghost state follows the store, with the
    /// checks that can be made at once (4, 6, and 2/3 for the results just stored).
    pub(crate) fn on_commit(&mut self, t: usize, c: &Commit, keep: bool, record: &ThreadRecord) {
        let (serial, run_id) = {
            let a = self.agent(t);
            (a.serial, a.run.as_ref().expect("run").id)
        };
        {
            let other = self
                .tabs
                .iter()
                .enumerate()
                .filter(|(i, _)| *i != t)
                .find_map(|(i, tab)| {
                    let a = tab.agent.as_ref()?;
                    let r = a.run.as_ref()?;
                    r.owning.then(|| (i, a.serial, r.label.clone()))
                });
            if let Some((i, s, label)) = other {
                self.stats.ownership_breaks += 1;
                if !self.cfg.check_ownership {
                    self.note(
                        Some(t),
                        format!("OWNERSHIP BREAK: tab{i}/a{s} owns the thread"),
                    );
                } else {
                    return self.fail(
                    7,
                    format!(
                        "tab{t}/a{serial} wrote v{} while the run {label} of tab{i}/a{s} is alive \
                         and owns the thread",
                        record.version
                    ),
                );
                }
            }
        }
        {
            let r = self.run_of(t);
            r.wrote = true;
            r.owning = keep;
        }
        // The mirror: re-read the rows this commit wrote.
        let prev_tail = self.ghost.mirror.last().cloned();
        let changed = c.append.len() + usize::from(c.replace_tail.is_some());
        let rows = match self.store.page(THREAD, None, changed as u32) {
            Ok(r) => r,
            Err(e) => return self.fail(8, format!("page: {e}")),
        };
        let start = (record.message_count as usize).saturating_sub(rows.len());
        if start > self.ghost.mirror.len() {
            return self.fail(8, "the store skipped message rows".into());
        }
        self.ghost.mirror.truncate(start);
        for r in rows {
            match r.message() {
                Ok(m) => self.ghost.mirror.push(m),
                Err(e) => return self.fail(8, format!("row {}: {e}", r.seq)),
            }
        }
        if self.ghost.mirror.len() as u64 != record.message_count {
            return self.fail(8, "messageCount does not match the rows".into());
        }
        self.ghost.record = Some(record.clone());
        // 4: the chat's message is stored once.
        for m in &c.append {
            if m.role != Role::User || !matches!(m.kind, MessageKind::Plain) {
                continue;
            }
            let text = m.text();
            if let Some(i) = self.ghost.chats.iter().position(|ch| ch.text == text) {
                if self.ghost.chats[i].stored {
                    return self.fail(4, format!("the message {text:?} is stored a second time"));
                }
                self.ghost.chats[i].stored = true;
                self.stats.chats_stored += 1;
            }
        }
        // Results of this agent's executions that are now durable.
        for i in 0..self.ghost.execs.len() {
            let e = &self.ghost.execs[i];
            if e.agent == serial && e.completed && !e.durable {
                let key = e.key.clone();
                if self.stored_result(&key).as_deref() == Some(self.ghost.execs[i].result.as_str())
                {
                    self.ghost.execs[i].durable = true;
                }
            }
        }
        // Re-gates made by this commit.
        if let Some(calls) = self.ghost.mirror.last().and_then(|m| m.tool_calls()) {
            let before = prev_tail
                .as_ref()
                .filter(|p| Some(&p.id) == self.ghost.mirror.last().map(|m| &m.id))
                .and_then(|p| p.tool_calls());
            let n = calls
                .iter()
                .filter(|e| regated(e))
                .filter(|e| {
                    !before.is_some_and(|b| b.iter().any(|x| x.call_id == e.call_id && regated(x)))
                })
                .count();
            self.stats.regates += n as u64;
        }
        // 6: who set `started`; a dead run's mark may only be cleared by a recovery.
        let new = record.run.as_ref().and_then(|r| {
            r.started
                .as_ref()
                .map(|s| (r.call_message_id.as_str().to_owned(), s.clone()))
        });
        match self.ghost.started.take() {
            Some(p) if Some(&p.key) == new.as_ref() => self.ghost.started = Some(p),
            prev => {
                if let Some(p) = prev.filter(|p| self.ghost.dead.contains(&p.agent)) {
                    self.check_recovered(&p.key, record);
                }
                self.ghost.started = new.map(|key| Mark {
                    key,
                    agent: serial,
                    run: run_id,
                });
            }
        }
        // 2 and 3 for the calls whose results were just stored.
        for m in &c.append {
            let Some(entries) = m.tool_results() else {
                continue;
            };
            let Some(pos) = self.ghost.mirror.iter().rposition(|x| x.id == m.id) else {
                continue;
            };
            if pos == 0 {
                continue;
            }
            let msg = self.ghost.mirror[pos - 1].id.as_str().to_owned();
            for e in entries {
                self.check_key(&(msg.clone(), e.call_id.clone()), false);
            }
        }
    }

    /// The entry of call `key` in the mirrored thread (the newest message with that id).
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

    /// The write that replaced a crashed run's `started` mark must recover the call: re-gate it
    /// with the SDK's explanation, or (idempotent) clear the mark so it runs again.
    fn check_recovered(&mut self, key: &Key, record: &ThreadRecord) {
        let entry = self.mirror_entry(key);
        let idempotent = entry
            .as_ref()
            .and_then(|e| self.tools.get(&e.name))
            .is_some_and(|s| s.idempotent);
        let run = record.run.as_ref();
        let ok = if idempotent {
            run.is_some_and(|r| {
                r.call_message_id.as_str() == key.0 && r.started.is_none() && !r.has_result(&key.1)
            })
        } else {
            run.is_some_and(|r| r.started.is_none()) && entry.as_ref().is_some_and(regated)
        };
        if !ok {
            self.fail(
                6,
                format!(
                    "call {key:?} was left started by a crashed run, and the next write changed \
                     that without recovering it (entry now {:?}, journal {:?})",
                    entry.as_ref().map(entry_state),
                    run
                ),
            );
        }
    }

    /// A run ended (its lock dropped): 4 for its chat, 9 for its lease.
    pub(crate) fn on_run_end(&mut self, t: usize, run: &Run, res: Result<(), &'static str>) {
        if let Some(ci) = run.chat {
            self.ghost.chats[ci].outcome = Some(res);
            if res.is_ok() && !self.ghost.chats[ci].stored {
                let text = self.ghost.chats[ci].text.clone();
                return self.fail(4, format!("chat {text:?} returned Ok but is not stored"));
            }
        }
        let me = self.agent(t).me.clone();
        let lease = self
            .store
            .load(THREAD, self.wall() as f64)
            .ok()
            .and_then(|s| s.record.lease)
            .filter(|l| l.owner == me);
        // Only a lease this run wrote (one left by an earlier run was reported then).
        if let Some(l) = lease.filter(|_| run.wrote) {
            let effect = match self.cfg.locks {
                Locks::Without | Locks::Devices => {
                    "other tabs are refused `busy` and see it running until it lapses"
                }
                Locks::Web => "other tabs must ask the lock to see it is gone",
            };
            self.fail(
                9,
                format!(
                    "{} ended ({res:?}) and left its lease behind (until {:+.1}s): {effect}",
                    run.label,
                    (l.until - self.wall() as f64) / 1000.0
                ),
            );
        }
    }

    /// A page went away (crash or reload).
    pub(crate) fn on_gone(&mut self, a: &Agent) {
        self.ghost.dead.insert(a.serial);
        for e in &mut self.ghost.execs {
            if e.agent == a.serial && !e.durable {
                e.cut = true;
            }
        }
        if let Some(ci) = a.run.as_ref().and_then(|r| r.chat) {
            self.ghost.chats[ci].crashed = true;
        }
    }

    /// After every step: 6, a `started` mark belongs to a live run or to a dead agent.
    pub(crate) fn check_step(&mut self) {
        let Some(m) = &self.ghost.started else {
            return;
        };
        if self.ghost.dead.contains(&m.agent) {
            return;
        }
        let (agent, run, key) = (m.agent, m.run, m.key.clone());
        let current = self
            .tabs
            .iter()
            .filter_map(|t| t.agent.as_ref())
            .find(|a| a.serial == agent)
            .and_then(|a| a.run.as_ref())
            .map(|r| r.id);
        if current != Some(run) {
            self.fail(
                6,
                format!(
                    "the journal says call {key:?} started (run #{run} of a{agent}), but a{agent} \
                     is alive and that run is over"
                ),
            );
        }
    }

    /// 5: what is sent to the model is a valid conversation.
    pub(crate) fn check_request(&mut self, t: usize, history: &[Message]) {
        let view_tail = self.agent(t).engine.tail().map(|m| m.id.clone());
        let stale = history.last().map(|m| m.id.clone()) != view_tail;
        if stale {
            self.stats.stale_history += 1;
            self.note(Some(t), "sends a history that is not its view's".into());
        }
        if let Some(p) = conversation_problem(history, true) {
            let (view, v) = {
                let a = self.agent(t);
                (a.engine.tail().map(kind), a.version)
            };
            self.fail(
                5,
                format!(
                    "tab{t} sends the model an invalid conversation: {p}.\n  request: [{}]\n  the \
                     view (v{v}) ends with {view:?}",
                    super::driver::kinds(history)
                ),
            );
        }
    }

    /// The stored result of a call: in the message after its `tool_call`, or in the journal
    /// while the `tool_call` is the tail.
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

    /// 2 and 3 for one call that ran.
    fn check_key(&mut self, key: &Key, last: bool) {
        let idx: Vec<usize> = (0..self.ghost.execs.len())
            .filter(|&i| self.ghost.execs[i].key == *key)
            .collect();
        if idx.is_empty() {
            return;
        }
        let entry = self.mirror_entry(key);
        let Some(entry) = entry else {
            return self.fail(3, format!("the executed call {key:?} is not in the thread"));
        };
        let result = self.stored_result(key);
        let approval = entry.approval.as_ref().map(|a| (a.state, a.reason.clone()));
        let kept = idx
            .iter()
            .rev()
            .copied()
            .find(|&i| self.ghost.execs[i].completed && !self.ghost.execs[i].cut);
        if let Some(i) = kept {
            let e = &self.ghost.execs[i];
            if result.as_deref() != Some(e.result.as_str()) {
                let d = format!(
                    "call {key:?} ({}) ran to completion (execution #{i} by tab{}/a{} at step {}) \
                     and its tab did not crash before the result was durable, yet the stored \
                     result is {result:?} (approval {approval:?}); the execution returned {:?}",
                    e.tool, e.tab, e.agent, e.step, e.result
                );
                self.fail(2, d);
            }
            return;
        }
        // Every execution was cut off by a crash, or is still under way.
        if let Some(i) = idx
            .iter()
            .copied()
            .find(|&i| !self.ghost.execs[i].completed && !self.ghost.execs[i].cut)
        {
            if result.is_some() {
                let e = &self.ghost.execs[i];
                let d = format!(
                    "call {key:?} ({}) has a stored result {result:?} while its execution #{i} by \
                     the live tab{}/a{} is still under way",
                    e.tool, e.tab, e.agent
                );
                return self.fail(2, d);
            }
            return;
        }
        if let Some(r) = &result {
            if idx.iter().any(|&i| self.ghost.execs[i].result == *r) {
                return self.fail(
                    3,
                    format!("call {key:?}: a result that never became durable is stored"),
                );
            }
        }
        let idempotent = self.tools.get(&entry.name).is_some_and(|s| s.idempotent);
        let reason = entry.approval.as_ref().and_then(|a| a.reason.as_deref());
        if !idempotent && reason != Some(REGATE_REASON) && (last || result.is_some()) {
            self.fail(
                3,
                format!(
                    "call {key:?} ({}) was cut off by a crash mid-execution, but its entry is not \
                     re-gated with the SDK's explanation (approval {approval:?}, result \
                     {result:?})",
                    entry.name
                ),
            );
        }
    }

    /// The final checks, once every tab is idle and a fresh tab has opened the thread.
    pub(crate) fn audit(&mut self) {
        let rows = match self.store.page(THREAD, None, u32::MAX) {
            Ok(r) => r,
            Err(e) => return self.fail(8, format!("page: {e}")),
        };
        let mut all = Vec::with_capacity(rows.len());
        for r in rows {
            match r.message() {
                Ok(m) => all.push(m),
                Err(e) => return self.fail(8, format!("row {}: {e}", r.seq)),
            }
        }
        if all != self.ghost.mirror {
            return self.fail(
                8,
                "the stored rows differ from what the commits wrote".into(),
            );
        }
        if let Some(p) = conversation_problem(&all, false) {
            return self.fail(8, p);
        }
        for w in all.windows(2) {
            if w[0].id.number() >= w[1].id.number() {
                return self.fail(
                    8,
                    format!(
                        "message ids are not increasing: {} then {}",
                        w[0].id, w[1].id
                    ),
                );
            }
        }
        let record = match self.store.load(THREAD, self.wall() as f64) {
            Ok(s) => s.record,
            Err(e) => return self.fail(8, format!("load: {e}")),
        };
        self.ghost.record = Some(record.clone());
        if let Some(s) = record.run.as_ref().and_then(|r| r.started.clone()) {
            return self.fail(
                6,
                format!("call {s} is still marked started after every tab went idle and a fresh tab opened the thread"),
            );
        }
        // 2 and 3 for every call that ran.
        let keys: BTreeSet<Key> = self.ghost.execs.iter().map(|e| e.key.clone()).collect();
        for k in &keys {
            self.check_key(k, true);
            if self.violation.is_some() {
                return;
            }
        }
        // No stored tool output without the execution that produced it.
        let mut stored: Vec<(Key, String)> = Vec::new();
        for (i, m) in all.iter().enumerate() {
            if let (Some(entries), Some(prev)) = (m.tool_results(), i.checked_sub(1)) {
                for e in entries {
                    if let Some(r) = &e.result {
                        stored.push((
                            (all[prev].id.as_str().to_owned(), e.call_id.clone()),
                            r.clone(),
                        ));
                    }
                }
            }
        }
        if let Some(run) = &record.run {
            for r in &run.results {
                stored.push((
                    (run.call_message_id.as_str().to_owned(), r.call_id.clone()),
                    r.result.clone(),
                ));
            }
        }
        for (key, r) in stored {
            let ours = r.contains("\"exec\":") || r.contains("tool failure #");
            if ours
                && !self
                    .ghost
                    .execs
                    .iter()
                    .any(|e| e.key == key && e.result == r)
            {
                return self.fail(
                    3,
                    format!(
                        "call {key:?} holds the result {r:?}, which none of its executions returned"
                    ),
                );
            }
        }
        // 4: every chat's message is stored once exactly when its write succeeded.
        for ch in &self.ghost.chats {
            let n = all
                .iter()
                .filter(|m| m.role == Role::User && matches!(m.kind, MessageKind::Plain))
                .filter(|m| m.text() == ch.text)
                .count();
            let want = usize::from(ch.stored);
            if n != want {
                let d = format!(
                    "{:?} (tab{}) is stored {n} times, expected {want} (outcome {:?}, tab crashed: {})",
                    ch.text, ch.tab, ch.outcome, ch.crashed
                );
                return self.fail(4, d);
            }
        }
    }
}
