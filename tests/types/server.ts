// gatehouse-agent/server's declarations (pkg/server.d.ts) used as a backend would, under
// `tsc --strict` (make test-types); the @ts-expect-error lines must stay errors.
import {
  createStoreHandler, primaryPool, toNodeListener, type PrimaryPool, type StoreAction,
  type StoreHandler, type StorePool,
} from "../../pkg/server.js";

declare const pool: StorePool;

const handle: StoreHandler = createStoreHandler({
  pool,
  basePath: "/api/gatehouse",
  authorize: async (request: Request, { threadId, action }) => {
    const a: StoreAction = action;
    const user = request.headers.get("authorization");
    return threadId === null || a === "list" ? user : user && `${user}`;
  },
  maxBodyBytes: 1 << 20,
  now: () => Date.now(),
  cors: { origin: ["https://app.example"], credentials: true },
  notify: false,
  pollMs: 500,
});
const answer: Promise<Response> = handle(new Request("https://x/api/gatehouse/threads"));
void answer;
const ready: Promise<void> = handle.migrate();
void ready;
export const listener = toNodeListener(handle);

createStoreHandler({
  pool,
  // @ts-expect-error: authorize answers an identity or null, not a boolean
  authorize: () => true,
});
createStoreHandler({
  pool,
  authorize: () => null,
  // @ts-expect-error: an unknown option
  authorise: () => null,
});
// @ts-expect-error: not an action
export const bad: StoreAction = "admin";

// Approval requests (README "Approval requests that reach the approver").
const reaching = createStoreHandler({
  pool,
  authorize: () => "u",
  publicUrl: "https://app.example/api/gatehouse",
  onApprovalRequested: async ({ requestId, attempt, reason, call, approvers, decideUrl }) => {
    const links: string[] = await Promise.all(approvers.map((a) => decideUrl(a, { expiresIn: 60_000 })));
    const r: "request" | "reminder" | "escalation" = reason;
    return [requestId, attempt, r, call.tool, call.requester, links];
  },
  approvalRequests: { to: (call) => [call.requester ?? "ops"], remind: [60_000], escalateTo: () => ["lead"], escalateAfterMs: 3_600_000 },
  webPush: { subject: "mailto:ops@app.example", publicKey: "BP", privateKey: "x" },
});
export const link: Promise<string> = reaching.decisionLink({ threadId: "t", callId: "c1" }, "bob");
createStoreHandler({
  pool,
  authorize: () => "u",
  // @ts-expect-error: remind is a list of delays
  approvalRequests: { remind: 60_000 },
});

// A pool that follows an HA Postgres's primary is a StorePool.
declare const pgModule: { Pool: new (options?: any) => any; Client: new (options?: any) => any };
const ha: PrimaryPool = primaryPool(pgModule, "postgres://db1:5432,db2:5432/app?target_session_attrs=read-write", { max: 20 });
const where: string | null = ha.primary().host;
void where;
createStoreHandler({ pool: ha, authorize: () => null });
// @ts-expect-error: the app's pg module comes first
primaryPool("postgres://db1/app");
