// @ts-check
// primaryPool: a node-postgres pool that follows the primary of a high-availability Postgres
// (docs/design.md, "Failover"). node-postgres takes one host; the HA managers' routing is
// libpq's multi-host connection string (`postgres://h1:5432,h2:5432/db?target_session_attrs=
// read-write`, what `pg_autoctl show uri` prints, and Patroni's docs give), which libpq reads
// by trying each host until one takes writes. This does the same for the pool:
//
// - each new connection goes to the host that last took writes, or, once that failed, to the
//   next one in turn;
// - a connection is kept only if its server is not in recovery (`pg_is_in_recovery()`, one
//   query per new connection; pooled connections are reused as usual);
// - a connection that fails, or whose server says it is read-only (SQLSTATE 25006, a demoted
//   primary) sends the next connection to the next host.
//
// A request that meets the failover gets the handler's `storage` answer (500: "retry it with
// the same commit id"), which the browser's remote store retries as it does when the handler
// cannot be reached; the commit id resolves a commit whose answer was lost ("Why a retried
// commit is safe"). The pool's own `connect` tries every host once before it gives up.

import { GatehouseError } from "./errors.js";

/** Connection failures and refusals that mean "not the primary (now)". */
const ROUTING_CODES = new Set([
  "ECONNREFUSED", "ECONNRESET", "EHOSTUNREACH", "ETIMEDOUT", "EPIPE",
  "25006", // read_only_sql_transaction: a standby, or a primary being demoted
  "57P01", // admin_shutdown
  "57P02", // crash_shutdown
  "57P03", // cannot_connect_now: starting up, or in recovery
  "08006", "08001", "08004", // connection failure, cannot connect, rejected
]);

/** Whether `e` says the server is gone or is not (or no longer) the primary. */
export function isRoutingError(e) {
  if (!e) return false;
  if (ROUTING_CODES.has(e.code)) return true;
  return /Connection terminated|not the primary|ECONNREFUSED/.test(String(e.message));
}

/**
 * The hosts of a connection string, libpq's multi-host form included; each as its own
 * single-host connection string (the rest of the string kept).
 * @param {string} uri
 * @returns {string[]}
 */
export function hostsOf(uri) {
  const m = /^(postgres(?:ql)?:\/\/)(?:([^@/?#]*)@)?([^/?#]*)(.*)$/.exec(uri);
  if (!m) throw new GatehouseError("invalid_config", "primaryPool: not a postgres:// connection string");
  const [, scheme, userinfo, hosts, rest] = m;
  const list = hosts.split(",").map((h) => h.trim()).filter(Boolean);
  if (list.length === 0) {
    throw new GatehouseError("invalid_config", "primaryPool: the connection string names no host");
  }
  // target_session_attrs is libpq's; here it is what this pool does (node-postgres does not
  // know it).
  const tail = rest.replace(/([?&])target_session_attrs=[^&#]*&?/, "$1").replace(/[?&]$/, "");
  return list.map((h) => `${scheme}${userinfo != null ? `${userinfo}@` : ""}${h}${tail}`);
}

/**
 * A pool (node-postgres's `Pool`, from the app's `pg`) that sends its connections to whichever
 * host of `connectionString` is the primary.
 * @param {{ Pool: any, Client: any }} pg the app's `pg` module
 * @param {string} connectionString one host, or several (libpq's `h1:p1,h2:p2`)
 * @param {Record<string, unknown>} [options] the Pool's other options (`max`, timeouts…)
 */
export function primaryPool(pg, connectionString, options = {}) {
  if (!pg || typeof pg.Pool !== "function" || typeof pg.Client !== "function") {
    throw new GatehouseError("invalid_config", "primaryPool: pass the `pg` module (import pg from \"pg\")");
  }
  const hosts = hostsOf(connectionString);
  // known: the host the last new connection found primary (null: look for it, from next);
  // last: the primary before, to count the changes.
  const route = { known: /** @type {number | null} */ (null), next: 0, last: /** @type {number | null} */ (null), switches: 0 };
  /** The host the next connection tries. */
  const pick = () => route.known ?? route.next;
  /** The connection to host `i` failed, or was not the primary: the next goes elsewhere. */
  const away = (i) => {
    if (route.known === i || route.known === null) {
      route.known = null;
      route.next = (i + 1) % hosts.length;
    }
  };

  class PrimaryClient extends pg.Client {
    /** @param {any} config */
    constructor(config) {
      const i = pick();
      super({ ...config, connectionString: hosts[i] });
      this.gatehouseHost = i;
      // A query refused as read-only, or a connection lost under it: the next connection
      // looks for the primary.
      this.on("error", () => away(i));
    }

    /** @param {any} [callback] */
    connect(callback) {
      const i = this.gatehouseHost;
      if (typeof callback === "function") {
        return super.connect((/** @type {any} */ err) => {
          if (err) away(i);
          callback(err);
        });
      }
      return super.connect().catch((/** @type {any} */ e) => {
        away(i);
        throw e;
      });
    }

    /** @param {any[]} args */
    query(...args) {
      // The pool's own query() passes a callback; the handler's transactions await a promise.
      const last = args.length - 1;
      if (typeof args[last] === "function") {
        const callback = args[last];
        args[last] = (/** @type {any} */ err, /** @type {any} */ res) => {
          if (err && isRoutingError(err)) away(this.gatehouseHost);
          callback(err, res);
        };
        return super.query(...args);
      }
      const out = super.query(...args);
      if (out && typeof out.then === "function") {
        out.then(undefined, (/** @type {any} */ e) => {
          if (isRoutingError(e)) away(this.gatehouseHost);
        });
      }
      return out;
    }
  }

  const userOnConnect = /** @type {((c: any) => unknown) | undefined} */ (options.onConnect);
  const pool = new pg.Pool({
    ...options,
    Client: PrimaryClient,
    onConnect: async (/** @type {any} */ client) => {
      const r = await client.query("SELECT pg_is_in_recovery() AS standby");
      if (r.rows[0].standby) {
        away(client.gatehouseHost);
        const e = new Error(`${hosts[client.gatehouseHost].replace(/\/\/[^@/]*@/, "//")} is not the primary`);
        Object.assign(e, { code: "25006" });
        throw e;
      }
      route.known = client.gatehouseHost;
      if (route.last !== null && route.last !== route.known) route.switches++;
      route.last = route.known;
      if (userOnConnect) await userOnConnect(client);
    },
  });
  // Every host is tried once before a checkout fails.
  const connect = pool.connect.bind(pool);
  /** @param {number} left */
  const attempt = (left) => connect().catch((/** @type {any} */ e) => {
    if (left > 1 && isRoutingError(e)) return attempt(left - 1);
    throw e;
  });
  pool.connect = (/** @type {any} */ cb) => {
    const p = attempt(hosts.length);
    if (typeof cb !== "function") return p;
    p.then((c) => cb(undefined, c, c.release), (e) => cb(e));
    return undefined;
  };
  /** Where connections go now, and how often the primary changed (for logs and tests). */
  pool.primary = () => ({ host: route.known === null ? null : hosts[route.known].replace(/\/\/[^@/]*@/, "//"), switches: route.switches });
  return pool;
}
