//! The simulated world: tabs over one `MemoryStore`, one Web Lock table, one clock, and the
//! seeded scheduler that interleaves every step of every tab with injected faults.
//!
//! Time: `real` is the monotonic time that timers, latencies and pauses are measured in;
//! `wall()` is what `Date.now()` returns (leases, the engine's ids, the store's timestamps).
//! A clock jump moves the wall clock only.
//!
//! Scheduling: every tab has one next action (ready at some `real` time) and, while a run is
//! driving, a renewal timer. Each step runs one action chosen uniformly among the ready ones
//! (or injects a fault, or advances the clock to the next ready time when nothing is ready),
//! so timers fire on time unless their tab is paused, and any interleaving of ready actions
//! can happen.

use super::actors::{self, Input};
use super::oracle::Ghost;
use super::rng::Rng;
use gatehouse_agent::engine::{
    Commit, Engine, EngineConfig, ModelOutput, Outcome, PolicyQuery, Step, ThreadState,
    ToolInvocation, ToolSet,
};
use gatehouse_agent::store::{LEASE_MS, LockAttempt, MemoryStore, Snapshot};
use gatehouse_agent::thread::Message;
use serde_json::Value;
use std::collections::VecDeque;
use std::fmt;

/// The wall clock at the start (2026).
pub const T0: u64 = 1_795_000_000_000;
pub const THREAD: &str = "thread-1";
const RENEW: u64 = gatehouse_agent::store::RENEW_MS as u64;
const LEASE: u64 = LEASE_MS as u64;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Locks {
    /// Every tab has Web Locks (a secure context in a current browser).
    Web,
    /// No tab has them (an insecure context, Node): leases are judged by their expiry.
    Without,
    /// Devices over a network to a remote store's handler (`simulation/devices`): each
    /// device's tabs share its Web Locks, which reach no other device.
    Devices,
}

impl Locks {
    pub fn name(self) -> &'static str {
        match self {
            Locks::Web => "web",
            Locks::Without => "none",
            Locks::Devices => "devices",
        }
    }
}

/// A deliberately broken copy of the protocol, to prove the invariants catch it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Broken {
    /// The protocol as the driver implements it.
    No,
    /// A run that did not get the Web Lock goes on as if it had (its admission and its writes
    /// claim the lock).
    TakenLockCountsAsHeld,
    /// The owner never renews its lease: without Web Locks, long steps outlive it.
    NoRenewal,
    /// `admit` lets a run start while another live run owns the thread, and writes ignore
    /// other agents' leases.
    NoOwnership,
    /// Devices: a commit retried after a lost answer goes with a new id, so the handler
    /// cannot tell it from a new commit (no deduplication).
    NoCommitId,
    /// Devices: leases are written and judged at the writing device's clock, not the
    /// handler's.
    LeaseJudgedLocally,
    /// Devices: the handler applies any write its store rule allows, without checking it as
    /// a legal next state (`authority::check_write`): what a hostile device forges lands.
    NoWriteCheck,
}

/// How long a live tab may freeze (and how far the wall clock may jump forward).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Pauses {
    /// Any length, up to 10 minutes (sound with Web Locks).
    Any,
    /// Strictly shorter than `LEASE_MS`, as the assumption was first stated (not enough: see
    /// `without_web_locks_pauses_beyond_what_the_protocol_allows` in tests/simulation.rs).
    ShorterThanLease,
    /// Shorter than `LEASE_MS`, and never so long that a running owner's lease lapses before
    /// its next renewal (what the protocol without Web Locks actually needs).
    RenewedInTime,
    /// From `LEASE_MS - RENEW_MS` to three times `LEASE_MS`: beyond the protocol's assumption.
    Beyond,
}

#[derive(Debug, Clone)]
pub struct Config {
    pub seed: u64,
    pub locks: Locks,
    /// Scheduling steps before the simulation winds down.
    pub steps: u64,
    pub pauses: Pauses,
    /// Inject wall-clock jumps (forward ones are bounded like pauses).
    pub clock_jumps: bool,
    pub broken: Broken,
    /// Fail on invariant 7 (one live owner). Off: only count its breaks, to show what the other
    /// invariants see when ownership breaks.
    pub check_ownership: bool,
    /// Events kept for the failure report.
    pub trace_len: usize,
    /// How many tabs; `None`: 2 to 6, from the seed.
    pub tabs: Option<usize>,
    /// The engine's `max_steps` (model calls per run); `None`: 10, or 2–4 in 30% of seeds.
    pub max_steps: Option<u32>,
}

impl Config {
    /// The variables `configure_from_env` (tests/simulation.rs) reads to rebuild this config.
    pub fn replay_env(&self) -> String {
        let d = Config::new(self.seed, self.locks);
        let mut v = vec![
            format!("GATEHOUSE_SIM_SEED={}", self.seed),
            format!("GATEHOUSE_SIM_LOCKS={}", self.locks.name()),
        ];
        if self.pauses != d.pauses {
            let p = match self.pauses {
                Pauses::Any => "any",
                Pauses::ShorterThanLease => "documented",
                Pauses::RenewedInTime => "renewed",
                Pauses::Beyond => "beyond",
            };
            v.push(format!("GATEHOUSE_SIM_PAUSES={p}"));
        }
        match self.broken {
            Broken::No => {}
            Broken::TakenLockCountsAsHeld => v.push("GATEHOUSE_SIM_BROKEN=lock".into()),
            Broken::NoRenewal => v.push("GATEHOUSE_SIM_BROKEN=renewal".into()),
            Broken::NoOwnership => v.push("GATEHOUSE_SIM_BROKEN=ownership".into()),
            Broken::NoCommitId => v.push("GATEHOUSE_SIM_BROKEN=commit-id".into()),
            Broken::LeaseJudgedLocally => v.push("GATEHOUSE_SIM_BROKEN=local-lease".into()),
            Broken::NoWriteCheck => v.push("GATEHOUSE_SIM_BROKEN=write-check".into()),
        }
        if !self.clock_jumps {
            v.push("GATEHOUSE_SIM_NO_JUMPS=1".into());
        }
        if !self.check_ownership {
            v.push("GATEHOUSE_SIM_NO_OWNERSHIP_CHECK=1".into());
        }
        if self.steps != d.steps {
            v.push(format!("GATEHOUSE_SIM_STEPS={}", self.steps));
        }
        if let Some(n) = self.tabs {
            v.push(format!("GATEHOUSE_SIM_TABS={n}"));
        }
        if let Some(m) = self.max_steps {
            v.push(format!("GATEHOUSE_SIM_MAX_STEPS={m}"));
        }
        v.join(" ")
    }

    pub fn new(seed: u64, locks: Locks) -> Config {
        Config {
            seed,
            locks,
            steps: 500,
            pauses: match locks {
                Locks::Web | Locks::Devices => Pauses::Any,
                Locks::Without => Pauses::RenewedInTime,
            },
            clock_jumps: true,
            broken: Broken::No,
            check_ownership: true,
            trace_len: 60,
            tabs: None,
            max_steps: None,
        }
    }
}

#[derive(Debug, Clone, Default)]
pub struct Stats {
    pub seeds: u64,
    pub steps: u64,
    pub runs: u64,
    pub runs_ok: u64,
    pub commits: u64,
    pub executions: u64,
    pub crashes: u64,
    pub opens: u64,
    pub reloads: u64,
    pub takeovers: u64,
    pub takeovers_by_lock: u64,
    pub executions_cut: u64,
    pub reruns: u64,
    pub conflicts: u64,
    pub busy: u64,
    pub engine_refusals: u64,
    pub regates: u64,
    pub recover_runs: u64,
    pub model_calls: u64,
    pub model_failures: u64,
    pub stale_history: u64,
    pub renewals: u64,
    pub renewals_without_lease: u64,
    pub releases: u64,
    pub pauses: u64,
    pub clock_jumps: u64,
    pub chats: u64,
    pub chats_stored: u64,
    pub decisions: u64,
    pub max_messages: u64,
    /// Writes made while another live run owned the thread (invariant 7; counted when the
    /// check is off).
    pub ownership_breaks: u64,
    pub lock_waits: u64,
    /// Devices: requests sent, packets dropped and duplicated by the network, requests lost
    /// to a restarting handler, commit retries, retries answered from the commit table,
    /// handler restarts, offline spells, whole-browser crashes, inputs queued in an outbox,
    /// outbox items sent, runs handed on (`go_on`), calls approved on a device without their
    /// tool, queued messages still waiting at the end.
    pub net_requests: u64,
    pub net_dropped: u64,
    pub net_duplicated: u64,
    pub net_lost_to_restarts: u64,
    pub commit_retries: u64,
    pub deduped: u64,
    pub server_restarts: u64,
    pub offline_spells: u64,
    pub device_crashes: u64,
    pub queued: u64,
    pub outbox_sent: u64,
    pub handoffs: u64,
    pub elsewhere: u64,
    pub still_queued: u64,
    /// Commits the handler applied from a delayed copy after refusing the same commit id.
    pub applied_after_refusal: u64,
    /// Releases of an earlier run of the same agent that cleared a later run's live lease.
    pub stale_releases: u64,
    /// The hostile device: seeds with one, requests it sent (forged commits, lease
    /// operations with guessed or stolen secrets, replays of captured requests, decisions it
    /// may not make), and of its writes, those the handler refused as illegal and those it
    /// applied (legal next states).
    pub hostile_seeds: u64,
    pub hostile_steps: u64,
    pub hostile_requests: u64,
    pub hostile_illegal: u64,
    pub hostile_applied: u64,
    /// Where the crashed tabs were: their next action.
    pub crash_points: std::collections::BTreeMap<&'static str, u64>,
}

