#!/usr/bin/env node
// The picture of one benchmark run: bench-output/report.html (the table, an inline SVG chart of
// every ratio, the targets of issue 22, the wasm by crate and by module; no external script or
// style), from that run's results.json. bench/run.mjs calls writeReport() at the end of every
// run; this file also runs on its own:
//
//   node bench/report.mjs [--results bench-output/results.json]
//       rewrites bench-output/report.html (beside the results) from the results
//   node bench/report.mjs --publish [--results …]
//       also screenshots the chart (headless Chromium, playwright-core) to docs/bench.png and
//       rewrites the README's benchmark block (between the bench-report markers) with that
//       run's numbers and the targets table
//
// Never fails on a number.
import fs from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
const esc = (s) => String(s).replace(/&/g, '&amp;').replace(/</g, '&lt;').replace(/>/g, '&gt;');
const fx = (r) => (r == null ? '—' : r >= 10 ? `${r.toFixed(1)}×` : `${r.toFixed(2)}×`);
const q = (R, f) => { try { return f(R) ?? null; } catch { return null; } };
const kb = (b) => (b == null ? '—' : `${(b / 1e3).toFixed(1)} KB`);
const ms = (x) => (x == null || Number.isNaN(x) ? '—' : Math.abs(x) >= 100 ? `${x.toFixed(0)} ms` : Math.abs(x) >= 10 ? `${x.toFixed(1)} ms` : `${x.toFixed(2)} ms`);

/**
 * The targets of issue 22 ("Targets, in one make bench run"), each against the persisting AI SDK
 * app, with this run's value. `met` is null when the run lacks the row.
 */
export function targets(R) {
  const out = [];
  const t = (row, now, target, met, note = '') => out.push({ row, now, target, met, note });
  const g = R.size?.gatehouse, p = R.size?.aisdkPersist, m = R.size?.aisdk;
  {
    const gz = q(R, () => g.total.gzip / p.appJs.gzip), br = q(R, () => g.total.brotli / p.appJs.brotli);
    t('total download, gzip -9 (brotli)', gz == null ? '—' : `${fx(gz)} (${fx(br)}): ${kb(g.total.gzip)} (${kb(g.total.brotli)}) vs ${kb(p.appJs.gzip)} (${kb(p.appJs.brotli)})`,
      '< 1.0× the persisting app', gz == null ? null : gz < 1 && br < 1, m ? `vs the in-memory app ${fx(g.total.gzip / m.appJs.gzip)} (${fx(g.total.brotli / m.appJs.brotli)})` : '');
  }
  const tu = R.turns;
  {
    const r = q(R, () => tu.ghIdb.cpuPerTurn / tu.aiP.cpuPerTurn);
    t('per tool turn, IndexedDB, main-thread CPU', r == null ? '—' : `${fx(r)}: ${ms(tu.ghIdb.cpuPerTurn)} vs ${ms(tu.aiP.cpuPerTurn)}`, '≤ 1.0× the persisting app', r == null ? null : r <= 1,
      q(R, () => `vs the in-memory app ${fx(tu.ghIdb.cpuPerTurn / tu.ai.cpuPerTurn)}`) ?? '');
  }
  {
    const above = q(R, () => tu.ghIdb.cpuPerTurn - tu.ghMem.cpuPerTurn - tu.idbFloor.cpuPerTurn);
    t("Gatehouse's cost above its own IndexedDB floor", above == null ? '—' : `${ms(above)} per turn`, '≤ 0.3 ms', above == null ? null : above <= 0.3,
      q(R, () => `GH IndexedDB ${ms(tu.ghIdb.cpuPerTurn)} − (memory store ${ms(tu.ghMem.cpuPerTurn)} + IndexedDB alone ${ms(tu.idbFloor.cpuPerTurn)})`) ?? '');
  }
  {
    const r = q(R, () => tu.approvalGhIdb.toIssue.median / tu.approvalAiP.toIssue.median);
    t('approval round trip, IndexedDB (submitDecisions → next request)', r == null ? '—' : `${fx(r)}: ${ms(tu.approvalGhIdb.toIssue.median)} vs ${ms(tu.approvalAiP.toIssue.median)}`, '≤ 2× the persisting app', r == null ? null : r <= 2,
      q(R, () => `vs the in-memory app ${fx(tu.approvalGhIdb.toIssue.median / tu.approvalAi.toIssue.median)}`) ?? '');
  }
  {
    const ap = R.reopen?.approveAfterReopen;
    const r1 = q(R, () => ap.gh[1000].toIssue.median / ap.ai[1000].toIssue.median);
    const r100 = q(R, () => ap.gh[100000].toIssue.median / ap.ai[100000].toIssue.median);
    t('approve → request, 1,000 / 100,000 messages', `${fx(r1)} / ${fx(r100)}${r1 != null ? `: ${ms(ap.gh[1000].toIssue.median)} vs ${ms(ap.ai[1000].toIssue.median)}` : ''}${r100 != null ? `; ${ms(ap.gh[100000].toIssue.median)} vs ${ms(ap.ai[100000].toIssue.median)}` : ''}`,
      '≤ 1.0× / ≤ 0.2× the persisting app', r1 == null || r100 == null ? null : r1 <= 1 && r100 <= 0.2,
      q(R, () => `vs the in-memory app ${fx(ap.gh[1000].toIssue.median / ap.aiMem[1000].toIssue.median)} / ${fx(ap.gh[100000].toIssue.median / ap.aiMem[100000].toIssue.median)}`) ?? '');
  }
  {
    const r = q(R, () => R.reopen.gh[10].total.median / R.reopen.ai[10].total.median);
    t('init + reopen → pendingTools(), 10 messages', r == null ? '—' : `${fx(r)}: ${ms(R.reopen.gh[10].total.median)} vs ${ms(R.reopen.ai[10].total.median)}`, '≤ 1.0× (the persisting app; the in-memory one cannot reopen)', r == null ? null : r <= 1);
  }
  return out;
}

