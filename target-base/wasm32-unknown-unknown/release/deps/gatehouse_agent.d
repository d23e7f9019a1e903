/work/main/target-base/wasm32-unknown-unknown/release/deps/gatehouse_agent.d: src/lib.rs src/engine/mod.rs src/engine/audit.rs src/engine/decisions.rs src/engine/error.rs src/engine/inputs.rs src/engine/machine.rs src/engine/machine/approval.rs src/engine/machine/execution.rs src/engine/machine/recovery.rs src/engine/machine/turn.rs src/engine/model.rs src/engine/policies.rs src/engine/policy_change.rs src/engine/results.rs src/engine/state.rs src/engine/tools.rs src/event.rs src/mcp/mod.rs src/mcp/listing.rs src/mcp/rpc.rs src/providers/mod.rs src/providers/anthropic.rs src/providers/config.rs src/providers/demo/mod.rs src/providers/demo/inputs.rs src/providers/error.rs src/providers/openai.rs src/providers/retry.rs src/providers/sse.rs src/providers/stream.rs src/schema/mod.rs src/schema/keywords.rs src/schema/value.rs src/schema/walk.rs src/store/mod.rs src/store/memory.rs src/store/ownership.rs src/store/page.rs src/store/record.rs src/store/summary.rs src/store/wire.rs src/thread/mod.rs src/thread/context.rs src/thread/entry.rs src/thread/id.rs src/thread/message.rs src/thread/window.rs

/work/main/target-base/wasm32-unknown-unknown/release/deps/gatehouse_agent.wasm: src/lib.rs src/engine/mod.rs src/engine/audit.rs src/engine/decisions.rs src/engine/error.rs src/engine/inputs.rs src/engine/machine.rs src/engine/machine/approval.rs src/engine/machine/execution.rs src/engine/machine/recovery.rs src/engine/machine/turn.rs src/engine/model.rs src/engine/policies.rs src/engine/policy_change.rs src/engine/results.rs src/engine/state.rs src/engine/tools.rs src/event.rs src/mcp/mod.rs src/mcp/listing.rs src/mcp/rpc.rs src/providers/mod.rs src/providers/anthropic.rs src/providers/config.rs src/providers/demo/mod.rs src/providers/demo/inputs.rs src/providers/error.rs src/providers/openai.rs src/providers/retry.rs src/providers/sse.rs src/providers/stream.rs src/schema/mod.rs src/schema/keywords.rs src/schema/value.rs src/schema/walk.rs src/store/mod.rs src/store/memory.rs src/store/ownership.rs src/store/page.rs src/store/record.rs src/store/summary.rs src/store/wire.rs src/thread/mod.rs src/thread/context.rs src/thread/entry.rs src/thread/id.rs src/thread/message.rs src/thread/window.rs

/work/main/target-base/wasm32-unknown-unknown/release/deps/libgatehouse_agent.rlib: src/lib.rs src/engine/mod.rs src/engine/audit.rs src/engine/decisions.rs src/engine/error.rs src/engine/inputs.rs src/engine/machine.rs src/engine/machine/approval.rs src/engine/machine/execution.rs src/engine/machine/recovery.rs src/engine/machine/turn.rs src/engine/model.rs src/engine/policies.rs src/engine/policy_change.rs src/engine/results.rs src/engine/state.rs src/engine/tools.rs src/event.rs src/mcp/mod.rs src/mcp/listing.rs src/mcp/rpc.rs src/providers/mod.rs src/providers/anthropic.rs src/providers/config.rs src/providers/demo/mod.rs src/providers/demo/inputs.rs src/providers/error.rs src/providers/openai.rs src/providers/retry.rs src/providers/sse.rs src/providers/stream.rs src/schema/mod.rs src/schema/keywords.rs src/schema/value.rs src/schema/walk.rs src/store/mod.rs src/store/memory.rs src/store/ownership.rs src/store/page.rs src/store/record.rs src/store/summary.rs src/store/wire.rs src/thread/mod.rs src/thread/context.rs src/thread/entry.rs src/thread/id.rs src/thread/message.rs src/thread/window.rs

src/lib.rs:
src/engine/mod.rs:
src/engine/audit.rs:
src/engine/decisions.rs:
src/engine/error.rs:
src/engine/inputs.rs:
src/engine/machine.rs:
src/engine/machine/approval.rs:
src/engine/machine/execution.rs:
src/engine/machine/recovery.rs:
src/engine/machine/turn.rs:
src/engine/model.rs:
src/engine/policies.rs:
src/engine/policy_change.rs:
src/engine/results.rs:
src/engine/state.rs:
src/engine/tools.rs:
src/event.rs:
src/mcp/mod.rs:
src/mcp/listing.rs:
src/mcp/rpc.rs:
src/providers/mod.rs:
src/providers/anthropic.rs:
src/providers/config.rs:
src/providers/demo/mod.rs:
src/providers/demo/inputs.rs:
src/providers/error.rs:
src/providers/openai.rs:
src/providers/retry.rs:
src/providers/sse.rs:
src/providers/stream.rs:
src/schema/mod.rs:
src/schema/keywords.rs:
src/schema/value.rs:
src/schema/walk.rs:
src/store/mod.rs:
src/store/memory.rs:
src/store/ownership.rs:
src/store/page.rs:
src/store/record.rs:
src/store/summary.rs:
src/store/wire.rs:
src/thread/mod.rs:
src/thread/context.rs:
src/thread/entry.rs:
src/thread/id.rs:
src/thread/message.rs:
src/thread/window.rs:
