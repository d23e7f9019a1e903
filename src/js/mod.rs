//! wasm-bindgen glue: the exported `Agent` class, the TypeScript types, the single error
//! conversion, and JSON conversion across the boundary.

pub mod agent;
pub mod convert;
pub mod error;
pub mod options;
mod types;

pub use agent::Agent;