/** The rows of the chart: every row with a ratio, normalised to the persisting AI SDK app. */
function chartRows(R) {
  return (R.rows ?? []).filter((r) => r.chart && r.nums && (r.nums.aip != null || r.nums.aim != null)).map((r) => {
    const base = r.nums.aip ?? r.nums.aim;
    return { label: r.short ?? r.label.trim(), base: r.nums.aip != null ? 'aip' : 'aim', gh: r.nums.gh / base, aip: r.nums.aip != null ? r.nums.aip / base : null, aim: r.nums.aim != null ? r.nums.aim / base : null };
  }).filter((r) => Number.isFinite(r.gh) && r.gh > 0);
}

/** An SVG bar chart of the ratios (log scale, line at 1.0×). */
export function chartSvg(R) {
  const rows = chartRows(R);
  const colors = { gh: '#2563eb', aip: '#ea580c', aim: '#9ca3af' };
  const names = { gh: 'Gatehouse', aip: 'AI SDK, persisting (idb-keyval after every step)', aim: 'AI SDK, in memory (persists nothing)' };
  const W = 1000, left = 300, right = 70, bar = 9, gap = 2, rowH = 3 * (bar + gap) + 12, top = 80;
  const H = top + rows.length * rowH + 40;
  const vals = rows.flatMap((r) => [r.gh, r.aip, r.aim]).filter((v) => v > 0);
  const nice = [];
  for (let d = -3; d <= 3; d++) for (const m of [1, 2, 5]) nice.push(m * 10 ** d);
  const lo = [...nice].reverse().find((v) => v <= Math.min(...vals, 0.5) / 1.3) ?? 0.001;
  const hi = nice.find((v) => v >= Math.max(...vals, 2) * 1.3) ?? 1000;
  const x = (v) => left + ((Math.log10(Math.min(Math.max(v, lo), hi)) - Math.log10(lo)) / (Math.log10(hi) - Math.log10(lo))) * (W - left - right);
  const out = [];
  out.push(`<svg xmlns="http://www.w3.org/2000/svg" width="${W}" height="${H}" viewBox="0 0 ${W} ${H}" font-family="system-ui, sans-serif" font-size="12">`);
  out.push(`<rect width="${W}" height="${H}" fill="#fff"/>`);
  out.push(`<text x="10" y="18" font-size="14" font-weight="600">Gatehouse vs the Vercel AI SDK — ${esc((R.machine?.date ?? '').slice(0, 16).replace('T', ' '))} UTC${R.config?.quick ? ' (--quick)' : ''}</text>`);
  out.push(`<text x="10" y="36" fill="#444">Each row divided by the persisting AI SDK app (= 1.0×, the dashed line; log scale): left of the line = smaller, faster, cheaper. Medians of one make bench run.</text>`);
  let lx = 10;
  for (const k of ['gh', 'aip', 'aim']) {
    out.push(`<rect x="${lx}" y="48" width="12" height="12" fill="${colors[k]}"/><text x="${lx + 16}" y="58">${esc(names[k])}</text>`);
    lx += 30 + names[k].length * 6.3;
  }
  for (const v of nice) {
    if (v < lo * 0.999 || v > hi * 1.001) continue;
    const major = Math.abs(Math.log10(v) - Math.round(Math.log10(v))) < 1e-9;
    out.push(`<line x1="${x(v)}" x2="${x(v)}" y1="${top - 6}" y2="${H - 30}" stroke="${major ? '#d1d5db' : '#f0f0f0'}"/>`);
    out.push(`<text x="${x(v)}" y="${H - 16}" text-anchor="middle" fill="#555">${+v.toPrecision(2)}×</text>`);
  }
  rows.forEach((r, i) => {
    const y0 = top + i * rowH;
    if (i % 2) out.push(`<rect x="0" y="${y0 - 4}" width="${W}" height="${rowH}" fill="#f8fafc"/>`);
    out.push(`<text x="${left - 8}" y="${y0 + 1.5 * (bar + gap) + 4}" text-anchor="end">${esc(r.label.length > 46 ? r.label.slice(0, 45) + '…' : r.label)}</text>`);
    ['gh', 'aip', 'aim'].forEach((k, j) => {
      const v = r[k];
      const y = y0 + j * (bar + gap);
      if (v == null) { out.push(`<text x="${left + 4}" y="${y + bar - 1}" font-size="10" fill="#999">n/a</text>`); return; }
      out.push(`<rect x="${left}" y="${y}" width="${Math.max(1, x(v) - left)}" height="${bar}" fill="${colors[k]}"/>`);
      out.push(`<text x="${x(v) + 4}" y="${y + bar - 1}" font-size="10" fill="#333">${fx(v)}</text>`);
    });
  });
  out.push(`<line x1="${x(1)}" x2="${x(1)}" y1="${top - 8}" y2="${H - 28}" stroke="#111" stroke-width="1.5" stroke-dasharray="4 3"/>`);
  out.push(`<text x="${x(1) + 3}" y="${top - 10}" font-weight="600">1.0×</text>`);
  out.push('</svg>');
  return out.join('\n');
}

