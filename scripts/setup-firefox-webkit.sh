#!/usr/bin/env bash
# Installs what the Firefox and WebKit runs of the browser tests need, idempotently: Debian's
# Firefox ESR, WebKitGTK's WebDriver server (it brings MiniBrowser) and Xvfb (WebKitGTK needs a
# display), and geckodriver at a pinned version (for wasm-bindgen-test in Firefox). Needs root.
set -euo pipefail

missing=()
command -v firefox-esr >/dev/null || missing+=(firefox-esr)
command -v WebKitWebDriver >/dev/null || missing+=(webkit2gtk-driver)
command -v xvfb-run >/dev/null || missing+=(xvfb)
if [ ${#missing[@]} -gt 0 ]; then
  echo "installing ${missing[*]}"
  export DEBIAN_FRONTEND=noninteractive
  apt-get update -qq
  apt-get install -y -qq "${missing[@]}" >/dev/null
fi

# No --locked, as for wasm-bindgen-cli: the crate registry here lacks some pinned versions.
want=0.37.1
have=$(geckodriver --version 2>/dev/null | awk 'NR == 1 { print $2 }' || true)
if [ "$have" != "$want" ]; then
  echo "installing geckodriver $want (have: ${have:-none})"
  cargo install geckodriver --version "$want" --force
fi
