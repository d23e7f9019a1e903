#!/usr/bin/env bash
# Builds the npm package into pkg/: release wasm, wasm-bindgen (--target web), wasm-opt,
# the package.json and README from pkg-template/. Prints raw and gzipped sizes.
set -euo pipefail
cd "$(dirname "$0")/.."

# The release wasm, with std rebuilt for size (scripts/pkg-toolchain.sh installs the nightly
# this needs). Measured on the same source (wasm after wasm-opt, gzip -9): stable with
# panic = "abort" 207,878 B; this build 188,002 B (-9.6%). What each flag does:
# -Z build-std with std's optimize_for_size feature compiles std with our profile (opt-level
# "z", LTO) and its small-code variants; panic = "immediate-abort" makes a panic trap at
# once: no formatting, messages or unwinding code (panics are bugs here, errors are values);
# legacy symbol mangling, because nightly's v0 names make longer closure shim names in the
# wasm and the JS glue; -Zlocation-detail=none drops the file/line strings of panic
# locations, which immediate-abort never prints. Tried and not kept: -Ctarget-cpu=mvp,
# opt-level "s", -Zinline-mir=no, a lower inline threshold (the same or larger), and
# -Zfmt-debug=none (-3 KB, but serde's own error messages print strings with Debug).
# Its own target directory, so the stable builds of the tests keep theirs.
toolchain=$(./scripts/pkg-toolchain.sh)
target_dir=target/pkg
# binaryen 132 from npm (package-lock.json). Debian's wasm-opt 108 produced a module whose
# function table Chromium rejects at instantiation ("Table.set(): function-typed object
# must be null"), so it is not used.
# --converge repeats -Oz while it still shrinks the module. --low-memory-unused lets it fold
# constant offsets into loads and stores: it assumes nothing lives below address 1024, which
# holds for rustc's wasm layout (the 1 MiB stack comes first and grows down towards 0, so
# only the last KiB of a full stack would be there; the data follows the stack).
# -ocimfs=20: inline a function that has one caller only when it is tiny. By default -Oz
# inlines every such function, which makes a few giant functions (the async driver, the
# exported methods) with thousands of locals; that is ~2% smaller raw but compresses ~6%
# worse (gzip and brotli), and the compressed size is what is downloaded.
# --reorder-functions-by-name (last; names are still there from wasm-bindgen) puts each
# module's functions side by side, which compresses ~0.7% better than -Oz's order.
# (scripts/size-report.sh reads this array, to measure what ships.)
wasm_opt_flags=(-Oz --converge --low-memory-unused
  --one-caller-inline-max-function-size=20 --reorder-functions-by-name
  --enable-bulk-memory --enable-nontrapping-float-to-int --enable-sign-ext
  --enable-mutable-globals --enable-reference-types --enable-multivalue)
# build <features> <out-dir> <name>: the crate with <features>, through wasm-bindgen and wasm-opt.
build() {
  RUSTFLAGS="-Zunstable-options -Csymbol-mangling-version=legacy -Zlocation-detail=none" \
    CARGO_TARGET_DIR=$target_dir cargo "+$toolchain" build --release --lib \
    --no-default-features --features "$1" --target wasm32-unknown-unknown -Z build-std=std,panic_abort \
    -Z build-std-features=optimize_for_size -Z panic-immediate-abort \
    --config 'profile.release.panic="immediate-abort"'
  wasm-bindgen $target_dir/wasm32-unknown-unknown/release/gatehouse_agent.wasm \
    --out-dir "$2" --out-name "$3" --target web --remove-producers-section
  node_modules/.bin/wasm-opt "$2/$3_bg.wasm" "${wasm_opt_flags[@]}" -o "$2/$3_bg.wasm"
}
rm -rf pkg
# The same crate with the remote store (docs/design.md, "The remote store's module"):
# gatehouse.js loads it for the first remote agent, or at initRemote(). Its wasm-bindgen
# module is gatehouse_remote.js beside the main one; their snippets (the error class among
# them) are the same files, so both modules throw the one GatehouseError. Built first, so
# that the release wasm left in target/pkg is the main one (scripts/size-report.sh reads it).
remote_out=$(mktemp -d)
build browser,remote "$remote_out" gatehouse_remote
# The main wasm, what init() loads: without the remote store.
build browser pkg gatehouse
diff -r "$remote_out/snippets" pkg/snippets
mv "$remote_out/gatehouse_remote.js" "$remote_out/gatehouse_remote.d.ts" "$remote_out/gatehouse_remote_bg.wasm" pkg/
rm -rf "$remote_out"
# wasm-bindgen's module becomes gatehouse_wasm.js (the wasm keeps its name: the module finds
# it by URL in the same folder), behind the hand-written entry gatehouse.js, which imports
# the error class from its snippet (a hashed path, filled in here).
mv pkg/gatehouse.js pkg/gatehouse_wasm.js
mv pkg/gatehouse.d.ts pkg/gatehouse_wasm.d.ts
rm pkg/gatehouse_bg.wasm.d.ts # the wasm's raw exports: nothing for users
# The generated d.ts ends with init/initSync and `InitOutput`, the wasm's raw exports
# (mangled closure names): the entry's d.ts declares init and initSync instead.
# The remote build's d.ts likewise: gatehouse.js imports it (the type check reads it), users
# never do.
for d in pkg/gatehouse_wasm.d.ts pkg/gatehouse_remote.d.ts; do
  sed -i '/^export type InitInput/,$d' "$d"
  sed -i '1i /// <reference lib="esnext.disposable" />' "$d"
