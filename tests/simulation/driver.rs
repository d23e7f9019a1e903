//! The driver's run-ownership protocol (src/driver/mod.rs), one scheduling point per store
//! operation, lock operation, model call, policy call and tool start/finish, deciding with the
//! same pure functions: `admit`, `must_recover`, `Writer`, and the engine's
//! `run_ends_after_write`.

use super::actors::{self, Choice, Input};
use super::world::{Act, Broken, Locks, Run, Sim, THREAD};
use gatehouse_agent::engine::{
    Commit, Decisions, Engine, EngineError, ModelOutput, PolicyQuery, Step, ToolInvocation,
};
use gatehouse_agent::store::{
    Admission, LEASE_MS, LockAttempt, LockProbe, RENEW_MS, Snapshot, StoreError, Writer, admit,
    must_recover,
};
use gatehouse_agent::thread::Message;
use serde_json::Value;

/// How long a run waits for a lock whose holder has no lease in the record (`LOCK_WAIT_MS` in
/// src/driver/locks.rs).
const LOCK_WAIT_MS: u64 = 2_000;

impl Sim {
    pub(crate) fn act(&mut self, t: usize) {
        let act = std::mem::replace(&mut self.agent(t).act, Act::Parked);
        match act {
            Act::Parked => {}
            Act::Human => self.human(t),
            Act::OpenLoad => self.open_load(t),
            Act::OpenObserve(snap) => self.open_observe(t, *snap),
            Act::Lock => self.lock(t),
            Act::LockPeek => self.lock_peek(t),
            Act::LockWait => self.lock_wait_timeout(t),
            Act::Admit => self.admit(t),
            Act::LateAdmit(step) => self.late_admit(t, *step),
            Act::Commit(c, keep) => self.commit(t, *c, keep),
            Act::CallModel => self.call_model(t),
            Act::ModelAnswer(out) => self.model_answer(t, out),
            Act::Policies(q) => self.policies(t, q),
            Act::ToolStart(inv) => self.tool_start(t, inv),
            Act::ToolSettle(inv, exec, outcome) => self.tool_settle(t, inv, exec, outcome),
            Act::FailReload(code) => self.fail_reload(t, code),
            Act::Release(code) => self.release(t, code),
            Act::Unlock(res) => self.unlock(t, res),
        }
    }

    fn load(&mut self) -> Option<Snapshot> {
        match self.store.load(THREAD, self.wall() as f64) {
            Ok(s) => Some(s),
            Err(e) => {
                self.fail(8, format!("the store cannot load the thread: {e}"));
                None
            }
        }
    }

    /// The view becomes `snap` (`take` in the driver).
    fn take(&mut self, t: usize, snap: &Snapshot) {
        let a = self.agent(t);
        a.engine.reset(snap.state());
        a.version = snap.record.version;
        a.message_count = snap.record.message_count;
        a.history = None;
    }

    /// What `locks::probe` answers now.
    fn probe(&self) -> LockProbe {
        match self.cfg.locks {
            Locks::Without | Locks::Devices => LockProbe::Unsupported,
            Locks::Web if self.lock.is_some() => LockProbe::Held,
            Locks::Web => LockProbe::Free,
        }
    }

    // ----- the human ------------------------------------------------------------------

    fn human(&mut self, t: usize) {
        if self.winding_down {
            return;
        }
        let choice = {
            let Sim {
                tabs,
                rng,
                next_chat,
                ..
            } = self;
            let engine = &tabs[t].agent.as_ref().expect("agent").engine;
            actors::human(rng, engine, next_chat, t)
        };
        match choice {
            Choice::Wait => {
                let d = self.think();
                self.then(t, Act::Human, d);
            }
            Choice::Reload => {
                self.note(Some(t), "reloads the page".into());
                self.stats.reloads += 1;
                self.close(t);
                self.open_tab(t, 0);
            }
            Choice::Run(input) => self.start_run(t, input, false),
        }
    }

    // ----- open -----------------------------------------------------------------------

    fn open_load(&mut self, t: usize) {
        let Some(snap) = self.load() else { return };
        let (tools, config) = (self.tools.clone(), self.engine_config);
        let machine = self.rng.below(1024);
        let a = self.agent(t);
        if !a.built {
            a.engine = Engine::new(tools, config, snap.state(), machine);
            a.version = snap.record.version;
            a.message_count = snap.record.message_count;
            a.built = true;
        }
        let v = snap.record.version;
        self.note(Some(t), format!("open: loads v{v}"));
        let d = self.rng.range(0, 5);
        self.then(t, Act::OpenObserve(Box::new(snap)), d);
    }

    /// `observe` (asks the lock only when it matters), then `must_recover`.
    fn open_observe(&mut self, t: usize, snap: Snapshot) {
        let me = self.agent(t).me.clone();
        let started = snap
            .record
            .run
            .as_ref()
            .is_some_and(|r| r.started.is_some());
        let probe = match &snap.record.lease {
            Some(l) if l.owner == me => LockProbe::Unsupported,
            None if !started => LockProbe::Unsupported,
            _ => self.probe(),
        };
        if snap.record.version != self.agent(t).version {
            self.take(t, &snap);
        }
        let recover = must_recover(&snap.record, &me, self.wall() as f64, probe);
        self.note(
            Some(t),
            format!("open: probe {probe:?}, must_recover = {recover}"),
        );
        if recover && self.agent(t).open_runs < 3 {
            self.agent(t).open_runs += 1;
            self.stats.recover_runs += 1;
            self.start_run(t, Input::Recover, true);
        } else {
            self.agent(t).opening = false;
            let d = self.think();
            self.then(t, Act::Human, d);
        }
    }

    // ----- a run ----------------------------------------------------------------------

    fn start_run(&mut self, t: usize, input: Input, from_open: bool) {
        self.next_run += 1;
        let label = input.label();
        let chat = match &input {
            Input::Chat(text) => {
                self.stats.chats += 1;
                Some(self.register_chat(t, text))
            }
            Input::Decide(_) => {
                self.stats.decisions += 1;
                None
            }
            _ => None,
        };
        self.stats.runs += 1;
        let run = Run {
            id: self.next_run,
            input: Some(input),
            label: label.clone(),
            attempt: LockAttempt::Unsupported,
            really_holds: false,
            driving: false,
            owning: false,
            wrote: false,
            chat,
            from_open,
            yielded: None,
            admission_pending: false,
            input_error: None,
        };
        self.agent(t).run = Some(run);
        self.note(Some(t), format!("starts {label}"));
        let d = self.rng.range(0, 5);
        self.then(t, Act::Lock, d);
    }

    /// The Web Lock (`locks::try_hold`): first `ifAvailable`, never waiting.
    fn lock(&mut self, t: usize) {
        let serial = self.agent(t).serial;
        match self.cfg.locks {
            Locks::Without | Locks::Devices => self.locked(t, LockAttempt::Unsupported, false),
            Locks::Web if self.lock.is_none() && self.lock_queue.is_empty() => {
                self.lock = Some(serial);
                self.locked(t, LockAttempt::Held, true);
            }
            Locks::Web => {
                self.note(Some(t), "lock: taken; reads the record".into());
                let d = self.store_latency();
                self.then(t, Act::LockPeek, d);
            }
        }
    }

    /// The lock is taken: a lease of another agent in the record means a run is under way
    /// (`busy` at once); else its holder is starting or has just let go: wait for it, at most
    /// `LOCK_WAIT_MS`.
    fn lock_peek(&mut self, t: usize) {
        let Some(snap) = self.load() else { return };
        let me = self.agent(t).me.clone();
        if snap.record.lease.is_none_or(|l| l.owner == me) {
            let serial = self.agent(t).serial;
            if self.lock.is_none() && self.lock_queue.is_empty() {
                // Freed meanwhile: granted at once.
                self.lock = Some(serial);
                return self.locked(t, LockAttempt::Held, true);
            }
            self.lock_queue.push_back(serial);
            self.stats.lock_waits += 1;
            self.note(Some(t), "lock: waits for it".into());
            self.then(t, Act::LockWait, LOCK_WAIT_MS);
        } else {
            self.locked(t, LockAttempt::Taken, false);
        }
    }

    /// The wait for the lock timed out.
    fn lock_wait_timeout(&mut self, t: usize) {
        let serial = self.agent(t).serial;
        self.lock_queue.retain(|w| *w != serial);
        self.locked(t, LockAttempt::Taken, false);
    }

    /// The lock was released (a run dropped it, or its page went away): the browser grants it
    /// to the first waiting request.
    pub(crate) fn grant_lock(&mut self) {
        if self.lock.is_some() {
            return;
        }
        while let Some(w) = self.lock_queue.pop_front() {
            let waiting = (0..self.tabs.len()).find(|&t| {
                self.tabs[t]
                    .agent
                    .as_ref()
                    .is_some_and(|a| a.serial == w && matches!(a.act, Act::LockWait))
            });
            if let Some(t) = waiting {
                self.lock = Some(w);
                self.locked(t, LockAttempt::Held, true);
                return;
            }
        }
    }

