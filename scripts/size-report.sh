#!/usr/bin/env bash
# Size report of the npm package: raw / gzip -9 / brotli sizes of pkg/ files, then where the
# wasm bytes are, by crate and by module (twiggy's shallow sizes, summed).
#
#   scripts/size-report.sh              build the package (scripts/build-pkg.sh), then report
#   scripts/size-report.sh --no-build   report on the existing pkg/ and release wasm
#   SIZE_REPORT_TOP=40 scripts/...      how many modules to list (default 25)
#
# The breakdown runs wasm-bindgen --keep-debug on the release wasm and wasm-opt with the
# shipped flags plus -g (names kept), so its items are the shipped functions. Two caveats
# when reading it: rustc inlines an awaited async fn into its caller's state machine (the
# driver's `drive` holds most of what it awaits), and generic code is counted under the crate
# that defines it (`serde_json::...<gatehouse_agent::Message>` is serde_json, `core::ptr::
# drop_in_place<...>` is core). `[data]` is .rodata: string literals, panic locations,
# unicode and float tables. Needs twiggy (cargo install twiggy); skipped if missing.
set -euo pipefail
cd "$(dirname "$0")/.."

build=1
for arg in "$@"; do
  case "$arg" in
    --no-build) build=0 ;;
    -h | --help) sed -n '2,15p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
    *) echo "unknown argument: $arg" >&2; exit 2 ;;
  esac
done

release_wasm=target/pkg/wasm32-unknown-unknown/release/gatehouse_agent.wasm   # scripts/build-pkg.sh
if [ "$build" = 1 ]; then
  ./scripts/build-pkg.sh >/dev/null
elif [ ! -f pkg/gatehouse_bg.wasm ] || [ ! -f "$release_wasm" ]; then
  echo "no pkg/ or release wasm: run without --no-build first" >&2
  exit 1
fi

have_brotli=0
command -v brotli >/dev/null && have_brotli=1
echo "== package files (bytes)"
if [ "$have_brotli" = 1 ]; then
  printf '%-24s %9s %9s %9s\n' file raw gzip-9 brotli
else
  printf '%-24s %9s %9s   (brotli CLI not found: apt-get install brotli)\n' file raw gzip-9
fi
for f in gatehouse_bg.wasm gatehouse.js gatehouse_wasm.js gatehouse.d.ts gatehouse_wasm.d.ts; do
  [ -f "pkg/$f" ] || continue
  raw=$(wc -c <"pkg/$f")
  gz=$(gzip -9 -c "pkg/$f" | wc -c)
  if [ "$have_brotli" = 1 ]; then
    br=$(brotli -q 11 -c "pkg/$f" | wc -c)
    printf '%-24s %9d %9d %9d\n' "$f" "$raw" "$gz" "$br"
  else
    printf '%-24s %9d %9d\n' "$f" "$raw" "$gz"
  fi
done
snippets=$(find pkg/snippets -name '*.js' 2>/dev/null | sort)
if [ -n "$snippets" ]; then
  # shellcheck disable=SC2086
  raw=$(cat $snippets | wc -c) gz=$(cat $snippets | gzip -9 | wc -c)
  if [ "$have_brotli" = 1 ]; then
    # shellcheck disable=SC2086
    printf '%-24s %9d %9d %9d\n' "snippets/*.js" "$raw" "$gz" "$(cat $snippets | brotli -q 11 -c | wc -c)"
  else
    printf '%-24s %9d %9d\n' "snippets/*.js" "$raw" "$gz"
  fi
fi

if ! command -v twiggy >/dev/null; then
  echo
  echo "(twiggy not found: skipping the by-crate breakdown; cargo install twiggy)"
  exit 0
fi

tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
wasm-bindgen "$release_wasm" --out-dir "$tmp" --out-name gatehouse --target web --keep-debug
named="$tmp/gatehouse_bg.wasm"
# The wasm-opt and flags build-pkg.sh uses (binaryen from npm), else a wasm-opt on PATH.
wasm_opt=node_modules/.bin/wasm-opt
[ -x "$wasm_opt" ] || wasm_opt=$(command -v wasm-opt || true)
eval "$(sed -n '/^wasm_opt_flags=(/,/)$/p' scripts/build-pkg.sh)"
if [ -n "$wasm_opt" ] && [ -n "${wasm_opt_flags+x}" ]; then
  "$wasm_opt" "$named" "${wasm_opt_flags[@]}" -g -o "$tmp/named.wasm"
  named="$tmp/named.wasm"
