// @ts-check
// Getting a GGUF file into the page (docs/design.md, "A model in the page"): from the
// browser's Cache Storage when it is there (every start after the first, offline too), else
// downloaded with progress, checked (the GGUF magic bytes, the optional SHA-256) and cached.
// Each failure is an error with a stable code (`model_not_gguf`, `model_checksum`,
// `model_download`, `quota_exceeded`), which the SDK turns into a GatehouseError.

const CACHE = "gatehouse-models";
const GGUF_MAGIC = [0x47, 0x47, 0x55, 0x46]; // "GGUF"

export function fileError(code, message) {
  return Object.assign(new Error(message), { code });
}

/** Progress at most every 1% (or 4 MiB when the size is unknown), and at the end. */
function throttled(report, phase, total) {
  let next = 0;
  const step = total ? Math.max(1, Math.floor(total / 100)) : 4 << 20;
  return (loaded, done = false) => {
    if (done || loaded >= next) {
      next = loaded + step;
      report(phase, loaded, total);
    }
  };
}

function checkMagic(bytes, what) {
  if (bytes.length < 4 || GGUF_MAGIC.some((b, i) => bytes[i] !== b)) {
    throw fileError("model_not_gguf", `${what} is not a GGUF file (it does not start with "GGUF")`);
  }
}

async function sha256Hex(blob) {
  const digest = await crypto.subtle.digest("SHA-256", await blob.arrayBuffer());
  return [...new Uint8Array(digest)].map((b) => b.toString(16).padStart(2, "0")).join("");
}

async function checkSha(blob, sha256, what) {
  if (!sha256) return;
  const got = await sha256Hex(blob);
  if (got !== sha256.toLowerCase()) {
    throw fileError("model_checksum", `${what}: SHA-256 ${got}, expected ${sha256.toLowerCase()}`);
  }
}

const isQuota = (e) => e?.name === "QuotaExceededError" || e?.code === 22;

/** The cache entry's key: the URL and the expected checksum (another sha256 fetches again). A
 *  fragment would not do: Cache Storage ignores fragments when it matches. */
const cacheKey = (url, sha256) =>
  `${url}${url.includes("?") ? "&" : "?"}gatehouse-sha256=${sha256 ? sha256.toLowerCase() : "none"}`;

/**
 * The model file as a Blob. `source`: a URL (resolved against the page) or a Blob.
 * `report(phase, loaded, total)`: phase "download" or "cache".
 */
export async function modelFile(source, { sha256, report, signal }) {
  if (source instanceof Blob) {
    checkMagic(new Uint8Array(await source.slice(0, 4).arrayBuffer()), "the model Blob");
    await checkSha(source, sha256, "the model Blob");
    report("cache", source.size, source.size);
    return source;
  }
  const url = new URL(source, globalThis.location?.href).href;
  const key = cacheKey(url, sha256);
  const cache = globalThis.caches ? await caches.open(CACHE) : null;
  const hit = await cache?.match(key);
  if (hit) {
    const blob = await hit.blob();
    report("cache", blob.size, blob.size);
    return blob;
  }
  let res;
  try {
    res = await fetch(url, { signal });
  } catch (e) {
    if (signal?.aborted) throw e;
    throw fileError("model_download", `the model ${url} could not be downloaded (${e?.message ?? e}); it is not cached yet`);
  }
  if (!res.ok || !res.body) {
    throw fileError("model_download", `the model ${url} could not be downloaded: HTTP ${res.status}`);
  }
  const total = Number(res.headers.get("content-length")) || undefined;
  const progress = throttled(report, "download", total);
  const reader = res.body.getReader();
  const chunks = [];
  let loaded = 0;
  progress(0);
  for (;;) {
    const { done, value } = await reader.read();
    if (done) break;
    if (loaded === 0 && value.length >= 4) {
      try {
        checkMagic(value, `the model at ${url}`); // fail at the first chunk, not 98 MB later
      } catch (e) {
        reader.cancel().catch(() => {});
        throw e;
      }
    }
    chunks.push(value);
    loaded += value.length;
    progress(loaded);
  }
  progress(loaded, true);
  const blob = new Blob(chunks);
  checkMagic(new Uint8Array(await blob.slice(0, 4).arrayBuffer()), `the model at ${url}`);
  await checkSha(blob, sha256, `the model at ${url}`);
  if (cache) {
    try {
      await cache.put(key, new Response(blob, { headers: { "content-type": "application/octet-stream" } }));
    } catch (e) {
      if (isQuota(e)) {
        throw fileError("quota_exceeded", `the browser's storage quota has no room for the model (${blob.size} bytes): ${e.message}`);
      }
      throw e;
    }
  }
  return blob;
}

/** Removes the cached copies of a model URL (every checksum), or all models with no URL. */
export async function forgetModel(source) {
  if (!globalThis.caches) return;
  if (source === undefined) {
    await caches.delete(CACHE);
    return;
  }
  const url = new URL(source, globalThis.location?.href).href;
  const cache = await caches.open(CACHE);
  for (const req of await cache.keys()) {
    if (req.url.startsWith(cacheKey(url, "").replace(/none$/, ""))) await cache.delete(req);
  }
}