    fn locked(&mut self, t: usize, mut attempt: LockAttempt, really: bool) {
        if self.cfg.broken == Broken::TakenLockCountsAsHeld && attempt == LockAttempt::Taken {
            attempt = LockAttempt::Held;
        }
        let run = self.run_of(t);
        run.attempt = attempt;
        run.really_holds = really;
        self.note(Some(t), format!("lock: {attempt:?}"));
        if attempt == LockAttempt::Held {
            // The first write admits the run (or a read before any other step).
            self.run_of(t).admission_pending = true;
            return self.apply_input(t);
        }
        let d = self.store_latency();
        self.then(t, Act::Admit, d);
    }

    /// The admission decided by a read of the record (`store::admit`).
    fn admission(&mut self, t: usize, snap: &Snapshot) -> Admission {
        let wall = self.wall();
        let (me, version) = {
            let a = self.agent(t);
            (a.me.clone(), a.version)
        };
        let attempt = self.run_of(t).attempt;
        let admission = admit(&snap.record, version, &me, attempt, wall as f64);
        if self.cfg.broken == Broken::NoOwnership && admission == Admission::Busy {
            return if snap.record.version == version {
                Admission::Go
            } else {
                Admission::Stale
            };
        }
        admission
    }

    /// A run whose input was applied before its admission, whose next step is not a write:
    /// the record is read first (`Ownership::admit_by_read`).
    fn late_admit(&mut self, t: usize, step: Option<Step>) {
        let Some(snap) = self.load() else { return };
        let v = snap.record.version;
        let code = match self.admission(t, &snap) {
            Admission::Go => {
                self.note(
                    Some(t),
                    format!("admit (read before its first step): go at v{v}"),
                );
                self.run_of(t).admission_pending = false;
                return self.do_step(t, step);
            }
            Admission::Busy => {
                self.stats.busy += 1;
                "busy"
            }
            Admission::Stale => {
                self.stats.conflicts += 1;
                "conflict"
            }
        };
        self.note(
            Some(t),
            format!("admit (read before its first step): {code} at v{v}"),
        );
        // Its engine took the input: the whole view is replaced.
        self.take(t, &snap);
        self.refused(t, code);
    }

    /// A run refused at admission after its input was applied: it wrote and sent nothing and
    /// holds no lease.
    fn refused(&mut self, t: usize, code: &'static str) {
        let a = self.agent(t);
        a.renew_at = None;
        let run = a.run.as_mut().expect("run");
        run.driving = false;
        run.owning = false;
        run.admission_pending = false;
        self.end_undriven(t, Err(code));
    }

    fn admit(&mut self, t: usize) {
        let Some(snap) = self.load() else { return };
        let wall = self.wall();
        let (me, version) = {
            let a = self.agent(t);
            (a.me.clone(), a.version)
        };
        let attempt = self.run_of(t).attempt;
        let admission = self.admission(t, &snap);
        let v = snap.record.version;
        match admission {
            Admission::Busy => {
                self.stats.busy += 1;
                let owner = snap.record.lease.as_ref().map(|l| l.owner.clone());
                self.note(Some(t), format!("admit: BUSY at v{v} (lease {owner:?})"));
                self.take(t, &snap);
                self.end_undriven(t, Err("busy"));
            }
            Admission::Stale => {
                self.stats.conflicts += 1;
                self.note(
                    Some(t),
                    format!("admit: STALE (view v{version}, stored v{v})"),
                );
                self.take(t, &snap);
                self.end_undriven(t, Err("conflict"));
            }
            Admission::Go => {
                if let Some(l) = snap.record.lease.as_ref().filter(|l| l.owner != me) {
                    self.stats.takeovers += 1;
                    if l.locked && attempt == LockAttempt::Held {
                        self.stats.takeovers_by_lock += 1;
                    }
                    self.note(
                        Some(t),
                        format!(
                            "admit: takes over from {} (until {:+.1}s)",
                            l.owner,
                            (l.until - wall as f64) / 1000.0
                        ),
                    );
                } else {
                    self.note(Some(t), format!("admit: go at v{v}"));
                }
                // A deferred admission read because the view refused the input: that refusal.
                if let Some(code) = self.run_of(t).input_error.take() {
                    self.stats.engine_refusals += 1;
                    return self.end_undriven(t, Err(code));
                }
                self.apply_input(t);
            }
        }
    }

