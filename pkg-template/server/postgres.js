// @ts-check
// The store handler's tables (migrations), transactions, and the change feed's writes.

import { cursorKey, hex, linkKey } from "./cursor.js";
import { GatehouseError, Refusal } from "./errors.js";

// Migrations run under this advisory lock (two handlers starting at once take turns).
const MIGRATION_LOCK = 1734439013;

export const CHANNEL = "gatehouse_changes";

// Change notices are kept an hour; every PRUNE_EVERY writes a handler deletes older ones.
export const CHANGE_RETENTION_MS = 3_600_000;

const PRUNE_EVERY = 1000;

// The tables, by schema version: the `gatehouse_schema` row holds the version applied.
// Ids sort byte-wise (COLLATE "C"), as the local stores list them.
const MIGRATIONS = [
  [
    `CREATE TABLE gatehouse_threads (id text COLLATE "C" PRIMARY KEY,
       version bigint NOT NULL DEFAULT 0, record text,
       updated_at timestamptz NOT NULL DEFAULT now())`,
    `CREATE TABLE gatehouse_messages (thread text COLLATE "C" NOT NULL, seq bigint NOT NULL,
       json text NOT NULL, PRIMARY KEY (thread, seq))`,
    `CREATE TABLE gatehouse_audit (thread text COLLATE "C" NOT NULL, seq bigint NOT NULL,
       json text NOT NULL, PRIMARY KEY (thread, seq))`,
    `CREATE TABLE gatehouse_commits (thread text COLLATE "C" NOT NULL, commit_id text NOT NULL,
       answer text NOT NULL, created_at timestamptz NOT NULL DEFAULT now(),
       PRIMARY KEY (thread, commit_id))`,
    // The change feed: one row per write, numbered in commit order (the counter row is
    // updated last in each transaction, so a later number never commits first).
    `CREATE TABLE gatehouse_changes (seq bigint PRIMARY KEY, thread text COLLATE "C" NOT NULL,
       version bigint, created_at timestamptz NOT NULL DEFAULT now())`,
    `CREATE TABLE gatehouse_change_counter (id int PRIMARY KEY, seq bigint NOT NULL,
       pruned bigint NOT NULL)`,
    `INSERT INTO gatehouse_change_counter (id, seq, pruned) VALUES (1, 0, 0)`,
  ],
  // The server decides (docs/design.md, "Threat model"): the run lease's secret and the
  // identity that holds it, beside the record and never in it; who made each commit, and a
  // digest of its body, so that a replayed commit id answers only its maker, for the same
  // body; and the version an applied commit left instead of its answer (the record), so that
  // the log grows by a few bytes a commit, not by the record.
  [
    `ALTER TABLE gatehouse_threads ADD COLUMN lease_token text, ADD COLUMN lease_who text`,
    `ALTER TABLE gatehouse_commits ADD COLUMN who text, ADD COLUMN digest text,
       ADD COLUMN version bigint, ALTER COLUMN answer DROP NOT NULL`,
  ],
  // Nothing global, and lists from an index (docs/design.md, "Threat model"): the key that
  // seals the change feed's cursors, so a poll learns nothing of the handler's write count;
  // and each thread's owner (the identity that created it), indexed, so a list reads the
  // user's own threads instead of every thread. Threads created before have none: they are
  // listed as before, by asking `authorize` about each.
  [
    `CREATE TABLE gatehouse_keys (name text PRIMARY KEY, key text NOT NULL)`,
    `ALTER TABLE gatehouse_threads ADD COLUMN owner text`,
    `CREATE INDEX gatehouse_threads_owner ON gatehouse_threads (owner, id)
       WHERE record IS NOT NULL`,
    `CREATE INDEX gatehouse_threads_unowned ON gatehouse_threads (id)
       WHERE owner IS NULL AND record IS NOT NULL`,
  ],
  // Signed approval receipts (docs/design.md, "Receipts"): one per call approved or edited,
  // written with the decision; `used_at` is set once, by `consumeApproval`. Kept when their
  // thread is deleted: a backend may still be asked to spend one.
  [
    `CREATE TABLE gatehouse_receipts (id text PRIMARY KEY, thread text COLLATE "C" NOT NULL,
       call_id text NOT NULL, message text NOT NULL, receipt text NOT NULL,
       created_at timestamptz NOT NULL DEFAULT now(), used_at timestamptz)`,
    `CREATE INDEX gatehouse_receipts_call ON gatehouse_receipts (thread, call_id)`,
    // Approver rules (docs/design.md, "Approver rules"): who wrote the latest user message
    // (the requester), and the approvals of calls below their quorum.
    `ALTER TABLE gatehouse_threads ADD COLUMN requester text`,
    `CREATE TABLE gatehouse_approvals (thread text COLLATE "C" NOT NULL, call_id text NOT NULL,
       message text NOT NULL, approver text NOT NULL, at bigint NOT NULL, inputs text NOT NULL,
       PRIMARY KEY (thread, call_id, message, approver))`,
  ],
  // Approval requests that reach the approver (docs/design.md, "Approval requests"): the
  // outbox, one row per call requested, reminded or escalated, written in the transaction that
  // made the call pending; the decision links spent; the Web Push subscriptions, each of one
  // identity.
  [
    `CREATE TABLE gatehouse_requests (id text PRIMARY KEY, thread text COLLATE "C" NOT NULL,
       call_id text NOT NULL, message text NOT NULL, kind text NOT NULL, n int NOT NULL,
       state text NOT NULL DEFAULT 'due', due_at timestamptz NOT NULL,
       attempts int NOT NULL DEFAULT 0, claim text, claimed_until timestamptz,
       call text NOT NULL, error text,
       created_at timestamptz NOT NULL DEFAULT clock_timestamp(), sent_at timestamptz,
       UNIQUE (thread, message, call_id, kind, n))`,
    `CREATE INDEX gatehouse_requests_due ON gatehouse_requests (due_at) WHERE state = 'due'`,
    `CREATE TABLE gatehouse_links (id text PRIMARY KEY, thread text COLLATE "C" NOT NULL,
       call_id text NOT NULL, approver text NOT NULL, decision text NOT NULL,
       used_at timestamptz NOT NULL DEFAULT now())`,
    `CREATE TABLE gatehouse_push (endpoint text PRIMARY KEY, identity text NOT NULL,
       subscription text NOT NULL, created_at timestamptz NOT NULL DEFAULT now())`,
    `CREATE INDEX gatehouse_push_identity ON gatehouse_push (identity)`,
  ],
  // No global hot spot (docs/design.md, "The change stream"): a change is numbered by the id
  // of the transaction that wrote it (`xid`), read in windows below the oldest transaction
  // still running, instead of by the counter row every write updated (and every commit
  // waited on). `seq` stays the key, from a sequence. The counter row keeps only `pruned`
  // (now a transaction id); cursors of the old numbering read as reset.
  [
    `ALTER TABLE gatehouse_changes ADD COLUMN xid xid8 NOT NULL DEFAULT pg_current_xact_id()`,
    `CREATE INDEX gatehouse_changes_xid ON gatehouse_changes (xid)`,
    `CREATE SEQUENCE gatehouse_changes_seq`,
    `SELECT setval('gatehouse_changes_seq',
       (SELECT seq FROM gatehouse_change_counter WHERE id = 1) + 1, false)`,
    `UPDATE gatehouse_change_counter SET pruned = 0 WHERE id = 1`,
    // Lists by page, newest first, from an index (docs/design.md, "A million threads"): the
    // user's own threads, and those created before owners were kept.
    `DROP INDEX gatehouse_threads_owner`,
    `CREATE INDEX gatehouse_threads_owner ON gatehouse_threads (owner, updated_at DESC, id DESC)
       WHERE record IS NOT NULL`,
    `DROP INDEX gatehouse_threads_unowned`,
    `CREATE INDEX gatehouse_threads_unowned ON gatehouse_threads (updated_at DESC, id DESC)
       WHERE owner IS NULL AND record IS NOT NULL`,
    // The record's `messageCount` beside it: a write locks the thread and reads its tail in
    // one statement (docs/design.md, "A commit's statements").
    `ALTER TABLE gatehouse_threads ADD COLUMN message_count bigint`,
    `UPDATE gatehouse_threads SET message_count = (record::json->>'messageCount')::bigint
       WHERE record IS NOT NULL`,
  ],
  // Remembered grants (docs/design.md, "Remembered grants"): `json` is the grant as the core
  // made it; a user grant's `owner` is its maker. Revoked grants are kept, with who and when.
  [
    `CREATE TABLE gatehouse_grants (id text PRIMARY KEY, scope text NOT NULL, tool text NOT NULL,
       owner text, thread text COLLATE "C", json text NOT NULL, expires_at timestamptz,
       created_by text NOT NULL, created_at timestamptz NOT NULL DEFAULT now(),
       revoked_at timestamptz, revoked_by text)`,
    `CREATE INDEX gatehouse_grants_owner ON gatehouse_grants (owner) WHERE revoked_at IS NULL`,
    `CREATE INDEX gatehouse_grants_thread ON gatehouse_grants (thread) WHERE revoked_at IS NULL`,
    `CREATE INDEX gatehouse_grants_maker ON gatehouse_grants (created_by) WHERE revoked_at IS NULL`,
    `CREATE INDEX gatehouse_grants_app ON gatehouse_grants (scope) WHERE revoked_at IS NULL
       AND scope = 'app'`,
  ],
];

