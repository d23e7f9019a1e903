// Installs the packed npm tarball (npm pack of pkg/) into a Vite app, a Vite + React app made of
// the package README's React examples, a plain HTML page, the README's plain page with the ui
// kit, and a plain page with the <gatehouse-chat> widget, builds the Vite apps, and runs chats
// with approvals through each in headless Chromium (screenshots in test-output/package/).
import { execFileSync, spawn } from "node:child_process";
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { chromium } from "playwright-core";
import { examples, moduleScript } from "../types/readme-examples.mjs";

const root = path.resolve(path.dirname(new URL(import.meta.url).pathname), "../..");
const here = path.join(root, "tests/package");
const work = fs.mkdtempSync(path.join(os.tmpdir(), "gatehouse-pkg-"));
const sh = (cmd, args, cwd) => execFileSync(cmd, args, { cwd, stdio: ["ignore", "pipe", "inherit"] }).toString();

const tarball = path.join(work, sh("npm", ["pack", "--silent", "--pack-destination", work], path.join(root, "pkg")).trim().split("\n").pop());
// Exactly what users need: the entry and its types, wasm-bindgen's module and its snippets, the
// wasm, the subpath exports gatehouse-agent/react and gatehouse-agent/ui (their modules, types
// and CSS), gatehouse-agent/server (its module, types and wasm core), the docs. No raw wasm
// typings, no build leftovers.
const listing = sh("tar", ["tzf", tarball], work).trim().split("\n").sort();
const wanted = ["LICENSE", "README.md", "gatehouse.d.ts", "gatehouse.js", "gatehouse_bg.wasm", "gatehouse_wasm.d.ts", "gatehouse_wasm.js", "package.json",
  // The build with the remote store, loaded only for storage.kind "remote".
  "gatehouse_remote.js", "gatehouse_remote.d.ts", "gatehouse_remote_bg.wasm",
  // OpenTelemetry spans, imported only by an agent given `telemetry`.
  "telemetry.js",
  // The page's WebMCP tools' connection, imported only with `webmcp`.
  "webmcp.js",
  // gatehouse-agent/ag-ui, the AG-UI adapter.
  "ag-ui.js", "ag-ui.d.ts",
  "react.js", "react.d.ts", "ui/index.js", "ui/index.d.ts", "ui/announcer.js", "ui/cards.js", "ui/chat-view.js", "ui/composer.js",
  "ui/element.js", "ui/element.d.ts", "ui/errors.js", "ui/markdown.js", "ui/message-list.js", "ui/messages.js", "ui/questions.js", "ui/widget.js",
  "ui/gatehouse.css",
  // gatehouse-agent/server: its entry, its modules by job, and its wasm core.
  "server.js", "server.d.ts", "server/core.js", "server/core.d.ts", "server/core_bg.wasm", "server/cursor.js",
  "server/errors.js", "server/gatehouse-error.js", "server/feed.js", "server/http.js", "server/postgres.js", "server/threads.js", "server/wasm.js",
  "server/receipts.js", "server/approvers.js", "server/requests.js", "server/links.js", "server/push.js", "server/list.js", "server/grants.js",
  "server/primary.js",
  "sw.js", "sw.d.ts",
  // RFC 8785 canonical JSON for the receipts, vendored with its licence.
  "server/vendor/canonicalize.js", "server/vendor/canonicalize.LICENSE",
  // gatehouse-agent/local, the in-page model, with the llama.cpp runtime it vendors.
  "local/index.js", "local/index.d.ts", "local/grammar.js", "local/model-file.js", "local/wllama/index.js",
  "local/wllama/wllama.wasm", "local/wllama/LICENCE",
  // wllama's compat build, for browsers without wasm memory64 or JSPI (Safari, WebKitGTK).
  "local/wllama/compat/wllama.js", "local/wllama/compat/wllama.wasm",
  "demo-model/index.js", "demo-model/model.js", "demo-model/model_bg.wasm",
  // The MCP client's module (only for mcpServers), and the loader both modules share.
  "mcp/index.js", "mcp/questions.js", "mcp/client.js", "mcp/client_bg.wasm", "load-wasm.js",
  // Remembered grants' reader and matcher (only when a grant is made, listed or held).
  "grants/index.js", "grants/grants.js", "grants/grants_bg.wasm"];
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
// takes the first condition that matches). Only the module that defines <gatehouse-chat> (and
// CSS) is listed as having side effects.
const subpaths = { ".": ["gatehouse.d.ts", "gatehouse.js"], "./react": ["react.d.ts", "react.js"], "./ui": ["ui/index.d.ts", "ui/index.js"],
  "./ui/element": ["ui/element.d.ts", "ui/element.js"], "./server": ["server.d.ts", "server.js"],
  "./local": ["local/index.d.ts", "local/index.js"], "./sw": ["sw.d.ts", "sw.js"],
  "./ag-ui": ["ag-ui.d.ts", "ag-ui.js"] };
