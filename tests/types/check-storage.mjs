// Every store `storage.kind` can name (docs/design.md, "Where to add things") against the
// stores Rust knows: the variants of `StorageKind` (src/driver/store.rs), read by serde in
// lowercase, must be exactly the kinds the TypeScript `StorageOptions` union names
// (src/js/types.rs), and each must have a constructor of the Rust API's `Storage`
// (src/agent/options.rs).
import fs from 'node:fs';

const root = new URL('../../', import.meta.url);
const read = (p) => fs.readFileSync(new URL(p, root), 'utf8');

const store = read('src/driver/store.rs');
const decl = /#\[serde\(rename_all = "lowercase"\)\]\npub enum StorageKind \{([\s\S]*?)\n\}/.exec(store);
if (!decl) throw new Error('src/driver/store.rs: no lowercase StorageKind enum');
const variants = [...decl[1].matchAll(/^    (\w+),$/gm)].map((m) => m[1]);
const known = new Set(variants.map((v) => v.toLowerCase()));

const types = read('src/js/types.rs');
const union = /export type StorageOptions =([\s\S]*?);\n\n/.exec(types);
if (!union) throw new Error('src/js/types.rs: no StorageOptions union');
const declared = new Set();
for (const m of union[1].matchAll(/kind\??: ([^;]+);/g)) {
  for (const k of m[1].matchAll(/"([a-z]+)"/g)) declared.add(k[1]);
}

const options = read('src/agent/options.rs');
const noConstructor = variants.filter((v) => !options.includes(`StorageKind::${v})`));

const missing = [...known].filter((k) => !declared.has(k));
const unknown = [...declared].filter((k) => !known.has(k));
if (known.size === 0 || missing.length || unknown.length || noConstructor.length) {
  console.error(`StorageOptions / Storage are out of step with StorageKind: missing ${JSON.stringify(missing)}, ` +
    `unknown ${JSON.stringify(unknown)}, no Storage constructor for ${JSON.stringify(noConstructor)}`);
  process.exit(1);
}
console.log(`storage: StorageOptions names the ${known.size} kinds of StorageKind (${[...known]}), each with a Storage constructor`);
