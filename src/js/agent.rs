//! The `Agent` class (SPEC §1). Each method converts its JS input, calls the driver or reads
//! the engine, and converts the result back; errors become `GatehouseError`s in `js::error`.

use crate::driver::error::AgentError;
use crate::driver::store::Store;
use crate::driver::{self, Input, OpenOptions, RunOptions, Shared, outcome_status};
use crate::engine::{EngineError, Outcome, ThreadStatus};
use crate::js::convert::{from_js, json_object, json_string, message_json, parse_js, to_js};
use crate::js::error::{invalid_config, to_js_error};
use crate::js::options;
use js_sys::Reflect;
use serde_json::{Map, Value, json};
use wasm_bindgen::prelude::*;

#[wasm_bindgen]
pub struct Agent {
    s: Shared,
}

fn err(e: AgentError) -> JsValue {
    to_js_error(&e)
}

#[wasm_bindgen]
impl Agent {
    /// Opens (or creates) a thread: reads its record and tail, and re-gates a tool call whose
    /// execution was cut off by a closed page.
    #[wasm_bindgen(js_name = open, unchecked_return_type = "Agent")]
    pub async fn open(
        #[wasm_bindgen(unchecked_param_type = "AgentOptions")] options: JsValue,
    ) -> Result<Agent, JsValue> {
        let o = options::parse(&options).map_err(err)?;
        let store = Store::open(&o.storage_kind, &o.database)
            .await
            .map_err(|e| err(e.into()))?;
        let s = driver::open(OpenOptions {
            thread_id: o.thread_id,
            store,
            model: o.model,
            instructions: o.instructions,
            tools: o.tools,
            config: o.config,
            history_limit: o.history_limit,
        })
        .await
        .map_err(err)?;
        Ok(Agent { s })
    }

    #[wasm_bindgen(getter, js_name = threadId)]
    pub fn thread_id(&self) -> String {
        self.s.borrow().thread_id.clone()
    }

    /// How many messages the thread has.
    #[wasm_bindgen(getter, js_name = messageCount)]
    pub fn message_count(&self) -> f64 {
        self.s.borrow().message_count as f64
    }

    /// Sends a user message and runs until the model answers or a tool call waits.
    #[wasm_bindgen(unchecked_return_type = "Promise<AgentState>")]
    pub async fn chat(
        &self,
        message: JsValue,
        #[wasm_bindgen(unchecked_optional_param_type = "RunOptions")] options: JsValue,
    ) -> Result<JsValue, JsValue> {
        let text = message
            .as_string()
            .ok_or_else(|| invalid_config("chat(message): the message must be a string"))?;
        if text.trim().is_empty() {
            // Providers refuse empty turns; refuse it here, before anything is stored.
            return Err(invalid_config("chat(message): the message is empty"));
        }
        self.run(Input::Message(text), &options).await
    }

    /// Decisions keyed by callId: `"approve"`, `"reject"` or `["reject", "reason"]`.
    #[wasm_bindgen(js_name = submitDecisions, unchecked_return_type = "Promise<AgentState>")]
    pub async fn submit_decisions(
        &self,
        #[wasm_bindgen(unchecked_param_type = "Decisions")] decisions: JsValue,
        #[wasm_bindgen(unchecked_optional_param_type = "RunOptions")] options: JsValue,
    ) -> Result<JsValue, JsValue> {
        let v = from_js(&decisions).map_err(|e| {
            err(AgentError::Engine(EngineError::InvalidDecision {
                call_id: None,
                message: e,
            }))
        })?;
        self.run(Input::Decisions(v), &options).await
    }

    /// Outputs of external tools (tools without `execute`), keyed by callId.
    #[wasm_bindgen(js_name = submitToolResults, unchecked_return_type = "Promise<AgentState>")]
    pub async fn submit_tool_results(
        &self,
        #[wasm_bindgen(unchecked_param_type = "Record<string, unknown>")] results: JsValue,
        #[wasm_bindgen(unchecked_optional_param_type = "RunOptions")] options: JsValue,
    ) -> Result<JsValue, JsValue> {
        let v = from_js(&results)
            .map_err(|e| err(AgentError::Engine(EngineError::InvalidToolResults(e))))?;
        self.run(Input::ToolResults(v), &options).await
    }

    /// Continues an unanswered turn (after a network error) or an interrupted run, without
    /// adding a message.
    #[wasm_bindgen(unchecked_return_type = "Promise<AgentState>")]
    pub async fn retry(
        &self,
        #[wasm_bindgen(unchecked_optional_param_type = "RunOptions")] options: JsValue,
    ) -> Result<JsValue, JsValue> {
        self.run(Input::Retry, &options).await
    }

