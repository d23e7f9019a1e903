//! The JS `Agent`: a binding over the Rust API's [`crate::agent::Agent`]. Every method has
//! one shape: its JS arguments are read into a params struct (`js::options`) or the Rust
//! API's types, the Rust API does the work, and its result goes back through `to_js`; errors
//! become `GatehouseError`s in `js::error`.

use crate::agent::{self, Input, Page};
use crate::convert::{json_value, parse_json, to_js};
use crate::driver::error::AgentError;
#[cfg(feature = "grants")]
use crate::driver::error::GrantError;
use crate::engine::{Decisions, EngineError, PolicyChange, ToolResults};
use crate::js::error::{invalid_config, to_js_error};
use crate::js::functions::listener;
use crate::js::options::{
    self, HandleParams, MessagesParams, PolicyParams, strict, strict_or_default,
};
use crate::js::results::{ByName, HandleConflict};
use crate::store::StoreError;
use crate::store::page::Rows;
use js_sys::Promise;
use std::future::Future;
use std::pin::Pin;
use wasm_bindgen::prelude::*;

#[wasm_bindgen]
pub struct Agent {
    a: agent::Agent,
}

fn err(e: AgentError) -> JsValue {
    to_js_error(&e)
}

/// The Promise of every async method. Each method clones what it needs and returns at once,
/// so no borrow of the `Agent` outlives the call (a `free()` meanwhile drops only its handle),
/// and one boxed future type means one copy of wasm-bindgen-futures' promise glue for all of
/// them instead of one per method.
fn promise(f: impl Future<Output = Result<JsValue, JsValue>> + 'static) -> Promise {
    let f: Pin<Box<dyn Future<Output = Result<JsValue, JsValue>>>> = Box::pin(f);
    wasm_bindgen_futures::future_to_promise(f)
}

#[wasm_bindgen]
impl Agent {
    /// Opens (or creates) a thread: reads its record and tail, and re-gates a tool call whose
    /// execution was cut off by a closed page.
    #[wasm_bindgen(js_name = open, unchecked_return_type = "Promise<Agent>")]
    pub fn open(
        #[wasm_bindgen(unchecked_param_type = "AgentOptions")] options: JsValue,
    ) -> Promise {
        promise(async move {
            let o = options::parse(options).map_err(err)?;
            let a = agent::Agent::open(o).await.map_err(err)?;
            Ok(Agent { a }.into())
        })
    }

    #[wasm_bindgen(getter, js_name = threadId)]
    pub fn thread_id(&self) -> String {
        self.a.thread_id()
    }

    /// How many messages the thread has.
    #[wasm_bindgen(getter, js_name = messageCount)]
    pub fn message_count(&self) -> f64 {
        self.a.message_count() as f64
    }

    /// Sends a user message and runs until the model answers or a tool call waits.
    #[wasm_bindgen(unchecked_return_type = "Promise<AgentState>")]
    pub fn chat(
        &self,
        #[wasm_bindgen(unchecked_param_type = "string")] message: JsValue,
        #[wasm_bindgen(unchecked_optional_param_type = "RunOptions")] options: JsValue,
    ) -> Promise {
        let input = message
            .as_string()
            .map(Input::Message)
            .ok_or_else(|| invalid_config("chat(message): the message must be a string"));
        self.run(input, options)
    }

    /// Decisions keyed by callId: `"approve"`, `"reject"`, `["reject", "reason"]` or `["edit",
    /// inputs]` (approve with these inputs instead of the model's).
    #[wasm_bindgen(js_name = submitDecisions, unchecked_return_type = "Promise<AgentState>")]
    pub fn submit_decisions(
        &self,
        #[wasm_bindgen(unchecked_param_type = "Decisions")] decisions: JsValue,
        #[wasm_bindgen(unchecked_optional_param_type = "RunOptions")] options: JsValue,
    ) -> Promise {
        self.run(decisions_input(&decisions), options)
    }

    /// Outputs of external tools (tools without `execute`), keyed by callId.
    #[wasm_bindgen(js_name = submitToolResults, unchecked_return_type = "Promise<AgentState>")]
    pub fn submit_tool_results(
        &self,
        #[wasm_bindgen(unchecked_param_type = "Record<string, unknown>")] results: JsValue,
        #[wasm_bindgen(unchecked_optional_param_type = "RunOptions")] options: JsValue,
    ) -> Promise {
        self.run(tool_results_input(&results), options)
    }

