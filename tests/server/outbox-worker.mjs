// One store handler process for tests/server/requests-crash.test.mjs: a handler over the
// Postgres at argv[2], whose onApprovalRequested appends a line per call to the file argv[3].
// argv[4] says where it stops, so that the test can SIGKILL it there:
//   normal           delivers;
//   hold-claim       its first claim of the outbox runs in Postgres, then never returns
//                    (killed between the commit and the delivery);
//   hang-in-hook     its hook logs its start, then never returns (killed during the call).
// Prints "READY <url>" once it serves, and "CLAIMED" / "HOOK" when it reaches the hold.

import fs from "node:fs";
import { startStoreServer } from "../support/store-server.mjs";

const [connectionString, log, mode = "normal"] = process.argv.slice(2);
const line = (o) => fs.appendFileSync(log, `${JSON.stringify({ pid: process.pid, ...o })}\n`);

const s = await startStoreServer({
  postgres: { connectionString, stop: async () => {} },
  onApprovalRequested: async ({ requestId, threadId, call, attempt }) => {
    line({ requestId, threadId, callId: call.callId, attempt });
    if (mode === "hang-in-hook") {
      process.stdout.write("HOOK\n");
      await new Promise(() => {});
    }
  },
  approvalRequests: { pollMs: 100, claimMs: 1500 },
  wrapPool: mode !== "hold-claim" ? undefined : (pool) => {
    const query = pool.query.bind(pool);
    pool.query = async (text, ...rest) => {
      const out = await query(text, ...rest);
      if (typeof text === "string" && text.includes("UPDATE gatehouse_requests r") && out.rows.length) {
        process.stdout.write("CLAIMED\n");
        await new Promise(() => {});
      }
      return out;
    };
    return pool;
  },
});
process.stdout.write(`READY ${s.url}\n`);
