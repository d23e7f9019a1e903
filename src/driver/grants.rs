//! Remembered grants on the agent's side (docs/design.md, "Remembered grants"): made, listed
//! and revoked through the thread's store, and read again for the engine before a model's
//! tool calls are gated and before a run goes on with calls a grant approved, so that a
//! revocation elsewhere takes effect on every call not yet started.

use super::error::{AgentError, GrantError};
use super::{Shared, now};
use crate::engine::{DecisionKind, Grant, GrantRequest, ModelToolCall};
use serde_json::Value;

/// Makes a grant from the app's `request` (`{ tool, scope, match?, expiresIn? }`) for this
/// agent's thread, by `by` on a local store (a remote store's maker is the identity its
/// handler authorized). Refused with `invalid_grant` when malformed, or for a tool this agent
/// does not have or whose `allowedDecisions` exclude "approve": a grant never covers one.
pub async fn make(s: &Shared, mut request: Value, by: Option<String>) -> Result<Grant, AgentError> {
    let invalid = |m: String| AgentError::Grant(GrantError::Invalid, m);
    let Value::Object(fields) = &mut request else {
        return Err(invalid("invalid grant: expected an object".into()));
    };
    if fields.contains_key("threadId") {
        return Err(invalid(
            "invalid grant: unknown field `threadId` (a thread grant is for the agent's thread)"
                .into(),
        ));
    }
    let (store, thread) = {
        let g = s.borrow();
        (g.store.clone(), g.thread_id.clone())
    };
    if fields.get("scope").and_then(Value::as_str) == Some("thread") {
        fields.insert("threadId".into(), Value::String(thread.clone()));
    }
    let parsed = GrantRequest::parse(&request).map_err(invalid)?;
    {
        let g = s.borrow();
        let Some(tool) = g.engine.tools().get(parsed.tool()) else {
            return Err(invalid(format!(
                "invalid grant: this agent has no tool \"{}\"",
                parsed.tool()
            )));
        };
        if !tool.allowed_decisions.allows(DecisionKind::Approve) {
            return Err(invalid(format!(
                "invalid grant: \"{}\" does not allow \"approve\" (its allowedDecisions are {})",
                tool.name, tool.allowed_decisions
            )));
        }
    }
    let at = now();
    let id = format!(
        "grant_{:x}{:08x}",
        at as u64,
        (js_sys::Math::random() * f64::from(u32::MAX)) as u32
    );
    let text = request.to_string();
    let grant = parsed.into_grant(id, at as u64, by);
    let made = store.put_grant(grant, &text).await?;
    refresh(s).await;
    Ok(made)
}

/// The grants in force for this agent's thread now (expired ones left out).
pub async fn list(s: &Shared) -> Result<Vec<Grant>, AgentError> {
    let (store, thread) = {
        let g = s.borrow();
        (g.store.clone(), g.thread_id.clone())
    };
    let at = now() as u64;
    let mut grants = store.grants(&thread).await?;
    grants.retain(|g| g.live(at));
    Ok(grants)
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
/// that refuses), none: calls ask a human, and a call a grant approved is asked again (fail
/// closed).
pub async fn refresh(s: &Shared) {
    let grants = list(s).await.unwrap_or_default();
    let mut g = s.borrow_mut();
    let thread = g.thread_id.clone();
    g.engine.set_grants(&thread, grants);
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