for (const [sub, [types, js]] of Object.entries(subpaths)) {
  const e = manifest.exports[sub];
  if (!e || Object.keys(e)[0] !== "types" || e.types !== `./${types}` || e.default !== `./${js}`) {
    throw new Error(`package.json exports["${sub}"] should be { types: "./${types}", default: "./${js}" }: ${JSON.stringify(e)}`);
  }
}
if (manifest.exports["./ui.css"] !== "./ui/gatehouse.css") throw new Error(`exports["./ui.css"]: ${manifest.exports["./ui.css"]}`);
// React and react-dom are optional peers: never bundled, never installed for apps without them.
// The only dependencies are the ui kit's Markdown renderer and sanitizer.
if (!manifest.peerDependencies?.react || manifest.peerDependenciesMeta?.react?.optional !== true
  || !manifest.peerDependencies?.["react-dom"] || manifest.peerDependenciesMeta?.["react-dom"]?.optional !== true
  || JSON.stringify(Object.keys(manifest.dependencies ?? {}).sort()) !== '["dompurify","marked"]') {
  throw new Error(`react must be an optional peer dependency and marked and dompurify the only dependencies: ${JSON.stringify([manifest.peerDependencies, manifest.peerDependenciesMeta, manifest.dependencies])}`);
}
// Only gatehouse-agent/ui imports them: the main entry and the React hooks never load them.
const importers = sh("grep", ["-rlE", "from ['\"](marked|dompurify)['\"]", "."], path.join(root, "pkg")).trim().split("\n").sort();
if (JSON.stringify(importers) !== '["./ui/markdown.js"]') throw new Error(`marked and dompurify are imported by ${importers}, not only ui/markdown.js`);
if (JSON.stringify(manifest.sideEffects) !== '["./ui/element.js","*.css"]') {
  throw new Error(`sideEffects must list only ui/element.js and the CSS: ${JSON.stringify(manifest.sideEffects)}`);
}
if (!/^MIT License\n\nCopyright \(c\) 2026 The Gatehouse authors\n/.test(fs.readFileSync(path.join(root, "pkg/LICENSE"), "utf8"))) {
  throw new Error("pkg/LICENSE is not the MIT license of the Gatehouse authors");
}
console.log(`packed ${path.basename(tarball)} (${fs.statSync(tarball).size} bytes)`);

// An app of `dir`'s files (if it has any: readme-plain is all README) and `files`.
function install(dir, extra = [], files = {}) {
  fs.mkdirSync(path.join(work, dir), { recursive: true });
  if (fs.existsSync(path.join(here, dir))) fs.cpSync(path.join(here, dir), path.join(work, dir), { recursive: true });
  fs.copyFileSync(path.join(here, "app.js"), path.join(work, dir, "app.js"));
  for (const [name, text] of Object.entries(files)) fs.writeFileSync(path.join(work, dir, name), text);
  fs.writeFileSync(path.join(work, dir, "package.json"), JSON.stringify({ name: dir, private: true, type: "module" }));
  // As a user installs it: the tarball's dependencies (marked, dompurify) and React come from
  // the registry, never from whatever an earlier run left in npm's cache.
  sh("npm", ["install", "--no-audit", "--no-fund", tarball, ...extra], path.join(work, dir));
  return path.join(work, dir);
}
// React at the version of the repository's dev dependencies.
const reactVersion = JSON.parse(fs.readFileSync(path.join(root, "package.json"), "utf8")).devDependencies.react;
// The README's examples, as written: the React app and layout, the plain page.
const readme = examples(fs.readFileSync(path.join(root, "pkg/README.md"), "utf8"));
const plain = install("plain");
const widget = install("widget");
const viteApp = install("vite-app");
const readmePlain = install("readme-plain", [], { "index.html": readme["plain-page.html"] });
const dev = JSON.parse(fs.readFileSync(path.join(root, "package.json"), "utf8")).devDependencies;
const viteReact = install("readme-react", [`react@${reactVersion}`, `react-dom@${reactVersion}`,
  `@types/react@${dev["@types/react"]}`, `@types/react-dom@${dev["@types/react-dom"]}`],
  { "main.tsx": readme["react-app.tsx"], "layout.tsx": readme["react-layout.tsx"] });
