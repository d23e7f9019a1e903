// Web Push approval requests end to end, in headless Chromium with a real service worker
// (README, "Approval requests that reach the approver"). The store handler pushes with
// `web-push` (VAPID, aes128gcm) to the subscription's endpoint, here a push service on
// loopback that this test plays: it decrypts the push with the subscription's keys, as a
// browser's push service would deliver it, and hands it to the worker through the DevTools
// protocol (ServiceWorker.deliverPushMessage). The worker (gatehouse-agent/sw, from pkg/)
// shows the notification; its Approve action decides through the handler as the signed-in
// user (a cookie here, checked by `authorize`). Asserted: the decision was stored once,
// attributed to that user; a replayed push or a second tap decides nothing more; a user
// signed out, or not allowed, decides nothing and is told.

import assert from 'node:assert/strict';
import crypto from 'node:crypto';
import fs from 'node:fs';
import http from 'node:http';
import path from 'node:path';
import { createRequire } from 'node:module';
import { after, before, test } from 'node:test';
import { execFileSync } from 'node:child_process';
import https from 'node:https';
import os from 'node:os';
import { chromium } from 'playwright-core';
import { ROOT, launchOptions } from '../browser/harness.mjs';
import { startStoreServer } from '../support/store-server.mjs';
import { applyAll, client, fixture, stored } from '../server/util.mjs';

const require = createRequire(import.meta.url);
const webpush = require('web-push');
const ece = require('http_ece');

const [userMessage, gatedCall] = fixture('approved-run.json');

// The app's pages: the page that subscribes, and the worker, which imports the package's.
const PAGE = `<!doctype html><meta charset="utf-8"><title>push</title>
<script type="module">
  import { subscribeToApprovals } from '/pkg/sw.js';
  window.subscribeToApprovals = subscribeToApprovals;
  window.registered = navigator.serviceWorker.register('/sw.js', { type: 'module' })
    .then(() => navigator.serviceWorker.ready);
</script>`;
const WORKER = `import { installApprovalHandlers, handleApprovalClick } from '/pkg/sw.js';
self.pushes = [];
self.addEventListener('push', (e) => self.pushes.push(e.data ? e.data.text().length : -1));
installApprovalHandlers(self);
// What a tap on an action runs, for the test (a notificationclick the test cannot make).
self.tap = async (action) => {
  const shown = await self.registration.getNotifications();
  const n = shown.find((x) => x.data && x.data.type === 'gatehouse.approval' && x.data.decided !== false);
  if (!n) return null;
  const data = n.data;
  await handleApprovalClick(self, { notification: n, action });
  return data;
};
self.shown = async () => (await self.registration.getNotifications()).map((n) => ({ title: n.title, body: n.body, data: n.data, actions: n.actions.map((a) => a.action) }));
self.addEventListener('install', () => self.skipWaiting());
self.addEventListener('activate', (e) => e.waitUntil(self.clients.claim()));
`;

let s;
let browser;
let pushService;
const pushes = [];
const keyAsked = [];
const vapid = webpush.generateVAPIDKeys();

before(async () => {
  // The push service: takes web-push's POSTs (https, a certificate made here that this
  // process trusts), keeps their bodies.
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'gatehouse-push-'));
  execFileSync('openssl', ['req', '-x509', '-newkey', 'ec', '-pkeyopt', 'ec_paramgen_curve:prime256v1',
    '-nodes', '-subj', '/CN=127.0.0.1', '-addext', 'subjectAltName=IP:127.0.0.1', '-days', '1',
    '-keyout', path.join(dir, 'key.pem'), '-out', path.join(dir, 'cert.pem')], { stdio: 'ignore' });
  const cert = fs.readFileSync(path.join(dir, 'cert.pem'));
  const key = fs.readFileSync(path.join(dir, 'key.pem'));
  fs.rmSync(dir, { recursive: true, force: true });
  https.globalAgent.options.ca = cert;
  pushService = https.createServer({ cert, key }, (req, res) => {
    const chunks = [];
    req.on('data', (c) => chunks.push(c));
    req.on('end', () => {
      pushes.push({ path: req.url, headers: req.headers, body: Buffer.concat(chunks) });
      // A subscription its browser dropped: the push service says it is gone.
      res.writeHead(req.url.includes('/gone') ? 410 : 201).end();
    });
  });
  await new Promise((r) => pushService.listen(0, '127.0.0.1', r));
  const port = await new Promise((resolve) => {
    const probe = http.createServer().listen(0, '127.0.0.1', () => {
      const p = probe.address().port;
      probe.close(() => resolve(p));
    });
  });
  const origin = `http://127.0.0.1:${port}`;
  s = await startStoreServer({
    port,
    publicUrl: `${origin}/api/gatehouse`,
    // Signed in by a cookie, as a same-origin app would be: the worker's requests carry it.
    authorize: (request, { threadId, action }) => {
      const user = /(?:^|; )user=([^;]+)/.exec(request.headers.get('cookie') ?? '')?.[1] ??
        /^Bearer (.+)$/.exec(request.headers.get('authorization') ?? '')?.[1];
      if (!user) return null;
      if (threadId === null || threadId.startsWith(`${user}:`)) return user;
      return action === 'decide' && user === 'bob' ? user : null;
    },
    approvalRequests: { to: () => ['bob'] },
    webPush: { subject: 'mailto:ops@example.test', publicKey: vapid.publicKey, privateKey: vapid.privateKey,
      allowLoopback: true, openUrl: (call) => `${origin}/?thread=${encodeURIComponent(call.threadId)}` },
    cors: undefined,
    // The app serves its pages beside the handler (one origin, as service workers need).
    wrap: (listener) => (req, res) => {
      const url = new URL(req.url, origin);
      if (url.pathname === '/api/gatehouse/push/key') keyAsked.push(/(?:^|; )user=([^;]+)/.exec(req.headers.cookie ?? '')?.[1] ?? null);
      const send = (type, text) => res.writeHead(200, { 'content-type': type, 'cache-control': 'no-store' }).end(text);
      if (url.pathname === '/') return send('text/html', PAGE);
      if (url.pathname === '/sw.js') return send('text/javascript', WORKER);
      // The package's sw.js and the error module it imports, as the app's bundler or server
      // would serve them.
      if (url.pathname.startsWith('/pkg/') && url.pathname.endsWith('.js') && !url.pathname.includes('..')) {
        return send('text/javascript', fs.readFileSync(path.join(ROOT, url.pathname.slice(1)), 'utf8'));
      }
      return listener(req, res);
    },
  });
  browser = await chromium.launch(launchOptions());
});
after(async () => {
  await browser?.close();
  await s?.close();
  pushService?.close();
});

/** A page signed in as `user` with the worker active; its worker and a DevTools session. */
async function open(user) {
  const context = await browser.newContext();
  await context.grantPermissions(['notifications'], { origin: s.origin });
  if (user) await context.addCookies([{ name: 'user', value: user, url: s.origin }]);
  const page = await context.newPage();
  const workerSeen = context.waitForEvent('serviceworker');
  await page.goto(`${s.origin}/`);
  await page.evaluate(() => window.registered);
  const worker = context.serviceWorkers()[0] ?? await workerSeen;
  const cdp = await context.newCDPSession(page);
  const registrations = [];
  cdp.on('ServiceWorker.workerRegistrationUpdated', (e) => registrations.push(...e.registrations));
  await cdp.send('ServiceWorker.enable');
  while (!registrations.some((r) => r.scopeURL === `${s.origin}/`)) await new Promise((r) => setTimeout(r, 20));
  const registrationId = registrations.find((r) => r.scopeURL === `${s.origin}/`).registrationId;
  return { context, page, worker, cdp, registrationId };
}

/** A subscription this test's push service receives, with the keys to read what it gets. */
function keysForSubscription(tag) {
  const ecdh = crypto.createECDH('prime256v1');
  ecdh.generateKeys();
  const auth = crypto.randomBytes(16);
  return {
    ecdh, auth,
    json: { endpoint: `https://127.0.0.1:${pushService.address().port}/push/${tag}`,
      keys: { p256dh: ecdh.getPublicKey().toString('base64url'), auth: auth.toString('base64url') } },
  };
}

/** What the push service got for `tag`, decrypted. */
function received(sub, tag) {
  return pushes.filter((p) => p.path === `/push/${tag}`).map((p) => {
    assert.equal(p.headers['content-encoding'], 'aes128gcm');
    assert.match(p.headers.authorization, /^vapid t=.+, k=/);
    return ece.decrypt(p.body, { version: 'aes128gcm', privateKey: sub.ecdh, authSecret: sub.auth.toString('base64url') }).toString('utf8');
  });
}

