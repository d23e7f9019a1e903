// Signed approval receipts (issue 35) for bench/run.mjs: what a receipt costs a decision.
// In this process: signing one, verifying one (Web Crypto's Ed25519 and the canonical JSON of
// its inputs), its size. Against a throwaway Postgres (tests/support/store-server.mjs): a
// decision's round trip at the handler with and without a `signingKey` (the difference is the
// signing and the receipt's row, in the decision's transaction), and `consumeApproval`.
// Numbers are printed, never asserted.
import { startStoreServer } from '../tests/support/store-server.mjs';
import { applyAll, client, fixture } from '../tests/server/util.mjs';

const sorted = (xs) => [...xs].sort((a, b) => a - b);
const q = (xs, p) => { const s = sorted(xs); return s[Math.min(s.length - 1, Math.ceil(p * s.length) - 1)]; };
const stats = (xs) => ({ n: xs.length, median: q(xs, 0.5), p95: q(xs, 0.95) });

async function timed(n, f) {
  const out = [];
  for (let i = 0; i < n; i++) {
    const t = performance.now();
    await f(i);
    out.push(performance.now() - t);
  }
  return out;
}

export async function measureReceipts({ quick = false, log = () => {} } = {}) {
  const { signReceipt } = await import('../pkg/server/receipts.js');
  const { verifyApproval, consumeApproval } = await import('../pkg/server.js');
  const pair = await crypto.subtle.generateKey({ name: 'Ed25519' }, true, ['sign', 'verify']);
  const inputs = { to: 'ana', amount: 100, memo: 'rent, December', tags: ['home', 'monthly'] };
  const call = { thread: 'alice:bench', callId: 'call_1', tool: 'wire_transfer', inputs,
    decision: 'approve', decidedBy: 'manager', at: Date.now(), expiresAt: Date.now() + 3_600_000 };
  const N = quick ? 50 : 500;
  const receipts = [];
  const sign = await timed(N, async () => receipts.push(await signReceipt(pair.privateKey, call)));
  const verify = await timed(N, (i) => verifyApproval(receipts[i], inputs, pair.publicKey));
  const bytes = JSON.stringify(receipts[0]).length;

  const jwk = await crypto.subtle.exportKey('jwk', pair.privateKey);
  const signed = await startStoreServer({ signingKey: jwk });
  const plain = await startStoreServer({ postgres: signed.postgres });
  try {
    const [ask, gate] = fixture('approved-run.json');
    const D = quick ? 10 : 60;
    const decide = async (server, tag) => {
      const ids = [];
      for (let i = 0; i < D; i++) {
        const id = `alice:${tag}-${i}`;
        await applyAll(client(server, 'alice'), id, [ask, gate]);
        server.grants.set(id, ['bob/decide', 'bob/read']);
        ids.push(id);
      }
      return timed(D, (i) => client(server, 'bob').decide(ids[i], { commitId: 'b1', decisions: { c1: 'approve' } }));
    };
    // Alternated, so that a machine that slows down mid-run weighs on both.
    const [a1, b1] = [await decide(plain, 'p1'), await decide(signed, 's1')];
    const [b2, a2] = [await decide(signed, 's2'), await decide(plain, 'p2')];
    const ids = (await signed.pool.query("SELECT id FROM gatehouse_receipts LIMIT $1", [D])).rows.map((r) => r.id);
    const consume = await timed(ids.length, (i) => consumeApproval(signed.pool, ids[i]));
    const r = { sign: stats(sign), verify: stats(verify), bytes,
      decidePlain: stats([...a1, ...a2]), decideSigned: stats([...b1, ...b2]), consume: stats(consume) };
    log(`receipts: sign ${r.sign.median.toFixed(3)} ms, verify ${r.verify.median.toFixed(3)} ms, ${bytes} B; ` +
      `decide ${r.decidePlain.median.toFixed(2)} → ${r.decideSigned.median.toFixed(2)} ms with a key; consume ${r.consume.median.toFixed(2)} ms`);
    return r;
  } finally {
    await plain.close();
    await signed.close();
  }
}

if (import.meta.url === `file://${process.argv[1]}`) {
  console.log(JSON.stringify(await measureReceipts({ quick: process.argv.includes('--quick'), log: console.error }), null, 2));
}
