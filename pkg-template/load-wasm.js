// @ts-check
// Loads one of the package's own wasm modules (the demo model's, the MCP client's) once, on
// first use: `init` is its wasm-bindgen init, `url` its wasm file. A failed load is not kept,
// so the next use tries again (a page that was offline may be online by then).
export function loadOnce(init, url) {
  let ready;
  return () => {
    ready ??= (async () => {
      // Node (tests, scripts) cannot fetch a file: URL; browsers and bundlers fetch the URL.
      const fs = url.protocol === "file:" ? globalThis.process?.getBuiltinModule?.("node:fs") : undefined;
      await init({ module_or_path: fs ? fs.readFileSync(url) : url });
    })();
    ready.catch(() => (ready = undefined));
    return ready;
  };
}
