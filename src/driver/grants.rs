//! Remembered grants on the agent's side (docs/design.md, "Remembered grants"): made, listed
//! and revoked through the thread's store, and read again for the engine before a model's
//! tool calls are gated and before a run goes on with calls a grant approved, so that a
//! revocation elsewhere takes effect on every call not yet started.
//!
//! The stores keep grants as JSON text. What reads them (`kit`) is the crate's own code with
//! the `grants` feature (the Rust API); the npm package's main wasm is built without it and
//! asks the grants' own module (pkg/grants), which gatehouse.js registers and loads only when
//! a grant is made, listed, or read from a store that holds one ("The grants' module").

use super::Shared;
use super::error::{AgentError, GrantError};
#[cfg(feature = "grants")]
use super::now;
use crate::engine::{DecisionKind, ModelToolCall, NoGrants};
use serde_json::Value;

#[cfg(not(feature = "grants"))]
pub use kit::register;

/// Makes a grant from the app's `request` (`{ tool, scope, match?, expiresIn? }`) for this
/// agent's thread, by `by` on a local store (a remote store's maker is the identity its
/// handler authorized): the grant's JSON. Refused with `invalid_grant` when malformed, or for
/// a tool this agent does not have or whose `allowedDecisions` exclude "approve": a grant
/// never covers one. (The npm package's gatehouse.js does this itself, with the grants'
/// module, and calls [`put`].)
#[cfg(feature = "grants")]
pub async fn make(s: &Shared, request: Value, by: Option<String>) -> Result<String, AgentError> {
    let thread = s.borrow().thread_id.clone();
    let at = now();
    let id = format!(
        "grant_{:x}{:08x}",
        at as u64,
        (js_sys::Math::random() * f64::from(u32::MAX)) as u32
    );
    let text = request.to_string();
    // Checked by the grants' code first: a malformed request's reason is its own.
    let grant = kit::make(&request, &thread, &id, at, by)?;
    put(s, &id, &grant, &text).await
}

/// Keeps the grant `id`, `grant` its JSON, which the grants' code made from `request` (the
/// app's, as JSON text): refused with `invalid_grant` for a tool this agent does not have or
/// whose `allowedDecisions` exclude "approve". The grant kept (a remote store's is the one
/// its handler made).
pub async fn put(s: &Shared, id: &str, grant: &str, request: &str) -> Result<String, AgentError> {
    let invalid = |m: String| AgentError::Grant(GrantError::Invalid, m);
    let store = {
        let g = s.borrow();
        let made: Value = serde_json::from_str(grant).unwrap_or_default();
        let name = made["tool"].as_str().unwrap_or_default();
        let Some(tool) = g.engine.tools().get(name) else {
            return Err(invalid(format!(
                "invalid grant: this agent has no tool \"{name}\""
            )));
        };
        if !tool.allowed_decisions.allows(DecisionKind::Approve) {
            return Err(invalid(format!(
                "invalid grant: \"{}\" does not allow \"approve\" (its allowedDecisions are {})",
                tool.name, tool.allowed_decisions
            )));
        }
        g.store.clone()
    };
    let made = store.put_grant(id, grant, request).await?;
    refresh(s).await;
    Ok(made)
}

/// The grants in force for this agent's thread now (expired ones left out): their JSON.
#[cfg(feature = "grants")]
pub async fn list(s: &Shared) -> Result<Vec<String>, AgentError> {
    let thread = s.borrow().thread_id.clone();
    Ok(kit::in_force(texts(s).await?, &thread, now()))
}

/// What the thread's store keeps of grants that may apply to it, as JSON (what is in force
/// is the grants' code's to say).
pub async fn texts(s: &Shared) -> Result<Vec<String>, AgentError> {
    let (store, thread) = {
        let g = s.borrow();
        (g.store.clone(), g.thread_id.clone())
    };
    Ok(store.grant_texts(&thread).await?)
}

/// Revokes the grant `id` (`unknown_grant` when none is in force by that id).
pub async fn revoke(s: &Shared, id: &str) -> Result<(), AgentError> {
    let store = s.borrow().store.clone();
    if !store.revoke_grant(id).await? {
        return Err(AgentError::Grant(
            GrantError::Unknown,
            format!("no grant \"{id}\" is in force"),
        ));
    }
    refresh(s).await;
    Ok(())
}

/// Gives the engine the grants in force now. When they cannot be read (offline, a handler
/// that refuses, the grants' module not loaded), none: calls ask a human, and a call a grant
/// approved is asked again (fail closed). A store that holds no grant loads nothing.
pub async fn refresh(s: &Shared) {
    let thread = s.borrow().thread_id.clone();
    let texts = texts(s).await.unwrap_or_default();
    let book = if texts.is_empty() {
        None
    } else {
        kit::book(texts, &thread).await
    };
    s.borrow_mut()
        .engine
        .set_grant_book(book.unwrap_or_else(|| Box::new(NoGrants)));
}

