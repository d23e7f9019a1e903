// gatehouse-agent/server: the store handler an app mounts in its backend (docs/design.md,
// "Across devices"; the protocol is src/store/wire.rs).

/**
 * What `authorize` is asked: `decide` for decisions (sent as intents, applied by the handler),
 * `write` for any other change, `list` for the thread list and a change feed's connection.
 */
export type StoreAction = "read" | "write" | "decide" | "list" | "delete" | "subscribe" | "grant";

/** One decision of a `decide` request, as `authorize` gets it. */
export interface DecisionIntent {
  callId: string;
  /** The call's tool, as the stored thread names it (null: no such call). */
  tool: string | null;
  decision: "approve" | "reject" | "edit";
}

/** Anything with node-postgres's `query()` and `connect()`, e.g. a `pg.Pool`. */
export interface StorePool {
  query(text: string, values?: unknown[]): Promise<{ rows: any[] }>;
  connect(): Promise<{
    query(text: string, values?: unknown[]): Promise<{ rows: any[] }>;
    release(destroy?: boolean | Error): void;
    on?(event: string, listener: (...args: any[]) => void): unknown;
  }>;
}

export interface StoreHandlerOptions {
  pool: StorePool;
  /** Where the handler is mounted (default "/"). */
  basePath?: string;
  /**
   * The user's identity (it becomes the audit trail's `decidedBy`), or null to refuse (403).
   * `threadId` is null for `list`. `grant` is asked to make or revoke a remembered grant,
   * with its `tool` and `scope` (`threadId` only for a thread grant): decide there who may
   * make one for everyone (`scope: "app"`).
   */
  authorize(
    request: Request,
    what: { threadId: string | null; action: StoreAction; decisions?: DecisionIntent[];
      tool?: string | null; scope?: "thread" | "user" | "app" | null },
  ): string | null | Promise<string | null>;
  /** Larger bodies are refused with 413 (default 1 MiB). */
  maxBodyBytes?: number;
  /** A write whose thread record would be larger is refused with 413 (default 512 KiB). */
  maxRecordBytes?: number;
  /** A write with a larger message is refused with 413 (default 256 KiB). */
  maxMessageBytes?: number;
  /** Change feeds one identity may hold open at once; more get 429 (default 16). */
  maxFeedsPerIdentity?: number;
  /** A feed asks `authorize` about a thread at most this often (default 5000 ms). */
  feedAuthorizeMs?: number;
  /**
   * The ids of threads shared with this user that it did not create (an approver's threads):
   * listed beside its own, each still asked of `authorize`. Without it, a list holds the
   * threads the user created (and those created before the handler kept owners, schema 3).
   */
  sharedWith?: (identity: string, request: Request) => string[] | Promise<string[]>;
  /** The handler's clock, epoch ms (default `Date.now()`): leases are judged by it. */
  now?: (request: Request) => number;
  /**
   * Answers CORS preflights and adds the allow headers for these origins; a request from an
   * origin not listed is refused (403 `origin_refused`). `"*"` with `credentials` throws.
   */
  cors?: { origin: string | string[]; headers?: string[]; credentials?: boolean };
  /** LISTEN/NOTIFY wakes the change stream (default true); false: it polls the change table. */
  notify?: boolean;
  /** How often the change stream polls without NOTIFY (default 1000 ms). */
  pollMs?: number;
  /** How often an idle SSE stream sends a comment (default 15000 ms). */
  pingMs?: number;
  /**
   * The core's wasm, where the file beside this module can be neither read nor fetched (a
   * Worker: `import wasm from "gatehouse-agent/server/core_bg.wasm"`).
   */
  wasm?: WebAssembly.Module | BufferSource;
  /**
   * Signs a receipt for every call approved or edited on a thread (README "Approvals your
   * backend can verify"): an Ed25519 private key, as a `CryptoKey` or its JWK. Without it no
   * receipts are made.
   */
  signingKey?: CryptoKey | JsonWebKey;
  /** How long a receipt may be spent after its decision (default 24 h). */
  receiptTtlMs?: number;
  /**
   * Approver rules, per tool (README "Approver rules"): who may decide its calls, how many
   * distinct approvers it takes, and whether the requester (who wrote the message that led
   * to the call) may approve it (default: no where `quorum` > 1, yes otherwise). A function
   * alone is `{ may }`. A decision from someone who may not make it is refused with 403
   * `not_an_approver` or `self_approval`.
   */
  approvers?: Record<string, ApproverRule["may"] | ApproverRule>;
  /**
   * Called once for each gated call, after the commit that made it pending (README "Approval
   * requests that reach the approver"), from an outbox in Postgres written in that commit: a
   * crash loses nothing, a throw is retried with backoff, and no two handler instances call it
   * for one request. Only a handler that died during the call itself leads to a second call,
   * after `approvalRequests.claimMs`, with the same `requestId` and the next `attempt`.
   */
  onApprovalRequested?: (request: ApprovalRequest) => unknown | Promise<unknown>;
  /** Who the requests go to, reminders and escalation (needs `onApprovalRequested` or `webPush`). */
  approvalRequests?: ApprovalRequestOptions;
  /**
   * The absolute URL the handler is mounted at, as browsers reach it
   * ("https://app.example/api/gatehouse"): decision links and the push actions point there.
   */
  publicUrl?: string;
  /** How long a decision link works by default (7 days). */
  linkTtlMs?: number;
  /** Web Push (VAPID) to the approvers' subscribed browsers; needs the `web-push` package. */
  webPush?: WebPushOptions;
}

