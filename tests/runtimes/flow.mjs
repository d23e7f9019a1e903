// One flow over the wire protocol (src/store/wire.rs), run against the store handler mounted
// in each runtime: refusals with the stable code, a commit and its retry, a load, a decision
// from an approver, the list, the change stream (SSE and a long poll), delete. The commit
// bodies are the engine's own (tests/server/fixtures/approved-run.json).

import assert from "node:assert/strict";
import fs from "node:fs";
import path from "node:path";
import { after, before, test } from "node:test";
import { startPostgres } from "../support/postgres.mjs";
import { assertAppIsReadme, root } from "./harness.mjs";

const run = JSON.parse(fs.readFileSync(
  path.join(root, "tests/server/fixtures/approved-run.json"), "utf8")).commits;

/** `{ status, body, text }` of a call to the handler at `base` as `user` (null: no token). */
export function client(base, user) {
  return async (method, p, body) => {
    const r = await fetch(base + p, {
      method,
      headers: {
        ...(user ? { authorization: `Bearer ${user}` } : {}),
        ...(body !== undefined ? { "content-type": "application/json" } : {}),
      },
      body: body === undefined ? undefined : JSON.stringify(body),
      signal: AbortSignal.timeout(20_000),
    });
    const text = await r.text();
    let parsed = null;
    try {
      parsed = JSON.parse(text);
    } catch {
      // the assertions show `text`
    }
    return { status: r.status, body: parsed, text, type: r.headers.get("content-type") };
  };
}

/** `GET changes` as SSE; `nextData(ms)` resolves to the next notice (null: none in time). */
export async function subscribe(base, user) {
  const controller = new AbortController();
  const r = await fetch(`${base}/changes`, {
    headers: { authorization: `Bearer ${user}` }, signal: controller.signal,
  });
  assert.equal(r.status, 200, await (r.status === 200 ? "" : r.text()));
  assert.equal(r.headers.get("content-type"), "text/event-stream");
  const reader = r.body.pipeThrough(new TextDecoderStream()).getReader();
  let buffer = "";
  let pending = null;
  const nextBlock = async (deadline) => {
    for (;;) {
      const end = buffer.indexOf("\n\n");
      if (end >= 0) {
        const block = buffer.slice(0, end);
        buffer = buffer.slice(end + 2);
        return block;
      }
      pending ??= reader.read();
      const left = deadline - Date.now();
      const chunk = await Promise.race([pending,
        new Promise((resolve) => setTimeout(() => resolve(null), Math.max(left, 0)))]);
      if (chunk === null) return null;
      pending = null;
      if (chunk.done) return { end: true };
      buffer += chunk.value;
    }
  };
  return {
    async first() {
      return nextBlock(Date.now() + 5000);
    },
    async nextData(ms) {
      const deadline = Date.now() + ms;
      for (;;) {
        const block = await nextBlock(deadline);
        if (block === null || typeof block === "object") return block;
        const data = block.split("\n").filter((l) => l.startsWith("data: "));
        if (data.length) return JSON.parse(data.map((l) => l.slice(6)).join("\n"));
      }
    },
    close: () => controller.abort(),
  };
}

/**
 * Registers the flow's tests on the handler at `target.url` (read when they run). `name` keeps
 * the runtimes' threads apart; `noticeMs` is how long a change notice may take (polling
 * handlers take up to their pollMs).
 */
