/work/main/target-base/wasm32-unknown-unknown/release/deps/equivalent-3072c76a742e2831.d: /root/.cargo/registry/src/index.crates.io-1949cf8c6b5b557f/equivalent-1.0.3/src/lib.rs

/work/main/target-base/wasm32-unknown-unknown/release/deps/libequivalent-3072c76a742e2831.rlib: /root/.cargo/registry/src/index.crates.io-1949cf8c6b5b557f/equivalent-1.0.3/src/lib.rs

/work/main/target-base/wasm32-unknown-unknown/release/deps/libequivalent-3072c76a742e2831.rmeta: /root/.cargo/registry/src/index.crates.io-1949cf8c6b5b557f/equivalent-1.0.3/src/lib.rs

/root/.cargo/registry/src/index.crates.io-1949cf8c6b5b557f/equivalent-1.0.3/src/lib.rs:
