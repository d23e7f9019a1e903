//! The device world: its actors, the seeded scheduler and the faults.
//!
//! Time: `real` is the handler's clock (minus `T0`); a device's `Date.now()` is `real` plus its
//! skew (minutes either way, and it jumps). Every step runs one ready event chosen uniformly
//! (a tab's next action or its request's timeout, a renewal timer, a packet's arrival, a
//! reopening…), or injects a fault, or advances the clock to the next event.

use super::super::actors;
use super::super::rng::Rng;
use super::super::world::{Broken, Config, Report, Stats, T0, Violation};
use super::network::{Network, Packet, Payload, Weather};
use super::oracle::Ghost;
use super::outbox::Flush;
use super::server::Server;
use gatehouse_agent::engine::{Engine, EngineConfig, ThreadState, ToolSet};
use gatehouse_agent::store::{Queued, Snapshot};
use std::collections::VecDeque;

pub(crate) use super::driver::{Act, Run};

pub(crate) struct Agent {
    pub serial: u64,
    pub me: String,
    /// `RemoteStore`'s commit ids: its random prefix and a counter.
    pub prefix: String,
    pub next_commit: u64,
    pub engine: Engine,
    pub built: bool,
    pub version: u64,
    pub message_count: u64,
    pub history: Option<Vec<gatehouse_agent::thread::Message>>,
    pub leased: bool,
    pub act: Act,
    pub ready_at: u64,
    pub renew_at: Option<u64>,
    pub run: Option<Run>,
    pub open_runs: u32,
    /// The request this tab waits for (its id, unique in the simulation).
    pub waiting: u64,
    pub flush: Option<Flush>,
    /// `outbox::later`: the next try of the outbox.
    pub flush_at: Option<u64>,
    /// Results whose write was refused or could not reach the handler (`Session::refused`).
    pub refused: Vec<(String, String)>,
    /// The lease's secret the handler gave this agent (`RemoteStore`'s `Tokens`): in memory
    /// only, gone with the page.
    pub token: Option<String>,
}

pub(crate) struct Tab {
    pub agent: Option<Agent>,
    pub reopen_at: Option<u64>,
}

pub(crate) struct Device {
    pub name: String,
    pub skew: i64,
    pub online: bool,
    pub online_at: Option<u64>,
    /// The browser runs (false: it crashed or was closed with all its tabs).
    pub up: bool,
    pub up_at: Option<u64>,
    pub tools: ToolSet,
    pub model_here: bool,
    /// `authorize` lets it `write` (else only `decide`: an approver).
    pub may_write: bool,
    /// `authorize` lets it `decide` (every device but the hostile one).
    pub may_decide: bool,
    /// A hostile device (`hostile.rs`): a signed-in user with `write` only, whose modified
    /// client sends forged commits, lease operations with guessed or stolen secrets, and
    /// replays of requests it captured.
    pub hostile: bool,
    /// The serial of the tab holding this device's Web Lock of the thread.
    pub lock: Option<u64>,
    /// In the IndexedDB copy: survives crashes.
    pub outbox: Vec<Queued>,
    pub copy: Option<Snapshot>,
    /// The change stream is connected; when it is reopened; the wait after the next drop.
    pub stream: bool,
    pub stream_at: Option<u64>,
    pub stream_wait: u64,
    pub tabs: Vec<Tab>,
}

pub struct DevSim {
    pub(crate) cfg: Config,
    pub(crate) rng: Rng,
    pub(crate) real: u64,
    pub(crate) step: u64,
    pub(crate) server: Server,
    pub(crate) net: Network,
    pub(crate) weather: Weather,
    pub(crate) devices: Vec<Device>,
    pub(crate) max_steps: u32,
    pub(crate) next_serial: u64,
    pub(crate) next_call: u64,
    pub(crate) next_chat: u64,
    pub(crate) next_exec: u64,
    pub(crate) next_run: u64,
    pub(crate) next_req: u64,
    pub(crate) recent_ids: Vec<String>,
    pub(crate) winding_down: bool,
    /// The auditor's device is open (the last one).
    pub(crate) auditing: bool,
    pub(crate) stats: Stats,
    trace: VecDeque<String>,
    pub(crate) violation: Option<Violation>,
    pub(crate) ghost: Ghost,
    /// What the hostile device saw on the wire.
    pub(crate) loot: super::hostile::Loot,
}

#[derive(Clone, Copy)]
enum Ev {
    Act(usize, usize),
    Renew(usize, usize),
    Flush(usize, usize),
    Packet(usize),
    Reopen(usize, usize),
    Up(usize),
    Online(usize),
    Stream(usize),
}

