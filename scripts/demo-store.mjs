#!/usr/bin/env node
// The demo's thread store (`make demo-remote`): the package's store handler over a throwaway
// Postgres cluster (tests/support/), on 127.0.0.1. Any bearer token is a user, so the demo's
// desktop (`Bearer clerk`) and phone (`Bearer manager`) pages share every thread; a real
// backend's `authorize` checks who may see what (README, "Threads in your Postgres"). Prints the
// handler's URL, then, for each call that waits for a decision, a signed single-use link for
// the manager (README, "Approval requests that reach the approver"), as a mail would carry
// it. Pushes go to the browsers that enabled push (VAPID keys made at each start).
// Postgres is stopped and its directory removed when this stops.
//
//   node scripts/demo-store.mjs [--port 0]

import { createRequire } from 'node:module';
import { pathToFileURL } from 'node:url';
import { freePort } from '../tests/support/postgres.mjs';
import { bearer, startStoreServer } from '../tests/support/store-server.mjs';

/** The demo's store (also tests/demo/remote.test.mjs's); `print(line)` gets the links. */
export async function startDemoStore({ port = 0, print = console.log } = {}) {
  const at = port || await freePort();
  const url = `http://127.0.0.1:${at}/api/gatehouse`;
  const vapid = createRequire(import.meta.url)('web-push').generateVAPIDKeys();
  return startStoreServer({
    port: at,
    authorize: (request) => bearer(request),
    publicUrl: url,
    approvalRequests: { to: () => ['manager'], remind: [5 * 60_000] },
    onApprovalRequested: async ({ reason, call, decideUrl }) => {
      const link = await decideUrl('manager', { expiresIn: 60 * 60_000 });
      print(`\n  ${reason === 'request' ? 'Waiting' : 'Still waiting'} for a decision: ${call.tool} ${JSON.stringify(call.inputs)}`);
      print(`  Decide as manager (one use, 1 h): ${link}`);
    },
    webPush: { subject: 'mailto:demo@gatehouse.invalid', publicKey: vapid.publicKey, privateKey: vapid.privateKey },
  });
}

if (import.meta.url === pathToFileURL(process.argv[1]).href) {
  const i = process.argv.indexOf('--port');
  const s = await startDemoStore({ port: i > 0 ? Number(process.argv[i + 1]) : 0 });
  console.log(s.url);
  const stop = async () => { await s.close().catch(() => {}); process.exit(0); };
  process.on('SIGTERM', stop);
  process.on('SIGINT', stop);
}
