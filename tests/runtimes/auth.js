// The test apps' `authorize` (what the README's `./auth.js` stands for): the bearer token is
// the user. A user may do anything with the threads whose id starts with "<user>:" and may
// list; "bob" may also read and decide on alice's threads named "alice:shared-…" (an approver).
export function authorize(request, { threadId, action }) {
  const user = /^Bearer (\w+)$/.exec(request.headers.get("authorization") ?? "")?.[1];
  if (!user) return null;
  if (threadId === null || threadId.startsWith(`${user}:`)) return user;
  if (user === "bob" && threadId.startsWith("alice:shared-") &&
      (action === "read" || action === "decide")) {
    return user;
  }
  return null;
}
