// @ts-check
// The change stream: SSE, or JSON long-polls, read from gatehouse_changes (docs/design.md,
// "Across devices"). NOTIFY only wakes the readers; without it they read every `pollMs`.

import { openCursor, sealCursor } from "./cursor.js";
import { Refusal, invalid } from "./errors.js";
import { integer } from "./http.js";
import { CHANNEL, changesSince } from "./postgres.js";
import { identityOf, mayRead } from "./threads.js";

// How soon a reader looks again when committed changes wait behind an older transaction.
const AHEAD_MS = 25;

export async function changes(ctx, request, q) {
  let poll = null;
  if (q.poll !== undefined) {
    if (q.poll !== "1") throw invalid('poll must be "1"');
    poll = {
      since: q.since ?? null, // opened once the connection is authorized (below)
      wait: q.wait === undefined ? 0 : integer(q.wait, "wait", 60_000),
    };
  } else if (q.since !== undefined || q.wait !== undefined) {
    throw invalid("since and wait need poll=1");
  }
  // The connection is authorized (as `list`) before anything is read, and counted: an
  // identity has at most maxFeedsPerIdentity feeds open at once.
  const who = await identityOf(ctx, request, null, "list");
  // No decryption for a client authorize refused: a cursor is opened only now.
  if (poll?.since != null) poll.since = await openCursor(ctx.cursorKey, poll.since);
  const open = ctx.feeds.get(who) ?? 0;
  if (open >= ctx.maxFeedsPerIdentity) {
    throw new Refusal(429, "too_many_feeds",
      `at most ${ctx.maxFeedsPerIdentity} change feeds per user are open at once`);
  }
  ctx.feeds.set(who, open + 1);
  let closed = false;
  const close = () => {
    if (closed) return;
    closed = true;
    const n = (ctx.feeds.get(who) ?? 1) - 1;
    if (n > 0) ctx.feeds.set(who, n);
    else ctx.feeds.delete(who);
  };
  // Each thread is authorized at most once per feedAuthorizeMs for this feed.
  const seen = new Map();
  const mayReadThread = async (threadId) => {
    const hit = seen.get(threadId);
    const t = Date.now();
    if (hit && t - hit.at < ctx.feedAuthorizeMs) return hit.ok;
    const ok = await mayRead(ctx, request, threadId);
    seen.set(threadId, { ok, at: t });
    if (seen.size > 10_000) seen.delete(seen.keys().next().value);
    return ok;
  };
  if (poll) {
    try {
      const got = await pollChanges(ctx, request, poll.since, poll.wait, mayReadThread);
      const { ahead: _ahead, ...answer } = got;
      return { ...answer, cursor: await sealCursor(ctx.cursorKey, got.cursor) };
    } finally {
      close();
    }
  }
  try {
    return await ctx.feed.stream(request, mayReadThread, close);
  } catch (e) {
    close();
    throw e;
  }
}

/** Notices after `since` the user may read, one per thread (its latest). */
async function readChanges(pool, since, mayReadThread) {
  const got = await changesSince(pool, since);
  const latest = new Map();
  for (const row of got.rows) latest.set(row.thread, row.version);
  const out = [];
  for (const [threadId, version] of latest) {
    if (await mayReadThread(threadId)) out.push({ threadId, version });
  }
  const reset = got.reset ? { reset: true } : {};
  return { changes: out, cursor: got.next, ahead: got.ahead, ...reset };
}

async function pollChanges(ctx, request, since, wait, mayReadThread) {
  const deadline = Date.now() + wait;
  let cursor = since;
  let aheadMs = 0;
  for (;;) {
    const got = await readChanges(ctx.pool, cursor, mayReadThread);
    if (got.changes.length || got.reset || cursor === null || Date.now() >= deadline ||
        request.signal?.aborted) {
      return got;
    }
    cursor = got.cursor;
    // With NOTIFY a waiting poll reads again only when woken (or at its deadline): an idle
    // one costs no queries. Without it, every pollMs. Changes held back by an older
    // transaction: again soon (its end may wake nobody), less often while it lasts.
    aheadMs = got.ahead ? Math.min(ctx.feed.pollMs, Math.max(AHEAD_MS, aheadMs * 2)) : 0;
    await ctx.feed.nextWake(Math.min(aheadMs || Infinity, deadline - Date.now()), request.signal, true);
  }
}

export class ChangeFeed {
  constructor(pool, { notify, pollMs, pingMs }) {
    this.pool = pool;
    this.notify = notify;
    this.pollMs = pollMs;
    this.pingMs = pingMs;
    this.streams = new Set();
    this.waiters = new Set();
    this.listener = null;
    this.connecting = null;
    this.refused = null;
    this.cursor = null;
    this.timer = null;
    this.pinger = null;
    this.draining = null;
    this.releasing = null;
    this.aheadTimer = null;
    this.aheadMs = 0;
    this.closed = false;
  }

  /** This handler wrote: wake its own readers at once (NOTIFY wakes the other handlers'). */
  wrote() {
    queueMicrotask(() => this.wake());
  }

  wake() {
    for (const w of this.waiters) w();
    this.waiters.clear();
    if (this.streams.size) this.drain();
  }

  /**
   * Resolves on the next wake, after `ms`, or when `signal` aborts. `untilNotified`: a reader
   * that NOTIFY wakes waits the whole `ms` (an idle one makes no queries); without NOTIFY it
   * reads again every pollMs.
   */
  nextWake(ms, signal, untilNotified = false) {
    const connecting = this.ensureListening();
    return new Promise((resolve) => {
      const end = Date.now() + Math.max(ms, 0);
      let t;
      const done = () => {
        clearTimeout(t);
        this.waiters.delete(done);
        signal?.removeEventListener("abort", done);
        resolve();
        this.releaseIfIdle();
      };
      t = setTimeout(done, Math.max(untilNotified ? Math.min(ms, this.pollMs) : ms, 0));
      this.waiters.add(done);
      signal?.addEventListener("abort", done);
      if (untilNotified) {
        Promise.resolve(connecting).then(() => {
          if (!this.waiters.has(done) || !this.notify || !this.listener ||
              this.listener === "connecting") return;
          clearTimeout(t);
          t = setTimeout(done, Math.max(end - Date.now(), 0));
        });
      }
    });
  }

  /** Resolves once the LISTEN connection is up, or has failed (then the feed has reacted). */
  ensureListening() {
    if (!this.notify || this.listener || this.closed) return this.connecting;
    this.listener = "connecting";
    this.connecting = this.listen();
    return this.connecting;
  }

  async listen() {
    let client;
    try {
      client = await this.pool.connect();
      if (typeof client.on !== "function") throw new Error("the pool's clients cannot LISTEN");
      client.on("notification", (n) => {
        if (n.channel === CHANNEL) this.wake();
      });
      client.on("error", () => this.lost(client));
      await client.query(`LISTEN ${CHANNEL}`);
      if (this.closed) throw new Error("closed");
      this.listener = client;
      // What was written before LISTEN took effect woke nobody: read it once now.
      if (this.streams.size) this.drain();
      // Everyone left while it connected.
      this.releaseIfIdle();
    } catch (e) {
      if (client) client.release(true);
      this.listener = null;
      if (typeof e?.code === "string" && /^[0-9A-Z]{5}$/.test(e.code) && !this.closed) {
        // The database answered, and refused LISTEN (CockroachDB: 0A000, "unimplemented"):
        // it has none. This feed polls from now on, as with notify: false, and each stream
        // says why in a comment, so that the app can set notify: false and skip the attempt.
        this.refused = `the database refused LISTEN (${e.code}: ${e.message}); polling every ` +
          `${this.pollMs} ms instead (createStoreHandler({ notify: false }) polls without trying)`;
        this.notify = false;
        clearInterval(this.timer);
        this.timer = null;
        for (const s of this.streams) s.send(`: ${this.refused.replace(/\n/g, " ")}\n\n`);
        if (this.streams.size) this.start();
      } else {
        // The connection failed: notices may be lost, so every stream ends (clients
        // reconnect and reload).
        this.endStreams();
      }
    }
  }

  /** The LISTEN connection broke: notices may be lost, so every stream ends (clients
   * reconnect and reload). */
  lost(client) {
    if (this.listener === client) {
      this.listener = null;
      client.release(true);
    }
    this.endStreams();
  }

  endStreams() {
    for (const s of this.streams) s.end();
  }

