// What the remote-thread tests run against (docs/design.md, "Across devices"): the package's
// own store handler over a throwaway Postgres, mounted in a real Node HTTP server on its own
// origin (tests/support/store-server.mjs), with CORS for the test page. Users are told apart
// by their bearer token (`authorization: Bearer <user>`); `remote.allow(user, threadId, action)`
// says what the handler's `authorize` lets through (default: everything).

import { bearer, startStoreServer } from '../support/store-server.mjs';

export async function startRemote() {
  const state = { allow: () => true, lose: null, lost: [], delay: null };
  const server = await startStoreServer({
    authorize: (request, { threadId, action }) => {
      const user = bearer(request);
      return user && state.allow(user, threadId, action) ? user : null;
    },
    // `remote.loseAnswer(pred)`: the next request matching `pred(method, path)` is handled in
    // full (its transaction commits), then its connection is cut before the answer is
    // written, as when the handler dies between commit and response.
    // `remote.delayAnswer(pred, ms)`: the next request matching `pred` is handled in full,
    // and its answer sent `ms` later (a slow network back to the device).
    wrap: (listener) => (req, res) => {
      if (state.delay && state.delay.pred(req.method, req.url)) {
        const { ms } = state.delay;
        state.delay = null;
        const end = res.end.bind(res);
        res.end = (...a) => { setTimeout(() => end(...a), ms); return res; };
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
    stop: () => server.close(),
  };
}
