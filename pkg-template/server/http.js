// @ts-check
// HTTP for the store handler: JSON answers, CORS and origins, query strings, bodies, and
// Node's http server (toNodeListener).

import { Refusal, invalid, tooLarge } from "./errors.js";

// A page of rows holds at most this many (src/store/wire.rs, MAX_PAGE: the browser's remote
// store reads a longer page as several).
export const MAX_PAGE = 4096;

// A decide body is small: it is read before `authorize` (which gets its intent), so it is
// read only this far.
export const MAX_DECIDE_BYTES = 64 * 1024;

// Ids are index keys: Postgres refuses a btree entry over ~2.7 KB, so both stay well below.
export const MAX_ID_BYTES = 512;

export const utf8Length = (text) => new TextEncoder().encode(text).length;

export function json(status, body, headers) {
  const text = typeof body === "string" ? body : JSON.stringify(body);
  return new Response(text, {
    status,
    headers: { ...headers, "content-type": "application/json; charset=utf-8",
      "cache-control": "no-store" },
  });
}

/**
 * A credentialed request from a page on an origin `cors` does not list is refused before it
 * does anything (a browser would hide the answer, but a write would be done).
 */
export function refuseOrigin(cors, request) {
  const origin = request.headers.get("origin");
  if (!cors || cors.origin === "*" || origin === null) return;
  const listed = Array.isArray(cors.origin) ? cors.origin : [cors.origin];
  if (!listed.includes(origin)) {
    throw new Refusal(403, "origin_refused", `requests from ${origin} are not allowed`);
  }
}

export function corsHeaders(cors, request) {
  if (!cors) return {};
  const origin = request.headers.get("origin");
  const allowed = cors.origin === "*"
    ? "*"
    : (Array.isArray(cors.origin) ? cors.origin : [cors.origin]).includes(origin) ? origin : null;
  if (!allowed) return {};
  const h = { "access-control-allow-origin": allowed, vary: "Origin" };
  if (cors.credentials) h["access-control-allow-credentials"] = "true";
  return h;
}

// Routes (src/store/wire.rs)

export function readQuery(params, allowed) {
  const q = {};
  for (const [k, v] of params) {
    if (!allowed.includes(k)) throw invalid(`unknown query parameter "${k}"`);
    if (k in q) throw invalid(`query parameter "${k}" given twice`);
    q[k] = v;
  }
  return q;
}

export function integer(text, name, max) {
  if (!/^\d{1,16}$/.test(text) || Number(text) > max) {
    throw invalid(`${name} must be an integer from 0 to ${max}`);
  }
  return Number(text);
}

export function threadIdOf(raw) {
  let id;
  try {
    id = decodeURIComponent(raw);
  } catch {
    throw invalid("the thread id is not valid percent-encoded UTF-8");
  }
  if (utf8Length(id) > MAX_ID_BYTES) throw invalid(`a thread id has at most ${MAX_ID_BYTES} bytes`);
  // Postgres text cannot hold NUL.
  if (id.includes("\u0000")) throw invalid("a thread id cannot contain NUL");
  return id;
}

/** Writes take JSON only: a cross-site form or `text/plain` post cannot reach them. */
export function requireJson(request) {
  const type = (request.headers.get("content-type") ?? "").split(";")[0].trim().toLowerCase();
  if (type !== "application/json") {
    throw new Refusal(415, "unsupported_media_type",
      "the body must be sent as content-type: application/json");
  }
}

