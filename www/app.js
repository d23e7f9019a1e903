// The Gatehouse demo app: thread list, the package's chat view and approval cards
// (gatehouse-agent/ui), per-thread tools panel, model settings, and the service worker for
// offline use.

import init, { Agent } from '../pkg/gatehouse.js';
import { ChatView, h } from '../pkg/ui/index.js';
import { tools, suggestions } from './tools.js';
import { loadSettings, saveSettings, mcpOptions, modelOptions, modelLabel, PROVIDERS } from './settings.js';

const DATABASE = 'gatehouse-demo';
// `make demo-remote` (scripts/serve-demo.sh --remote): threads in Postgres behind the store
// handler at `?store=URL`, the user named by `?user=` (its bearer token), and `?device=phone`
// for an approver's page: no tools, no model — it decides, the desktop runs the tools.
const params = new URLSearchParams(location.search);
const REMOTE = params.get('store');
const PHONE = !!REMOTE && params.get('device') === 'phone';
const USER = params.get('user') || (PHONE ? 'manager' : 'clerk');
const STORAGE = REMOTE
  ? { kind: 'remote', url: REMOTE, database: DATABASE, headers: { authorization: `Bearer ${USER}` } }
  : { kind: 'indexeddb', database: DATABASE };
const LAST_THREAD = 'gatehouse-demo.lastThread';
const INSTRUCTIONS =
  'You are the Gatehouse demo assistant. You can list, delete and email files with your tools. ' +
  'Deleting and emailing wait for the user\'s approval; if the user rejects a call, follow their reason.';

const $ = (id) => document.getElementById(id);

const state = {
  settings: loadSettings(),
  threadId: null,
  agent: null,
  threads: [],
  busy: false,
  opening: null,
};

const view = new ChatView({
  root: $('chat'),
  tools,
  suggestions,
  intro: 'The demo model runs in this page, offline. Mention a tool and it calls it: deleting and ' +
    'emailing wait for your approval, and your decisions are saved in IndexedDB, so they survive reloads.',
  onChange: () => refreshThreads(),
  onOpenSettings: () => openSettings(), // a refused key (401/403): the banner's "Open settings"
  onBusy: (busy) => {
    state.busy = busy;
    $('settings-save').disabled = busy;
    renderToolRows();
  },
});
window.__gatehouseDemo = { view, state, Agent };

// ---------------------------------------------------------------- threads

function newThreadId() {
  const rand = crypto.getRandomValues(new Uint32Array(1))[0].toString(36);
  return `thread_${Date.now().toString(36)}${rand}`;
}

function threadFromHash() {
  const m = /^#thread=([\w.-]{1,128})$/.exec(location.hash);
  return m ? m[1] : null;
}

async function openThread(threadId, { replace = false } = {}) {
  if (!threadId) return;
  state.threadId = threadId;
  localStorage.setItem(LAST_THREAD, threadId);
  const hash = `#thread=${threadId}`;
  if (location.hash !== hash) history[replace ? 'replaceState' : 'pushState'](null, '', hash);
  view.beginLoading();
  const opening = (async () => {
    const agent = await Agent.open(PHONE ? { threadId, storage: STORAGE } : {
      threadId,
      model: modelOptions(state.settings),
      instructions: INSTRUCTIONS,
      tools,
      storage: STORAGE,
      mcpServers: mcpOptions(state.settings),
    });
    if (state.threadId !== threadId) return; // switched again meanwhile
    state.agent = agent;
    await view.setAgent(agent);
  })();
  state.opening = opening;
  try {
    await opening;
  } catch (e) {
    view.setError(`Could not open the thread: ${e?.message ?? e}`);
  }
  renderThreads();
  renderTitle();
  closeMenu();
}

async function refreshThreads() {
  try {
    state.threads = await Agent.listThreads(STORAGE);
  } catch (e) {
    console.warn('listThreads failed', e);
  }
  renderThreads();
  renderTitle();
}

