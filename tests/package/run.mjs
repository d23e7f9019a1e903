// Installs the packed npm tarball (npm pack of pkg/) into a Vite app, a Vite + React app
// (gatehouse-agent/react), a plain HTML page and a plain page with the <gatehouse-chat> widget
// of gatehouse-agent/ui, builds the Vite apps, and runs a chat with an approval through each in
// headless Chromium.
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
// wasm, the subpath exports gatehouse-agent/react and gatehouse-agent/ui (their modules, types
// and CSS), the docs. No raw wasm typings, no build leftovers.
const listing = sh("tar", ["tzf", tarball], work).trim().split("\n").sort();
const wanted = ["LICENSE", "README.md", "gatehouse.d.ts", "gatehouse.js", "gatehouse_bg.wasm", "gatehouse_wasm.d.ts", "gatehouse_wasm.js", "package.json",
  "react.js", "react.d.ts", "ui/index.js", "ui/index.d.ts", "ui/announcer.js", "ui/cards.js", "ui/chat-view.js", "ui/errors.js",
  "ui/markdown.js", "ui/message-list.js", "ui/widget.js", "ui/gatehouse.css"];
const unexpected = listing.filter((f) => !wanted.includes(f.replace(/^package\//, "")) && !/^package\/snippets\/[^/]+\/.+\.js$/.test(f));
const missing = wanted.filter((f) => !listing.includes("package/" + f));
if (unexpected.length || missing.length || !listing.some((f) => f.endsWith("/src/js/error.js"))) {
  throw new Error(`the tarball should hold exactly ${wanted.join(", ")} and snippets/**.js; unexpected: ${unexpected}; missing: ${missing}\n${listing.join("\n")}`);
}
const manifest = JSON.parse(fs.readFileSync(path.join(root, "pkg/package.json"), "utf8"));
for (const k of ["license", "repository", "homepage", "bugs", "engines", "keywords", "exports", "types", "sideEffects"]) {
  if (manifest[k] === undefined) throw new Error(`package.json lacks "${k}"`);
}
// Every subpath export names files the tarball holds, with their types first (TypeScript
// takes the first condition that matches). The main entry's side-effect freedom is kept: only
// the modules that define <gatehouse-chat> (and CSS) are listed as having side effects.
const subpaths = { ".": ["gatehouse.d.ts", "gatehouse.js"], "./react": ["react.d.ts", "react.js"], "./ui": ["ui/index.d.ts", "ui/index.js"] };
for (const [sub, [types, js]] of Object.entries(subpaths)) {
  const e = manifest.exports[sub];
  if (!e || Object.keys(e)[0] !== "types" || e.types !== `./${types}` || e.default !== `./${js}`) {
    throw new Error(`package.json exports["${sub}"] should be { types: "./${types}", default: "./${js}" }: ${JSON.stringify(e)}`);
  }
}
if (manifest.exports["./ui.css"] !== "./ui/gatehouse.css") throw new Error(`exports["./ui.css"]: ${manifest.exports["./ui.css"]}`);
// React is an optional peer: never bundled, never installed for apps without it. The only
// dependencies are the ui kit's Markdown renderer and sanitizer.
if (!manifest.peerDependencies?.react || manifest.peerDependenciesMeta?.react?.optional !== true
  || JSON.stringify(Object.keys(manifest.dependencies ?? {}).sort()) !== '["dompurify","marked"]') {
  throw new Error(`react must be an optional peer dependency and marked and dompurify the only dependencies: ${JSON.stringify([manifest.peerDependencies, manifest.peerDependenciesMeta, manifest.dependencies])}`);
}
// Only gatehouse-agent/ui imports them: the main entry and the React hooks never load them.
const importers = sh("grep", ["-rlE", "from ['\"](marked|dompurify)['\"]", "."], path.join(root, "pkg")).trim().split("\n").sort();
if (JSON.stringify(importers) !== '["./ui/markdown.js"]') throw new Error(`marked and dompurify are imported by ${importers}, not only ui/markdown.js`);
if (!Array.isArray(manifest.sideEffects) || manifest.sideEffects.some((f) => /gatehouse(_wasm)?\.js$|snippets/.test(f))) {
  throw new Error(`sideEffects must leave the main entry side-effect free: ${JSON.stringify(manifest.sideEffects)}`);
}
if (!/^MIT License\n\nCopyright \(c\) 2026 The Gatehouse authors\n/.test(fs.readFileSync(path.join(root, "pkg/LICENSE"), "utf8"))) {
  throw new Error("pkg/LICENSE is not the MIT license of the Gatehouse authors");
}
console.log(`packed ${path.basename(tarball)} (${fs.statSync(tarball).size} bytes)`);

function install(dir, extra = []) {
  fs.cpSync(path.join(here, dir), path.join(work, dir), { recursive: true });
  fs.copyFileSync(path.join(here, "app.js"), path.join(work, dir, "app.js"));
  fs.writeFileSync(path.join(work, dir, "package.json"), JSON.stringify({ name: dir, private: true, type: "module" }));
  // As a user installs it: the tarball's dependencies (marked, dompurify) and React come from
  // the registry, never from whatever an earlier run left in npm's cache.
  sh("npm", ["install", "--no-audit", "--no-fund", tarball, ...extra], path.join(work, dir));
  return path.join(work, dir);
}
// React at the version of the repository's dev dependencies.
const reactVersion = JSON.parse(fs.readFileSync(path.join(root, "package.json"), "utf8")).devDependencies.react;
const plain = install("plain");
const widget = install("widget");
const viteApp = install("vite-app");
const viteReact = install("vite-react", [`react@${reactVersion}`, `react-dom@${reactVersion}`]);
// The installed package's types, as a TypeScript app resolves them (package.json `exports`),
// with a bundler's resolution and with Node's.
fs.writeFileSync(path.join(viteApp, "check.ts"), [
  'import init, { Agent, GatehouseError, defineTool, type AgentState } from "gatehouse-agent";',
  'import { ApprovalCards, ChatView, GatehouseChat, isSuspended } from "gatehouse-agent/ui";',
  'import { useAgent, useThreads, type UseAgent } from "gatehouse-agent/react";',
  'export function useChat(threadId: string): UseAgent { const a = useAgent({ threadId, tools: [tool] }); if (a.status === "awaiting_approval") void a.decide({ [a.pendingTools[0].callId]: ["edit", { path: "/tmp" }] }); return a; }',
  'export const titles = () => useThreads({ database: "d" }).threads.map((t) => t.title);',
  "await init();",
  'const tool = defineTool({ name: "t", parameters: { type: "object", properties: { path: { type: "string" } }, required: ["path"] }, execute: ({ path }) => path.length });',
  'const agent = await Agent.open({ threadId: "t", tools: [tool] });',
  'const next: () => Promise<AgentState> = () => agent.chat("hi");',
  'const view = new ChatView({ root: document.body, suggestions: ["hi"], onOpenSettings: () => view.setError(null, false, "notice", { settings: true }) });',
  'await view.setAgent(agent);',
  'const cards = new ApprovalCards({ onDecide: (id, d) => agent.submitDecisions({ [id]: d }) });',
  'const widget: GatehouseChat = document.createElement("gatehouse-chat");',
  "export const ok = [next, GatehouseError, cards.visible, isSuspended(agent.lastMessage()), widget.agent];",
].join("\n"));
for (const resolution of [["--module", "esnext", "--moduleResolution", "bundler"], ["--module", "nodenext", "--moduleResolution", "nodenext"]]) {
  sh(path.join(root, "node_modules/.bin/tsc"), ["--noEmit", "--strict", "--target", "es2022", "--lib", "es2022,dom", ...resolution, "check.ts"], viteApp);
}
console.log("ok - the installed package's types (bundler and nodenext resolution)");
sh(path.join(root, "node_modules/.bin/vite"), ["build", "--logLevel", "warn", viteApp], viteApp);
const dist = path.join(viteApp, "dist");
const assets = fs.readdirSync(path.join(dist, "assets"));
if (!assets.some((a) => a.endsWith(".wasm"))) throw new Error("vite did not emit the wasm: " + assets);
sh(path.join(root, "node_modules/.bin/vite"), ["build", "--logLevel", "warn", viteReact], viteReact);
const reactDist = path.join(viteReact, "dist");
// The hooks import React from the app (a peer), nothing else but the package's entry.
const hookImports = [...fs.readFileSync(path.join(root, "pkg/react.js"), "utf8").matchAll(/^import .* from "([^"]+)";$/gm)].map((m) => m[1]);
if (JSON.stringify(hookImports) !== '["react","./gatehouse.js"]') throw new Error(`react.js imports ${hookImports}`);

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

// gatehouse-agent/react from the tarball in a Vite app (StrictMode): chat, the pending call,
// deny it with a reason (the demo model quotes it), chat again, reload while that call waits:
// it is pending again after the reload, approve, done, no page errors.
{
  const server = await serve(reactDist);
  const page = await browser.newPage();
  const errors = [];
  page.on("pageerror", (e) => errors.push(String(e)));
  page.on("console", (m) => { if (m.type() === "error") errors.push(m.text()); });
  try {
    await page.goto(server.url + "/");
    await page.waitForSelector("body[data-done]", { timeout: 30000 });
    if (await page.getAttribute("body", "data-done") === "pending") {
      await page.reload();
      await page.waitForSelector("body[data-done]", { timeout: 30000 });
    }
    const done = await page.getAttribute("body", "data-done");
    // What the app saw, across the reload (it keeps it in sessionStorage).
    const log = await page.evaluate(() => JSON.parse(sessionStorage.getItem("gatehouse-test")).seen.join("\n"));
    const ok = done === "ok" && log.includes('pending:delete_file {"path":"C:/old_logs.txt"}')
      && /answer:[^\n]*Tool results:\n- delete_file was not run: you rejected it \(Keep it for the audit\)/.test(log)
      && log.includes('after reload pending:delete_file {"path":"C:/tmp/cache.txt"}')
      && /answer:[^\n]*Tool results:\n- delete_file returned: \{"deleted":"C:\/tmp\/cache.txt"\}/.test(log)
      && errors.length === 0;
    console.log(`${ok ? "ok" : "not ok"} - gatehouse-agent/react in a Vite app (${done})\n${log.replace(/^/gm, "  # ")}`);
    if (!ok) { failed++; console.log(errors.join("\n")); }
  } catch (e) {
    failed++;
    console.log(`not ok - gatehouse-agent/react in a Vite app: ${e.message}\n${await page.textContent("#log").catch(() => "")}\n${errors.join("\n")}`);
  } finally {
    await page.close();
    server.stop();
  }
}

// The widget from the tarball alone: chat through its shadow DOM, approve on the card (which
// offers only what the tool's allowedDecisions lists), and the tool runs once.
{
  const server = await serve(widget);
  const page = await browser.newPage();
  const errors = [];
  page.on("pageerror", (e) => errors.push(String(e)));
  page.on("console", (m) => { if (m.type() === "error") errors.push(m.text()); });
  try {
    await page.goto(server.url + "/");
    await page.waitForSelector("gatehouse-chat[data-ready]", { timeout: 30000 });
    const input = page.locator("gatehouse-chat .gh-input");
    await input.fill("delete C:/old_logs.txt");
    await input.press("Enter");
    const card = page.locator("gatehouse-chat .gh-card");
    await card.waitFor({ timeout: 15000 });
    const offered = await card.locator(".gh-btn:visible").allInnerTexts();
    const locked = await input.isDisabled();
    await card.locator(".gh-approve").click();
    await card.waitFor({ state: "detached", timeout: 15000 });
    await page.locator("gatehouse-chat .gh-call-result").first().waitFor({ timeout: 15000 });
    const ran = await page.evaluate(() => window.ran);
    await page.screenshot({ path: path.join(outDir, "widget.png") });
    const ok = JSON.stringify(offered) === '["Approve","Deny…","Always allow in this conversation"]' && locked && JSON.stringify(ran) === '["C:/old_logs.txt"]' && errors.length === 0;
    console.log(`${ok ? "ok" : "not ok"} - the ui export's widget in a plain page: offered ${JSON.stringify(offered)}, input locked: ${locked}, ran ${JSON.stringify(ran)}`);
    if (!ok) { failed++; console.log(errors.join("\n")); }
  } catch (e) {
    failed++;
    console.log(`not ok - the ui export's widget in a plain page: ${e.message}`);
  } finally {
    await page.close();
    server.stop();
  }
}
await browser.close();
fs.rmSync(work, { recursive: true, force: true });
console.log(`${4 - failed} passed, ${failed} failed`);
process.exit(failed ? 1 : 0);
