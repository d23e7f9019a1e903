# `make test` is the test command (README); `.ci/run` calls it on a fresh machine.
SHELL := /bin/bash
.DEFAULT_GOAL := test

.PHONY: test setup test-native check-wasm check-core-pure fmt

test: setup test-native check-core-pure check-wasm

setup:
	./scripts/setup-rust.sh

test-native:
	cargo test --all-targets

# The pure core (thread, engine, schema, providers) must not touch the browser APIs.
check-core-pure:
	@if grep -rnE 'wasm_bindgen|web_sys|js_sys|gloo|indexed_db' src/thread src/engine src/schema src/providers; then \
	  echo "the pure core must not use wasm-bindgen, web-sys, js-sys, gloo or IndexedDB"; exit 1; \
	else echo "core is pure: ok"; fi

check-wasm:
	cargo build --lib --target wasm32-unknown-unknown

fmt:
	cargo fmt
