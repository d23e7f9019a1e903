// @ts-check
// The chat view of the demo app and the <gatehouse-chat> widget: the message log
// (streamed answers), the approval cards, the error banner with Retry, and the composer.
// It talks to one Gatehouse `Agent` at a time (`setAgent`). Every string from a tool or the
// user is rendered as text (textContent), never as HTML; the model's answers as sanitized
// Markdown (markdown.js).

import { Announcer } from './announcer.js';
import { ApprovalCards, h, isSuspended } from './cards.js';
import { QuestionCards } from './questions.js';
import { Composer } from './composer.js';
import { describeError, isGatehouseError, retryNote } from './errors.js';
import { setMarkdown } from './markdown.js';
import { MessageList, messageText } from './message-list.js';
import { messagesAfter } from './messages.js';

const PAGE = 200; // messages shown; older ones stay in IndexedDB


export class ChatView {
  /**
   * @param {{ root: HTMLElement, tools?: object[], labels?: Record<string,string>, suggestions?: string[],
   *   intro?: string, onChange?: () => void, onBusy?: (busy: boolean) => void,
   *   onOpenSettings?: () => void, renderers?: Record<string, Function>,
   *   grantScopes?: ('user' | 'app')[] }} o
   */
  constructor({ root, tools = [], labels = {}, suggestions = [], intro = '', onChange, onBusy, onOpenSettings, renderers = {}, grantScopes = [] }) {
    this.root = root;
    root.classList.add('gh-chat');
    this.suggestions = suggestions;
    this.intro = intro;
    this.onChange = onChange ?? (() => {});
    this.onBusy = onBusy ?? (() => {});
    this.agent = null;
    this.loading = false;
    this.generation = 0; // bumps on setAgent: events of an older agent are ignored
    this.messages = [];
    this.hiddenCount = 0;
    this.busy = false;
    this.abort = null;
    this.error = null; // { text, retry: bool }
    this.stream = null; // the streaming bubble's parts
    this.announcer = new Announcer();

    this.cards = new ApprovalCards({
      labels, tools, renderers, grantScopes,
      onDecide: (id, d) => this.decide(id, d),
      onDecideAll: (decisions) => this.decideAll(decisions),
      onAlwaysAllow: (entry, scope) => this.alwaysAllow(entry, scope),
    });
    this.labels = this.cards.labels; // one map: the cards' and the log's names of the tools
    // The questions MCP servers ask while a call runs (pendingElicitations).
    this.questions = new QuestionCards({
      labels,
      onAnswer: (id, answer) => this.agent?.submitElicitations({ [id]: answer }),
    });
    this.log = new MessageList(this.labels);
    this.streamSlot = h('div', { class: 'gh-stream-slot' });
    this.bannerText = h('p', { class: 'gh-banner-text' });
    this.retryBtn = h('button', { type: 'button', class: 'gh-btn gh-retry', onclick: () => this.retry() }, 'Retry');
    // A refused key: the fix is in the app's settings, when it has some (`onOpenSettings`).
    this.onOpenSettings = onOpenSettings ?? null;
    this.settingsBtn = h('button', { type: 'button', class: 'gh-btn gh-open-settings', hidden: true,
      onclick: () => this.onOpenSettings?.() }, 'Open settings');
    this.banner = h('div', { class: 'gh-banner', role: 'alert', hidden: true },
      h('span', { class: 'gh-banner-icon', 'aria-hidden': 'true' }, '!'), this.bannerText, this.settingsBtn, this.retryBtn);
    // Not a live region (the announcer is): focusable, so the keyboard can scroll it.
    this.scroller = h('div', { class: 'gh-log', role: 'region', tabindex: '0', 'aria-label': 'Conversation' },
      this.log.el, this.streamSlot, this.cards.el, this.questions.el, this.banner);

    this.composer = new Composer({ onSend: (text) => this.send(text), onStop: () => this.abort?.abort() });
    // The composer's parts, by their names of old (the demo app focuses `view.input`).
    this.input = this.composer.input;
    this.sendBtn = this.composer.sendBtn;
    this.stopBtn = this.composer.stopBtn;
    this.hint = this.composer.hint;
    this.form = this.composer.el;
    root.append(this.scroller, this.form, this.announcer.el);
    this.stick = true; // follow new content unless the reader scrolled up
    this.scroller.addEventListener('scroll', () => {
      const el = this.scroller;
      this.stick = el.scrollHeight - el.scrollTop - el.clientHeight < 80;
    });

    this.onOnline = () => {
      if (this.error?.retry && !this.busy && this.agent?.status() === 'interrupted') this.retry();
      else this.updateControls();
    };
    this.onOffline = () => this.updateControls();
    this.onVisible = () => {
      if (document.visibilityState === 'visible') this.refresh();
    };
    this.listening = false;
    this.listen();
    this.updateControls();
  }