    /// Applies the run's input to the view's engine and starts driving it. A deferred
    /// admission whose input is refused reads the record first (a stale view gets
    /// `conflict`, not its old state's error).
    fn apply_input(&mut self, t: usize) {
        let wall = self.wall();
        let input = self.run_of(t).input.take().expect("input");
        let a = self.agent(t);
        let r: Result<(), EngineError> = match &input {
            Input::Chat(text) => a.engine.user_message(text, wall),
            Input::Decide(v) => {
                Decisions::from_json(v).and_then(|d| a.engine.submit_decisions(&d, wall, None))
            }
            Input::Retry => a.engine.retry(wall),
            Input::Recover => {
                a.engine.recover(wall);
                Ok(())
            }
            Input::Policy(name, p) => a.engine.set_tool_policy(name, *p),
        };
        match r {
            Err(e) if self.run_of(t).admission_pending => {
                self.note(
                    Some(t),
                    format!("engine refuses: {}; reads the record", e.code()),
                );
                let run = self.run_of(t);
                run.admission_pending = false;
                run.input_error = Some(e.code());
                let d = self.store_latency();
                self.then(t, Act::Admit, d);
            }
            Err(e) => {
                self.stats.engine_refusals += 1;
                self.note(Some(t), format!("engine refuses: {}", e.code()));
                self.end_undriven(t, Err(e.code()));
            }
            Ok(()) => {
                let renew =
                    (self.cfg.broken != Broken::NoRenewal).then_some(self.real + RENEW_MS as u64);
                let a = self.agent(t);
                a.renew_at = renew;
                a.run.as_mut().expect("run").driving = true;
                self.drive_on(t);
            }
        }
    }

    /// Polls the engine for its next step and schedules it.
    fn drive_on(&mut self, t: usize) {
        let step = self.agent(t).engine.poll();
        if self.run_of(t).admission_pending && !matches!(step, Some(Step::Persist(_))) {
            let d = self.store_latency();
            return self.then(t, Act::LateAdmit(Box::new(step)), d);
        }
        self.do_step(t, step);
    }

    fn do_step(&mut self, t: usize, step: Option<Step>) {
        match step {
            None => self.end_drive(t, Ok(())),
            Some(Step::Persist(c)) => {
                let keep = !self.agent(t).engine.run_ends_after_write();
                let d = self.store_latency();
                self.then(t, Act::Commit(Box::new(c), keep), d);
            }
            Some(Step::CallModel) => {
                // Reading the history (the first time) is a store transaction.
                let d = if self.agent(t).history.is_some() {
                    0
                } else {
                    self.store_latency()
                };
                self.then(t, Act::CallModel, d);
            }
            Some(Step::EvaluatePolicies(q)) => {
                let d = self.rng.range(0, 50);
                self.then(t, Act::Policies(q), d);
            }
            Some(Step::RunTool(inv)) => self.then(t, Act::ToolStart(inv), 0),
            Some(Step::Yield(o)) => {
                self.note(Some(t), format!("yields {o:?}"));
                self.run_of(t).yielded = Some(o);
                self.end_drive(t, Ok(()));
            }
        }
    }

    fn commit(&mut self, t: usize, c: Commit, keep: bool) {
        let wall = self.wall();
        let (me, version) = {
            let a = self.agent(t);
            (a.me.clone(), a.version)
        };
        let lock_held = self.run_of(t).attempt == LockAttempt::Held;
        let mut writer = Writer::new(&me, lock_held, keep, wall as f64);
        if self.cfg.broken == Broken::NoOwnership {
            // A writer that ignores other agents' leases: it passes the store's lease check
            // by naming the current owner, and still writes its own lease.
            if let Some(l) = self.load().and_then(|s| s.record.lease) {
                writer.owner = l.owner;
            }
        }
        let what = super::oracle::describe(&c, keep);
        match self.store.commit(THREAD, version, &c, &writer, wall as f64) {
            Ok(record) => {
                self.stats.commits += 1;
                self.run_of(t).admission_pending = false;
                self.note(
                    Some(t),
                    format!("commit v{version}→v{} {what}", record.version),
                );
                let a = self.agent(t);
                a.version = record.version;
                a.message_count = record.message_count;
                a.leased = keep;
                if let Some(h) = &mut a.history {
                    if let Some(tail) = &c.replace_tail {
                        if let Some(last) = h.last_mut() {
                            *last = tail.clone();
                        }
                    }
                    h.extend(c.append.iter().cloned());
                }
                self.on_commit(t, &c, keep, &record);
                if self.violation.is_none() {
                    self.drive_on(t);
                }
            }
            Err(e) => {
                match &e {
                    StoreError::Conflict { .. } => self.stats.conflicts += 1,
                    StoreError::Owned { .. } => self.stats.busy += 1,
                    _ => {
                        self.fail(8, format!("the memory store refused a commit: {e}"));
                        return;
                    }
                }
                self.note(
                    Some(t),
                    format!("commit from v{version} {what} REFUSED: {e:?}"),
                );
                let d = self.store_latency();
                self.then(t, Act::FailReload(e.code()), d);
            }
        }
    }