/** The body as text, at most `max` bytes counted as they arrive (Content-Length is a hint). */
export async function readBody(request, max) {
  const declared = request.headers.get("content-length");
  if (declared !== null && Number(declared) > max) throw tooLarge(max);
  if (!request.body) return "";
  const reader = request.body.getReader();
  const chunks = [];
  let total = 0;
  for (;;) {
    const { done, value } = await reader.read();
    if (done) break;
    total += value.byteLength;
    if (total > max) {
      reader.cancel().catch(() => {});
      throw tooLarge(max);
    }
    chunks.push(value);
  }
  const bytes = new Uint8Array(total);
  let at = 0;
  for (const c of chunks) {
    bytes.set(c, at);
    at += c.byteLength;
  }
  try {
    return new TextDecoder("utf-8", { fatal: true }).decode(bytes);
  } catch {
    throw invalid("the body is not UTF-8");
  }
}

/** Whether a request target's path has a `.` or `..` segment, plain or percent-encoded. */
function hasDotSegment(target) {
  const path = target.split(/[?#]/, 1)[0];
  return path.split("/").some((seg) => /^(\.|%2e){1,2}$/i.test(seg));
}

/**
 * Mounts a fetch-style handler on Node's http server: `http.createServer(toNodeListener(h))`.
 * The request is aborted (its `signal`) when the connection closes.
 */
export function toNodeListener(handle) {
  return async (req, res) => {
    const controller = new AbortController();
    res.on("close", () => controller.abort());
    // A body the handler did not read to its end (a 413): drained, so the client gets the
    // answer rather than a reset connection.
    res.on("finish", () => {
      if (!req.complete) {
        req.removeAllListeners("data");
        req.resume();
      }
    });
    const headers = new Headers();
    for (const [k, v] of Object.entries(req.headers)) {
      if (k.startsWith(":") || v === undefined) continue;
      headers.set(k, Array.isArray(v) ? v.join(", ") : v);
    }
    const init = { method: req.method, headers, signal: controller.signal };
    if (req.method !== "GET" && req.method !== "HEAD") {
      init.duplex = "half";
      init.body = new ReadableStream({
        start(c) {
          req.on("data", (chunk) => {
            try {
              c.enqueue(new Uint8Array(chunk.buffer, chunk.byteOffset, chunk.byteLength));
            } catch {
              // the handler stopped reading (too large): the rest is dropped
            }
            if (c.desiredSize !== null && c.desiredSize <= 0) req.pause();
          });
          req.on("end", () => {
            try {
              c.close();
            } catch {
              // cancelled
            }
          });
          req.on("error", (e) => c.error(e));
        },
        pull() {
          req.resume();
        },
        cancel() {
          req.resume();
        },
      });
    }
    // Routing uses the path alone: never the Host header, never an absolute-form target,
    // and a path with dot segments (also percent-encoded) is refused, not resolved.
    const target = req.url ?? "";
    if (!target.startsWith("/") || hasDotSegment(target)) {
      res.writeHead(400, { "content-type": "application/json; charset=utf-8" });
      res.end(JSON.stringify({ error: { code: "invalid_request",
        message: "the request target must be a path without dot segments" } }));
      return;
    }
    let response;
    try {
      response = await handle(new Request(`http://localhost${target}`, init));
    } catch {
      res.writeHead(500).end();
      return;
    }
    const head = Object.fromEntries(response.headers);
    if (!response.body) {
      res.writeHead(response.status, head).end();
      return;
    }
    // An answer (not a stream): whole, with its length, in one write.
    if (head["content-type"] !== "text/event-stream") {
      let bytes;
      try {
        bytes = new Uint8Array(await response.arrayBuffer());
      } catch {
        res.writeHead(500).end();
        return;
      }
      head["content-length"] = String(bytes.byteLength);
      res.writeHead(response.status, head).end(bytes);
      return;
    }
    res.writeHead(response.status, head);
    const reader = response.body.getReader();
    res.on("close", () => reader.cancel().catch(() => {}));
    try {
      for (;;) {
        const { done, value } = await reader.read();
        if (done) break;
        if (!res.write(value)) {
          await new Promise((resolve) => {
            res.once("drain", resolve);
            res.once("close", resolve);
          });
        }
      }
      res.end();
    } catch {
      res.destroy();
    }
  };
}
