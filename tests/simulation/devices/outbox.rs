//! The outbox (`src/driver/outbox.rs`), the change stream and notices
//! (`src/driver/changes.rs`, `live::notice`), and the delivery of packets: to the handler,
//! which applies them (`server.rs`), and back to the tabs.

use super::super::world::Broken;
use super::driver::{Cont, Origin, RunInput};
use super::network::{Packet, Payload, Req, Resp};
use super::server::{Applied, Identity};
use super::world::DevSim;
use gatehouse_agent::store::{Queued, StoreError};
use gatehouse_agent::thread::MessageId;

/// `RECENT`: how many of the newest messages are looked through for a queued message's id.
const RECENT: u32 = 50;
/// `CONFLICT_TRIES` and `RETRY_MS`.
const CONFLICT_TRIES: u32 = 3;
const RETRY_MS: u64 = 3_000;
const MAX_STREAM_WAIT_MS: u64 = 10_000;

/// A flush under way on a tab (`outbox::send`'s loop).
pub(crate) struct Flush {
    pub conflicts: u32,
}

impl DevSim {
    /// `run_or_queue`: behind a non-empty outbox the input is queued (the driver first
    /// flushes, then queues if something still waits: the same order); else it runs, and is
    /// queued if its first write cannot reach the handler (`finish_run`).
    pub(crate) fn run_or_queue(
        &mut self,
        d: usize,
        t: usize,
        input: RunInput,
        queued: Queued,
        chat: Option<usize>,
    ) {
        if !self.devices[d].outbox.is_empty() {
            return self.enqueue(d, t, queued, chat);
        }
        self.start_run_queued(d, t, input, Origin::Human, Some(queued), chat);
    }

    pub(crate) fn enqueue(&mut self, d: usize, t: usize, q: Queued, chat: Option<usize>) {
        self.stats.queued += 1;
        self.note(Some((d, t)), format!("QUEUED in the outbox: {q:?}"));
        if let Some(c) = chat {
            self.ghost.chats[c].queued = true;
        }
        self.devices[d].outbox.push(q);
        self.idle(d, t);
    }

    /// `outbox::landed`: the view shows the input applied.
    pub(crate) fn landed(&mut self, d: usize, t: usize, q: &Queued) -> bool {
        let engine = &self.agent(d, t).engine;
        match q {
            Queued::Message { id, .. } => engine.tail().is_some_and(|m| m.id.as_str() == id),
            Queued::Decisions { decisions, .. } => {
                let pending: Vec<String> = engine
                    .tail()
                    .and_then(|m| m.tool_calls())
                    .map(|c| {
                        c.iter()
                            .filter(|e| e.is_pending())
                            .map(|e| e.call_id.clone())
                            .collect()
                    })
                    .unwrap_or_default();
                let ids = decisions.as_object().into_iter().flat_map(|m| m.keys());
                !ids.into_iter().all(|id| pending.contains(id))
            }
            Queued::Result { .. } => false,
        }
    }

    /// `outbox::results`: results a run could not write wait in the outbox.
    pub(crate) fn results_queued(&mut self, d: usize, t: usize, results: Vec<(String, String)>) {
        for (call_id, result) in results {
            self.note(Some((d, t)), format!("result of {call_id} QUEUED"));
            self.stats.queued += 1;
            self.devices[d]
                .outbox
                .push(Queued::Result { call_id, result });
        }
        self.later(d, t);
    }

    fn tab_idle(&self, d: usize, t: usize) -> bool {
        self.devices[d].tabs[t].agent.as_ref().is_some_and(|a| {
            a.run.is_none()
                && a.flush.is_none()
                && matches!(
                    a.act,
                    super::driver::Act::Human | super::driver::Act::Parked
                )
        })
    }

    /// `outbox::flush` when something waits; false when nothing was started.
    pub(crate) fn flush_start(&mut self, d: usize, t: usize) -> bool {
        if self.devices[d].outbox.is_empty() || !self.tab_idle(d, t) {
            return false;
        }
        self.agent(d, t).flush = Some(Flush { conflicts: 0 });
        self.flush_next(d, t);
        true
    }

    fn flush_next(&mut self, d: usize, t: usize) {
        let Some(first) = self.devices[d].outbox.first().cloned() else {
            self.agent(d, t).flush = None;
            return self.idle(d, t);
        };
        match first {
            Queued::Message { id, text } => {
                let req = Req::Rows {
                    before: None,
                    limit: RECENT,
                };
                self.request(d, t, req, Cont::FlushCheck(id, text));
            }
            // `outbox::send`: made before their calls were gated again: refused for good.
            Queued::Decisions { .. } if !first.answers(self.agent(d, t).engine.tail()) => {
                self.note(
                    Some((d, t)),
                    "outbox: decisions from before a re-gate".into(),
                );
                self.flush_after(d, t, first, Err("not_suspended"))
            }
            Queued::Decisions { ref decisions, .. } => {
                let input = RunInput::Decide(decisions.clone());
                self.start_run(d, t, input, Origin::Flush(first));
            }
            Queued::Result { .. } => {
                // The call is re-gated first, as opening the thread would.
                self.start_run(d, t, RunInput::Recover, Origin::FlushRecover(first));
            }
        }
    }

