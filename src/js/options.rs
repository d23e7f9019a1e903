//! The arguments of the API, as params structs: `Agent.open(options)` with its tools and
//! model, `{ signal, onEvent }` of the run methods, `storage` of the static helpers, and the
//! bodies of `handle`, `messages` and `setToolPolicy`.

use crate::agent::{McpServer, Model, OpenOptions, Storage};
use crate::convert::{from_js, js_object, json_value};
use crate::driver::RunOptions;
use crate::driver::error::AgentError;
use crate::driver::events::Emitter;
use crate::driver::store::StorageKind;
use crate::driver::tools::Tool;
use crate::engine::{AllowedDecisions, Setting, ToolSpec};
use crate::js::functions;
use crate::providers::{ModelConfig, ModelParams, ProviderKind, RetryPolicy};
use js_sys::Function;
use serde::Deserialize;
use serde::de::{DeserializeOwned, Deserializer, Error as _, Unexpected, Visitor};
use serde_json::Value;
use wasm_bindgen::prelude::wasm_bindgen;
use wasm_bindgen::{JsCast, JsValue};
use web_sys::AbortSignal;

#[derive(Deserialize)]
#[serde(
    rename_all = "camelCase",
    expecting = "an options object with `threadId`"
)]
struct OpenParams {
    thread_id: String,
    /// Read twice: as [`ModelParams`] (data) and as [`ModelExtras`].
    #[serde(default, deserialize_with = "js_object")]
    model: Option<JsValue>,
    instructions: Option<String>,
    tools: Option<Vec<Strict<ToolParams>>>,
    storage: Option<Strict<StorageParams>>,
    max_steps: Option<f64>,
    history_limit: Option<f64>,
    /// The `approvalTimeout` of tools that set none.
    approval_timeout: Option<f64>,
    /// Read as JSON (`mcp_servers`): a params struct would cost its own deserializer.
    #[serde(default, deserialize_with = "js_object")]
    mcp_servers: Option<JsValue>,
    /// Read by the package entry (pkg-template/telemetry.js), not here: named so that a
    /// misspelling of it is refused with this name as the suggestion.
    #[serde(default, deserialize_with = "js_object")]
    #[allow(dead_code)]
    telemetry: Option<JsValue>,
    /// Turned into an `mcpServers` entry by the package entry (pkg-template/webmcp.js); named
    /// here for the same reason (`false` reaches here).
    #[serde(default, deserialize_with = "js_object")]
    #[allow(dead_code)]
    webmcp: Option<JsValue>,
}

/// The parts of `model` that are not [`ModelParams`].
#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct ModelExtras {
    /// The `custom` provider's function.
    #[serde(default, deserialize_with = "js_object")]
    call: Option<Function>,
    max_retries: Option<f64>,
    /// A free-form record: read with `JSON.stringify`'s rules, like a tool's
    /// `providerOptions` (a `Map<String, Value>` field would cost serde-wasm-bindgen's own
    /// `Value` deserializer, ~1.7 KB gzip).
    #[serde(default, deserialize_with = "js_object")]
    headers: Option<JsValue>,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase", expecting = "a tool object with a `name`")]
struct ToolParams {
    name: String,
    description: Option<String>,
    label: Option<String>,
    /// JSON Schema and provider keys are JSON: read with `JSON.stringify`'s rules.
    #[serde(default, deserialize_with = "js_object")]
    parameters: Option<JsValue>,
    #[serde(default, deserialize_with = "js_object")]
    provider_options: Option<JsValue>,
    require_approval: Option<bool>,
    enabled: Option<bool>,
    auto_approve: Option<bool>,
    idempotent: Option<bool>,
    #[serde(default, deserialize_with = "js_object")]
    allowed_decisions: Option<JsValue>,
    approval_timeout: Option<f64>,
    approval_reason: Option<String>,
    #[serde(default, deserialize_with = "js_object")]
    execute: Option<Function>,
    #[serde(default, deserialize_with = "js_object")]
    approval_policy: Option<Function>,
}

/// `{ kind, database, url, headers }`.
#[derive(Deserialize, Default)]
#[serde(expecting = "a storage object { kind, database, url, headers }")]
pub struct StorageParams {
    kind: Option<StorageKind>,
    database: Option<String>,
    /// `kind: "remote"`: where the app mounted its store handler, and what each request to
    /// it carries.
    url: Option<String>,
    /// Read as the model's headers are (`json_value`): a `serde_json::Map` read straight from
    /// JS would bring a second copy of `Value`'s reader into the wasm (~8 KB).
    #[serde(default, deserialize_with = "js_object")]
    headers: Option<JsValue>,
}

/// `{ signal, onEvent }` of chat / submitDecisions / submitToolResults / retry / handle.
#[derive(Deserialize, Default)]
#[serde(
    rename_all = "camelCase",
    expecting = "run options { signal, onEvent, by }"
)]
struct RunParams {
    #[serde(default, deserialize_with = "js_object")]
    signal: Option<AbortSignal>,
    #[serde(default, deserialize_with = "js_object")]
    on_event: Option<Function>,
    by: Option<String>,
}

thread_local! {
    /// The demo model's `call` (pkg-template/gatehouse.js registers it at init).
    static DEMO: std::cell::RefCell<Option<Function>> = const { std::cell::RefCell::new(None) };
}

/// Registers the package's demo model, which the main wasm leaves out (docs/design.md, "The
/// demo model"). Internal: gatehouse.js calls it once the wasm is loaded.
#[wasm_bindgen(js_name = setDemoModel, skip_typescript)]
pub fn set_demo_model(call: Function) {
    DEMO.with(|d| *d.borrow_mut() = Some(call));
}

/// Registers `connect` of the package's MCP client module, which the main wasm leaves out
/// (docs/design.md, "MCP tools"). Internal: gatehouse.js calls it once the wasm is loaded.
#[cfg(not(feature = "mcp"))]
#[wasm_bindgen(js_name = setMcpClient, skip_typescript)]
pub fn set_mcp_client(connect: Function) {
    crate::driver::mcp::register(connect);
}

/// Registers the package's grants module, which the main wasm leaves out (docs/design.md,
/// "The grants' module"): `{ make, inForce, book }`. Internal: gatehouse.js calls it once
/// the wasm is loaded.
#[cfg(not(feature = "grants"))]
#[wasm_bindgen(js_name = setGrantsModule, skip_typescript)]
pub fn set_grants_module(module: JsValue) {
    crate::driver::grants::register(module);
}

fn bad(m: impl Into<String>) -> AgentError {
    AgentError::InvalidConfig(m.into())
}

/// `Agent.open(options)` as the Rust API's options (which `Agent::open` checks).
pub fn parse(options: JsValue) -> Result<OpenOptions, AgentError> {
    let p: OpenParams = strict(options).map_err(|e| bad(format!("Agent.open: {e}")))?;
    let mut o = OpenOptions::new(p.thread_id);
    if let Some(m) = p.model {
        o = o.model(model(m)?);
    }
    // The demo (no `model`, or `provider: "demo"`) is the package's demo module, called as a
    // custom model is; `model_given` stays as the options said.
    if o.model.0.cfg.provider == ProviderKind::Demo && o.model.0.custom.is_none() {
        o.model.0.custom = DEMO
            .with(|d| d.borrow().clone())
            .map(functions::custom_model);
    }
    if let Some(text) = p.instructions {
        o = o.instructions(text);
    }
    if let Some(ms) = approval_timeout("`approvalTimeout`", p.approval_timeout)?.flatten() {
        o = o.approval_timeout(ms);
    }
    for Strict(t) in p.tools.unwrap_or_default() {
        o = o.tool(tool(t)?);
    }
    for m in mcp_servers(p.mcp_servers)? {
        o = o.mcp_server(m);
    }
    if let Some(n) = p.max_steps {
        o = o.max_steps(at_least_one("maxSteps", n)?);
    }
    if let Some(n) = p.history_limit {
        o = o.history_limit(at_least_one("historyLimit", n)?);
    }
    Ok(o.storage(storage(p.storage.map(|Strict(s)| s).unwrap_or_default())?))
}