export function storeFlow(name, target, { noticeMs = 3000 } = {}) {
  const id = `alice:shared-${name}`;
  const other = `alice:shared-${name}-2`;
  const enc = encodeURIComponent;
  const alice = (...a) => client(target.url, "alice")(...a);
  const bob = (...a) => client(target.url, "bob")(...a);
  const nobody = (...a) => client(target.url, null)(...a);
  // A run's writes carry its lease's secret, as the browser's do: alice's device keeps the
  // one each answer gives, by thread.
  const secrets = new Map();
  const aliceCommit = async (thread, body) => {
    const t = secrets.get(thread);
    const r = await alice("POST", `/threads/${enc(thread)}/commit`, t ? { ...body, leaseToken: t } : body);
    if (r.status === 200) secrets.set(thread, r.body.leaseToken);
    return r;
  };
  let stream;

  test(`${name}: a request authorize refuses is 403 unauthorized, and writes nothing`, async () => {
    for (const r of [
      await nobody("GET", `/threads/${enc(id)}`),
      await nobody("GET", "/threads"),
      await bob("POST", `/threads/${enc(id)}/commit`, run[0]), // bob may decide, not write
      await bob("DELETE", `/threads/${enc(id)}`),
    ]) {
      assert.equal(r.status, 403, r.text);
      assert.equal(r.body?.error?.code, "unauthorized", r.text);
    }
    const loaded = await alice("GET", `/threads/${enc(id)}`);
    assert.equal(loaded.status, 200, loaded.text);
    assert.deepEqual(loaded.body, { record: null, tail: null });
  });

  test(`${name}: a commit, its retry answered as the success it was, a load, a notice`, async () => {
    stream = await subscribe(target.url, "bob");
    assert.match(await stream.first(), /connected/);
    const first = await alice("POST", `/threads/${enc(id)}/commit`, run[0]);
    assert.equal(first.status, 200, first.text);
    assert.equal(first.body.record.version, 1);
    secrets.set(id, first.body.leaseToken);
    const again = await alice("POST", `/threads/${enc(id)}/commit`, run[0]);
    assert.equal(again.status, 200, again.text);
    assert.equal(again.text, first.text, "the retry gets the first answer");
    const loaded = await alice("GET", `/threads/${enc(id)}`);
    assert.equal(loaded.body.record.version, 1, "applied once");
    assert.equal(loaded.body.record.messageCount, 1);
    assert.equal(JSON.parse(loaded.body.tail).content[0].content, "delete /tmp/a.txt");
    assert.deepEqual(await stream.nextData(noticeMs), { threadId: id, version: 1 },
      "bob's change stream hears alice's commit");
  });

  test(`${name}: the approver's decision is stored with the identity authorize returned`, async () => {
    const call = await aliceCommit(id, run[1]);
    assert.equal(call.status, 200, call.text);
    assert.equal(call.body.record.status, "awaiting_approval");
    // A decision is an intent, applied by the handler (docs/design.md, "Threat model").
    const decided = await bob("POST", `/threads/${enc(id)}/decide`, run[2]);
    assert.equal(decided.status, 200, decided.text);
    for (const body of run.slice(3)) {
      const r = await aliceCommit(id, body);
      assert.equal(r.status, 200, r.text);
    }
    const audit = await bob("GET", `/threads/${enc(id)}/audit`);
    assert.equal(audit.status, 200, audit.text);
    assert.equal(audit.body.rows.length, 1);
    const entry = JSON.parse(audit.body.rows[0].json);
    assert.equal(entry.decidedBy, "bob", "not the by the browser sent");
    assert.equal(entry.outcome, "ok");
    const messages = await bob("GET", `/threads/${enc(id)}/messages?limit=2`);
    assert.deepEqual(messages.body.rows.map((r) => r.seq), [3, 4]);
    const seen = [];
    for (let i = 0; i < 5; i++) seen.push((await stream.nextData(noticeMs))?.version);
    assert.equal(seen.at(-1), 6, `notices up to version 6: ${seen}`);
  });

  test(`${name}: the list holds the thread, as authorize filters it`, async () => {
    const mine = await alice("GET", "/threads");
    assert.equal(mine.status, 200, mine.text);
    const found = mine.body.threads.find((t) => t.id === id);
    assert.ok(found, mine.text);
    assert.equal(found.version, 6);
    const other = await client(target.url, "carol")("GET", "/threads");
    assert.equal(other.status, 200);
    assert.ok(!other.body.threads.some((t) => t.id === id), "carol may not read it");
  });

  test(`${name}: a long poll waits for the next change`, async () => {
    const start = await bob("GET", "/changes?poll=1");
    assert.equal(start.status, 200, start.text);
    assert.deepEqual(start.body.changes, []);
    const waiting = bob("GET", `/changes?poll=1&since=${start.body.cursor}&wait=10000`);
    await new Promise((r) => setTimeout(r, 300));
    const t0 = Date.now();
    const w = await alice("POST", `/threads/${enc(other)}/commit`, run[0]);
    assert.equal(w.status, 200, w.text);
    const woke = await waiting;
    assert.equal(woke.status, 200, woke.text);
    assert.deepEqual(woke.body.changes, [{ threadId: other, version: 1 }]);
    assert.ok(Date.now() - t0 < noticeMs, `answered ${Date.now() - t0} ms after the commit`);
    assert.deepEqual(await stream.nextData(noticeMs), { threadId: other, version: 1 });
  });

  test(`${name}: delete removes the thread, and the stream says so`, async () => {
    const r = await alice("DELETE", `/threads/${enc(id)}`);
    assert.equal(r.status, 200, r.text);
    assert.deepEqual(r.body, {});
    assert.deepEqual((await alice("GET", `/threads/${enc(id)}`)).body, { record: null, tail: null });
    assert.deepEqual(await stream.nextData(noticeMs), { threadId: id, version: null });
    stream.close();
    stream = null;
  });

  return { close: () => stream?.close() };
}

/**
 * The whole suite for one runtime: its app file must be the README's block, then `start(pg)`
 * (a throwaway Postgres) resolves to `{ url, stop() }` and the flow runs against `url`. The app,
 * the stream and Postgres are stopped at the end, also when a test fails.
 */
export function runtimeSuite(name, { app, start, noticeMs }) {
  const target = {};
  let cluster;
  let started;
  before(async () => {
    cluster = await startPostgres();
    started = await start(cluster);
    target.url = started.url;
  });
  after(async () => {
    flow.close();
    await started?.stop();
    await cluster?.stop();
  });
  test(`${name}: the app is the README's "mount: ${name}" block`, () => assertAppIsReadme(name, app));
  const flow = storeFlow(name, target, { noticeMs });
  return { postgres: () => cluster, url: () => target.url };
}
