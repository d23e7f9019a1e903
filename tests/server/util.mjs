// Helpers of the store handler's tests: a small client of the wire protocol
// (src/store/wire.rs) and the golden commit bodies (tests/server_fixtures.rs writes them).

import fs from "node:fs";
import path from "node:path";
import { fileURLToPath } from "node:url";

const here = path.dirname(fileURLToPath(import.meta.url));

/** The commit bodies of a fixture, in order (`w1:0` from version 0, `w1:1`, …). */
export function fixture(name) {
  return JSON.parse(fs.readFileSync(path.join(here, "fixtures", name), "utf8")).commits;
}

/** A copy of `body` with some fields replaced. */
export function variant(body, fields) {
  return { ...structuredClone(body), ...fields };
}

/**
 * The lease secrets the handler gave, by thread and owner: a device's, shared by the clients
 * of one test process (a test that plays a device without them passes its own map).
 */
export const sharedTokens = new Map();

/** A user's view of the handler at `s.url`: `{ status, body, text }` for every call. */
export function client(s, user, extraHeaders = {}, tokens = sharedTokens) {
  const enc = encodeURIComponent;
  const call = async (method, p, body, headers = {}) => {
    const r = await fetch(s.url + p, {
      method,
      headers: {
        ...(user ? { authorization: `Bearer ${user}` } : {}),
        ...(body !== undefined ? { "content-type": "application/json" } : {}),
        ...extraHeaders,
        ...headers,
      },
      body: body === undefined ? undefined : typeof body === "string" ? body : JSON.stringify(body),
    });
    const text = await r.text();
    let parsed = null;
    try {
      parsed = text ? JSON.parse(text) : null;
    } catch {
      // not JSON: the test looks at `text`
    }
    return { status: r.status, body: parsed, text, headers: r.headers };
  };
  // The lease secrets are sent with the owner's next commits and lease requests, as the
  // browser's remote store does.
  // A retry is the very body first sent (the handler answers a commit id only for it).
  const sent = new Map();
  const withToken = (id, body) => {
    if (typeof body !== "object" || body === null || body.decisions || body.leaseToken) return body;
    const key = `${id}\n${JSON.stringify(body)}`;
    if (sent.has(key)) return sent.get(key);
    const t = tokens.get(`${id}\n${body.owner}`);
    const out = t ? { ...body, leaseToken: t } : body;
    sent.set(key, out);
    return out;
  };
  const commit = async (id, body, h) => {
    // A decision is an intent, sent to /decide (docs/design.md, "Threat model").
    const route = typeof body === "object" && body?.decisions ? "decide" : "commit";
    const r = await call("POST", `/threads/${enc(id)}/${route}`, withToken(id, body), h);
    if (route === "commit" && r.status === 200 && typeof body === "object" && body !== null) {
      const key = `${id}\n${body.owner}`;
      if (r.body.leaseToken) tokens.set(key, r.body.leaseToken);
      else tokens.delete(key);
    }
    return r;
  };
  return {
    call,
    tokens,
    load: (id, h) => call("GET", `/threads/${enc(id)}`, undefined, h),
    commit,
    decide: (id, body, h) => call("POST", `/threads/${enc(id)}/decide`, body, h),
    lease: (id, owner, op, h, version) => {
      const t = tokens.get(`${id}\n${owner}`);
      const body = { owner, op, ...(version === undefined ? {} : { version }), ...(t ? { leaseToken: t } : {}) };
      return call("POST", `/threads/${enc(id)}/lease`, body, h);
    },
    rows: (id, kind, query = "") => call("GET", `/threads/${enc(id)}/${kind}${query}`),
    list: () => call("GET", "/threads"),
    remove: (id) => call("DELETE", `/threads/${enc(id)}`),
  };
}

/** Applies `commits` one after another, each expected to succeed; the last answer. */
export async function applyAll(c, id, commits) {
  let last;
  for (const body of commits) {
    last = await c.commit(id, body);
    if (last.status !== 200) {
      throw new Error(`commit ${body.commitId} of ${id}: ${last.status} ${last.text}`);
    }
  }
  return last;
}

/** What Postgres holds for a thread, read directly (not through the handler). */
export async function stored(pool, id) {
  const q = (sql) => pool.query(sql, [id]).then((r) => r.rows);
  const [thread] = await q("SELECT version, record FROM gatehouse_threads WHERE id = $1");
  return {
    version: thread ? Number(thread.version) : null,
    record: thread?.record ? JSON.parse(thread.record) : null,
    messages: (await q("SELECT seq, json FROM gatehouse_messages WHERE thread = $1 ORDER BY seq"))
      .map((r) => [Number(r.seq), r.json]),
    audit: (await q("SELECT seq, json FROM gatehouse_audit WHERE thread = $1 ORDER BY seq"))
      .map((r) => [Number(r.seq), r.json]),
    commits: (await q(`SELECT commit_id FROM gatehouse_commits WHERE thread = $1
      ORDER BY commit_id`)).map((r) => r.commit_id),
  };
}

/** Everything the handler's tables hold, to show that a refused request changed nothing. */
export async function everything(pool) {
  const out = {};
  for (const [table, order] of [["gatehouse_threads", "id"], ["gatehouse_messages", "thread, seq"],
    ["gatehouse_audit", "thread, seq"], ["gatehouse_commits", "thread, commit_id"],
    ["gatehouse_changes", "seq"], ["gatehouse_change_counter", "id"], ["gatehouse_grants", "id"],
    ["gatehouse_schema", "id"]]) {
    out[table] = (await pool.query(`SELECT * FROM ${table} ORDER BY ${order}`)).rows;
  }
  return out;
}
