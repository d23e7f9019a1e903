//! The `demo` provider: a deterministic model that runs in the page with no network and no key,
//! so the demo app, the offline mode and tests can exercise the whole approval flow. Every
//! text it writes starts with `"(demo) "`.
//!
//! - The user mentions tools (their name, or a word of it: "delete" for `delete_file`,
//!   "email" for `send_email`) → it calls them, in the order mentioned, with inputs built from
//!   each tool's JSON Schema and the user's words (quoted strings, paths, e-mail addresses,
//!   URLs, numbers; placeholders for required values it cannot find).
//! - The last message holds tool results → it summarises them, and says so plainly when the
//!   user rejected a call.
//! - Otherwise it echoes the user and lists the tools it knows.

mod inputs;

use super::ToolDef;
use super::stream::StreamDelta;
use crate::engine::{ModelOutput, ModelToolCall};
use crate::thread::{ApprovalState, Message, MessageKind, Role, ToolEntry};
use serde_json::Value;

pub const DEMO_PREFIX: &str = "(demo) ";
/// How the engine's result text for a rejected call starts (docs/design.md, "Approval semantics").
const REJECTED: &str = "TOOL NOT EXECUTED";
/// Name words too common to mean that tool.
const GENERIC: &[&str] = &[
    "get", "set", "list", "file", "files", "data", "info", "item", "items", "tool", "run", "make",
    "new", "the", "and", "for", "with", "from", "current", "value", "text", "name", "user", "all",
];

/// The Unicode operations of the demo's word matching. [`Unicode::STD`] is std's; the browser
/// build passes the browser's own of the same meaning (JS's `toLowerCase`, the Unicode default
/// case conversion; `\p{Alphabetic}`, `\p{N}` and `\p{Uppercase}` regexps), because std's
/// bring their Unicode tables into the wasm: ~16 KB of case tables for `str::to_lowercase`,
/// ~3.7 KB (2.3 KB gzip) of property tables for `char::is_alphanumeric` and `is_uppercase`.
#[derive(Clone, Copy)]
pub struct Unicode {
    /// `str::to_lowercase`.
    pub lowercase: fn(&str) -> String,
    /// `char::is_alphanumeric`: Alphabetic or Numeric.
    pub is_alphanumeric: fn(char) -> bool,
    /// `char::is_uppercase`.
    pub is_uppercase: fn(char) -> bool,
}

impl Unicode {
    pub const STD: Unicode = Unicode {
        lowercase: str::to_lowercase,
        is_alphanumeric: char::is_alphanumeric,
        is_uppercase: char::is_uppercase,
    };
}

pub fn respond(history: &[Message], tools: &[ToolDef]) -> ModelOutput {
    respond_with(history, tools, Unicode::STD)
}

/// [`respond`] with other Unicode operations of the same meaning (see [`Unicode`]).
pub fn respond_with(history: &[Message], tools: &[ToolDef], uni: Unicode) -> ModelOutput {
    let mut out = match history.last() {
        Some(m) => match &m.kind {
            MessageKind::ToolCallResult(entries) => summarise(entries),
            MessageKind::Plain if m.role == Role::User => {
                answer(&m.text(), history.len(), tools, uni)
            }
            MessageKind::Plain | MessageKind::ToolCall(_) => {
                ModelOutput::text("(demo) I have nothing to add.")
            }
        },
        None => ModelOutput::text(format!("(demo) Hello! {}", tools_hint(tools))),
    };
    if out.stop_reason.is_none() {
        out.stop_reason = Some("stop".to_owned());
    }
    let input: usize = history.iter().map(message_words).sum();
    let output = words(&out.text)
        + out
            .tool_calls
            .iter()
            .map(|c| words(&c.arguments))
            .sum::<usize>();
    out.usage = Some(super::usage(input as u64, output as u64, 0, 0));
    out
}

/// The output as a real model would stream it: word-sized text deltas, then each call's
/// start and its arguments in small fragments.
pub fn stream_deltas(out: &ModelOutput) -> Vec<StreamDelta> {
    let mut deltas = Vec::new();
    let mut start = 0;
    let mut prev_space = true;
    for (i, c) in out.text.char_indices() {
        if c.is_whitespace() && !prev_space && i > start {
            deltas.push(StreamDelta::Text(out.text[start..i].to_owned()));
            start = i;
        }
        prev_space = c.is_whitespace();
    }
    if start < out.text.len() {
        deltas.push(StreamDelta::Text(out.text[start..].to_owned()));
    }
    for (index, call) in out.tool_calls.iter().enumerate() {
        deltas.push(StreamDelta::ToolCallStarted {
            index,
            id: call.id.clone(),
            name: call.name.clone(),
        });
        let chars: Vec<char> = call.arguments.chars().collect();
        for piece in chars.chunks(8) {
            deltas.push(StreamDelta::ToolCallArguments {
                index,
                delta: piece.iter().collect(),
            });
        }
    }
    deltas
}

fn answer(text: &str, history_len: usize, tools: &[ToolDef], uni: Unicode) -> ModelOutput {
    let lowered = (uni.lowercase)(text);
    let text_words = word_positions(&lowered, uni);
    let mut mentioned: Vec<(usize, &ToolDef)> = tools
        .iter()
        .filter_map(|t| Some((mention(t, &lowered, &text_words, uni)?, t)))
        .collect();
    mentioned.sort_by_key(|(pos, _)| *pos);
    if mentioned.is_empty() {
        return ModelOutput::text(format!("(demo) You said: {text}\n\n{}", tools_hint(tools)));
    }
    let calls: Vec<ModelToolCall> = mentioned
        .iter()
        .enumerate()
        .map(|(i, (_, t))| {
            let inputs = inputs::fill(&t.schema(), text, uni);
            ModelToolCall {
                id: format!("demo_call_{history_len}_{i}"),
                name: t.name.clone(),
                arguments: crate::thread::json_text(&Value::Object(inputs)),
            }
        })
        .collect();
    let names: Vec<&str> = calls.iter().map(|c| c.name.as_str()).collect();
    ModelOutput {
        text: format!("(demo) Calling {}.", names.join(" and ")),
        tool_calls: calls,
        usage: None,
        stop_reason: Some("tool_calls".to_owned()),
    }
}

