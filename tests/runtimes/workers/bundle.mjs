// Bundles worker.js for workerd the way Wrangler does (Wrangler 4 needs Node 22; this machine
// has Node 20): one ES module, `*.wasm` imports left as CompiledWasm modules beside it (so
// `import wasm from "…/core_bg.wasm"` is a WebAssembly.Module), Node's built-ins left to
// nodejs_compat — an ES import as `node:x`, a CommonJS require() (pg's) as a module whose
// exports are `node:x`'s default export, as Wrangler's nodejs_compat plugin does.
import { builtinModules } from "node:module";
import fs from "node:fs";
import path from "node:path";
import { fileURLToPath } from "node:url";

const here = path.dirname(fileURLToPath(import.meta.url));
const builtins = new Set(builtinModules);

const workerdModules = {
  name: "workerd-modules",
  setup(build) {
    build.onResolve({ filter: /^(node:)?[a-z_/]+$/ }, (args) => {
      const name = args.path.replace(/^node:/, "");
      if (!builtins.has(name)) return undefined;
      if (args.kind === "require-call") return { path: name, namespace: "node-require" };
      return { path: `node:${name}`, external: true };
    });
    build.onLoad({ filter: /.*/, namespace: "node-require" }, (args) => ({
      contents: `import m from "node:${args.path}"; module.exports = m;`,
      loader: "js",
    }));
  },
};

/**
 * Bundles `entry` (a file of this folder) into `outDir`/worker.js beside its wasm modules;
 * resolves to miniflare's `modules` list.
 */
export async function bundle(esbuild, outDir, entry = "worker.js") {
  const wasm = [];
  const wasmModules = {
    name: "wasm-modules",
    setup(build) {
      build.onResolve({ filter: /\.wasm$/ }, async (args) => {
        if (args.pluginData?.wasm) return undefined; // the resolve below: esbuild's own
        const found = await build.resolve(args.path, { kind: "import-statement",
          resolveDir: args.resolveDir, pluginData: { wasm: true } });
        if (found.errors.length) return { errors: found.errors };
        const name = path.basename(found.path);
        wasm.push([found.path, name]);
        return { path: `./${name}`, external: true };
      });
    },
  };
  await esbuild.build({
    entryPoints: [path.join(here, entry)],
    outfile: path.join(outDir, "worker.js"),
    bundle: true,
    format: "esm",
    platform: "neutral",
    conditions: ["workerd", "worker", "browser"],
    mainFields: ["module", "main"],
    external: ["cloudflare:*", "pg-native"],
    plugins: [wasmModules, workerdModules],
    logLevel: "error",
  });
  for (const [from, name] of wasm) fs.copyFileSync(from, path.join(outDir, name));
  return [
    { type: "ESModule", path: path.join(outDir, "worker.js") },
    ...wasm.map(([, name]) => ({ type: "CompiledWasm", path: path.join(outDir, name) })),
  ];
}
