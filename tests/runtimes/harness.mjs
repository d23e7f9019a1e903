// What the runtime tests share: the README's mount snippets, the apps' processes (started in
// their own process group, stopped at the end even when a test fails), free ports.

import assert from "node:assert/strict";
import { spawn } from "node:child_process";
import fs from "node:fs";
import path from "node:path";
import { fileURLToPath } from "node:url";

export const here = path.dirname(fileURLToPath(import.meta.url));
export const root = path.resolve(here, "../..");
export const modules = path.join(here, "node_modules");

/** The README's code block marked `<!-- mount: name -->` (the line before its fence). */
export function readmeBlock(name) {
  const text = fs.readFileSync(path.join(root, "README.md"), "utf8");
  const marker = `<!-- mount: ${name} -->\n`;
  const at = text.indexOf(marker);
  assert.ok(at >= 0, `README.md has no block marked ${marker.trim()}`);
  const m = /^```\w*\n([\s\S]*?)^```$/m.exec(text.slice(at + marker.length));
  assert.ok(m && m.index === 0, `the line after ${marker.trim()} in README.md opens a code block`);
  return m[1];
}

/** Fails unless the app file is the README's block for `name`, as it is. */
export function assertAppIsReadme(name, file) {
  const app = fs.readFileSync(path.join(here, file), "utf8");
  assert.equal(app, readmeBlock(name), `tests/runtimes/${file} must be README.md's "mount: ${name}" ` +
    "block verbatim (the README shows what is tested)");
}

/** A runtime's binary from its npm package (make setup-runtimes), or a clear error. */
export function binary(pkg, file) {
  const p = path.join(modules, pkg, file);
  if (!fs.existsSync(p)) {
    throw new Error(`${p} is missing: run make setup-runtimes (npm package ${pkg}, ` +
      "published for linux-x64 glibc; other platforms need their own package)");
  }
  return p;
}

export { freePort } from "../support/postgres.mjs";

const running = new Set();
process.on("exit", () => {
  for (const p of running) p.killNow();
});

/**
 * Starts `cmd args` in its own process group and waits until `readyUrl` answers (any HTTP
 * status). Resolves to `{ output(), stop() }`; rejects with the app's output when it exits
 * first or is not up within `timeoutMs`.
 */
export async function startApp(cmd, args, { cwd, env, readyUrl, timeoutMs = 30_000 }) {
  const child = spawn(cmd, args, {
    cwd, env: { ...process.env, ...env }, detached: true, stdio: ["ignore", "pipe", "pipe"],
  });
  let output = "";
  child.stdout.on("data", (d) => { output += d; });
  child.stderr.on("data", (d) => { output += d; });
  let exited = null;
  const exit = new Promise((resolve) => child.on("exit", (code, signal) => {
    exited = { code, signal };
    running.delete(app);
    resolve();
  }));
  const group = (signal) => {
    try {
      process.kill(-child.pid, signal);
    } catch {
      // already gone
    }
  };
  const app = {
    output: () => output,
    killNow: () => group("SIGKILL"),
    async stop() {
      if (exited) return;
      group("SIGTERM");
      const t = setTimeout(() => group("SIGKILL"), 5000);
      await exit;
      clearTimeout(t);
      group("SIGKILL"); // what the app started and left behind
    },
  };
  running.add(app);
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    if (exited) {
      throw new Error(`${path.basename(cmd)} exited (${JSON.stringify(exited)}) before ` +
        `${readyUrl} answered:\n${output}`);
    }
    try {
      await fetch(readyUrl, { signal: AbortSignal.timeout(5000) });
      return app;
    } catch {
      // not up yet
    }
    if (Date.now() > deadline) {
      await app.stop();
      throw new Error(`${readyUrl} did not answer within ${timeoutMs} ms:\n${output}`);
    }
    await new Promise((r) => setTimeout(r, 100));
  }
}
