//! A decision on a remote thread (`src/driver/decide.rs` over `RemoteStore::decide`): checked
//! here with the engine's rules first (a malformed or stale decision sends nothing), then sent
//! as an intent to `/decide` with one commit id kept across its retries, and applied by the
//! handler as the signed-in user. No Web Lock, no lease: the tab takes the thread the handler
//! wrote, and goes on with a `retry()` run when it can do the next step here.

use super::driver::{Act, Cont, RunInput, code_of};
use super::network::{Req, Resp};
use super::persist::COMMIT_RETRIES_MS;
use super::world::DevSim;
use gatehouse_agent::engine::{Decisions, ThreadStatus};
use gatehouse_agent::store::StoreError;
use gatehouse_agent::store::authority::DecideRequest;
use gatehouse_agent::store::wire::engine_refusal;

pub(crate) struct Deciding {
    pub request: DecideRequest,
    pub tries: usize,
}

impl DevSim {
    /// `decide::decide`.
    pub(crate) fn decide(&mut self, d: usize, t: usize) {
        let Some(RunInput::Decide(v)) = self.run_of(d, t).input.take() else {
            return self.fail(0, "decide without decisions".into());
        };
        let wall = self.wall(d);
        let checked = {
            let e = &mut self.agent(d, t).engine;
            let before = e.state().clone();
            let r = Decisions::from_json(&v).and_then(|x| e.submit_decisions(&x, wall, None));
            e.reset(before);
            r
        };
        if let Err(e) = checked {
            self.stats.engine_refusals += 1;
            self.note(Some((d, t)), format!("engine refuses: {}", e.code()));
            return self.end_undriven(d, t, Err(e.code()));
        }
        let a = self.agent(d, t);
        let resume_token = a
            .engine
            .tail()
            .and_then(|m| m.resume_token())
            .map(str::to_owned);
        a.next_commit += 1;
        let request = DecideRequest {
            commit_id: format!("decide:{}:{}", a.prefix, a.next_commit),
            decisions: v,
            resume_token,
        };
        self.send_decide(d, t, Deciding { request, tries: 0 });
    }

    pub(crate) fn send_decide(&mut self, d: usize, t: usize, s: Deciding) {
        let req = Req::Decide(Box::new(s.request.clone()));
        self.request(d, t, req, Cont::Decide(Box::new(s)));
    }

    pub(crate) fn decide_answer(
        &mut self,
        d: usize,
        t: usize,
        s: Deciding,
        answer: Result<Resp, StoreError>,
    ) {
        match answer {
            Ok(Resp::Decided(snap)) => {
                self.note(Some((d, t)), format!("decided: v{}", snap.record.version));
                self.keep_copy(d, &snap);
                self.take(d, t, &snap);
                for o in 0..self.devices[d].tabs.len() {
                    if o != t && self.devices[d].tabs[o].agent.is_some() {
                        self.notice(d, o, snap.record.version);
                    }
                }
                if self.agent(d, t).engine.status() == ThreadStatus::Interrupted {
                    // This device has what the next step needs: `run_input(Retry)`.
                    let run = self.run_of(d, t);
                    run.input = Some(RunInput::Retry);
                    run.label = format!("{} then retry", run.label);
                    return self.then(d, t, Act::Lock, 0);
                }
                self.end_undriven(d, t, Ok(()))
            }
            Ok(_) => self.fail(
                0,
                "the handler answered a decision with something else".into(),
            ),
            Err(StoreError::Unavailable(_)) => match COMMIT_RETRIES_MS.get(s.tries) {
                Some(&ms) if self.devices[d].online => {
                    self.stats.commit_retries += 1;
                    let s = Deciding {
                        tries: s.tries + 1,
                        ..s
                    };
                    self.then(d, t, Act::DecideRetry(Box::new(s)), ms);
                }
                _ => self.end_undriven(d, t, Err("unavailable")),
            },
            Err(e) => {
                let code = engine_refusal(&e).map_or_else(|| code_of(&e), |x| x.code());
                self.note(Some((d, t)), format!("decision REFUSED: {code}"));
                self.request(d, t, Req::Load, Cont::FinishReload(Err(code)))
            }
        }
    }
}
