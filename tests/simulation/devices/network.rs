//! The network between the devices and the store handler: every request and every answer is
//! a packet that may be dropped, delayed (so reordered) or duplicated, and a device that is
//! offline neither sends nor receives. The handler's change notices travel the same way.

use super::super::rng::Rng;
use gatehouse_agent::store::authority::DecideRequest;
use gatehouse_agent::store::wire::{CommitRequest, LeaseRequest};
use gatehouse_agent::store::{MessageRow, Snapshot, StoreError, ThreadRecord};

/// A request of `src/store/remote.rs` to the handler (`store::wire`'s routes).
#[derive(Debug, Clone)]
pub enum Req {
    /// `GET B/threads/{id}`: the record and its tail.
    Load,
    /// `GET B/threads/{id}/messages?before=&limit=`.
    Rows { before: Option<u64>, limit: u32 },
    /// `POST B/threads/{id}/commit`. `device_wall` is the sender's clock, which only the
    /// broken `LeaseJudgedLocally` protocol uses.
    Commit(Box<CommitRequest>, f64),
    /// `POST B/threads/{id}/lease`.
    Lease(LeaseRequest, f64),
    /// `POST B/threads/{id}/decide`: decisions as an intent.
    Decide(Box<DecideRequest>),
}

impl Req {
    pub fn label(&self) -> String {
        match self {
            Req::Load => "load".into(),
            Req::Rows { before, limit } => format!("rows(before {before:?}, {limit})"),
            Req::Commit(c, _) => format!("commit {} from v{}", c.commit_id, c.expected_version),
            Req::Lease(l, _) => format!("lease {:?}", l.op),
            Req::Decide(r) => format!("decide {} {}", r.commit_id, r.decisions),
        }
    }
}

/// The handler's answer.
#[derive(Debug, Clone)]
pub enum Resp {
    Loaded(Box<Snapshot>),
    Rows(Vec<MessageRow>),
    /// The record, and the lease's secret for its holder.
    Committed(Box<ThreadRecord>, Option<String>),
    /// `/decide`'s answer: the thread as the handler wrote it.
    Decided(Box<Snapshot>),
    Leased(bool),
    Refused(StoreError),
}

#[derive(Debug, Clone)]
pub enum Payload {
    /// To the handler, from tab `tab` of device `device`, as request `id` of that tab.
    Request(Req),
    /// Back to the tab; `id` 0 is a request nobody waits for (a renewal).
    Answer(Resp),
    /// A change notice of the handler's stream: the thread now stands at this version.
    Notice(u64),
}

#[derive(Debug, Clone)]
pub struct Packet {
    pub at: u64,
    pub device: usize,
    pub tab: usize,
    pub id: u64,
    /// The run that sent it (the oracle's bookkeeping; not on the wire).
    pub run: u64,
    pub payload: Payload,
}

/// Loss, latency and duplication, per thousand packets.
pub struct Weather {
    pub drop: u64,
    pub duplicate: u64,
}

#[derive(Default)]
pub struct Network {
    pub flying: Vec<Packet>,
    pub dropped: u64,
    pub duplicated: u64,
}

impl Network {
    /// Puts a packet on the wire at `now`: dropped, or delivered after a latency that is
    /// usually short and sometimes longer than the sender waits (so later packets overtake
    /// it), and sometimes twice.
    pub fn send(&mut self, rng: &mut Rng, w: &Weather, now: u64, p: Packet) {
        if rng.chance(w.drop) {
            self.dropped += 1;
            return;
        }
        let copies = if rng.chance(w.duplicate) { 2 } else { 1 };
        if copies == 2 {
            self.duplicated += 1;
        }
        for _ in 0..copies {
            let mut p = p.clone();
            p.at = now + latency(rng);
            self.flying.push(p);
        }
    }

    /// The handler restarted: the answers it had not sent are gone with it.
    pub fn lose_answers(&mut self) {
        let before = self.flying.len();
        self.flying
            .retain(|p| matches!(p.payload, Payload::Request(_)));
        self.dropped += (before - self.flying.len()) as u64;
    }

    /// A device went offline or closed: nothing reaches it any more.
    pub fn cut(&mut self, device: usize) {
        let before = self.flying.len();
        self.flying
            .retain(|p| p.device != device || matches!(p.payload, Payload::Request(_)));
        self.dropped += (before - self.flying.len()) as u64;
    }

    pub fn next_at(&self) -> Option<u64> {
        self.flying.iter().map(|p| p.at).min()
    }
}

fn latency(rng: &mut Rng) -> u64 {
    match rng.below(100) {
        0..=84 => rng.range(5, 150),
        85..=96 => rng.range(150, 2_500),
        _ => rng.range(2_500, 20_000),
    }
}
