#!/usr/bin/env bash
# Installs what the browser tests need and building does not, idempotently: Debian's Chromium
# and ChromeDriver (needs root). `make demo` does not run it.
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
