// @ts-check
// gatehouse-agent/sw: approval requests by Web Push (docs/design.md, "Approval requests").
//
// In the page:    const reg = await navigator.serviceWorker.register("/sw.js", { type: "module" });
//                 await subscribeToApprovals(reg, { url: "/api/gatehouse" });
// In the worker:  import { installApprovalHandlers } from "gatehouse-agent/sw";
//                 installApprovalHandlers(self);
//
// A push from the store handler shows a notification with the call (its tool, description and
// a summary of its inputs) and Approve and Reject actions. An action decides through the
// handler's decide route, with the worker's cookies: as the signed-in user, whom the app's
// `authorize` checks as for any decision. Tapping the body opens (or focuses) the thread.
// No dependency, no wasm: this file and the error class are all the worker loads.

// The package's one error class (the build names its file, as for gatehouse.js): a refusal is
// `instanceof GatehouseError` in the page, with the handler's code.
import { GatehouseError } from "__ERROR_MODULE__";

const TAG = "gatehouse:";

/**
 * Subscribes this browser to the approval requests of the signed-in user: the handler's VAPID
 * key, the push subscription, and its registration with the handler (`POST {url}/push/subscriptions`).
 * An endpoint another user of this browser had subscribed is replaced by a new one.
 * @param {ServiceWorkerRegistration} registration
 * @param {{ url: string, credentials?: RequestCredentials, headers?: Record<string, string> }} options
 */
export async function subscribeToApprovals(registration, options) {
  const url = baseOf(options);
  const init = { credentials: options.credentials ?? "include", headers: options.headers ?? {} };
  const key = await call(`${url}/push/key`, { ...init, method: "GET" });
  const applicationServerKey = bytesOf(key.publicKey);
  let sub = await registration.pushManager.getSubscription();
  if (sub && !sameKey(sub.options?.applicationServerKey, applicationServerKey)) {
    await sub.unsubscribe();
    sub = null;
  }
  sub ??= await registration.pushManager.subscribe({ userVisibleOnly: true, applicationServerKey });
  const post = () => call(`${url}/push/subscriptions`, {
    ...init, method: "POST", headers: { ...init.headers, "content-type": "application/json" },
    body: JSON.stringify(sub.toJSON()),
  });
  try {
    await post();
  } catch (e) {
    if (e?.code !== "subscription_taken") throw e;
    await sub.unsubscribe();
    sub = await registration.pushManager.subscribe({ userVisibleOnly: true, applicationServerKey });
    await post();
  }
  const endpoint = sub.endpoint;
  return {
    endpoint,
    /** Stops the requests to this browser: the handler forgets it, and the browser too. */
    async unsubscribe() {
      await call(`${url}/push/subscriptions`, {
        ...init, method: "DELETE", headers: { ...init.headers, "content-type": "application/json" },
        body: JSON.stringify({ endpoint }),
      });
      await sub.unsubscribe();
    },
  };
}

/**
 * Installs the push and notificationclick listeners on a service worker's global scope.
 * Pushes that are not Gatehouse's are left to the app's own listeners. By default an action
 * decides with the worker's cookies (`credentials: "include"`); an app that signs requests
 * with a header gives `headers` (asked at each decision, e.g. from a token the worker keeps)
 * and `credentials: "omit"`.
 * @param {import("./sw.js").ApprovalWorkerScope} scope
 * @param {import("./sw.js").ApprovalHandlerOptions} [options]
 */
export function installApprovalHandlers(scope, options = {}) {
  scope.addEventListener("push", (event) => {
    const shown = showApprovalRequest(scope, event);
    if (shown) event.waitUntil(shown);
  });
  scope.addEventListener("notificationclick", (event) => {
    const done = handleApprovalClick(scope, event, options);
    if (done) event.waitUntil(done);
  });
}

/**
 * Shows the notification of a Gatehouse push; null for any other push.
 * @param {import("./sw.js").ApprovalWorkerScope} scope
 * @param {import("./sw.js").ApprovalPushEvent} event
 */
export function showApprovalRequest(scope, event) {
  const data = payloadOf(event.data);
  if (!data) return null;
  const title = data.reason === "reminder" ? `Still waiting: ${data.tool}`
    : data.reason === "escalation" ? `Needs a decision: ${data.tool}` : `Approve ${data.tool}?`;
  // (`actions` and `renotify` are not in TypeScript's NotificationOptions yet.)
  return scope.registration.showNotification(title, /** @type {NotificationOptions} */ (/** @type {unknown} */ ({
    body: [data.description, data.summary].filter(Boolean).join("\n"),
    tag: `${TAG}${data.threadId}:${data.callId}`,
    renotify: data.reason !== "request",
    requireInteraction: true,
    data,
    actions: [{ action: "approve", title: "Approve" }, { action: "reject", title: "Reject" }],
  })));
}

/**
 * Answers a click on a Gatehouse notification: an action decides, the body opens the thread.
 * Null for another notification.
 * @param {import("./sw.js").ApprovalWorkerScope} scope
 * @param {import("./sw.js").ApprovalClickEvent} event
 * @param {import("./sw.js").ApprovalHandlerOptions} [options]
 */
export function handleApprovalClick(scope, event, options = {}) {
  const data = event.notification?.data;
  if (!data || data.type !== "gatehouse.approval") return null;
  // An action's card stays until its decision is answered: closed once decided, replaced (same
  // tag) by the notice that says why not otherwise, so no close is on its way when that notice
  // shows.
  if ((event.action === "approve" || event.action === "reject") && data.decideUrl) {
    return decide(scope, data, event.action, options).then((ok) => {
      if (ok) event.notification.close();
    });
  }
  event.notification.close();
  return open(scope, data);
}

/**
 * @param {import("./sw.js").ApprovalWorkerScope} scope @param {any} data
 * @param {"approve" | "reject"} decision @param {import("./sw.js").ApprovalHandlerOptions} options
 */
async function decide(scope, data, decision, options) {
  const extra = options.headers ? await options.headers(data) : {};
  const r = await fetch(data.decideUrl, {
    method: "POST",
    credentials: options.credentials ?? "include",
    headers: { ...extra, "content-type": "application/json" },
    body: JSON.stringify({ commitId: `push:${crypto.randomUUID()}`, decisions: { [data.callId]: decision } }),
  }).catch(() => null);
  if (r && r.ok) return true;
  // Not decided (signed out, not an approver, already decided, offline): said, and the app
  // opens on the thread on a tap.
  let why = r ? `${r.status}` : "offline";
  try {
    why = (await r.json()).error.message;
  } catch {
    // the status says it
  }
  await scope.registration.showNotification(`Not ${decision === "approve" ? "approved" : "rejected"}: ${data.tool}`, {
    body: why, tag: `${TAG}${data.threadId}:${data.callId}`, data: { ...data, decided: false },
  });
  return false;
}

/** @param {import("./sw.js").ApprovalWorkerScope} scope @param {any} data */
async function open(scope, data) {
  const target = data.openUrl ?? scope.registration.scope;
  const all = await scope.clients.matchAll({ type: "window", includeUncontrolled: true });
  const same = all.find((c) => c.url === target);
  if (same) return same.focus();
  return scope.clients.openWindow(target);
}

/** @param {{ json(): any } | null} d */
function payloadOf(d) {
  try {
    const v = d?.json();
    return v && v.type === "gatehouse.approval" && v.v === 1 ? v : null;
  } catch {
    return null;
  }
}

/** @param {{ url: string }} o */
function baseOf(o) {
  if (!o || typeof o.url !== "string") throw new TypeError("subscribeToApprovals: options.url is the handler's URL");
  return o.url.replace(/\/+$/, "");
}

/** @param {string} url @param {RequestInit} init */
async function call(url, init) {
  const r = await fetch(url, init).catch((e) => {
    throw new GatehouseError("network", `the store handler could not be reached: ${e?.message ?? e}`, true);
  });
  const body = await r.json().catch(() => null);
  if (!r.ok) throw new GatehouseError(body?.error?.code ?? "network", body?.error?.message ?? `HTTP ${r.status}`);
  return body;
}

/** @param {string} b64 */
function bytesOf(b64) {
  const s = atob(b64.replace(/-/g, "+").replace(/_/g, "/"));
  return Uint8Array.from(s, (c) => c.charCodeAt(0));
}

/** @param {ArrayBuffer | null | undefined} a @param {Uint8Array} b */
function sameKey(a, b) {
  if (!a) return false;
  const x = new Uint8Array(a);
  return x.length === b.length && x.every((v, i) => v === b[i]);
}