impl Stats {
    pub fn add(&mut self, o: &Stats) {
        macro_rules! sum { ($($f:ident),*) => { $( self.$f += o.$f; )* } }
        sum!(
            seeds,
            steps,
            runs,
            runs_ok,
            commits,
            executions,
            crashes,
            opens,
            reloads,
            takeovers,
            takeovers_by_lock,
            executions_cut,
            reruns,
            conflicts,
            busy,
            engine_refusals,
            regates,
            recover_runs,
            model_calls,
            model_failures,
            stale_history,
            renewals,
            renewals_without_lease,
            releases,
            pauses,
            clock_jumps,
            chats,
            chats_stored,
            decisions,
            ownership_breaks,
            lock_waits,
            net_requests,
            net_dropped,
            net_duplicated,
            net_lost_to_restarts,
            commit_retries,
            deduped,
            server_restarts,
            offline_spells,
            device_crashes,
            queued,
            outbox_sent,
            handoffs,
            elsewhere,
            still_queued,
            applied_after_refusal,
            stale_releases,
            hostile_seeds,
            hostile_steps,
            hostile_requests,
            hostile_illegal,
            hostile_applied
        );
        self.max_messages = self.max_messages.max(o.max_messages);
        for (k, n) in &o.crash_points {
            *self.crash_points.entry(k).or_default() += n;
        }
    }
}

impl fmt::Display for Stats {
    fn fmt(&self, f: &mut fmt::Formatter) -> fmt::Result {
        write!(
            f,
            "{} seeds, {} steps: {} runs ({} ok), {} commits, {} executions ({} cut off by a \
             crash, {} idempotent re-runs), {} crashes, {} opens ({} reloads), {} takeovers ({} \
             of a dead lock holder, the rest of a lapsed lease), {} lock waits, {} conflicts, {} busy refusals, {} engine \
             refusals, {} re-gates, {} recover runs, {} model calls ({} failed, {} on a history \
             newer than the view), {} renewals ({} with no lease), {} releases, {} pauses, {} \
             clock jumps, {} chats ({} stored), {} decision calls, longest thread {} messages",
            self.seeds,
            self.steps,
            self.runs,
            self.runs_ok,
            self.commits,
            self.executions,
            self.executions_cut,
            self.reruns,
            self.crashes,
            self.opens,
            self.reloads,
            self.takeovers,
            self.takeovers_by_lock,
            self.lock_waits,
            self.conflicts,
            self.busy,
            self.engine_refusals,
            self.regates,
            self.recover_runs,
            self.model_calls,
            self.model_failures,
            self.stale_history,
            self.renewals,
            self.renewals_without_lease,
            self.releases,
            self.pauses,
            self.clock_jumps,
            self.chats,
            self.chats_stored,
            self.decisions,
            self.max_messages
        )?;
        let points: Vec<String> = self
            .crash_points
            .iter()
            .map(|(k, n)| format!("{k} {n}"))
            .collect();
        write!(f, "; crashes before: {}", points.join(", "))?;
        if self.net_requests > 0 {
            write!(
                f,
                "; devices: {} requests ({} packets dropped, {} duplicated, {} lost to {} handler \
                 restarts), {} commit retries ({} answered from the commit table), {} offline \
                 spells, {} browser crashes, {} queued in an outbox ({} sent from it, {} \
                 messages still waiting at the end), {} calls approved without their tool, {} \
                 runs handed on, {} refused commits applied later from a delayed copy, {} live \
                 leases cleared by a delayed release of an earlier run",
                self.net_requests,
                self.net_dropped,
                self.net_duplicated,
                self.net_lost_to_restarts,
                self.server_restarts,
                self.commit_retries,
                self.deduped,
                self.offline_spells,
                self.device_crashes,
                self.queued,
                self.outbox_sent,
                self.still_queued,
                self.elsewhere,
                self.handoffs,
                self.applied_after_refusal,
                self.stale_releases
            )?;
        }
        if self.hostile_seeds > 0 {
            write!(
                f,
                "; a hostile device in {} seeds ({} steps): {} requests, {} writes refused as \
                 illegal, {} applied",
                self.hostile_seeds,
                self.hostile_steps,
                self.hostile_requests,
                self.hostile_illegal,
                self.hostile_applied
            )?;
        }
        Ok(())
    }
}

