//! The faults: a tab or a whole browser crashes (and reopens later), a device goes offline
//! (seconds or minutes), the handler restarts (the answers it had not sent are lost, what it
//! committed stays), a device's clock jumps.

use super::world::DevSim;

impl DevSim {
    pub(crate) fn fault(&mut self) {
        let d = self.rng.index(self.devices.len());
        match self.rng.below(20) {
            0..=5 => {
                let tabs: Vec<usize> = (0..self.devices[d].tabs.len())
                    .filter(|&t| self.devices[d].tabs[t].agent.is_some())
                    .collect();
                if let Some(&t) = tabs.get(self.rng.index(tabs.len())) {
                    self.stats.crashes += 1;
                    self.note(Some((d, t)), "CRASH (the tab goes away)".into());
                    self.close(d, t);
                    if self.rng.chance(850) {
                        let at = self.real + self.rng.range(100, 60_000);
                        self.devices[d].tabs[t].reopen_at = Some(at);
                    }
                }
            }
            6..=7 if self.devices[d].up => {
                self.stats.device_crashes += 1;
                self.note(Some((d, 0)), "the whole browser CRASHES".into());
                for t in 0..self.devices[d].tabs.len() {
                    self.close(d, t);
                    self.devices[d].tabs[t].reopen_at = None;
                }
                self.devices[d].up = false;
                self.devices[d].stream = false;
                self.devices[d].stream_at = None;
                self.net.cut(d);
                self.devices[d].up_at = Some(self.real + self.rng.range(1_000, 120_000));
            }
            8..=12 if self.devices[d].online => {
                let ms = match self.rng.below(4) {
                    0 => self.rng.range(40_000, 180_000),
                    _ => self.rng.range(500, 20_000),
                };
                self.stats.offline_spells += 1;
                self.note(
                    Some((d, 0)),
                    format!("device{d} goes OFFLINE for {:.1}s", ms as f64 / 1000.0),
                );
                let dev = &mut self.devices[d];
                dev.online = false;
                dev.stream = false;
                dev.stream_at = None;
                dev.online_at = Some(self.real + ms);
                self.net.cut(d);
            }
            13..=14 => {
                self.stats.server_restarts += 1;
                let ms = self.rng.range(200, 15_000);
                self.note(
                    None,
                    format!("the handler RESTARTS ({:.1}s)", ms as f64 / 1000.0),
                );
                self.server.down_until = self.real + ms;
                self.net.lose_answers();
                for dev in &mut self.devices {
                    if dev.stream {
                        dev.stream = false;
                        dev.stream_at = Some(self.real + dev.stream_wait);
                    }
                }
            }
            15..=16 => {
                let jump = self.rng.range(1_000, 90_000) as i64;
                let jump = if self.rng.chance(500) { jump } else { -jump };
                self.devices[d].skew += jump;
                self.stats.clock_jumps += 1;
                self.note(
                    Some((d, 0)),
                    format!("device{d}'s clock jumps {:+.1}s", jump as f64 / 1000.0),
                );
            }
            _ => {}
        }
    }

    /// The page goes away: its run vanishes where it is, the browser releases its lock.
    pub(crate) fn close(&mut self, d: usize, t: usize) {
        let Some(a) = self.devices[d].tabs[t].agent.take() else {
            return;
        };
        if self.devices[d].lock == Some(a.serial) {
            self.devices[d].lock = None;
        }
        self.on_gone(d, &a);
    }

    pub(crate) fn device_up(&mut self, d: usize) {
        self.devices[d].up_at = None;
        if self.devices[d].up {
            return;
        }
        self.devices[d].up = true;
        self.devices[d].stream_at = Some(self.real + 1);
        self.note(Some((d, 0)), format!("device{d}'s browser starts again"));
        for t in 0..self.devices[d].tabs.len() {
            if self.devices[d].tabs[t].agent.is_none() {
                let at = self.rng.below(2_000);
                self.open_tab(d, t, at);
            }
        }
    }

    pub(crate) fn device_online(&mut self, d: usize) {
        let dev = &mut self.devices[d];
        dev.online_at = None;
        dev.online = true;
        // `sleep_or_online`: the stream reopens at the `online` event.
        if dev.up {
            dev.stream_at = Some(self.real + 1);
        }
        self.note(Some((d, 0)), format!("device{d} is ONLINE again"));
    }
}