// The installed package's types, as a TypeScript app with React resolves them (package.json
// `exports`), with a bundler's resolution and with Node's.
fs.writeFileSync(path.join(viteReact, "check.ts"), [
  'import init, { Agent, GatehouseError, defineTool, type AgentState } from "gatehouse-agent";',
  'import { ApprovalCards, ChatView, isSuspended } from "gatehouse-agent/ui";',
  'import { GatehouseChat, defineGatehouseChat } from "gatehouse-agent/ui/element";',
  'import { useAgent, useThreads, Thread, type UseAgent } from "gatehouse-agent/react";',
  'import { subscribeToApprovals, type ApprovalPush } from "gatehouse-agent/sw";',
  'export const subscribed = (reg: ServiceWorkerRegistration) => subscribeToApprovals(reg, { url: "/api/gatehouse" }).then((s) => s.endpoint);',
  'export const tool0 = (p: ApprovalPush): string => p.tool + (p.decideUrl ?? "");',
  'export const thread = (chat: UseAgent) => Thread({ chat, approvalRenderers: { t: (call, decide) => String(decide) + call.callId } });',
  'export const element: typeof GatehouseChat = defineGatehouseChat();',
  'export function useChat(threadId: string): UseAgent { const a = useAgent({ threadId, tools: [tool] }); if (a.status === "awaiting_approval") void a.decide({ [a.pendingTools[0].callId]: ["edit", { path: "/tmp" }] }); return a; }',
  'export const titles = () => useThreads({ database: "d" }).threads.map((t) => t.title);',
  "await init();",
  'const tool = defineTool({ name: "t", parameters: { type: "object", properties: { path: { type: "string" } }, required: ["path"] }, execute: ({ path }) => path.length });',
  'const agent = await Agent.open({ threadId: "t", tools: [tool] });',
  'const next: () => Promise<AgentState> = () => agent.chat("hi");',
  'export const granted: () => Promise<string> = () => agent.grant({ tool: "t", scope: "user", match: { path: "/tmp/**" } }, { by: "ann" }).then((g) => g.id);',
  'const view = new ChatView({ root: document.body, suggestions: ["hi"], onOpenSettings: () => view.setError(null, false, "notice", { settings: true }) });',
  'await view.setAgent(agent);',
  'const cards = new ApprovalCards({ onDecide: (id, d) => agent.submitDecisions({ [id]: d }) });',
  'const widget: GatehouseChat = document.createElement("gatehouse-chat");',
  "export const ok = [next, GatehouseError, cards.visible, isSuspended(agent.lastMessage()), widget.agent];",
].join("\n"));
for (const resolution of [["--module", "esnext", "--moduleResolution", "bundler"], ["--module", "nodenext", "--moduleResolution", "nodenext"]]) {
  sh(path.join(root, "node_modules/.bin/tsc"), ["--noEmit", "--strict", "--target", "es2022", "--lib", "es2022,dom", ...resolution, "check.ts"], viteReact);
}
console.log("ok - the installed package's types (bundler and nodenext resolution)");
sh(path.join(root, "node_modules/.bin/vite"), ["build", "--logLevel", "warn", viteApp], viteApp);
const dist = path.join(viteApp, "dist");
const assets = fs.readdirSync(path.join(dist, "assets"));
if (!assets.some((a) => /^gatehouse_bg-.*\.wasm$/.test(a))) throw new Error("vite did not emit the wasm: " + assets);
// The remote store's build is emitted too (the app may open a remote thread), as a chunk of
// its own: the page below, whose threads are in IndexedDB, must not fetch it.
if (!assets.some((a) => /^gatehouse_remote_bg-.*\.wasm$/.test(a))) throw new Error("vite did not emit the remote store's wasm: " + assets);
// And the grants' module (loaded at the app's first grant, or when a store holds one).
if (!assets.some((a) => /^grants_bg-.*\.wasm$/.test(a))) throw new Error("vite did not emit the grants' wasm: " + assets);
// The app imports gatehouse-agent/ui and uses none of its elements: no stylesheet comes along.
if (assets.some((a) => a.endsWith(".css"))) throw new Error("importing gatehouse-agent/ui put a stylesheet in the build: " + assets);
sh(path.join(root, "node_modules/.bin/vite"), ["build", "--logLevel", "warn", viteReact], viteReact);
const reactDist = path.join(viteReact, "dist");
// The React module imports React and react-dom from the app (peers), the entry and the ui kit
// (its index, and the message reducer it shares with the chat view).
const hookImports = [...fs.readFileSync(path.join(root, "pkg/react.js"), "utf8").matchAll(/^import .* from "([^"]+)";$/gm)].map((m) => m[1]);
if (JSON.stringify(hookImports) !== '["react","react-dom","./gatehouse.js","./ui/index.js","./ui/messages.js"]') throw new Error(`react.js imports ${hookImports}`);

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
let passed = 0;
const assert = (ok, what) => { if (!ok) throw new Error(what); };
/** A tab of `target` (the browser or a context) whose page errors and console errors and
 *  warnings are collected. */
