//! Live threads (docs/design.md, "Live threads"): after every change to a thread, this agent's
//! listeners hear of it, and so does every other `Agent` on the same database and thread, in
//! this page or another tab, through a `BroadcastChannel` named like the thread's Web Lock. A
//! view that a notice made stale reloads itself (unless it is running: the run owns the
//! thread), so its next call works instead of failing with `conflict`. Where there is no
//! `BroadcastChannel`, only this agent's own changes are heard.

use super::{Session, Shared, reload};
use crate::convert::{from_js, to_js};
use crate::store::summary::AgentStatus;
use crate::thread::Message;
use js_sys::Function;
use serde::{Deserialize, Serialize};
use std::cell::RefCell;
use std::rc::Rc;
use wasm_bindgen::prelude::*;
use web_sys::{BroadcastChannel, MessageEvent};

/// This agent's listeners and its end of the thread's channel.
#[derive(Default)]
pub struct Live {
    listeners: Vec<(u32, Listener)>,
    next_id: u32,
    channel: Option<BroadcastChannel>,
    _on_notice: Option<Closure<dyn FnMut(MessageEvent)>>,
    /// The status last told to the thread lists: a write that leaves it as it was (most
    /// writes of a run) tells them nothing.
    listed: Option<AgentStatus>,
    /// The database's thread-list channel, opened at the first status change and kept (a
    /// run changes the status twice: opening a channel each time cost more than the post).
    list: Option<BroadcastChannel>,
    /// A remote thread's change stream (`changes::follow`): aborted with the agent.
    pub(super) remote: Option<web_sys::AbortController>,
    /// The latest version a notice named while a call of this agent was running (infinite:
    /// one that named none), not acted on then: the call's end reads the thread again if its
    /// view is not at it (`admission::RunningGuard`). A decision sent as an intent holds no
    /// lease, so another device's decision may land meanwhile; without this the view kept
    /// the older thread and the run never went on here.
    pub(super) missed: Option<f64>,
}

impl Drop for Live {
    fn drop(&mut self) {
        if let Some(c) = self.channel.take() {
            c.set_onmessage(None);
            c.close();
        }
        if let Some(c) = self.list.take() {
            c.close();
        }
        if let Some(c) = self.remote.take() {
            c.abort();
        }
    }
}

/// What a `subscribe` listener hears after a change to the thread.
#[derive(Serialize, Debug, Clone, PartialEq)]
#[serde(rename_all = "camelCase")]
pub struct ThreadChange {
    pub thread_id: String,
    /// As `status()` says it now.
    pub status: AgentStatus,
    pub last_message: Option<Message>,
}

/// A thread's listener.
pub type Listener = Rc<dyn Fn(&ThreadChange)>;

/// What a thread-list listener hears: a thread of the database was created, changed status
/// or was deleted (`status: None`).
#[derive(Serialize, Deserialize, Debug, Clone, PartialEq)]
#[serde(rename_all = "camelCase")]
pub struct ThreadListChange {
    pub thread_id: String,
    pub status: Option<AgentStatus>,
    pub deleted: bool,
}

/// A thread-list listener.
pub type ListListener = Rc<dyn Fn(&ThreadListChange)>;

/// The channel of the thread lists of database `database`.
fn list_channel(database: &str) -> String {
    format!("gatehouse:{database}")
}

/// A new channel named `name`, if the platform has them. Node keeps a process alive while a
/// channel is open: not for these.
fn open_channel(name: &str) -> Option<BroadcastChannel> {
    let global = js_sys::global();
    if !js_sys::Reflect::has(&global, &"BroadcastChannel".into()).unwrap_or(false) {
        return None;
    }
    let channel = BroadcastChannel::new(name).ok()?;
    if let Ok(unref) = js_sys::Reflect::get(&channel, &"unref".into()) {
        if let Some(unref) = unref.dyn_ref::<Function>() {
            let _ = unref.call0(&channel);
        }
    }
    Some(channel)
}

/// Tells the thread lists of `database` (in this page and other tabs) that a thread changed.
fn post_list(database: &str, change: &ThreadListChange) {
    if let Some(c) = open_channel(&list_channel(database)) {
        let _ = c.post_message(&to_js(change));
        c.close();
    }
}

/// A thread of `database` was deleted.
pub fn deleted(database: &str, thread_id: &str) {
    post_list(
        database,
        &ThreadListChange {
            thread_id: thread_id.to_owned(),
            status: None,
            deleted: true,
        },
    );
}

/// A thread-list subscription: [`ThreadsSubscription::cancel`] ends it (dropping it does not).
#[derive(Clone)]
pub struct ThreadsSubscription(Rc<RefCell<Option<ListSub>>>);

enum ListSub {
    Channel(BroadcastChannel),
    /// A remote store's change stream (`changes::follow_list`).
    Remote(web_sys::AbortController),
}

