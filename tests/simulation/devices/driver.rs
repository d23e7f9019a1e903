//! A tab's run on a remote thread, one scheduling point per request, model call, policy call
//! and tool start/finish, mirroring `src/driver/{admission,step,session}.rs` over
//! `src/store/remote.rs` with the same pure functions (`admit`, `must_recover`,
//! `run_ends_after_write`). Every store operation is a request through the network; its answer
//! may never come (the request's timeout: `Unavailable`).

use super::super::actors::{self, Choice, Input};
use super::network::{Packet, Payload, Req, Resp};
use super::world::DevSim;
use gatehouse_agent::engine::{
    Commit, EngineError, ModelOutput, PolicyQuery, Step, ThreadStatus, ToolInvocation, ToolPolicy,
};
use gatehouse_agent::store::wire::CommitRequest;
use gatehouse_agent::store::{
    Admission, LockAttempt, LockProbe, Queued, RENEW_MS, Snapshot, StoreError, admit, must_recover,
};
use gatehouse_agent::thread::MessageId;
use serde_json::Value;

/// How long a request waits for its answer before the fetch is taken as failed.
const REQUEST_TIMEOUT_MS: u64 = 4_000;

pub(crate) type Res = Result<(), &'static str>;

/// The next thing a tab does.
pub(crate) enum Act {
    Parked,
    Human,
    OpenLoad,
    /// Waits for the answer to its request (`Agent::waiting`); at `ready_at` it times out.
    Await(Cont),
    /// `RemoteStore::commit`'s pause before sending the same commit again.
    CommitRetry(Box<Sending>),
    /// `RemoteStore::decide`'s pause before sending the same decisions again.
    DecideRetry(Box<super::decide::Deciding>),
    Lock,
    CallModel,
    ModelAnswer(Option<ModelOutput>),
    Policies(Vec<PolicyQuery>),
    ToolStart(ToolInvocation),
    ToolSettle(ToolInvocation, usize, Result<Value, String>),
}

/// What the answer to a request goes on with.
pub(crate) enum Cont {
    OpenLoad,
    /// `Ownership::admit_by_read`: before a step that is not a write, or (`None`) after the
    /// view refused the input.
    AdmitRead(Option<Box<Option<Step>>>),
    Commit(Box<Sending>),
    FailReload(Box<Commit>, StoreError),
    Release(Res),
    FinishReload(Res),
    History,
    Reload,
    FlushCheck(String, String),
    /// `RemoteStore::decide`'s answer.
    Decide(Box<super::decide::Deciding>),
    /// The hostile device's request.
    Hostile,
}

pub(crate) struct Sending {
    pub commit: Commit,
    pub keep: bool,
    pub request: CommitRequest,
    pub tries: usize,
}

pub(crate) enum RunInput {
    Chat(String, MessageId),
    Decide(Value),
    Retry,
    Recover,
    Policy(String, ToolPolicy),
    LateResult(String, String),
}

#[derive(Clone, PartialEq)]
pub(crate) enum Origin {
    Human,
    Open,
    /// `changes::go_on`: a run handed on by a device that could not go on.
    GoOn,
    /// An outbox item (`outbox::send`); `FlushRecover`: the re-gate before a late result.
    Flush(Queued),
    FlushRecover(Queued),
}

#[derive(Clone, Copy, PartialEq)]
pub(crate) enum Admit {
    Pending,
    Done,
    Refused,
}

pub(crate) struct Run {
    pub id: u64,
    pub input: Option<RunInput>,
    pub label: String,
    pub admission: Admit,
    pub driving: bool,
    pub chat: Option<usize>,
    pub origin: Origin,
    /// `run_or_queue`: what is queued if the run cannot reach the handler.
    pub queued: Option<Queued>,
    pub input_error: Option<&'static str>,
}

pub(crate) fn code_of(e: &StoreError) -> &'static str {
    match e {
        StoreError::Unavailable(_) => "unavailable",
        e => e.code(),
    }
}

fn unavailable() -> StoreError {
    StoreError::Unavailable("no answer".into())
}