    /// Continues an unanswered turn (after a network error) or an interrupted run, without
    /// adding a message.
    #[wasm_bindgen(unchecked_return_type = "Promise<AgentState>")]
    pub fn retry(
        &self,
        #[wasm_bindgen(unchecked_optional_param_type = "RunOptions")] options: JsValue,
    ) -> Promise {
        self.run(Ok(Input::Retry), options)
    }

    /// The documented one-endpoint form: `{ message }`, `{ decisions }` or `{ toolResults }`.
    /// A conflict resolves to `{ status: "conflict", error }` instead of throwing.
    #[wasm_bindgen(unchecked_return_type = "Promise<AgentState | ConflictState>")]
    pub fn handle(
        &self,
        #[wasm_bindgen(unchecked_param_type = "HandleBody")] body: JsValue,
        #[wasm_bindgen(unchecked_optional_param_type = "RunOptions")] options: JsValue,
    ) -> Promise {
        let a = self.a.clone();
        promise(async move {
            let body: HandleParams =
                strict(body).map_err(|e| invalid_config(format!("handle(body): {e}")))?;
            let input = if let Some(d) = body.decisions {
                decisions_input(&d)?
            } else if let Some(r) = body.tool_results {
                tool_results_input(&r)?
            } else if let Some(text) = body.message {
                Input::Message(text)
            } else {
                return Err(invalid_config(
                    "handle(body): body must have `message` (a non-empty string), `decisions` or `toolResults`",
                ));
            };
            let mut opts = options::run_options(options).map_err(err)?;
            opts.by = body.by.or(opts.by);
            match a.run(input, &opts).await {
                Ok(state) => Ok(to_js(&state)),
                Err(e) if e.is_conflict() => Ok(to_js(&HandleConflict::Conflict {
                    error: e.to_string(),
                })),
                Err(e) => Err(err(e)),
            }
        })
    }

    /// Entries of the last message whose approval is pending (synchronous: no I/O).
    #[wasm_bindgen(js_name = pendingTools, unchecked_return_type = "PendingToolEntry[]")]
    pub fn pending_tools(&self) -> JsValue {
        // Each entry as the tail holds it, with the approver rules' progress on it.
        let entries = self.a.pending_tools();
        let out = to_js(&entries);
        for (i, e) in entries.iter().enumerate() {
            let p = self.a.approval_progress(&e.call_id);
            let o = js_sys::Reflect::get_u32(&out, i as u32).unwrap_or_default();
            let set = |k: &str, v: JsValue| {
                let _ = js_sys::Reflect::set(&o, &k.into(), &v);
            };
            set("approvals", to_js(&p.approvals));
            set("needed", p.needed.into());
            set("blocked", p.blocked.map_or(JsValue::NULL, |b| b.into()));
        }
        out
    }

    /// External calls waiting for `submitToolResults`.
    #[wasm_bindgen(js_name = pendingToolResults, unchecked_return_type = "ToolEntry[]")]
    pub fn pending_tool_results(&self) -> JsValue {
        to_js(&self.a.pending_tool_results())
    }

    /// `"idle" | "awaiting_approval" | "awaiting_tool_results" | "interrupted" | "running"`.
    #[wasm_bindgen(unchecked_return_type = "ThreadStatus")]
    pub fn status(&self) -> String {
        self.a.status().as_str().to_owned()
    }

    /// For the package's telemetry (pkg-template/telemetry.js): `hook(kind, value)` hears the
    /// runs the agent starts by itself, with kind "start" (value: why), "event" (an event)
    /// and "end" (the error, or null). `null` stops it.
    /// For the package entry (gatehouse.js): `hook(callId, server, signal, question,
    /// withdrawn)` hears the questions MCP servers ask while their calls run (the question as
    /// JSON text, `withdrawn` an AbortSignal) and resolves to the answer's `ElicitResult` as
    /// JSON text (docs/design.md, "MCP elicitation"). `null` refuses them.
    #[cfg(not(feature = "mcp"))]
    #[wasm_bindgen(js_name = setElicitationHook, skip_typescript)]
    pub fn set_elicitation_hook(&self, hook: Option<js_sys::Function>) {
        self.a.set_elicitation_hook(hook);
    }

