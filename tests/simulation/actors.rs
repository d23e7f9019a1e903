//! Everything outside the SDK, deterministic from the seed: the app's tools, the model, the
//! approval policies and the humans in front of each tab.

use super::rng::Rng;
use gatehouse_agent::engine::{
    Engine, ModelOutput, ModelToolCall, PolicyVerdict, ThreadStatus, ToolPolicy, ToolSet, ToolSpec,
};
use serde_json::{Map, Value, json};

/// `delete_file` and `send_email` must never run twice; `fetch_page` and `list_files` are
/// idempotent (run again after a crash). `delete_file` and `fetch_page` always ask a human,
/// `send_email` asks its approval policy, `list_files` never asks.
pub fn tools() -> ToolSet {
    fn with(name: &str, field: &str) -> ToolSpec {
        let mut t = ToolSpec::new(name);
        t.description = Some(format!("the {name} tool"));
        t.schema = json!({ "type": "object", "properties": { field: { "type": "string" } },
            "required": [field] });
        t
    }
    let mut delete = with("delete_file", "path");
    delete.require_approval = Some(true);
    let mut fetch = with("fetch_page", "url");
    fetch.require_approval = Some(true);
    fetch.idempotent = true;
    let mut email = with("send_email", "to");
    email.has_policy = true;
    let mut list = ToolSpec::new("list_files");
    list.require_approval = Some(false);
    list.idempotent = true;
    ToolSet::new(vec![delete, fetch, email, list])
}

const NAMES: [&str; 4] = ["delete_file", "fetch_page", "send_email", "list_files"];

/// The model's answer to one request, or `None` when the call fails. Call ids are unique across
/// the whole simulation, except for the deliberate duplicates, `__proto__`, empty ids and ids
/// reused from an earlier message.
pub fn model(rng: &mut Rng, next_call: &mut u64, recent: &mut Vec<String>) -> Option<ModelOutput> {
    let r = rng.below(100);
    if r < 10 {
        return None;
    }
    if r < 50 {
        let mut out = ModelOutput::text(format!("answer {}", rng.below(1000)));
        out.stop_reason = Some("end_turn".into());
        return Some(out);
    }
    let n = 1 + rng.below(3) as usize;
    let mut calls: Vec<ModelToolCall> = Vec::with_capacity(n);
    for _ in 0..n {
        *next_call += 1;
        let fresh = format!("toolu_{:04}", *next_call);
        let id = match rng.below(100) {
            0..=3 if !calls.is_empty() => calls[calls.len() - 1].id.clone(),
            4..=6 => "__proto__".to_owned(),
            7..=8 => String::new(),
            9..=11 if !recent.is_empty() => recent[rng.index(recent.len())].clone(),
            _ => fresh,
        };
        let name = if rng.chance(40) {
            "format_disk"
        } else {
            NAMES[rng.index(NAMES.len())]
        };
        let k = *next_call;
        let arguments = match rng.below(100) {
            0..=4 => "{\"path\": ".to_owned(),
            5..=7 => "[1, 2]".to_owned(),
            8..=10 => "{}".to_owned(),
            _ => match name {
                "delete_file" => json!({ "path": format!("/tmp/f{k}") }).to_string(),
                "fetch_page" => json!({ "url": format!("https://example.com/{k}") }).to_string(),
                "send_email" => json!({ "to": format!("u{k}@example.com") }).to_string(),
                _ => String::new(),
            },
        };
        if !id.is_empty() && id != "__proto__" {
            recent.push(id.clone());
            if recent.len() > 20 {
                recent.remove(0);
            }
        }
        calls.push(ModelToolCall::new(id, name, arguments));
    }
    let mut out = ModelOutput::calls(calls);
    out.stop_reason = Some("tool_use".into());
    Some(out)
}

/// What `send_email`'s approval policy answers.
pub fn verdict(rng: &mut Rng) -> PolicyVerdict {
    match rng.below(10) {
        0..=2 => PolicyVerdict::Allow,
        3..=7 => PolicyVerdict::Require(None),
        8 => PolicyVerdict::Require(Some("outside the workspace".into())),
        _ => PolicyVerdict::Failed("the policy threw".into()),
    }
}