done
error_module=$(cd pkg && ls snippets/*/src/js/error.js)
sed "s|__ERROR_MODULE__|./$error_module|" pkg-template/gatehouse.js > pkg/gatehouse.js
cp pkg-template/gatehouse.d.ts pkg-template/package.json pkg-template/README.md LICENSE pkg/
# The subpath exports, hand-written JS as it ships: gatehouse-agent/react, gatehouse-agent/ui
# (and its ui.css).
cp pkg-template/react.js pkg-template/react.d.ts pkg/
# OpenTelemetry spans: a module of the entry's own, imported only by an agent given `telemetry`.
cp pkg-template/telemetry.js pkg/
# WebMCP page tools: the connection gatehouse.js uses for the `webmcp:` server, imported only
# by an agent opened with `webmcp`.
cp pkg-template/webmcp.js pkg/
# gatehouse-agent/ag-ui: the AG-UI 1.0 adapter (hand-written JS, no dependency).
cp pkg-template/ag-ui.d.ts pkg/
cp -r pkg-template/ui pkg/ui
# gatehouse-agent/server: the store handler (hand-written JS) over its wasm core in pkg/server/.
cp pkg-template/server.js pkg-template/server.d.ts pkg/
./scripts/build-server-core.sh
# gatehouse-agent/sw: the service worker's approval notifications, and the page's
# subscribeToApprovals (hand-written JS, no dependency).
sed "s|__ERROR_MODULE__|./$error_module|" pkg-template/sw.js > pkg/sw.js
sed "s|__ERROR_MODULE__|./$error_module|" pkg-template/ag-ui.js > pkg/ag-ui.js
cp pkg-template/sw.d.ts pkg/
# The modules the main wasm leaves out (it is built without the `demo`, `mcp` and `grants`
# features), each its own wasm that gatehouse.js imports only when an agent uses it: the demo
# model (provider "demo" or no model), the MCP client (`mcpServers`) and remembered grants'
# reader and matcher (a grant made, listed, or held by the store), with their shared loader.
cp pkg-template/load-wasm.js pkg/
./scripts/build-module.sh demo-model
./scripts/build-module.sh mcp
./scripts/build-module.sh grants
# gatehouse-agent/local, the in-page model, with the llama.cpp runtime it runs (wllama's ESM
# build, its wasm and licence), so that no CDN is asked; gatehouse.js imports it only for
# `provider: "local"` (docs/design.md, "A model in the page").
cp -r pkg-template/local pkg/local
mkdir -p pkg/local/wllama
cp node_modules/@wllama/wllama/esm/index.js node_modules/@wllama/wllama/esm/wasm/wllama.wasm \
  node_modules/@wllama/wllama/LICENCE pkg/local/wllama/
# Its "compat" build (wasm32, no JSPI), for browsers without WebAssembly memory64 or JSPI
# (Safari, WebKitGTK): wllama would fetch it from jsDelivr; index.js points it here instead.
mkdir -p pkg/local/wllama/compat
cp node_modules/@wllama/wllama-compat/wasm/wllama.js node_modules/@wllama/wllama-compat/wasm/wllama.wasm \
  pkg/local/wllama/compat/
version=$(awk -F'"' '/^version = / { print $2; exit }' Cargo.toml)
sed -i "s/\"version\": \"[^\"]*\"/\"version\": \"$version\"/" pkg/package.json
# The CDN URLs in the package README name the version being built.
sed -i "s/gatehouse-agent@[0-9][0-9A-Za-z.+-]*/gatehouse-agent@$version/g" pkg/README.md

size() { printf '%-24s %8d B raw %8d B gzip -9\n' "$1" "$(wc -c < "$2")" "$(gzip -9 -c "$2" | wc -c)"; }
# What a page downloads: the wasm, and the JS modules (the entry, wasm-bindgen's module and
# its snippets) measured together, as a bundler would serve them.
js=$(mktemp)
cat pkg/gatehouse.js pkg/gatehouse_wasm.js $(find pkg/snippets -name '*.js' | sort) > "$js"
echo "package sizes:"
size gatehouse_bg.wasm pkg/gatehouse_bg.wasm
size "JS (all modules)" "$js"
echo "with the remote store (loaded instead, or as well, for storage.kind \"remote\"):"
size gatehouse_remote_bg.wasm pkg/gatehouse_remote_bg.wasm
size "remote JS" pkg/gatehouse_remote.js
echo "OpenTelemetry spans (loaded only for an agent given telemetry):"
size "telemetry.js" pkg/telemetry.js
echo "WebMCP page tools (loaded only for an agent opened with webmcp):"
size "webmcp.js" pkg/webmcp.js
echo "the AG-UI adapter (gatehouse-agent/ag-ui, imported only by apps that use it):"
size "ag-ui.js" pkg/ag-ui.js
echo "the demo model (loaded only for provider \"demo\"):"
cat pkg/demo-model/*.js > "$js"
size "demo JS" "$js"
size "demo model_bg.wasm" pkg/demo-model/model_bg.wasm
echo "the MCP client (loaded only for mcpServers):"
cat pkg/mcp/*.js > "$js"
size "MCP JS" "$js"
size "MCP client_bg.wasm" pkg/mcp/client_bg.wasm
echo "remembered grants (loaded only when a grant is made, listed or held by the store):"
cat pkg/grants/*.js > "$js"
size "grants JS" "$js"
size "grants_bg.wasm" pkg/grants/grants_bg.wasm
echo "gatehouse-agent/local (loaded only for provider \"local\"):"
cat pkg/local/*.js pkg/local/wllama/index.js > "$js"
size "local JS" "$js"
size "local wllama.wasm" pkg/local/wllama/wllama.wasm
size "local compat wasm" pkg/local/wllama/compat/wllama.wasm
rm -f "$js"
