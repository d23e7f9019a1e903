// usage: node run.mjs candle|wllama|blank
import { chromium } from 'playwright-core';
import fs from 'node:fs';
import { start } from './serve.mjs';
const which = process.argv[2] || 'candle';
const srv = await start();
const port = srv.address().port;
const browser = await chromium.launch({ executablePath: '/usr/bin/chromium', headless: true, args: ['--no-sandbox', '--enable-precise-memory-info'] });
const bpid = process.pid; // chromium is spawned by this node process
function descendants(pid) {
  const out = [];
  for (const d of fs.readdirSync('/proc')) {
    if (!/^\d+$/.test(d)) continue;
    try {
      const st = fs.readFileSync(`/proc/${d}/stat`, 'utf8');
      const ppid = +st.slice(st.lastIndexOf(')') + 2).split(' ')[1];
      if (ppid === pid) out.push(+d, ...descendants(+d));
    } catch {}
  }
  return out;
}
function rendererHWM() {
  const r = [];
  for (const p of descendants(bpid)) {
    try {
      const cmd = fs.readFileSync(`/proc/${p}/cmdline`, 'utf8');
      if (!cmd.includes('--type=renderer')) continue;
      const s = fs.readFileSync(`/proc/${p}/status`, 'utf8');
      const kb = k => +(s.match(new RegExp(k + ':\\s+(\\d+)'))?.[1] || 0);
      r.push({ pid: p, VmHWM_MiB: +(kb('VmHWM') / 1024).toFixed(1), VmRSS_MiB: +(kb('VmRSS') / 1024).toFixed(1) });
    } catch {}
  }
  return r;
}
const page = await browser.newPage();
page.on('console', m => { if (m.type() === 'error') console.error('[page]', m.text()); });
const t0 = Date.now();
await page.goto(`http://127.0.0.1:${port}/web/${which}.html${process.argv[3] ? "?p=" + encodeURIComponent(process.argv[3]) : ""}`);
await page.waitForFunction(() => window.__result, null, { timeout: 900000, polling: 200 });
const result = await page.evaluate(() => window.__result);
const out = { which, wall_ms: Date.now() - t0, loadavg: fs.readFileSync('/proc/loadavg', 'utf8').trim(), ...result, renderers: rendererHWM() };
console.log(JSON.stringify(out));
await browser.close();
srv.close();
