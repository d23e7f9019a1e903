//! A deterministic simulation of several browser tabs running one thread (in the spirit of
//! FoundationDB's and TigerBeetle's simulators). See `tests/simulation.rs` for what it checks.

mod actors;
mod devices;
mod driver;
mod oracle;
mod rng;
mod world;

pub use world::{Broken, Config, Locks, Pauses, Stats, Violation, invariant_name};
use world::{Report, Sim};

/// Runs one seed.
pub fn simulate(cfg: Config) -> Report {
    match cfg.locks {
        Locks::Devices => devices::DevSim::new(cfg).run(),
        Locks::Web | Locks::Without => Sim::new(cfg).run(),
    }
}

/// Runs `seeds` with `configure` applied to each seed's default config; returns the summed
/// stats and every violation.
pub fn sweep(
    seeds: impl IntoIterator<Item = u64>,
    locks: Locks,
    configure: impl Fn(&mut Config),
) -> (Stats, Vec<Violation>) {
    let mut total = Stats::default();
    let mut failed = Vec::new();
    for seed in seeds {
        let mut cfg = Config::new(seed, locks);
        configure(&mut cfg);
        let r = simulate(cfg);
        total.add(&r.stats);
        if let Some(v) = r.violation {
            failed.push(v);
        }
    }
    (total, failed)
}
