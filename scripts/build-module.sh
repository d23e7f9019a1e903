#!/usr/bin/env bash
# Builds one of the package's own wasm modules, which gatehouse.js loads only when an agent
# uses them, into pkg/<dir>/: release wasm, wasm-bindgen (--target web: <dir>/index.js
# instantiates it on first use), wasm-opt, and pkg-template/<dir>/index.js.
#   scripts/build-module.sh demo-model   the offline demo model (demo-model/)
#   scripts/build-module.sh mcp          the MCP client (mcp-client/)
#   scripts/build-module.sh grants       remembered grants' reader and matcher (grants-module/)
# Built as the main wasm is (scripts/build-pkg.sh: the pinned nightly, std rebuilt for size,
# panics that trap), in the same target directory.
set -euo pipefail
cd "$(dirname "$0")/.."

case "$1" in
  demo-model) crate=gatehouse-demo-model name=model ;;
  mcp) crate=gatehouse-mcp-client name=client ;;
  grants) crate=gatehouse-grants name=grants ;;
  *) echo "usage: $0 demo-model|mcp|grants" >&2; exit 2 ;;
esac
out=pkg/$1
toolchain=$(./scripts/pkg-toolchain.sh)
target_dir=target/pkg
RUSTFLAGS="-Zunstable-options -Csymbol-mangling-version=legacy -Zlocation-detail=none" \
  CARGO_TARGET_DIR=$target_dir cargo "+$toolchain" build --release -p "$crate" \
  --target wasm32-unknown-unknown -Z build-std=std,panic_abort \
  -Z build-std-features=optimize_for_size -Z panic-immediate-abort \
  --config 'profile.release.panic="immediate-abort"'
rm -rf "$out"
mkdir -p "$out"
wasm-bindgen "$target_dir/wasm32-unknown-unknown/release/${crate//-/_}.wasm" \
  --out-dir "$out" --out-name "$name" --target web --remove-producers-section
rm -f "$out/${name}_bg.wasm.d.ts" "$out/$name.d.ts" # only index.js imports it
node_modules/.bin/wasm-opt "$out/${name}_bg.wasm" -Oz --converge \
  --enable-bulk-memory --enable-nontrapping-float-to-int --enable-sign-ext \
  --enable-mutable-globals --enable-reference-types --enable-multivalue \
  -o "$out/${name}_bg.wasm"
# index.js, and the module's other JS (mcp/questions.js).
cp "pkg-template/$1/"*.js "$out/"
printf '%-24s %8d B raw %8d B gzip -9\n' "$1/${name}_bg.wasm" \
  "$(wc -c < "$out/${name}_bg.wasm")" "$(gzip -9 -c "$out/${name}_bg.wasm" | wc -c)"
