// Service worker of the Gatehouse demo: the app shell, the widget and the SDK (JS + wasm)
// are served cache-first from a versioned cache, so the demo opens with the network off.
// Threads and pending approvals are in IndexedDB, not here. Model requests and every
// other URL go to the network untouched.
//
// Updates: bump VERSION to start a fresh cache. Besides, when a page asks (`checkUpdate`,
// sent by the app once it has loaded, while online), the worker fetches the shell again
// and, if any file changed (e.g. the SDK was rebuilt), replaces the cached copies and
// tells the page, which offers a reload. The running page is never given a mix of files.

const VERSION = 'gatehouse-demo-v8';
const FILES = [
  './',
  './index.html',
  './app.js',
  './app.css',
  './settings.js',
  './tools.js',
  './icon.svg',
  './article.html',
  './article.css',
  '../pkg/gatehouse.js',
  '../pkg/gatehouse_wasm.js',
  '../pkg/gatehouse_bg.wasm',
  // The demo model, the MCP client and the grants' module, which the main wasm leaves out,
  // and their loader: the demo chats with the model offline, a thread with an MCP server
  // reopens offline, and a remembered grant approves offline.
  '../pkg/load-wasm.js',
  '../pkg/demo-model/index.js',
  '../pkg/demo-model/model.js',
  '../pkg/demo-model/model_bg.wasm',
  '../pkg/mcp/index.js',
  '../pkg/mcp/questions.js',
  '../pkg/mcp/client.js',
  '../pkg/mcp/client_bg.wasm',
  '../pkg/grants/index.js',
  '../pkg/grants/grants.js',
  '../pkg/grants/grants_bg.wasm',
  '../pkg/ui/index.js',
  '../pkg/ui/announcer.js',
  '../pkg/ui/cards.js',
  '../pkg/ui/chat-view.js',
  '../pkg/ui/composer.js',
  '../pkg/ui/errors.js',
  '../pkg/ui/markdown.js',
  '../pkg/ui/message-list.js',
  '../pkg/ui/messages.js',
  '../pkg/ui/questions.js',
  '../pkg/ui/widget.js',
  '../pkg/ui/element.js',
  '../pkg/ui/gatehouse.css',
  // The ui kit's dependencies, where the pages' import maps point.
  '../node_modules/marked/lib/marked.esm.js',
  '../node_modules/dompurify/dist/purify.es.mjs',
];
const URLS = FILES.map((f) => new URL(f, self.registration.scope).href);
const KNOWN = new Set(URLS);
const PKG = new URL('../pkg/', self.registration.scope).href;

/** The SDK's modules import small snippet modules (`./snippets/<crate-hash>/inline0.js`)
 *  whose path changes between builds: find them in the modules themselves. */
async function snippetUrls() {
  const found = [];
  for (const module of ['gatehouse.js', 'gatehouse_wasm.js']) {
    const res = await fetch(new URL(module, PKG).href, { cache: 'no-store' });
    const text = await res.text();
    found.push(...[...text.matchAll(/from ['"](\.\/snippets\/[^'"]+)['"]/g)].map((m) => new URL(m[1], PKG).href));
  }
  // A module may import one snippet twice (named and `* as`): cache.addAll refuses duplicates.
  return [...new Set(found)];
}

self.addEventListener('install', (event) => {
  event.waitUntil((async () => {
    const cache = await caches.open(VERSION);
    const snippets = await snippetUrls();
    await cache.addAll([...new Set([...URLS, ...snippets])].map((u) => new Request(u, { cache: 'no-store' })));
    await self.skipWaiting();
  })());
});

self.addEventListener('activate', (event) => {
  event.waitUntil((async () => {
    for (const name of await caches.keys()) {
      if (name.startsWith('gatehouse-demo-') && name !== VERSION) await caches.delete(name);
    }
    await self.clients.claim();
    for (const client of await self.clients.matchAll()) client.postMessage(await status());
  })());
});

/** The cache key of a request: its URL without query and hash, or null when not ours. */
function keyOf(request) {
  if (request.method !== 'GET') return null;
  const url = new URL(request.url);
  url.search = '';
  url.hash = '';
  // The in-page model's module and runtime (pkg/local/) are kept once a page loaded them: only
  // a page that chose that model fetches them. The model file is cached by the SDK itself.
  const ours = KNOWN.has(url.href) || url.href.startsWith(PKG + 'snippets/') || url.href.startsWith(PKG + 'local/');
  return ours ? url.href : null;
}

self.addEventListener('fetch', (event) => {
  const key = keyOf(event.request);
  if (!key) return; // not part of the shell: the network, as usual
  event.respondWith((async () => {
    const cache = await caches.open(VERSION);
    const hit = await cache.match(key);
    if (hit) return hit;
    const res = await fetch(event.request);
    if (res.ok) await cache.put(key, res.clone());
    return res;
  })());
});

async function status() {
  const cache = await caches.open(VERSION);
  const keys = new Set((await cache.keys()).map((r) => r.url));
  return { type: 'status', version: VERSION, ready: URLS.every((u) => keys.has(u)) };
}

async function digest(response) {
  const buf = await response.arrayBuffer();
  const hash = new Uint8Array(await crypto.subtle.digest('SHA-256', buf));
  return Array.from(hash, (b) => b.toString(16).padStart(2, '0')).join('');
}

let checking = null;

/** Re-fetches every file; if one changed, stores the new set and returns true. */
async function checkUpdate() {
  const cache = await caches.open(VERSION);
  const fresh = await Promise.all(URLS.map(async (u) => {
    const res = await fetch(u, { cache: 'no-store' });
    if (!res.ok) throw new Error(`${u}: HTTP ${res.status}`);
    return res;
  }));
  let changed = false;
  for (let i = 0; i < URLS.length; i++) {
    const old = await cache.match(URLS[i]);
    if (!old || (await digest(old)) !== (await digest(fresh[i].clone()))) {
      changed = true;
      break;
    }
  }
  if (changed) await Promise.all(URLS.map((u, i) => cache.put(u, fresh[i])));
  return changed;
}

self.addEventListener('message', (event) => {
  const msg = event.data || {};
  if (msg.type !== 'status') return;
  event.waitUntil((async () => {
    event.source?.postMessage(await status());
    if (!msg.checkUpdate || checking) return;
    checking = checkUpdate().catch(() => false); // offline or a file missing: keep the cache
    const changed = await checking;
    checking = null;
    if (changed) event.source?.postMessage({ type: 'updated', version: VERSION });
  })());
});