/// A count option: a number of at least 1 (larger ones are capped).
fn at_least_one(what: &str, n: f64) -> Result<u32, AgentError> {
    if n >= 1.0 {
        Ok(n.min(u32::MAX as f64) as u32)
    } else {
        Err(bad(format!("`{what}` must be a number of at least 1")))
    }
}

fn model(m: JsValue) -> Result<Model, AgentError> {
    check_keys(
        &m,
        &[keys_of::<ModelParams>(), keys_of::<ModelExtras>()].concat(),
    )
    .map_err(|e| bad(format!("`model`: {e}")))?;
    let params: ModelParams = from_js(m.clone()).map_err(|e| bad(format!("`model`: {e}")))?;
    let extras: ModelExtras = from_js(m).map_err(|e| bad(format!("`model`: {e}")))?;
    let headers = match extras.headers.map(|h| json_value(&h)).transpose() {
        Ok(None | Some(Value::Null)) => None,
        Ok(Some(Value::Object(o))) => Some(o),
        Ok(Some(_)) => return Err(bad("`model`: `headers` must be an object")),
        Err(e) => return Err(bad(format!("`model`: `headers` is not JSON: {e}"))),
    };
    let cfg = ModelConfig::checked(params, headers).map_err(|e| bad(format!("`model`: {e}")))?;
    if cfg.provider == ProviderKind::Custom && extras.call.is_none() {
        return Err(bad(
            "`model.call` must be a function for the custom provider",
        ));
    }
    let mut retry = RetryPolicy::default();
    if let Some(n) = extras.max_retries {
        retry.max_retries = n.clamp(0.0, 10.0) as u32;
    }
    let mut model = Model::from_config(cfg, retry);
    if let Some(call) = extras.call {
        model.0.custom = Some(functions::custom_model(call));
    }
    Ok(model)
}

/// One entry of `tools`.
fn tool(t: ToolParams) -> Result<Tool, AgentError> {
    let json = |what: &str, v: Option<JsValue>| -> Result<Option<Value>, AgentError> {
        v.map(|v| json_value(&v))
            .transpose()
            .map_err(|e| bad(format!("tool \"{}\": `{what}` is not JSON: {e}", t.name)))
    };
    let mut spec = ToolSpec::new(t.name.clone());
    spec.schema = match json("parameters", t.parameters)? {
        None => serde_json::json!({ "type": "object", "properties": {} }),
        Some(v @ Value::Object(_)) => v,
        Some(_) => {
            return Err(bad(format!(
                "tool \"{}\": `parameters` must be a JSON Schema object",
                t.name
            )));
        }
    };
    spec.extra = match json("providerOptions", t.provider_options)? {
        Some(Value::Object(o)) if !o.is_empty() => Value::Object(o),
        _ => Value::Array(Vec::new()),
    };
    spec.description = t.description;
    spec.label = t.label;
    spec.require_approval = t.require_approval;
    spec.enabled = t.enabled.unwrap_or(true);
    spec.auto_approve = t.auto_approve.unwrap_or(false);
    spec.idempotent = t.idempotent.unwrap_or(false);
    // Read as JSON, like the schema: a `Vec<String>` field would cost its own deserializer.
    if let Some(v) = json("allowedDecisions", t.allowed_decisions)? {
        spec.allowed_decisions = AllowedDecisions::from_json(&v)
            .map_err(|e| bad(format!("tool \"{}\": {e}", t.name)))?;
    }
    let timeout = approval_timeout(
        &format!("tool \"{}\": `approvalTimeout`", t.name),
        t.approval_timeout,
    )?;
    spec.approval_reason = t.approval_reason;
    let mut tool = Tool::from_parts(
        spec,
        t.execute.map(functions::execute),
        t.approval_policy.map(functions::policy),
    );
    tool.approval_timeout = timeout;
    Ok(tool)
}

