#!/usr/bin/env bash
# Builds the demo model's own wasm (demo-model/) into pkg/demo-model/: release wasm,
# wasm-bindgen (--target web: demo-model/index.js instantiates it on first use), wasm-opt.
# Built as the main wasm is (scripts/build-pkg.sh: the pinned nightly, std rebuilt for size,
# panics that trap), in the same target directory: it is what a new user's first chat
# downloads.
set -euo pipefail
cd "$(dirname "$0")/.."

toolchain=$(./scripts/pkg-toolchain.sh)
target_dir=target/pkg
RUSTFLAGS="-Zunstable-options -Csymbol-mangling-version=legacy -Zlocation-detail=none" \
  CARGO_TARGET_DIR=$target_dir cargo "+$toolchain" build --release -p gatehouse-demo-model \
  --target wasm32-unknown-unknown -Z build-std=std,panic_abort \
  -Z build-std-features=optimize_for_size -Z panic-immediate-abort \
  --config 'profile.release.panic="immediate-abort"'
out=pkg/demo-model
rm -rf "$out"
mkdir -p "$out"
wasm-bindgen $target_dir/wasm32-unknown-unknown/release/gatehouse_demo_model.wasm \
  --out-dir "$out" --out-name model --target web --remove-producers-section
rm -f "$out"/model_bg.wasm.d.ts "$out"/model.d.ts # only index.js imports it
node_modules/.bin/wasm-opt "$out"/model_bg.wasm -Oz --converge \
  --enable-bulk-memory --enable-nontrapping-float-to-int --enable-sign-ext \
  --enable-mutable-globals --enable-reference-types --enable-multivalue \
  -o "$out"/model_bg.wasm
cp pkg-template/demo-model/index.js "$out"/
printf '%-24s %8d B raw %8d B gzip -9\n' "demo-model/model_bg.wasm" \
  "$(wc -c < "$out"/model_bg.wasm)" "$(gzip -9 -c "$out"/model_bg.wasm | wc -c)"
