#!/usr/bin/env bash
# The toolchain the npm package's wasm is built with, installed if missing; prints its name.
#
# A dated nightly: the package build recompiles std for size (-Z build-std with
# panic = "immediate-abort", see scripts/build-pkg.sh), which only nightly can do, and the
# flags and the wasm's size change between nightlies (before 2025-09 immediate-abort was a
# build-std feature that is a compile error today). Everything else (cargo test, the
# IndexedDB tests in the browser) uses stable.
#
# The machine image's `nightly` is this same build (rustc 1.97.0-nightly e50aa6fba
# 2026-05-19): it is used when it matches, so nothing is downloaded. Otherwise the dated
# toolchain is installed with the minimal profile: rustc (with rust-lld), cargo, the host's
# std (build scripts and proc macros run on the host) and rust-src, the std source that
# -Z build-std compiles for wasm32 (~129 MB downloaded, ~10 s). No wasm32 rust-std:
# build-std makes it.
set -euo pipefail

dated=nightly-2026-05-20
commit=e50aa6fba

toolchain=$dated
if rustc +nightly -V 2>/dev/null | grep -q "($commit "; then
  toolchain=nightly
elif ! rustup toolchain list | grep -q "^$dated-"; then
  rustup toolchain install "$dated" --profile minimal --component rust-src --no-self-update >&2
fi
if ! rustup component list --installed --toolchain "$toolchain" | grep -q '^rust-src'; then
  rustup component add rust-src --toolchain "$toolchain" >&2
fi
echo "$toolchain"
