// The store handler in Deno (npm's @deno/linux-x64-glibc): the README's Deno.serve app.
import path from "node:path";
import { runtimeSuite } from "./flow.mjs";
import { binary, freePort, here, startApp } from "./harness.mjs";

runtimeSuite("deno", {
  app: "deno/server.js",
  async start(pg) {
    const port = await freePort();
    const url = `http://127.0.0.1:${port}/api/gatehouse`;
    const app = await startApp(binary("@deno/linux-x64-glibc", "deno"),
      ["run", "--no-lock", "--allow-net", "--allow-env", "--allow-read", "server.js"], {
        cwd: path.join(here, "deno"),
        env: { DATABASE_URL: pg.connectionString, PORT: String(port), DENO_NO_UPDATE_CHECK: "1" },
        readyUrl: `${url}/threads`,
      });
    return { url, stop: () => app.stop() };
  },
});
