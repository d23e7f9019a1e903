#!/usr/bin/env bash
# Installs the Rust side of the toolchain, idempotently: the wasm target and the
# wasm-bindgen CLI at exactly the version Cargo.lock pins.
set -euo pipefail
cd "$(dirname "$0")/.."

if ! rustup target list --installed | grep -qx wasm32-unknown-unknown; then
  rustup target add wasm32-unknown-unknown
fi

want=$(awk '/^name = "wasm-bindgen"$/ { getline; gsub(/version = |"/, ""); print; exit }' Cargo.lock)
have=$(wasm-bindgen --version 2>/dev/null | awk '{print $2}' || true)
if [ -n "$want" ] && [ "$have" != "$want" ]; then
  # No --locked: the registry here lacks one version the CLI's lock file pins.
  echo "installing wasm-bindgen-cli $want (have: ${have:-none})"
  cargo install wasm-bindgen-cli --version "$want" --force
fi