function relTime(ms) {
  const s = Math.round((Date.now() - ms) / 1000);
  if (s < 45) return 'just now';
  if (s < 3600) return `${Math.round(s / 60)} min ago`;
  if (s < 86400) return `${Math.round(s / 3600)} h ago`;
  return new Date(ms).toLocaleDateString();
}

function renderTitle() {
  const t = state.threads.find((x) => x.threadId === state.threadId);
  const title = t?.title || 'New thread';
  const where = REMOTE ? ` · ${PHONE ? 'phone' : 'desktop'} (${USER})` : '';
  $('thread-title').textContent = title + where;
  document.title = `${title}${where} · Gatehouse demo`;
}

function renderThreads() {
  const list = $('thread-list');
  const items = [...state.threads];
  if (state.threadId && !items.some((t) => t.threadId === state.threadId)) {
    items.unshift({ threadId: state.threadId, title: null, messageCount: 0, updatedAt: Date.now(), status: 'idle', draft: true });
  }
  if (!items.length) {
    list.replaceChildren(h('li', { class: 'threads-empty' }, 'No threads yet.'));
    return;
  }
  list.replaceChildren(...items.map((t) => {
    const current = t.threadId === state.threadId;
    const meta = h('span', { class: 'thread-meta' },
      t.draft ? 'not started' : relTime(t.updatedAt),
      t.status === 'awaiting_approval' ? h('span', { class: 'thread-waiting' }, 'needs approval')
        : t.status === 'awaiting_tool_results' || t.status === 'interrupted'
          ? h('span', { class: 'thread-waiting' }, 'unfinished') : null);
    const open = h('button', {
      type: 'button', class: 'thread-open', title: t.title || 'New thread',
      onclick: () => { if (!current) openThread(t.threadId); else closeMenu(); },
    }, h('span', { class: 'thread-name' }, t.title || 'New thread'), meta);
    const del = h('button', {
      type: 'button', class: 'thread-delete', title: 'Delete thread',
      'aria-label': `Delete thread: ${t.title || 'New thread'}`,
    }, trashIcon());
    del.addEventListener('click', () => deleteThread(t, del));
    del.addEventListener('blur', () => disarm(del));
    return h('li', { class: 'thread', 'aria-current': current ? 'true' : 'false', dataset: { threadId: t.threadId } }, open, del);
  }));
}

function trashIcon() {
  const ns = 'http://www.w3.org/2000/svg';
  const svg = document.createElementNS(ns, 'svg');
  svg.setAttribute('viewBox', '0 0 24 24');
  svg.setAttribute('aria-hidden', 'true');
  const path = document.createElementNS(ns, 'path');
  path.setAttribute('d', 'M4 7h16M10 11v6M14 11v6M6 7l1 12a2 2 0 0 0 2 2h6a2 2 0 0 0 2-2l1-12M9 7V4h6v3');
  path.setAttribute('fill', 'none');
  path.setAttribute('stroke', 'currentColor');
  path.setAttribute('stroke-width', '2');
  path.setAttribute('stroke-linecap', 'round');
  path.setAttribute('stroke-linejoin', 'round');
  svg.append(path);
  return svg;
}

function disarm(btn) {
  btn.dataset.armed = 'false';
  btn.replaceChildren(trashIcon());
}

async function deleteThread(t, btn) {
  if (btn.dataset.armed !== 'true') {
    btn.dataset.armed = 'true';
    btn.replaceChildren(trashIcon(), 'Delete?');
    setTimeout(() => btn.isConnected && disarm(btn), 4000);
    return;
  }
  if (t.threadId === state.threadId && state.busy) {
    toast('Wait for the current answer before deleting this thread.');
    return;
  }
  try {
    if (!t.draft) await Agent.deleteThread(t.threadId, STORAGE);
  } catch (e) {
    toast(`Could not delete: ${e?.message ?? e}`);
    return;
  }
  state.threads = state.threads.filter((x) => x.threadId !== t.threadId);
  if (t.threadId === state.threadId) {
    const next = state.threads[0]?.threadId ?? newThreadId();
    await openThread(next, { replace: true });
  }
  await refreshThreads();
}

$('new-thread').addEventListener('click', () => {
  const current = state.threads.find((t) => t.threadId === state.threadId);
  if (!current && view.messages.length === 0) { // already on an empty thread
    closeMenu();
    view.input.focus();
    return;
  }
  openThread(newThreadId()).then(() => view.input.focus());
});

window.addEventListener('hashchange', () => {
  const id = threadFromHash();
  if (id && id !== state.threadId) openThread(id, { replace: true });
});

// ---------------------------------------------------------------- narrow screens

function closeMenu() {
  $('app').dataset.menu = 'closed';
  $('scrim').hidden = true;
  $('menu-btn').setAttribute('aria-expanded', 'false');
}
$('menu-btn').addEventListener('click', () => {
  const open = $('app').dataset.menu !== 'open';
  $('app').dataset.menu = open ? 'open' : 'closed';
  $('scrim').hidden = !open;
  $('menu-btn').setAttribute('aria-expanded', String(open));
});
$('scrim').addEventListener('click', closeMenu);

// ---------------------------------------------------------------- tools panel

const toolsDialog = $('tools-dialog');

function approvalText(t) {
  if (t.requireApproval === true) return 'Always asks for approval';
  if (t.requireApproval === false) return 'Never asks';
  if (t.approvalPolicy) return 'Asks for approval, and says why';
  return 'Runs without asking';
}

function renderToolRows() {
  if (!toolsDialog.open) return;
  const policies = state.agent ? state.agent.toolPolicies() : {};
  const rows = tools.map((t) => {
    const p = policies[t.name] ?? { enabled: t.enabled !== false, autoApprove: !!t.autoApprove };
    const gated = t.requireApproval === true || (t.requireApproval !== false && !!t.approvalPolicy);
    const enabled = h('input', { type: 'checkbox', name: 'enabled', checked: p.enabled, disabled: state.busy || !state.agent });
    const auto = h('input', {
      type: 'checkbox', name: 'autoApprove', checked: p.autoApprove,
      disabled: state.busy || !state.agent || !p.enabled || !gated,
    });
    enabled.addEventListener('change', () => setPolicy(t.name, { enabled: enabled.checked }));
    auto.addEventListener('change', () => setPolicy(t.name, { autoApprove: auto.checked }));
    return h('div', { class: 'tool-row', dataset: { tool: t.name, enabled: String(p.enabled) } },
      h('div', { class: 'tool-info' },
        h('strong', {}, t.label || t.name), h('code', {}, t.name),
        h('p', {}, t.description || ''),
        h('p', {}, p.enabled ? (p.autoApprove && gated ? 'Always allowed in this thread' : approvalText(t)) : 'Disabled: not offered to the model')),
      h('label', { class: 'switch' }, enabled, 'Enabled'),
      h('label', { class: 'switch', title: gated ? '' : 'This tool never asks' }, auto, 'Always allow'));
  });
  $('tool-rows').replaceChildren(...rows);
}

async function setPolicy(name, policy) {
  $('tools-error').hidden = true;
  try {
    await state.agent.setToolPolicy(name, policy);
  } catch (e) {
    $('tools-error').textContent = `Could not save: ${e?.message ?? e}`;
    $('tools-error').hidden = false;
  }
  renderToolRows();
}

$('open-tools').addEventListener('click', () => {
  toolsDialog.showModal();
  renderToolRows();
});

// ---------------------------------------------------------------- settings

const settingsDialog = $('settings-dialog');
const form = $('settings-form');
let draft = null; // settings being edited

function fillRemote() {
  const p = draft.provider;
  $('remote-fields').hidden = p === 'demo' || p === 'local';
  $('local-fields').hidden = p !== 'local';
  form.localUrl.value = draft.local.url;
  if (p === 'demo' || p === 'local') return;
  form.baseUrl.value = draft[p].baseUrl;
  form.model.value = draft[p].model;
  form.apiKey.value = draft[p].apiKey;
  form.apiKey.placeholder = p === 'anthropic' ? 'sk-ant-…' : 'Not needed for most local servers';
}

function readRemote() {
  const p = draft.provider;
  draft.local = { url: form.localUrl.value.trim() };
  if (p === 'demo' || p === 'local') return;
  draft[p] = { baseUrl: form.baseUrl.value.trim(), model: form.model.value.trim(), apiKey: form.apiKey.value.trim() };
}

function openSettings() {
  draft = structuredClone(state.settings);
  form.provider.value = draft.provider;
  form.rememberKey.checked = draft.rememberKey;
  $('remember-warning').hidden = !draft.rememberKey;
  $('settings-error').hidden = true;
  $('settings-save').disabled = state.busy;
  form.mcpUrl.value = draft.mcp.url;
  form.mcpToken.value = draft.mcp.token;
  fillRemote();
  settingsDialog.showModal();
}

form.addEventListener('change', (e) => {
  if (e.target.name === 'provider') {
    readRemote();
    draft.provider = form.provider.value;
    fillRemote();
  }
  if (e.target.name === 'rememberKey') $('remember-warning').hidden = !form.rememberKey.checked;
});

form.addEventListener('submit', async (e) => {
  e.preventDefault();
  readRemote();
  draft.rememberKey = form.rememberKey.checked;
  draft.mcp = { url: form.mcpUrl.value.trim(), token: form.mcpToken.value.trim() };
  if (draft.mcp.url && !/^https?:\/\//.test(draft.mcp.url)) {
    $('settings-error').textContent = 'The MCP server URL must be an http(s) URL.';
    $('settings-error').hidden = false;
    return;
  }
  if (draft.provider === 'local' && !draft.local.url) {
    $('settings-error').textContent = 'Enter the URL of a GGUF file.';
    $('settings-error').hidden = false;
    return;
  }
  if (draft.provider !== 'demo' && draft.provider !== 'local') {
    const p = draft[draft.provider];
    try {
      const u = new URL(p.baseUrl);
      if (!/^https?:$/.test(u.protocol)) throw new Error();
    } catch {
      $('settings-error').textContent = 'The base URL must be an http(s) URL.';
      $('settings-error').hidden = false;
      return;
    }
    if (!p.model) {
      $('settings-error').textContent = 'Enter a model name.';
      $('settings-error').hidden = false;
      return;
    }
  }
  if (state.busy) return;
  saveSettings(draft);
  state.settings = loadSettings();
  settingsDialog.close();
  renderModel();
  await openThread(state.threadId, { replace: true }); // reopen with the new model
});

for (const dlg of [settingsDialog, toolsDialog]) {
  dlg.addEventListener('click', (e) => {
    if (e.target.closest('[data-close]') || e.target === dlg) dlg.close();
  });
}
$('open-settings').addEventListener('click', openSettings);
$('model-pill').addEventListener('click', openSettings);

function renderModel() {
  if (PHONE) {
    // The approver's page has no model: the desktop's answers.
    $('model-label').textContent = 'Approver · no model';
    $('model-pill').title = 'This page decides; the desktop page runs the tools and the model.';
    return;
  }
  $('model-label').textContent = modelLabel(state.settings);
  $('model-pill').dataset.provider = state.settings.provider;
  $('model-pill').title = state.settings.provider === 'demo'
    ? 'The built-in demo model: runs offline in this page. Click to change.'
    : state.settings.provider === 'local'
    ? `A GGUF model run in this page, from ${state.settings.local.url}. Click to change.`
    : `${PROVIDERS[state.settings.provider].title} at ${state.settings[state.settings.provider].baseUrl}. Click to change.`;
}

// ---------------------------------------------------------------- push (the phone)