impl DevSim {
    pub(crate) fn act(&mut self, d: usize, t: usize) {
        let act = std::mem::replace(&mut self.agent(d, t).act, Act::Parked);
        match act {
            Act::Parked => {}
            Act::Human => self.human(d, t),
            Act::OpenLoad => self.request(d, t, Req::Load, Cont::OpenLoad),
            Act::Await(cont) => {
                self.agent(d, t).waiting = 0;
                self.on_answer(d, t, cont, Err(unavailable()));
            }
            Act::CommitRetry(s) => self.send_commit(d, t, *s),
            Act::DecideRetry(s) => self.send_decide(d, t, *s),
            Act::Lock => self.lock(d, t),
            Act::CallModel => self.call_model(d, t),
            Act::ModelAnswer(out) => self.model_answer(d, t, out),
            Act::Policies(q) => self.policies(d, t, q),
            Act::ToolStart(inv) => self.tool_start(d, t, inv),
            Act::ToolSettle(inv, exec, outcome) => self.tool_settle(d, t, inv, exec, outcome),
        }
    }

    /// Sends a request and waits for its answer. Offline, the fetch fails at once.
    pub(crate) fn request(&mut self, d: usize, t: usize, req: Req, cont: Cont) {
        self.next_req += 1;
        let id = self.next_req;
        self.stats.net_requests += 1;
        let run = self.agent(d, t).run.as_ref().map_or(0, |r| r.id);
        let timeout = match self.devices[d].online {
            true => {
                let p = Packet {
                    at: 0,
                    device: d,
                    tab: t,
                    id,
                    run,
                    payload: Payload::Request(req),
                };
                self.send(p);
                REQUEST_TIMEOUT_MS
            }
            false => 1,
        };
        self.agent(d, t).waiting = id;
        self.then(d, t, Act::Await(cont), timeout);
    }

    /// The answer to the request a tab waits for (or its failure).
    pub(crate) fn on_answer(
        &mut self,
        d: usize,
        t: usize,
        cont: Cont,
        answer: Result<Resp, StoreError>,
    ) {
        let answer = match answer {
            Ok(Resp::Refused(e)) => Err(e),
            other => other,
        };
        match cont {
            Cont::OpenLoad => match self.loaded(d, answer) {
                Some(snap) => self.open_observe(d, t, snap),
                None => {
                    // `Agent.open` fails: the page shows the error; the user reloads later.
                    self.note(Some((d, t)), "open FAILS: the thread cannot be read".into());
                    self.close(d, t);
                    self.devices[d].tabs[t].reopen_at = Some(self.real + 10_000);
                }
            },
            Cont::AdmitRead(step) => self.admit_read(d, t, answer, step),
            Cont::Commit(s) => self.commit_answer(d, t, *s, answer),
            Cont::FailReload(c, e) => self.fail_reload(d, t, *c, e, answer),
            Cont::Release(res) => {
                if let Ok(Resp::Leased(ok)) = answer {
                    self.note(Some((d, t)), format!("release: {ok}"));
                    // A released lease takes its secret with it.
                    if ok {
                        self.agent(d, t).token = None;
                    }
                }
                if res.is_err() && self.agent(d, t).engine.is_running() {
                    return self.request(d, t, Req::Load, Cont::FinishReload(res));
                }
                self.end_undriven(d, t, res)
            }
            Cont::FinishReload(res) => {
                match self.loaded(d, answer) {
                    Some(snap) => self.take(d, t, &snap),
                    None => self.agent(d, t).engine.stop(),
                }
                self.end_undriven(d, t, res)
            }
            Cont::History => self.history(d, t, answer),
            Cont::Reload => self.reloaded(d, t, answer),
            Cont::FlushCheck(id, text) => self.flush_check(d, t, id, text, answer),
            Cont::Decide(s) => self.decide_answer(d, t, *s, answer),
            Cont::Hostile => self.hostile_answer(d, t, answer),
        }
    }

    /// What `RemoteStore::load` returns: the handler's thread (kept in the copy), or while it
    /// cannot be reached, the copy.
    pub(crate) fn loaded(
        &mut self,
        d: usize,
        answer: Result<Resp, StoreError>,
    ) -> Option<Snapshot> {
        match answer {
            Ok(Resp::Loaded(s)) => {
                self.keep_copy(d, &s);
                Some(*s)
            }
            Err(StoreError::Unavailable(_)) => self.devices[d].copy.clone(),
            _ => None,
        }
    }

    /// `IndexedDbStore::mirror`: never an older record over a newer one.
    pub(crate) fn keep_copy(&mut self, d: usize, s: &Snapshot) {
        let copy = &mut self.devices[d].copy;
        if copy
            .as_ref()
            .is_none_or(|c| c.record.version <= s.record.version)
        {
            *copy = Some(s.clone());
        }
    }

    /// `session::take`.
    pub(crate) fn take(&mut self, d: usize, t: usize, snap: &Snapshot) {
        let a = self.agent(d, t);
        a.engine.reset(snap.state());
        a.version = snap.record.version;
        a.message_count = snap.record.message_count;
        a.history = None;
    }

    // ----- the human and open ---------------------------------------------------------

    pub(crate) fn human(&mut self, d: usize, t: usize) {
        if self.winding_down {
            return;
        }
        if self.devices[d].hostile {
            return self.hostile_act(d, t);
        }
        let choice = {
            let DevSim {
                devices,
                rng,
                next_chat,
                ..
            } = self;
            let engine = &devices[d].tabs[t].agent.as_ref().expect("agent").engine;
            actors::human(rng, engine, next_chat, d * 10 + t)
        };
        let wall = self.wall(d);
        match choice {
            Choice::Wait => {
                let ms = self.think();
                self.then(d, t, Act::Human, ms);
            }
            Choice::Reload => {
                self.note(Some((d, t)), "reloads the page".into());
                self.stats.reloads += 1;
                self.close(d, t);
                self.open_tab(d, t, 0);
            }
            // `outbox::run_or_queue`.
            Choice::Run(Input::Chat(text)) => {
                let id = self.agent(d, t).engine.new_message_id(wall);
                let chat = self.register_chat(d, &text, id.as_str());
                let queued = Queued::Message {
                    id: id.to_string(),
                    text: text.clone(),
                };
                self.run_or_queue(d, t, RunInput::Chat(text, id), queued, Some(chat));
            }
            Choice::Run(Input::Decide(v)) => {
                let tail = self.agent(d, t).engine.tail().cloned();
                let queued = Queued::decisions_on(v.clone(), None, tail.as_ref());
                self.run_or_queue(d, t, RunInput::Decide(v), queued, None);
            }
            Choice::Run(Input::Retry) => self.start_run(d, t, RunInput::Retry, Origin::Human),
            Choice::Run(Input::Policy(n, p)) => {
                self.start_run(d, t, RunInput::Policy(n, p), Origin::Human)
            }
            Choice::Run(Input::Recover) => self.start_run(d, t, RunInput::Recover, Origin::Human),
        }
    }

    /// `session::open` after its load: `observe`, then `must_recover`.
    pub(crate) fn open_observe(&mut self, d: usize, t: usize, snap: Snapshot) {
        if self.devices[d].hostile {
            // It runs nothing: it forges from what it read.
            return self.idle(d, t);
        }
        let config = self.engine_config(d);
        let tools = self.devices[d].tools.clone();
        let machine = self.rng.below(1024);
        let a = self.agent(d, t);
        if !a.built {
            a.engine = gatehouse_agent::engine::Engine::new(tools, config, snap.state(), machine);
            a.version = snap.record.version;
            a.message_count = snap.record.message_count;
            a.built = true;
        }
        let me = a.me.clone();
        let started = snap
            .record
            .run
            .as_ref()
            .is_some_and(|r| r.started.is_some());
        let probe = match &snap.record.lease {
            Some(l) if l.owner == me => LockProbe::Unsupported,
            None if !started => LockProbe::Unsupported,
            _ if self.devices[d].lock.is_some() => LockProbe::Held,
            _ => LockProbe::Free,
        };
        if snap.record.version != self.agent(d, t).version {
            self.take(d, t, &snap);
        }
        let recover = must_recover(&snap.record, &me, self.wall(d) as f64, probe);
        self.note(
            Some((d, t)),
            format!("open: v{}, must_recover = {recover}", snap.record.version),
        );
        if recover && self.agent(d, t).open_runs < 3 {
            self.agent(d, t).open_runs += 1;
            self.stats.recover_runs += 1;
            return self.start_run(d, t, RunInput::Recover, Origin::Open);
        }
        self.opened(d, t);
    }

