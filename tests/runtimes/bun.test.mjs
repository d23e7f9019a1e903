// The store handler in Bun (npm's @oven/bun-linux-x64): the README's Bun.serve app.
import path from "node:path";
import { runtimeSuite } from "./flow.mjs";
import { binary, freePort, here, startApp } from "./harness.mjs";

runtimeSuite("bun", {
  app: "bun/server.js",
  async start(pg) {
    const port = await freePort();
    const url = `http://127.0.0.1:${port}/api/gatehouse`;
    const app = await startApp(binary("@oven/bun-linux-x64", "bin/bun"), ["server.js"], {
      cwd: path.join(here, "bun"),
      env: { DATABASE_URL: pg.connectionString, PORT: String(port) },
      readyUrl: `${url}/threads`,
    });
    return { url, stop: () => app.stop() };
  },
});
