//! Message ids: `"msg_"` + a positive decimal integer below 2^63, time-ordered and unique per
//! thread. Layout (as Neuron's snowflake, with our own epoch so the ids last until 2093):
//! `(ms since 2024-01-01) << 22 | machine (10 bits) << 12 | sequence (12 bits)`.
//! The clock and the machine bits come from the caller; nothing here reads the time.

use serde::{Deserialize, Serialize};
use std::fmt;

/// 2024-01-01T00:00:00Z in Unix milliseconds.
pub const ID_EPOCH_MS: u64 = 1_704_067_200_000;
const MACHINE_BITS: u32 = 10;
const SEQ_BITS: u32 = 12;

#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(transparent)]
pub struct MessageId(String);

impl MessageId {
    pub fn from_number(n: u64) -> Self {
        MessageId(format!("msg_{n}"))
    }

    /// Any string another writer used; ids are opaque when read back.
    pub fn from_raw(s: impl Into<String>) -> Self {
        MessageId(s.into())
    }

    pub fn as_str(&self) -> &str {
        &self.0
    }

    /// The numeric part, when the id has our format.
    pub fn number(&self) -> Option<u64> {
        self.0.strip_prefix("msg_")?.parse().ok()
    }
}

impl fmt::Display for MessageId {
    fn fmt(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str(&self.0)
    }
}

/// Hands out strictly increasing ids. Seeded with the thread's newest id so that ids stay
/// ordered even when the clock goes backwards or another tab wrote a later one.
#[derive(Debug, Clone)]
pub struct IdGen {
    machine: u64,
    last: u64,
}

impl IdGen {
    /// `machine` is any random number from the caller (only 10 bits are used).
    pub fn new(machine: u64) -> Self {
        IdGen {
            machine: machine & ((1 << MACHINE_BITS) - 1),
            last: 0,
        }
    }

    /// Never hand out an id at or below this one. A number of 2^63 or more is not an id of our
    /// format (and none could follow `u64::MAX`): such an id is not ordered against.
    pub fn observe(&mut self, id: &MessageId) {
        if let Some(n) = id.number().filter(|&n| n < 1 << 63) {
            self.last = self.last.max(n);
        }
    }

    pub fn next_number(&mut self, now_ms: u64) -> u64 {
        let ms = now_ms.saturating_sub(ID_EPOCH_MS) & ((1 << 41) - 1);
        let candidate = (ms << (MACHINE_BITS + SEQ_BITS)) | (self.machine << SEQ_BITS);
        let n = if candidate > self.last {
            candidate
        } else {
            self.after_last()
        };
        self.last = n;
        n
    }

    /// The first number above `last` that carries this generator's machine bits. A clock
    /// behind the newest id seen (another device's clock is ahead) must not make every such
    /// generator hand out `last + 1`: two devices would give two messages one id, and a
    /// queued message whose id another device used is taken as sent (`driver::outbox`).
    fn after_last(&self) -> u64 {
        let ms_unit = 1u64 << (MACHINE_BITS + SEQ_BITS);
        let mine = (self.last & !(ms_unit - 1)) | (self.machine << SEQ_BITS);
        if mine > self.last {
            mine
        } else if self.last < mine + (1 << SEQ_BITS) - 1 || mine + ms_unit >= 1 << 63 {
            // Room left in this generator's block (or no later block below 2^63).
            self.last + 1
        } else {
            mine + ms_unit
        }
    }

    pub fn next(&mut self, now_ms: u64) -> MessageId {
        MessageId::from_number(self.next_number(now_ms))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ids_are_ordered_and_below_2_pow_63() {
        let mut g = IdGen::new(7);
        let now = 1_795_000_000_000; // 2026
        let a = g.next_number(now);
        let b = g.next_number(now);
        let c = g.next_number(now - 10_000); // clock went back
        assert!(a < b && b < c);
        assert!(c < (1u64 << 63));
        // Far future (2090) still fits.
        assert!(g.next_number(3_800_000_000_000) < (1u64 << 63));
        assert_eq!(MessageId::from_number(a).number(), Some(a));
    }

    /// Found by the device simulation (tests/simulation/devices): two devices whose clocks are
    /// behind the thread's newest id both answered `last + 1`, so a phone's queued message and
    /// another phone's stored one had one id, and the outbox dropped the queued one as sent.
    #[test]
    fn generators_behind_the_same_id_still_make_different_ids() {
        let newest = MessageId::from_number(IdGen::new(5).next_number(1_795_000_060_000));
        let behind = 1_795_000_000_000; // a minute earlier
        let mut ids = std::collections::BTreeSet::new();
        for machine in [0, 1, 5, 6, 1023] {
            let mut g = IdGen::new(machine);
            g.observe(&newest);
            for _ in 0..5_000 {
                let n = g.next_number(behind);
                assert!(n > newest.number().unwrap() && n < 1 << 63);
                assert!(ids.insert(n), "machine {machine} made {n} again");
            }
        }
    }

    #[test]
    fn observe_keeps_ids_after_a_later_writer() {
        let mut g = IdGen::new(1);
        let foreign = MessageId::from_number(u64::MAX >> 2);
        g.observe(&foreign);
        assert!(g.next_number(1_795_000_000_000) > foreign.number().unwrap());
    }
}
