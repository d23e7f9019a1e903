//! `Agent.open(options)`: reading and checking the options object.

use crate::driver::error::AgentError;
use crate::driver::model::ModelHandle;
use crate::driver::tools::JsTool;
use crate::engine::EngineConfig;
use crate::js::convert::{from_js, from_js_as, from_json};
use crate::providers::{ModelConfig, RetryPolicy};
use js_sys::{Array, Function, Reflect};
use serde_json::Value;
use wasm_bindgen::{JsCast, JsValue};

pub struct AgentOptions {
    pub thread_id: String,
    pub model: ModelHandle,
    pub instructions: Option<String>,
    pub tools: Vec<JsTool>,
    pub storage_kind: String,
    pub database: String,
    pub config: EngineConfig,
    pub history_limit: Option<u32>,
}

fn bad(m: impl Into<String>) -> AgentError {
    AgentError::InvalidConfig(m.into())
}

fn get(obj: &JsValue, key: &str) -> JsValue {
    Reflect::get(obj, &key.into()).unwrap_or(JsValue::UNDEFINED)
}

pub fn parse(options: &JsValue) -> Result<AgentOptions, AgentError> {
    if !options.is_object() {
        return Err(bad("Agent.open needs an options object"));
    }
    let thread_id = get(options, "threadId")
        .as_string()
        .filter(|s| !s.trim().is_empty())
        .ok_or_else(|| bad("`threadId` is required (a non-empty string)"))?;

    let model_js = get(options, "model");
    let cfg: Result<ModelConfig, String> = if model_js.is_undefined() {
        from_json(r#"{"provider":"demo"}"#)
    } else {
        from_js_as(&model_js)
    };
    let cfg = cfg.map_err(|e| bad(format!("`model`: {e}")))?;
    cfg.validate().map_err(AgentError::from)?;
    let custom = get(&model_js, "call").dyn_into::<Function>().ok();
    if cfg.provider == crate::providers::ProviderKind::Custom && custom.is_none() {
        return Err(bad(
            "`model.call` must be a function for the custom provider",
        ));
    }
    let mut retry = RetryPolicy::default();
    if let Some(n) = get(&model_js, "maxRetries").as_f64() {
        retry.max_retries = n.clamp(0.0, 10.0) as u32;
    }

    let instructions = match get(options, "instructions") {
        v if v.is_undefined() || v.is_null() => None,
        v => Some(
            v.as_string()
                .ok_or_else(|| bad("`instructions` must be a string"))?,
        ),
    };

    let mut tools = Vec::new();
    let tools_js = get(options, "tools");
    if !tools_js.is_undefined() && !tools_js.is_null() {
        if !Array::is_array(&tools_js) {
            return Err(bad("`tools` must be an array"));
        }
        for t in Array::from(&tools_js).iter() {
            let tool = JsTool::parse(&t)?;
            if tools.iter().any(|x: &JsTool| x.spec.name == tool.spec.name) {
                return Err(bad(format!("two tools are named \"{}\"", tool.spec.name)));
            }
            tools.push(tool);
        }
    }

    let storage = get(options, "storage");
    let default_kind = if has_indexed_db() {
        "indexeddb"
    } else {
        "memory"
    };
    let storage_kind = get(&storage, "kind")
        .as_string()
        .unwrap_or_else(|| default_kind.into());
    if storage_kind != "indexeddb" && storage_kind != "memory" {
        return Err(bad(format!(
            "`storage.kind` must be \"indexeddb\" or \"memory\", not \"{storage_kind}\""
        )));
    }
    if storage_kind == "indexeddb" && !has_indexed_db() {
        return Err(bad(
            "IndexedDB is not available here: use `storage: { kind: \"memory\" }`",
        ));
    }
    let database = get(&storage, "database")
        .as_string()
        .unwrap_or_else(|| "gatehouse".into());

    let mut config = EngineConfig::default();
    match get(options, "maxSteps") {
        v if v.is_undefined() => {}
        v => match v.as_f64() {
            Some(n) if n >= 1.0 => config.max_steps = n.min(1000.0) as u32,
            _ => return Err(bad("`maxSteps` must be a number of at least 1")),
        },
    }

    let history_limit = match get(options, "historyLimit") {
        v if v.is_undefined() || v.is_null() => None,
        v => match v.as_f64() {
            Some(n) if n >= 1.0 => Some(n.min(u32::MAX as f64) as u32),
            _ => return Err(bad("`historyLimit` must be a number of at least 1")),
        },
    };

    Ok(AgentOptions {
        thread_id,
        model: ModelHandle { cfg, custom, retry },
        instructions,
        tools,
        storage_kind,
        database,
        config,
        history_limit,
    })
}

/// `{ kind, database }` for the static thread helpers.
pub fn storage(v: &JsValue) -> (String, String) {
    let default_kind = if has_indexed_db() {
        "indexeddb"
    } else {
        "memory"
    };
    let kind = get(v, "kind")
        .as_string()
        .unwrap_or_else(|| default_kind.into());
    let db = get(v, "database")
        .as_string()
        .unwrap_or_else(|| "gatehouse".into());
    (kind, db)
}

pub fn has_indexed_db() -> bool {
    let g = js_sys::global();
    Reflect::get(&g, &"indexedDB".into()).is_ok_and(|v| !v.is_undefined() && !v.is_null())
}

/// `{ signal, onEvent }` of chat / submitDecisions / submitToolResults / retry.
pub fn run_options(v: &JsValue) -> Result<crate::driver::RunOptions, AgentError> {
    if v.is_undefined() || v.is_null() {
        return Ok(Default::default());
    }
    let signal = match get(v, "signal") {
        s if s.is_undefined() || s.is_null() => None,
        s => Some(
            s.dyn_into::<web_sys::AbortSignal>()
                .map_err(|_| bad("`signal` must be an AbortSignal"))?,
        ),
    };
    let on_event = match get(v, "onEvent") {
        f if f.is_undefined() || f.is_null() => None,
        f => Some(
            f.dyn_into::<Function>()
                .map_err(|_| bad("`onEvent` must be a function"))?,
        ),
    };
    Ok(crate::driver::RunOptions {
        signal,
        events: crate::driver::events::Emitter::new(on_event),
    })
}

/// A JSON value from JS for decisions and tool results (their shape is checked by the engine).
pub fn payload(v: &JsValue, what: &str) -> Result<Value, AgentError> {
    from_js(v).map_err(|e| bad(format!("{what}: {e}")))
}
