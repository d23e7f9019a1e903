//! The JS-only result shapes (the Rust API's own types serialize as the JS API documents them).

use serde::{Serialize, Serializer};

/// What `handle` resolves to instead of throwing `conflict`.
#[derive(Serialize)]
#[serde(tag = "status", rename_all = "snake_case")]
pub enum HandleConflict {
    Conflict { error: String },
}

/// A JS object keyed by name, in this order.
pub struct ByName<'a, T>(pub Vec<(&'a str, T)>);

impl<T: Serialize> Serialize for ByName<'_, T> {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.collect_map(self.0.iter().map(|(k, v)| (k, v)))
    }
}
