// A throwaway high-availability Postgres for tests: pg_auto_failover (Debian's
// postgresql-NN-auto-failover and pg-auto-failover-cli, scripts/setup-postgres.sh), a monitor
// and two data nodes on 127.0.0.1, a primary with a synchronous standby
// (`synchronous_standby_names = 'ANY 1 (...)'`, which pg_auto_failover sets once the standby is
// caught up). Each node runs under its own `pg_autoctl run` (the keeper, which supervises its
// Postgres), as the `postgres` user the package creates (Postgres refuses root), in its own
// process group: `kill(node)` SIGKILLs the keeper, the postmaster and every backend at once,
// which is a machine dying as far as the formation can tell.
//
//   const f = await startFormation();
//   f.uri                      // postgres://127.0.0.1:p1,127.0.0.1:p2/postgres?target_session_attrs=read-write
//   const p = await f.primary();   // { name, port, ... }
//   f.kill(p.name);            // the primary dies; the monitor promotes the standby
//   await f.waitPrimary((n) => n.name !== p.name);
//   await f.start(p.name);     // it comes back, rewinds, and follows as the standby
//   await f.waitHealthy();
//   await f.stop();
//
// The monitor's health checks are tightened for tests (checked every second, a node is
// unhealthy after 3 s, a primary that cannot be reached is taken as demoted after 5 s): the
// defaults (5 s, 20 s, 30 s) make a failover take about a minute.

import { spawn, spawnSync } from "node:child_process";
import { closeSync, openSync, rmSync } from "node:fs";
import { join } from "node:path";
import { binDir, forget, freePort, postgresTempDir, removeAtExit } from "./postgres.mjs";

const asRoot = process.getuid?.() === 0;

/** Tightened health checks (see above), in ms. */
const MONITOR_SETTINGS = {
  "pgautofailover.health_check_period": 1000,
  "pgautofailover.health_check_timeout": 1000,
  "pgautofailover.health_check_max_retries": 1,
  "pgautofailover.health_check_retry_delay": 500,
  "pgautofailover.node_considered_unhealthy_timeout": 3000,
  "pgautofailover.primary_demote_timeout": 5000,
};

const WRITABLE = new Set(["primary", "wait_primary", "single"]);

const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

export function haveAutoFailover() {
  return spawnSync("pg_autoctl", ["--version"]).status === 0;
}

export async function startFormation() {
  if (!haveAutoFailover()) {
    throw new Error("pg_auto_failover is not installed: run scripts/setup-postgres.sh (make setup)");
  }
  const dir = postgresTempDir("gatehouse-ha-");
  const BIN = binDir();
  // pg_autoctl keeps its state and config under XDG directories keyed by PGDATA: this
  // formation's own, so nothing is shared with another test's (or the machine's).
  const env = [
    `XDG_CONFIG_HOME=${dir}/config`, `XDG_DATA_HOME=${dir}/data`, `XDG_RUNTIME_DIR=${dir}/run`,
    `PG_CONFIG=${BIN}/pg_config`, `PATH=${BIN}:/usr/bin:/bin`, `HOME=${dir}`,
  ];
  const asPostgres = (args) => asRoot
    ? ["runuser", ["-u", "postgres", "--", "env", ...env, ...args]]
    : ["env", [...env, ...args]];
  const run = (args) => {
    const [cmd, argv] = asPostgres(args);
    const r = spawnSync(cmd, argv, { encoding: "utf8" });
    if (r.status !== 0) throw new Error(`${args.join(" ")} failed (${r.status}): ${r.stderr || r.stdout}`);
    return r.stdout;
  };
  run(["mkdir", "-p", `${dir}/run`]);

  const monitorPort = await freePort();
  const monitorUri = `postgres://autoctl_node@127.0.0.1:${monitorPort}/pg_auto_failover?sslmode=disable`;
  const nodes = new Map(); // name → { name, port, pgdata, child }
  let stopped = false;

  /** Starts `pg_autoctl` in its own process group, logging to the formation's directory. */
  const launch = (name, args) => {
    const log = openSync(join(dir, `${name}.log`), "a");
    const [cmd, argv] = asPostgres(["pg_autoctl", ...args]);
    const child = spawn(cmd, argv, { detached: true, stdio: ["ignore", log, log] });
    closeSync(log);
    child.on("error", () => {});
    child.unref();
    return child;
  };

  const f = {
    dir,
    monitorUri,
    uri: "",
    /** The nodes as the monitor sees them: `{ name, port, state, goal, health, lsn }`. */
    state() {
      const out = run(["pg_autoctl", "show", "state", "--pgdata", join(dir, "monitor"), "--json"]);
      return JSON.parse(out).map((n) => ({
        name: n.nodename, port: n.nodeport, state: n.current_group_state,
        goal: n.assigned_group_state, health: n.health, lsn: n.reported_lsn,
      }));
    },
    /** Waits until `pred(state)` holds; resolves to that state. */
    async waitFor(pred, what, ms = 90_000) {
      const deadline = Date.now() + ms;
      let last = null;
      for (;;) {
        try {
          last = f.state();
          if (pred(last)) return last;
        } catch (e) {
          last = e.message;
        }
        if (Date.now() > deadline) {
          throw new Error(`formation: timed out waiting for ${what}; last ${JSON.stringify(last)}`);
        }
        await sleep(200);
      }
    },
    /** Both nodes up, one primary and one secondary, as assigned: a kill can fail over now. */
    waitHealthy(ms) {
      return f.waitFor((s) => s.length === 2 &&
        s.some((n) => n.state === "primary" && n.goal === "primary") &&
        s.some((n) => n.state === "secondary" && n.goal === "secondary"), "primary + secondary", ms);
    },
    /** A node reports it is the writable primary: `primary`, or `wait_primary` while its
     *  standby is away, or `single` before there is one. */
    async waitPrimary(pred = () => true, ms) {
      const writable = (n) => pred(n) && WRITABLE.has(n.state) && n.state === n.goal;
      return (await f.waitFor((s) => s.some(writable), "a primary", ms)).find(writable);
    },
    async primary() {
      return f.waitPrimary();
    },
    /** SIGKILL the node's keeper, postmaster and backends (its process group). */
    kill(name) {
      const node = nodes.get(name);
      if (!node?.child) return;
      try {
        process.kill(-node.child.pid, "SIGKILL");
      } catch {
        // already gone
      }
      node.child = null;
    },
    /** Starts a killed node's keeper again: it rejoins (rewinding if it must). */
    start(name) {
      const node = nodes.get(name);
      if (node.child) return;
      node.child = launch(name, ["run", "--pgdata", node.pgdata]);
    },
    async stop() {
      f.removeNow();
    },
    removeNow() {
      if (stopped) return;
      stopped = true;
      forget(f);
      for (const node of nodes.values()) {
        if (node.child) {
          try {
            process.kill(-node.child.pid, "SIGKILL");
          } catch {
            // gone
          }
        }
      }
      rmSync(dir, { recursive: true, force: true });
    },
  };
  removeAtExit(f);

  run(["pg_autoctl", "create", "monitor", "--pgdata", join(dir, "monitor"), "--pgport",
    String(monitorPort), "--hostname", "127.0.0.1", "--auth", "trust", "--no-ssl"]);
  nodes.set("monitor", { name: "monitor", port: monitorPort, pgdata: join(dir, "monitor"), child: null });
  f.start("monitor");
  // The monitor's settings, as its superuser over its socket (Debian's default directory).
  const settings = Object.entries(MONITOR_SETTINGS)
    .flatMap(([k, v]) => ["-c", `ALTER SYSTEM SET ${k} = ${v}`]);
  for (let i = 0; ; i++) {
    try {
      run(["psql", "-X", "-q", "-h", "/var/run/postgresql", "-p", String(monitorPort), "-d", "postgres",
        ...settings, "-c", "SELECT pg_reload_conf()"]);
      break;
    } catch (e) {
      if (i > 100) throw e;
      await sleep(100);
    }
  }
  const ports = [];
  for (const name of ["node1", "node2"]) {
    const port = await freePort();
    ports.push(port);
    const pgdata = join(dir, name);
    nodes.set(name, { name, port, pgdata, child: null });
    nodes.get(name).child = launch(name, ["create", "postgres", "--pgdata", pgdata, "--pgport",
      String(port), "--hostname", "127.0.0.1", "--name", name, "--auth", "trust", "--no-ssl",
      "--monitor", monitorUri, "--run"]);
    // One at a time: the first becomes the primary, the second its standby.
    if (name === "node1") await f.waitPrimary((n) => n.name === "node1");
  }
  await f.waitHealthy();
  f.uri = `postgres://postgres@${ports.map((p) => `127.0.0.1:${p}`).join(",")}/postgres` +
    "?target_session_attrs=read-write";
  return f;
}
