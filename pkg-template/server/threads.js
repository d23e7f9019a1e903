// @ts-check
// The thread routes of the store handler: read, rows, commit, decide, lease, delete
// (docs/design.md, "Across devices" and "Threat model"); the list is server/list.js.

import * as core from "./core.js";
import { hex } from "./cursor.js";
import { Refusal, answerOf, authorizeFailed, invalid } from "./errors.js";
import { MAX_DECIDE_BYTES, MAX_ID_BYTES, readBody, requireJson, utf8Length } from "./http.js";
import { CHANNEL, announce, transaction, writing } from "./postgres.js";
import { callsOf, count, judge, progressOf, requesterOf, sameCalls } from "./approvers.js";
import { issueReceipts } from "./receipts.js";
import { cancelRequests, recordRequests, removeRequests } from "./requests.js";
import { citedGrants } from "./grants.js";

export async function identityOf(ctx, request, threadId, action, intent) {
  let who;
  try {
    who = await ctx.authorize(request, intent ? { threadId, action, ...intent } : { threadId, action });
  } catch (e) {
    throw authorizeFailed(e);
  }
  if (typeof who !== "string" || who === "") {
    throw new Refusal(403, "unauthorized",
      threadId === null ? `not allowed to ${action}` : `not allowed to ${action} this thread`);
  }
  return who;
}

export async function mayRead(ctx, request, threadId) {
  try {
    const who = await ctx.authorize(request, { threadId, action: "read" });
    return typeof who === "string" && who !== "";
  } catch {
    return false;
  }
}

export function clock(ctx, request) {
  const t = ctx.now(request);
  if (typeof t !== "number" || !Number.isFinite(t)) throw new Error("now() must return a number");
  return t;
}

/** The stored record of `id` as the core reads it, or null (never written). */
function recordOf(id, text) {
  return text === null || text === undefined ? null : answerOf(core.readRecord(id, text));
}

export async function load(ctx, request, id) {
  const who = await identityOf(ctx, request, id, "read");
  const text = await transaction(ctx.pool, async (c) => {
    const r = await c.query("SELECT record FROM gatehouse_threads WHERE id = $1", [id]);
    const rec = recordOf(id, r.rows[0]?.record);
    if (!rec) return { value: '{"record":null,"tail":null}', write: false };
    let tail = null;
    if (rec.messageCount > 0) {
      const t = await c.query("SELECT json FROM gatehouse_messages WHERE thread = $1 AND seq = $2",
        [id, rec.messageCount]);
      tail = t.rows[0]?.json ?? null;
    }
    return { value: `{"record":${rec.record},"tail":${JSON.stringify(tail)}}`, write: false };
  }, "BEGIN ISOLATION LEVEL REPEATABLE READ READ ONLY");
  return withProgress(ctx, id, text, who);
}

export async function rows(ctx, request, id, kind, before, limit) {
  await identityOf(ctx, request, id, "read");
  return transaction(ctx.pool, async (c) => {
    const r = await c.query("SELECT record FROM gatehouse_threads WHERE id = $1", [id]);
    const text = r.rows[0]?.record;
    if (text === null || text === undefined) return { value: '{"rows":[]}', write: false };
    const w = answerOf(core.rowsWindow(id, text, kind, before ?? undefined, limit));
    if (w.first > w.last) return { value: '{"rows":[]}', write: false };
    const table = kind === "messages" ? "gatehouse_messages" : "gatehouse_audit";
    const got = await c.query(`SELECT seq, json FROM ${table}
      WHERE thread = $1 AND seq BETWEEN $2 AND $3 ORDER BY seq`, [id, w.first, w.last]);
    const out = [];
    for (let seq = w.first; seq <= w.last; seq++) {
      const row = got.rows[seq - w.first];
      if (!row || Number(row.seq) !== seq) answerOf(core.missingRow(id, kind, seq));
      out.push({ seq, json: row.json });
    }
    return { value: { rows: out }, write: false };
  }, "BEGIN ISOLATION LEVEL REPEATABLE READ READ ONLY");
}