// The approver's page can take approval requests as notifications (README, "Approval requests
// that reach the approver"): a worker of its own, at a scope no page uses, so that the offline
// worker (./sw.js) is untouched. Its Approve and Reject decide as this page's user.
if (PHONE) {
  const button = $('enable-push');
  button.hidden = !('serviceWorker' in navigator && 'PushManager' in window);
  button.addEventListener('click', async () => {
    button.disabled = true;
    try {
      if (await Notification.requestPermission() !== 'granted') throw new Error('notifications are not allowed');
      const { subscribeToApprovals } = await import('../pkg/sw.js');
      const reg = await navigator.serviceWorker.register(`./approvals-sw.js?user=${encodeURIComponent(USER)}`,
        { type: 'module', scope: './approvals/' });
      await subscribeToApprovals(reg, { url: REMOTE, credentials: 'omit', headers: { authorization: `Bearer ${USER}` } });
      button.textContent = 'Push on';
      button.setAttribute('aria-label', 'Push notifications are on');
      toast(`Approval requests for ${USER} now arrive as notifications.`);
    } catch (e) {
      button.disabled = false;
      toast(`Push could not be enabled: ${e.message}`);
    }
  });
}

// ---------------------------------------------------------------- network status, toast

function renderNet() {
  $('net-pill').hidden = navigator.onLine !== false;
}
window.addEventListener('online', renderNet);
window.addEventListener('offline', renderNet);

let toastTimer = 0;
function toast(text, action) {
  const el = $('toast');
  el.replaceChildren(h('span', {}, text), action ? h('button', { type: 'button', onclick: action.run }, action.label) : null);
  el.hidden = false;
  clearTimeout(toastTimer);
  if (!action) toastTimer = setTimeout(() => { el.hidden = true; }, 4000);
}

// ---------------------------------------------------------------- service worker (offline)

function setOfflineStatus(ready, text) {
  const el = $('offline-status');
  el.textContent = text;
  el.dataset.ready = String(ready);
  document.documentElement.dataset.offline = ready ? 'ready' : 'no';
}

async function setupServiceWorker() {
  if (!('serviceWorker' in navigator)) {
    setOfflineStatus(false, 'Offline mode is not available in this browser.');
    return;
  }
  navigator.serviceWorker.addEventListener('message', (e) => {
    const msg = e.data || {};
    if (msg.type === 'status') {
      setOfflineStatus(!!msg.ready, msg.ready ? 'Works offline' : 'Preparing offline mode…');
    } else if (msg.type === 'updated') {
      toast('A new version of the demo is ready.', { label: 'Reload', run: () => location.reload() });
    }
  });
  const ask = () => navigator.serviceWorker.controller?.postMessage({ type: 'status' });
  navigator.serviceWorker.addEventListener('controllerchange', ask);
  try {
    await navigator.serviceWorker.register('./sw.js');
    if (navigator.serviceWorker.controller) ask();
  } catch (e) {
    setOfflineStatus(false, 'Offline mode is unavailable.');
    console.warn('service worker registration failed', e);
  }
}

// ---------------------------------------------------------------- start

async function main() {
  renderModel();
  renderNet();
  setupServiceWorker();
  await init();
  // Threads created or changed elsewhere (another tab; for remote threads, another device).
  Agent.subscribeThreads(STORAGE, () => refreshThreads());
  await refreshThreads();
  const id = threadFromHash() ?? localStorage.getItem(LAST_THREAD) ?? state.threads[0]?.threadId ?? newThreadId();
  await openThread(id, { replace: true });
  document.documentElement.dataset.ready = 'true';
  // Everything is loaded: now the worker may look for a newer shell (never mid-load).
  if (navigator.onLine) navigator.serviceWorker?.controller?.postMessage({ type: 'status', checkUpdate: true });
}

main().catch((e) => {
  console.error(e);
  view.setError(`The demo could not start: ${e?.message ?? e}`);
  document.documentElement.dataset.failed = String(e?.message ?? e);
});
