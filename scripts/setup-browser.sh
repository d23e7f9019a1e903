#!/usr/bin/env bash
# Installs what the browser tests need, idempotently: Debian's Chromium and ChromeDriver, and
# the npm packages of package-lock.json (playwright-core, typescript, vite, binaryen's wasm-opt).
set -euo pipefail
cd "$(dirname "$0")/.."

# Firefox ESR and WebKitGTK, the other engines the browser tests run in.
./scripts/setup-firefox-webkit.sh

missing=()
command -v chromium >/dev/null || missing+=(chromium)
command -v chromedriver >/dev/null || missing+=(chromium-driver)
if [ ${#missing[@]} -gt 0 ]; then
  echo "installing ${missing[*]}"
  export DEBIAN_FRONTEND=noninteractive
  apt-get update -qq
  apt-get install -y -qq "${missing[@]}" >/dev/null
fi

# npm packages only when the lock file changed since the last install.
stamp=node_modules/.lock-stamp
if [ ! -f "$stamp" ] || ! cmp -s package-lock.json "$stamp"; then
  # Not `npm ci`: the registry here lacks an optional, platform-only dependency of vite
  # (napi-windows-process-start-time), which `npm ci` refuses; `npm install` follows the
  # lock file and skips the missing optional package.
  npm install --no-audit --no-fund --loglevel=error
  cp package-lock.json "$stamp"
fi