async function newTab(target) {
  const page = await target.newPage();
  page.setDefaultTimeout(15000);
  await page.route("**/favicon.ico", (route) => route.fulfill({ status: 204 })); // the README page names none
  const errors = [];
  page.on("pageerror", (e) => errors.push(String(e)));
  page.on("console", (m) => { if (m.type() === "error" || m.type() === "warning") errors.push(`${m.type()}: ${m.text()}`); });
  return { page, errors };
}
const noErrors = (errors) => assert(errors.length === 0, `console: ${errors.join("\n")}`);
async function send(page, text) {
  const input = page.locator(".gh-input");
  await input.fill(text);
  await input.press("Enter");
}
/** Waits for an answer of the demo model that includes `text`. */
const answer = (page, text) => page.locator(".gh-assistant, .transcript li", { hasText: text }).first().waitFor();
async function scenario(name, fn) {
  const notes = [];
  try {
    await fn(null, (line) => notes.push(line));
    passed++;
    console.log(`ok - ${name}${notes.length ? `: ${notes.join("; ")}` : ""}`);
  } catch (e) {
    failed++;
    console.log(`not ok - ${name}: ${e.message}`);
  }
}
const outDir = path.join(root, "test-output/package");
fs.mkdirSync(outDir, { recursive: true });
for (const [name, dir] of [["plain", plain], ["vite", dist]]) {
  const server = await serve(dir);
  const page = await browser.newPage();
  const errors = [];
  page.on("pageerror", (e) => errors.push(String(e)));
  const wasms = [];
  page.on("request", (r) => { if (r.url().endsWith(".wasm")) wasms.push(new URL(r.url()).pathname.split("/").pop()); });
  try {
    await page.goto(server.url + "/");
    await page.waitForSelector("body[data-done]", { timeout: 30000 });
    if (wasms.some((w) => w.startsWith("gatehouse_remote_bg"))) errors.push(`a page without remote threads fetched the remote store: ${wasms}`);
    const log = await page.textContent("#log");
    const done = await page.getAttribute("body", "data-done");
    await page.screenshot({ path: path.join(outDir, `${name}.png`) });
    const pure = name !== "vite" || (await page.getAttribute("body", "data-element")) === "false";
    const ok = done === "ok" && log.includes("status: awaiting_approval") && log.includes("status: completed")
      && log.includes('result: {"deleted":"C:/old_logs.txt"}') && errors.length === 0 && pure;
    if (!pure) errors.push("importing gatehouse-agent/ui defined <gatehouse-chat>");
    console.log(`${ok ? "ok" : "not ok"} - package in ${name} page\n${log.replace(/^/gm, "  # ")}`);
    if (ok) passed++;
    else { failed++; console.log(errors.join("\n")); }
  } catch (e) {
    failed++;
    console.log(`not ok - package in ${name} page: ${e.message}`);
  } finally {
    await page.close();
    server.stop();
  }
}

