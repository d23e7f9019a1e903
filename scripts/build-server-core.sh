#!/usr/bin/env bash
# Builds the store handler's core (server/core) into pkg/server/, beside the handler's own
# modules (pkg-template/server/*.js, copied here; pkg-template/server.js is the entry that
# scripts/build-pkg.sh copies): release wasm, wasm-bindgen
# (--target web: server.js instantiates it with initSync from the bytes beside it), wasm-opt.
# Stable Rust and the workspace's release profile: the handler runs on a server, where a few
# KB do not matter as they do in a page (no -Z build-std as in scripts/build-pkg.sh).
set -euo pipefail
cd "$(dirname "$0")/.."

cargo build --release -p gatehouse-server-core --target wasm32-unknown-unknown
rm -rf pkg/server
mkdir -p pkg/server
wasm-bindgen target/wasm32-unknown-unknown/release/gatehouse_server_core.wasm \
  --out-dir pkg/server --out-name core --target web --remove-producers-section
rm -f pkg/server/core_bg.wasm.d.ts
# Only server/wasm.js and server/threads.js import it; its raw exports are nobody's API.
sed -i '/^export type InitInput/,$d' pkg/server/core.d.ts
echo 'export function initSync(module: unknown): unknown;' >> pkg/server/core.d.ts
node_modules/.bin/wasm-opt pkg/server/core_bg.wasm -Oz --converge \
  --enable-bulk-memory --enable-nontrapping-float-to-int --enable-sign-ext \
  --enable-mutable-globals --enable-reference-types --enable-multivalue \
  -o pkg/server/core_bg.wasm
printf '%-24s %8d B raw %8d B gzip -9\n' "server/core_bg.wasm" \
  "$(wc -c < pkg/server/core_bg.wasm)" "$(gzip -9 -c pkg/server/core_bg.wasm | wc -c)"
cp pkg-template/server/*.js pkg/server/
# RFC 8785 canonical JSON for the approval receipts (server/receipts.js), vendored with its
# licence as the local model's runtime is: the handler's modules import nothing by a bare
# name, so Deno can import them over HTTP.
mkdir -p pkg/server/vendor
cp node_modules/canonicalize/lib/canonicalize.js pkg/server/vendor/canonicalize.js
cp node_modules/canonicalize/LICENSE pkg/server/vendor/canonicalize.LICENSE