  /** Starts following the network and page visibility (done by the constructor). */
  listen() {
    if (this.listening) return;
    this.listening = true;
    window.addEventListener('online', this.onOnline);
    window.addEventListener('offline', this.onOffline);
    document.addEventListener('visibilitychange', this.onVisible);
  }

  /** Stops listening (e.g. the widget left the page); `listen()` resumes. */
  destroy() {
    this.listening = false;
    window.removeEventListener('online', this.onOnline);
    window.removeEventListener('offline', this.onOffline);
    document.removeEventListener('visibilitychange', this.onVisible);
  }

  /** Takes the labels and `allowedDecisions` of the tool definitions given to `Agent.open`. */
  setTools(tools) {
    this.cards.setTools(tools);
    this.render();
  }

  /** Another thread is being opened: nothing can be sent until `setAgent`. */
  beginLoading() {
    this.generation++;
    this.loading = true;
    this.updateControls();
  }

  /** Shows another thread (an opened Agent). */
  async setAgent(agent) {
    const gen = ++this.generation;
    this.loading = true;
    this.unsubscribe?.();
    this.unsubscribe = null;
    this.agent = agent;
    // Changes made while nothing runs here (another tab, an approval that expired) are
    // shown as they happen; this view's own runs sync when they end.
    if (agent && typeof agent.subscribe === 'function') {
      this.unsubscribe = agent.subscribe(() => {
        if (gen !== this.generation || this.busy || this.loading) return;
        this.sync().then(() => this.updateControls(), () => {});
      });
    }
    this.abort = null;
    if (this.busy) {
      this.busy = false; // a run of the previous thread goes on in the background
      this.onBusy(false);
    }
    this.#endStream();
    this.setError(null);
    await this.sync();
    if (gen !== this.generation) return;
    this.loading = false;
    if (agent && agent.status() === 'interrupted') {
      this.setError(this.#interruptedText(), true, 'notice');
    }
    this.updateControls();
    this.#scrollToBottom(true);
  }

  get tail() {
    return this.messages.at(-1) ?? null;
  }

  canSend() {
    return !!this.agent && !this.busy && !this.loading && !isSuspended(this.tail) &&
      !this.#awaitingResults() && this.input.value.trim().length > 0;
  }

  /** External tools wait for their results: no new message until they have them. After an
   *  interrupted run (Stop, a network error) a new message is accepted: one model call then
   *  answers it and the unanswered one. */
  #awaitingResults() {
    return this.agent?.status() === 'awaiting_tool_results';
  }

  /** Reads the thread from the agent (its last PAGE messages) and renders it. */
  async sync() {
    const gen = this.generation;
    const agent = this.agent;
    if (!agent) {
      this.messages = [];
      this.render();
      return;
    }
    const msgs = await agent.messages({ limit: PAGE });
    if (gen !== this.generation) return;
    this.messages = msgs;
    this.hiddenCount = Math.max(0, (agent.messageCount ?? msgs.length) - msgs.length);
    this.render();
  }

  /** Picks up changes made in another tab (when nothing runs here). */
  async refresh() {
    if (!this.agent || this.busy || this.loading) return;
    try {
      await this.agent.refresh();
      await this.sync();
    } catch {
      /* busy or storage: keep what is shown */
    }
  }

  // ---------------------------------------------------------------- actions