/// `mcpServers`: an array of `{ name, url, headers?, trustReadOnlyHint?, tools? }`, read as
/// JSON and checked here (an unknown key is refused, like every option).
fn mcp_servers(v: Option<JsValue>) -> Result<Vec<McpServer>, AgentError> {
    const KEYS: [&str; 5] = ["name", "url", "headers", "trustReadOnlyHint", "tools"];
    let v = v.map(|v| json_value(&v)).transpose();
    let v = v.map_err(|e| bad(format!("`mcpServers` is not JSON: {e}")))?;
    let servers = match v {
        None | Some(Value::Null) => return Ok(Vec::new()),
        Some(Value::Array(a)) => a,
        Some(_) => return Err(bad("`mcpServers` must be an array")),
    };
    let mut out = Vec::new();
    for m in &servers {
        let text = |k: &str| m.get(k).and_then(Value::as_str);
        let name = text("name").unwrap_or_default();
        let what = |e: &str| bad(format!("MCP server \"{name}\": {e}"));
        let Some(o) = m.as_object() else {
            return Err(bad(
                "`mcpServers`: each server is an object { name, url, … }",
            ));
        };
        if let Some(k) = o.keys().find(|k| !KEYS.contains(&k.as_str())) {
            return Err(what(&format!(
                "unknown key `{k}` (known: {})",
                KEYS.join(", ")
            )));
        }
        let (Some(name), Some(url)) = (text("name"), text("url")) else {
            return Err(what("`name` and `url` are required strings"));
        };
        let mut server = McpServer::new(name, url);
        match m.get("trustReadOnlyHint") {
            None | Some(Value::Null) => {}
            Some(Value::Bool(b)) => server = server.trust_read_only_hint(*b),
            Some(_) => return Err(what("`trustReadOnlyHint` must be a boolean")),
        }
        match m.get("headers") {
            None | Some(Value::Null) => {}
            Some(Value::Object(h)) => {
                for (k, v) in h {
                    let v = v
                        .as_str()
                        .ok_or_else(|| what("`headers` must hold strings"))?;
                    server = server.header(k, v);
                }
            }
            Some(_) => return Err(what("`headers` must be an object")),
        }
        match m.get("tools") {
            None | Some(Value::Null) => {}
            Some(Value::Array(names)) => {
                let names: Option<Vec<&str>> = names.iter().map(Value::as_str).collect();
                server = server.tools(names.ok_or_else(|| what("`tools` must be names"))?);
            }
            Some(_) => return Err(what("`tools` must be an array of names")),
        }
        out.push(server);
    }
    Ok(out)
}

/// An `approvalTimeout`: whole milliseconds, at least 1, or `Infinity` (`Some(None)`: never,
/// which lets a tool opt out of the `Agent.open` default).
fn approval_timeout(what: &str, ms: Option<f64>) -> Result<Option<Option<u64>>, AgentError> {
    match ms {
        None => Ok(None),
        Some(f64::INFINITY) => Ok(Some(None)),
        Some(ms) if ms.is_finite() && ms >= 1.0 => Ok(Some(Some(ms as u64))),
        Some(_) => Err(bad(format!(
            "{what} must be a number of milliseconds of at least 1, or Infinity"
        ))),
    }
}

fn storage(p: StorageParams) -> Result<Storage, AgentError> {
    let database = p.database;
    match (p.kind, p.url) {
        // The package's main wasm is built without the remote store; gatehouse.js sends a
        // remote agent to the build that has it (docs/design.md, "The remote store's module").
        #[cfg(not(feature = "remote"))]
        (Some(StorageKind::Remote), Some(_)) => Err(bad(
            "`storage`: this build has no remote store (gatehouse.js opens remote agents in the module that has it)",
        )),
        #[cfg(feature = "remote")]
        (Some(StorageKind::Remote), Some(url)) => {
            let mut s = Storage::remote(&url);
            if let Some(d) = database {
                s.database = d;
            }
            let headers = match p.headers.map(|h| json_value(&h)).transpose() {
                Ok(None | Some(Value::Null)) => serde_json::Map::new(),
                Ok(Some(Value::Object(o))) => o,
                _ => return Err(bad("`storage`: `headers` must be an object of strings")),
            };
            for (k, v) in headers {
                let Value::String(v) = v else {
                    return Err(bad(format!("`storage`: the header `{k}` must be a string")));
                };
                s = s.header(&k, &v);
            }
            Ok(s)
        }
        (Some(StorageKind::Remote), None) => Err(bad(
            "`storage`: `kind: \"remote\"` needs `url`, where the app mounted its store handler",
        )),
        (_, Some(_)) => Err(bad("`storage`: `url` is for `kind: \"remote\"`")),
        (kind, None) if p.headers.is_some() => Err(bad(format!(
            "`storage`: `headers` are for `kind: \"remote\"`, not {kind:?}"
        ))),
        (kind, None) => Ok(Storage::of(kind, database)),
    }
}