const FAULTS_PER_MILLE: u64 = 30;
/// The network in the faulty phase, and while winding down (nothing lost, so that what waits
/// in an outbox can be sent).
const STORMY: Weather = Weather {
    drop: 60,
    duplicate: 40,
};
const CALM: Weather = Weather {
    drop: 0,
    duplicate: 40,
};
const TOOLS: [&str; 4] = ["delete_file", "fetch_page", "send_email", "list_files"];

impl DevSim {
    pub fn new(cfg: Config) -> DevSim {
        let mut rng = Rng::new(cfg.seed ^ (0xDE << 56));
        let db = format!(
            "sim-devices-{}-{:?}-{}",
            cfg.seed,
            cfg.broken,
            rng.next_u64()
        );
        let max_steps = cfg.max_steps.unwrap_or(10);
        let mut sim = DevSim {
            server: Server::new(db, cfg.seed),
            net: Network::default(),
            weather: STORMY,
            cfg,
            rng,
            real: 0,
            step: 0,
            devices: Vec::new(),
            max_steps,
            next_serial: 0,
            next_call: 0,
            next_chat: 0,
            next_exec: 0,
            next_run: 0,
            next_req: 0,
            recent_ids: Vec::new(),
            winding_down: false,
            auditing: false,
            stats: Stats::default(),
            trace: VecDeque::new(),
            violation: None,
            ghost: Ghost::default(),
            loot: Default::default(),
        };
        let n = sim.cfg.tabs.unwrap_or(2 + sim.rng.index(3));
        for d in 0..n {
            // Device 0 has every tool and a model; the others lack a tool or two, or the
            // model, and one in four is an approver (it may only decide).
            let full = d == 0;
            let may_write = full || sim.rng.chance(750);
            // An approver's phone: no tools and no model (`action_of`: it only decides).
            let lacks: Vec<&str> = match (full, may_write) {
                (true, _) => Vec::new(),
                (false, false) => TOOLS.to_vec(),
                (false, true) => TOOLS
                    .iter()
                    .copied()
                    .filter(|_| sim.rng.chance(350))
                    .collect(),
            };
            let model_here = full || (may_write && sim.rng.chance(700));
            let skew = match sim.rng.below(3) {
                0 => 0,
                _ => sim.rng.range(0, 240_000) as i64 - 120_000,
            };
            let tabs = 1 + sim.rng.index(2);
            sim.add_device(d, lacks, model_here, may_write, skew, tabs);
        }
        sim.server.check_writes = sim.cfg.broken != Broken::NoWriteCheck;
        // Half the seeds (all of them with the write check broken) have a hostile device.
        if sim.cfg.broken == Broken::NoWriteCheck || sim.rng.chance(500) {
            let d = sim.devices.len();
            sim.stats.hostile_seeds += 1;
            sim.add_device(d, TOOLS.to_vec(), false, true, 0, 1);
            let dev = &mut sim.devices[d];
            dev.name = format!("mallory@device{d}");
            dev.may_decide = false;
            dev.hostile = true;
        }
        sim
    }

    fn add_device(
        &mut self,
        d: usize,
        lacks: Vec<&str>,
        model_here: bool,
        may_write: bool,
        skew: i64,
        tabs: usize,
    ) {
        let all = actors::tools();
        let specs = TOOLS
            .iter()
            .filter(|n| !lacks.contains(n))
            .filter_map(|n| all.get(n).cloned())
            .collect();
        self.devices.push(Device {
            name: format!("user@device{d}"),
            skew,
            online: true,
            online_at: None,
            up: true,
            up_at: None,
            tools: ToolSet::new(specs),
            model_here,
            may_write,
            may_decide: true,
            hostile: false,
            lock: None,
            outbox: Vec::new(),
            copy: None,
            stream: false,
            stream_at: Some(self.real + 1),
            stream_wait: 500,
            tabs: Vec::new(),
        });
        self.note(
            Some((d, 0)),
            format!(
                "device{d}: lacks {lacks:?}, model {model_here}, may write {may_write}, clock \
                 {skew:+}ms, {tabs} tab(s)"
            ),
        );
        for t in 0..tabs {
            self.devices[d].tabs.push(Tab {
                agent: None,
                reopen_at: None,
            });
            let at = self.rng.below(3_000);
            self.open_tab(d, t, at);
        }
    }