function tableHtml(R) {
  const out = ['<table><thead><tr><th></th><th>Gatehouse</th><th>AI SDK persisting</th><th>AI SDK in memory</th><th>GH / AI pers.</th><th>GH / AI mem.</th></tr></thead><tbody>'];
  for (const r of R.rows ?? []) {
    if (r.section) { out.push(`<tr class="section"><td colspan="6">${esc(r.section)}</td></tr>`); continue; }
    out.push(`<tr><td class="label">${esc(r.label).replace(/^( +)/, (s) => '&nbsp;'.repeat(s.length * 2))}</td>${[r.gh, r.aip, r.aim, r.rp, r.rm].map((c) => `<td>${esc(c ?? '')}</td>`).join('')}</tr>`);
  }
  out.push('</tbody></table>');
  return out.join('\n');
}

function targetsHtml(R) {
  const rows = targets(R).map((t) => `<tr><td>${esc(t.row)}</td><td>${esc(t.now)}</td><td>${esc(t.target)}</td><td class="${t.met ? 'yes' : 'no'}">${t.met == null ? '—' : t.met ? 'yes' : 'no'}</td><td>${esc(t.note)}</td></tr>`);
  return `<table class="targets"><thead><tr><th>row</th><th>now</th><th>target</th><th>met?</th><th></th></tr></thead><tbody>${rows.join('\n')}</tbody></table>`;
}

