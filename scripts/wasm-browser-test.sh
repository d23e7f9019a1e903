#!/usr/bin/env bash
# Runs the Rust tests that need a browser (wasm-bindgen-test) in one browser: the store
# contract suite on IndexedDB, on the memory store and on the remote store (the package's
# handler over Postgres) with the IndexedDB-only tests (tests/browser_store.rs), and the Rust
# API (tests/rust_api.rs):
#   scripts/wasm-browser-test.sh chromium|firefox|webkit
#
# One retry policy for every engine, and only for the runner's own failure: once in a few runs
# on these shared machines the browser page never reports (wasm-bindgen-test-runner prints
# "Failed to detect test as having been run" and no test result; the same tests pass on a
# rerun). That run is repeated once, said out loud. A run that reported anything else — a
# failing test, a panic, a trap — fails at once: retrying it could hide a real failure, such as
# a corrupted heap that shows once in many runs.
set -uo pipefail
cd "$(dirname "$0")/.."

engine=${1:?usage: $0 chromium|firefox|webkit}
export CARGO_TARGET_WASM32_UNKNOWN_UNKNOWN_RUNNER=wasm-bindgen-test-runner
# The whole binary's limit (it passes in ~30 s): a page that never reports costs this much.
timeout=300
run=(cargo test --target wasm32-unknown-unknown --test browser_store --test rust_api)
case "$engine" in
  chromium) export CHROMEDRIVER=${CHROMEDRIVER:-$(command -v chromedriver)}; timeout=120 ;;
  firefox) export GECKODRIVER=${GECKODRIVER:-$(command -v geckodriver)} ;;
  webkit) export SAFARIDRIVER=${SAFARIDRIVER:-$(command -v WebKitWebDriver)}; run=(xvfb-run -a "${run[@]}") ;;
  *) echo "unknown engine $engine" >&2; exit 2 ;;
esac

export WASM_BINDGEN_TEST_TIMEOUT=${WASM_BINDGEN_TEST_TIMEOUT:-$timeout}
log=$(mktemp)
# The remote store's contract runs against the package's store handler over a throwaway
# Postgres (tests/remote/contract-server.mjs, needs pkg/): on a fixed port, so that the test
# binary, built with its URL, is not rebuilt for every run.
port=${GATEHOUSE_REMOTE_PORT:-38417}
node tests/remote/contract-server.mjs --port "$port" >"$log.server" 2>&1 &
server=$!
trap 'kill $server 2>/dev/null; wait $server 2>/dev/null; rm -f "$log" "$log.server"' EXIT
for _ in $(seq 1 300); do
  grep -q '^http' "$log.server" && break
  kill -0 $server 2>/dev/null || { cat "$log.server"; echo "the contract server did not start" >&2; exit 1; }
  sleep 0.1
done
export GATEHOUSE_REMOTE_URL=$(grep -m1 '^http' "$log.server")
[ -n "$GATEHOUSE_REMOTE_URL" ] || { cat "$log.server"; echo "the contract server did not start" >&2; exit 1; }
for attempt in 1 2; do
  "${run[@]}" 2>&1 | tee "$log"
  status=${PIPESTATUS[0]}
  [ "$status" -eq 0 ] && exit 0
  if [ "$attempt" -eq 1 ] && grep -q "Failed to detect test as having been run" "$log" \
    && ! grep -qE "test result:|FAILED|panicked|RuntimeError|unreachable" "$log"; then
    echo "browser tests in $engine: the page never reported (no test result, no panic); running it once more"
    continue
  fi
  exit "$status"
done
exit 1
