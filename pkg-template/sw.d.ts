// gatehouse-agent/sw: approval requests by Web Push (see sw.js and the README, "Approval
// requests that reach the approver").

/** What `subscribeToApprovals` answers. */
export interface ApprovalSubscription {
  /** The push endpoint the handler now sends this user's approval requests to. */
  readonly endpoint: string;
  /** Deletes the subscription on the handler (only its owner may), then in the browser. */
  unsubscribe(): Promise<void>;
}

export interface SubscribeOptions {
  /** The store handler's URL (as for `storage: { kind: "remote", url }`). */
  url: string;
  /** Default "include": the handler's `authorize` sees the user's cookies. */
  credentials?: RequestCredentials;
  /** Extra headers for the subscription requests (e.g. an Authorization header). */
  headers?: Record<string, string>;
}

/**
 * Subscribes this browser to the signed-in user's approval requests. Rejects with a
 * `GatehouseError` whose `code` is the handler's (e.g. "unauthorized",
 * "too_many_subscriptions") or "network" (retryable).
 */
export function subscribeToApprovals(
  registration: ServiceWorkerRegistration,
  options: SubscribeOptions,
): Promise<ApprovalSubscription>;

/** The JSON a Gatehouse push carries (`event.data.json()`). */
export interface ApprovalPush {
  type: "gatehouse.approval";
  v: 1;
  reason: "request" | "reminder" | "escalation";
  threadId: string;
  callId: string;
  tool: string;
  description: string | null;
  /** A short line of the inputs (`key: value, …`, at most 160 characters). */
  summary: string;
  /** The thread's decide route, or null when the handler has no `publicUrl`. */
  decideUrl: string | null;
  /** Where a tap on the notification goes (`webPush.openUrl`), or null: the worker's scope. */
  openUrl: string | null;
}

// What the worker's functions use of its scope and events, structurally: a worker's `self`
// and its PushEvent / NotificationEvent (TypeScript's "webworker" lib) fit, and a page that
// compiles with only "dom" can still import this module's types.

/** The parts of `ServiceWorkerGlobalScope` used here. */
export interface ApprovalWorkerScope {
  readonly registration: ServiceWorkerRegistration;
  readonly clients: {
    matchAll(options?: { type?: "window" | "worker" | "sharedworker" | "all"; includeUncontrolled?: boolean }): Promise<ReadonlyArray<{ url: string; focus?(): Promise<unknown> }>>;
    openWindow(url: string): Promise<unknown>;
  };
  addEventListener(type: "push" | "notificationclick", listener: (event: any) => void): void;
}

/** The parts of `PushEvent` used here. */
export interface ApprovalPushEvent {
  readonly data: { json(): unknown } | null;
  waitUntil(promise: Promise<unknown>): void;
}

/** The parts of `NotificationEvent` used here. */
export interface ApprovalClickEvent {
  readonly notification: Notification;
  readonly action: string;
  waitUntil?(promise: Promise<unknown>): void;
}

export interface ApprovalHandlerOptions {
  /** Headers for the decision request (e.g. an Authorization header), asked at each decision. */
  headers?: (push: ApprovalPush) => Record<string, string> | Promise<Record<string, string>>;
  /** Default "include" (the worker's cookies); "omit" for a handler whose CORS origin is "*". */
  credentials?: RequestCredentials;
}

/** Adds the push and notificationclick listeners to a service worker's scope. */
export function installApprovalHandlers(scope: ApprovalWorkerScope, options?: ApprovalHandlerOptions): void;

/** Shows a Gatehouse push's notification; null for other pushes (for apps with their own listener). */
export function showApprovalRequest(scope: ApprovalWorkerScope, event: ApprovalPushEvent): Promise<void> | null;

/** Decides (an action: the card closes once the decision is answered, or is replaced by a
 *  notice that says why not) or opens the thread (the body); null for other notifications. */
export function handleApprovalClick(scope: ApprovalWorkerScope, event: ApprovalClickEvent,
  options?: ApprovalHandlerOptions): Promise<unknown> | null;