    /// `persist`'s error path: the stored thread is the truth.
    fn fail_reload(&mut self, t: usize, code: &'static str) {
        let Some(snap) = self.load() else { return };
        self.take(t, &snap);
        self.note(Some(t), format!("reloads v{}", snap.record.version));
        if self.run_of(t).admission_pending {
            // The run's first write was its admission: refused, it wrote nothing.
            return self.refused(t, code);
        }
        self.end_drive(t, Err(code));
    }

    fn call_model(&mut self, t: usize) {
        let history = match self.agent(t).history.take() {
            Some(h) => h,
            None => {
                // `load_history`: the stored messages before the view's tail, then the tail as
                // the view has it.
                let (count, tail) = {
                    let a = self.agent(t);
                    (a.message_count, a.engine.tail().cloned())
                };
                let rows = match self.store.page(THREAD, Some(count), u32::MAX) {
                    Ok(r) => r,
                    Err(e) => return self.fail(8, format!("page: {e}")),
                };
                let mut h = Vec::with_capacity(rows.len() + 1);
                for r in rows {
                    match r.message() {
                        Ok(m) => h.push(m),
                        Err(e) => return self.fail(8, format!("row {}: {e}", r.seq)),
                    }
                }
                h.extend(tail);
                h
            }
        };
        self.check_request(t, &history);
        self.agent(t).history = Some(history);
        self.stats.model_calls += 1;
        let out = {
            let Sim {
                rng,
                next_call,
                recent_ids,
                ..
            } = self;
            actors::model(rng, next_call, recent_ids)
        };
        let d = self.model_latency();
        self.then(t, Act::ModelAnswer(out), d);
    }

    fn model_answer(&mut self, t: usize, out: Option<ModelOutput>) {
        let wall = self.wall();
        match out {
            Some(out) => {
                let ids: Vec<String> = out
                    .tool_calls
                    .iter()
                    .map(|c| format!("{}:{:?}", c.name, c.id))
                    .collect();
                self.note(Some(t), format!("model answers [{}]", ids.join(", ")));
                if let Err(e) = self.agent(t).engine.model_output(out, wall) {
                    return self.fail(0, format!("the engine refused the model output: {e}"));
                }
                self.drive_on(t);
            }
            None => {
                self.stats.model_failures += 1;
                self.note(Some(t), "model call FAILS".into());
                self.agent(t).engine.model_failed();
                self.end_drive(t, Err("model"));
            }
        }
    }

    fn policies(&mut self, t: usize, queries: Vec<PolicyQuery>) {
        let verdicts: Vec<_> = queries
            .into_iter()
            .map(|q| (q.call_id, actors::verdict(&mut self.rng)))
            .collect();
        let wall = self.wall();
        if let Err(e) = self.agent(t).engine.policy_verdicts(verdicts, wall) {
            return self.fail(0, format!("the engine refused the verdicts: {e}"));
        }
        self.drive_on(t);
    }

    fn tool_start(&mut self, t: usize, inv: ToolInvocation) {
        let Some(msg) = self
            .agent(t)
            .engine
            .state()
            .run
            .as_ref()
            .map(|r| r.call_message_id.as_str().to_owned())
        else {
            return self.fail(0, "RunTool without a run journal".into());
        };
        let (exec, outcome) = self.exec_start(t, &inv, msg);
        self.note(
            Some(t),
            format!(
                "tool {} ({}) STARTS as execution #{exec}",
                inv.call_id, inv.tool
            ),
        );
        let d = self.tool_latency();
        self.then(t, Act::ToolSettle(inv, exec, outcome), d);
    }

