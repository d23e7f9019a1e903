//! JSON Schema validation of tool inputs (being written).