    /// The documented one-endpoint form: `{ message }`, `{ decisions }` or `{ toolResults }`.
    /// A conflict resolves to `{ status: "conflict", error }` instead of throwing.
    #[wasm_bindgen(unchecked_return_type = "Promise<AgentState | ConflictState>")]
    pub async fn handle(
        &self,
        #[wasm_bindgen(unchecked_param_type = "HandleBody")] body: JsValue,
        #[wasm_bindgen(unchecked_optional_param_type = "RunOptions")] options: JsValue,
    ) -> Result<JsValue, JsValue> {
        let field = |k: &str| Reflect::get(&body, &k.into()).unwrap_or(JsValue::UNDEFINED);
        let (decisions, results, message) =
            (field("decisions"), field("toolResults"), field("message"));
        let input = if !decisions.is_undefined() {
            Input::Decisions(from_js(&decisions).map_err(|e| {
                err(AgentError::Engine(EngineError::InvalidDecision {
                    call_id: None,
                    message: e,
                }))
            })?)
        } else if !results.is_undefined() {
            Input::ToolResults(
                from_js(&results)
                    .map_err(|e| err(AgentError::Engine(EngineError::InvalidToolResults(e))))?,
            )
        } else if let Some(text) = message.as_string().filter(|t| !t.trim().is_empty()) {
            Input::Message(text)
        } else {
            return Err(invalid_config(
                "handle(body): body must have `message` (a non-empty string), `decisions` or `toolResults`",
            ));
        };
        let opts = options::run_options(&options).map_err(err)?;
        match driver::run(&self.s, input, &opts).await {
            Ok(o) => Ok(self.state_js(o)),
            Err(e) if e.code() == "conflict" => Ok(to_js(
                &json!({ "status": "conflict", "error": e.to_string() }),
            )),
            Err(e) => Err(err(e)),
        }
    }

    /// Entries of the last message whose approval is pending (synchronous: no I/O).
    #[wasm_bindgen(js_name = pendingTools, unchecked_return_type = "ToolEntry[]")]
    pub fn pending_tools(&self) -> JsValue {
        to_js(&self.s.borrow().engine.pending_tools())
    }

    /// External calls waiting for `submitToolResults`.
    #[wasm_bindgen(js_name = pendingToolResults, unchecked_return_type = "ToolEntry[]")]
    pub fn pending_tool_results(&self) -> JsValue {
        to_js(&self.s.borrow().engine.awaiting_results())
    }

    /// `"idle" | "awaiting_approval" | "awaiting_tool_results" | "interrupted" | "running"`.
    #[wasm_bindgen(unchecked_return_type = "ThreadStatus")]
    pub fn status(&self) -> String {
        let g = self.s.borrow();
        if driver::running_here(&g) || driver::running_elsewhere(&g) {
            return "running".to_owned();
        }
        g.engine.status().as_str().to_owned()
    }

    #[wasm_bindgen(js_name = lastMessage, unchecked_return_type = "Message | null")]
    pub fn last_message(&self) -> JsValue {
        to_js(&self.s.borrow().engine.tail())
    }

    /// The thread, oldest first. With `{ limit, beforeIndex }` one page of it (indexes are
    /// 0-based positions in the thread), read without loading the rest.
    #[wasm_bindgen(unchecked_return_type = "Promise<Message[]>")]
    pub async fn messages(
        &self,
        #[wasm_bindgen(unchecked_optional_param_type = "MessagesOptions")] options: JsValue,
    ) -> Result<JsValue, JsValue> {
        let num = |k: &str| {
            Reflect::get(&options, &k.into())
                .ok()
                .and_then(|v| v.as_f64())
        };
        let limit = num("limit").map_or(u32::MAX, |n| n.clamp(0.0, u32::MAX as f64) as u32);
        let before = num("beforeIndex").map(|i| i.max(0.0) as u64 + 1);
        let (store, thread) = {
            let g = self.s.borrow();
            (g.store.clone(), g.thread_id.clone())
        };
        let rows = store
            .page(&thread, before, limit)
            .await
            .map_err(|e| err(e.into()))?;
        // Rows hold message JSON text: join them into one array and parse once.
        let mut text =
            String::with_capacity(rows.iter().map(|r| r.json.len() + 1).sum::<usize>() + 2);
        text.push('[');
        for (i, r) in rows.iter().enumerate() {
            if i > 0 {
                text.push(',');
            }
            text.push_str(&r.json);
        }
        text.push(']');
        js_sys::JSON::parse(&text).map_err(|_| {
            err(AgentError::Store(crate::store::StoreError::Corrupt(
                "a stored message is not JSON".into(),
            )))
        })
    }

