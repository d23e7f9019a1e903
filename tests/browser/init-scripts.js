// Init scripts for engines whose driver cannot add them (WebKitGTK's classic WebDriver, see
// engines.mjs): when the URL's fragment names an init source, it runs here, synchronously,
// before the page's module. Without that fragment (Chromium, Firefox) this does nothing.
(() => {
  const m = /^#gh-init=(.+)$/.exec(location.hash);
  if (!m) return;
  const xhr = new XMLHttpRequest();
  xhr.open('GET', decodeURIComponent(m[1]), false); // synchronous: the module must not run first
  xhr.send();
  if (xhr.status !== 200) throw new Error(`init scripts: HTTP ${xhr.status}`);
  (0, eval)(xhr.responseText);
})();
