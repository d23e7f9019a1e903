// The store handler in a Next.js App Router route handler (app/api/gatehouse/[...path]/
// route.js), served by `next dev` (Turbopack): the route is compiled on its first request.
import path from "node:path";
import { runtimeSuite } from "./flow.mjs";
import { freePort, here, modules, startApp } from "./harness.mjs";

runtimeSuite("next", {
  app: "next/app/api/gatehouse/[...path]/route.js",
  async start(pg) {
    const port = await freePort();
    const url = `http://127.0.0.1:${port}/api/gatehouse`;
    const app = await startApp(process.execPath,
      [path.join(modules, "next/dist/bin/next"), "dev", "--port", String(port), "--hostname", "127.0.0.1"], {
        cwd: path.join(here, "next"),
        env: { DATABASE_URL: pg.connectionString, NEXT_TELEMETRY_DISABLED: "1" },
        readyUrl: `${url}/threads`,
        timeoutMs: 120_000,
      });
    return { url, stop: () => app.stop() };
  },
});
