//! What other devices do to a remote thread reaches this agent through the handler's change
//! stream (docs/design.md, "Across devices"): each notice for the thread is a live notice
//! ([`live::notice`]), as another tab's is through its `BroadcastChannel`. The stream is
//! reopened after a drop (with a reload, since notices may have been missed meanwhile); a
//! handler that offers no stream is polled.

use super::Shared;
use super::fetch::{self, AbortLink};
use super::live::{self, ListListener, ThreadListChange};
use super::store::Store;
use crate::engine::ThreadStatus;
use crate::providers::sse::SseParser;
use crate::store::RemoteStore;
use crate::store::summary::AgentStatus;
use crate::store::wire::Change;
use std::rc::Rc;
use web_sys::{AbortController, AbortSignal};

/// The wait before reopening a dropped stream, doubling up to [`MAX_WAIT_MS`]; and how
/// often a handler without a stream is polled.
const FIRST_WAIT_MS: u64 = 500;
const MAX_WAIT_MS: u64 = 10_000;
const POLL_MS: u64 = 2_000;

/// Follows the changes of `s`'s thread, if it is a remote one, until the agent is gone.
pub fn follow(s: &Shared) {
    let Some(store) = s.remote() else {
        return;
    };
    let thread = s.thread_id();
    let Ok(controller) = AbortController::new() else {
        return;
    };
    let signal = controller.signal();
    s.borrow_mut().live.remote = Some(controller);
    let weak = s.downgrade();
    let mine = thread.clone();
    let on_change = move |change: Change| {
        if change.thread_id == mine {
            if let Some(s) = weak.upgrade() {
                live::notice(&s, change.version.map(|v| v as f64));
            }
        }
    };
    let weak = s.downgrade();
    let on_open = move || {
        if let Some(s) = weak.upgrade() {
            wasm_bindgen_futures::spawn_local(async move { send_queued(&s).await });
        }
    };
    let on_change = Rc::new(on_change);
    wasm_bindgen_futures::spawn_local(stream(
        store,
        Some(thread),
        signal,
        on_change,
        Rc::new(on_open),
    ));
}

/// Sends what waits in the outbox, if anything does (the handler can be reached again).
pub async fn send_queued(s: &Shared) {
    if let Some(store) = s.remote() {
        let n = store.outbox(&s.thread_id()).await.len();
        s.set_queued(n);
        if n > 0 {
            super::outbox::flush(s).await;
        }
    }
}

/// Takes over a run another device handed on (`stored`, the status its last write left, is
/// `awaiting_device`) when this agent can do the next step (its engine sees the thread as
/// `interrupted`: it has the tool, or the model): the run goes on here by itself, as a
/// `retry()` would. Exactly once across devices as any run: the handler's lease and version
/// admit one of the devices that try; the others are refused (`busy`, `conflict`) and stop.
pub fn go_on(s: &Shared, stored: ThreadStatus) {
    let ready = {
        let g = s.borrow();
        stored == ThreadStatus::AwaitingDevice
            && !g.running
            && g.engine.status() == ThreadStatus::Interrupted
            && matches!(g.store, Store::Remote(_))
    };
    if ready {
        let s = s.clone();
        wasm_bindgen_futures::spawn_local(async move {
            let (opts, end) = super::on_its_own(&s, "live");
            let r = super::run(&s, super::Input::Retry, &opts).await;
            super::ended(end, &r);
        });
    }
}

/// Calls `listener` for every change to a thread of the remote store: its status read from
/// its record (`deleted` once it is gone). The subscription ends when `signal` fires.
pub fn follow_list(store: Rc<RemoteStore>, signal: AbortSignal, listener: ListListener) {
    let reader = store.clone();
    let on_change = move |change: Change| {
        let (store, listener) = (reader.clone(), listener.clone());
        wasm_bindgen_futures::spawn_local(async move {
            let status = match change.version {
                None => None,
                Some(_) => match store.load(&change.thread_id, 0.0).await {
                    Ok(snap) => Some(AgentStatus::from(snap.record.status())),
                    Err(_) => return,
                },
            };
            listener(&ThreadListChange {
                thread_id: change.thread_id,
                deleted: status.is_none(),
                status,
            });
        });
    };
    let on_change = Rc::new(on_change);
    wasm_bindgen_futures::spawn_local(stream(store, None, signal, on_change, Rc::new(|| {})));
}

/// Reads the change stream until `signal` fires, reopening it when it drops.
async fn stream(
    store: Rc<RemoteStore>,
    thread: Option<String>,
    signal: AbortSignal,
    on_change: Rc<dyn Fn(Change)>,
    on_open: Rc<dyn Fn()>,
) {
    let mut wait = FIRST_WAIT_MS;
    while !signal.aborted() {
        let Ok(link) = AbortLink::new(Some(&signal)) else {
            return;
        };
        match store.changes(&link).await {
            Ok(Some(mut body)) => {
                wait = FIRST_WAIT_MS;
                // Notices sent before the stream was open (or while it was down) are lost:
                // look at the thread once.
                look(&store, thread.as_deref(), &*on_change).await;
                on_open();
                let mut parser = SseParser::new();
                while let Ok(Some(bytes)) = body.next(&link).await {
                    for event in parser.push(&bytes) {
                        if let Ok(change) = serde_json::from_str::<Change>(&event.data) {
                            on_change(change);
                        }
                    }
                }
            }
            Ok(None) if thread.is_some() => {
                // No stream from this handler: poll the thread's version.
                if fetch::sleep(POLL_MS, &link).await.is_err() {
                    return;
                }
                look(&store, thread.as_deref(), &*on_change).await;
                continue;
            }
            Ok(None) | Err(_) => {}
        }
        if fetch::sleep_or_online(wait, &link).await.is_err() {
            return;
        }
        wait = (wait * 2).min(MAX_WAIT_MS);
    }
}

/// Reads `thread`'s version and reports it as a change (a view at that version ignores it).
async fn look(store: &RemoteStore, thread: Option<&str>, on_change: &dyn Fn(Change)) {
    let Some(t) = thread else { return };
    if let Ok(snap) = store.load(t, 0.0).await {
        on_change(Change {
            thread_id: t.to_owned(),
            version: Some(snap.record.version),
        });
    }
}
