// Static file serving for --static DIR: GET/HEAD only, index.html for directories,
// no escape from DIR (neither by "..", encoded separators, nor symlinks), Cache-Control: no-store.

import { createReadStream } from 'node:fs';
import { realpath, stat } from 'node:fs/promises';
import path from 'node:path';

const TYPES = {
  '.html': 'text/html; charset=utf-8',
  '.htm': 'text/html; charset=utf-8',
  '.js': 'text/javascript; charset=utf-8',
  '.mjs': 'text/javascript; charset=utf-8',
  '.cjs': 'text/javascript; charset=utf-8',
  '.wasm': 'application/wasm',
  '.json': 'application/json; charset=utf-8',
  '.map': 'application/json; charset=utf-8',
  '.css': 'text/css; charset=utf-8',
  '.txt': 'text/plain; charset=utf-8',
  '.md': 'text/plain; charset=utf-8',
  '.ts': 'text/plain; charset=utf-8',
  '.svg': 'image/svg+xml',
  '.png': 'image/png',
  '.jpg': 'image/jpeg',
  '.jpeg': 'image/jpeg',
  '.gif': 'image/gif',
  '.webp': 'image/webp',
  '.ico': 'image/x-icon',
  '.woff2': 'font/woff2',
};

export function contentType(file) {
  return TYPES[path.extname(file).toLowerCase()] ?? 'application/octet-stream';
}

function plain(res, status, text) {
  res.writeHead(status, { 'Content-Type': 'text/plain; charset=utf-8', 'Cache-Control': 'no-store' });
  res.end(`${text}\n`);
}

/** `root` must already be an absolute, real path. `rawPath` is the URL path (still percent-encoded). */
export async function serveStatic(req, res, root, rawPath, extraHeaders = {}) {
  if (req.method !== 'GET' && req.method !== 'HEAD') return plain(res, 405, 'method not allowed');
  let rel;
  try {
    rel = decodeURIComponent(rawPath);
  } catch {
    return plain(res, 400, 'bad path encoding');
  }
  if (rel.includes('\0')) return plain(res, 400, 'bad path');
  // Reject any ".." segment outright (after decoding, so %2e%2e and ..%2f are caught too).
  if (rel.split(/[\\/]+/).includes('..')) return plain(res, 403, 'forbidden');
  let file = path.resolve(root, `.${path.posix.normalize(`/${rel}`)}`);
  const inside = (p) => p === root || p.startsWith(root + path.sep);
  if (!inside(file)) return plain(res, 403, 'forbidden');
  let st;
  try {
    file = await realpath(file); // follow symlinks, then check again
    if (!inside(file)) return plain(res, 403, 'forbidden');
    st = await stat(file);
    if (st.isDirectory()) {
      if (!rawPath.endsWith('/')) { // so relative URLs in index.html resolve inside the directory
        res.writeHead(301, { Location: `/${rawPath.replace(/^\/+/, '')}/`, 'Cache-Control': 'no-store' });
        return res.end();
      }
      file = await realpath(path.join(file, 'index.html'));
      if (!inside(file)) return plain(res, 403, 'forbidden');
      st = await stat(file);
    }
  } catch {
    return plain(res, 404, 'not found');
  }
  if (!st.isFile()) return plain(res, 404, 'not found');
  res.writeHead(200, {
    'Content-Type': contentType(file),
    'Content-Length': st.size,
    'Cache-Control': 'no-store',
    'X-Content-Type-Options': 'nosniff',
    ...extraHeaders,
  });
  if (req.method === 'HEAD') return res.end();
  const stream = createReadStream(file);
  stream.on('error', () => res.destroy());
  res.on('close', () => stream.destroy());
  stream.pipe(res);
}