    /// The end of `session::open`: `changes::go_on`, then `changes::send_queued`. The
    /// auditor's human presses `retry()` on an interrupted thread (a call cleared to run again).
    pub(crate) fn opened(&mut self, d: usize, t: usize) {
        if self.go_on(d, t) || self.flush_start(d, t) {
            return;
        }
        let auditor = self.auditing && d + 1 == self.devices.len();
        let interrupted = self.agent(d, t).engine.status() == ThreadStatus::Interrupted;
        if auditor && interrupted {
            return self.start_run(d, t, RunInput::Retry, Origin::Human);
        }
        self.idle(d, t);
    }

    pub(crate) fn idle(&mut self, d: usize, t: usize) {
        let ms = self.think();
        self.then(d, t, Act::Human, ms);
    }

    /// `changes::go_on`: the stored status says a device was needed, and this one's engine
    /// sees the thread as `interrupted` (it has the tool, or the model): `retry()`.
    pub(crate) fn go_on(&mut self, d: usize, t: usize) -> bool {
        let stored = self.devices[d].copy.as_ref().map(|c| c.record.status());
        let a = self.agent(d, t);
        let ready = stored == Some(ThreadStatus::AwaitingDevice)
            && a.run.is_none()
            && a.engine.status() == ThreadStatus::Interrupted;
        if ready {
            self.stats.handoffs += 1;
            self.start_run(d, t, RunInput::Retry, Origin::GoOn);
        }
        ready
    }

    // ----- a run ----------------------------------------------------------------------

    pub(crate) fn start_run(&mut self, d: usize, t: usize, input: RunInput, origin: Origin) {
        self.start_run_queued(d, t, input, origin, None, None);
    }

    pub(crate) fn start_run_queued(
        &mut self,
        d: usize,
        t: usize,
        input: RunInput,
        origin: Origin,
        queued: Option<Queued>,
        chat: Option<usize>,
    ) {
        self.next_run += 1;
        let label = match &input {
            RunInput::Chat(text, id) => format!("chat({text:?} as {id})"),
            RunInput::Decide(v) => format!("decide({v})"),
            RunInput::Retry => "retry".into(),
            RunInput::Recover => "recover".into(),
            RunInput::Policy(n, p) => format!("set_tool_policy({n}, {p:?})"),
            RunInput::LateResult(c, _) => format!("late_result({c})"),
        };
        let chat = chat.or_else(|| match &input {
            RunInput::Chat(_, id) => self.chat_by_id(id.as_str()),
            _ => None,
        });
        match &input {
            RunInput::Chat(..) => self.stats.chats += 1,
            RunInput::Decide(_) => self.stats.decisions += 1,
            _ => {}
        }
        self.stats.runs += 1;
        let run = Run {
            id: self.next_run,
            input: Some(input),
            label: label.clone(),
            admission: Admit::Pending,
            driving: false,
            chat,
            origin,
            queued,
            input_error: None,
        };
        self.agent(d, t).run = Some(run);
        self.note(Some((d, t)), format!("starts {label}"));
        let ms = self.rng.range(0, 5);
        self.then(d, t, Act::Lock, ms);
    }

    /// `locks::try_hold` on this device's Web Locks. A lock taken by another tab of the device
    /// is `busy` at once (the driver waits up to 2 s when the record shows no lease: not
    /// modelled, a liveness detail).
    pub(crate) fn lock(&mut self, d: usize, t: usize) {
        if matches!(self.run_of(d, t).input, Some(RunInput::Decide(_))) {
            // A remote decision takes no lock and no lease: it is an intent (`decide.rs`).
            return self.decide(d, t);
        }
        let serial = self.agent(d, t).serial;
        if self.devices[d].lock.is_some() {
            self.stats.busy += 1;
            self.note(Some((d, t)), "lock: taken by another tab: busy".into());
            self.run_of(d, t).admission = Admit::Refused;
            return self.finish_run(d, t, Err("busy"));
        }
        self.devices[d].lock = Some(serial);
        self.apply_input(d, t);
    }

