// Every place a provider must be named (docs/design.md, "Where to add things") against the
// providers Rust knows: the names `ProviderKind::as_str` gives (src/providers/config.rs), which
// are the names the options are read by.
// - the TypeScript `ModelOptions` union (src/js/types.rs): exactly those providers;
// - each provider with an HTTP wire format (`wire_format` returns Ok): offered by the demo's
//   settings (www/settings.js, and a radio in www/index.html), served by the local model server
//   (tests/model-server/<name>.mjs), and read from a recorded stream
//   (tests/fixtures/providers/<name>_stream_tools.sse).
import fs from 'node:fs';

const root = new URL('../../', import.meta.url);
const read = (p) => fs.readFileSync(new URL(p, root), 'utf8');

const config = read('src/providers/config.rs');
const at = config.indexOf('pub fn as_str(self)', config.indexOf('impl ProviderKind'));
if (at < 0) throw new Error('src/providers/config.rs: no ProviderKind::as_str');
const body = config.slice(at, config.indexOf('\n    }\n', at));
const names = new Map([...body.matchAll(/ProviderKind::(\w+) => "([a-z]+)"/g)].map((m) => [m[1], m[2]]));
const known = new Set(names.values());
const wire = config.slice(config.indexOf('pub fn wire_format(self)'));
const http = [...wire.slice(0, wire.indexOf('\n    }\n')).matchAll(/ProviderKind::(\w+) => return Ok/g)]
  .map((m) => names.get(m[1]));

const types = read('src/js/types.rs');
const union = /export type ModelOptions =([\s\S]*?);\n\n/.exec(types);
if (!union) throw new Error('src/js/types.rs: no ModelOptions union');
const declared = new Set();
for (const m of union[1].matchAll(/provider: ([^;]+);/g)) {
  for (const name of m[1].matchAll(/"([a-z]+)"/g)) declared.add(name[1]);
}

// `local` is the package's own: gatehouse.js turns it into a `custom` model made by the
// gatehouse-agent/local module (docs/design.md, "A model in the page").
const entry = read('pkg-template/gatehouse.js');
const byEntry = entry.includes('provider === "local"') && fs.existsSync(new URL('pkg-template/local/index.js', root))
  ? ['local'] : [];
const missing = [...known, ...byEntry].filter((p) => !declared.has(p));
const unknown = [...declared].filter((p) => !known.has(p) && !byEntry.includes(p));
if (known.size === 0 || missing.length || unknown.length) {
  console.error(`ModelOptions is out of step with ProviderKind: missing ${JSON.stringify(missing)}, unknown ${JSON.stringify(unknown)}`);
  process.exit(1);
}
const settings = read('www/settings.js');
const offered = /export const PROVIDERS = \{([\s\S]*?)\n\};/.exec(settings)?.[1] ?? '';
const gaps = [];
for (const p of http) {
  if (!p) throw new Error('a provider with a wire format has no name');
  if (!new RegExp(`^  ${p}: \\{`, 'm').test(offered)) gaps.push(`www/settings.js PROVIDERS lacks ${p}`);
  for (const f of [`tests/model-server/${p}.mjs`, `tests/fixtures/providers/${p}_stream_tools.sse`]) {
    if (!fs.existsSync(new URL(f, root))) gaps.push(`${f} is missing`);
  }
}
// The settings dialog offers every provider of PROVIDERS (www/index.html), and settings.js
// keeps no list of its own (its per-provider fields come from PROVIDERS).
const page = read('www/index.html');
for (const [, p] of offered.matchAll(/^  (\w+): \{/gm)) {
  if (!page.includes(`name="provider" value="${p}"`)) gaps.push(`www/index.html has no provider radio for ${p}`);
}
if (/\[\s*'openai'\s*,/.test(settings)) gaps.push('www/settings.js lists providers by hand; derive them from PROVIDERS');
if (http.length === 0 || gaps.length) {
  console.error(`providers with a wire format (${http}) are not everywhere: ${gaps.join('; ')}`);
  process.exit(1);
}
console.log(`providers: ModelOptions names the ${known.size} providers of ProviderKind; the ${http.length} HTTP ones are offered by the demo, served by the model server and have a recorded stream`);