fn summarise(entries: &[ToolEntry]) -> ModelOutput {
    let mut text = String::from("(demo) Tool results:");
    let mut rejected = false;
    for e in entries {
        let expired = e
            .approval
            .as_ref()
            .is_some_and(|a| a.state == ApprovalState::Expired);
        let line = match e.result.as_deref() {
            // Its text starts like a rejection's, but nobody rejected it.
            _ if expired => format!("{} was not run: nobody decided in time.", e.name),
            Some(r) if r.starts_with(REJECTED) => {
                rejected = true;
                match rejection_instruction(r) {
                    Some(why) => format!("{} was not run: you rejected it ({why}).", e.name),
                    None => format!("{} was not run: you rejected it.", e.name),
                }
            }
            Some(r) if !r.trim().is_empty() => {
                format!(
                    "{} returned: {}",
                    e.name,
                    super::error::excerpt(r.trim(), 200)
                )
            }
            _ => format!("{} finished with no output.", e.name),
        };
        text.push_str("\n- ");
        text.push_str(&line);
    }
    if rejected {
        text.push_str("\nI will not try the rejected action again.");
    }
    ModelOutput::text(text)
}

/// The user's reason inside the engine's rejection text.
fn rejection_instruction(result: &str) -> Option<&str> {
    let start = result.find("User instruction: ")? + "User instruction: ".len();
    let end = result.rfind(". Do not attempt")?;
    let why = result.get(start..end)?.trim().trim_end_matches('.');
    if why.is_empty() { None } else { Some(why) }
}

fn tools_hint(tools: &[ToolDef]) -> String {
    if tools.is_empty() {
        return "I am the offline demo model; no tools are configured.".to_owned();
    }
    let names: Vec<&str> = tools.iter().map(|t| t.name.as_str()).collect();
    format!(
        "I am the offline demo model. Mention a tool and I will call it. Tools I know: {}.",
        names.join(", ")
    )
}

/// Lowercase alphanumeric words of `lower` with their byte positions.
fn word_positions(lower: &str, uni: Unicode) -> Vec<(usize, &str)> {
    let mut out = Vec::new();
    let mut start = None;
    for (i, c) in lower
        .char_indices()
        .chain(std::iter::once((lower.len(), ' ')))
    {
        match ((uni.is_alphanumeric)(c), start) {
            (true, None) => start = Some(i),
            (false, Some(s)) => {
                out.push((s, &lower[s..i]));
                start = None;
            }
            _ => {}
        }
    }
    out
}

/// Where the user first mentions the tool, if at all.
fn mention(
    tool: &ToolDef,
    lower: &str,
    text_words: &[(usize, &str)],
    uni: Unicode,
) -> Option<usize> {
    let name = (uni.lowercase)(&tool.name);
    let whole = lower.match_indices(&name).map(|(i, _)| i).find(|&i| {
        let boundary = |c: Option<char>| !c.is_some_and(|c| (uni.is_alphanumeric)(c) || c == '_');
        boundary(lower[..i].chars().next_back()) && boundary(lower[i + name.len()..].chars().next())
    });
    let mut spaced = String::new();
    for c in tool.name.chars() {
        if (uni.is_uppercase)(c) {
            spaced.push(' '); // camelCase boundary
        }
        // Char by char, like `char::to_lowercase` (no word-final sigma).
        spaced.push_str(&(uni.lowercase)(c.encode_utf8(&mut [0; 4])));
    }
    let name_words: Vec<(usize, &str)> = word_positions(&spaced, uni)
        .into_iter()
        .filter(|(_, w)| w.len() >= 3 && !GENERIC.contains(w))
        .collect();
    let by_word = text_words
        .iter()
        .find(|(_, tw)| name_words.iter().any(|(_, nw)| same_word(tw, nw)))
        .map(|(pos, _)| *pos);
    // The name as a phrase: "list files" for `list_files`, even though both words are generic.
    let phrase = spaced.replace('_', " ");
    let as_phrase = (phrase.contains(' '))
        .then(|| lower.find(phrase.trim()))
        .flatten();
    [whole, by_word, as_phrase].into_iter().flatten().min()
}

/// "delete" also matches "deleted"/"deleting", "email" matches "emails".
fn same_word(text_word: &str, name_word: &str) -> bool {
    let stem = match name_word.strip_suffix('e') {
        Some(s) if s.len() >= 4 => s,
        _ => name_word,
    };
    text_word == name_word || (stem.len() >= 4 && text_word.starts_with(stem))
}

fn words(s: &str) -> usize {
    s.split_whitespace().count()
}

fn message_words(m: &Message) -> usize {
    let entries = match &m.kind {
        MessageKind::ToolCall(e) | MessageKind::ToolCallResult(e) => e.as_slice(),
        MessageKind::Plain => &[],
    };
    words(&m.text())
        + entries
            .iter()
            .map(|e| e.inputs.len() + e.result.as_deref().map_or(0, words))
            .sum::<usize>()
}
