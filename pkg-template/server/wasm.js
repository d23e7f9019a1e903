// @ts-check
// The store handler's core (server/core, the crate's rules built as wasm): loaded once.

import * as core from "./core.js";
import { invalidConfig } from "./errors.js";

let coreReady = null;

/**
 * Instantiates the wasm core once: from `wasm` (a Module or bytes), else the file beside this
 * module — read from disk where it is a file (Node, Deno, Bun; a bundler's copy), fetched where
 * it is not (a module served over HTTP). A Worker has neither: it passes `wasm`.
 */
export function loadCore(wasm) {
  if (!coreReady) {
    coreReady = (async () => {
      let module = wasm;
      if (!module) {
        /** @type {string | URL} */
        let url = "./core_bg.wasm";
        try {
          url = new URL(url, import.meta.url);
          if (url.protocol === "file:") {
            const { readFile } = await import("node:fs/promises");
            module = await readFile(url);
          } else {
            const r = await fetch(url);
            if (!r.ok) throw new Error(`HTTP ${r.status}`);
            module = new Uint8Array(await r.arrayBuffer());
          }
        } catch (e) {
          throw invalidConfig(`cannot read the core's wasm (${url}: ${e?.message ?? e}); ` +
            'pass it as the wasm option (on Workers: import wasm from ' +
            '"gatehouse-agent/server/core_bg.wasm")');
        }
      }
      try {
        core.initSync({ module });
      } catch (e) {
        throw invalidConfig(`the wasm is not the store handler's core (${e?.message ?? e})`);
      }
    })();
    coreReady.catch(() => {
      coreReady = null;
    });
  }
  return coreReady;
}
