// A throwaway PostgreSQL cluster for tests (Debian's `postgresql`, scripts/setup-postgres.sh):
// initdb in a fresh temporary directory, trust auth, a unix socket in that directory and TCP
// on a free port of 127.0.0.1. Postgres refuses to run as root and the tests run as root, so
// the cluster belongs to the `postgres` user the package creates (`runuser`); as any other
// user it runs as that user. Stopped and removed when the process exits, also after a failed
// test or on SIGINT/SIGTERM (a SIGKILLed test process leaves it behind: nothing can run then).
//
//   const pg = await startPostgres();
//   new pg.Pool({ connectionString: pg.connectionString });
//   pg.kill();            // SIGKILL the postmaster and its backends: a crash mid-transaction
//   await pg.restart();   // the same cluster and port, after crash recovery
//   await pg.stop();
//
// fsync is off: a killed process loses nothing the kernel already has (only a machine crash
// would), so the crash tests hold with it off, and everything runs faster.

import { spawnSync, execFileSync } from "node:child_process";
import { chownSync, existsSync, mkdtempSync, readFileSync, readdirSync, rmSync } from "node:fs";
import { createServer } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";

export function binDir() {
  const root = "/usr/lib/postgresql";
  const versions = existsSync(root)
    ? readdirSync(root).filter((v) => existsSync(join(root, v, "bin", "initdb")))
    : [];
  if (versions.length === 0) {
    throw new Error("PostgreSQL is not installed: run scripts/setup-postgres.sh (make setup)");
  }
  versions.sort((a, b) => Number(b) - Number(a));
  return join(root, versions[0], "bin");
}

export async function freePort() {
  return new Promise((resolve, reject) => {
    const s = createServer();
    s.once("error", reject);
    s.listen(0, "127.0.0.1", () => {
      const { port } = s.address();
      s.close(() => resolve(port));
    });
  });
}

const asRoot = process.getuid?.() === 0;
const user = asRoot ? "postgres" : execFileSync("id", ["-un"]).toString().trim();

function run(bin, args, { check = true } = {}) {
  const [cmd, argv] = asRoot ? ["runuser", ["-u", "postgres", "--", bin, ...args]] : [bin, args];
  const r = spawnSync(cmd, argv, { encoding: "utf8" });
  if (check && r.status !== 0) {
    throw new Error(`${bin} ${args.join(" ")} failed (${r.status}): ${r.stderr || r.stdout}`);
  }
  return r;
}

/** The pids of `pid`'s children (Linux /proc). */
function childrenOf(pid) {
  const kids = [];
  for (const entry of readdirSync("/proc")) {
    if (!/^\d+$/.test(entry)) continue;
    try {
      const stat = readFileSync(`/proc/${entry}/stat`, "utf8");
      // pid (comm) state ppid ...: comm may hold spaces, so split after its ')'.
      const ppid = Number(stat.slice(stat.lastIndexOf(")") + 2).split(" ")[1]);
      if (ppid === pid) kids.push(Number(entry));
    } catch {
      // the process ended meanwhile
    }
  }
  return kids;
}

const clusters = new Set();
let hooked = false;
function hookExit() {
  if (hooked) return;
  hooked = true;
  const cleanup = () => {
    for (const c of clusters) c.removeNow();
  };
  process.on("exit", cleanup);
  for (const signal of ["SIGINT", "SIGTERM", "SIGHUP"]) {
    process.once(signal, () => {
      cleanup();
      process.exit(128 + ({ SIGINT: 2, SIGTERM: 15, SIGHUP: 1 })[signal]);
    });
  }
}

/**
 * Starts a fresh cluster. Resolves to `{ host, port, user, database, connectionString,
 * socketDir, dataDir, stop(), kill(), restart() }`.
 */
/** A fresh temporary directory the Postgres user owns (that user runs the servers). */
export function postgresTempDir(prefix) {
  const dir = mkdtempSync(join(tmpdir(), prefix));
  if (asRoot) {
    const uid = Number(execFileSync("id", ["-u", "postgres"]).toString());
    const gid = Number(execFileSync("id", ["-g", "postgres"]).toString());
    chownSync(dir, uid, gid);
  }
  return dir;
}

/** `thing.removeNow()` runs when the process exits, also on SIGINT/SIGTERM/SIGHUP, unless
 *  `forget(thing)` was called first. */
export function removeAtExit(thing) {
  clusters.add(thing);
  hookExit();
}

export function forget(thing) {
  clusters.delete(thing);
}

export async function startPostgres() {
  const bin = binDir();
  const dataDir = postgresTempDir("gatehouse-pg-");
  const port = await freePort();
  const database = "postgres";
  const options = [
    `-k ${dataDir}`,
    `-p ${port}`,
    "-c listen_addresses=127.0.0.1",
    "-c fsync=off",
    "-c full_page_writes=off",
    "-c max_connections=200",
  ].join(" ");
  let stopped = false;
  const cluster = {
    host: "127.0.0.1",
    port,
    user,
    database,
    socketDir: dataDir,
    dataDir,
    connectionString: `postgresql://${user}@127.0.0.1:${port}/${database}`,
    /** Whether the postmaster runs (its pid file names a live process). */
    running() {
      const pid = cluster.pid();
      if (!pid) return false;
      try {
        process.kill(pid, 0);
        return true;
      } catch {
        return false;
      }
    },
    pid() {
      try {
        return Number(readFileSync(join(dataDir, "postmaster.pid"), "utf8").split("\n")[0]);
      } catch {
        return null;
      }
    },
    /** SIGKILL the postmaster and every backend: Postgres dies mid-whatever. */
    kill() {
      const pid = cluster.pid();
      if (!pid) return;
      const kids = childrenOf(pid);
      for (const p of [pid, ...kids]) {
        try {
          process.kill(p, "SIGKILL");
        } catch {
          // already gone
        }
      }
      // Wait until they are gone, so a restart finds no backend attached to shared memory.
      const deadline = Date.now() + 10_000;
      while ([pid, ...kids].some((p) => alive(p)) && Date.now() < deadline) sleepSync(20);
    },
    /** Starts the cluster again (after kill() or stop({ keep: true })), same port. */
    async restart() {
      if (cluster.running()) run(`${bin}/pg_ctl`, ["-D", dataDir, "-m", "fast", "-w", "stop"]);
      run(`${bin}/pg_ctl`, ["-D", dataDir, "-o", options, "-l", join(dataDir, "log"), "-w",
        "start"]);
    },
    /** Stops the cluster and removes its directory. */
    async stop() {
      cluster.removeNow();
    },
    removeNow() {
      if (stopped) return;
      stopped = true;
      forget(cluster);
      if (cluster.running()) {
        run(`${bin}/pg_ctl`, ["-D", dataDir, "-m", "immediate", "-w", "stop"], { check: false });
      }
      rmSync(dataDir, { recursive: true, force: true });
    },
  };
  removeAtExit(cluster);
  run(`${bin}/initdb`, ["-D", dataDir, "-U", user, "-A", "trust", "-E", "UTF8", "--locale=C",
    "--no-sync"]);
  run(`${bin}/pg_ctl`, ["-D", dataDir, "-o", options, "-l", join(dataDir, "log"), "-w",
    "start"]);
  return cluster;
}

function alive(pid) {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
}

function sleepSync(ms) {
  Atomics.wait(new Int32Array(new SharedArrayBuffer(4)), 0, 0, ms);
}
