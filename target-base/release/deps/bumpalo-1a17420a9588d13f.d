/work/main/target-base/release/deps/bumpalo-1a17420a9588d13f.d: /root/.cargo/registry/src/index.crates.io-1949cf8c6b5b557f/bumpalo-3.20.4/src/lib.rs /root/.cargo/registry/src/index.crates.io-1949cf8c6b5b557f/bumpalo-3.20.4/src/alloc.rs /root/.cargo/registry/src/index.crates.io-1949cf8c6b5b557f/bumpalo-3.20.4/src/../README.md

/work/main/target-base/release/deps/libbumpalo-1a17420a9588d13f.rlib: /root/.cargo/registry/src/index.crates.io-1949cf8c6b5b557f/bumpalo-3.20.4/src/lib.rs /root/.cargo/registry/src/index.crates.io-1949cf8c6b5b557f/bumpalo-3.20.4/src/alloc.rs /root/.cargo/registry/src/index.crates.io-1949cf8c6b5b557f/bumpalo-3.20.4/src/../README.md

/work/main/target-base/release/deps/libbumpalo-1a17420a9588d13f.rmeta: /root/.cargo/registry/src/index.crates.io-1949cf8c6b5b557f/bumpalo-3.20.4/src/lib.rs /root/.cargo/registry/src/index.crates.io-1949cf8c6b5b557f/bumpalo-3.20.4/src/alloc.rs /root/.cargo/registry/src/index.crates.io-1949cf8c6b5b557f/bumpalo-3.20.4/src/../README.md

/root/.cargo/registry/src/index.crates.io-1949cf8c6b5b557f/bumpalo-3.20.4/src/lib.rs:
/root/.cargo/registry/src/index.crates.io-1949cf8c6b5b557f/bumpalo-3.20.4/src/alloc.rs:
/root/.cargo/registry/src/index.crates.io-1949cf8c6b5b557f/bumpalo-3.20.4/src/../README.md:
