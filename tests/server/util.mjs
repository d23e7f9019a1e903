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

/** A user's view of the handler at `s.url`: `{ status, body, text }` for every call. */
export function client(s, user, extraHeaders = {}) {
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
  return {
    call,
    load: (id, h) => call("GET", `/threads/${enc(id)}`, undefined, h),
    commit: (id, body, h) => call("POST", `/threads/${enc(id)}/commit`, body, h),
    lease: (id, owner, op, h, version) =>
      call("POST", `/threads/${enc(id)}/lease`, version === undefined ? { owner, op } : { owner, op, version }, h),
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
    ["gatehouse_changes", "seq"], ["gatehouse_change_counter", "id"],
    ["gatehouse_schema", "id"]]) {
    out[table] = (await pool.query(`SELECT * FROM ${table} ORDER BY ${order}`)).rows;
  }
  return out;
}