/** The schema version this release writes. */
export const STORE_SCHEMA_VERSION = MIGRATIONS.length;

// Serialization failures and deadlocks: the transaction is run again.
const RETRY_CODES = new Set(["40001", "40P01"]);

/**
 * Runs `fn(client, tx)` in a transaction; `fn` returns `{ value, write }` (false: roll back).
 * `tx.last(text, values)` runs a statement after which the transaction commits whatever
 * happens next in `fn` (it must then return `write: true`): on a pool made with node-postgres'
 * `pipeline: true`, `COMMIT` goes out in the same network write as that statement, and
 * `BEGIN` in the same write as `fn`'s first one (docs/design.md, "A commit's statements").
 * Elsewhere it is an ordinary query, and `COMMIT` follows `fn`.
 */
export async function transaction(pool, fn, begin = "BEGIN") {
  for (let attempt = 0; ; attempt++) {
    const client = await pool.connect();
    // A connection that dies mid-transaction fails the query under way; the client's own
    // `error` event must not become an uncaught exception in the app.
    const ignore = () => {};
    client.on?.("error", ignore);
    let broken = false;
    const stream = client.pipeline === true ? client.connection?.stream : undefined;
    const piped = typeof stream?.cork === "function";
    /** @type {Promise<any> | null} */
    let committed = null;
    const tx = {
      last(/** @type {string} */ text, /** @type {any[]} */ values) {
        if (!piped) return client.query(text, values);
        // Both queries are written while the stream is corked: one write for the two.
        stream.cork();
        const result = client.query(text, values);
        committed = client.query("COMMIT");
        committed.catch(() => {}); // awaited below; a failed statement's COMMIT is a ROLLBACK
        stream.uncork();
        return result;
      },
    };
    try {
      let out;
      if (piped) {
        // fn's first statement is queued in its first synchronous step, behind BEGIN. If
        // BEGIN fails, nothing fn sends after it goes out (it would not be in a transaction).
        let failed = null;
        const guarded = {
          query: (/** @type {any[]} */ ...a) => (failed ? Promise.reject(failed) : client.query(...a)),
        };
        stream.cork();
        const began = client.query(begin);
        began.catch((/** @type {any} */ e) => { failed = e; });
        const running = fn(guarded, tx);
        stream.uncork();
        running.catch(() => {}); // awaited next, once BEGIN's answer came
        await began;
        out = await running;
      } else {
        await client.query(begin);
        out = await fn(client, tx);
      }
      const { value, write } = out;
      if (committed) {
        if (!write) throw new Error("transaction: tx.last() was used, and then a rollback was asked for");
        await committed;
      } else {
        await client.query(write ? "COMMIT" : "ROLLBACK");
      }
      return value;
    } catch (e) {
      broken = !(e instanceof Refusal);
      if (!committed) await client.query("ROLLBACK").catch(() => {});
      if (RETRY_CODES.has(e?.code) && attempt < 4) continue;
      throw e;
    } finally {
      // A client that failed mid-transaction is not given back: it may be dead. It keeps its
      // error listener: a killed Postgres's "terminating connection" can still arrive on it
      // after the release, and with no listener it would be an uncaught exception in the app.
      if (!broken) client.off?.("error", ignore);
      client.release(broken ? true : undefined);
    }
  }
}

