//! wasm-bindgen glue: the exported `Agent` class, its params and results, the TypeScript
//! types, the single error conversion, and the conversions across the boundary.

pub mod agent;
pub mod convert;
pub mod error;
pub mod options;
pub mod results;
mod types;

pub use agent::Agent;
