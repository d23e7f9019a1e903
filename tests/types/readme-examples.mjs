// The package README's complete examples: each code block right after an
// `<!-- example: NAME -->` line, as written. `examples(readme)` returns them by name; run as a
// script, it writes them into tests/types/generated/readme/ with a tsconfig (strict, checkJs,
// React's JSX) that resolves `gatehouse-agent` to the built pkg/ through its package.json
// `exports` (a node_modules link), and `make test-types` compiles them there. The module script
// of an .html example is compiled as `NAME.module.js`. tests/package/run.mjs builds and runs the
// React and plain-page examples in a browser.
import fs from "node:fs";
import path from "node:path";

const ROOT = path.resolve(path.dirname(new URL(import.meta.url).pathname), "../..");

/** Examples a README must have: the tests build apps from them. */
export const REQUIRED = ["quick-start.js", "plain-page.html", "react-app.tsx", "react-layout.tsx"];

/** `{ [name]: code }` of the examples of the README text `readme`. */
export function examples(readme) {
  const out = {};
  const re = /^([ \t]*)<!-- example: ([\w.-]+) -->\n\1```(\w+)\n([\s\S]*?)\n\1```$/gm;
  for (const [, indent, name, , body] of readme.matchAll(re)) {
    if (out[name]) throw new Error(`two README examples are named ${name}`);
    out[name] = body.split("\n").map((l) => (l.startsWith(indent) ? l.slice(indent.length) : l)).join("\n") + "\n";
  }
  const marked = (readme.match(/<!-- example: /g) ?? []).length;
  if (marked !== Object.keys(out).length) {
    throw new Error(`${marked} examples are marked in the README, ${Object.keys(out).length} read: each marker must be followed by a fenced block at the same indent`);
  }
  const missing = REQUIRED.filter((n) => !out[n]);
  if (missing.length) throw new Error(`the README lacks the examples ${missing.join(", ")}`);
  return out;
}

/** The inline module script of an HTML example. */
export function moduleScript(html) {
  const m = /<script type="module">\n([\s\S]*?)<\/script>/.exec(html);
  if (!m) throw new Error("the HTML example has no inline module script");
  return m[1];
}

if (import.meta.url === `file://${process.argv[1]}`) {
  const readme = fs.readFileSync(path.join(ROOT, "pkg/README.md"), "utf8");
  const dir = path.join(ROOT, "tests/types/generated/readme");
  fs.rmSync(dir, { recursive: true, force: true });
  fs.mkdirSync(path.join(dir, "node_modules"), { recursive: true });
  // As an app resolves it: node_modules/gatehouse-agent is the built package.
  fs.symlinkSync(path.join(ROOT, "pkg"), path.join(dir, "node_modules/gatehouse-agent"), "dir");
  const files = [];
  for (const [name, code] of Object.entries(examples(readme))) {
    const file = name.endsWith(".html") ? name.replace(/\.html$/, ".module.js") : name;
    fs.writeFileSync(path.join(dir, file), name.endsWith(".html") ? moduleScript(code) : code);
    files.push(file);
  }
  fs.writeFileSync(path.join(dir, "tsconfig.json"), JSON.stringify({
    compilerOptions: {
      strict: true, noEmit: true, target: "ES2022", module: "ESNext", moduleResolution: "bundler",
      lib: ["ES2022", "DOM", "DOM.Iterable"], jsx: "react-jsx", allowJs: true, checkJs: true,
      skipLibCheck: false, isolatedModules: true, types: [],
    },
    files,
  }, null, 2));
  console.log(`README examples: ${files.join(", ")}`);
}
