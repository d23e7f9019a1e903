//! The final checks, once every device came back, every run ended and a device with every
//! tool opened the thread.

use super::super::oracle::conversation_problem;
use super::super::world::THREAD;
use super::oracle::{ChatEnd, Key};
use super::world::DevSim;
use gatehouse_agent::engine::AuditRecord;
use gatehouse_agent::engine::results::REGATE_REASON;
use gatehouse_agent::store::Queued;
use gatehouse_agent::thread::{MessageKind, Role};
use std::collections::BTreeSet;

impl DevSim {
    pub(crate) fn audit(&mut self) {
        let store = &self.server.store;
        let rows = match store.page(THREAD, None, u32::MAX) {
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
        // Unique, not always increasing: a message sent from an outbox keeps the id it was
        // queued with (its identity: a copy that landed is recognised), so it may be stored
        // after messages with later ids.
        let mut ids = BTreeSet::new();
        if let Some(m) = all.iter().find(|m| !ids.insert(m.id.clone())) {
            return self.fail(8, format!("the message id {} is stored twice", m.id));
        }
        let record = store.record(THREAD, 0.0);
        self.ghost.record = Some(record.clone());
        if let Some(s) = record.run.as_ref().and_then(|r| r.started.clone()) {
            return self.fail(6, format!("call {s} is still marked started after every device came back and a fresh one opened the thread"));
        }
        self.audit_results();
        if self.violation.is_none() {
            self.audit_chats(&all);
        }
        if self.violation.is_none() {
            self.audit_elsewhere();
        }
        if self.violation.is_none() {
            self.audit_deciders();
        }
    }

    /// 12: every `decidedBy` in the audit trail is the identity of a person who decided that
    /// call at `/decide` (never a name a writer put in a commit).
    fn audit_deciders(&mut self) {
        let rows = match self.server.store.audit_page(THREAD, None, u32::MAX) {
            Ok(r) => r,
            Err(e) => return self.fail(8, format!("audit page: {e}")),
        };
        for r in rows {
            let a: AuditRecord = match serde_json::from_str(&r.json) {
                Ok(a) => a,
                Err(e) => return self.fail(8, format!("audit row {}: {e}", r.seq)),
            };
            let Some(by) = &a.decided_by else { continue };
            let known = self.ghost.deciders.get(&a.call_id);
            if !known.is_some_and(|k| k.contains(by)) {
                return self.fail(
                    12,
                    format!(
                        "audit record {} says {} decided {}, but the deciders were {known:?}",
                        a.seq, by, a.call_id
                    ),
                );
            }
        }
    }

    /// 2 and 3: a completed execution that was not cut off has its result stored, or still
    /// waiting in its device's outbox, or its call was re-gated (the result then comes late,
    /// and is dropped if a human decided meanwhile: docs/design.md, "Late results"); no stored
    /// result lacks the execution that produced it.
    fn audit_results(&mut self) {
        let keys: BTreeSet<Key> = self.ghost.execs.iter().map(|e| e.key.clone()).collect();
        for key in keys {
            let stored = self.stored_result(&key);
            let kept: Vec<usize> = (0..self.ghost.execs.len())
                .filter(|&i| {
                    let e = &self.ghost.execs[i];
                    e.key == key && e.completed && !e.cut
                })
                .collect();
            if let Some(r) = &stored {
                let ours = r.contains("\"exec\":") || r.contains("tool failure #");
                if ours
                    && !self
                        .ghost
                        .execs
                        .iter()
                        .any(|e| e.key == key && e.result == *r)
                {
                    return self.fail(
                        3,
                        format!("call {key:?} holds {r:?}, which none of its executions returned"),
                    );
                }
            }
            let Some(&i) = kept.last() else { continue };
            if kept
                .iter()
                .any(|&i| stored.as_deref() == Some(self.ghost.execs[i].result.as_str()))
            {
                continue;
            }
            let e = &self.ghost.execs[i];
            let queued = self.devices[e.device].outbox.iter().any(|q| {
                matches!(q, Queued::Result { call_id, result } if *call_id == key.1 && *result == e.result)
            });
            let entry = self
                .ghost
                .mirror
                .iter()
                .rev()
                .find(|m| m.id.as_str() == key.0)
                .and_then(|m| m.tool_calls())
                .and_then(|c| c.iter().find(|x| x.call_id == key.1));
            let regated = entry
                .and_then(|x| x.approval.as_ref())
                .and_then(|a| a.reason.as_deref())
                == Some(REGATE_REASON);
            // An idempotent call that lost its owner is cleared to run again, not re-gated
            // (docs/design.md, "Run ownership"): its late result may be dropped, and the call
            // waits for `retry()` to run it again.
            let all = super::super::actors::tools();
            let rerun = all.get(&e.tool).is_some_and(|t| t.idempotent) && stored.is_none();
            if queued || regated || rerun {
                continue;
            }
            let d = format!(
                "call {key:?} ({}) ran to completion on device{}/a{} (execution #{i}, step {}, \
                 overtaken {}), was not cut off by a crash, yet the stored result is {stored:?}, \
                 nothing waits in the outbox and the call was not re-gated; it returned {:?}",
                e.tool, e.device, e.agent, e.step, e.overtaken, e.result
            );
            return self.fail(2, d);
        }
    }

    /// 4: a message acknowledged is stored once; one refused before any write never; one
    /// queued is stored once or still waits (never lost, never twice); any other at most once.
    fn audit_chats(&mut self, all: &[gatehouse_agent::thread::Message]) {
        for c in &self.ghost.chats {
            let n = all
                .iter()
                .filter(|m| m.role == Role::User && matches!(m.kind, MessageKind::Plain))
                .filter(|m| m.id.as_str() == c.id)
                .count();
            let waiting = self.devices[c.device]
                .outbox
                .iter()
                .filter(|q| matches!(q, Queued::Message { id, .. } if *id == c.id))
                .count();
            let ok = match (c.queued, c.end) {
                (true, _) => n <= 1 && n + waiting >= 1,
                (false, Some(ChatEnd::Ok)) => n == 1,
                (false, Some(ChatEnd::Refused(_))) => n == 0 || c.late,
                (false, _) => n <= 1,
            };
            if waiting > 0 {
                self.stats.still_queued += 1;
            }
            if !ok {
                let d = format!(
                    "{:?} (device{}) is stored {n} times and waits {waiting} times in the outbox \
                     (queued {}, run ended {:?})",
                    c.text, c.device, c.queued, c.end
                );
                return self.fail(4, d);
            }
        }
    }

    /// 10: a call approved on a device without its tool ran on one that has it (at most
    /// once is 1's). Calls that wait for a human, or behind a tool no device has, are left
    /// out.
    fn audit_elsewhere(&mut self) {
        let tools = super::super::actors::tools();
        for (key, d) in self.ghost.elsewhere.clone() {
            if self.ghost.execs.iter().any(|e| e.key == key) {
                continue;
            }
            let msg = self
                .ghost
                .mirror
                .iter()
                .rev()
                .find(|m| m.id.as_str() == key.0);
            let entries = msg.and_then(|m| m.tool_calls()).unwrap_or(&[]);
            let blocked = entries.iter().any(|e| tools.get(&e.name).is_none());
            // Re-gated (the device that took it over lost contact before it ran): it waits
            // for a human again.
            // It, or a call beside it, waits for a human (re-gated, or never decided): calls
            // of one message run once all are decided.
            if entries.iter().any(|e| e.is_pending()) {
                continue;
            }
            let stored = self.stored_result(&key);
            // Answered without running: rejected after a re-gate; never "no longer available"
            // (what a device without the tool would say on a thread of its own).
            let gone = stored
                .as_deref()
                .is_some_and(|r| r.contains("no longer available"));
            if blocked || (stored.is_some() && !gone) {
                continue;
            }
            let d = format!(
                "call {key:?} was approved on device{d}, which lacks its tool, and never ran on a \
                 device that has it (thread status {:?})",
                self.ghost.record.as_ref().map(|r| r.status())
            );
            return self.fail(10, d);
        }
    }
}
