#!/usr/bin/env bash
# Builds the demo model's own wasm (demo-model/) into pkg/demo-model/: release wasm,
# wasm-bindgen (--target web: demo-model/index.js instantiates it on first use), wasm-opt.
# Stable Rust and the workspace's release profile: only agents that use provider "demo"
# download it, so it does not get the main wasm's -Z build-std treatment.
set -euo pipefail
cd "$(dirname "$0")/.."

cargo build --release -p gatehouse-demo-model --target wasm32-unknown-unknown
out=pkg/demo-model
rm -rf "$out"
mkdir -p "$out"
wasm-bindgen target/wasm32-unknown-unknown/release/gatehouse_demo_model.wasm \
  --out-dir "$out" --out-name model --target web --remove-producers-section
rm -f "$out"/model_bg.wasm.d.ts "$out"/model.d.ts # only index.js imports it
node_modules/.bin/wasm-opt "$out"/model_bg.wasm -Oz --converge \
  --enable-bulk-memory --enable-nontrapping-float-to-int --enable-sign-ext \
  --enable-mutable-globals --enable-reference-types --enable-multivalue \
  -o "$out"/model_bg.wasm
cp pkg-template/demo-model/index.js "$out"/
printf '%-24s %8d B raw %8d B gzip -9\n' "demo-model/model_bg.wasm" \
  "$(wc -c < "$out"/model_bg.wasm)" "$(gzip -9 -c "$out"/model_bg.wasm | wc -c)"
