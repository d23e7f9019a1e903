// The local model tests' HTTP server: the repository as static files (the page, pkg/ and its
// local/ module), and the test model at /models/test.gguf from the setup cache
// (scripts/setup-model.sh). Cross-origin isolation headers, so wllama may use threads.
// `node tests/local/server.mjs [port]` serves until killed (the bench and by hand).

import { createServer } from 'node:http';
import { realpathSync, statSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { serveStatic } from '../model-server/static.mjs';

export const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../..');

/** Where scripts/setup-model.sh caches the test model. */
export function modelPath() {
  if (process.env.GATEHOUSE_TEST_MODEL) return process.env.GATEHOUSE_TEST_MODEL;
  const cache = process.env.XDG_CACHE_HOME || path.join(process.env.HOME || '/tmp', '.cache');
  const dir = process.env.GATEHOUSE_MODEL_DIR || path.join(cache, 'gatehouse');
  return path.join(dir, 'SmolLM2-135M-Instruct.Q4_1.gguf');
}

const ISOLATION = {
  'Cross-Origin-Opener-Policy': 'same-origin',
  'Cross-Origin-Embedder-Policy': 'require-corp',
};

/** Starts the server; resolves to `{ url, requests, close }` (`requests`: the paths asked for). */
export async function startLocalServer({ port = 0, isolated = true } = {}) {
  const model = modelPath();
  statSync(model); // fails early, with the path, when `make setup` has not fetched it
  const root = realpathSync(ROOT);
  const modelDir = path.dirname(realpathSync(model));
  const requests = [];
  const headers = isolated ? ISOLATION : {};
  const server = createServer((req, res) => {
    const url = new URL(req.url, 'http://x');
    requests.push(url.pathname);
    if (url.pathname === '/models/test.gguf') {
      return serveStatic(req, res, modelDir, `/${path.basename(model)}`, headers);
    }
    return serveStatic(req, res, root, url.pathname, headers);
  });
  await new Promise((resolve) => server.listen(port, '127.0.0.1', resolve));
  const { port: bound } = server.address();
  return {
    url: `http://127.0.0.1:${bound}`,
    requests,
    close: () => new Promise((resolve) => { server.closeAllConnections(); server.close(resolve); }),
  };
}

if (process.argv[1] === fileURLToPath(import.meta.url)) {
  const s = await startLocalServer({ port: Number(process.argv[2] || 8090) });
  console.log(`serving ${ROOT} and ${modelPath()} at ${s.url}`);
}