    /// For the package entry: why a question's answer (`content`, JSON text) does not fit its
    /// form (`schema`, JSON text), or `undefined` when it does. The schema validator is this
    /// wasm's, so the MCP client's module need not carry one (docs/design.md, "MCP
    /// elicitation").
    #[cfg(not(feature = "mcp"))]
    #[wasm_bindgen(js_name = checkJson, skip_typescript)]
    pub fn check_json(schema: &str, content: &str) -> Option<String> {
        crate::mcp::elicit::fits_text(schema, content).err()
    }

    #[wasm_bindgen(js_name = setBackgroundHook, skip_typescript)]
    pub fn set_background_hook(&self, hook: Option<js_sys::Function>) {
        use crate::driver::events::BackgroundHook;
        use std::rc::Rc;
        let hook = hook.map(|f| {
            let call = move |kind: &str, value: &JsValue| {
                if let Err(e) = f.call2(&JsValue::NULL, &kind.into(), value) {
                    web_sys::console::warn_2(&"gatehouse: the background hook threw".into(), &e);
                }
            };
            let call = Rc::new(call);
            let (a, b, c) = (call.clone(), call.clone(), call);
            BackgroundHook {
                start: Rc::new(move |why: &str| a("start", &why.into())),
                events: Rc::new(move |e: &crate::event::Event| b("event", &to_js(e))),
                end: Rc::new(move |e: Option<&AgentError>| {
                    c("end", &e.map_or(JsValue::NULL, to_js_error))
                }),
            }
        });
        self.a.set_background_hook(hook);
    }

    /// Calls `listener` after every change to the thread — by this agent, by another `Agent`
    /// on it in this page, or by another tab — with its status and last message. Returns the
    /// function that unsubscribes.
    #[wasm_bindgen(unchecked_return_type = "() => void")]
    pub fn subscribe(
        &self,
        #[wasm_bindgen(unchecked_param_type = "(change: ThreadChange) => void")]
        f: js_sys::Function,
    ) -> js_sys::Function {
        let sub = self.a.subscribe(listener(f, "subscribe()"));
        Closure::<dyn FnMut()>::new(move || sub.cancel())
            .into_js_value()
            .unchecked_into()
    }

    #[wasm_bindgen(js_name = lastMessage, unchecked_return_type = "Message | null")]
    pub fn last_message(&self) -> JsValue {
        to_js(&self.a.last_message())
    }

    /// The thread, oldest first. With `{ limit, beforeIndex }` one page of it (indexes are
    /// 0-based positions in the thread), read without loading the rest.
    #[wasm_bindgen(unchecked_return_type = "Promise<Message[]>")]
    pub fn messages(
        &self,
        #[wasm_bindgen(unchecked_optional_param_type = "MessagesOptions")] options: JsValue,
    ) -> Promise {
        self.rows(options, Rows::Messages)
    }

    /// The thread's audit trail: one record per gated call, oldest first; paged like
    /// `messages()`. Read from the store, so it includes what other tabs decided.
    #[wasm_bindgen(unchecked_return_type = "Promise<AuditRecord[]>")]
    pub fn audit(
        &self,
        #[wasm_bindgen(unchecked_optional_param_type = "MessagesOptions")] options: JsValue,
    ) -> Promise {
        self.rows(options, Rows::Audit)
    }

    /// Sets this thread's policy for one tool: `{ enabled?, autoApprove? }`; `null` resets a
    /// field to the tool's default. Persisted with the thread, inherited by no other thread.
    #[wasm_bindgen(js_name = setToolPolicy, unchecked_return_type = "Promise<void>")]
    pub fn set_tool_policy(
        &self,
        name: String,
        #[wasm_bindgen(unchecked_param_type = "ToolPolicyUpdate")] policy: JsValue,
    ) -> Promise {
        let a = self.a.clone();
        promise(async move {
            let change: PolicyParams =
                strict(policy).map_err(|e| invalid_config(format!("setToolPolicy: {e}")))?;
            let change = PolicyChange {
                enabled: change.enabled,
                auto_approve: change.auto_approve,
            };
            a.set_tool_policy(&name, change).await.map_err(err)?;
            Ok(JsValue::UNDEFINED)
        })
    }

