//! Tools for the Rust API: `Tool::new(name, description, schema, executor)` with its approval
//! settings, and `Tool::external` for tools the app answers with `submit_tool_results`.

use crate::driver::tools::{LocalFuture, Tool, ToolContext};
use crate::engine::{AllowedDecisions, PolicyVerdict, ToolSpec};
use serde_json::Value;
use std::fmt::Display;
use std::future::Future;
use std::rc::Rc;

/// A tool's failure: the text the model sees as the call's `tool_error` result (the run goes
/// on). Any error that implements `Display` converts into it, so `?` works in an executor,
/// and `Err("no such file".into())` gives one from a message.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ToolError(pub String);

impl<E: Display> From<E> for ToolError {
    fn from(e: E) -> Self {
        ToolError(e.to_string())
    }
}

/// What an approval policy says about one call.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum NeedsApproval {
    /// Run it without asking.
    Skip,
    /// Ask a human first, with this reason on the card (`approvalReason`).
    Ask(Option<String>),
}

/// `true` asks (with no reason), `false` skips, as in the JS API.
impl From<bool> for NeedsApproval {
    fn from(ask: bool) -> Self {
        if ask {
            NeedsApproval::Ask(None)
        } else {
            NeedsApproval::Skip
        }
    }
}

/// A reason asks, and is shown on the card.
impl From<&str> for NeedsApproval {
    fn from(reason: &str) -> Self {
        NeedsApproval::Ask(Some(reason.to_owned()))
    }
}

impl From<String> for NeedsApproval {
    fn from(reason: String) -> Self {
        NeedsApproval::Ask(Some(reason))
    }
}

impl From<NeedsApproval> for PolicyVerdict {
    fn from(a: NeedsApproval) -> Self {
        match a {
            NeedsApproval::Skip => PolicyVerdict::Allow,
            NeedsApproval::Ask(reason) => PolicyVerdict::Require(reason),
        }
    }
}

impl Tool {
    /// A tool that runs `execute(inputs, ctx)`: its `Ok` value is the result the model sees,
    /// its `Err` a tool error the model sees (the run goes on). With no approval setting it
    /// runs without asking: add [`Tool::require_approval`] or [`Tool::approval_policy`].
    pub fn new<F, Fut>(
        name: impl Into<String>,
        description: impl Into<String>,
        schema: Value,
        execute: F,
    ) -> Tool
    where
        F: Fn(Value, ToolContext) -> Fut + 'static,
        Fut: Future<Output = Result<Value, ToolError>> + 'static,
    {
        let execute = Rc::new(move |inputs, ctx| -> LocalFuture<Result<Value, String>> {
            let running = execute(inputs, ctx);
            Box::pin(async move { running.await.map_err(|e| e.0) })
        });
        Tool::from_parts(spec(name, description, schema), Some(execute), None)
    }

    /// A tool without an executor: the run pauses with `AwaitingToolResults` until the app
    /// hands in its output with `submit_tool_results`.
    pub fn external(
        name: impl Into<String>,
        description: impl Into<String>,
        schema: Value,
    ) -> Tool {
        Tool::from_parts(spec(name, description, schema), None, None)
    }

    /// Every call asks a human first (the flat `requireApproval: true`).
    pub fn require_approval(mut self) -> Tool {
        self.spec.require_approval = Some(true);
        self
    }

    /// Never asks, even with a policy (the flat `requireApproval: false`).
    pub fn skip_approval(mut self) -> Tool {
        self.spec.require_approval = Some(false);
        self
    }

    /// Asks `policy(inputs)` for each call: `true` or a reason asks a human, `false` runs it.
    pub fn approval_policy<P, A>(self, policy: P) -> Tool
    where
        P: Fn(&Value) -> A + 'static,
        A: Into<NeedsApproval>,
    {
        self.approval_policy_async(move |inputs, _ctx| {
            let verdict: NeedsApproval = policy(&inputs).into();
            async move { Ok(verdict) }
        })
    }

    /// An async policy. An `Err` gates the call (a policy that cannot answer fails closed).
    pub fn approval_policy_async<P, Fut, A>(mut self, policy: P) -> Tool
    where
        P: Fn(Value, ToolContext) -> Fut + 'static,
        Fut: Future<Output = Result<A, ToolError>> + 'static,
        A: Into<NeedsApproval>,
    {
        self.spec.has_policy = true;
        self.policy = Some(Rc::new(move |inputs, ctx| -> LocalFuture<PolicyVerdict> {
            let asking = policy(inputs, ctx);
            Box::pin(async move {
                match asking.await {
                    Ok(a) => a.into().into(),
                    Err(e) => PolicyVerdict::Failed(e.0),
                }
            })
        }));
        self
    }

    /// The reason shown on the card when no policy gives one (`approvalReason`).
    pub fn approval_reason(mut self, reason: impl Into<String>) -> Tool {
        self.spec.approval_reason = Some(reason.into());
        self
    }

    /// A display name (`label`).
    pub fn label(mut self, label: impl Into<String>) -> Tool {
        self.spec.label = Some(label.into());
        self
    }

    /// Runs without asking unless a thread's policy says otherwise (`autoApprove`).
    pub fn auto_approve(mut self, yes: bool) -> Tool {
        self.spec.auto_approve = yes;
        self
    }

    /// Offered to the model unless a thread's policy says otherwise (`enabled`).
    pub fn enabled(mut self, yes: bool) -> Tool {
        self.spec.enabled = yes;
        self
    }

    /// Safe to run again after a crash cut it off (`idempotent`): not re-gated then.
    pub fn idempotent(mut self, yes: bool) -> Tool {
        self.spec.idempotent = yes;
        self
    }

    /// The decisions a human may give on its calls (`allowedDecisions`).
    pub fn allowed_decisions(mut self, allowed: AllowedDecisions) -> Tool {
        self.spec.allowed_decisions = allowed;
        self
    }

    /// A pending call expires after this many milliseconds without a decision
    /// (`approvalTimeout`); `None`: never, whatever `OpenOptions::approval_timeout` says.
    pub fn approval_timeout(mut self, ms: Option<u64>) -> Tool {
        self.approval_timeout = Some(ms);
        self
    }

    /// Provider-specific keys of the tool definition (`providerOptions`), an object.
    pub fn provider_options(mut self, options: Value) -> Tool {
        self.spec.extra = match options {
            Value::Object(o) if !o.is_empty() => Value::Object(o),
            _ => Value::Array(Vec::new()),
        };
        self
    }
}

fn spec(name: impl Into<String>, description: impl Into<String>, schema: Value) -> ToolSpec {
    let mut spec = ToolSpec::new(name.into());
    let description = description.into();
    spec.description = (!description.is_empty()).then_some(description);
    spec.schema = schema;
    spec
}
