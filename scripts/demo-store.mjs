#!/usr/bin/env node
// The demo's thread store (`make demo-remote`): the package's store handler over a throwaway
// Postgres cluster (tests/support/), on 127.0.0.1. Any bearer token is a user, so the demo's
// desktop (`Bearer clerk`) and phone (`Bearer manager`) pages share every thread; a real
// backend's `authorize` checks who may see what (README, "Threads in your Postgres"). Prints the
// handler's URL; Postgres is stopped and its directory removed when this stops.
//
//   node scripts/demo-store.mjs [--port 0]

import { bearer, startStoreServer } from '../tests/support/store-server.mjs';

const i = process.argv.indexOf('--port');
const port = i > 0 ? Number(process.argv[i + 1]) : 0;
const s = await startStoreServer({ port, authorize: (request) => bearer(request) });
console.log(s.url);
const stop = async () => { await s.close().catch(() => {}); process.exit(0); };
process.on('SIGTERM', stop);
process.on('SIGINT', stop);
