// tiny static server: /pkg/* -> ./pkg, /web/* -> ./web, /model.gguf -> model, /wllama/* -> @wllama/wllama
import http from 'node:http';
import fs from 'node:fs';
import path from 'node:path';
const ROOT = new URL('.', import.meta.url).pathname;
const MODEL = process.env.GATEHOUSE_TEST_MODEL ?? `${process.env.HOME}/.cache/gatehouse/SmolLM2-135M-Instruct.Q4_1.gguf`;
const WLL = new URL('../../../node_modules/@wllama/wllama', import.meta.url).pathname;
const types = { '.html': 'text/html', '.js': 'text/javascript', '.mjs': 'text/javascript', '.wasm': 'application/wasm', '.gguf': 'application/octet-stream' };
export function start(port = 0) {
  const srv = http.createServer((req, res) => {
    const u = decodeURIComponent(new URL(req.url, 'http://x').pathname);
    let f;
    if (u === '/model.gguf') f = MODEL;
    else if (u.startsWith('/wllama/')) f = path.join(WLL, u.slice(8));
    else if (u.startsWith('/pkg/') || u.startsWith('/web/')) f = path.join(ROOT, u);
    if (!f || !fs.existsSync(f) || fs.statSync(f).isDirectory()) { res.writeHead(404); res.end(); return; }
    res.writeHead(200, { 'content-type': types[path.extname(f)] || 'application/octet-stream', 'content-length': fs.statSync(f).size });
    fs.createReadStream(f).pipe(res);
  });
  return new Promise(r => srv.listen(port, '127.0.0.1', () => r(srv)));
}