    pub fn run(mut self) -> Report {
        while self.step < self.cfg.steps && self.violation.is_none() {
            self.tick();
        }
        if self.violation.is_none() {
            self.settle();
        }
        if self.violation.is_none() {
            // Every lease lapses, then a device with every tool and a model opens the thread.
            self.real += gatehouse_agent::store::LEASE_MS as u64 + 1;
            let d = self.devices.len();
            self.auditing = true;
            self.add_device(d, Vec::new(), true, true, 0, 1);
            self.note(None, "the auditor's device opens the thread".into());
            self.settle();
        }
        if self.violation.is_none() {
            self.audit();
        }
        self.stats.seeds = 1;
        self.stats.steps = self.step;
        if self.stats.hostile_seeds > 0 {
            self.stats.hostile_steps = self.step;
        }
        self.stats.max_messages = self.ghost.mirror.len() as u64;
        self.stats.executions_cut = self.ghost.execs.iter().filter(|e| e.cut).count() as u64;
        self.stats.net_dropped = self.net.dropped;
        self.stats.net_duplicated = self.net.duplicated;
        gatehouse_agent::store::MemoryStore::drop_database(&self.server.db);
        Report {
            stats: self.stats,
            violation: self.violation,
            trace: self.trace.into_iter().collect(),
        }
    }

    /// No faults, no human, a network that loses nothing: every device comes back online and
    /// up, until no run, request or outbox try is left (or five minutes pass).
    fn settle(&mut self) {
        self.winding_down = true;
        self.weather = CALM;
        self.server.down_until = 0;
        for d in 0..self.devices.len() {
            if !self.devices[d].online {
                self.devices[d].online_at = Some(self.real + 1);
            }
            if !self.devices[d].up {
                self.devices[d].up_at = Some(self.real + 1);
            }
            for t in &mut self.devices[d].tabs {
                if t.agent.is_none() {
                    t.reopen_at = Some(self.real + 1);
                }
            }
        }
        let until = self.real + 300_000;
        let limit = self.step + 200_000;
        while self.violation.is_none() && !self.quiet(self.real >= until) {
            if self.step > limit {
                return self.fail(0, "the simulation did not settle".into());
            }
            self.tick();
        }
    }

    fn quiet(&self, give_up_outbox: bool) -> bool {
        let busy = self.devices.iter().any(|dev| {
            dev.online_at.is_some()
                || dev.up_at.is_some()
                || dev.tabs.iter().any(|t| match &t.agent {
                    None => t.reopen_at.is_some(),
                    Some(a) => {
                        a.run.is_some()
                            || a.flush.is_some()
                            || (!give_up_outbox && a.flush_at.is_some())
                            || !matches!(a.act, Act::Parked | Act::Human)
                    }
                })
        });
        !busy
            && self
                .net
                .flying
                .iter()
                .all(|p| matches!(p.payload, Payload::Notice(_)))
    }

    pub(crate) fn wall(&self, d: usize) -> u64 {
        (T0 as i64 + self.real as i64 + self.devices[d].skew) as u64
    }

    pub(crate) fn server_wall(&self) -> u64 {
        T0 + self.real
    }

    pub(crate) fn agent(&mut self, d: usize, t: usize) -> &mut Agent {
        self.devices[d].tabs[t]
            .agent
            .as_mut()
            .expect("a live agent")
    }

    pub(crate) fn run_of(&mut self, d: usize, t: usize) -> &mut Run {
        self.agent(d, t).run.as_mut().expect("a run in progress")
    }

    pub(crate) fn then(&mut self, d: usize, t: usize, act: Act, delay: u64) {
        let at = self.real + delay;
        let a = self.agent(d, t);
        a.act = act;
        a.ready_at = at;
    }