// The README's plain page, with the ui kit: it renders the chat; a message gets a card,
// approving it runs the tool, and nothing fails on the console.
await scenario("the README's plain page with the ui kit", async (_, log) => {
  const server = await serve(readmePlain);
  try {
    const { page, errors } = await newTab(browser);
    await page.goto(server.url + "/");
    await page.locator(".gh-chat .gh-empty").waitFor();
    await send(page, "delete /tmp/old.log");
    const card = page.locator(".gh-card");
    await card.waitFor();
    await card.locator(".gh-approve").click();
    await page.locator(".gh-assistant", { hasText: 'delete_file returned: {"deleted":"/tmp/old.log"}' }).waitFor();
    await page.screenshot({ path: path.join(outDir, "readme-plain.png") });
    noErrors(errors);
    log("card, approve, the tool's result in the answer");
  } finally {
    server.stop();
  }
});

// The README's React app (react-app.tsx) and layout (react-layout.tsx), built by Vite from the
// tarball, in React's development build under StrictMode. Two tabs of one browser context.
{
  const server = await serve(reactDist);
  const context = await browser.newContext({ viewport: { width: 1280, height: 800 } });
  const url = server.url + "/";
  const tabA = await newTab(context);
  try {
    const { page } = tabA;
    await scenario("README React app: StrictMode mounts one chat; deny with a reason", async (_, log) => {
      await page.goto(url);
      await page.locator(".gh-chat .gh-empty").waitFor();
      assert(await page.locator(".gh-chat").count() === 1 && await page.locator(".gh-composer").count() === 1,
        "one chat view and one composer despite StrictMode's double mount");
      await send(page, "delete /tmp/a.txt");
      const card = page.locator(".gh-card").last();
      await card.waitFor();
      assert(await page.locator(".gh-input").isDisabled(), "the message box is locked while the call waits");
      await card.locator(".gh-deny").click();
      await card.locator(".gh-deny-reason").fill("Keep it for the audit");
      await card.locator(".gh-confirm-deny").click();
      await answer(page, "delete_file was not run: you rejected it (Keep it for the audit)");
      log("denied with a reason; the model quoted it");
    });

    await scenario("README React app: an edit the SDK refuses shows on the card; a valid edit runs", async (_, log) => {
      await send(page, "delete /tmp/b.txt");
      const card = page.locator(".gh-card").last();
      await card.waitFor();
      await card.locator(".gh-edit").click();
      await card.locator(".gh-edit-inputs").fill('{ "path": 5 }');
      await card.locator(".gh-confirm-edit").click();
      const error = card.locator(".gh-card-error");
      await error.waitFor();
      const text = await error.innerText();
      assert(/Could not save this decision: .+/.test(text), `the card says why: ${text}`);
      assert(await card.getAttribute("data-state") === "pending", "the call still waits");
      await card.locator(".gh-edit-inputs").fill('{ "path": "/tmp/c.txt" }');
      await card.locator(".gh-confirm-edit").click();
      await answer(page, 'It ran with: {"path":"/tmp/c.txt"}. Result: {"deleted":"/tmp/c.txt"}');
      log(`refused edit: "${text}"; then ran with the edited inputs`);
    });

    await scenario("README React app: the per-tool renderer draws send_email's card", async (_, log) => {
      await send(page, "email bob@example.com");
      const custom = page.locator(".gh-card-custom .email-card");
      await custom.waitFor();
      assert((await custom.innerText()).includes("bob@example.com"), "the card shows the call's inputs");
      await page.screenshot({ path: path.join(outDir, "react-1280.png") });
      await page.setViewportSize({ width: 390, height: 800 });
      await custom.scrollIntoViewIfNeeded();
      await page.screenshot({ path: path.join(outDir, "react-390.png") });
      await page.setViewportSize({ width: 1280, height: 800 });
      await custom.getByText("Send it").click();
      await answer(page, 'send_email returned: {"sent":"bob@example.com"}');
      log("custom card, approved from it");
    });

    await scenario("README React app: \"always allow\" approves this call and the next runs without asking", async (_, log) => {
      await send(page, "delete /tmp/d.txt");
      const card = page.locator(".gh-card").last();
      await card.waitFor();
      await card.locator(".gh-always").click();
      await answer(page, 'delete_file returned: {"deleted":"/tmp/d.txt"}');
      await send(page, "delete /tmp/e.txt");
      await answer(page, 'delete_file returned: {"deleted":"/tmp/e.txt"}');
      assert(await page.locator(".gh-call", { hasText: "/tmp/e.txt" }).getByText("Ran automatically").count() === 1,
        "the second call ran without a card");
      log("always allowed in this thread");
    });

    await scenario("README React app: the transcript and the thread list after a reload", async (_, log) => {
      await page.reload();
      await page.locator(".gh-user", { hasText: "delete /tmp/a.txt" }).waitFor();
      await page.locator(".gh-assistant", { hasText: 'send_email returned: {"sent":"bob@example.com"}' }).waitFor();
      await page.locator('nav button[data-thread="main"]').waitFor();
      log("both back from IndexedDB");
    });

    await scenario("README React app: a new chat and back (thread switch)", async (_, log) => {
      await page.getByText("New chat").click();
      await page.locator(".gh-chat .gh-empty").waitFor();
      await page.locator('nav button[data-thread="main"]').click();
      await page.locator(".gh-user", { hasText: "delete /tmp/a.txt" }).waitFor();
      log("switched away and back");
    });

    await scenario("README React app: two tabs stay in step", async (_, log) => {
      const tabB = await newTab(context);
      try {
        await tabB.page.goto(url);
        await tabB.page.locator(".gh-user", { hasText: "delete /tmp/a.txt" }).waitFor();
        // delete_file is always allowed in this thread by now: send_email still asks.
        await send(page, "email carol@example.com");
        await page.locator(".gh-card", { hasText: "carol@example.com" }).waitFor();
        const cardB = tabB.page.locator(".gh-card", { hasText: "carol@example.com" });
        await cardB.waitFor({ timeout: 5000 });
        await cardB.getByText("Send it").click();
        await answer(page, 'send_email returned: {"sent":"carol@example.com"}');
        await page.locator(".gh-approvals").waitFor({ state: "hidden" });
        noErrors(tabB.errors);
        log("B approved A's call; A followed");
      } finally {
        await tabB.page.close();
      }
    });
    await scenario("README React app: no console errors or warnings", async () => noErrors(tabA.errors));

    await scenario("README React layout: the hook's transcript, cards and composer, after a reload", async (_, log) => {
      const { page, errors } = await newTab(context);
      await page.goto(url + "layout.html");
      await page.locator(".gh-composer .gh-input:not([disabled])").waitFor();
      await send(page, "delete /tmp/g.txt");
      const card = page.locator(".gh-card");
      await card.waitFor();
      assert(await page.locator(".gh-input").isDisabled(), "the composer is locked while the call waits");
      await card.locator(".gh-approve").click();
      await page.locator('.transcript li[data-role="assistant"]', { hasText: 'delete_file returned: {"deleted":"/tmp/g.txt"}' }).waitFor();
      await page.screenshot({ path: path.join(outDir, "layout-1280.png") });
      await page.reload();
      await page.locator('.transcript li[data-role="user"]', { hasText: "delete /tmp/g.txt" }).waitFor();
      await page.setViewportSize({ width: 390, height: 800 });
      await page.screenshot({ path: path.join(outDir, "layout-390.png") });
      noErrors(errors);
      log("sent, approved, the transcript back after the reload");
    });
  } finally {
    await context.close();
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
    if (ok) passed++;
    else { failed++; console.log(errors.join("\n")); }
  } catch (e) {
    failed++;
    console.log(`not ok - the ui export's widget in a plain page: ${e.message}`);
  } finally {
    await page.close();
    server.stop();
  }
}
// A widget that cannot start says so under its banner, not "Loading…".
await scenario("a widget that cannot start says why", async (_, log) => {
  const server = await serve(widget);
  try {
    const { page } = await newTab(browser);
    await page.goto(server.url + "/");
    await page.evaluate(() => document.body.insertAdjacentHTML("beforeend",
      '<gatehouse-chat id="broken" thread-id="broken" database="pkg-broken" tools="./no-such-tools.js"></gatehouse-chat>'));
    await page.locator("#broken[data-failed]").waitFor();
    const banner = await page.locator("#broken .gh-banner").innerText();
    const hint = await page.locator("#broken .gh-hint").innerText();
    assert(/could not start/.test(banner) && !/Loading/.test(hint) && /could not start/.test(hint), `banner "${banner}", hint "${hint}"`);
    log(`hint: ${hint}`);
  } finally {
    server.stop();
  }
});
await browser.close();
fs.rmSync(work, { recursive: true, force: true });
console.log(`${passed} passed, ${failed} failed`);
process.exit(failed ? 1 : 0);