/// `storage` of `listThreads` / `deleteThread` / `subscribeThreads`.
pub fn storage_options(v: JsValue) -> Result<Storage, AgentError> {
    let p = match v.is_undefined() || v.is_null() {
        true => StorageParams::default(),
        false => strict(v).map_err(|e| bad(format!("`storage`: {e}")))?,
    };
    storage(p)
}

/// A params struct read from an object that may hold no key the struct does not know.
/// serde-wasm-bindgen reads only the fields a struct names, so serde's `deny_unknown_fields`
/// never sees another key: a misspelled option (`requireAproval`) would be ignored, and a
/// call meant to be gated would run.
pub(crate) struct Strict<T>(pub T);

impl<'de, T: DeserializeOwned> Deserialize<'de> for Strict<T> {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let v: JsValue = serde_wasm_bindgen::preserve::deserialize(d)?;
        strict(v).map(Strict).map_err(D::Error::custom)
    }
}

/// `v` read into the params struct `T`, refusing a key `T` does not know.
pub fn strict<T: DeserializeOwned>(v: JsValue) -> Result<T, String> {
    check_keys(&v, keys_of::<T>())?;
    from_js(v)
}

/// [`strict`] for an optional argument: `undefined` or `null` is `T::default()`.
pub fn strict_or_default<T: DeserializeOwned + Default>(v: JsValue) -> Result<T, String> {
    if v.is_undefined() || v.is_null() {
        return Ok(T::default());
    }
    strict(v)
}

/// An own key of the object `v` (if it is one) that is not in `known`, with the known key it
/// is most likely meant to be.
fn check_keys(v: &JsValue, known: &[&str]) -> Result<(), String> {
    let Some(obj) = v
        .dyn_ref::<js_sys::Object>()
        .filter(|_| !js_sys::Array::is_array(v))
    else {
        return Ok(()); // not an object: `from_js` says what it must be
    };
    for key in js_sys::Object::keys(obj)
        .iter()
        .filter_map(|k| k.as_string())
    {
        if !known.contains(&key.as_str()) {
            return Err(match closest(&key, known) {
                Some(k) => format!("unknown key `{key}` (did you mean `{k}`?)"),
                None => format!("unknown key `{key}`; the keys are `{}`", known.join("`, `")),
            });
        }
    }
    Ok(())
}

/// The keys a params struct reads, as serde names them: the fields its derived `Deserialize`
/// passes to `deserialize_struct`.
fn keys_of<T: DeserializeOwned>() -> &'static [&'static str] {
    use serde::de::value::Error;
    struct Fields<'a>(&'a mut &'static [&'static str]);
    impl<'de> Deserializer<'de> for Fields<'_> {
        type Error = Error;
        fn deserialize_any<V: Visitor<'de>>(self, _: V) -> Result<V::Value, Error> {
            Err(Error::custom("not a struct"))
        }
        fn deserialize_struct<V: Visitor<'de>>(
            self,
            _: &'static str,
            fields: &'static [&'static str],
            _: V,
        ) -> Result<V::Value, Error> {
            *self.0 = fields;
            Err(Error::custom("only its fields were asked for"))
        }
        serde::forward_to_deserialize_any! {
            bool i8 i16 i32 i64 i128 u8 u16 u32 u64 u128 f32 f64 char str string bytes byte_buf
            option unit unit_struct newtype_struct seq tuple tuple_struct map enum identifier
            ignored_any
        }
    }
    let mut fields: &'static [&'static str] = &[];
    let _ = T::deserialize(Fields(&mut fields));
    fields
}