else
  echo "(wasm-opt or build-pkg.sh's flags not found: breakdown of the un-optimized wasm-bindgen output)"
fi

twiggy top "$named" >"$tmp/top.txt"
# Each item -> crate (and crate::module). Names look like `gatehouse_agent::driver::drive::{{closure}}::h..`,
# `<f64 as core[c5930c85a12de822]::fmt::Display>::fmt`, `<&mut serde_json::de::Deserializer<R> as ..>`,
# `byn$mgfn-shared$core::..` (functions binaryen merged), `data segment ".rodata.3"`, `import ...`.
awk -F '┊' -v top="${SIZE_REPORT_TOP:-25}" '
function classify(name,    s, c, m, parts) {
  if (name ~ /^data segment/) return "[data]";
  if (name ~ /^"/) return "";  # custom sections (names kept by -g): not shipped
  if (name ~ /^import /) return "[imports]";
  if (name ~ /^export /) return "[exports]";
  if (name ~ /^(type|elem|table|memory|global|code|wasm|element|data)(\[| |$)/) return "[wasm sections]";
  s = name;
  sub(/^byn\$mgfn-shared\$/, "", s);
  gsub(/\[[0-9a-f]+\]/, "", s);            # crate disambiguators
  gsub(/^[<(&]+/, "", s);
  sub(/^mut /, "", s); sub(/^dyn /, "", s);
  gsub(/^[<(&]+/, "", s);
  if (s !~ /::/) return "[glue, builtins]";  # export shims, __wbindgen_*, memcpy, __multi3
  split(s, parts, "::");
  c = parts[1];
  if (c ~ /^(f32|f64|[iu](8|16|32|64|128|size)|str|char|bool|\[.*|[A-Z]|_)( |>|$)/ || c ~ /^(f32|f64|str|char|bool|[A-Z])$/) {
    # <f64 as core::fmt::Display>::fmt, <str>::to_lowercase, <I as IntoIterator>: the trait or core
    if (match(s, / as [A-Za-z_][A-Za-z0-9_]*::/)) { c = substr(s, RSTART + 4, RLENGTH - 6); }
    else c = "core";
    return c;
  }
  sub(/[<> ].*$/, "", c);
  return c;
}
function module(name, crate,    s, parts, n) {
  s = name;
  sub(/^byn\$mgfn-shared\$/, "", s);
  gsub(/\[[0-9a-f]+\]/, "", s);
  gsub(/^[<(&]+/, "", s); sub(/^mut /, "", s); sub(/^dyn /, "", s);
  n = split(s, parts, "::");
  if (n < 3 || crate ~ /^\[/) return crate;
  sub(/[<> ].*$/, "", parts[2]);
  if (parts[2] ~ /^(_|\{\{closure\}\}|h[0-9a-f]+)$/ || parts[2] == "") return crate;
  return crate "::" parts[2];
}
NF >= 3 {
  b = $1; gsub(/[ \t]/, "", b);
  if (b !~ /^[0-9]+$/) next;
  name = $3; sub(/^[ \t]+/, "", name); sub(/[ \t]+$/, "", name);
  if (name ~ /^(\.\.\. and|Σ)/) next;
  c = classify(name);
  if (c == "") next;
  bytes[c] += b; items[c]++; total += b;
  m = module(name, c); mbytes[m] += b;
}
END {
  printf "\n== wasm by crate (shallow bytes after the shipped wasm-opt passes; total %d)\n", total;
  n = 0; for (c in bytes) keys[++n] = c;
  for (i = 1; i <= n; i++) for (j = i + 1; j <= n; j++) if (bytes[keys[j]] > bytes[keys[i]]) { t = keys[i]; keys[i] = keys[j]; keys[j] = t; }
  for (i = 1; i <= n; i++) printf "%9d %6.1f%% %6d items  %s\n", bytes[keys[i]], 100 * bytes[keys[i]] / total, items[keys[i]], keys[i];
  printf "\n== top %d modules\n", top;
  n = 0; for (m in mbytes) mk[++n] = m;
  for (i = 1; i <= n; i++) for (j = i + 1; j <= n; j++) if (mbytes[mk[j]] > mbytes[mk[i]]) { t = mk[i]; mk[i] = mk[j]; mk[j] = t; }
  for (i = 1; i <= n && i <= top; i++) printf "%9d %6.1f%%  %s\n", mbytes[mk[i]], 100 * mbytes[mk[i]] / total, mk[i];
}' "$tmp/top.txt"

echo
echo "== largest items"
grep -v '"' "$tmp/top.txt" | sed -n '3,22p' | cut -c1-150