    /// Sets this thread's policy for one tool: `{ enabled?, autoApprove? }`; `null` resets a
    /// field to the tool's default. Persisted with the thread, inherited by no other thread.
    #[wasm_bindgen(js_name = setToolPolicy, unchecked_return_type = "Promise<void>")]
    pub async fn set_tool_policy(
        &self,
        name: String,
        #[wasm_bindgen(unchecked_param_type = "ToolPolicyUpdate")] policy: JsValue,
    ) -> Result<(), JsValue> {
        let v = from_js(&policy).map_err(|e| invalid_config(format!("setToolPolicy: {e}")))?;
        let obj = v
            .as_object()
            .ok_or_else(|| invalid_config("setToolPolicy: the policy must be an object"))?;
        let mut p = self
            .s
            .borrow()
            .engine
            .state()
            .policies
            .get(&name)
            .copied()
            .unwrap_or_default();
        for (key, slot) in [
            ("enabled", &mut p.enabled),
            ("autoApprove", &mut p.auto_approve),
        ] {
            match obj.get(key) {
                None => {}
                Some(Value::Null) => *slot = None,
                Some(Value::Bool(b)) => *slot = Some(*b),
                Some(_) => {
                    return Err(invalid_config(format!(
                        "setToolPolicy: `{key}` must be true, false or null"
                    )));
                }
            }
        }
        driver::run(&self.s, Input::SetPolicy(name, p), &RunOptions::default())
            .await
            .map_err(err)?;
        Ok(())
    }

    /// The effective policy of every tool in this thread: `{ [name]: { enabled, autoApprove } }`.
    #[wasm_bindgen(js_name = toolPolicies, unchecked_return_type = "Record<string, ToolPolicy>")]
    pub fn tool_policies(&self) -> JsValue {
        let g = self.s.borrow();
        let policies = &g.engine.state().policies;
        let tools = g.engine.tools();
        let mut out = Map::new();
        for t in tools.iter() {
            out.insert(
                t.name.clone(),
                json!({
                    "enabled": tools.is_enabled(t, policies),
                    "autoApprove": tools.is_auto_approved(t, policies),
                }),
            );
        }
        to_js(&out)
    }

    /// Re-reads the thread from storage (after another tab changed it).
    #[wasm_bindgen(unchecked_return_type = "Promise<void>")]
    pub async fn refresh(&self) -> Result<(), JsValue> {
        if driver::running_here(&self.s.borrow()) || self.s.borrow().engine.is_running() {
            return Err(err(AgentError::Engine(EngineError::Busy(
                "a run is in progress".into(),
            ))));
        }
        driver::reload(&self.s).await.map_err(err)
    }

    /// Threads stored in a database, newest first.
    #[wasm_bindgen(js_name = listThreads, unchecked_return_type = "Promise<ThreadSummary[]>")]
    pub async fn list_threads(
        #[wasm_bindgen(unchecked_optional_param_type = "StorageOptions")] storage: JsValue,
    ) -> Result<JsValue, JsValue> {
        let (kind, db) = options::storage(&storage);
        let store = Store::open(&kind, &db).await.map_err(|e| err(e.into()))?;
        let mut list = store.list().await.map_err(|e| err(e.into()))?;
        // Newest first (descending `total_cmp`), equal times in stored order.
        list.sort_by(|a, b| b.updated_at.total_cmp(&a.updated_at));
        let mut out = Vec::with_capacity(list.len());
        for r in &list {
            let status = if driver::record_running(store.name(), r).await {
                "running"
            } else {
                summary_status(r)
            };
            out.push(
                json!({ "threadId": r.id, "title": r.title, "messageCount": r.message_count,
                             "createdAt": r.created_at, "updatedAt": r.updated_at,
                             "status": status }),
            );
        }
        Ok(to_js(&out))
    }

    /// Deletes a thread and its messages.
    #[wasm_bindgen(js_name = deleteThread, unchecked_return_type = "Promise<void>")]
    pub async fn delete_thread(
        thread_id: String,
        #[wasm_bindgen(unchecked_optional_param_type = "StorageOptions")] storage: JsValue,
    ) -> Result<(), JsValue> {
        let (kind, db) = options::storage(&storage);
        let store = Store::open(&kind, &db).await.map_err(|e| err(e.into()))?;
        store.delete(&thread_id).await.map_err(|e| err(e.into()))
    }
}

impl Agent {
    async fn run(&self, input: Input, options: &JsValue) -> Result<JsValue, JsValue> {
        let opts = options::run_options(options).map_err(err)?;
        let outcome = driver::run(&self.s, input, &opts).await.map_err(err)?;
        Ok(self.state_js(outcome))
    }

    fn state_js(&self, outcome: Option<Outcome>) -> JsValue {
        let g = self.s.borrow();
        let status = match outcome {
            Some(o) => outcome_status(o),
            None => match g.engine.status() {
                ThreadStatus::AwaitingApproval => "awaiting_approval",
                ThreadStatus::AwaitingToolResults => "awaiting_tool_results",
                _ => "completed",
            },
        };
        let status = json_string(status);
        let message = message_json(g.engine.tail());
        let mut fields = vec![("status", status.as_str()), ("message", message.as_str())];
        if matches!(
            outcome,
            Some(Outcome::Completed {
                max_steps_reached: true
            })
        ) {
            fields.push(("stopReason", "\"max_steps\""));
        }
        parse_js(&json_object(&fields))
    }
}

/// A thread's status from its record alone (no message read).
fn summary_status(r: &crate::store::ThreadRecord) -> &'static str {
    if r.pending_approvals > 0 {
        "awaiting_approval"
    } else if r.run.is_some() {
        // Waiting for external results, or a run cut off mid-way.
        "waiting"
    } else {
        "idle"
    }
}
