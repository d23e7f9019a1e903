//! The thread JSON: the documented shape of messages and tool entries (SPEC §2).

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
