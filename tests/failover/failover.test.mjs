// Failover without losing a commit or running a tool twice (docs/design.md, "Failover"). A
// pg_auto_failover formation (tests/support/failover.mjs: a monitor, a primary and its
// synchronous standby) holds the threads; the store handler reaches it through the
// formation's multi-host connection string with primaryPool (gatehouse-agent/server). The
// device stress (tests/remote/stress.mjs: 3 devices × 2 tabs, tools, decisions, offline
// flips and the offline outbox) runs for GATEHOUSE_FAILOVER_SECONDS (default 75) while the
// primary is SIGKILLed (keeper, postmaster and backends together) at a random moment of the
// devices' commits, once the standby is back in sync, again and again.
//
// After each promotion, and at the end: every commit and decision the handler answered 200 is
// in the new primary's commit log (gatehouse_commits, by commit id), no tool ran twice, no
// acknowledged message or decision was lost, and the devices went on without a reload.
// Printed: each failover's time to promotion (the monitor) and to the first commit
// acknowledged after the kill (what devices see), and the answers that failed meanwhile.

import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import pg from 'pg';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { setup } from '../browser/harness.mjs';
import { startFormation } from '../support/failover.mjs';
import { bearer, startStoreServer } from '../support/store-server.mjs';
import { DEVICES, rnd, sleep, stress } from '../remote/stress.mjs';

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../..');
const { primaryPool } = await import(path.join(root, 'pkg/server.js'));
const SECONDS = Number(process.env.GATEHOUSE_FAILOVER_SECONDS ?? 75);

const h = await setup();
let formation;
let store;
/** What the handler answered to writes: `{ at, commitId, status, code }`. */
const answers = [];

/** Every request the handler answered, writes or not: `{ start, at, method, path, status }`. */
const requests = [];
/** What each tab did: `{ name, kind, start, end, outcome }` (tests/remote/stress.mjs). */
const actions = [];

/** Stands between the Request and the handler: records each request, and each commit's and
 *  decision's answer. */
const recording = (handle) => async (request) => {
  const path = new URL(request.url).pathname;
  const started = Date.now();
  const answered = (response) => {
    requests.push({ start: started, at: Date.now(), method: request.method, path: path.replace(/^.*\/threads\/[^/]+/, '/threads/T'), status: response.status });
    return response;
  };
  const route = /\/threads\/[^/]+\/(commit|decide)$/.exec(path);
  if (request.method !== 'POST' || !route) return answered(await handle(request));
  let commitId = null;
  try {
    commitId = JSON.parse(await request.clone().text()).commitId ?? null;
  } catch {
    // not JSON: the handler refuses it
  }
  const start = Date.now();
  const response = await handle(request);
  let code = null;
  if (response.status !== 200) {
    code = await response.clone().json().then((b) => b.error?.code ?? null, () => null);
  }
  answers.push({ start, at: Date.now(), commitId, status: response.status, code, route: route[1] });
  return answered(response);
};

before(async () => {
  formation = await startFormation();
  store = await startStoreServer({
    postgres: { connectionString: formation.uri, stop: async () => {} },
    authorize: (request) => bearer(request),
    makePool: (uri, max) => primaryPool(pg, uri, { max, connectionTimeoutMillis: 2_000 }),
    wrapHandle: recording,
  });
});
after(async () => {
  await store?.close().catch(() => {});
  await formation?.stop();
  await h.close();
});

