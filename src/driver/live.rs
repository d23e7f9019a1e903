//! Live threads (docs/design.md, "Live threads"): after every change to a thread, this agent's
//! listeners hear of it, and so does every other `Agent` on the same database and thread, in
//! this page or another tab, through a `BroadcastChannel` named like the thread's Web Lock. A
//! view that a notice made stale reloads itself (unless it is running: the run owns the
//! thread), so its next call works instead of failing with `conflict`. Where there is no
//! `BroadcastChannel`, only this agent's own changes are heard.

use super::{Session, Shared, reload};
use crate::js::convert::to_js;
use crate::thread::Message;
use js_sys::Function;
use serde::Serialize;
use std::cell::RefCell;
use std::rc::{Rc, Weak};
use wasm_bindgen::prelude::*;
use web_sys::{BroadcastChannel, MessageEvent};

/// This agent's listeners and its end of the thread's channel.
#[derive(Default)]
pub struct Live {
    listeners: Vec<(u32, Function)>,
    next_id: u32,
    channel: Option<BroadcastChannel>,
    _on_notice: Option<Closure<dyn FnMut(MessageEvent)>>,
    /// The status last told to the thread lists: a write that leaves it as it was (most
    /// writes of a run) tells them nothing.
    listed: Option<&'static str>,
    /// The database's thread-list channel, opened at the first status change and kept (a
    /// run changes the status twice: opening a channel each time cost more than the post).
    list: Option<BroadcastChannel>,
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
    }
}

/// What a listener receives.
#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct Change<'a> {
    thread_id: &'a str,
    status: &'static str,
    last_message: Option<&'a Message>,
}

/// What a `subscribeThreads` listener receives.
#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct ListChange<'a> {
    thread_id: &'a str,
    /// `None` when the thread was deleted.
    status: Option<&'static str>,
    deleted: bool,
}

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
fn post_list(database: &str, change: &ListChange) {
    if let Some(c) = open_channel(&list_channel(database)) {
        let _ = c.post_message(&to_js(change));
        c.close();
    }
}

/// A thread of `database` was deleted.
pub fn deleted(database: &str, thread_id: &str) {
    post_list(
        database,
        &ListChange {
            thread_id,
            status: None,
            deleted: true,
        },
    );
}

/// Calls `listener` with `{ threadId, status, deleted }` whenever a thread of `database` is
/// created, changes or is deleted, here or in another tab. Returns the unsubscribe function.
pub fn subscribe_threads(database: &str, listener: Function) -> Function {
    type Sub = (BroadcastChannel, Closure<dyn FnMut(MessageEvent)>);
    let sub: Rc<RefCell<Option<Sub>>> = Rc::new(RefCell::new(None));
    if let Some(channel) = open_channel(&list_channel(database)) {
        let on_change = Closure::<dyn FnMut(MessageEvent)>::new(move |e: MessageEvent| {
            if let Err(err) = listener.call1(&JsValue::NULL, &e.data()) {
                web_sys::console::error_2(
                    &"gatehouse: a subscribeThreads() listener threw".into(),
                    &err,
                );
            }
        });
        channel.set_onmessage(Some(on_change.as_ref().unchecked_ref()));
        *sub.borrow_mut() = Some((channel, on_change));
    }
    let unsubscribe = Closure::<dyn FnMut()>::new(move || {
        if let Some((channel, _)) = sub.borrow_mut().take() {
            channel.set_onmessage(None);
            channel.close();
        }
    });
    unsubscribe.into_js_value().unchecked_into()
}

/// Opens the thread's channel for `s` (named `name`), if the platform has one.
pub fn connect(s: &Shared, name: &str) {
    let Some(channel) = open_channel(name) else {
        return;
    };
    let weak: Weak<RefCell<Session>> = Rc::downgrade(s);
    let on_notice = Closure::<dyn FnMut(MessageEvent)>::new(move |e: MessageEvent| {
        let Some(s) = weak.upgrade() else { return };
        let version = e.data().as_f64();
        let stale = {
            let g = s.borrow();
            !g.running && version.is_none_or(|v| v != g.version as f64)
        };
        if stale {
            wasm_bindgen_futures::spawn_local(async move {
                if reload(&s).await.is_ok() {
                    tell(&s);
                }
            });
        }
    });
    channel.set_onmessage(Some(on_notice.as_ref().unchecked_ref()));
    let mut g = s.borrow_mut();
    g.live.channel = Some(channel);
    g.live._on_notice = Some(on_notice);
}

/// Adds a listener; returns the function that removes it.
pub fn subscribe(s: &Shared, listener: Function) -> Function {
    let id = {
        let mut g = s.borrow_mut();
        g.live.next_id += 1;
        let id = g.live.next_id;
        g.live.listeners.push((id, listener));
        id
    };
    let weak = Rc::downgrade(s);
    let unsubscribe = Closure::<dyn FnMut()>::new(move || {
        if let Some(s) = weak.upgrade() {
            s.borrow_mut().live.listeners.retain(|(i, _)| *i != id);
        }
    });
    unsubscribe.into_js_value().unchecked_into()
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
                let _ = list.post_message(&to_js(&ListChange {
                    thread_id: &g.thread_id,
                    status: Some(status),
                    deleted: false,
                }));
            }
        }
    }
    tell(s);
}

/// Calls this agent's listeners with the thread's status and last message. A listener that
/// throws does not stop the others (it is reported on the console).
fn tell(s: &Shared) {
    let (listeners, change) = {
        let g = s.borrow();
        if g.live.listeners.is_empty() {
            return;
        }
        let change = to_js(&Change {
            thread_id: &g.thread_id,
            status: super::status(&g),
            last_message: g.engine.tail(),
        });
        let listeners: Vec<Function> = g.live.listeners.iter().map(|(_, f)| f.clone()).collect();
        (listeners, change)
    };
    for f in listeners {
        if let Err(e) = f.call1(&JsValue::NULL, &change) {
            web_sys::console::error_2(&"gatehouse: a subscribe() listener threw".into(), &e);
        }
    }
}