async function until(f, ms, what, state = null) {
  const deadline = Date.now() + ms;
  while (!(await f())) {
    if (Date.now() > deadline) {
      throw new Error(`timed out waiting for ${what}${state ? `; it was ${JSON.stringify(await state())}` : ''}`);
    }
    await new Promise((r) => setTimeout(r, 25));
  }
}

/** Delivers `payload` to `tab`'s worker as the push service would, and waits for its
 *  notification: up to three deliveries, 3 s apart, as a push service redelivers. (In CI a
 *  push delivered through the DevTools protocol sometimes showed nothing within 10 s, first
 *  pushes included; never here. The failure message gives the worker's own count of pushes,
 *  which says whether the push reached it at all.) A delivery that needed more than one try is
 *  said on the console. */
async function deliver(tab, payload, what) {
  for (let attempt = 1; ; attempt++) {
    await tab.cdp.send('ServiceWorker.deliverPushMessage', { origin: s.origin, registrationId: tab.registrationId, data: payload });
    try {
      await until(async () => (await tab.worker.evaluate(() => self.shown())).length === 1, 3_000, what,
        () => tab.worker.evaluate(async () => ({ shown: await self.shown(), pushes: self.pushes })));
      if (attempt > 1) console.log(`# ${what}: shown after ${attempt} deliveries`);
      return;
    } catch (e) {
      if (attempt === 3) throw e;
    }
  }
}

test('subscribeToApprovals in Chromium: the browser subscribes with the handler\'s VAPID key, or says why not', async () => {
  const bob = await open('bob');
  try {
    const out = await bob.page.evaluate(async () => {
      try {
        const sub = await window.subscribeToApprovals(await navigator.serviceWorker.ready, { url: '/api/gatehouse' });
        return { endpoint: sub.endpoint };
      } catch (e) {
        return { error: `${e.name}: ${e.message}`, code: e.code ?? null };
      }
    });
    // A handler that cannot be reached: a retryable GatehouseError (the package's own class),
    // code "network".
    const unreachable = await bob.page.evaluate(async () => {
      const { GatehouseError } = await import('/pkg/gatehouse.js');
      try {
        await window.subscribeToApprovals(await navigator.serviceWorker.ready, { url: 'http://127.0.0.1:1/api' });
        return null;
      } catch (e) {
        return { gatehouse: e instanceof GatehouseError, code: e.code, retryable: e.retryable };
      }
    });
    assert.deepEqual(unreachable, { gatehouse: true, code: 'network', retryable: true });
    if (out.endpoint) {
      const rows = (await s.pool.query('SELECT identity FROM gatehouse_push WHERE endpoint = $1', [out.endpoint])).rows;
      assert.deepEqual(rows, [{ identity: 'bob' }]);
    } else {
      // Headless Chromium has no push service to register with (it would be Google's, out of
      // reach here): the browser refuses the subscription, and nothing reaches the handler.
      // (Playwright's contexts are off the record, where Chromium denies push outright; a
      // profile on disk waits on Google's service instead.)
      assert.match(out.error, /^AbortError: Registration failed/, out.error);
      assert.ok(keyAsked.includes('bob'), 'the page asked the handler for its VAPID key first, signed in');
      const rows = (await s.pool.query("SELECT count(*)::int AS n FROM gatehouse_push WHERE identity = 'bob'")).rows;
      assert.equal(rows[0].n, 0);
    }
  } finally {
    await bob.context.close();
  }
});

test('a push shows the call with Approve and Reject; Approve decides once, as the subscribed user', async () => {
  const bob = await open('bob');
  try {
    const sub = keysForSubscription('bob');
    // Registered as the page's subscribeToApprovals posts it, with bob's cookie.
    const posted = await bob.page.evaluate(async (json) => {
      const r = await fetch('/api/gatehouse/push/subscriptions', { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify(json) });
      return r.status;
    }, sub.json);
    assert.equal(posted, 200);
    const alice = client(s, 'alice');
    await applyAll(alice, 'alice:push', [userMessage, gatedCall]);
    await until(() => received(sub, 'bob').length === 1, 10_000, 'the push');
    const [payload] = received(sub, 'bob');
    const data = JSON.parse(payload);
    assert.deepEqual({ ...data, decideUrl: undefined, openUrl: undefined }, {
      type: 'gatehouse.approval', v: 1, reason: 'request', threadId: 'alice:push', callId: 'c1',
      tool: 'delete_file', description: 'Delete a file from the filesystem', summary: 'path: /tmp/a.txt',
      decideUrl: undefined, openUrl: undefined,
    });
    assert.equal(data.decideUrl, `${s.url}/threads/alice%3Apush/decide`);
    // The push service delivers it to the worker.
    await deliver(bob, payload, 'the notification');
    const [shown] = await bob.worker.evaluate(() => self.shown());
    assert.equal(shown.title, 'Approve delete_file?');
    assert.match(shown.body, /Delete a file/);
    assert.match(shown.body, /path: \/tmp\/a\.txt/);
    assert.deepEqual(shown.actions, ['approve', 'reject']);
    // Approve, without opening the app.
    const tapped = await bob.worker.evaluate(() => self.tap('approve'));
    assert.equal(tapped.callId, 'c1');
    const after1 = await stored(s.pool, 'alice:push');
    assert.match(after1.messages.at(-1)[1], /"approval":"approved"/);
    assert.match(JSON.stringify(after1.audit), /decidedBy[^,]*bob/);
    // The tap closed it.
    await until(async () => (await bob.worker.evaluate(() => self.shown())).length === 0, 10_000, 'the tapped notification to close');
    // The same push again (a replay), and a second tap: nothing more is written.
    await deliver(bob, payload, 'the replayed notification');
    await bob.worker.evaluate(() => self.tap('approve'));
    await until(async () => (await bob.worker.evaluate(() => self.shown())).some((n) => n.title.startsWith('Not approved')), 10_000, 'the refusal notice');
    // (The refused decision's id is logged, as every refusal is, so a replay of it is refused
    // again: the thread itself is as the first tap left it.)
    const after2 = await stored(s.pool, 'alice:push');
    assert.deepEqual({ ...after2, commits: null }, { ...after1, commits: null });
  } finally {
    await bob.context.close();
  }
});

test('a tap by someone signed out, or not allowed to decide, decides nothing and says why', async () => {
  const alice = client(s, 'alice');
  await applyAll(alice, 'alice:nobody', [userMessage, gatedCall]);
  const payload = JSON.stringify({ type: 'gatehouse.approval', v: 1, reason: 'request', threadId: 'alice:nobody',
    callId: 'c1', tool: 'delete_file', description: null, summary: 'path: /tmp/a.txt',
    decideUrl: `${s.url}/threads/alice%3Anobody/decide`, openUrl: null });
  const before1 = await stored(s.pool, 'alice:nobody');
  for (const user of [null, 'mallory']) {
    const tab = await open(user);
    try {
      await deliver(tab, payload, 'the notification');
      await tab.worker.evaluate(() => self.tap('approve'));
      await until(async () => (await tab.worker.evaluate(() => self.shown())).some((n) => n.title === 'Not approved: delete_file'), 10_000, 'the refusal notice');
      const notice = (await tab.worker.evaluate(() => self.shown())).find((n) => n.title.startsWith('Not approved'));
      assert.match(notice.body, /not allowed/);
    } finally {
      await tab.context.close();
    }
  }
  assert.deepEqual(await stored(s.pool, 'alice:nobody'), before1);
});

test('a subscription belongs to its identity: another user can neither take nor delete it', async () => {
  const sub = keysForSubscription('carol');
  const as = (user) => client(s, user);
  assert.equal((await as('carol').call('POST', '/push/subscriptions', sub.json)).status, 200);
  const taken = await as('mallory').call('POST', '/push/subscriptions', sub.json);
  assert.equal(taken.status, 409);
  assert.equal(taken.body.error.code, 'subscription_taken');
  const del = await as('mallory').call('DELETE', '/push/subscriptions', { endpoint: sub.json.endpoint });
  assert.equal(del.status, 404);
  const nobody = await client(s, null).call('POST', '/push/subscriptions', sub.json);
  assert.equal(nobody.status, 403);
  const rows = (await s.pool.query('SELECT identity FROM gatehouse_push WHERE endpoint = $1', [sub.json.endpoint])).rows;
  assert.deepEqual(rows, [{ identity: 'carol' }]);
  // Endpoints that are not a push service's are refused.
  for (const endpoint of ['http://example.test/push', 'file:///etc/passwd', 'not a url', `https://push.example.test/${'x'.repeat(2000)}`]) {
    const r = await as('carol').call('POST', '/push/subscriptions', { ...sub.json, endpoint });
    assert.equal(r.status, 400, endpoint);
  }
  assert.equal((await as('carol').call('DELETE', '/push/subscriptions', { endpoint: sub.json.endpoint })).status, 200);
  assert.equal((await s.pool.query('SELECT count(*)::int AS n FROM gatehouse_push WHERE endpoint = $1', [sub.json.endpoint])).rows[0].n, 0);
});