  async send(text = this.input.value) {
    text = text.trim();
    if (!text || !this.agent || this.busy || this.loading) return;
    if (isSuspended(this.tail) || this.#awaitingResults()) return; // locked: nothing is sent
    if (text === this.input.value.trim()) {
      this.input.value = '';
      this.composer.autosize();
    }
    const res = await this.#run((opts) => this.agent.chat(text, opts), { scroll: true });
    if (!res.ok) {
      // Restore the text unless the SDK stored it (then it is in the thread, waiting for Retry).
      const tail = this.tail;
      const stored = tail && tail.role === 'user' && !tail.type && messageText(tail) === text;
      if (!stored) this.composer.restore(text);
    }
    return res;
  }

  async retry() {
    if (!this.agent || this.busy || this.loading) return;
    return this.#run((opts) => this.agent.retry(opts), { scroll: true });
  }

  /** One decision from a card, submitted at once (partial submissions; last write wins). */
  decide(callId, decision) {
    return this.decideAll({ [callId]: decision });
  }

  /** Several decisions in one submission ("Approve all", "Deny all"). */
  async decideAll(decisions) {
    if (!this.agent || this.loading) throw new Error('the thread is still loading');
    const res = await this.#run((opts) => this.agent.submitDecisions(decisions, opts), { quiet: true });
    if (!res.ok && isSuspended(this.tail)) {
      this.setError(null);
      throw res.error;
    }
    if (!res.ok) this.#showError(res.error);
  }

  /** "Always allow in this conversation": this thread's `autoApprove` for the tool (revocable
   *  with `setToolPolicy`, e.g. in the demo's tools panel), then approves this call. With
   *  `scope` "user" or "app": a remembered grant of that scope instead (`grant`, revocable with
   *  `revokeGrant`). */
  async alwaysAllow(entry, scope = 'thread') {
    if (!this.agent || this.loading) throw new Error('the thread is still loading');
    if (scope === 'thread') await this.agent.setToolPolicy(entry.name, { autoApprove: true });
    else await this.agent.grant({ tool: entry.name, scope });
    this.onChange();
    await this.decide(entry.callId, 'approve');
  }

  /** Runs one SDK call with streaming events; never throws. */
  async #run(call, { scroll = false, quiet = false } = {}) {
    const gen = this.generation;
    const agent = this.agent;
    this.busy = true;
    this.onBusy(true);
    this.setError(null);
    const ac = new AbortController();
    this.abort = ac;
    this.updateControls();
    if (scroll) this.#scrollToBottom(true);
    const onEvent = (ev) => {
      if (gen === this.generation) this.#onEvent(ev);
    };
    let res;
    try {
      const state = await call({ signal: ac.signal, onEvent });
      res = { ok: true, state };
    } catch (error) {
      res = { ok: false, error };
    }
    if (gen !== this.generation) return res; // the view moved on to another thread
    this.busy = false;
    this.abort = null;
    this.#endStream();
    if (!res.ok && isGatehouseError(res.error) && res.error.code === 'conflict') {
      // Another tab changed the thread: take the stored state.
      try { await agent.refresh(); } catch { /* ignore */ }
    }
    try {
      await this.sync();
    } catch { /* keep the view */ }
    if (!res.ok && !quiet) this.#showError(res.error);
    this.onBusy(false);
    this.updateControls();
    this.onChange();
    if (isSuspended(this.tail)) {
      this.announcer.say(`${this.cards.title.textContent}. ${this.cards.summary.textContent}`);
      // Focus goes to the approvals heading, never to an Approve button.
      const active = this.#activeElement();
      if (!active || active === this.input || active === document.body || !this.root.contains(active)) this.cards.focus();
    } else if (!this.input.disabled) {
      // After a run, and after Stop (whose button is gone now), typing goes on in the message box.
      const active = this.#activeElement();
      if (res.ok || !active || active === document.body || active === this.stopBtn) this.input.focus({ preventScroll: true });
    }
    this.#scrollToBottom(false);
    return res;
  }

