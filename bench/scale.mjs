// A million threads (issue 38, item 2) for bench/run.mjs: list, open, commit and delete through
// the store handler on an empty database, then on one that holds 10^6 threads of 10^4 other
// users with 10 messages each (10^7 messages; --quick: 10^5 and 10^6), filled by SQL from a
// real record and message (tests/support/store-server.mjs, a throwaway Postgres, fsync off).
// The user measured owns 50 threads either way. Medians of each; numbers are printed, never
// asserted.
import { startStoreServer } from '../tests/support/store-server.mjs';
import { client, fixture } from '../tests/server/util.mjs';

const q = (xs, p) => { const s = [...xs].sort((a, b) => a - b); return s[Math.min(s.length - 1, Math.ceil(p * s.length) - 1)]; };

async function timed(n, f) {
  const out = [];
  for (let i = 0; i < n; i++) {
    const t = performance.now();
    await f(i);
    out.push(performance.now() - t);
  }
  return { p50: q(out, 0.5), p99: q(out, 0.99) };
}

export async function measureScale({ quick = false, log = () => {} } = {}) {
  const [first] = fixture('long-chat.json');
  const s = await startStoreServer({ poolSize: 8 });
  const alice = client(s, 'alice');
  let round = 0;
  const ok = (r) => { if (r.status !== 200) throw new Error(`${r.status} ${r.text.slice(0, 200)}`); return r; };
  const measure = async () => {
    const tag = round++;
    // The user's own 50 threads.
    for (let i = 0; i < 50; i++) ok(await alice.commit(`alice:own${tag}-${i}`, { ...first, commitId: `own${tag}-${i}` }));
    const N = quick ? 20 : 100;
    return {
      list: await timed(N, async () => ok(await alice.list())),
      open: await timed(N, async (i) => ok(await alice.load(`alice:own${tag}-${i % 50}`))),
      commit: await timed(N, async (i) => ok(await alice.commit(`alice:new${tag}-${i}`, { ...first, commitId: `new${tag}-${i}` }))),
      delete: await timed(N, async (i) => ok(await alice.remove(`alice:new${tag}-${i}`))),
    };
  };
  try {
    await measure(); // warm: JIT, the pool, the wasm core
    const empty = await measure();
    const threads = quick ? 100_000 : 1_000_000;
    const perThread = 10;
    const t0 = performance.now();
    const tpl = (await s.pool.query("SELECT record FROM gatehouse_threads WHERE id = 'alice:own1-0'")).rows[0].record;
    const msg = (await s.pool.query("SELECT json FROM gatehouse_messages WHERE thread = 'alice:own1-0' AND seq = 1")).rows[0].json;
    // In slices, so that one statement does not hold everything in memory.
    const slice = 100_000;
    for (let from = 1; from <= threads; from += slice) {
      const to = Math.min(threads, from + slice - 1);
      await s.pool.query(`INSERT INTO gatehouse_threads (id, version, record, owner, updated_at)
        SELECT 'u' || (i % 10000) || ':t' || i, 1, replace($1, 'alice:own1-0', 'u' || (i % 10000) || ':t' || i),
          'u' || (i % 10000), now() - i * interval '1 second'
        FROM generate_series($2::int, $3::int) i`, [tpl, from, to]);
      await s.pool.query(`INSERT INTO gatehouse_messages (thread, seq, json)
        SELECT 'u' || (i % 10000) || ':t' || i, m, $1 FROM generate_series($2::int, $3::int) i, generate_series(1, $4::int) m`,
      [msg, from, to, perThread]);
    }
    await s.pool.query('VACUUM ANALYZE gatehouse_threads');
    await s.pool.query('VACUUM ANALYZE gatehouse_messages');
    const fillSeconds = (performance.now() - t0) / 1000;
    const size = (await s.pool.query("SELECT pg_size_pretty(pg_database_size(current_database())) AS s")).rows[0].s;
    const full = await measure();
    const r = { threads, messages: threads * perThread, fillSeconds, size, empty, full };
    for (const k of ['list', 'open', 'commit', 'delete']) {
      log(`scale: ${k} ${empty[k].p50.toFixed(2)} ms empty → ${full[k].p50.toFixed(2)} ms at ${threads.toLocaleString('en')} threads (${(full[k].p50 / empty[k].p50).toFixed(2)}×)`);
    }
    log(`scale: filled ${threads.toLocaleString('en')} threads, ${(threads * perThread).toLocaleString('en')} messages in ${fillSeconds.toFixed(0)} s; database ${size}`);
    return r;
  } finally {
    await s.close();
  }
}

if (import.meta.url === `file://${process.argv[1]}`) {
  console.log(JSON.stringify(await measureScale({ quick: process.argv.includes('--quick'), log: console.error }), null, 2));
}