    /// `admission::apply`; with the lock held, admission is deferred to the first write.
    pub(crate) fn apply_input(&mut self, d: usize, t: usize) {
        let wall = self.wall(d);
        let input = self.run_of(d, t).input.take().expect("input");
        let e = &mut self.agent(d, t).engine;
        let r: Result<(), EngineError> = match input {
            RunInput::Chat(text, id) => e.user_message_as(&text, id, wall),
            // Sent as an intent (`decide.rs`), never applied here.
            RunInput::Decide(_) => unreachable!("decisions go to the handler"),
            RunInput::Retry => e.retry(wall),
            RunInput::Recover => {
                e.recover(wall);
                Ok(())
            }
            RunInput::Policy(name, p) => e.set_tool_policy(&name, p),
            RunInput::LateResult(call, result) => e
                .late_result(&call, Ok(Value::String(result)), wall)
                .map(|_| ()),
        };
        match r {
            Err(e) => {
                self.note(Some((d, t)), format!("engine refuses: {}", e.code()));
                self.run_of(d, t).input_error = Some(e.code());
                self.request(d, t, Req::Load, Cont::AdmitRead(None));
            }
            Ok(()) => {
                let at = self.real + RENEW_MS as u64;
                let a = self.agent(d, t);
                a.renew_at = Some(at);
                a.run.as_mut().expect("run").driving = true;
                self.drive_on(d, t);
            }
        }
    }

    /// `admission::admit_by_read` with the record the handler (or, offline, the copy) gave.
    pub(crate) fn admit_read(
        &mut self,
        d: usize,
        t: usize,
        answer: Result<Resp, StoreError>,
        step: Option<Box<Option<Step>>>,
    ) {
        let Some(snap) = self.loaded(d, answer) else {
            // The record cannot be read: the run fails, its admission still pending.
            self.note(Some((d, t)), "admission read FAILS".into());
            return match step {
                None => self.end_undriven(d, t, Err("unavailable")),
                Some(_) => self.end_drive(d, t, Err("unavailable")),
            };
        };
        let (me, version) = {
            let a = self.agent(d, t);
            (a.me.clone(), a.version)
        };
        let wall = self.wall(d) as f64;
        let code = match admit(&snap.record, version, &me, LockAttempt::Held, wall) {
            Admission::Go => {
                self.run_of(d, t).admission = Admit::Done;
                if let Some(code) = self.run_of(d, t).input_error.take() {
                    self.stats.engine_refusals += 1;
                    return self.end_undriven(d, t, Err(code));
                }
                return self.do_step(d, t, step.and_then(|s| *s));
            }
            Admission::Busy => "busy",
            Admission::Stale => "conflict",
        };
        self.note(Some((d, t)), format!("admit by read: {code}"));
        self.take(d, t, &snap);
        self.refused(d, t, code);
    }

    /// Refused at admission: nothing written, sent or leased.
    pub(crate) fn refused(&mut self, d: usize, t: usize, code: &'static str) {
        match code {
            "busy" => self.stats.busy += 1,
            _ => self.stats.conflicts += 1,
        }
        let a = self.agent(d, t);
        a.renew_at = None;
        let run = a.run.as_mut().expect("run");
        run.driving = false;
        run.admission = Admit::Refused;
        self.end_undriven(d, t, Err(code));
    }

    pub(crate) fn drive_on(&mut self, d: usize, t: usize) {
        let step = self.agent(d, t).engine.poll();
        if self.run_of(d, t).admission == Admit::Pending && !matches!(step, Some(Step::Persist(_)))
        {
            let step = Some(Box::new(step));
            return self.request(d, t, Req::Load, Cont::AdmitRead(step));
        }
        self.do_step(d, t, step);
    }

    pub(crate) fn do_step(&mut self, d: usize, t: usize, step: Option<Step>) {
        match step {
            None => self.end_drive(d, t, Ok(())),
            Some(Step::Persist(c)) => {
                let keep = !self.agent(d, t).engine.run_ends_after_write();
                self.commit(d, t, c, keep);
            }
            Some(Step::CallModel) => match self.agent(d, t).history.is_some() {
                true => self.then(d, t, Act::CallModel, 0),
                false => {
                    // `history::for_request` reads the stored messages before the view's tail.
                    let before = Some(self.agent(d, t).message_count);
                    let req = Req::Rows {
                        before,
                        limit: u32::MAX,
                    };
                    self.request(d, t, req, Cont::History);
                }
            },
            Some(Step::EvaluatePolicies(q)) => {
                let ms = self.rng.range(0, 50);
                self.then(d, t, Act::Policies(q), ms);
            }
            Some(Step::RunTool(inv)) => self.then(d, t, Act::ToolStart(inv), 0),
            Some(Step::Yield(o)) => {
                self.note(Some((d, t)), format!("yields {o:?}"));
                self.end_drive(d, t, Ok(()));
            }
        }
    }
}
