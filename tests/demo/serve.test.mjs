// `make demo` as a newcomer meets it: scripts/serve-demo.sh prints an address, the README
// names the same one, and that address (the server's root) opens the demo.
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { once } from 'node:events';
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { test } from 'node:test';
import { fileURLToPath } from 'node:url';

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../..');

test('make demo: the printed address is the README\'s and opens the demo', { timeout: 30_000 }, async () => {
  const readme = readFileSync(path.join(root, 'README.md'), 'utf8');
  const documented = /^make demo\b[\s\S]*?(http:\/\/127\.0\.0\.1:8080\S*)/m.exec(readme)?.[1];
  assert.ok(documented, 'the README says where `make demo` serves the demo');

  const child = spawn('bash', ['scripts/serve-demo.sh'], {
    cwd: root, env: { ...process.env, PORT: '0' }, stdio: ['ignore', 'pipe', 'inherit'], detached: true,
  });
  try {
    let out = '';
    child.stdout.on('data', (d) => { out += d; });
    const deadline = Date.now() + 20_000;
    let printed;
    while (!(printed = /Gatehouse demo:\s+(http:\/\/127\.0\.0\.1:(\d+)\S*)/.exec(out))) {
      assert.ok(child.exitCode === null && Date.now() < deadline, `serve-demo.sh printed no address:\n${out}`);
      await new Promise((r) => setTimeout(r, 50));
    }
    // Only the port differs (PORT=0 here picks a free one).
    assert.equal(printed[1].replace(`:${printed[2]}`, ':8080'), documented.replace(/[).,]+$/, ''));
    const page = await fetch(printed[1]);
    assert.equal(page.status, 200);
    assert.match(page.url, /\/www\/$/);
    assert.match(await page.text(), /<title>Gatehouse demo<\/title>/);
    // Cross-origin isolated, so the in-browser model runs on threads (README, "A model in
    // the page").
    assert.equal(page.headers.get('cross-origin-opener-policy'), 'same-origin');
    assert.equal(page.headers.get('cross-origin-embedder-policy'), 'require-corp');
  } finally {
    process.kill(-child.pid, 'SIGTERM');
    if (child.exitCode === null) await once(child, 'exit');
  }
});
