// Installs the packed npm tarball (npm pack of pkg/) into a Vite app and a plain HTML page,
// builds the Vite app, and runs a chat with an approval through each in headless Chromium.
import { execFileSync, spawn } from "node:child_process";
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { chromium } from "playwright-core";

const root = path.resolve(path.dirname(new URL(import.meta.url).pathname), "../..");
const here = path.join(root, "tests/package");
const work = fs.mkdtempSync(path.join(os.tmpdir(), "gatehouse-pkg-"));
const sh = (cmd, args, cwd) => execFileSync(cmd, args, { cwd, stdio: ["ignore", "pipe", "inherit"] }).toString();

const tarball = path.join(work, sh("npm", ["pack", "--silent", "--pack-destination", work], path.join(root, "pkg")).trim().split("\n").pop());
// Exactly what users need: the entry and its types, wasm-bindgen's module and its snippets, the
// wasm, the docs. No raw wasm typings, no build leftovers.
const listing = sh("tar", ["tzf", tarball], work).trim().split("\n").sort();
const wanted = ["LICENSE", "README.md", "gatehouse.d.ts", "gatehouse.js", "gatehouse_bg.wasm", "gatehouse_wasm.d.ts", "gatehouse_wasm.js", "package.json"];
const unexpected = listing.filter((f) => !wanted.includes(f.replace(/^package\//, "")) && !/^package\/snippets\/[^/]+\/.+\.js$/.test(f));
const missing = wanted.filter((f) => !listing.includes("package/" + f));
if (unexpected.length || missing.length || !listing.some((f) => f.endsWith("/src/js/error.js"))) {
  throw new Error(`the tarball should hold exactly ${wanted.join(", ")} and snippets/**.js; unexpected: ${unexpected}; missing: ${missing}\n${listing.join("\n")}`);
}
const manifest = JSON.parse(fs.readFileSync(path.join(root, "pkg/package.json"), "utf8"));
for (const k of ["license", "repository", "homepage", "bugs", "engines", "keywords", "exports", "types", "sideEffects"]) {
  if (manifest[k] === undefined) throw new Error(`package.json lacks "${k}"`);
}
if (!/^MIT License\n\nCopyright \(c\) 2026 The Gatehouse authors\n/.test(fs.readFileSync(path.join(root, "pkg/LICENSE"), "utf8"))) {
  throw new Error("pkg/LICENSE is not the MIT license of the Gatehouse authors");
}
console.log(`packed ${path.basename(tarball)} (${fs.statSync(tarball).size} bytes)`);

function install(dir) {
  fs.cpSync(path.join(here, dir), path.join(work, dir), { recursive: true });
  fs.copyFileSync(path.join(here, "app.js"), path.join(work, dir, "app.js"));
  fs.writeFileSync(path.join(work, dir, "package.json"), JSON.stringify({ name: dir, private: true, type: "module" }));
  sh("npm", ["install", "--no-audit", "--no-fund", "--offline", tarball], path.join(work, dir));
  return path.join(work, dir);
}
const plain = install("plain");
const viteApp = install("vite-app");
// The installed package's types, as a TypeScript app resolves them (package.json `exports`),
// with a bundler's resolution and with Node's.
fs.writeFileSync(path.join(viteApp, "check.ts"), [
  'import init, { Agent, GatehouseError, defineTool, type AgentState } from "gatehouse-agent";',
  "await init();",
  'const tool = defineTool({ name: "t", parameters: { type: "object", properties: { path: { type: "string" } }, required: ["path"] }, execute: ({ path }) => path.length });',
  'const agent = await Agent.open({ threadId: "t", tools: [tool] });',
  'const next: () => Promise<AgentState> = () => agent.chat("hi");',
  "export const ok = [next, GatehouseError];",
].join("\n"));
for (const resolution of [["--module", "esnext", "--moduleResolution", "bundler"], ["--module", "nodenext", "--moduleResolution", "nodenext"]]) {
  sh(path.join(root, "node_modules/.bin/tsc"), ["--noEmit", "--strict", "--target", "es2022", "--lib", "es2022,dom", ...resolution, "check.ts"], viteApp);
}
console.log("ok - the installed package's types (bundler and nodenext resolution)");
sh(path.join(root, "node_modules/.bin/vite"), ["build", "--logLevel", "warn", viteApp], viteApp);
const dist = path.join(viteApp, "dist");
const assets = fs.readdirSync(path.join(dist, "assets"));
if (!assets.some((a) => a.endsWith(".wasm"))) throw new Error("vite did not emit the wasm: " + assets);

function serve(dir) {
  return new Promise((resolve, reject) => {
    const p = spawn(process.execPath, [path.join(root, "tests/model-server/server.mjs"), "--port", "0", "--static", dir, "--ttl-seconds", "300"], { stdio: ["ignore", "pipe", "inherit"] });
    p.stdout.on("data", (d) => { const m = /listening on (\S+)/.exec(String(d)); if (m) resolve({ url: m[1], stop: () => p.kill() }); });
    p.on("exit", (c) => reject(new Error("server exited " + c)));
  });
}

const browser = await chromium.launch({
  executablePath: "/usr/bin/chromium",
  args: ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
    "--disable-background-networking", "--disable-component-update", "--disable-sync"],
});
let failed = 0;
const outDir = path.join(root, "test-output/package");
fs.mkdirSync(outDir, { recursive: true });
for (const [name, dir] of [["plain", plain], ["vite", dist]]) {
  const server = await serve(dir);
  const page = await browser.newPage();
  const errors = [];
  page.on("pageerror", (e) => errors.push(String(e)));
  try {
    await page.goto(server.url + "/");
    await page.waitForSelector("body[data-done]", { timeout: 30000 });
    const log = await page.textContent("#log");
    const done = await page.getAttribute("body", "data-done");
    await page.screenshot({ path: path.join(outDir, `${name}.png`) });
    const ok = done === "ok" && log.includes("status: awaiting_approval") && log.includes("status: completed")
      && log.includes('result: {"deleted":"C:/old_logs.txt"}') && errors.length === 0;
    console.log(`${ok ? "ok" : "not ok"} - package in ${name} page\n${log.replace(/^/gm, "  # ")}`);
    if (!ok) { failed++; console.log(errors.join("\n")); }
  } catch (e) {
    failed++;
    console.log(`not ok - package in ${name} page: ${e.message}`);
  } finally {
    await page.close();
    server.stop();
  }
}
await browser.close();
fs.rmSync(work, { recursive: true, force: true });
console.log(`${2 - failed} passed, ${failed} failed`);
process.exit(failed ? 1 : 0);
