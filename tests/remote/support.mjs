// What the remote-thread tests run against (docs/design.md, "Across devices"): the package's
// own store handler over a throwaway Postgres, mounted in a real Node HTTP server on its own
// origin (tests/support/store-server.mjs), with CORS for the test page. Users are told apart
// by their bearer token (`authorization: Bearer <user>`); `remote.allow(user, threadId, action)`
// says what the handler's `authorize` lets through (default: everything).

import { bearer, startStoreServer } from '../support/store-server.mjs';

export async function startRemote() {
  const state = { allow: () => true };
  const server = await startStoreServer({
    authorize: (request, { threadId, action }) => {
      const user = bearer(request);
      return user && state.allow(user, threadId, action) ? user : null;
    },
  });
  return {
    url: server.url,
    pool: server.pool,
    postgres: server.postgres,
    set allow(f) { state.allow = f; },
    stop: () => server.close(),
  };
}
