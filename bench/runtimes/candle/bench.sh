#!/bin/sh
# The runtime comparison of issue #24, run by hand (not in make test or make bench: the candle
# build takes ~10 min on 2 cores). Builds the candle bench crate, then runs candle and wllama
# in turns, 3 times each, and a blank page's baseline; each prints one JSON line.
set -e
cd "$(dirname "$0")"
RUSTFLAGS='-C target-feature=+simd128 --cfg getrandom_backend="wasm_js"' \
  cargo build --release --target wasm32-unknown-unknown -j 2
wasm-bindgen --target web --out-dir pkg target/wasm32-unknown-unknown/release/candle_bench.wasm
printf 'candle_bench_bg.wasm %d B raw, %d B gzip -9\n' "$(wc -c < pkg/candle_bench_bg.wasm)" \
  "$(gzip -9 -c pkg/candle_bench_bg.wasm | wc -c)"
for i in 1 2 3; do
  for w in candle wllama; do
    echo "# run $i $w $(date -u +%T) loadavg_before: $(cat /proc/loadavg)"
    timeout 600 node run.mjs $w 2>&1 | grep -v 'Failed to load resource'
  done
done
echo "# blank $(date -u +%T) loadavg_before: $(cat /proc/loadavg)"
node run.mjs blank
