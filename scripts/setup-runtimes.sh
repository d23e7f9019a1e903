#!/usr/bin/env bash
# Installs what tests/runtimes runs the store handler in (tests/runtimes/package-lock.json):
# Deno and Bun from their linux-x64 npm packages (the binaries are in them), miniflare and
# workerd, Next.js, Hono, pg. Idempotently: only when the lock file changed since the last
# install. Its own package, so the rest of the project's setup does not download ~700 MB of
# runtimes.
set -euo pipefail
cd "$(dirname "$0")/../tests/runtimes"

stamp=node_modules/.lock-stamp
if [ ! -f "$stamp" ] || ! cmp -s package-lock.json "$stamp"; then
  npm install --no-audit --no-fund --loglevel=error
  cp package-lock.json "$stamp"
fi
