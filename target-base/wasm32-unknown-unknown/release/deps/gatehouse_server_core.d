/work/main/target-base/wasm32-unknown-unknown/release/deps/gatehouse_server_core.d: server/core/src/lib.rs server/core/src/plan.rs

/work/main/target-base/wasm32-unknown-unknown/release/deps/gatehouse_server_core.wasm: server/core/src/lib.rs server/core/src/plan.rs

/work/main/target-base/wasm32-unknown-unknown/release/deps/libgatehouse_server_core.rlib: server/core/src/lib.rs server/core/src/plan.rs

server/core/src/lib.rs:
server/core/src/plan.rs:
