/work/main/target-base/wasm32-unknown-unknown/release/deps/cfg_if-ca713660e80fb5df.d: /root/.cargo/registry/src/index.crates.io-1949cf8c6b5b557f/cfg-if-1.0.5/src/lib.rs

/work/main/target-base/wasm32-unknown-unknown/release/deps/libcfg_if-ca713660e80fb5df.rlib: /root/.cargo/registry/src/index.crates.io-1949cf8c6b5b557f/cfg-if-1.0.5/src/lib.rs

/work/main/target-base/wasm32-unknown-unknown/release/deps/libcfg_if-ca713660e80fb5df.rmeta: /root/.cargo/registry/src/index.crates.io-1949cf8c6b5b557f/cfg-if-1.0.5/src/lib.rs

/root/.cargo/registry/src/index.crates.io-1949cf8c6b5b557f/cfg-if-1.0.5/src/lib.rs:
