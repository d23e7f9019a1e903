//! A run's writes (`step::persist` over `RemoteStore::commit`): one commit id kept across the
//! retries of a commit whose answer never came, and the error path (reload, then the
//! refusal; results that could not be written are offered again through the outbox).

use super::super::world::Broken;
use super::driver::{Act, Admit, Cont, Sending, code_of};
use super::network::{Req, Resp};
use super::world::DevSim;
use gatehouse_agent::engine::Commit;
use gatehouse_agent::store::wire::CommitRequest;
use gatehouse_agent::store::{Snapshot, StoreError};

/// `COMMIT_RETRIES_MS` in src/store/remote.rs.
pub(crate) const COMMIT_RETRIES_MS: [u64; 3] = [250, 1_000, 3_000];

impl DevSim {
    /// `step::persist` → `RemoteStore::commit`: one commit id, kept across its retries.
    pub(crate) fn commit(&mut self, d: usize, t: usize, commit: Commit, keep: bool) {
        let (me, version) = {
            let a = self.agent(d, t);
            (a.me.clone(), a.version)
        };
        let request = CommitRequest {
            commit_id: self.commit_id(d, t),
            expected_version: version,
            owner: me,
            keep,
            commit: commit.clone(),
            lease_token: None,
        };
        let s = Sending {
            commit,
            keep,
            request,
            tries: 0,
        };
        self.send_commit(d, t, s);
    }

    /// `format!("{}:{}:{n}", writer.owner, self.prefix)` in `RemoteStore::commit`.
    pub(crate) fn commit_id(&mut self, d: usize, t: usize) -> String {
        let a = self.agent(d, t);
        a.next_commit += 1;
        format!("{}:{}:{}", a.me, a.prefix, a.next_commit)
    }

    pub(crate) fn send_commit(&mut self, d: usize, t: usize, mut s: Sending) {
        if s.tries > 0 && self.cfg.broken == Broken::NoCommitId {
            // Every attempt looks new to the handler.
            s.request.commit_id = self.commit_id(d, t);
        }
        // The lease's secret, as `RemoteStore` holds it when the request is sent.
        s.request.lease_token = self.agent(d, t).token.clone();
        let wall = self.wall(d) as f64;
        let req = Req::Commit(Box::new(s.request.clone()), wall);
        self.request(d, t, req, Cont::Commit(Box::new(s)));
    }

    pub(crate) fn commit_answer(
        &mut self,
        d: usize,
        t: usize,
        s: Sending,
        answer: Result<Resp, StoreError>,
    ) {
        let what = super::super::oracle::describe(&s.commit, s.keep);
        match answer {
            Ok(Resp::Committed(record, token)) => {
                self.agent(d, t).token = token;
                self.note(
                    Some((d, t)),
                    format!(
                        "commit v{}→v{} {what}",
                        s.request.expected_version, record.version
                    ),
                );
                self.committed(d, t, &s, &record)
            }
            Ok(_) => self.fail(
                0,
                "the handler answered a commit with something else".into(),
            ),
            Err(StoreError::Unavailable(m)) => {
                let online = self.devices[d].online;
                match COMMIT_RETRIES_MS.get(s.tries) {
                    Some(&ms) if online => {
                        self.stats.commit_retries += 1;
                        self.note(Some((d, t)), format!("commit: no answer, retry in {ms}ms"));
                        let s = Sending {
                            tries: s.tries + 1,
                            ..s
                        };
                        self.then(d, t, Act::CommitRetry(Box::new(s)), ms);
                    }
                    _ => {
                        self.note(Some((d, t)), format!("commit {what} UNAVAILABLE"));
                        self.persist_failed(d, t, s.commit, StoreError::Unavailable(m))
                    }
                }
            }
            Err(e) => {
                self.note(Some((d, t)), format!("commit {what} REFUSED: {e:?}"));
                self.persist_failed(d, t, s.commit, e)
            }
        }
    }

