//! wasm-bindgen glue: the exported `Agent` class, its params and results, the TypeScript
//! types, and the single error conversion. The conversions across the boundary are
//! `crate::convert`'s, shared with the driver.

pub mod agent;
pub mod error;
mod functions;
pub mod options;
pub mod results;
mod types;
