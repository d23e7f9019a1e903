//! Waiting for a future, but not past an abort or a deadline: the future is polled by
//! reference, so a caller that stops waiting still holds it and may wait for it again.

use super::fetch::{clear_timeout, set_timeout};
use js_sys::Promise;
use std::future::{Future, poll_fn};
use std::pin::Pin;
use std::task::Poll;
use wasm_bindgen::prelude::*;
use wasm_bindgen_futures::JsFuture;
use web_sys::AbortSignal;

/// `Some(output)` if `f` completes before `other` does, else `None` (and `f` is left as it is).
async fn first<F: Future + Unpin, O: Future + Unpin>(
    f: &mut F,
    other: &mut O,
) -> Option<F::Output> {
    poll_fn(|cx| {
        if let Poll::Ready(v) = Pin::new(&mut *f).poll(cx) {
            return Poll::Ready(Some(v));
        }
        match Pin::new(&mut *other).poll(cx) {
            Poll::Ready(_) => Poll::Ready(None),
            Poll::Pending => Poll::Pending,
        }
    })
    .await
}

/// `f`'s output unless `signal` aborts first. What an abort interrupts settles in the
/// microtasks after it: it gets until the next task.
pub async fn before_abort<F: Future + Unpin>(f: &mut F, signal: &AbortSignal) -> Option<F::Output> {
    let aborted = Promise::new(&mut |resolve, _reject| {
        let on_abort = Closure::once_into_js(move || {
            set_timeout(&resolve, 0.0);
        });
        if signal.aborted() {
            let _ = on_abort
                .unchecked_ref::<js_sys::Function>()
                .call0(&JsValue::NULL);
        } else {
            let _ = signal.add_event_listener_with_callback("abort", on_abort.unchecked_ref());
        }
    });
    first(f, &mut JsFuture::from(aborted)).await
}

/// `f`'s output if it completes within `ms`.
pub async fn within<F: Future + Unpin>(f: &mut F, ms: f64) -> Option<F::Output> {
    let mut timer = None;
    let elapsed = Promise::new(&mut |resolve, _reject| {
        timer = Some(set_timeout(&resolve, ms));
    });
    let out = first(f, &mut JsFuture::from(elapsed)).await;
    if let Some(id) = timer {
        clear_timeout(&id);
    }
    out
}