function machineLine(R) {
  const m = R.machine ?? {};
  return `${m.date ?? '?'} · ${m.cpu ?? '?'}, ${m.cores ?? '?'} cores, ${m.memGiB ?? '?'} GiB · 1-min load average ${m.loadavgStart?.[0] ?? '?'} before the run, ${m.loadavgEnd?.[0] ?? '?'} at its end · ${m.chromium ?? '?'} headless · ai ${m.ai ?? '?'}, @ai-sdk/openai-compatible ${m.openaiCompatible ?? '?'}, idb-keyval ${m.idbKeyval ?? '?'} · gatehouse ${m.gatehouseVersion ?? '?'} at ${m.gitCommit ?? '?'}${R.config?.quick ? ' · --quick (smoke run)' : ''}`;
}

export function reportHtml(R) {
  const byCrate = R.size?.gatehouse?.byCrate;
  return `<!doctype html>
<html lang="en"><head><meta charset="utf-8"><title>Gatehouse vs the Vercel AI SDK — ${esc(R.machine?.date ?? '')}</title>
<style>
body { font: 13px/1.4 system-ui, sans-serif; margin: 20px; color: #111; }
h1 { font-size: 20px; } h2 { font-size: 16px; margin-top: 28px; }
table { border-collapse: collapse; } td, th { padding: 2px 8px; border-bottom: 1px solid #eee; text-align: right; vertical-align: top; }
td.label, .targets td { text-align: left; } th { background: #f3f4f6; }
tr.section td { text-align: left; font-weight: 600; background: #f8fafc; padding-top: 10px; }
td.yes { color: #15803d; font-weight: 600; } td.no { color: #b91c1c; font-weight: 600; }
pre { background: #f8fafc; padding: 8px; overflow-x: auto; font-size: 11px; }
#chart { display: inline-block; }
</style></head><body>
<h1>Gatehouse vs the Vercel AI SDK</h1>
<p>${esc(machineLine(R))}</p>
<p>Columns: Gatehouse; the AI SDK app that persists like Gatehouse (its message list saved to IndexedDB with idb-keyval after every step, as the AI SDK's message-persistence guide saves in <code>onStepFinish</code>/<code>onFinish</code>); the AI SDK app that keeps its list in memory only. How each number is measured: bench/README.md. Timings are printed, never asserted.</p>
<div id="chart">${chartSvg(R)}</div>
<h2>Targets of issue 22 (against the persisting AI SDK app)</h2>
${targetsHtml(R)}
<h2>The table</h2>
${tableHtml(R)}
${(R.notes ?? []).length ? `<pre>${esc(R.notes.join('\n'))}</pre>` : ''}
${R.errors?.length ? `<h2>Errors</h2><pre>${esc(R.errors.join('\n'))}</pre>` : ''}
${byCrate ? `<h2>The wasm by crate and by module (scripts/size-report.sh)</h2><pre>${esc(byCrate)}</pre>` : ''}
</body></html>
`;
}

/** Writes report.html beside results.json (`dir`). */
export function writeReport(R, dir) {
  const file = path.join(dir, 'report.html');
  fs.writeFileSync(file, reportHtml(R));
  return file;
}

/** Screenshots the chart of report.html to `png`. */
export async function screenshot(html, png) {
  const { chromium } = await import('playwright-core');
  const browser = await chromium.launch({ executablePath: process.env.CHROMIUM ?? '/usr/bin/chromium', headless: true, args: ['--no-sandbox', '--disable-gpu', '--no-first-run', '--disable-background-networking', '--disable-component-update', '--disable-sync'] });
  try {
    const page = await browser.newPage({ viewport: { width: 1040, height: 800 }, deviceScaleFactor: 1 });
    await page.goto('file://' + path.resolve(html));
    await page.locator('#chart').screenshot({ path: png });
  } finally {
    await browser.close();
  }
}

