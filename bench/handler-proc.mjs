// One store handler in a process of its own, for bench/handler-cpu.mjs: its CPU is then its
// own, apart from the load's clients. Prints "READY <url>" once it serves.
//   node bench/handler-proc.mjs <connectionString> [path to gatehouse-agent/server's entry]
import http from 'node:http';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import pg from 'pg';

const here = path.dirname(fileURLToPath(import.meta.url));
const [connectionString, entry = path.join(here, '../pkg/server.js')] = process.argv.slice(2);
const { createStoreHandler, toNodeListener } = await import(path.resolve(entry));
// GATEHOUSE_PIPELINE=1: node-postgres' pipeline mode (bench/handler-cpu.mjs --pipeline).
const pool = new pg.Pool({ connectionString, max: 20, pipeline: process.env.GATEHOUSE_PIPELINE === '1' });
pool.on('error', () => {});
const handle = createStoreHandler({ pool, authorize: () => 'alice', basePath: '/g' });
await handle.migrate();
const server = http.createServer(toNodeListener(handle));
await new Promise((r) => server.listen(0, '127.0.0.1', r));
process.stdout.write(`READY http://127.0.0.1:${server.address().port}/g\n`);
process.on('SIGTERM', async () => {
  await handle.close();
  server.closeAllConnections?.();
  server.close();
  await pool.end().catch(() => {});
  process.exit(0);
});