  #interruptedText() {
    const tail = this.tail;
    const offline = typeof navigator !== 'undefined' && navigator.onLine === false;
    if (tail && tail.role === 'user' && !tail.type) {
      return offline
        ? 'You are offline. Your message is saved and will be sent when the connection is back.'
        : 'Your last message has not been answered yet.';
    }
    return 'The last run stopped before it finished.';
  }

  #showError(e) {
    if (!e) return;
    const canRetry = this.agent?.status() === 'interrupted';
    const offline = typeof navigator !== 'undefined' && navigator.onLine === false;
    const { text, kind, settings } = describeError(e, { canRetry, offline, hasSettings: !!this.onOpenSettings });
    this.setError(text, canRetry, kind, { settings: !!settings });
  }

  /** Shows (or, with null, hides) the banner; `kind` is "error" (red) or "notice" (amber). */
  setError(text, retry = false, kind = 'error', { settings = false } = {}) {
    this.error = text ? { text, retry } : null;
    this.banner.dataset.kind = kind;
    this.banner.hidden = !text;
    this.bannerText.textContent = text || '';
    this.retryBtn.hidden = !retry;
    this.settingsBtn.hidden = !(text && settings && this.onOpenSettings);
    this.banner.dataset.retry = String(!!retry);
    // A view with no thread and an error (the widget could not start) says so, not "Loading…".
    this.composer?.update({ failed: !this.agent && !!text });
  }

  // ---------------------------------------------------------------- streaming events

  #onEvent(ev) {
    switch (ev.type) {
      case 'text_delta': {
        const s = this.#streamBubble();
        s.raw += ev.delta;
        // The answer so far is rendered as Markdown at most once a frame.
        s.frame ||= requestAnimationFrame(() => this.#paintStream(s));
        break;
      }
      case 'tool_call_started': {
        const s = this.#streamBubble();
        const args = h('code', { class: 'gh-call-args' });
        const li = h('li', { class: 'gh-call', dataset: { state: 'preparing' } },
          h('div', { class: 'gh-call-head' },
            h('span', { class: 'gh-call-name' }, this.labels[ev.name] || ev.name),
            args,
            h('span', { class: 'gh-badge', dataset: { state: 'saving' } }, 'Preparing…')));
        s.calls.append(li);
        s.args[ev.index] = args;
        break;
      }
      case 'tool_call_delta': {
        const el = this.stream?.args[ev.index];
        if (el) el.textContent += ev.delta;
        break;
      }
      case 'model_progress': {
        // A model that runs in the page is getting or loading its file: a progress bar.
        const s = this.#streamBubble();
        if (!s.progress) {
          s.progress = h('progress', { class: 'gh-model-progress', max: 1, value: 0 });
          s.progressLabel = h('span', { class: 'gh-stream-note' });
          s.note.before(h('div', { class: 'gh-model-loading' }, s.progressLabel, s.progress));
        }
        const label = modelProgressLabel(ev);
        if (ev.total) s.progress.value = ev.loaded / ev.total;
        else s.progress.removeAttribute('value'); // indeterminate
        s.progress.setAttribute('aria-label', label);
        if (s.progressLabel.textContent !== label) s.progressLabel.textContent = label;
        if (ev.phase === 'load' && ev.loaded === ev.total) s.progress.parentElement.hidden = true;
        break;
      }
      case 'retry': {
        // The note counts down to the next attempt; the announcer says it once.
        const s = this.#streamBubble();
        const at = Date.now() + (ev.delayMs ?? 0);
        const tick = () => {
          s.note.textContent = retryNote(ev, at - Date.now());
        };
        tick();
        s.note.hidden = false;
        clearInterval(s.countdown);
        s.countdown = window.setInterval(() => (Date.now() < at ? tick() : clearInterval(s.countdown)), 1000);
        this.announcer.say(s.note.textContent);
        break;
      }
      case 'message': {
        this.#endStream();
        // By id: a message a live reload showed already is not shown twice.
        this.messages = messagesAfter(this.messages, ev);
        this.render();
        // A finished answer is announced once, as the text it shows.
        if (ev.message.role === 'assistant') this.announcer.say(this.log.shownText(ev.message));
        break;
      }
      case 'message_updated': {
        this.messages = messagesAfter(this.messages, ev);
        this.render();
        break;
      }
      case 'elicitation_requested':
      case 'elicitation_ended': {
        this.questions.update(this.#questions());
        if (ev.type === 'elicitation_requested') this.announcer.say(`${ev.elicitation.server} asks: ${ev.elicitation.message}`);
        break;
      }
      case 'tool_result': {
        const s = this.#streamBubble();
        s.note.textContent = `${this.labels[ev.name] || ev.name} ${ev.ok ? 'finished' : 'failed'}; waiting for the model…`;
        s.note.hidden = false;
        break;
      }
      default:
        break;
    }
    this.#scrollToBottom(false);
  }

  #streamBubble() {
    if (this.stream) return this.stream;
    const text = h('div', { class: 'gh-bubble-text gh-md' });
    const caret = h('span', { class: 'gh-caret', 'aria-hidden': 'true' });
    const calls = h('ul', { class: 'gh-calls' });
    const note = h('p', { class: 'gh-stream-note', hidden: true });
    const el = h('div', { class: 'gh-turn gh-assistant gh-streaming', 'aria-busy': 'true' },
      h('div', { class: 'gh-bubble' }, text, caret), calls, note);
    this.streamSlot.replaceChildren(el);
    this.stream = { el, text, caret, calls, note, args: [], raw: '', frame: 0, countdown: 0 };
    return this.stream;
  }

  /** Renders the streamed answer so far; the caret follows its last line. */
  #paintStream(s) {
    s.frame = 0;
    if (this.stream !== s) return;
    setMarkdown(s.text, s.raw);
    let at = s.text; // the caret goes at the end of the last line of text
    while (at.lastElementChild && /^(P|UL|OL|LI|BLOCKQUOTE|H[1-6])$/.test(at.lastElementChild.tagName)) at = at.lastElementChild;
    at.append(s.caret);
    this.#scrollToBottom(false);
  }

  #endStream() {
    if (this.stream) {
      cancelAnimationFrame(this.stream.frame);
      clearInterval(this.stream.countdown);
    }
    this.stream = null;
    this.streamSlot.replaceChildren();
  }

  // ---------------------------------------------------------------- rendering

  /** The agent's pending calls, with their approver-rule progress (the cards show it); asked
   *  only while the tail waits for decisions, not on every render of a streamed answer. */
  #pending() {
    try {
      return this.agent && !this.loading && isSuspended(this.tail) ? this.agent.pendingTools() : undefined;
    } catch {
      return undefined;
    }
  }

  /** The questions MCP servers ask now (none from an agent without the method). */
  #questions() {
    try {
      return this.agent?.pendingElicitations?.() ?? [];
    } catch {
      return [];
    }
  }

  render() {
    this.questions.update(this.#questions());
    this.log.render(this.messages, {
      hiddenCount: this.hiddenCount, busy: this.busy, empty: () => this.#emptyState(),
    });
    this.cards.update(this.tail, { busy: this.busy || this.loading, pending: this.#pending() });
    this.updateControls();
  }

  #emptyState() {
    const chips = this.suggestions.map((s) =>
      h('button', { type: 'button', class: 'gh-chip', onclick: () => this.send(s) }, s));
    return h('div', { class: 'gh-empty' },
      h('p', { class: 'gh-empty-title' }, 'Start a conversation'),
      this.intro ? h('p', { class: 'gh-empty-text' }, this.intro) : null,
      chips.length ? h('div', { class: 'gh-chips' }, chips) : null);
  }

  updateControls() {
    const status = this.agent && !this.loading ? this.agent.status() : null;
    this.composer.update({
      ready: !!this.agent,
      loading: this.loading,
      pending: isSuspended(this.tail),
      busy: this.busy,
      interrupted: status === 'interrupted',
      awaitingResults: status === 'awaiting_tool_results',
      awaitingDevice: status === 'awaiting_device',
      queued: status === 'queued',
      failed: !this.agent && !!this.error,
    });
    this.cards.update(this.tail, { busy: this.busy || this.loading, pending: this.#pending() });
  }

  /** The focused element of the document or shadow root the view is in. */
  #activeElement() {
    return /** @type {Document | ShadowRoot} */ (this.root.getRootNode()).activeElement;
  }

  #scrollToBottom(force) {
    if (force) this.stick = true;
    if (this.stick) {
      const el = this.scroller;
      el.scrollTop = el.scrollHeight;
      requestAnimationFrame(() => { el.scrollTop = el.scrollHeight; });
    }
  }
}

/** The progress bar's label: "Downloading the model… 42%", "Loading the model…". */
export function modelProgressLabel(ev) {
  const pct = ev.total ? ` ${Math.floor((100 * ev.loaded) / ev.total)}%` : '';
  if (ev.phase === 'download') return `Downloading the model…${pct}`;
  if (ev.phase === 'cache') return 'Reading the model from this device…';
  return 'Loading the model…';
}
