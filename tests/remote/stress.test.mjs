// Stress on one remote thread (tests/remote/stress.mjs): 3 devices × 2 tabs for
// GATEHOUSE_REMOTE_STRESS_SECONDS (default 60), devices going offline and back, and the store
// handler restarted every 8–15 s (Postgres stays): nothing runs twice, nothing is lost.

import { after, before, test } from 'node:test';
import { setup } from '../browser/harness.mjs';
import { startPostgres } from '../support/postgres.mjs';
import { bearer, startStoreServer } from '../support/store-server.mjs';
import { DEVICES, rnd, sleep, stress } from './stress.mjs';

const SECONDS = Number(process.env.GATEHOUSE_REMOTE_STRESS_SECONDS ?? 60);

const h = await setup();
let postgres;
let store;
let port;
const authorize = (request) => bearer(request);
before(async () => {
  postgres = await startPostgres();
  store = await startStoreServer({ postgres, authorize });
  port = new URL(store.url).port;
});
after(async () => {
  await store?.close().catch(() => {});
  await postgres?.stop();
  await h.close();
});

test(`${DEVICES} devices × 2 tabs × ${SECONDS} s on one remote thread, offline flips and handler restarts: nothing runs twice, nothing is lost`,
  { timeout: (SECONDS + 150) * 1000, skip: SECONDS > 0 ? false : 'duration 0' }, async (t) => {
    let restarts = 0;
    await stress(h, t, {
      label: 'remote stress',
      seconds: SECONDS,
      url: () => store.url,
      // The handler restarts on its port (its in-flight requests and change streams are cut).
      disrupt: async (stopped) => {
        while (!stopped()) {
          await sleep(rnd(8_000, 15_000));
          if (stopped()) break;
          await store.close().catch(() => {});
          store = await startStoreServer({ postgres, authorize, port: Number(port) });
          restarts++;
        }
      },
      describe: () => `${restarts} handler restarts`,
      check: () => (restarts === 0 && SECONDS >= 30 ? ['the handler was never restarted'] : []),
    });
  });