test('primaryPool finds the primary whatever the order of the hosts: a dead host and the standby are passed over, a standby alone is refused', async () => {
  const [a, b] = formation.state().filter((n) => n.name !== 'monitor');
  const primary = [a, b].find((n) => n.state === 'primary');
  const standby = [a, b].find((n) => n.state === 'secondary');
  const { freePort } = await import('../support/postgres.mjs');
  const dead = await freePort();
  const uri = (...ports) => `postgres://postgres:secret@${ports.map((p) => `127.0.0.1:${p}`).join(',')}/postgres?target_session_attrs=read-write&application_name=t`;
  const pool = primaryPool(pg, uri(dead, standby.port, primary.port), { max: 2 });
  try {
    const r = await pool.query('SELECT pg_is_in_recovery() AS standby, inet_server_port() AS port, current_setting(\'application_name\') AS app');
    assert.deepEqual(r.rows[0], { standby: false, port: primary.port, app: 't' });
    // Where it goes now, the password left out.
    assert.deepEqual(pool.primary(), { host: `postgres://127.0.0.1:${primary.port}/postgres?application_name=t`, switches: 0 });
    const c = await pool.connect();
    assert.equal((await c.query('SELECT inet_server_port() AS port')).rows[0].port, primary.port);
    c.release();
  } finally {
    await pool.end();
  }
  const alone = primaryPool(pg, uri(standby.port), { max: 1 });
  await assert.rejects(alone.query('SELECT 1'), (e) => e.code === '25006' && /is not the primary/.test(e.message) && !/secret/.test(e.message));
  await alone.end();
  assert.throws(() => primaryPool(pg, 'mysql://h/db'), (e) => e.name === 'GatehouseError' && e.code === 'invalid_config');
  assert.throws(() => primaryPool({}, uri(primary.port)), (e) => e.name === 'GatehouseError' && e.code === 'invalid_config');
});

