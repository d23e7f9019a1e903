#!/usr/bin/env bash
# Benchmarks Gatehouse against the Vercel AI SDK in headless Chromium (bench/README.md).
# Builds pkg/ first when it is missing or older than the crate sources; arguments go to
# bench/run.mjs (e.g. --quick). Prints one table; writes bench-output/results.json.
set -euo pipefail
cd "$(dirname "$0")/.."
if [[ ! -f pkg/gatehouse_bg.wasm ]] || [[ -n "$(find src Cargo.toml Cargo.lock -newer pkg/gatehouse_bg.wasm -print -quit)" ]]; then
  ./scripts/build-pkg.sh
fi
exec node bench/run.mjs "$@"
