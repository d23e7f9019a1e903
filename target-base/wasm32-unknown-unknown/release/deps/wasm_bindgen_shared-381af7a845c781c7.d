/work/main/target-base/wasm32-unknown-unknown/release/deps/wasm_bindgen_shared-381af7a845c781c7.d: /root/.cargo/registry/src/index.crates.io-1949cf8c6b5b557f/wasm-bindgen-shared-0.2.130/src/lib.rs /root/.cargo/registry/src/index.crates.io-1949cf8c6b5b557f/wasm-bindgen-shared-0.2.130/src/identifier.rs /root/.cargo/registry/src/index.crates.io-1949cf8c6b5b557f/wasm-bindgen-shared-0.2.130/src/tys.rs

/work/main/target-base/wasm32-unknown-unknown/release/deps/libwasm_bindgen_shared-381af7a845c781c7.rlib: /root/.cargo/registry/src/index.crates.io-1949cf8c6b5b557f/wasm-bindgen-shared-0.2.130/src/lib.rs /root/.cargo/registry/src/index.crates.io-1949cf8c6b5b557f/wasm-bindgen-shared-0.2.130/src/identifier.rs /root/.cargo/registry/src/index.crates.io-1949cf8c6b5b557f/wasm-bindgen-shared-0.2.130/src/tys.rs

/work/main/target-base/wasm32-unknown-unknown/release/deps/libwasm_bindgen_shared-381af7a845c781c7.rmeta: /root/.cargo/registry/src/index.crates.io-1949cf8c6b5b557f/wasm-bindgen-shared-0.2.130/src/lib.rs /root/.cargo/registry/src/index.crates.io-1949cf8c6b5b557f/wasm-bindgen-shared-0.2.130/src/identifier.rs /root/.cargo/registry/src/index.crates.io-1949cf8c6b5b557f/wasm-bindgen-shared-0.2.130/src/tys.rs

/root/.cargo/registry/src/index.crates.io-1949cf8c6b5b557f/wasm-bindgen-shared-0.2.130/src/lib.rs:
/root/.cargo/registry/src/index.crates.io-1949cf8c6b5b557f/wasm-bindgen-shared-0.2.130/src/identifier.rs:
/root/.cargo/registry/src/index.crates.io-1949cf8c6b5b557f/wasm-bindgen-shared-0.2.130/src/tys.rs:

# env-dep:CARGO_PKG_VERSION=0.2.130
# env-dep:WBG_VERSION