/**
 * Locks the thread's row (a placeholder while it has never been written) and reads, in the
 * same statement, what a write needs under that lock: the record, the lease's secret and its
 * holder, the commit log's row of `commitId` (null for a new one), the tail and whether a row
 * follows it. One round trip for a thread that exists. The reads beside the lock see the
 * statement's snapshot, taken before any wait for the lock: when another write committed
 * during that wait (the locked row's version is not the snapshot's), they are read again.
 * A new thread's placeholder is inserted first (`ON CONFLICT DO NOTHING`: two first writers
 * take turns).
 */
async function lockThread(c, id, commitId) {
  const lock = () => c.query(`SELECT t.record, t.lease_token, t.lease_who, t.version, t.message_count,
      (SELECT s.version FROM gatehouse_threads s WHERE s.id = $1) AS seen_version,
      ${READS}
    FROM gatehouse_threads t WHERE t.id = $1 FOR UPDATE OF t`, [id, commitId]);
  let r = await lock();
  if (!r.rows.length) {
    await c.query(`INSERT INTO gatehouse_threads (id, version, record) VALUES ($1, 0, NULL)
      ON CONFLICT (id) DO NOTHING`, [id]);
    r = await lock();
  }
  let row = r.rows[0];
  if (Number(row.version) !== Number(row.seen_version)) {
    row = { ...row, ...(await c.query(`SELECT ${READS} FROM gatehouse_threads t WHERE t.id = $1`,
      [id, commitId])).rows[0] };
  }
  return { record: row.record ?? null, token: row.lease_token ?? null, leaseWho: row.lease_who ?? null,
    read: { seen: row.seen === null ? null : JSON.parse(row.seen), tail: row.tail ?? null,
      after: row.after === true, count: row.message_count === null ? null : Number(row.message_count) } };
}

/**
 * The record decides where the tail is, not the column beside it: when they disagree (a
 * record changed by something other than the handler), the tail and what follows it are read
 * again at the record's count, so that the core judges the rows as the record counts them.
 * @param {any} c @param {string} id @param {string} commitId
 * @param {{ messageCount: number } | null} rec @param {any} read
 */
async function atRecordsCount(c, id, commitId, rec, read) {
  const count = rec ? rec.messageCount : null;
  if (count === read.count) return read;
  const r = await c.query(`SELECT ${READS.replaceAll("t.message_count", "$3::bigint")}`,
    [id, commitId, count ?? -1]);
  const row = r.rows[0];
  return { seen: read.seen, tail: rec ? row.tail : null, after: rec ? row.after === true : false, count };
}

// What a write reads under the thread's lock, beside it (`t` the thread's row).
const READS = `(SELECT json_build_object('answer', answer, 'who', who, 'digest', digest,
        'version', version)::text FROM gatehouse_commits WHERE thread = $1 AND commit_id = $2) AS seen,
      (SELECT json FROM gatehouse_messages WHERE thread = $1 AND seq = t.message_count) AS tail,
      EXISTS (SELECT 1 FROM gatehouse_messages WHERE thread = $1 AND seq > t.message_count) AS after`;

// Node's own hash where there is one (synchronous, no trip through Web Crypto's thread pool);
// Web Crypto elsewhere (Deno, Bun, Workers).
const nodeCrypto = globalThis.process?.getBuiltinModule?.("node:crypto") ?? null;

/** A SHA-256 of the body, hex: a replayed commit id is answered only for the same body. */
export async function digestOf(body) {
  if (nodeCrypto) return nodeCrypto.createHash("sha256").update(body).digest("hex");
  const bytes = await crypto.subtle.digest("SHA-256", new TextEncoder().encode(body));
  return hex(new Uint8Array(bytes));
}

/** Compares two secrets in time that does not depend on where they differ. */
function sameSecret(a, b) {
  if (typeof a !== "string" || typeof b !== "string" || a.length !== b.length) return false;
  let diff = 0;
  for (let i = 0; i < a.length; i++) diff |= a.charCodeAt(i) ^ b.charCodeAt(i);
  return diff === 0;
}

const newSecret = () => crypto.randomUUID();

/**
 * The commit log: a commit id already seen on this thread. Its maker, with the same body,
 * gets the answer it was given: a refusal again, or, for an applied commit, the record as the
 * thread stands while it is still at the version that commit left (the log keeps the version,
 * not the record). Once the thread has moved on, the applied commit is answered `conflict`: the
 * client reloads, and finds it there. Anyone else, or another body under the same id, is
 * refused, learning nothing. `{ answer }` (a refusal, or an answer logged before schema 2) or
 * `{ version }`, or null for a new commit id.
 */
function seenOf({ seen: row }, who, digest) {
  if (row === null) return null;
  // Rows written before the maker was kept (schema 1) have none: any identity may replay.
  if ((row.who !== null && row.who !== who) || (row.digest !== null && row.digest !== digest)) {
    throw new Refusal(409, "commit_id_reused",
      "this commit id was used for another request; send a new commit with a new id");
  }
  if (row.answer !== null) {
    answerOf(row.answer); // a remembered refusal throws
    return { answer: row.answer };
  }
  return { version: Number(row.version) };
}

/**
 * The stored record `rec`, for a replay of the applied commit that left `version`. Once the
 * thread moved on, `conflict` with `applied: true` and `expected` the version that commit
 * left: the client knows its write landed (a plain conflict's `expected` is the version the
 * commit was made from), reloads, and goes on from there.
 */
function replayedRecord(rec, version) {
  if (!rec || rec.version !== version) {
    throw new Refusal(409, "conflict", "this commit was applied; the thread has changed since. " +
      "Nothing more was written: reload the thread",
    { expected: version, found: rec?.version ?? 0, applied: true });
  }
  return rec;
}

/**
 * Whether `text` takes more than `max` bytes as UTF-8, encoding it only when its length cannot
 * tell (a UTF-16 unit is 1 to 3 bytes).
 */
function overBytes(text, max) {
  if (text.length * 3 <= max) return false;
  if (text.length > max) return true;
  return utf8Length(text) > max;
}

/** Refuses a planned write whose record or messages exceed the handler's caps (413). */
function checkSizes(ctx, plan) {
  if (overBytes(plan.record, ctx.maxRecordBytes)) {
    throw new Refusal(413, "too_large",
      `the thread record would exceed ${ctx.maxRecordBytes} bytes`, { limit: ctx.maxRecordBytes });
  }
  for (const r of plan.rows) {
    if (overBytes(r.json, ctx.maxMessageBytes)) {
      throw new Refusal(413, "too_large",
        `a message exceeds ${ctx.maxMessageBytes} bytes`, { limit: ctx.maxMessageBytes });
    }
  }
}

/**
 * Writes a plan in one statement: the record, the lease's secret and its holder, the rows
 * (messages, and audit records the server numbered), the requester (a user message's
 * writer), the commit log's row, and the change notice with its NOTIFY (docs/design.md, "The
 * change stream"). One round trip instead of one per table: most of a commit's cost in the
 * handler was its statements' round trips (bench/handler-cpu.mjs).
 * @param {any} ctx
 * @param {any} c
 * @param {string} id
 * @param {any} plan
 * @param {{ token: string | null, holder: string | null, creator?: string | null,
 *   requester?: string | null, commitId: string, who: string, digest: string }} w
 */
async function writePlan(ctx, c, id, plan, w, send = (/** @type {string} */ t, /** @type {any[]} */ v) => c.query(t, v)) {
  // A thread's owner is the identity whose commit created it (or created it again after a
  // delete): the list's index. `updated_at` is the record's `updatedAt` (the handler's clock),
  // which lists are ordered by.
  await send(`WITH t AS (
      UPDATE gatehouse_threads SET version = $2, record = $3, lease_token = $4, lease_who = $5,
        updated_at = to_timestamp($7::float8 / 1000), message_count = $18,
        owner = CASE WHEN record IS NULL THEN $6 ELSE owner END,
        requester = CASE WHEN $8::text IS NULL THEN requester ELSE $8 END
      WHERE id = $1 RETURNING 1),
    m AS (INSERT INTO gatehouse_messages (thread, seq, json)
      SELECT $1, * FROM unnest($9::bigint[], $10::text[])
      ON CONFLICT (thread, seq) DO UPDATE SET json = EXCLUDED.json RETURNING 1),
    a AS (INSERT INTO gatehouse_audit (thread, seq, json)
      SELECT $1, * FROM unnest($11::bigint[], $12::text[])
      ON CONFLICT (thread, seq) DO UPDATE SET json = EXCLUDED.json RETURNING 1),
    l AS (INSERT INTO gatehouse_commits (thread, commit_id, who, digest, version)
      VALUES ($1, $13, $14, $15, $2) RETURNING 1),
    n AS (INSERT INTO gatehouse_changes (seq, thread, version)
      VALUES (nextval('gatehouse_changes_seq'), $1, $2) RETURNING 1)
    SELECT CASE WHEN $16::bool THEN pg_notify($17, '') END`,
  [id, plan.version, plan.record, w.token, w.token === null ? null : w.holder, w.creator ?? null,
    plan.updatedAt, w.requester ?? null, plan.rows.map((r) => r.seq), plan.rows.map((r) => r.json),
    plan.audit.map((r) => r.seq), plan.audit.map((r) => r.json), w.commitId, w.who, w.digest,
    ctx.notify, CHANNEL, plan.messageCount]);
}

export async function commit(ctx, request, id) {
  // Who may write is asked before anything is read (docs/design.md, "Threat model").
  requireJson(request);
  const who = await identityOf(ctx, request, id, "write");
  const body = await readBody(request, ctx.maxBodyBytes);
  const { commitId, owner, leaseToken, grants: cited } = answerOf(core.commitAction(body));
  checkCommitId(commitId);
  const digest = await digestOf(body);
  const at = clock(ctx, request);
  let requested = 0;
  const answer = await writing(ctx, async (c, tx) => {
    requested = 0;
    const { record: stored, token, leaseWho, read: locked } = await lockThread(c, id, commitId);
    const rec = recordOf(id, stored);
    const read = await atRecordsCount(c, id, commitId, rec, locked);
    const seen = seenOf(read, who, digest);
    if (seen !== null) {
      // The answer the maker lost: its lease's secret again, if the lease is still its own.
      const mine = token !== null && leaseWho === who && rec?.leaseOwner === owner;
      const text = seen.answer ?? `{"record":${replayedRecord(rec, seen.version).record}}`;
      return { value: withToken(text, mine ? token : null), write: false };
    }
    // The lease is its holder's: the secret it was given, and the identity it was given to.
    const holder = token !== null && leaseWho === who && sameSecret(leaseToken, token);
    const { tail, after } = read;
    // The remembered grants the commit cites, if any, locked until it ends: a revocation
    // waits for it, or it sees the revocation (docs/design.md, "Remembered grants").
    const grants = await citedGrants(c, cited);
    const planned = core.planCommit(id, stored ?? undefined, tail ?? undefined, after, body, at, who,
      holder, grants);
    let plan;
    try {
      plan = answerOf(planned);
    } catch (e) {
      if (!(e instanceof Refusal) || e.status !== 409) throw e;
      // A stale commit (`conflict`) or one another run's lease keeps out (`busy`) is refused,
      // and remembered under its id: a delayed copy of it (a network may deliver a request
      // twice, late) is refused again, never planned afresh once the thread has moved on
      // (docs/design.md, "Across devices").
      await c.query(`INSERT INTO gatehouse_commits (thread, commit_id, answer, who, digest)
        VALUES ($1, $2, $3, $4, $5)`, [id, commitId, planned, who, digest]);
      return { value: e, write: true };
    }
    checkSizes(ctx, plan);
    // The lease's secret: kept by its holder, new for a writer that takes the lease, none
    // once it is let go.
    const next = plan.leased ? (holder ? token : newSecret()) : null;
    // Without approval requests to record the write is the last statement: it may take
    // COMMIT with it (tx.last).
    await writePlan(ctx, c, id, plan, { token: next, holder: who, creator: who,
      requester: requesterOf(plan.rows, who), commitId, who, digest }, ctx.outbox ? undefined : tx.last);
    // The approval requests of the calls this commit left pending, in its transaction.
    requested = ctx.outbox ? await recordRequests(c, id, plan.rows) : 0;
    return { value: withToken(plan.answer, next), write: true };
  });
  if (answer instanceof Refusal) throw answer;
  if (requested > 0) ctx.outbox.kick();
  return answer;
}

/** The commit answer `text` with the lease's secret added (for its holder only). */
function withToken(text, token) {
  if (token === null) return text;
  return `${text.slice(0, -1)},"leaseToken":${JSON.stringify(token)}}`;
}

function checkCommitId(commitId) {
  if (utf8Length(commitId) > MAX_ID_BYTES || commitId.includes("\u0000")) {
    throw invalid(`a commit id has at most ${MAX_ID_BYTES} bytes and no NUL`);
  }
}

/**
 * `POST B/threads/{id}/decide`: decisions as intents (docs/design.md, "Threat model"). The
 * small body is read first, so that `authorize` gets what is decided: `decisions: [{ callId,
 * tool, decision }]` (the tools as the stored thread names them). The core applies them to the
 * stored thread with the engine's rules, as the identity `authorize` returned.
 */
export async function decide(ctx, request, id) {
  requireJson(request);
  const body = await readBody(request, Math.min(ctx.maxBodyBytes, MAX_DECIDE_BYTES));
  const intent = answerOf(core.decideIntent(body));
  checkCommitId(intent.commitId);
  // The calls decided, read without a lock or a held connection; checked again under the lock
  // (a tail that changed since is refused, or decides other calls).
  const before = await callsBefore(ctx.pool, id);
  const decisions = intent.decisions.map((d) => ({ ...d, tool: before.calls.get(d.callId)?.name ?? null }));
  const who = await identityOf(ctx, request, id, "decide", { decisions });
  return decideAs(ctx, id, body, intent, who, clock(ctx, request), before);
}

/**
 * Applies the decide request `body` (its `intent` read) to thread `id` as `who`, who was
 * authorized to decide it: the approver rules first, then the engine under the thread's lock.
 * `underLock(c, tail)`, when given, runs first under the lock and may refuse (a decision
 * link is checked and spent there). `before` is the calls and requester read without the lock.
 * @param {any} ctx
 * @param {string} id
 * @param {string} body
 * @param {{ commitId: string, decisions: { callId: string, decision: string }[] }} intent
 * @param {string} who
 * @param {number} at
 * @param {{ calls: Map<string, { name: string, inputs: unknown }>, requester: string | null }} before
 * @param {((c: any, tail: string | null) => Promise<void>) | null} [underLock]
 */
export async function decideAs(ctx, id, body, intent, who, at, before, underLock = null) {
  const { calls, requester } = before;
  const decisions = intent.decisions.map((d) => ({ ...d, tool: calls.get(d.callId)?.name ?? null }));
  // The approver rules, with no lock held while the app's `may` runs.
  await judge(ctx, id, intent.decisions, calls, requester, who);
  const ruled = decisions.some((d) => ctx.approvers.has(d.tool ?? ""));
  const digest = await digestOf(body);
  const answer = await writing(ctx, async (c) => {
    const { record: stored, token, leaseWho, read: locked } = await lockThread(c, id, intent.commitId);
    const rec = recordOf(id, stored);
    const read = await atRecordsCount(c, id, intent.commitId, rec, locked);
    if (underLock) await underLock(c, read.tail);
    const seen = seenOf(read, who, digest);
    if (seen !== null) {
      if (seen.answer) return { value: seen.answer, write: false };
      replayedRecord(rec, seen.version);
      return { value: `{"record":${rec.record},"tail":${JSON.stringify(read.tail)}}`, write: false };
    }
    const { tail, after } = read;
    const now = callsOf(tail);
    if (decisions.some((d) => d.tool !== (now.get(d.callId)?.name ?? null)) ||
        (ruled && !sameCalls(now, calls))) {
      throw new Refusal(409, "conflict", "the thread changed while the decision was authorized; " +
        "nothing was written, decide again");
    }
    // Below a quorum an approval is counted and the thread is not written; the engine judges
    // it first all the same (a late, malformed or unknown decision is refused, not counted).
    if (ruled) {
      answerOf(core.planDecide(id, stored ?? undefined, tail ?? undefined, after, body, at, who, 0));
    }
    const counted = ruled ? await count(ctx, c, id, body, tail, who, at)
      : { body, approvals: new Map(), engine: true, held: [] };
    if (!counted.engine) {
      await c.query(`INSERT INTO gatehouse_commits (thread, commit_id, who, digest, version)
        VALUES ($1, $2, $3, $4, $5)`, [id, intent.commitId, who, digest, rec?.version ?? 0]);
      // No version: every device reads the thread again, and sees the approvals counted.
      await announce(ctx, c, id, null);
      return { value: `{"record":${rec.record},"tail":${JSON.stringify(tail)}}`, write: true };
    }
    const planned = core.planDecide(id, stored ?? undefined, tail ?? undefined, after,
      counted.body, at, who, Math.floor(Math.random() * 2 ** 52));
    let plan;
    try {
      plan = answerOf(planned);
    } catch (e) {
      if (!(e instanceof Refusal) || e.status !== 409) throw e;
      await c.query(`INSERT INTO gatehouse_commits (thread, commit_id, answer, who, digest)
        VALUES ($1, $2, $3, $4, $5)`, [id, intent.commitId, planned, who, digest]);
      return { value: e, write: true };
    }
    checkSizes(ctx, plan);
    await writePlan(ctx, c, id, plan, { token: plan.leased ? token : null, holder: leaseWho,
      commitId: intent.commitId, who, digest });
    const applied = counted.body === body ? intent.decisions
      : answerOf(core.decideIntent(counted.body)).decisions;
    await issueReceipts(ctx, c, id, applied, plan.answer, who, at, counted.approvals);
    // A decided call is not requested again (reminders, escalation).
    if (ctx.outbox) await cancelRequests(c, id, applied.map((d) => d.callId));
    return { value: plan.answer, write: true };
  });
  if (answer instanceof Refusal) throw answer;
  return withProgress(ctx, id, answer, who);
}

/**
 * `GET B/threads/{id}/receipts/{callId}`: the signed receipt of the tail's call (docs/design.md,
 * "Receipts"), for whoever may write the thread: the device that runs the call forwards it to
 * the backend that performs the action. A receipt spends an approval, so a user who may only
 * read or decide does not get it.
 */
export async function receipt(ctx, request, id, callId) {
  await identityOf(ctx, request, id, "write");
  const r = await ctx.pool.query(`SELECT r.receipt FROM gatehouse_receipts r
    JOIN gatehouse_threads t ON t.id = r.thread
    JOIN gatehouse_messages m ON m.thread = t.id AND m.seq = t.message_count
    WHERE r.thread = $1 AND r.call_id = $2 AND r.message = m.json::json->>'__id'
    ORDER BY r.created_at DESC, r.id LIMIT 1`, [id, callId]);
  if (!r.rows[0]) throw new Refusal(404, "no_receipt", "this call has no receipt");
  return r.rows[0].receipt;
}

/** The stored tail's calls (`callId` → `{ name, inputs }`) and the thread's requester. */
export async function callsBefore(pool, id) {
  const r = await pool.query(`SELECT t.requester, m.json FROM gatehouse_threads t
    LEFT JOIN gatehouse_messages m ON m.thread = t.id
      AND m.seq = t.message_count
    WHERE t.id = $1`, [id]);
  return { calls: callsOf(r.rows[0]?.json ?? null), requester: r.rows[0]?.requester ?? null };
}

/**
 * A read's or a decision's answer (`{"record","tail"}` text) with the approvals of the
 * tail's calls of ruled tools, as `who` sees them (docs/design.md, "Approver rules"); read
 * after the transaction, so that no lock is held while the app's `may` runs.
 */
async function withProgress(ctx, id, text, who) {
  if (ctx.approvers.size === 0) return text;
  const tail = JSON.parse(text).tail ?? null;
  const progress = await progressOf(ctx, ctx.pool, id, tail, who);
  return progress ? `${text.slice(0, -1)},"approvals":${JSON.stringify(progress)}}` : text;
}

export async function lease(ctx, request, id) {
  requireJson(request);
  const who = await identityOf(ctx, request, id, "write");
  const body = await readBody(request, ctx.maxBodyBytes);
  const asked = answerOf(core.leaseRequest(body));
  const at = clock(ctx, request);
  return writing(ctx, async (c) => {
    const r = await c.query(`SELECT record, lease_token, lease_who FROM gatehouse_threads
      WHERE id = $1 FOR UPDATE`, [id]);
    const token = r.rows[0]?.lease_token ?? null;
    // Only the holder of the lease's secret, signed in as who took it, renews or releases it.
    const holder = token !== null && r.rows[0].lease_who === who &&
      sameSecret(asked.leaseToken, token);
    const plan = answerOf(core.planLease(id, r.rows[0]?.record ?? undefined, body, at, holder));
    if (!plan.ok) return { value: '{"ok":false}', write: false };
    // A released lease takes its secret and holder with it.
    // (`updated_at` stays: a lease is no activity a thread list orders by.)
    await c.query(`UPDATE gatehouse_threads SET record = $2, lease_token = $3, lease_who = $4
      WHERE id = $1`,
    [id, plan.record, plan.leased ? token : null, plan.leased ? who : null]);
    // A release frees the thread for another device: tell them (the version is unchanged).
    if (asked.op === "release") await announce(ctx, c, id, plan.version);
    return { value: '{"ok":true}', write: true };
  });
}

export async function remove(ctx, request, id) {
  await identityOf(ctx, request, id, "delete");
  return writing(ctx, async (c) => {
    const r = await c.query("DELETE FROM gatehouse_threads WHERE id = $1 RETURNING record", [id]);
    for (const table of ["gatehouse_messages", "gatehouse_audit", "gatehouse_commits",
      "gatehouse_approvals"]) {
      await c.query(`DELETE FROM ${table} WHERE thread = $1`, [id]);
    }
    await removeRequests(c, id);
    // A thread grant ends with its thread: one made again under the same id starts without.
    await c.query(`UPDATE gatehouse_grants SET revoked_at = now(), revoked_by = $2
      WHERE thread = $1 AND revoked_at IS NULL`, [id, "deleteThread"]);
    const existed = r.rows.some((row) => row.record !== null);
    if (existed) await announce(ctx, c, id, null);
    return { value: "{}", write: true };
  });
}