    /// `persist`'s success: the view follows the record; the other tabs of this device hear
    /// of it at once (`live::changed`, a `BroadcastChannel`).
    pub(crate) fn committed(
        &mut self,
        d: usize,
        t: usize,
        s: &Sending,
        record: &gatehouse_agent::store::ThreadRecord,
    ) {
        self.stats.commits += 1;
        let tail = s
            .commit
            .append
            .last()
            .or(s.commit.replace_tail.as_ref())
            .cloned()
            .or_else(|| self.agent(d, t).engine.tail().cloned());
        self.keep_copy(
            d,
            &Snapshot {
                record: record.clone(),
                tail,
            },
        );
        let a = self.agent(d, t);
        a.run.as_mut().expect("run").admission = Admit::Done;
        a.version = record.version;
        a.message_count = record.message_count;
        a.leased = s.keep;
        if let Some(h) = &mut a.history {
            if let Some(tail) = &s.commit.replace_tail {
                if let Some(last) = h.last_mut() {
                    *last = tail.clone();
                }
            }
            h.extend(s.commit.append.iter().cloned());
        }
        for o in 0..self.devices[d].tabs.len() {
            if o != t && self.devices[d].tabs[o].agent.is_some() {
                self.notice(d, o, record.version);
            }
        }
        self.drive_on(d, t);
    }

    /// `persist`'s error path: reload (the stored thread is the truth), then the refusal.
    pub(crate) fn persist_failed(&mut self, d: usize, t: usize, c: Commit, e: StoreError) {
        self.request(d, t, Req::Load, Cont::FailReload(Box::new(c), e));
    }

    pub(crate) fn fail_reload(
        &mut self,
        d: usize,
        t: usize,
        c: Commit,
        e: StoreError,
        answer: Result<Resp, StoreError>,
    ) {
        let version = self.agent(d, t).version;
        let reloaded = matches!(answer, Ok(Resp::Loaded(_)));
        let loaded = self.loaded(d, answer);
        // `step::persist`: a commit sent again whose first copy was applied, the thread having
        // moved on since (`conflict` with the version it left): it landed; the run ends with
        // the thread as it now stands.
        let landed = matches!(e, StoreError::Conflict { expected, .. } if expected == version + 1);
        if let Some(snap) = loaded {
            self.take(d, t, &snap);
        }
        if landed {
            // It landed, so it is not refused (the conflict stands when the thread could not
            // be read).
            self.note(
                Some((d, t)),
                "the commit had landed; the thread moved on".into(),
            );
            self.run_of(d, t).admission = Admit::Done;
            return match reloaded {
                true => self.drive_on(d, t),
                false => self.end_drive(d, t, Err("conflict")),
            };
        }
        let refusal = matches!(e, StoreError::Conflict { .. } | StoreError::Owned { .. });
        let code = code_of(&e);
        if self.run_of(d, t).admission == Admit::Pending {
            // The run's first write was its admission.
            if refusal {
                return self.refused(d, t, code);
            }
            self.run_of(d, t).admission = Admit::Done;
            return self.end_drive(d, t, Err(code));
        }
        if refusal || matches!(e, StoreError::Unavailable(_)) {
            // Results this run computed: offered again through the outbox (`finish`).
            let stored = self.agent(d, t).engine.state().run.clone();
            let journal = c.run.iter().flat_map(|r| r.results.iter());
            let journal = journal.map(|r| (r.call_id.clone(), r.result.clone()));
            let message = c.append.iter().filter_map(|m| m.tool_results()).flatten();
            let message = message.filter_map(|e| Some((e.call_id.clone(), e.result.clone()?)));
            let refused: Vec<(String, String)> = journal
                .chain(message)
                .filter(|(id, _)| !stored.as_ref().is_some_and(|j| j.has_result(id)))
                .collect();
            let a = self.agent(d, t);
            for r in refused {
                if !a.refused.contains(&r) {
                    a.refused.push(r);
                }
            }
        }
        self.end_drive(d, t, Err(code));
    }
}