  async stream(request, mayReadThread, onEnd = () => {}) {
    const start = await changesSince(this.pool, null);
    if (this.cursor === null) this.cursor = start.next;
    const encoder = new TextEncoder();
    const feed = this;
    let entry;
    const body = new ReadableStream({
      start(controller) {
        entry = {
          mayReadThread,
          send(text) {
            try {
              controller.enqueue(encoder.encode(text));
            } catch {
              entry.end();
            }
          },
          end() {
            if (!feed.streams.delete(entry)) return;
            onEnd();
            try {
              controller.close();
            } catch {
              // already closed or cancelled
            }
            feed.releaseIfIdle();
          },
        };
        feed.streams.add(entry);
        entry.send("retry: 1000\n: connected\n\n");
        if (feed.refused) entry.send(`: ${feed.refused.replace(/\n/g, " ")}\n\n`);
        feed.start();
      },
      cancel() {
        entry.end();
      },
    });
    request.signal?.addEventListener("abort", () => entry.end());
    // After the stream is registered: a listener that finds nobody waiting lets go at once.
    await this.ensureListening();
    return new Response(body, {
      status: 200,
      headers: { "content-type": "text/event-stream", "cache-control": "no-store",
        "x-accel-buffering": "no" },
    });
  }

  start() {
    // Timers never keep a process alive by themselves (unref, where there is one).
    if (!this.pinger) {
      this.pinger = setInterval(() => {
        for (const s of this.streams) s.send(": ping\n\n");
      }, this.pingMs);
      this.pinger.unref?.();
    }
    // Without NOTIFY, read every pollMs. With it, only when woken: an idle stream costs no
    // queries. (A write between a new stream's first read of the counter and LISTEN taking
    // effect is caught by the read `listen` makes once LISTEN is on.)
    if (!this.timer && !this.notify) {
      this.timer = setInterval(() => this.drain(), this.pollMs);
      this.timer.unref?.();
    }
  }

  /** With no stream and no long poll left, the timers stop and the LISTEN connection goes
   * back to the pool (a pool's `end()` waits for it). The next reader starts afresh. */
  releaseIfIdle() {
    if (this.streams.size || this.waiters.size) return this.releasing;
    clearInterval(this.pinger);
    clearInterval(this.timer);
    this.pinger = this.timer = null;
    this.cursor = null;
    if (this.listener && this.listener !== "connecting") {
      const c = this.listener;
      this.listener = null;
      this.releasing = c.query(`UNLISTEN ${CHANNEL}`)
        .then(() => c.release(), () => c.release(true));
    }
    return this.releasing;
  }

  drain() {
    if (this.draining) {
      this.draining.again = true;
      return;
    }
    const run = { again: false };
    this.draining = run;
    (async () => {
      do {
        run.again = false;
        const got = await changesSince(this.pool, this.cursor);
        this.cursor = got.next;
        for (const row of got.rows) {
          const notice = JSON.stringify({ threadId: row.thread, version: row.version });
          // No `id:` line: the position is the handler's, and would tell its write count.
          const text = `data: ${notice}\n\n`;
          await Promise.all([...this.streams].map(async (s) => {
            if (await s.mayReadThread(row.thread)) s.send(text);
          }));
        }
        // Pruned past this stream's position: it ends, and its client reconnects and reloads.
        if (got.reset) this.endStreams();
        if (got.rows.length === 1000) run.again = true;
        this.holdBack(got.ahead);
      } while (run.again && this.streams.size);
    })().catch(() => this.endStreams()).finally(() => {
      this.draining = null;
    });
  }

  /**
   * Changes wait beyond the window (an older transaction still runs): read again after a
   * short delay, growing while it lasts (AHEAD_MS to pollMs), since its end may wake nobody.
   * @param {boolean} ahead
   */
  holdBack(ahead) {
    if (!ahead) {
      this.aheadMs = 0;
      return;
    }
    if (this.aheadTimer || this.closed) return;
    this.aheadMs = Math.min(this.pollMs, Math.max(AHEAD_MS, (this.aheadMs || 0) * 2));
    this.aheadTimer = setTimeout(() => {
      this.aheadTimer = null;
      if (this.streams.size) this.drain();
    }, this.aheadMs);
    this.aheadTimer.unref?.();
  }

  close() {
    this.closed = true;
    clearTimeout(this.aheadTimer);
    this.endStreams();
    for (const w of [...this.waiters]) w();
    return Promise.resolve(this.releaseIfIdle());
  }
}