/// A broken invariant, with the seed that replays it and the events that led there.
#[derive(Debug, Clone)]
pub struct Violation {
    pub seed: u64,
    pub locks: Locks,
    pub broken: Broken,
    pub invariant: u8,
    pub detail: String,
    pub step: u64,
    pub trace: Vec<String>,
    /// The environment that makes the `replay` test run exactly this configuration.
    pub replay_env: String,
}

pub fn invariant_name(n: u8) -> &'static str {
    match n {
        1 => "each call is executed at most once",
        2 => "a completed execution's result is stored, never reported rejected",
        3 => "a call cut off by a crash keeps its result or is re-gated with the SDK's explanation",
        4 => "no user message is lost or doubled",
        5 => "every model request is a valid conversation",
        6 => "`started` is set only while its run is live, or after a crash until recovered",
        7 => "at most one live run owns the thread at a time",
        8 => "the stored thread is well-formed",
        9 => "a run that ended leaves no lease of its own behind",
        10 => "a call approved on a device without its tool runs on one that has it",
        11 => "a gated call runs only as a person allowed to decide approved it (its inputs)",
        12 => "decidedBy is an identity that decided that call, never a writer's claim",
        13 => "an honest device's write is a legal next state (never `illegal_write`)",
        _ => "the simulation's own contract with the engine",
    }
}

impl fmt::Display for Violation {
    fn fmt(&self, f: &mut fmt::Formatter) -> fmt::Result {
        writeln!(
            f,
            "seed {} (locks: {}{}) broke invariant {} ({}) at step {}:\n  {}",
            self.seed,
            self.locks.name(),
            if self.broken == Broken::No {
                String::new()
            } else {
                format!(", broken: {:?}", self.broken)
            },
            self.invariant,
            invariant_name(self.invariant),
            self.step,
            self.detail
        )?;
        writeln!(f, "last {} events:", self.trace.len())?;
        for e in &self.trace {
            writeln!(f, "  {e}")?;
        }
        write!(
            f,
            "replay: {} cargo test --test simulation replay -- --ignored --nocapture",
            self.replay_env
        )
    }
}

pub struct Report {
    pub stats: Stats,
    pub violation: Option<Violation>,
    /// The last `trace_len` events.
    pub trace: Vec<String>,
}

// ----- tabs -------------------------------------------------------------------------------