    /// `outbox::stored`, then the message's run under the id it was queued with.
    pub(crate) fn flush_check(
        &mut self,
        d: usize,
        t: usize,
        id: String,
        text: String,
        answer: Result<Resp, StoreError>,
    ) {
        let rows = match answer {
            Ok(Resp::Rows(rows)) => rows,
            _ => return self.flush_stop(d, t),
        };
        let q = Queued::Message {
            id: id.clone(),
            text: text.clone(),
        };
        if rows
            .iter()
            .any(|r| r.message().is_ok_and(|m| m.id.as_str() == id))
        {
            self.note(Some((d, t)), format!("outbox: {id} is stored already"));
            return self.flush_sent(d, t, &q);
        }
        let input = RunInput::Chat(text, MessageId::from_raw(id));
        self.start_run(d, t, input, Origin::Flush(q));
    }

    pub(crate) fn flush_recovered(&mut self, d: usize, t: usize, q: Queued) {
        let Queued::Result { call_id, result } = &q else {
            return self.flush_stop(d, t);
        };
        let input = RunInput::LateResult(call_id.clone(), result.clone());
        self.start_run(d, t, input, Origin::Flush(q));
    }

    /// How `outbox::send` goes on after an item's run.
    pub(crate) fn flush_after(&mut self, d: usize, t: usize, q: Queued, res: Result<(), &str>) {
        if self.agent(d, t).flush.is_none() {
            return self.idle(d, t);
        }
        let refusal = matches!(
            res,
            Err("not_suspended" | "unknown_call_id" | "invalid_decision" | "expired")
        ) && !matches!(q, Queued::Message { .. });
        match res {
            Err("conflict") => {
                let f = self.agent(d, t).flush.as_mut().expect("flush");
                f.conflicts += 1;
                if f.conflicts >= CONFLICT_TRIES {
                    return self.flush_stop(d, t);
                }
                self.flush_next(d, t)
            }
            Err(_) if refusal => self.flush_sent(d, t, &q),
            Err(_) => self.flush_stop(d, t),
            Ok(()) => self.flush_sent(d, t, &q),
        }
    }

    fn flush_sent(&mut self, d: usize, t: usize, q: &Queued) {
        let outbox = &mut self.devices[d].outbox;
        if let Some(i) = outbox.iter().position(|x| x == q) {
            outbox.remove(i);
            self.stats.outbox_sent += 1;
        }
        self.flush_next(d, t)
    }

    fn flush_stop(&mut self, d: usize, t: usize) {
        self.agent(d, t).flush = None;
        self.later(d, t);
        self.idle(d, t);
    }

    /// `outbox::later`.
    pub(crate) fn later(&mut self, d: usize, t: usize) {
        let at = self.real + RETRY_MS;
        let empty = self.devices[d].outbox.is_empty();
        let a = self.agent(d, t);
        if !empty && a.flush_at.is_none() {
            a.flush_at = Some(at);
        }
    }

    pub(crate) fn flush_timer(&mut self, d: usize, t: usize) {
        self.agent(d, t).flush_at = None;
        let running = self.agent(d, t).run.is_some() || self.agent(d, t).flush.is_some();
        if running || !self.flush_start(d, t) {
            self.later(d, t);
        }
    }

    // ----- notices and the change stream ----------------------------------------------

    /// `live::notice`: a view that is not running and not at `version` reloads.
    pub(crate) fn notice(&mut self, d: usize, t: usize, version: u64) {
        if self.devices[d].hostile {
            return;
        }
        let stale = self.devices[d].tabs[t]
            .agent
            .as_ref()
            .is_some_and(|a| a.version != version);
        if stale && self.tab_idle(d, t) {
            self.request(d, t, Req::Load, Cont::Reload);
        }
    }

    /// `session::reload`: take the thread, `outbox::count` (a flush if something waits),
    /// `changes::go_on`.
    pub(crate) fn reloaded(&mut self, d: usize, t: usize, answer: Result<Resp, StoreError>) {
        let snap = match answer {
            Ok(Resp::Loaded(s)) => {
                self.keep_copy(d, &s);
                Some(*s)
            }
            Err(StoreError::Unavailable(_)) => self.devices[d].copy.clone(),
            _ => None,
        };
        if let Some(snap) = snap {
            self.take(d, t, &snap);
        }
        if !self.go_on(d, t) && !self.flush_start(d, t) {
            self.idle(d, t);
        }
    }

