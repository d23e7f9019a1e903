// The TypeScript `GatehouseErrorCode` union (src/js/types.rs) against the codes the Rust errors
// really produce: every string literal an error type's `fn code()` returns, plus the two the
// package entry adds. Fails on a code missing from the union or a union member nobody produces.
import fs from 'node:fs';

const root = new URL('../../', import.meta.url);
const read = (p) => fs.readFileSync(new URL(p, root), 'utf8');
const sources = ['src/driver/error.rs', 'src/engine/error.rs', 'src/providers/error.rs', 'src/store/record.rs'];

const produced = new Set();
for (const file of sources) {
  const src = read(file);
  if (!src.includes('fn code(&self)')) throw new Error(`${file}: no fn code(&self)`);
  // Each `fn code` (a Copy enum's takes `self`), up to the first line that closes it at its
  // own indentation.
  for (const { index: at } of src.matchAll(/fn code\(&?self\)/g)) {
    const body = src.slice(at, src.indexOf('\n    }\n', at));
    for (const m of body.matchAll(/=>\s*"([a-z_]+)"/g)) produced.add(m[1]);
  }
}
for (const code of ['disposed', 'not_initialized']) produced.add(code); // pkg-template/gatehouse.js
// MCP elicitation's answers are checked in JS (pkg-template/mcp/questions.js, gatehouse.js).
for (const code of ['unknown_elicitation', 'invalid_elicitation_answer']) produced.add(code);

const types = read('src/js/types.rs');
const union = /export type GatehouseErrorCode =([^;]*);/.exec(types);
if (!union) throw new Error('src/js/types.rs: no GatehouseErrorCode union');
const declared = new Set([...union[1].matchAll(/"([a-z_]+)"/g)].map((m) => m[1]));

const missing = [...produced].filter((c) => !declared.has(c));
const unknown = [...declared].filter((c) => !produced.has(c));
if (missing.length || unknown.length) {
  console.error(`GatehouseErrorCode is out of step with the Rust errors: missing ${JSON.stringify(missing)}, never produced ${JSON.stringify(unknown)}`);
  process.exit(1);
}
console.log(`error codes: the TypeScript union matches the ${produced.size} codes the errors produce`);