/// The known key `key` is most likely a misspelling of: the nearest by edit distance,
/// ignoring case, `_` and `-`, if it is near enough (a quarter of its length, at least 1).
fn closest<'k>(key: &str, known: &[&'k str]) -> Option<&'k str> {
    // ASCII case only: the keys are ASCII, and `char::to_lowercase` would link Unicode's tables.
    let plain = |s: &str| -> Vec<u8> {
        s.bytes()
            .filter(|b| *b != b'_' && *b != b'-')
            .map(|b| b.to_ascii_lowercase())
            .collect()
    };
    let key = plain(key);
    known
        .iter()
        .map(|k| (edit_distance(&key, &plain(k)), *k))
        .min_by_key(|&(d, _)| d)
        .filter(|&(d, k)| d <= (k.len() / 4).max(1))
        .map(|(_, k)| k)
}

/// The Levenshtein distance of `a` and `b`.
fn edit_distance(a: &[u8], b: &[u8]) -> usize {
    let mut row: Vec<usize> = (0..=b.len()).collect();
    for (i, ca) in a.iter().enumerate() {
        let mut diagonal = row[0];
        row[0] = i + 1;
        for (j, cb) in b.iter().enumerate() {
            let next = (diagonal + usize::from(ca != cb))
                .min(row[j] + 1)
                .min(row[j + 1] + 1);
            diagonal = row[j + 1];
            row[j + 1] = next;
        }
    }
    row[b.len()]
}

/// The options of a run method.
pub fn run_options(v: JsValue) -> Result<RunOptions, AgentError> {
    let p: RunParams = strict_or_default(v).map_err(|e| bad(format!("run options: {e}")))?;
    Ok(RunOptions {
        signal: p.signal,
        events: Emitter::new(p.on_event.map(functions::on_event)),
        by: p.by,
    })
}

/// `grant(request, { by })`.
#[cfg(feature = "grants")]
#[derive(Deserialize, Default)]
#[serde(expecting = "an object { by }")]
pub struct GrantParams {
    pub by: Option<String>,
}

/// `handle(body)`.
#[derive(Deserialize)]
#[serde(
    rename_all = "camelCase",
    expecting = "an object { message } | { decisions } | { toolResults }"
)]
pub struct HandleParams {
    pub message: Option<String>,
    #[serde(default, deserialize_with = "js_object")]
    pub decisions: Option<JsValue>,
    #[serde(default, deserialize_with = "js_object")]
    pub tool_results: Option<JsValue>,
    /// Who decides (with `decisions`), for the audit trail.
    pub by: Option<String>,
}

/// `messages({ limit, beforeIndex })`.
#[derive(Deserialize, Default)]
#[serde(
    rename_all = "camelCase",
    expecting = "an object { limit, beforeIndex }"
)]
pub struct MessagesParams {
    pub limit: Option<f64>,
    pub before_index: Option<f64>,
}

/// `setToolPolicy(name, { enabled, autoApprove })`.
#[derive(Deserialize)]
#[serde(
    rename_all = "camelCase",
    expecting = "a policy object { enabled, autoApprove }"
)]
pub struct PolicyParams {
    #[serde(default, deserialize_with = "setting")]
    pub enabled: Setting,
    #[serde(default, deserialize_with = "setting")]
    pub auto_approve: Setting,
}

/// A policy field: left out or `undefined` keeps it, `null` resets it, or a boolean. (Read
/// as a JS value: serde sees `undefined` and `null` alike.)
fn setting<'de, D: Deserializer<'de>>(d: D) -> Result<Setting, D::Error> {
    let v: JsValue = serde_wasm_bindgen::preserve::deserialize(d)?;
    if v.is_undefined() {
        Ok(Setting::Keep)
    } else if v.is_null() {
        Ok(Setting::Reset)
    } else if let Some(b) = v.as_bool() {
        Ok(Setting::Set(b))
    } else {
        let found = v.js_typeof().as_string().unwrap_or_default();
        Err(D::Error::invalid_type(
            Unexpected::Other(&found),
            &"true, false or null",
        ))
    }
}