impl ThreadsSubscription {
    pub fn cancel(&self) {
        match self.0.borrow_mut().take() {
            Some(ListSub::Channel(channel)) => {
                channel.set_onmessage(None);
                channel.close();
            }
            Some(ListSub::Remote(c)) => c.abort(),
            None => {}
        }
    }

    /// A subscription to a remote store's changes, ended by aborting `controller`.
    pub fn remote(controller: web_sys::AbortController) -> ThreadsSubscription {
        ThreadsSubscription(Rc::new(RefCell::new(Some(ListSub::Remote(controller)))))
    }
}

/// Calls `listener` whenever a thread of `database` is created, changes status or is
/// deleted, here or in another tab (nothing where there is no `BroadcastChannel`).
pub fn subscribe_threads(database: &str, listener: ListListener) -> ThreadsSubscription {
    let sub = ThreadsSubscription(Rc::new(RefCell::new(None)));
    if let Some(channel) = open_channel(&list_channel(database)) {
        let on_change = Closure::<dyn FnMut(MessageEvent)>::new(move |e: MessageEvent| {
            if let Ok(change) = from_js::<ThreadListChange>(e.data()) {
                listener(&change);
            }
        });
        // The handler belongs to the channel (JS keeps it while the channel may call it), not
        // to this subscription: one dropped without `cancel` (a JS app that ignored the
        // unsubscribe function, which the garbage collector then frees) goes on listening,
        // as documented, instead of leaving the channel calling a freed closure.
        channel.set_onmessage(Some(on_change.into_js_value().unchecked_ref()));
        *sub.0.borrow_mut() = Some(ListSub::Channel(channel));
    }
    sub
}

/// Opens the thread's channel for `s` (named `name`), if the platform has one.
pub fn connect(s: &Shared, name: &str) {
    let Some(channel) = open_channel(name) else {
        return;
    };
    let weak = s.downgrade();
    let on_notice = Closure::<dyn FnMut(MessageEvent)>::new(move |e: MessageEvent| {
        if let Some(s) = weak.upgrade() {
            notice(&s, e.data().as_f64());
        }
    });
    channel.set_onmessage(Some(on_notice.as_ref().unchecked_ref()));
    let mut g = s.borrow_mut();
    g.live.channel = Some(channel);
    g.live._on_notice = Some(on_notice);
}

/// Another agent changed the thread to `version` (`None`: it may have): a view that is not
/// running and does not stand at that version reloads, then tells its listeners.
pub fn notice(s: &Shared, version: Option<f64>) {
    let stale = {
        let mut g = s.borrow_mut();
        let changed = version.is_none_or(|v| v != g.version as f64);
        if changed && g.running {
            let v = version.unwrap_or(f64::INFINITY);
            g.live.missed = Some(g.live.missed.map_or(v, |m| m.max(v)));
        }
        !g.running && changed
    };
    if stale {
        let s = s.clone();
        wasm_bindgen_futures::spawn_local(async move {
            if reload(&s).await.is_ok() {
                tell(&s);
            }
        });
    }
}

/// Adds a listener; returns its id for [`unsubscribe`].
pub fn subscribe(s: &Shared, listener: Listener) -> u32 {
    let mut g = s.borrow_mut();
    g.live.next_id += 1;
    let id = g.live.next_id;
    g.live.listeners.push((id, listener));
    id
}

/// Removes the listener `id` (nothing if it is gone already).
pub fn unsubscribe(s: &mut Session, id: u32) {
    s.live.listeners.retain(|(i, _)| *i != id);
}

/// The thread changed here: tell this agent's listeners and the other agents on it.
pub fn changed(s: &Shared) {
    let notice = {
        let g = s.borrow();
        g.live.channel.clone().map(|c| (c, g.version as f64))
    };
    if let Some((channel, version)) = notice {
        let _ = channel.post_message(&JsValue::from_f64(version));
        let mut g = s.borrow_mut();
        let status = super::status(&g);
        if g.live.listed != Some(status) {
            g.live.listed = Some(status);
            if g.live.list.is_none() {
                g.live.list = open_channel(&list_channel(g.store.name()));
            }
            if let Some(list) = &g.live.list {
                let _ = list.post_message(&to_js(&ThreadListChange {
                    thread_id: g.thread_id.clone(),
                    status: Some(status),
                    deleted: false,
                }));
            }
        }
    }
    tell(s);
}

/// Something only this agent knows changed (its outbox): tell its listeners.
pub fn changed_here(s: &Shared) {
    tell(s);
}

/// Calls this agent's listeners with the thread's status and last message.
/// No borrow of the session is held while they run: a listener may call the agent.
fn tell(s: &Shared) {
    let (listeners, change) = {
        let g = s.borrow();
        if g.live.listeners.is_empty() {
            return;
        }
        let listeners: Vec<Listener> = g.live.listeners.iter().map(|(_, f)| f.clone()).collect();
        let change = ThreadChange {
            thread_id: g.thread_id.clone(),
            status: super::status(&g),
            last_message: g.engine.tail().cloned(),
        };
        (listeners, change)
    };
    for f in listeners {
        f(&change);
    }
}
