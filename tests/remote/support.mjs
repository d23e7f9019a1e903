// What the remote-thread tests run against (docs/design.md, "Across devices"): the package's
// own store handler over a throwaway Postgres, mounted in a real Node HTTP server on its own
// origin (tests/support/store-server.mjs), with CORS for the test page. Users are told apart
// by their bearer token (`authorization: Bearer <user>`); `remote.allow(user, threadId, action)`
// says what the handler's `authorize` lets through (default: everything).

import { bearer, startStoreServer } from '../support/store-server.mjs';

export async function startRemote(handlerOptions = {}) {
  const state = { allow: () => true, lose: null, lost: [], delay: null, requests: [], held: 0 };
  const server = await startStoreServer({
    ...handlerOptions,
    authorize: (request, { threadId, action }) => {
      const user = bearer(request);
      return user && state.allow(user, threadId, action) ? user : null;
    },
    // `remote.loseAnswer(pred)`: the next request matching `pred(method, path)` is handled in
    // full (its transaction commits), then its connection is cut before the answer is
    // written, as when the handler dies between commit and response.
    // `remote.delayAnswer(pred, ms)`: the next request matching `pred(method, path, user)` is
    // handled in full, and its answer ends `ms` later (a slow network back to the device);
    // `remote.held` counts the answers held so far.
    // `remote.requests`: every request, `{ method, path, user, answered }` (answered: its
    // answer was written whole), for a test to wait on rather than sleep.
    wrap: (listener) => (req, res) => {
      const user = /^Bearer (.+)$/.exec(req.headers.authorization ?? '')?.[1];
      const entry = { method: req.method, path: req.url, user, answered: false };
      state.requests.push(entry);
      res.on('finish', () => { entry.answered = true; });
      if (state.delay && state.delay.pred(req.method, req.url, user)) {
        const { ms } = state.delay;
        state.delay = null;
        // The answer starts at once (its head and first byte), and the rest is held for `ms`:
        // the device waits for the whole of it, and may send other requests meanwhile (a
        // browser holds a second read of the same URL back only until the first's head came).
        const held = [];
        let sent = false;
        const write = res.write.bind(res);
        const end = res.end.bind(res);
        const hold = (f) => (...a) => {
          if (sent) return f(...a);
          if (!held.length) {
            state.held++;
            setTimeout(() => {
              sent = true;
              for (const [g, b] of held) g(...b);
            }, ms);
            if (f === write && a[0] instanceof Uint8Array && a[0].length > 1) {
              write(a[0].subarray(0, 1));
              a[0] = a[0].subarray(1);
            }
          }
          held.push([f, a]);
          return f === end ? res : true;
        };
        res.write = hold(write);
        res.end = hold(end);
      }
      if (state.lose && state.lose(req.method, req.url)) {
        state.lose = null;
        state.lost.push(`${req.method} ${req.url}`);
        res.writeHead = () => { req.socket.destroy(); return res; };
        res.write = () => true;
        res.end = () => res;
      }
      return listener(req, res);
    },
  });
  return {
    url: server.url,
    pool: server.pool,
    postgres: server.postgres,
    set allow(f) { state.allow = f; },
    loseAnswer(pred) { state.lose = pred; },
    delayAnswer(pred, ms) { state.delay = { pred, ms }; },
    get lost() { return state.lost; },
    get requests() { return state.requests; },
    get held() { return state.held; },
    stop: () => server.close(),
  };
}
