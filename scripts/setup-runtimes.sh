#!/usr/bin/env bash
# Installs what tests/runtimes runs the store handler in (tests/runtimes/package-lock.json):
# Deno and Bun from their linux-x64 npm packages (the binaries are in them), miniflare and
# workerd, Next.js, Hono, pg. Its own package, so the rest of the project's setup does not
# download ~700 MB of runtimes; installed as the root package is (scripts/setup-npm.sh: only
# when the lock file changed since the last install).
set -euo pipefail
exec "$(dirname "$0")/setup-npm.sh" tests/runtimes