    /// The change stream (re)opens: the thread is looked at once (notices were missed), and
    /// the outbox is sent (`changes::send_queued`). While the handler is down, the wait
    /// doubles up to 10 s.
    pub(crate) fn stream_open(&mut self, d: usize) {
        self.devices[d].stream_at = None;
        if !self.devices[d].online || !self.devices[d].up {
            return;
        }
        if self.real < self.server.down_until {
            let dev = &mut self.devices[d];
            dev.stream_at = Some(self.real + dev.stream_wait);
            dev.stream_wait = (dev.stream_wait * 2).min(MAX_STREAM_WAIT_MS);
            return;
        }
        self.devices[d].stream = true;
        self.devices[d].stream_wait = 500;
        if self.devices[d].hostile {
            return;
        }
        for t in 0..self.devices[d].tabs.len() {
            if self.tab_idle(d, t) {
                self.request(d, t, Req::Load, Cont::Reload);
            }
        }
    }

    // ----- delivery -------------------------------------------------------------------

    pub(crate) fn deliver(&mut self, p: Packet) {
        let (d, t) = (p.device, p.tab);
        match p.payload {
            Payload::Request(req) => {
                if self.real < self.server.down_until {
                    self.stats.net_lost_to_restarts += 1;
                    return;
                }
                let label = req.label();
                let commit_id = match &req {
                    Req::Commit(c, _) => Some(c.commit_id.clone()),
                    Req::Decide(r) => Some(r.commit_id.clone()),
                    _ => None,
                };
                let hostile = self.devices[d].hostile;
                if !hostile {
                    self.loot.saw_request(&req);
                }
                let (resp, applied) = {
                    let dev = &self.devices[d];
                    let who = Identity {
                        name: &dev.name,
                        may_write: dev.may_write,
                        may_decide: dev.may_decide,
                    };
                    let now = self.server_wall() as f64;
                    let local = self.cfg.broken == Broken::LeaseJudgedLocally;
                    self.server.handle(req, &who, now, local)
                };
                let notify = match &applied {
                    Applied::Commit { record, .. } => Some(record.version),
                    Applied::Lease(gatehouse_agent::store::wire::LeaseOp::Release, _) => Some(
                        self.server
                            .store
                            .record(super::super::world::THREAD, 0.0)
                            .version,
                    ),
                    _ => None,
                };
                match (&applied, hostile) {
                    (Applied::Illegal(why), true) => {
                        self.stats.hostile_illegal += 1;
                        self.note(Some((d, t)), format!("handler: illegal_write: {why}"));
                    }
                    (Applied::Commit { .. }, true) => self.stats.hostile_applied += 1,
                    (Applied::Illegal(why), false) => {
                        return self.fail(
                            13,
                            format!("the handler refused an honest write ({label}): {why}"),
                        );
                    }
                    (_, false) => self.loot.saw_answer(&resp),
                    _ => {}
                }
                if matches!(applied, Applied::Commit { .. } | Applied::Deduped) {
                    self.note(
                        Some((d, t)),
                        format!("handler: {label}: {resp:?}")
                            .chars()
                            .take(200)
                            .collect(),
                    );
                }
                if let (
                    Some(id),
                    Resp::Refused(StoreError::Conflict { .. } | StoreError::Owned { .. }),
                ) = (commit_id, &resp)
                {
                    self.ghost.refused.insert(id);
                }
                self.on_applied(d, t, p.run, applied);
                if p.id != 0 {
                    let answer = Packet {
                        at: 0,
                        device: d,
                        tab: t,
                        id: p.id,
                        run: p.run,
                        payload: Payload::Answer(resp),
                    };
                    self.send(answer);
                }
                if let Some(v) = notify {
                    self.announce(v);
                }
            }
            Payload::Answer(resp) => {
                if !self.devices[d].online || !self.devices[d].up {
                    return;
                }
                let waits = self.devices[d].tabs[t].agent.as_ref().is_some_and(|a| {
                    a.waiting == p.id && matches!(a.act, super::driver::Act::Await(_))
                });
                if !waits {
                    return;
                }
                let a = self.agent(d, t);
                a.waiting = 0;
                let act = std::mem::replace(&mut a.act, super::driver::Act::Parked);
                if let super::driver::Act::Await(cont) = act {
                    self.on_answer(d, t, cont, Ok(resp));
                }
            }
            Payload::Notice(v) => {
                let dev = &self.devices[d];
                if dev.online && dev.up && dev.stream && dev.tabs[t].agent.is_some() {
                    self.notice(d, t, v);
                }
            }
        }
    }

    /// The change feed: a notice to every agent whose device's stream is open.
    fn announce(&mut self, version: u64) {
        for d in 0..self.devices.len() {
            if !self.devices[d].stream {
                continue;
            }
            for t in 0..self.devices[d].tabs.len() {
                if self.devices[d].tabs[t].agent.is_some() {
                    let p = Packet {
                        at: 0,
                        device: d,
                        tab: t,
                        id: 0,
                        run: 0,
                        payload: Payload::Notice(version),
                    };
                    self.send(p);
                }
            }
        }
    }
}