/// The next thing a tab does (one scheduling point each).
pub(crate) enum Act {
    /// Nothing scheduled (winding down).
    Parked,
    Human,
    OpenLoad,
    OpenObserve(Box<Snapshot>),
    Lock,
    /// The lock was taken: read the record to decide whether to wait.
    LockPeek,
    /// Waiting for the lock; fires when the wait times out (a grant comes earlier).
    LockWait,
    Admit,
    /// The run was not admitted yet and its next step is not a write: read the record first.
    LateAdmit(Box<Option<Step>>),
    Commit(Box<Commit>, bool),
    CallModel,
    ModelAnswer(Option<ModelOutput>),
    Policies(Vec<PolicyQuery>),
    ToolStart(ToolInvocation),
    ToolSettle(ToolInvocation, usize, Result<Value, String>),
    FailReload(&'static str),
    Release(Result<(), &'static str>),
    Unlock(Result<(), &'static str>),
}

impl Act {
    pub fn name(&self) -> &'static str {
        match self {
            Act::Parked | Act::Human => "idle",
            Act::OpenLoad | Act::OpenObserve(_) => "open",
            Act::Lock | Act::LockPeek | Act::LockWait => "lock",
            Act::Admit | Act::LateAdmit(_) => "admit",
            Act::Commit(c, _) if c.run.as_ref().is_some_and(|r| !r.results.is_empty()) => {
                "a write with results"
            }
            Act::Commit(..) => "a write",
            Act::CallModel | Act::ModelAnswer(_) => "model",
            Act::Policies(_) => "policies",
            Act::ToolStart(_) => "tool start",
            Act::ToolSettle(..) => "tool end",
            Act::FailReload(_) | Act::Release(_) => "failure cleanup",
            Act::Unlock(_) => "unlock",
        }
    }
}

pub(crate) struct Run {
    pub id: u64,
    pub input: Option<Input>,
    pub label: String,
    pub attempt: LockAttempt,
    /// The lock table says this run holds the thread's lock.
    pub really_holds: bool,
    /// Between a successful admission and the end of the drive (renewals run).
    pub driving: bool,
    /// Its last successful write kept the lease, and the drive goes on.
    pub owning: bool,
    pub wrote: bool,
    pub chat: Option<usize>,
    pub from_open: bool,
    pub yielded: Option<Outcome>,
    /// With the lock held, the run's first write admits it (the driver's `Admit::Pending`).
    pub admission_pending: bool,
    /// The input its view refused, while the record is read to tell a stale view.
    pub input_error: Option<&'static str>,
}

pub(crate) struct Agent {
    pub serial: u64,
    pub me: String,
    pub engine: Engine,
    pub built: bool,
    pub version: u64,
    /// The view's message count (its tail is message `message_count`).
    pub message_count: u64,
    pub history: Option<Vec<Message>>,
    /// The last write of the current run kept its lease (`finish` clears it).
    pub leased: bool,
    pub act: Act,
    pub ready_at: u64,
    /// The renewal timer, while a run is driving.
    pub renew_at: Option<u64>,
    /// Renewals the timer started (`spawn_local`), by the time their write happens: they
    /// outlive the run that started them.
    pub renewing: Vec<u64>,
    pub run: Option<Run>,
    /// `open()` is in progress; recover runs made so far.
    pub opening: bool,
    pub open_runs: u32,
}

pub(crate) struct Tab {
    pub agent: Option<Agent>,
    pub paused_until: u64,
    pub reopen_at: Option<u64>,
}

pub struct Sim {
    pub(crate) cfg: Config,
    pub(crate) rng: Rng,
    pub(crate) real: u64,
    pub(crate) skew: i64,
    pub(crate) step: u64,
    pub(crate) store: MemoryStore,
    db: String,
    /// The agent holding the thread's Web Lock, and the agents waiting for it (in order).
    pub(crate) lock: Option<u64>,
    pub(crate) lock_queue: VecDeque<u64>,
    pub(crate) tabs: Vec<Tab>,
    pub(crate) tools: ToolSet,
    pub(crate) engine_config: EngineConfig,
    pub(crate) next_serial: u64,
    pub(crate) next_call: u64,
    pub(crate) next_chat: u64,
    pub(crate) next_exec: u64,
    pub(crate) next_run: u64,
    pub(crate) recent_ids: Vec<String>,
    pub(crate) winding_down: bool,
    pub(crate) stats: Stats,
    trace: VecDeque<String>,
    pub(crate) violation: Option<Violation>,
    pub(crate) ghost: Ghost,
}

#[derive(Clone, Copy)]
enum Ev {
    Act(usize),
    Renew(usize),
    RenewWrite(usize, usize),
    Reopen(usize),
}

/// Faults per thousand steps.
const FAULTS_PER_MILLE: u64 = 40;

impl Sim {
    pub fn new(cfg: Config) -> Sim {
        let mut rng = Rng::new(cfg.seed ^ ((cfg.locks as u64) << 56));
        let db = format!(
            "sim-{}-{}-{:?}-{}",
            cfg.seed,
            cfg.locks.name(),
            cfg.broken,
            rng.next_u64()
        );
        MemoryStore::drop_database(&db);
        let tabs = 2 + rng.index(5);
        let tabs = cfg.tabs.unwrap_or(tabs);
        let max_steps = if rng.chance(300) {
            2 + rng.below(3) as u32
        } else {
            10
        };
        let max_steps = cfg.max_steps.unwrap_or(max_steps);
        let mut sim = Sim {
            store: MemoryStore::open(&db),
            db,
            cfg,
            rng,
            real: 0,
            skew: T0 as i64,
            step: 0,
            lock: None,
            lock_queue: VecDeque::new(),
            tabs: Vec::new(),
            tools: actors::tools(),
            engine_config: EngineConfig {
                max_steps,
                ..EngineConfig::default()
            },
            next_serial: 0,
            next_call: 0,
            next_chat: 0,
            next_exec: 0,
            next_run: 0,
            recent_ids: Vec::new(),
            winding_down: false,
            stats: Stats::default(),
            trace: VecDeque::new(),
            violation: None,
            ghost: Ghost::default(),
        };
        for t in 0..tabs {
            sim.tabs.push(Tab {
                agent: None,
                paused_until: 0,
                reopen_at: None,
            });
            let at = sim.rng.below(3_000);
            sim.open_tab(t, at);
        }
        sim
    }

    /// Runs the seed: `steps` scheduling steps with faults, then a wind-down without faults
    /// until every tab is idle, then a fresh tab opens the thread (recovering what a crash
    /// left), then the final checks.
    pub fn run(mut self) -> Report {
        while self.step < self.cfg.steps && self.violation.is_none() {
            self.tick();
        }
        if self.violation.is_none() {
            self.settle();
        }
        if self.violation.is_none() {
            // Every lease lapses (nobody runs), then an auditor opens the thread.
            let until = self
                .store
                .load(THREAD, self.wall() as f64)
                .ok()
                .and_then(|s| s.record.lease)
                .map_or(0, |l| l.until as u64);
            self.real += LEASE + 1 + until.saturating_sub(self.wall());
            let t = self.tabs.len();
            self.tabs.push(Tab {
                agent: None,
                paused_until: 0,
                reopen_at: None,
            });
            self.note(Some(t), "the auditor opens the thread".into());
            self.open_tab(t, 0);
            self.settle();
        }
        if self.violation.is_none() {
            self.audit();
        }
        self.stats.seeds = 1;
        self.stats.steps = self.step;
        self.stats.max_messages = self.ghost.mirror.len() as u64;
        self.stats.executions_cut = self.ghost.execs.iter().filter(|e| e.cut).count() as u64;
        MemoryStore::drop_database(&self.db);
        Report {
            stats: self.stats,
            violation: self.violation,
            trace: self.trace.into_iter().collect(),
        }
    }

    /// Steps without faults or new human actions until every tab is idle.
    fn settle(&mut self) {
        self.winding_down = true;
        for tab in &mut self.tabs {
            tab.reopen_at = None;
        }
        let limit = self.step + 100_000;
        while self.violation.is_none() && !self.quiet() {
            if self.step > limit {
                self.fail(0, "the simulation did not settle (a run never ends)".into());
                return;
            }
            self.tick();
        }
    }

    fn quiet(&self) -> bool {
        self.tabs
            .iter()
            .filter_map(|t| t.agent.as_ref())
            .all(|a| matches!(a.act, Act::Parked) && a.run.is_none() && a.renewing.is_empty())
    }

    pub(crate) fn wall(&self) -> u64 {
        (self.real as i64 + self.skew) as u64
    }

    pub(crate) fn agent(&mut self, t: usize) -> &mut Agent {
        self.tabs[t].agent.as_mut().expect("a live agent")
    }

    pub(crate) fn run_of(&mut self, t: usize) -> &mut Run {
        self.agent(t).run.as_mut().expect("a run in progress")
    }

    /// Schedules the tab's next action `delay` ms from now.
    pub(crate) fn then(&mut self, t: usize, act: Act, delay: u64) {
        let at = self.real + delay;
        let a = self.agent(t);
        a.act = act;
        a.ready_at = at;
    }

    pub(crate) fn note(&mut self, t: Option<usize>, what: String) {
        let who = match t {
            Some(t) => match &self.tabs[t].agent {
                Some(a) => format!("tab{t}/a{}", a.serial),
                None => format!("tab{t}"),
            },
            None => "world".into(),
        };
        let line = format!(
            "#{:<5} {:>9.3}s wall{:+.0}s {who}: {what}",
            self.step,
            self.real as f64 / 1000.0,
            (self.skew - T0 as i64) as f64 / 1000.0
        );
        if self.trace.len() >= self.cfg.trace_len {
            self.trace.pop_front();
        }
        self.trace.push_back(line);
    }

    pub(crate) fn fail(&mut self, invariant: u8, detail: String) {
        if self.violation.is_some() {
            return;
        }
        self.violation = Some(Violation {
            seed: self.cfg.seed,
            locks: self.cfg.locks,
            broken: self.cfg.broken,
            invariant,
            detail,
            step: self.step,
            trace: self.trace.iter().cloned().collect(),
            replay_env: self.cfg.replay_env(),
        });
    }

    // ----- the scheduler --------------------------------------------------------------

    fn tick(&mut self) {
        self.step += 1;
        if !self.winding_down && self.rng.chance(FAULTS_PER_MILLE) {
            self.fault();
        } else {
            let ready = self.ready();
            if ready.is_empty() {
                self.advance_clock();
                return;
            }
            match ready[self.rng.index(ready.len())] {
                Ev::Act(t) => self.act(t),
                Ev::Renew(t) => self.renew_timer(t),
                Ev::RenewWrite(t, i) => self.renew(t, i),
                Ev::Reopen(t) => {
                    self.tabs[t].reopen_at = None;
                    self.open_tab(t, 0);
                }
            }
        }
        if self.violation.is_none() {
            self.check_step();
        }
    }

    fn ready(&self) -> Vec<Ev> {
        let mut out = Vec::new();
        for (t, tab) in self.tabs.iter().enumerate() {
            match &tab.agent {
                Some(a) if tab.paused_until <= self.real => {
                    if !matches!(a.act, Act::Parked) && a.ready_at <= self.real {
                        out.push(Ev::Act(t));
                    }
                    if a.renew_at.is_some_and(|r| r <= self.real) {
                        out.push(Ev::Renew(t));
                    }
                    for (i, r) in a.renewing.iter().enumerate() {
                        if *r <= self.real {
                            out.push(Ev::RenewWrite(t, i));
                        }
                    }
                }
                Some(_) => {}
                None => {
                    if tab.reopen_at.is_some_and(|r| r <= self.real) {
                        out.push(Ev::Reopen(t));
                    }
                }
            }
        }
        out
    }

    fn advance_clock(&mut self) {
        let mut next: Option<u64> = None;
        let mut at = |x: u64| next = Some(next.map_or(x, |n: u64| n.min(x)));
        for tab in &self.tabs {
            match &tab.agent {
                Some(a) => {
                    if !matches!(a.act, Act::Parked) {
                        at(a.ready_at.max(tab.paused_until));
                    }
                    for r in a.renew_at.iter().chain(&a.renewing) {
                        at((*r).max(tab.paused_until));
                    }
                }
                None => {
                    if let Some(r) = tab.reopen_at {
                        at(r);
                    }
                }
            }
        }
        match next {
            Some(n) => self.real = self.real.max(n),
            None if self.winding_down => {}
            None => {
                // Every tab is closed for good: someone opens one again.
                let t = self.rng.index(self.tabs.len());
                self.tabs[t].reopen_at = Some(self.real + 1_000);
            }
        }
    }

    // ----- faults ---------------------------------------------------------------------

    fn fault(&mut self) {
        let live: Vec<usize> = (0..self.tabs.len())
            .filter(|&t| self.tabs[t].agent.is_some())
            .collect();
        match self.rng.below(20) {
            0..=6 if !live.is_empty() => {
                // Prefer a tab in the middle of a run: that is where crashes hurt.
                let running: Vec<usize> = live
                    .iter()
                    .copied()
                    .filter(|&t| self.tabs[t].agent.as_ref().is_some_and(|a| a.run.is_some()))
                    .collect();
                let pool = if !running.is_empty() && self.rng.chance(800) {
                    running
                } else {
                    live
                };
                let t = pool[self.rng.index(pool.len())];
                self.crash(t);
            }
            7..=11 if !live.is_empty() => {
                let t = live[self.rng.index(live.len())];
                if let Some(ms) = self.pause_length(Some(t)) {
                    let until = self.real + ms;
                    self.tabs[t].paused_until = self.tabs[t].paused_until.max(until);
                    self.stats.pauses += 1;
                    self.note(Some(t), format!("pauses for {:.1}s", ms as f64 / 1000.0));
                }
            }
            12 => {
                // The computer sleeps: every tab freezes, the wall clock goes on. Bounded like
                // a forward jump (it delays every owner's renewal by as much).
                if let Some(ms) = self.pause_length(None) {
                    let until = self.real + ms;
                    for tab in &mut self.tabs {
                        tab.paused_until = tab.paused_until.max(until);
                    }
                    self.stats.pauses += 1;
                    self.note(
                        None,
                        format!("every tab sleeps for {:.1}s", ms as f64 / 1000.0),
                    );
                }
            }
            13..=19 if !self.cfg.clock_jumps => {}
            13..=16 => {
                if let Some(ms) = self.pause_length(None) {
                    self.skew += ms as i64;
                    self.stats.clock_jumps += 1;
                    self.note(
                        None,
                        format!("the wall clock jumps {:+.1}s", ms as f64 / 1000.0),
                    );
                }
            }
            _ => {
                let ms = self.rng.range(1_000, 30_000);
                self.skew -= ms as i64;
                self.stats.clock_jumps += 1;
                self.note(
                    None,
                    format!("the wall clock jumps -{:.1}s", ms as f64 / 1000.0),
                );
            }
        }
    }

    /// The length of a pause of tab `t` (or, for `None`, of a forward clock jump), within the
    /// configured bound; `None` when no such fault fits.
    fn pause_length(&mut self, t: Option<usize>) -> Option<u64> {
        let (lo, hi) = match self.cfg.pauses {
            Pauses::Any => (1_000, 600_000),
            Pauses::ShorterThanLease | Pauses::RenewedInTime => (1_000, LEASE),
            Pauses::Beyond => (LEASE - RENEW, 3 * LEASE),
        };
        let mut ms = self.rng.range(lo, hi);
        if self.cfg.pauses != Pauses::RenewedInTime {
            return Some(ms);
        }
        for _ in 0..6 {
            if self.renewed_in_time(t, ms) {
                return Some(ms);
            }
            ms /= 2;
        }
        None
    }

    /// True when, after this pause or jump, every live owner still renews its lease before
    /// the lease lapses by the wall clock.
    fn renewed_in_time(&self, paused: Option<usize>, ms: u64) -> bool {
        let Some(lease) = self
            .store
            .load(THREAD, self.wall() as f64)
            .ok()
            .and_then(|s| s.record.lease)
        else {
            return true;
        };
        for (t, tab) in self.tabs.iter().enumerate() {
            let Some(a) = &tab.agent else { continue };
            if a.me != lease.owner {
                continue;
            }
            let Some(renew_at) = a.renew_at else {
                continue;
            };
            let (frozen_until, jump) = match paused {
                Some(p) if p == t => (tab.paused_until.max(self.real + ms), 0),
                Some(_) => (tab.paused_until, 0),
                None => (tab.paused_until, ms),
            };
            let renews_at = renew_at.max(frozen_until);
            let wall_then = renews_at as i64 + self.skew + jump as i64;
            // A margin for the store latency of the renewal itself.
            if wall_then as f64 + 100.0 >= lease.until {
                return false;
            }
        }
        true
    }

    fn crash(&mut self, t: usize) {
        let Some(a) = self.tabs[t].agent.as_ref() else {
            return;
        };
        let point = a.act.name();
        *self.stats.crash_points.entry(point).or_default() += 1;
        let what = a
            .run
            .as_ref()
            .map_or("idle".to_owned(), |r| r.label.clone());
        self.note(Some(t), format!("CRASH (during {what})"));
        self.close(t);
        self.stats.crashes += 1;
        if self.rng.chance(850) {
            self.tabs[t].reopen_at = Some(self.real + self.rng.range(100, 120_000));
        }
    }

    /// The page goes away: its run vanishes where it is, the browser releases its lock.
    pub(crate) fn close(&mut self, t: usize) {
        let Some(a) = self.tabs[t].agent.take() else {
            return;
        };
        self.lock_queue.retain(|w| *w != a.serial);
        self.tabs[t].paused_until = 0;
        self.on_gone(&a);
        if self.lock == Some(a.serial) {
            self.lock = None;
            self.grant_lock();
        }
    }

    /// A new page (a new agent id) opens the thread in tab `t`.
    pub(crate) fn open_tab(&mut self, t: usize, delay: u64) {
        self.next_serial += 1;
        let serial = self.next_serial;
        let me = format!("agent_{serial:03}_{:06x}", self.rng.below(1 << 24));
        let machine = self.rng.below(1024);
        self.tabs[t].agent = Some(Agent {
            serial,
            me,
            engine: Engine::new(
                self.tools.clone(),
                self.engine_config,
                ThreadState::default(),
                machine,
            ),
            built: false,
            version: 0,
            message_count: 0,
            history: None,
            leased: false,
            act: Act::OpenLoad,
            ready_at: self.real + delay,
            renew_at: None,
            renewing: Vec::new(),
            run: None,
            opening: true,
            open_runs: 0,
        });
        self.stats.opens += 1;
        self.note(Some(t), "opens the thread".into());
    }

    /// How long the human thinks before acting.
    pub(crate) fn think(&mut self) -> u64 {
        match self.rng.below(10) {
            0..=5 => self.rng.range(200, 5_000),
            6..=8 => self.rng.range(5_000, 60_000),
            _ => self.rng.range(60_000, 300_000),
        }
    }

    pub(crate) fn store_latency(&mut self) -> u64 {
        self.rng.range(1, 30)
    }

    pub(crate) fn model_latency(&mut self) -> u64 {
        match self.rng.below(20) {
            0..=13 => self.rng.range(200, 5_000),
            14..=18 => self.rng.range(5_000, 40_000),
            _ => self.rng.range(40_000, 200_000),
        }
    }

    pub(crate) fn tool_latency(&mut self) -> u64 {
        match self.rng.below(10) {
            0..=5 => self.rng.range(5, 2_000),
            6..=8 => self.rng.range(2_000, 30_000),
            _ => self.rng.range(30_000, 200_000),
        }
    }
}
