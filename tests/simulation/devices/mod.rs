//! Devices over a network (docs/design.md, "Across devices"): 2–4 devices, each with 1–2 tabs,
//! its own clock, its own Web Locks (shared by its tabs only), its own IndexedDB copy and
//! outbox, and its own tools (some lack one: `tools_elsewhere`) and sometimes no model
//! (`model_here: false`), reach one store handler (`server.rs`) only through a network
//! (`network.rs`) that drops, delays, reorders and duplicates requests, answers and change
//! notices. Devices go offline, tabs and whole browsers crash and reopen, the handler restarts.
//! The remote protocol is mirrored step by step in `driver.rs` and `outbox.rs`; the invariants
//! are in `oracle.rs`. Half the seeds add a hostile device (`hostile.rs`) that writes but may
//! not decide, and sends forged commits, stolen secrets and replays.

mod audit;
mod decide;
mod driver;
mod faults;
mod hostile;
mod network;
mod oracle;
mod outbox;
mod persist;
mod server;
mod steps;
mod world;

pub use world::DevSim;
