//! What `onEvent` receives: one plain object per event, `type` first. The TypeScript union
//! `AgentEvent` (src/js/types.rs) is checked against one fixture per variant
//! (tests/event_fixtures.rs writes them, `make test-types` compiles them).
//!
//! Fields borrow where they can (`Cow`): an event is built, converted to JS and dropped.
//! `Deserialize` is there for the fixture test, which reads the fixtures back and asks serde
//! for the list of variants.

use crate::engine::Outcome;
use crate::thread::{Message, Usage};
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};
use std::borrow::Cow;

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(
    tag = "type",
    rename_all = "snake_case",
    rename_all_fields = "camelCase"
)]
pub enum Event<'a> {
    /// A fragment of the model's text as it streams.
    TextDelta {
        delta: Cow<'a, str>,
    },
    /// The model began a tool call (streaming only).
    ToolCallStarted {
        index: usize,
        call_id: Cow<'a, str>,
        name: Cow<'a, str>,
    },
    /// A fragment of a tool call's JSON arguments.
    ToolCallDelta {
        index: usize,
        delta: Cow<'a, str>,
    },
    /// A message was stored.
    Message {
        message: Cow<'a, Message>,
    },
    /// The tail was rewritten in place (a partial decision).
    MessageUpdated {
        message: Cow<'a, Message>,
    },
    /// The model is asked (once per model call: a failed attempt tried again is a `retry`
    /// event within it). A UI shows "thinking" by it; telemetry opens its `chat` span.
    ModelCallStarted {},
    /// The model call ended: with the answer's usage and stop reason when known, or with the
    /// error that ended it (after its retries; `aborted` when the signal fired).
    ModelCallEnded {
        ok: bool,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        usage: Option<Usage>,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        stop_reason: Option<Cow<'a, str>>,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        error: Option<EventError>,
    },
    /// A tool is about to run this call: its `execute` (or the MCP server's `tools/call`) is
    /// called next. Its `tool_result` follows, unless the run is cut off first. A UI shows
    /// "running" by it; telemetry opens its `execute_tool` span.
    ToolStarted {
        call_id: Cow<'a, str>,
        name: Cow<'a, str>,
        /// The inputs it runs with (a human's edit, if there was one).
        inputs: Cow<'a, Map<String, Value>>,
    },
    /// A tool ran: its output, or the error message the model gets.
    ToolResult {
        call_id: Cow<'a, str>,
        name: Cow<'a, str>,
        ok: bool,
        result: Cow<'a, Value>,
    },
    /// A failed model call is tried again after `delay_ms`.
    Retry {
        attempt: u32,
        delay_ms: u64,
        error: EventError,
    },
    /// A model that runs in the page is getting its file (`phase` "download", from the network
    /// or "cache") or loading it ("load"): `loaded` of `total` bytes, when the total is known.
    ModelProgress {
        phase: Cow<'a, str>,
        loaded: u64,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        total: Option<u64>,
    },
    /// Where a model that runs in the page runs (once per model call, before its first
    /// token): `device` "cpu" or "webgpu", on `threads` threads (docs/design.md, "A model in
    /// the page"). `single_thread_reason` says why only one ("not_isolated": the page is not
    /// cross-origin isolated; "no_shared_array_buffer"; "one_core"; "runtime": the runtime
    /// chose one), `cpu_reason` why not WebGPU ("requested": `device: "cpu"`; "no_webgpu":
    /// no adapter; "webgpu_unusable": llama.cpp put no layer on the adapter there is).
    ModelRuntime {
        device: Cow<'a, str>,
        threads: u32,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        single_thread_reason: Option<Cow<'a, str>>,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        cpu_reason: Option<Cow<'a, str>>,
    },
    /// The run ended: the last event of a run, with the thread's last message.
    Completed {
        message: Option<Cow<'a, Message>>,
    },
    AwaitingApproval {
        message: Option<Cow<'a, Message>>,
    },
    AwaitingToolResults {
        message: Option<Cow<'a, Message>>,
    },
    /// The run goes on on another device (docs/design.md, "Across devices").
    AwaitingDevice {
        message: Option<Cow<'a, Message>>,
    },
    /// An MCP server could not be reached, refused a request (`status`: its HTTP status) or
    /// broke the protocol. A call it concerns got a tool error result; the thread goes on.
    McpError {
        server: Cow<'a, str>,
        /// `unreachable` (offline, CORS), `unauthorized` (401, 403), `http`, `timeout`,
        /// `protocol`, `rpc` (a JSON-RPC error answer), `aborted`, `cut_off` (the server took
        /// a `tools/call` and its answer broke off: the call is re-gated).
        code: Cow<'a, str>,
        message: Cow<'a, str>,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        status: Option<u16>,
    },
    /// Something left out that the app should know of: `mcp_tool_skipped` (a listed tool with
    /// an invalid schema or name, or one whose name collides).
    Warning {
        code: Cow<'a, str>,
        message: Cow<'a, str>,
    },
}

/// The error of a `retry` event: the error's stable code, its message, and for a provider's
/// HTTP error its status (a UI tells a rate limit, 429, from an outage by it).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct EventError {
    pub code: String,
    pub message: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub status: Option<u16>,
}

impl<'a> Event<'a> {
    /// The last event of a run that ended with `outcome`.
    pub fn finished(outcome: Outcome, tail: Option<&'a Message>) -> Self {
        let message = tail.map(Cow::Borrowed);
        match outcome {
            Outcome::Completed { .. } => Event::Completed { message },
            Outcome::AwaitingApproval => Event::AwaitingApproval { message },
            Outcome::AwaitingToolResults => Event::AwaitingToolResults { message },
            Outcome::AwaitingDevice => Event::AwaitingDevice { message },
        }
    }
}