    /// Remembers "always allow" for a tool: `{ tool, scope: "thread" | "user" | "app", match?,
    /// expiresIn? }`; `{ by }` names who made it on a local store (docs/design.md,
    /// "Remembered grants"). The npm package's is gatehouse.js's, with the grants' module.
    #[cfg(feature = "grants")]
    #[wasm_bindgen(skip_typescript)]
    pub fn grant(&self, request: JsValue, options: JsValue) -> Promise {
        let a = self.a.clone();
        promise(async move {
            let request = json_value(&request).map_err(|e| {
                err(AgentError::Grant(
                    GrantError::Invalid,
                    format!("invalid grant: {e}"),
                ))
            })?;
            let p: options::GrantParams = strict_or_default(options).map_err(|e| {
                err(AgentError::Grant(
                    GrantError::Invalid,
                    format!("grant(options): {e}"),
                ))
            })?;
            let grant = a.grant_json(request, p.by).await.map_err(err)?;
            grants_to_js(std::slice::from_ref(&grant))
                .map(|v| js_sys::Reflect::get(&v, &0.into()).unwrap_or_default())
        })
    }

    /// The remembered grants in force for this thread (the database's or the identity's user
    /// and app grants, and the thread's own).
    #[cfg(feature = "grants")]
    #[wasm_bindgen(skip_typescript)]
    pub fn grants(&self) -> Promise {
        let a = self.a.clone();
        promise(async move { grants_to_js(&a.grants_json().await.map_err(err)?) })
    }

    /// Keeps a grant the grants' module made (its id, JSON, and the request's JSON): the
    /// grant kept, as JSON. Internal: gatehouse.js's `grant()`.
    #[wasm_bindgen(js_name = putGrant, skip_typescript)]
    pub fn put_grant(&self, id: String, grant: String, request: String) -> Promise {
        let a = self.a.clone();
        promise(async move {
            let made = a.put_grant_json(&id, &grant, &request).await.map_err(err)?;
            Ok(made.into())
        })
    }

    /// What the store keeps of grants that may apply to this thread, as JSON texts.
    /// Internal: gatehouse.js's `grants()`, which the grants' module reads.
    #[wasm_bindgen(js_name = grantTexts, skip_typescript)]
    pub fn grant_texts(&self) -> Promise {
        let a = self.a.clone();
        promise(async move {
            let texts = a.grant_texts().await.map_err(err)?;
            Ok(texts
                .into_iter()
                .map(JsValue::from)
                .collect::<js_sys::Array>()
                .into())
        })
    }

    /// Revokes a remembered grant; calls it approved that have not started ask a human.
    #[wasm_bindgen(js_name = revokeGrant, unchecked_return_type = "Promise<void>")]
    pub fn revoke_grant(&self, id: String) -> Promise {
        let a = self.a.clone();
        promise(async move {
            a.revoke_grant(&id).await.map_err(err)?;
            Ok(JsValue::UNDEFINED)
        })
    }

    /// The effective policy of every tool in this thread: `{ [name]: { enabled, autoApprove } }`.
    #[wasm_bindgen(js_name = toolPolicies, unchecked_return_type = "Record<string, ToolPolicy>")]
    pub fn tool_policies(&self) -> JsValue {
        let policies = self.a.tool_policies();
        to_js(&ByName(
            policies
                .iter()
                .map(|(name, p)| (name.as_str(), p))
                .collect(),
        ))
    }

    /// Re-reads the thread from storage (after another tab changed it).
    #[wasm_bindgen(unchecked_return_type = "Promise<void>")]
    pub fn refresh(&self) -> Promise {
        let a = self.a.clone();
        promise(async move {
            a.refresh().await.map_err(err)?;
            Ok(JsValue::UNDEFINED)
        })
    }

    /// Threads stored in a database, newest first.
    #[wasm_bindgen(js_name = listThreads, unchecked_return_type = "Promise<ThreadSummary[]>")]
    pub fn list_threads(
        #[wasm_bindgen(unchecked_optional_param_type = "StorageOptions")] storage: JsValue,
    ) -> Promise {
        promise(async move {
            let storage = options::storage_options(storage).map_err(err)?;
            let list = agent::Agent::list_threads(&storage).await.map_err(err)?;
            Ok(to_js(&list))
        })
    }

