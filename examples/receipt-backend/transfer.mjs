// An app's own backend route that performs a gated action only with a valid, unused approval
// receipt (README "Approvals your backend can verify"). The browser's tool forwards what
// `ctx.approval` holds (or what `GET {basePath}/threads/{id}/receipts/{callId}` returns) with
// the inputs it runs; this route checks the receipt against those inputs and the handler's
// public key, spends it, and only then moves the money.
//
//   POST /api/transfer   { "receipt": {...}, "inputs": { "to": "...", "amount": 100 },
//                          "thread": "<the thread the call is in>" }
//
// The receipt must be for that thread: a real app also checks that the signed-in user may act
// for it (the same rule as its store handler's `authorize`), so that a receipt from someone
// else's thread moves nothing of this user's.
//
// `pool` is the app's Postgres, the one the store handler writes (its `gatehouse_receipts`
// table); `publicKey` the public half of the handler's `signingKey`.
import { consumeApproval, verifyApproval } from "gatehouse-agent/server";

/**
 * @param {{ pool: { query: Function, connect: Function }, publicKey: CryptoKey | JsonWebKey,
 *   transfer: (inputs: { to: string, amount: number }, db: { query: Function }) => Promise<unknown> }} app
 * @returns {(request: Request) => Promise<Response>}
 */
export function transferRoute({ pool, publicKey, transfer }) {
  return async (request) => {
    let body;
    try {
      body = await request.json();
    } catch {
      return Response.json({ error: { code: "invalid_request", message: "the body is not JSON" } }, { status: 400 });
    }
    const { receipt, inputs, thread } = body ?? {};
    try {
      await verifyApproval(receipt, inputs, publicKey, { tool: "wire_transfer", thread });
    } catch (e) {
      return Response.json({ error: { code: e.code, message: e.message } }, { status: 403 });
    }
    // Spent and performed in one transaction: a failed transfer leaves the receipt unspent,
    // and two requests with one receipt cannot both transfer.
    const db = await pool.connect();
    try {
      await db.query("BEGIN");
      await consumeApproval(db, receipt.id);
      const done = await transfer(inputs, db);
      await db.query("COMMIT");
      return Response.json({ ok: true, done });
    } catch (e) {
      await db.query("ROLLBACK");
      if (e?.name === "GatehouseError") {
        return Response.json({ error: { code: e.code, message: e.message } }, { status: 409 });
      }
      throw e;
    } finally {
      db.release();
    }
  };
}
