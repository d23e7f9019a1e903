#!/usr/bin/env bash
# Installs the npm packages of package-lock.json, idempotently: binaryen's wasm-opt (the build
# needs it), and the test tools (playwright-core drives the system Chromium and downloads no
# browser; typescript, vite).
#   scripts/setup-npm.sh [DIR]   DIR: another package of the repository (default: its root),
#                                e.g. tests/runtimes (scripts/setup-runtimes.sh)
set -euo pipefail
cd "$(dirname "$0")/.."
cd "${1:-.}"

# npm packages only when the lock file changed since the last install.
stamp=node_modules/.lock-stamp
if [ ! -f "$stamp" ] || ! cmp -s package-lock.json "$stamp"; then
  # Not `npm ci`: the registry here lacks an optional, platform-only dependency of vite
  # (napi-windows-process-start-time), which `npm ci` refuses; `npm install` follows the
  # lock file and skips the missing optional package.
  npm install --no-audit --no-fund --loglevel=error
  cp package-lock.json "$stamp"
fi