export async function runMigrations(pool) {
  return transaction(pool, async (c) => {
    await c.query("SELECT pg_advisory_xact_lock($1)", [MIGRATION_LOCK]);
    await c.query(`CREATE TABLE IF NOT EXISTS gatehouse_schema (id int PRIMARY KEY,
      version int NOT NULL)`);
    const r = await c.query("SELECT version FROM gatehouse_schema WHERE id = 1");
    const from = r.rows.length ? Number(r.rows[0].version) : 0;
    if (from > MIGRATIONS.length) {
      throw new GatehouseError("storage", `the Gatehouse tables are at schema ${from}, ` +
        `written by a newer release (this one knows ${MIGRATIONS.length})`);
    }
    for (let v = from; v < MIGRATIONS.length; v++) {
      for (const sql of MIGRATIONS[v]) await c.query(sql);
    }
    await c.query(`INSERT INTO gatehouse_schema (id, version) VALUES (1, $1)
      ON CONFLICT (id) DO UPDATE SET version = EXCLUDED.version`, [MIGRATIONS.length]);
    // The first handler makes the cursor key; every handler on the database uses that one,
    // so a cursor one handler gave is read by any other.
    await c.query(`INSERT INTO gatehouse_keys (name, key) VALUES ('cursor', $1)
      ON CONFLICT (name) DO NOTHING`, [hex(crypto.getRandomValues(new Uint8Array(32)))]);
    await c.query(`INSERT INTO gatehouse_keys (name, key) VALUES ('links', $1)
      ON CONFLICT (name) DO NOTHING`, [hex(crypto.getRandomValues(new Uint8Array(32)))]);
    const keys = await c.query("SELECT name, key FROM gatehouse_keys WHERE name IN ('cursor', 'links')");
    const key = (name) => keys.rows.find((r) => r.name === name).key;
    return { value: { cursor: await cursorKey(key("cursor")), links: await linkKey(key("links")) }, write: true };
  });
}

