#!/usr/bin/env bash
# Serves the demo app and the widget page on 127.0.0.1 (default port 8080; PORT=... to change).
# Needs only node: it runs tests/model-server/server.mjs with --static on the repository root,
# so the demo (www/) imports the SDK from /pkg/ exactly as built by ./scripts/build-pkg.sh.
# `make demo` runs ./scripts/build-pkg.sh && ./scripts/serve-demo.sh.
# With --remote (`make demo-remote`) threads live in Postgres: scripts/demo-store.mjs starts a
# throwaway cluster and the package's store handler, and the script prints a desktop page (the
# tools and the model) and a phone page (approvals only) on the same threads.
set -euo pipefail
cd "$(dirname "$0")/.."

remote=0
[[ "${1:-}" == "--remote" ]] && remote=1

PORT="${PORT:-8080}"
if [[ ! -f pkg/gatehouse.js || ! -f pkg/gatehouse_bg.wasm ]]; then
  echo "serve-demo: pkg/ is missing: build it first with ./scripts/build-pkg.sh" >&2
  exit 1
fi
if ! command -v node >/dev/null; then
  echo "serve-demo: node is required" >&2
  exit 1
fi

# The in-browser model option's test model (make setup-model), copied into the build output so
# the static server (which stays inside the repository) serves it.
model_dir=${GATEHOUSE_MODEL_DIR:-${XDG_CACHE_HOME:-${HOME:-/tmp}/.cache}/gatehouse}
model=SmolLM2-135M-Instruct.Q4_1.gguf
if [[ -f "$model_dir/$model" ]]; then
  mkdir -p target/demo/models
  cmp -s "$model_dir/$model" "target/demo/models/$model" || cp "$model_dir/$model" target/demo/models/
else
  echo "serve-demo: no test model in $model_dir (./scripts/setup-model.sh): the in-browser model option will fail" >&2
fi

port_file="$(mktemp -u "${TMPDIR:-/tmp}/gatehouse-demo-port.XXXXXX")"
# --isolate: cross-origin isolation (COOP + COEP), so the in-browser model runs on threads.
node tests/model-server/server.mjs --static . --home /www/ --port "$PORT" --port-file "$port_file" --ttl-seconds 0 --isolate &
server=$!
trap 'kill "$server" 2>/dev/null || true; rm -f "$port_file"' EXIT INT TERM

for _ in $(seq 1 100); do
  [[ -s "$port_file" ]] && break
  if ! kill -0 "$server" 2>/dev/null; then
    echo "serve-demo: the server did not start (is port $PORT in use? try PORT=8081 $0)" >&2
    exit 1
  fi
  sleep 0.1
done
port="$(cat "$port_file")"
if [[ "$remote" == 1 ]]; then
  store_log="$(mktemp "${TMPDIR:-/tmp}/gatehouse-demo-store.XXXXXX")"
  node scripts/demo-store.mjs >"$store_log" 2>&1 &
  store=$!
  trap 'kill "$server" "$store" 2>/dev/null || true; wait "$store" 2>/dev/null; rm -f "$port_file" "$store_log"' EXIT INT TERM
  for _ in $(seq 1 300); do
    grep -q '^http' "$store_log" && break
    if ! kill -0 "$store" 2>/dev/null; then
      cat "$store_log" >&2
      echo "serve-demo: the thread store did not start (is Postgres installed? make setup-postgres)" >&2
      exit 1
    fi
    sleep 0.1
  done
  store_url="$(grep -m1 '^http' "$store_log")"
  thread="thread_demo$(date +%s)"
  echo
  echo "  Threads in Postgres, behind the store handler at $store_url"
  echo "  Desktop (tools, model): http://127.0.0.1:$port/www/?store=$store_url#thread=$thread"
  echo "  Phone (approves):       http://127.0.0.1:$port/www/?store=$store_url&device=phone#thread=$thread"
  echo "  On the phone, \"Enable push\" takes approval requests as notifications; each pending call's"
  echo "  decision link (as an email would carry it) is printed here."
  echo
  echo "  (Ctrl+C to stop)"
  # The store's own lines from here on: the decision links.
  tail -n +2 -f "$store_log" &
  trap 'kill "$server" "$store" $! 2>/dev/null || true; wait "$store" 2>/dev/null; rm -f "$port_file" "$store_log"' EXIT INT TERM
  wait "$server"
  exit
fi
echo
echo "  Gatehouse demo:   http://127.0.0.1:$port"
echo "  Widget demo:      http://127.0.0.1:$port/www/article.html"
echo
echo "  (Ctrl+C to stop)"
wait "$server"