    pub(crate) fn note(&mut self, who: Option<(usize, usize)>, what: String) {
        if self.cfg.trace_len == 0 {
            return;
        }
        let who = match who {
            Some((d, t)) => match self.devices.get(d).and_then(|x| x.tabs.get(t)) {
                Some(Tab { agent: Some(a), .. }) => format!("dev{d}/tab{t}/a{}", a.serial),
                _ => format!("dev{d}/tab{t}"),
            },
            None => "world".into(),
        };
        let line = format!(
            "#{:<6} {:>9.3}s {who}: {what}",
            self.step,
            self.real as f64 / 1000.0
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

    // ----- the scheduler ----------------------------------------------------------------

    fn tick(&mut self) {
        self.step += 1;
        if !self.winding_down && self.rng.chance(FAULTS_PER_MILLE) {
            self.fault();
        } else {
            let ready = self.ready();
            if ready.is_empty() {
                return self.advance_clock();
            }
            match ready[self.rng.index(ready.len())] {
                Ev::Act(d, t) => self.act(d, t),
                Ev::Renew(d, t) => self.renew(d, t),
                Ev::Flush(d, t) => self.flush_timer(d, t),
                Ev::Packet(i) => {
                    let p = self.net.flying.swap_remove(i);
                    self.deliver(p);
                }
                Ev::Reopen(d, t) => {
                    self.devices[d].tabs[t].reopen_at = None;
                    if self.devices[d].up {
                        self.open_tab(d, t, 0);
                    }
                }
                Ev::Up(d) => self.device_up(d),
                Ev::Online(d) => self.device_online(d),
                Ev::Stream(d) => self.stream_open(d),
            }
        }
        if self.violation.is_none() {
            self.check_step();
        }
    }

    fn ready(&self) -> Vec<Ev> {
        let now = self.real;
        let mut out = Vec::new();
        for (d, dev) in self.devices.iter().enumerate() {
            let due = |x: Option<u64>| x.is_some_and(|x| x <= now);
            if due(dev.up_at) {
                out.push(Ev::Up(d));
            }
            if due(dev.online_at) {
                out.push(Ev::Online(d));
            }
            if due(dev.stream_at) {
                out.push(Ev::Stream(d));
            }
            for (t, tab) in dev.tabs.iter().enumerate() {
                match &tab.agent {
                    Some(a) => {
                        if !matches!(a.act, Act::Parked) && a.ready_at <= now {
                            out.push(Ev::Act(d, t));
                        }
                        if due(a.renew_at) {
                            out.push(Ev::Renew(d, t));
                        }
                        if due(a.flush_at) {
                            out.push(Ev::Flush(d, t));
                        }
                    }
                    None if due(tab.reopen_at) => out.push(Ev::Reopen(d, t)),
                    None => {}
                }
            }
        }
        for (i, p) in self.net.flying.iter().enumerate() {
            if p.at <= now {
                out.push(Ev::Packet(i));
            }
        }
        out
    }

    fn advance_clock(&mut self) {
        let mut next = self.net.next_at();
        let mut at = |x: Option<u64>| {
            if let Some(x) = x {
                next = Some(next.map_or(x, |n| n.min(x)));
            }
        };
        for dev in &self.devices {
            at(dev.up_at);
            at(dev.online_at);
            at(dev.stream_at);
            for tab in &dev.tabs {
                match &tab.agent {
                    Some(a) => {
                        if !matches!(a.act, Act::Parked) {
                            at(Some(a.ready_at));
                        }
                        at(a.renew_at);
                        at(a.flush_at);
                    }
                    None => at(tab.reopen_at),
                }
            }
        }
        match next {
            Some(n) => self.real = self.real.max(n),
            None if self.winding_down => {}
            None => {
                // Nothing left to happen: somebody opens a tab again.
                let d = self.rng.index(self.devices.len());
                self.devices[d].up_at = Some(self.real + 1_000);
            }
        }
    }

    /// A new page (a new agent id) opens the thread in tab `t` of device `d`.
    pub(crate) fn open_tab(&mut self, d: usize, t: usize, delay: u64) {
        self.next_serial += 1;
        let serial = self.next_serial;
        let me = format!("agent_{serial:03}_{:06x}", self.rng.below(1 << 24));
        let prefix = format!("{:x}", self.rng.below(1 << 40));
        let config = self.engine_config(d);
        let engine = Engine::new(
            self.devices[d].tools.clone(),
            config,
            ThreadState::default(),
            self.rng.below(1024),
        );
        self.devices[d].tabs[t].agent = Some(Agent {
            serial,
            me,
            prefix,
            next_commit: 0,
            engine,
            built: false,
            version: 0,
            message_count: 0,
            history: None,
            leased: false,
            act: Act::OpenLoad,
            ready_at: self.real + delay,
            renew_at: None,
            run: None,
            open_runs: 0,
            waiting: 0,
            flush: None,
            flush_at: None,
            refused: Vec::new(),
            token: None,
        });
        self.stats.opens += 1;
        self.note(Some((d, t)), "opens the thread".into());
    }

    /// A remote thread's engine (`agent/options.rs`): `tools_elsewhere`, and `model_here` when
    /// the agent was given a model.
    pub(crate) fn engine_config(&self, d: usize) -> EngineConfig {
        EngineConfig {
            max_steps: self.max_steps,
            tools_elsewhere: true,
            model_here: self.devices[d].model_here,
        }
    }

    /// Puts a packet from or to device `d` on the wire.
    pub(crate) fn send(&mut self, p: Packet) {
        let w = Weather {
            drop: self.weather.drop,
            duplicate: self.weather.duplicate,
        };
        self.net.send(&mut self.rng, &w, self.real, p);
    }

    pub(crate) fn think(&mut self) -> u64 {
        match self.rng.below(10) {
            0..=5 => self.rng.range(200, 5_000),
            6..=8 => self.rng.range(5_000, 60_000),
            _ => self.rng.range(60_000, 300_000),
        }
    }

    pub(crate) fn model_latency(&mut self) -> u64 {
        match self.rng.below(20) {
            0..=15 => self.rng.range(200, 5_000),
            _ => self.rng.range(5_000, 40_000),
        }
    }

    pub(crate) fn tool_latency(&mut self) -> u64 {
        match self.rng.below(10) {
            0..=6 => self.rng.range(5, 2_000),
            7..=8 => self.rng.range(2_000, 30_000),
            _ => self.rng.range(30_000, 120_000),
        }
    }
}
