//! The steps between writes (the model with its history, policies, tools) and the end of a
//! run (`admission::finish`: release, reload, the lock, the outbox), as `src/driver/step.rs`
//! and `src/driver/admission.rs` do them.

use super::super::actors;
use super::driver::{Act, Cont, Origin, Res};
use super::network::{Packet, Payload, Req, Resp};
use super::world::DevSim;
use gatehouse_agent::engine::{ModelOutput, PolicyQuery, ToolInvocation};
use gatehouse_agent::store::wire::{LeaseOp, LeaseRequest};
use gatehouse_agent::store::{RENEW_MS, StoreError};
use gatehouse_agent::thread::Message;
use serde_json::Value;

impl DevSim {
    pub(crate) fn history(&mut self, d: usize, t: usize, answer: Result<Resp, StoreError>) {
        let rows = match answer {
            Ok(Resp::Rows(rows)) => rows,
            _ => {
                self.agent(d, t).engine.model_failed();
                return self.end_drive(d, t, Err("unavailable"));
            }
        };
        let mut h: Vec<Message> = Vec::with_capacity(rows.len() + 1);
        for r in rows {
            match r.message() {
                Ok(m) => h.push(m),
                Err(e) => return self.fail(8, format!("row {}: {e}", r.seq)),
            }
        }
        h.extend(self.agent(d, t).engine.tail().cloned());
        self.agent(d, t).history = Some(h);
        self.call_model(d, t);
    }

    pub(crate) fn call_model(&mut self, d: usize, t: usize) {
        let history = self.agent(d, t).history.clone().unwrap_or_default();
        self.check_request(d, t, &history);
        self.stats.model_calls += 1;
        let out = match self.devices[d].online {
            // The model's API is across the same network.
            false => None,
            true => {
                let DevSim {
                    rng,
                    next_call,
                    recent_ids,
                    ..
                } = self;
                actors::model(rng, next_call, recent_ids)
            }
        };
        let ms = self.model_latency();
        self.then(d, t, Act::ModelAnswer(out), ms);
    }

    pub(crate) fn model_answer(&mut self, d: usize, t: usize, out: Option<ModelOutput>) {
        let wall = self.wall(d);
        match out {
            Some(out) => {
                let ids: Vec<String> = out
                    .tool_calls
                    .iter()
                    .map(|c| format!("{}:{:?}", c.name, c.id))
                    .collect();
                self.note(Some((d, t)), format!("model answers [{}]", ids.join(", ")));
                if let Err(e) = self.agent(d, t).engine.model_output(out, wall) {
                    return self.fail(0, format!("the engine refused the model output: {e}"));
                }
                self.drive_on(d, t);
            }
            None => {
                self.stats.model_failures += 1;
                self.note(Some((d, t)), "model call FAILS".into());
                self.agent(d, t).engine.model_failed();
                self.end_drive(d, t, Err("model"));
            }
        }
    }

    pub(crate) fn policies(&mut self, d: usize, t: usize, queries: Vec<PolicyQuery>) {
        let verdicts: Vec<_> = queries
            .into_iter()
            .map(|q| (q.call_id, actors::verdict(&mut self.rng)))
            .collect();
        let wall = self.wall(d);
        if let Err(e) = self.agent(d, t).engine.policy_verdicts(verdicts, wall) {
            return self.fail(0, format!("the engine refused the verdicts: {e}"));
        }
        self.drive_on(d, t);
    }

    pub(crate) fn tool_start(&mut self, d: usize, t: usize, inv: ToolInvocation) {
        let Some(msg) = self
            .agent(d, t)
            .engine
            .state()
            .run
            .as_ref()
            .map(|r| r.call_message_id.as_str().to_owned())
        else {
            return self.fail(0, "RunTool without a run journal".into());
        };
        let (exec, outcome) = self.exec_start(d, t, &inv, msg);
        self.note(
            Some((d, t)),
            format!(
                "tool {} ({}) STARTS as execution #{exec}",
                inv.call_id, inv.tool
            ),
        );
        let ms = self.tool_latency();
        self.then(d, t, Act::ToolSettle(inv, exec, outcome), ms);
    }

