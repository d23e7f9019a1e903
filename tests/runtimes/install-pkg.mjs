// Installs the packed package (npm pack of pkg/) as tests/runtimes/node_modules/gatehouse-agent,
// the way npm lays out a tarball it installs: the runtime apps import it by name. Its own
// dependencies (the ui kit's) are not needed by gatehouse-agent/server and are not installed.
import { execFileSync } from "node:child_process";
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { modules, root } from "./harness.mjs";

if (!fs.existsSync(path.join(root, "pkg/server.js"))) throw new Error("pkg/ is not built: make pkg");
if (!fs.existsSync(modules)) throw new Error(`${modules} is missing: make setup-runtimes`);
const work = fs.mkdtempSync(path.join(os.tmpdir(), "gatehouse-runtimes-pack-"));
try {
  const name = execFileSync("npm", ["pack", "--silent", "--pack-destination", work],
    { cwd: path.join(root, "pkg"), encoding: "utf8" }).trim().split("\n").pop();
  const dest = path.join(modules, "gatehouse-agent");
  fs.rmSync(dest, { recursive: true, force: true });
  fs.mkdirSync(dest);
  execFileSync("tar", ["xzf", path.join(work, name), "-C", dest, "--strip-components=1"]);
  console.log(`installed ${name} into ${path.relative(root, dest)}`);
} finally {
  fs.rmSync(work, { recursive: true, force: true });
}