test('push subscriptions are bounded per identity, JSON only, and refused from an origin the handler does not list', async () => {
  const as = (user) => client(s, user);
  const made = [];
  try {
    for (let i = 0; i < 16; i++) {
      const sub = keysForSubscription(`dave-${i}`);
      made.push(sub.json.endpoint);
      assert.equal((await as('dave').call('POST', '/push/subscriptions', sub.json)).status, 200);
    }
    const over = await as('dave').call('POST', '/push/subscriptions', keysForSubscription('dave-16').json);
    assert.equal(over.status, 429);
    assert.equal(over.body.error.code, 'too_many_subscriptions');
    // The same endpoint again is a renewal, not one more.
    assert.equal((await as('dave').call('POST', '/push/subscriptions', keysForSubscription('dave-0').json)).status, 200);
    // A cross-site form cannot subscribe (JSON only).
    const formPost = await as('dave').call('POST', '/push/subscriptions', 'endpoint=x', { 'content-type': 'application/x-www-form-urlencoded' });
    assert.equal(formPost.status, 415);
    const n = (await s.pool.query("SELECT count(*)::int AS n FROM gatehouse_push WHERE identity = 'dave'")).rows[0].n;
    assert.equal(n, 16);
  } finally {
    for (const endpoint of made) await as('dave').call('DELETE', '/push/subscriptions', { endpoint });
  }
  // A handler that lists its app's origin refuses a page on another one, before anything is read.
  const listed = await startStoreServer({ postgres: s.postgres, cors: { origin: 'https://app.example', credentials: true },
    webPush: { subject: 'mailto:ops@example.test', publicKey: vapid.publicKey, privateKey: vapid.privateKey, allowLoopback: true } });
  try {
    const sub = keysForSubscription('erin');
    const r = await client(listed, 'erin').call('POST', '/push/subscriptions', sub.json, { origin: 'https://evil.example' });
    assert.equal(r.status, 403);
    assert.equal(r.body.error.code, 'origin_refused');
    assert.equal((await s.pool.query("SELECT count(*)::int AS n FROM gatehouse_push WHERE identity = 'erin'")).rows[0].n, 0);
    assert.equal((await client(listed, 'erin').call('POST', '/push/subscriptions', sub.json, { origin: 'https://app.example' })).status, 200);
  } finally {
    await listed.close();
  }
});

test('a subscription the push service says is gone (410) is deleted; the others still get the push', async () => {
  const live = keysForSubscription('frank');
  const gone = keysForSubscription('gone-frank');
  // A database of its own: no other handler's deliverer takes this request.
  const to = await startStoreServer({ authorize: (request) => /^Bearer (.+)$/.exec(request.headers.get('authorization') ?? '')?.[1] ?? null,
    publicUrl: 'http://127.0.0.1:1/api',
    approvalRequests: { to: () => ['frank'] },
    webPush: { subject: 'mailto:ops@example.test', publicKey: vapid.publicKey, privateKey: vapid.privateKey, allowLoopback: true } });
  try {
    for (const sub of [live, gone]) assert.equal((await client(to, 'frank').call('POST', '/push/subscriptions', sub.json)).status, 200);
    await applyAll(client(to, 'alice'), 'alice:gone', [userMessage, gatedCall]);
    await until(() => received(live, 'frank').length >= 1, 10_000, 'the push to the live subscription');
    await until(async () => (await to.pool.query('SELECT count(*)::int AS n FROM gatehouse_push WHERE endpoint = $1',
      [gone.json.endpoint])).rows[0].n === 0, 10_000, 'the gone subscription deleted');
    assert.equal((await to.pool.query('SELECT count(*)::int AS n FROM gatehouse_push WHERE endpoint = $1', [live.json.endpoint])).rows[0].n, 1);
  } finally {
    await to.close();
  }
});