    pub(crate) fn tool_settle(
        &mut self,
        d: usize,
        t: usize,
        inv: ToolInvocation,
        exec: usize,
        outcome: Result<Value, String>,
    ) {
        self.ghost.execs[exec].completed = true;
        self.note(
            Some((d, t)),
            format!("tool {} settles (#{exec})", inv.call_id),
        );
        let wall = self.wall(d);
        if let Err(e) = self
            .agent(d, t)
            .engine
            .tool_outcome(&inv.call_id, outcome, wall)
        {
            return self.fail(0, format!("the engine refused the tool outcome: {e}"));
        }
        self.drive_on(d, t);
    }

    /// `admission::finish`: renewals stop; a failed run, or one whose last write kept its
    /// lease, clears it; a failed run whose engine still runs reloads.
    pub(crate) fn end_drive(&mut self, d: usize, t: usize, res: Res) {
        let a = self.agent(d, t);
        a.renew_at = None;
        let leased = std::mem::take(&mut a.leased);
        let run = a.run.as_mut().expect("run");
        run.driving = false;
        if res.is_err() || leased {
            let (me, version) = {
                let a = self.agent(d, t);
                (a.me.clone(), a.version)
            };
            let req = Req::Lease(
                LeaseRequest {
                    owner: me,
                    op: LeaseOp::Release,
                    version: Some(version),
                    lease_token: self.agent(d, t).token.clone(),
                },
                self.wall(d) as f64,
            );
            self.stats.releases += 1;
            return self.request(d, t, req, Cont::Release(res));
        }
        self.end_undriven(d, t, res);
    }

    /// The lock is let go; results that could not be written wait in the outbox.
    pub(crate) fn end_undriven(&mut self, d: usize, t: usize, res: Res) {
        let serial = self.agent(d, t).serial;
        if self.devices[d].lock == Some(serial) {
            self.devices[d].lock = None;
        }
        let refused = std::mem::take(&mut self.agent(d, t).refused);
        if !refused.is_empty() {
            self.results_queued(d, t, refused);
        }
        self.finish_run(d, t, res);
    }

    pub(crate) fn finish_run(&mut self, d: usize, t: usize, res: Res) {
        let run = self.agent(d, t).run.take().expect("run");
        if res.is_ok() {
            self.stats.runs_ok += 1;
        }
        self.note(Some((d, t)), format!("{} ends: {res:?}", run.label));
        self.on_run_end(d, t, &run, res);
        if self.violation.is_some() {
            return;
        }
        if let (Some(q), Err("unavailable")) = (&run.queued, res) {
            if !self.landed(d, t, q) {
                return self.enqueue(d, t, q.clone(), run.chat);
            }
        }
        match run.origin {
            Origin::Flush(q) => self.flush_after(d, t, q, res),
            Origin::FlushRecover(q) => self.flush_recovered(d, t, q),
            Origin::Open if res == Err("conflict") && self.agent(d, t).open_runs < 3 => {
                self.then(d, t, Act::OpenLoad, 1)
            }
            Origin::Open => self.opened(d, t),
            Origin::Human | Origin::GoOn => self.idle(d, t),
        }
    }

    /// The renewal timer: `store.renew` spawned every `RENEW_MS`; nobody waits for it.
    pub(crate) fn renew(&mut self, d: usize, t: usize) {
        let at = self.real + RENEW_MS as u64;
        let (me, run) = {
            let a = self.agent(d, t);
            a.renew_at = Some(at);
            (a.me.clone(), a.run.as_ref().map_or(0, |r| r.id))
        };
        self.stats.renewals += 1;
        if !self.devices[d].online {
            return;
        }
        let req = Req::Lease(
            LeaseRequest {
                owner: me,
                op: LeaseOp::Renew,
                version: None,
                lease_token: self.agent(d, t).token.clone(),
            },
            self.wall(d) as f64,
        );
        self.stats.net_requests += 1;
        let p = Packet {
            at: 0,
            device: d,
            tab: t,
            id: 0,
            run,
            payload: Payload::Request(req),
        };
        self.send(p);
    }
}