/** The README's benchmark block: the run, the picture, the numbers, the targets. */
export function readmeBlock(R, png) {
  const L = [];
  L.push(`Latest run: ${machineLine(R)}. ${R.machine?.loadavgStart?.[0] > (R.machine?.cores ?? 2) / 2 ? 'The machine was loaded during the run (other work shared its cores): wall-clock rows are noisy; the main-thread CPU rows are the robust ones.' : 'Wall-clock rows are noisy on a shared machine; the main-thread CPU rows are the robust ones.'}`);
  L.push('');
  L.push(`![Gatehouse and the two AI SDK apps, each row normalised to the persisting AI SDK app](${png})`);
  L.push('');
  L.push('Targets of issue 22, against the AI SDK app that persists like Gatehouse (`node bench/report.mjs --publish` regenerates this block and the picture from `bench-output/results.json`):');
  L.push('');
  L.push('| row | now | target | met? |');
  L.push('|---|---|---|---|');
  for (const t of targets(R)) L.push(`| ${t.row} | ${t.now}${t.note ? ` (${t.note})` : ''} | ${t.target} | ${t.met == null ? '—' : t.met ? 'yes' : '**no**'} |`);
  L.push('');
  L.push('The rows of the picture (medians; ratios are Gatehouse / that app):');
  L.push('');
  L.push('| | Gatehouse | AI SDK persisting | AI SDK in memory | GH / persisting | GH / in memory |');
  L.push('|---|---|---|---|---|---|');
  for (const r of (R.rows ?? []).filter((r) => r.chart && r.nums)) L.push(`| ${r.short ?? r.label.trim()} | ${r.gh} | ${r.aip} | ${r.aim} | ${r.rp || '—'} | ${r.rm || '—'} |`);
  const rem = (R.rows ?? []).findIndex((r) => r.section?.startsWith('7.'));
  if (rem >= 0) {
    L.push('');
    L.push('Remote threads (issue 25; Gatehouse only, Postgres started by the bench):');
    L.push('');
    L.push('| | Gatehouse |');
    L.push('|---|---|');
    for (const r of R.rows.slice(rem + 1)) { if (r.section) break; L.push(`| ${r.label.trim().replace(/\|/g, '\\|')} | ${String(r.gh).replace(/\|/g, '\\|')} |`); }
  }
  return L.join('\n');
}

const BEGIN = '<!-- bench-report:begin (node bench/report.mjs --publish) -->';
const END = '<!-- bench-report:end -->';

async function main() {
  const argv = process.argv.slice(2);
  const i = argv.indexOf('--results');
  const results = path.resolve(root, i >= 0 ? argv[i + 1] : 'bench-output/results.json');
  const R = JSON.parse(fs.readFileSync(results, 'utf8'));
  // The rows again from the measurements, with this checkout's bench/table.mjs (a wording or a
  // row added after the run shows without running it again; the numbers are the run's).
  const { buildRows } = await import('./table.mjs');
  ({ rows: R.rows, notes: R.notes } = buildRows(R, R.config));
  if (R.errors?.length) R.notes.push('ERRORS (cells left empty or marked "error"):\n' + R.errors.map((e) => '  ' + e).join('\n'));
  const html = writeReport(R, path.dirname(results));
  console.log(`wrote ${path.relative(root, html)}`);
  if (!argv.includes('--publish')) return;
  const png = 'docs/bench.png';
  fs.mkdirSync(path.join(root, 'docs'), { recursive: true });
  await screenshot(html, path.join(root, png));
  console.log(`wrote ${png}`);
  const readme = path.join(root, 'README.md');
  const text = fs.readFileSync(readme, 'utf8');
  const a = text.indexOf(BEGIN), b = text.indexOf(END);
  if (a < 0 || b < a) { console.error(`README.md has no ${BEGIN} … ${END} block: not updated`); process.exit(1); }
  fs.writeFileSync(readme, text.slice(0, a + BEGIN.length) + '\n' + readmeBlock(R, png) + '\n' + text.slice(b));
  console.log('updated the README\'s benchmark block');
}

if (process.argv[1] === fileURLToPath(import.meta.url)) main().catch((e) => { console.error(e); process.exit(1); });