    fn tool_settle(
        &mut self,
        t: usize,
        inv: ToolInvocation,
        exec: usize,
        outcome: Result<Value, String>,
    ) {
        self.ghost.execs[exec].completed = true;
        self.note(
            Some(t),
            format!("tool {} settles (execution #{exec})", inv.call_id),
        );
        let wall = self.wall();
        if let Err(e) = self
            .agent(t)
            .engine
            .tool_outcome(&inv.call_id, outcome, wall)
        {
            return self.fail(0, format!("the engine refused the tool outcome: {e}"));
        }
        self.drive_on(t);
    }

    /// The drive is over: renewals stop; a failed run clears its lease, then drops the lock.
    fn end_drive(&mut self, t: usize, res: Result<(), &'static str>) {
        let a = self.agent(t);
        a.renew_at = None;
        let leased = std::mem::take(&mut a.leased);
        let run = a.run.as_mut().expect("run");
        run.driving = false;
        run.owning = false;
        // `finish`: a failed run, or one whose last write kept its lease, clears it.
        match res {
            Err(code) => {
                let d = self.store_latency();
                self.then(t, Act::Release(Err(code)), d);
            }
            Ok(()) if leased => {
                let d = self.store_latency();
                self.then(t, Act::Release(Ok(())), d);
            }
            Ok(()) => self.end_undriven(t, Ok(())),
        }
    }

    fn release(&mut self, t: usize, res: Result<(), &'static str>) {
        let me = self.agent(t).me.clone();
        self.store.release(THREAD, &me);
        self.stats.releases += 1;
        self.note(Some(t), "releases its lease".into());
        self.end_undriven(t, res);
    }

    /// The end of a run that holds no lease of its own: drop the lock (a scheduling point)
    /// if it holds it.
    fn end_undriven(&mut self, t: usize, res: Result<(), &'static str>) {
        if self.run_of(t).really_holds {
            let d = self.rng.range(0, 5);
            self.then(t, Act::Unlock(res), d);
        } else {
            self.finish_run(t, res);
        }
    }

    fn unlock(&mut self, t: usize, res: Result<(), &'static str>) {
        let serial = self.agent(t).serial;
        self.run_of(t).really_holds = false;
        self.note(Some(t), "drops the lock".into());
        self.finish_run(t, res);
        if self.lock == Some(serial) {
            self.lock = None;
            self.grant_lock();
        }
    }

    fn finish_run(&mut self, t: usize, res: Result<(), &'static str>) {
        let run = self.agent(t).run.take().expect("run");
        if res.is_ok() {
            self.stats.runs_ok += 1;
        }
        self.note(Some(t), format!("{} ends: {res:?}", run.label));
        self.on_run_end(t, &run, res);
        if self.violation.is_some() {
            return;
        }
        if run.from_open {
            if res == Err("conflict") && self.agent(t).open_runs < 3 {
                let d = self.store_latency();
                self.then(t, Act::OpenLoad, d);
                return;
            }
            self.agent(t).opening = false;
        }
        let d = self.think();
        self.then(t, Act::Human, d);
    }

    /// The renewal timer (`setInterval(RENEW_MS)` from the admission to the end of the
    /// drive) fires: it spawns the renewal's write.
    pub(crate) fn renew_timer(&mut self, t: usize) {
        let write_at = self.real + self.store_latency();
        let at = self.real + RENEW_MS as u64;
        let a = self.agent(t);
        a.renew_at = Some(at);
        a.renewing.push(write_at);
    }

    /// A spawned renewal writes (possibly after its run ended).
    pub(crate) fn renew(&mut self, t: usize, i: usize) {
        self.agent(t).renewing.remove(i);
        let wall = self.wall();
        let me = self.agent(t).me.clone();
        let ok = match self.store.renew(THREAD, &me, wall as f64 + LEASE_MS) {
            Ok(ok) => ok,
            Err(e) => return self.fail(8, format!("renew: {e}")),
        };
        self.stats.renewals += 1;
        if !ok {
            self.stats.renewals_without_lease += 1;
        }
        self.note(Some(t), format!("renews its lease: {ok}"));
    }
}

/// The messages of a request, for the failure report.
pub(crate) fn kinds(h: &[Message]) -> String {
    h.iter()
        .map(super::oracle::kind)
        .collect::<Vec<_>>()
        .join(" ")
}