test(`${DEVICES} devices × 2 tabs × ${SECONDS} s on one remote thread while the primary is killed again and again: every acknowledged commit survives, nothing runs twice`,
  { timeout: (SECONDS + 240) * 1000, skip: SECONDS > 0 ? false : 'duration 0' }, async (t) => {
    const failovers = [];
    let devicesStopAt = Infinity;
    await stress(h, t, {
      label: 'failover stress',
      seconds: SECONDS,
      url: () => store.url,
      disrupt: async (stopped) => {
        // The devices stop acting then (tests/remote/stress.mjs); a failover that ends after it
        // is recovered by the end phase's one device, not by the stress.
        devicesStopAt = Date.now() + SECONDS * 1000;
        while (!stopped()) {
          // Only with the standby in sync: killed then, the primary's acknowledged commits are
          // on the standby (pg_auto_failover turns synchronous replication off while the
          // standby is away, and does not fail over to a standby that is behind).
          await formation.waitHealthy(120_000);
          await sleep(rnd(3_000, 8_000));
          if (stopped()) break;
          const primary = await formation.primary();
          const killedAt = Date.now();
          formation.kill(primary.name);
          const next = await formation.waitPrimary((n) => n.name !== primary.name, 120_000);
          failovers.push({ killed: primary.name, promoted: next.name, killedAt, promotedAt: Date.now() });
          formation.start(primary.name);
        }
      },
      describe: () => `${failovers.length} primaries killed`,
      onAction: (a) => actions.push(a),
      check: async () => {
        const problems = [];
        if (failovers.length < 2 && SECONDS >= 60) problems.push(`only ${failovers.length} failovers`);
        // Every write the handler acknowledged is in the commit log of the primary now.
        const acked = answers.filter((a) => a.status === 200 && a.commitId);
        const { rows } = await store.pool.query(
          'SELECT commit_id FROM gatehouse_commits WHERE commit_id = ANY($1) AND version IS NOT NULL',
          [acked.map((a) => a.commitId)]);
        const kept = new Set(rows.map((r) => r.commit_id));
        const lost = acked.filter((a) => !kept.has(a.commitId));
        if (lost.length) problems.push(`acknowledged commits missing after failover: ${lost.length}: ${JSON.stringify(lost.slice(0, 5))}`);
        // What devices saw of each failover: the first write acknowledged after the kill, and
        // what was refused meanwhile (retryable `storage`, never a false answer).
        for (const f of failovers) {
          const firstAck = acked.find((a) => a.at > f.killedAt);
          f.recoveredMs = firstAck ? firstAck.at - f.killedAt : null;
          f.promotedMs = f.promotedAt - f.killedAt;
          const until = firstAck?.at ?? Infinity;
          f.failed = answers.filter((a) => a.at > f.killedAt && a.at <= until && a.status !== 200)
            .reduce((m, a) => ({ ...m, [`${a.status} ${a.code}`]: (m[`${a.status} ${a.code}`] ?? 0) + 1 }), {});
          if (f.recoveredMs === null) problems.push(`no write was acknowledged after the kill of ${f.killed}`);
          f.afterStop = firstAck !== undefined && firstAck.at > devicesStopAt;
        }
        // In doubt, then resolved by its id: a write answered `storage` (the primary died under
        // it, before or after its COMMIT) and later answered 200 under the same commit id, on
        // the new primary: applied once either way (the commit log's key is the id).
        const failedIds = new Set(answers.filter((a) => a.status === 500 && a.commitId).map((a) => a.commitId));
        const resolved = new Set(acked.filter((a) => failedIds.has(a.commitId)).map((a) => a.commitId));
        const odd = answers.filter((a) => a.status >= 500 && a.code !== 'storage');
        if (odd.length) problems.push(`writes answered with something else than a retryable storage error: ${JSON.stringify(odd.slice(0, 5))}`);
        console.log(`failover: ${acked.length} writes acknowledged, all ${kept.size === new Set(acked.map((a) => a.commitId)).size ? 'kept' : 'NOT kept'}; ` +
          `the handler's pool changed primary ${store.pool.primary?.().switches ?? '?'} times; ` +
          `${resolved.size} writes answered storage during a failover were retried under the same commit id and acknowledged`);
        // Writes that took the handler more than 5 s to answer (a request that hung, rather
        // than failed, across a failover), with the answer they got in the end.
        const slow = answers.filter((a) => a.at - a.start > 5_000);
        console.log(`failover: ${slow.length} writes took more than 5 s to answer: ` +
          JSON.stringify(slow.slice(0, 8).map((a) => ({ ms: a.at - a.start, status: a.status, code: a.code,
            sinceKill: Math.min(...failovers.map((f) => a.start - f.killedAt).filter((d) => d >= -10_000)) }))));
        for (const f of failovers) {
          console.log(`failover: ${f.killed} killed → ${f.promoted} primary after ${(f.promotedMs / 1000).toFixed(1)} s; ` +
            `first write acknowledged after ${f.recoveredMs === null ? '-' : (f.recoveredMs / 1000).toFixed(1)} s` +
            `${f.afterStop ? ` (by the end phase: the devices stopped ${((devicesStopAt - f.killedAt) / 1000).toFixed(1)} s after the kill)` : ''}; ` +
            `failed meanwhile ${JSON.stringify(f.failed)}`);
          // What the devices did and asked between the kill and the first acknowledged write,
          // second by second: where a gap after the promotion comes from.
          if (!f.afterStop && f.recoveredMs !== null && f.recoveredMs - f.promotedMs > 5_000) {
            const until = f.killedAt + f.recoveredMs;
            const sec = (t) => Math.floor((t - f.killedAt) / 1000);
            const lines = new Map();
            const add = (t, what) => { const k = sec(t); lines.set(k, [...(lines.get(k) ?? []), what]); };
            for (const r of requests) if (r.at > f.killedAt && r.start < until) add(r.start, `${r.method} ${r.path} ${r.status} ${r.at - r.start}ms`);
            for (const a of actions) if (a.end > f.killedAt && a.start < until) add(a.start, `${a.name} ${a.kind} → ${a.outcome} ${a.end - a.start}ms`);
            console.log(`failover: the gap after ${f.killed}'s kill, by second since the kill:\n` +
              [...lines].sort((x, y) => x[0] - y[0]).map(([k, v]) => `  ${k}s: ${[...new Set(v)].slice(0, 12).join('; ')}${v.length > 12 ? ` (+${v.length - 12})` : ''}`).join('\n'));
          }
        }
        return problems;
      },
    });
    assert.ok(answers.some((a) => a.status === 200), 'writes were acknowledged');
  });
