// Approval requests (issue 36) for bench/run.mjs: the outbox of the store handler, against a
// throwaway Postgres (tests/support/store-server.mjs). Latency: from the outbox row's insert,
// in the transaction of the commit that made the call pending, to the app's hook being called
// (`call.requestedAt` is the database's clock at the insert; same machine), one gated call at a
// time. Throughput: N requests left due by a handler whose deliverer was stopped, then the
// seconds one fresh handler takes to deliver them all to a hook that returns at once.
// Numbers are printed, never asserted.
import { startStoreServer } from '../tests/support/store-server.mjs';
import { applyAll, client, fixture } from '../tests/server/util.mjs';

const sorted = (xs) => [...xs].sort((a, b) => a - b);
const q = (xs, p) => { const s = sorted(xs); return s[Math.min(s.length - 1, Math.ceil(p * s.length) - 1)]; };

export async function measureRequests({ quick = false, log = () => {} } = {}) {
  const [ask, gate] = fixture('approved-run.json');
  const lat = [];
  const first = await startStoreServer({
    onApprovalRequested: ({ call }) => { lat.push(Date.now() - call.requestedAt); },
  });
  try {
    const D = quick ? 30 : 300;
    const alice = client(first, 'alice');
    for (let i = 0; i < D; i++) {
      await applyAll(alice, `alice:lat-${i}`, [ask, gate]);
      // The next commit only once this one's hook ran: the latency of one request alone.
      const deadline = Date.now() + 10_000;
      while (lat.length <= i && Date.now() < deadline) await new Promise((r) => setTimeout(r, 1));
    }
    // N requests left due: a writer whose deliverer is stopped.
    const N = quick ? 300 : 3000;
    const writer = await startStoreServer({ postgres: first.postgres, onApprovalRequested: () => {} });
    writer.handle.close();
    const w = client(writer, 'alice');
    const ids = Array.from({ length: N }, (_, i) => `alice:due-${i}`);
    for (let i = 0; i < N; i += 50) await Promise.all(ids.slice(i, i + 50).map((id) => applyAll(w, id, [ask, gate])));
    await writer.close();
    await first.handle.close();
    let delivered = 0;
    const t0 = performance.now();
    const deliverer = await startStoreServer({ postgres: first.postgres, onApprovalRequested: () => { delivered++; } });
    while (delivered < N) await new Promise((r) => setTimeout(r, 5));
    const seconds = (performance.now() - t0) / 1000;
    await deliverer.close();
    const r = { latency: { n: lat.length, p50: q(lat, 0.5), p99: q(lat, 0.99) }, throughput: { n: N, seconds, perSecond: N / seconds } };
    log(`requests: commit → hook p50 ${r.latency.p50} ms, p99 ${r.latency.p99} ms; ${N} deliveries in ${seconds.toFixed(2)} s (${r.throughput.perSecond.toFixed(0)}/s, one handler)`);
    return r;
  } finally {
    await first.close();
  }
}

if (import.meta.url === `file://${process.argv[1]}`) {
  console.log(JSON.stringify(await measureRequests({ quick: process.argv.includes('--quick'), log: console.error }), null, 2));
}
