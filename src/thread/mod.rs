//! The thread JSON: the documented shape of messages and tool entries (docs/design.md, "The thread
//! JSON").

pub mod context;
mod entry;
mod id;
mod message;
mod window;

pub use entry::{Approval, ApprovalState, ToolEntry};
pub use id::{ID_EPOCH_MS, IdGen, MessageId};
pub use message::{
    ContentBlock, META_RESUME_TOKEN, META_STOP_REASON, Message, MessageKind, Role, Usage,
};
pub use window::window_start;

/// A JSON value as compact text, exactly what `Value::to_string` writes. `Display` would build
/// serde_json's serializer a second time over a `fmt::Formatter` (pretty printing included),
/// so the crate writes all JSON through `serde_json::to_string`.
pub fn json_text(v: &serde_json::Value) -> String {
    serde_json::to_string(v).unwrap_or_default()
}