/// Whether a grant could approve one of `calls`: a call of a tool that may ask a human
/// (`requireApproval`, or an `approvalPolicy`) and allows "approve". Only then are the grants
/// read before the calls are gated.
pub fn may_apply(s: &Shared, calls: &[ModelToolCall]) -> bool {
    let g = s.borrow();
    let tools = g.engine.tools();
    calls.iter().any(|c| {
        tools.get(&c.name).is_some_and(|t| {
            (t.require_approval == Some(true) || (t.require_approval.is_none() && t.has_policy))
                && t.allowed_decisions.allows(DecisionKind::Approve)
        })
    })
}

/// Whether the thread's run goes on with a call a grant approved that has not run yet.
pub fn pending_granted(s: &Shared) -> bool {
    let g = s.borrow();
    g.engine.state().run.as_ref().is_some_and(|r| {
        r.decisions
            .iter()
            .any(|d| d.approved && d.grant.is_some() && !r.has_result(&d.call_id))
    })
}

/// The grants' code, in this wasm (the `grants` feature).
#[cfg(feature = "grants")]
mod kit {
    use super::{AgentError, GrantError};
    use crate::engine::{GrantBook, Grants, in_force as read, in_force_json, make_json};
    use serde_json::Value;

    pub fn make(
        request: &Value,
        thread: &str,
        id: &str,
        at: f64,
        by: Option<String>,
    ) -> Result<String, AgentError> {
        make_json(request, thread, id, at as u64, by)
            .map_err(|m| AgentError::Grant(GrantError::Invalid, m))
    }

    pub fn in_force(texts: Vec<String>, thread: &str, at: f64) -> Vec<String> {
        in_force_json(texts.iter().map(String::as_str), thread, at as u64)
    }

    pub async fn book(texts: Vec<String>, thread: &str) -> Option<Box<dyn GrantBook>> {
        // Liveness is the engine's to judge, at each call's time.
        let list = read(texts.iter().map(String::as_str), thread, 0);
        Some(Box::new(Grants {
            thread: thread.to_owned(),
            list,
        }))
    }
}

/// The grants' code in its own module (pkg/grants/index.js), through the object gatehouse.js
/// registers (`setGrantsModule`): its `book` loads the module at its first call; a book's
/// `approving` and `stillApproves` answer synchronously. (`grant()` and `grants()` are
/// gatehouse.js's own there, with the module's `make` and `inForce`.)
#[cfg(not(feature = "grants"))]
mod kit {
    use crate::engine::GrantBook;
    use js_sys::{Array, Function, Reflect};
    use serde_json::{Map, Value};
    use std::cell::RefCell;
    use wasm_bindgen::{JsCast, JsValue};
    use wasm_bindgen_futures::JsFuture;

    thread_local! {
        static MODULE: RefCell<Option<JsValue>> = const { RefCell::new(None) };
    }

    /// Registers the grants' module (src/js/options.rs, `setGrantsModule`).
    pub fn register(module: JsValue) {
        MODULE.with(|m| *m.borrow_mut() = Some(module));
    }

    /// `f`, the function `name` of `on`, called with `args`; undefined when there is none or
    /// it throws.
    fn call(on: &JsValue, name: &str, args: &[JsValue]) -> JsValue {
        Reflect::get(on, &name.into())
            .ok()
            .and_then(|f| f.dyn_into::<Function>().ok())
            .and_then(|f| f.apply(on, &args.iter().collect()).ok())
            .unwrap_or_default()
    }

    /// The module's book of `thread`'s grants among `texts`; none when the module cannot be
    /// loaded (the caller fails closed).
    pub async fn book(texts: Vec<String>, thread: &str) -> Option<Box<dyn GrantBook>> {
        let module = MODULE.with(|m| m.borrow().clone())?;
        let texts: Array = texts.into_iter().map(JsValue::from).collect();
        let made = call(&module, "book", &[texts.into(), thread.into()]);
        let book = JsFuture::from(js_sys::Promise::resolve(&made)).await.ok()?;
        Some(Box::new(Book(book)))
    }

    /// A book the module made: `approving(tool, inputs, now)` is `[id, maker]` or null,
    /// `stillApproves(id, tool, inputs, now)` a boolean. Anything else approves nothing.
    struct Book(JsValue);

    impl GrantBook for Book {
        fn approving(
            &self,
            tool: &str,
            inputs: &Map<String, Value>,
            now_ms: u64,
        ) -> Option<(String, Option<String>)> {
            let inputs = Value::Object(inputs.clone()).to_string();
            let found = call(
                &self.0,
                "approving",
                &[tool.into(), inputs.into(), (now_ms as f64).into()],
            );
            let pair = found.dyn_into::<Array>().ok()?;
            Some((pair.get(0).as_string()?, pair.get(1).as_string()))
        }

        fn still_approves(
            &self,
            id: &str,
            tool: &str,
            inputs: &Map<String, Value>,
            now_ms: u64,
        ) -> bool {
            let inputs = Value::Object(inputs.clone()).to_string();
            call(
                &self.0,
                "stillApproves",
                &[
                    id.into(),
                    tool.into(),
                    inputs.into(),
                    (now_ms as f64).into(),
                ],
            )
            .as_bool()
                == Some(true)
        }
    }
}