// Cursors of the change feed: the position in `gatehouse_changes`, sealed (AES-GCM, a fresh
// nonce each time) so that a client learns nothing from it. A plain number would tell every
// signed-in user how many writes the handler saw, and when: a sealed one differs at every
// poll, whether anything was written or not, and one that was tampered with does not open.

/**
 * Appends to the change feed and wakes the listeners. The row carries the transaction's id
 * (the column's default), which orders the feed: nothing here is shared by two threads'
 * writes, so commits of different threads do not wait on each other. The NOTIFY is sent with
 * the commit (atomic with it: an idle reader is woken exactly when there is something).
 */
export async function announce(ctx, c, id, version) {
  await c.query(`INSERT INTO gatehouse_changes (seq, thread, version)
    VALUES (nextval('gatehouse_changes_seq'), $1, $2)`, [id, version]);
  if (ctx.notify) await c.query("SELECT pg_notify($1, '')", [CHANNEL]);
}

/**
 * The changes a reader at position `since` (a transaction id) has not seen, and its next
 * position: every change of a transaction below the oldest one still running (all of those
 * have ended, so none can appear later below it), read in one statement with that bound from
 * the statement's own snapshot. `since` null: no changes, the position now. At most `limit`
 * rows; a full page's next position is after its last transaction. `ahead`: committed changes
 * wait beyond the window.
 * @param {{ query: (text: string, values?: unknown[]) => Promise<{ rows: any[] }> }} pool
 * @param {number | null} since
 * @param {number} [limit]
 */