/** A call waiting for a decision, as the approval requests describe it. */
export interface RequestedCall {
  threadId: string;
  callId: string;
  tool: string;
  description: string | null;
  inputs: unknown;
  /** The `__id` of the message that holds the call. */
  message: string;
  /** The identity that wrote the user message that led to the call. */
  requester: string | null;
  /** Epoch ms of the commit that made it pending. */
  requestedAt: number;
}

export interface ApprovalRequest {
  /** Stable across retries of one delivery: a hook that sends mail can drop a repeat. */
  requestId: string;
  /** 1 for the first try. */
  attempt: number;
  reason: "request" | "reminder" | "escalation";
  threadId: string;
  call: RequestedCall;
  requester: string | null;
  /** `approvalRequests.to(call)`, or `escalateTo(call)` for an escalation. */
  approvers: string[];
  /** A signed single-use decision link for one approver (needs `publicUrl`). */
  decideUrl(approver: string, options?: { expiresIn?: number }): Promise<string>;
}

export interface ApprovalRequestOptions {
  /** The identities a call's request goes to (Web Push sends to their subscriptions). */
  to?: (call: RequestedCall) => string[] | Promise<string[]>;
  /** Delays after the first delivery at which the request is repeated, until decided. */
  remind?: number[];
  /** Who an undecided call is escalated to, `escalateAfterMs` (default 1 h) after delivery. */
  escalateTo?: (call: RequestedCall) => string[] | Promise<string[]>;
  escalateAfterMs?: number;
  /**
   * "delivery": a call's `approvalTimeout` counts from its first delivery, not from its
   * request (its deadline moves by the delay, once, and every device re-arms). Default
   * "request".
   */
  expireFrom?: "request" | "delivery";
  /** How often a handler looks for requests it did not write (default 5000 ms). */
  pollMs?: number;
  /** How long a delivery is one instance's before another may retry it (default 60000 ms). */
  claimMs?: number;
  /** The first retry's delay (default 1000 ms), doubling up to `maxRetryMs` (default 5 min). */
  retryMs?: number;
  maxRetryMs?: number;
}

export interface WebPushOptions {
  /** VAPID subject: "mailto:ops@app.example" or an https URL. */
  subject: string;
  /** VAPID keys, base64url (`npx web-push generate-vapid-keys`). */
  publicKey: string;
  privateKey: string;
  /** How long the push service keeps an undelivered push (default 86400 s). */
  ttlSeconds?: number;
  /** Where a tap on the notification opens (default: the service worker's scope). */
  openUrl?: (call: RequestedCall) => string;
  /** Accept subscription endpoints on this machine (local development and tests only). */
  allowLoopback?: boolean;
}

/** What an approver rule is asked about a call. */
export interface ApproverCall {
  threadId: string;
  callId: string;
  tool: string;
  inputs: unknown;
  decision: "approve" | "reject" | "edit";
  /** The identity that wrote the user message that led to the call. */
  requester: string | null;
}

export interface ApproverRule {
  may?: (identity: string, call: ApproverCall) => boolean | Promise<boolean>;
  /** Distinct approvals it takes (1 to 16, default 1); an edit restarts the count. */
  quorum?: number;
  selfApproval?: boolean;
}

/**
 * What the handler signed when a call was approved or edited: `GET
 * {basePath}/threads/{id}/receipts/{callId}` returns the tail call's to whoever may write the
 * thread (the device that runs it), not to a user who may only read or decide.
 */
export interface ApprovalReceipt {
  v: 1;
  /** Unique: `consumeApproval` spends it once. */
  id: string;
  thread: string;
  callId: string;
  tool: string;
  /** Hex SHA-256 of the RFC 8785 canonical JSON of the inputs that will run. */
  inputsSha256: string;
  decision: "approve" | "edit";
  /** The identity `authorize` returned for the decision. */
  decidedBy: string | null;
  approvals: { by: string | null; at: number }[];
  /** Epoch ms of the decision. */
  at: number;
  /** Epoch ms after which `verifyApproval` refuses it. */
  expiresAt: number | null;
  alg: "Ed25519";
  /** base64url Ed25519 signature over the canonical JSON of the other fields. */
  sig: string;
}

/** Why `verifyApproval` or `consumeApproval` refused a receipt (`GatehouseError.code`). */
export type ReceiptErrorCode =
  | "receipt_malformed" | "receipt_signature" | "receipt_inputs" | "receipt_tool"
  | "receipt_thread" | "receipt_expired" | "receipt_used" | "receipt_unknown";

/**
 * Checks a receipt for these exact inputs against the handler's public key (and, with
 * `expect`, the tool and thread it must be for). Resolves to the receipt; rejects with a
 * `GatehouseError` whose code is a `ReceiptErrorCode`. It does not spend it.
 */
export declare function verifyApproval(
  receipt: unknown,
  inputs: unknown,
  publicKey: CryptoKey | JsonWebKey,
  expect?: { tool?: string; thread?: string; now?: number },
): Promise<ApprovalReceipt>;

/**
 * Spends a receipt once, in one statement on the handler's tables: a second use, or one racing
 * the first, rejects with `receipt_used`; an id never issued with `receipt_unknown`.
 */
export declare function consumeApproval(
  db: { query(text: string, values?: unknown[]): Promise<{ rows: any[] }> },
  receiptId: string,
): Promise<void>;

export interface StoreHandler {
  (request: Request): Promise<Response>;
  /** Creates or migrates the tables (the first request does it too). */
  migrate(): Promise<void>;
  /** Ends the change streams and the LISTEN connection. */
  close(): Promise<void>;
  /**
   * Deletes change notices older than `olderThanMs` (default an hour; the handler also does it
   * every 1000 writes). Resolves to how many were deleted.
   */
  pruneChanges(olderThanMs?: number): Promise<number>;
  /**
   * A signed single-use URL for `approver` to decide a pending call (needs `publicUrl`): a GET
   * shows the call and a form, only its POST decides, as `approver`, under the approver rules.
   * Rejects with `not_pending` when the call does not await approval.
   */
  decisionLink(call: { threadId: string; callId: string }, approver: string,
    options?: { expiresIn?: number }): Promise<string>;
  /** Delivers the approval requests due now (the handler does it by itself too). */
  deliverRequests(): Promise<void>;
}

export declare function createStoreHandler(options: StoreHandlerOptions): StoreHandler;

/** The handler as a Node `http` request listener. */
export declare function toNodeListener(
  handle: (request: Request) => Promise<Response>,
): (req: any, res: any) => Promise<void>;

/**
 * A node-postgres `Pool` whose connections go to the primary of a high-availability Postgres:
 * `connectionString` may name several hosts, as libpq's multi-host form does
 * (`postgres://h1:5432,h2:5432/app?target_session_attrs=read-write`, what pg_auto_failover's
 * `pg_autoctl show uri` prints). A new connection goes to the host that last took writes, or,
 * after it failed, to the next; one whose server is in recovery is closed and the next host
 * tried. Pass the app's `pg` module. `options` are the Pool's (`max`, timeouts, `onConnect`).
 */
export declare function primaryPool(
  pg: { Pool: new (options?: any) => any; Client: new (options?: any) => any },
  connectionString: string,
  options?: Record<string, unknown>,
): PrimaryPool;

/** The `pg.Pool` primaryPool makes (what `createStoreHandler({ pool })` takes). */
export interface PrimaryPool extends StorePool {
  end(): Promise<void>;
  on(event: string, listener: (...args: any[]) => void): unknown;
  /** Where new connections go now (credentials left out), and how often that changed. */
  primary(): { host: string | null; switches: number };
}

/** The version of the tables this release creates. */
export declare const STORE_SCHEMA_VERSION: number;

export declare class GatehouseError extends Error {
  readonly name: "GatehouseError";
  readonly code: string;
  readonly retryable: boolean;
}