    /// Calls `listener({ threadId, status, deleted })` whenever a thread of the database is
    /// created, changes status or is deleted, in this page or another tab (nothing where there
    /// is no `BroadcastChannel`). Returns the function that unsubscribes.
    #[wasm_bindgen(js_name = subscribeThreads, unchecked_return_type = "() => void")]
    pub fn subscribe_threads(
        #[wasm_bindgen(unchecked_param_type = "StorageOptions | undefined")] storage: JsValue,
        #[wasm_bindgen(unchecked_param_type = "(change: ThreadListChange) => void")]
        f: js_sys::Function,
    ) -> Result<js_sys::Function, JsValue> {
        let storage = options::storage_options(storage).map_err(err)?;
        let sub = agent::Agent::subscribe_threads(&storage, listener(f, "subscribeThreads()"));
        Ok(Closure::<dyn FnMut()>::new(move || sub.cancel())
            .into_js_value()
            .unchecked_into())
    }

    /// Deletes a thread and its messages.
    #[wasm_bindgen(js_name = deleteThread, unchecked_return_type = "Promise<void>")]
    pub fn delete_thread(
        thread_id: String,
        #[wasm_bindgen(unchecked_optional_param_type = "StorageOptions")] storage: JsValue,
    ) -> Promise {
        promise(async move {
            let storage = options::storage_options(storage).map_err(err)?;
            agent::Agent::delete_thread(&thread_id, &storage)
                .await
                .map_err(err)?;
            Ok(JsValue::UNDEFINED)
        })
    }
}

impl Agent {
    /// A page of stored rows (messages or audit records) as one JSON array, parsed by JS.
    fn rows(&self, options: JsValue, kind: Rows) -> Promise {
        let method = kind.method();
        let a = self.a.clone();
        promise(async move {
            let p: MessagesParams = strict_or_default(options)
                .map_err(|e| invalid_config(format!("{method}(options): {e}")))?;
            let page = Page {
                limit: p.limit.map(|n| n.clamp(0.0, u32::MAX as f64) as u32),
                before_index: p.before_index.map(|i| i.max(0.0) as u64),
            };
            let json = a.rows_json(kind, page).await.map_err(err)?;
            parse_json(&json).ok_or_else(|| {
                err(AgentError::Store(StoreError::Corrupt(format!(
                    "a stored row of {method}() is not JSON"
                ))))
            })
        })
    }

    /// A run of `input` (or its error) with the caller's run options.
    fn run(&self, input: Result<Input, JsValue>, options: JsValue) -> Promise {
        let a = self.a.clone();
        promise(async move {
            let opts = options::run_options(options).map_err(err)?;
            let state = a.run(input?, &opts).await.map_err(err)?;
            Ok(to_js(&state))
        })
    }
}

/// Grants cross as JSON text, parsed by JS: the stores keep them so, and the main wasm holds
/// no grant (de)serializer (docs/design.md, "The grants' module").
#[cfg(feature = "grants")]
fn grants_to_js(grants: &[String]) -> Result<JsValue, JsValue> {
    parse_json(&format!("[{}]", grants.join(","))).ok_or_else(|| {
        err(AgentError::Grant(
            GrantError::Invalid,
            "a grant could not be read".into(),
        ))
    })
}

/// Decisions are JSON, checked here (`invalid_decision` otherwise).
fn decisions_input(v: &JsValue) -> Result<Input, JsValue> {
    json_value(v)
        .map_err(|e| EngineError::InvalidDecision {
            call_id: None,
            message: e,
        })
        .and_then(|v| Decisions::from_json(&v))
        .map(Input::Decisions)
        .map_err(|e| err(AgentError::Engine(e)))
}

/// Tool results are JSON, checked here (`invalid_tool_results` otherwise).
fn tool_results_input(v: &JsValue) -> Result<Input, JsValue> {
    json_value(v)
        .map_err(EngineError::InvalidToolResults)
        .and_then(|v| ToolResults::from_json(&v))
        .map(Input::ToolResults)
        .map_err(|e| err(AgentError::Engine(e)))
}
