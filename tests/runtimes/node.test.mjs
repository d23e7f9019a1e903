// The store handler in Node, mounted as the README's "mount: node" block says.
import path from "node:path";
import { runtimeSuite } from "./flow.mjs";
import { freePort, here, startApp } from "./harness.mjs";

runtimeSuite("node", {
  app: "node/server.js",
  async start(pg) {
    const port = await freePort();
    const url = `http://127.0.0.1:${port}/api/gatehouse`;
    const app = await startApp(process.execPath, ["server.js"], {
      cwd: path.join(here, "node"),
      env: { DATABASE_URL: pg.connectionString, PORT: String(port) },
      readyUrl: `${url}/threads`,
    });
    return { url, stop: () => app.stop() };
  },
});
