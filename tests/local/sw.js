// The local model tests' service worker: every GET of this origin (the page, pkg/ and its
// local/ module with wllama's wasm) is kept in a cache the first time it is fetched and served
// from it afterwards, so the page reloads with the network off. The model file is not its
// business: the SDK caches it in Cache Storage itself (pkg-template/local/model-file.js).
const CACHE = 'gatehouse-local-test-shell';
self.addEventListener('install', () => self.skipWaiting());
self.addEventListener('activate', (e) => e.waitUntil(self.clients.claim()));
self.addEventListener('fetch', (e) => {
  const url = new URL(e.request.url);
  if (e.request.method !== 'GET' || url.origin !== location.origin || url.pathname.startsWith('/models/')) return;
  e.respondWith((async () => {
    const cache = await caches.open(CACHE);
    const hit = await cache.match(e.request);
    if (hit) return hit;
    const res = await fetch(e.request);
    if (res.ok) await cache.put(e.request, res.clone());
    return res;
  })());
});
