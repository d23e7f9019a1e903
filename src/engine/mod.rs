//! The sans-IO agent state machine (being written).

mod model;

pub use model::{ModelOutput, ModelToolCall};
