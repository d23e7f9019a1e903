// The package's hand-written JS, type-checked as it ships (tests/types/js/tsconfig.json, over
// pkg/ after `make pkg`): every such file starts with `// @ts-check`, and tsc finds no error in
// any of them. The wasm-bindgen modules (generated) and wllama (vendored) are imported by
// them, so tsc reads those too; their errors are not ours and are left out.
import { execFileSync } from "node:child_process";
import fs from "node:fs";
import path from "node:path";
import { fileURLToPath } from "node:url";

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "../..");
const notOurs = [/^pkg\/local\/wllama\//, /^pkg\/mcp\/client\.js/, /^pkg\/grants\/grants\.js/, /^pkg\/demo-model\/model\.js/,
  /^pkg\/gatehouse_wasm\.js/, /^pkg\/gatehouse_remote\.js/, /^pkg\/server\/core\.js/];

const template = path.join(root, "pkg-template");
const unchecked = fs.readdirSync(template, { recursive: true })
  .filter((f) => String(f).endsWith(".js"))
  .filter((f) => !fs.lstatSync(path.join(template, String(f))).isSymbolicLink())
  .filter((f) => !fs.readFileSync(path.join(template, String(f)), "utf8").startsWith("// @ts-check\n"));
if (unchecked.length) {
  console.error(`pkg-template files without // @ts-check on their first line: ${unchecked.join(", ")}`);
  process.exit(1);
}

let out = "";
try {
  execFileSync("npx", ["tsc", "-p", "tests/types/js"], { cwd: root, encoding: "utf8" });
} catch (e) {
  out = `${e.stdout ?? ""}${e.stderr ?? ""}`;
  if (!/error TS/.test(out)) throw e;
}
const errors = out.split("\n").filter((l) => /error TS\d+/.test(l))
  .filter((l) => !notOurs.some((re) => re.test(l)));
if (errors.length) {
  console.error(`${errors.length} type errors in the package's JS:\n${errors.join("\n")}`);
  process.exit(1);
}
const checked = out.split("\n").filter((l) => /error TS\d+/.test(l)).length;
console.log(`the package's hand-written JS type-checks (${checked} errors in generated or vendored modules, not ours)`);