/// A tool's outcome; every execution's output is unique (`exec` is its number).
pub fn tool_outcome(rng: &mut Rng, exec: u64, tool: &str) -> Result<Value, String> {
    if rng.chance(150) {
        Err(format!("tool failure #{exec}"))
    } else {
        Ok(json!({ "exec": exec, "tool": tool }))
    }
}

/// What a tab starts when its human acts.
pub enum Input {
    Chat(String),
    Decide(Value),
    Retry,
    /// On open: recover a call a dead run left "started".
    Recover,
    Policy(String, ToolPolicy),
}

impl Input {
    pub fn label(&self) -> String {
        match self {
            Input::Chat(t) => format!("chat({t:?})"),
            Input::Decide(v) => format!("decide({v})"),
            Input::Retry => "retry".into(),
            Input::Recover => "recover".into(),
            Input::Policy(n, p) => format!(
                "set_tool_policy({n}, enabled={:?} auto_approve={:?})",
                p.enabled, p.auto_approve
            ),
        }
    }
}

pub enum Choice {
    Run(Input),
    /// Close the tab and open it again (a new agent).
    Reload,
    /// Do nothing for now.
    Wait,
}

/// What the human in front of a tab does, from what the tab shows. The human never approves a
/// call whose `approvalReason` is set (a re-gated call "may or may not have taken effect"):
/// such calls are always rejected.
pub fn human(rng: &mut Rng, engine: &Engine, next_chat: &mut u64, tab: usize) -> Choice {
    let pending: Vec<(String, bool)> = engine
        .pending_tools()
        .iter()
        .map(|e| {
            let reason = e.approval.as_ref().and_then(|a| a.reason.as_ref());
            (e.call_id.clone(), reason.is_some())
        })
        .collect();
    let status = engine.status();
    let r = rng.below(100);
    if !pending.is_empty() && r < 75 {
        return Choice::Run(Input::Decide(decisions(rng, &pending)));
    }
    if status == ThreadStatus::Interrupted && r < 80 {
        return Choice::Run(Input::Retry);
    }
    if status == ThreadStatus::Idle && r < 75 {
        return Choice::Run(chat(next_chat, tab));
    }
    match rng.below(20) {
        0..=5 => Choice::Run(chat(next_chat, tab)),
        6..=9 => Choice::Run(Input::Retry),
        10..=13 => {
            let tool = NAMES[rng.index(NAMES.len())].to_owned();
            let policy = match rng.below(20) {
                0..=6 => ToolPolicy {
                    enabled: None,
                    auto_approve: Some(true),
                },
                7..=9 => ToolPolicy {
                    enabled: Some(false),
                    auto_approve: None,
                },
                _ => ToolPolicy::default(),
            };
            Choice::Run(Input::Policy(tool, policy))
        }
        14 => Choice::Reload,
        15 if !pending.is_empty() => Choice::Run(Input::Decide(decisions(rng, &pending))),
        _ => Choice::Wait,
    }
}

fn chat(next_chat: &mut u64, tab: usize) -> Input {
    *next_chat += 1;
    Input::Chat(format!("message #{} from tab {tab}", *next_chat))
}

/// Decisions on some or all pending calls; a call with a reason is rejected, never approved.
fn decisions(rng: &mut Rng, pending: &[(String, bool)]) -> Value {
    let mut m = Map::new();
    for (id, has_reason) in pending {
        let d = if *has_reason {
            reject(rng)
        } else {
            match rng.below(100) {
                0..=59 => json!("approve"),
                60..=84 => reject(rng),
                _ => continue,
            }
        };
        m.insert(id.clone(), d);
    }
    if m.is_empty() {
        let (id, has_reason) = &pending[0];
        let d = if *has_reason {
            reject(rng)
        } else {
            json!("approve")
        };
        m.insert(id.clone(), d);
    }
    if rng.chance(20) {
        m.insert("no_such_call".into(), json!("approve"));
    }
    Value::Object(m)
}

fn reject(rng: &mut Rng) -> Value {
    if rng.chance(500) {
        json!(["reject", "not this one"])
    } else {
        json!("reject")
    }
}