export async function changesSince(pool, since, limit = 1000) {
  const r = await pool.query(`WITH top AS (SELECT pg_snapshot_xmin(pg_current_snapshot()) AS xmin)
    SELECT (SELECT xmin::text FROM top) AS top,
      (SELECT pruned FROM gatehouse_change_counter WHERE id = 1) AS pruned,
      EXISTS (SELECT 1 FROM gatehouse_changes WHERE xid >= (SELECT xmin FROM top)) AS ahead,
      c.xid::text AS xid, c.thread, c.version
    FROM (SELECT 1) one LEFT JOIN LATERAL (SELECT xid, thread, version, seq FROM gatehouse_changes
      WHERE $1::text IS NOT NULL AND xid >= $1::text::xid8 AND xid < (SELECT xmin FROM top)
      ORDER BY xid, seq LIMIT $2) c ON true`, [since === null ? null : String(since), limit]);
  const top = Number(r.rows[0].top);
  const pruned = Number(r.rows[0].pruned);
  const rows = r.rows.filter((row) => row.xid !== null)
    .map((row) => ({ thread: row.thread, version: row.version === null ? null : Number(row.version) }));
  const full = rows.length === limit;
  const next = since === null ? top : full ? Number(r.rows[r.rows.length - 1].xid) + 1 : top;
  // `ahead`: changes committed past the window, held back by an older transaction still
  // running. Its end may wake nobody (a rollback sends no NOTIFY; another app's transaction
  // neither), so the reader looks again soon rather than waiting to be woken.
  return { rows, next, reset: since !== null && since < pruned, ahead: r.rows[0].ahead === true };
}

/** Runs a writing transaction; this handler's own readers are woken once it committed. */
export async function writing(ctx, fn) {
  const value = await transaction(ctx.pool, fn);
  ctx.feed.wrote();
  // The change feed is pruned by the writers themselves, now and then.
  if (++ctx.writes % PRUNE_EVERY === 0) pruneChanges(ctx.pool, CHANGE_RETENTION_MS).catch(() => {});
  return value;
}

/**
 * Deletes the change notices older than `olderThanMs` (a reader whose cursor is older gets
 * `reset: true`: it reloads what it shows). Answers how many were deleted.
 */
export async function pruneChanges(pool, olderThanMs) {
  return transaction(pool, async (c) => {
    // The cut is a transaction id: every change below it goes, and a reader whose position is
    // below it is told to reset.
    const cut = await c.query(`SELECT max(xid)::text AS xid FROM gatehouse_changes
      WHERE created_at <= now() - $1 * interval '1 millisecond'`, [olderThanMs]);
    const xid = cut.rows[0].xid;
    if (xid === null) return { value: 0, write: false };
    await c.query(`UPDATE gatehouse_change_counter SET pruned = greatest(pruned, $1::bigint + 1)
      WHERE id = 1`, [xid]);
    const gone = await c.query("DELETE FROM gatehouse_changes WHERE xid <= $1::xid8", [xid]);
    return { value: gone.rowCount, write: true };
  });
}
