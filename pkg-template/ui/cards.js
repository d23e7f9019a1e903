// Approval cards, used by the chat view (chat-view.js) and the widget (widget.js).
//
// Rendering rules (Neuron's "Rendering guidance", SPEC §2):
// - the UI only looks at the LAST message of the thread; it is suspended when its
//   `type === "tool_call"` and some entry has `approval === "pending"`;
// - one card per entry of that message that HAS an `approval` field: the tool's label (or
//   name), its inputs, the `approvalReason` when present, Approve and Deny (Deny takes an
//   optional free-text reason, sent to the model verbatim);
// - decided cards show their state and stay revisable (last write wins) until every gated
//   entry is decided; each click is submitted at once as a partial submission;
// - approvals are bare: no comment box on Approve.
//
// Everything that comes from the model, a tool or the user is written with textContent,
// never as HTML. Enter never approves: the Approve button ignores the Enter key (Space and
// clicks still work) and nothing ever focuses it by default.

/** True when `message` is a tool-call message waiting for at least one decision. */
export function isSuspended(message) {
  return !!message && message.type === 'tool_call' && Array.isArray(message.tools) &&
    message.tools.some((t) => t.approval === 'pending');
}

/** The entries to render as cards: those of the suspended tail that have an `approval` field. */
export function approvalEntries(message) {
  if (!isSuspended(message)) return [];
  return message.tools.filter((t) => typeof t.approval === 'string');
}

/** Pretty JSON for tool inputs (always text). */
export function prettyInputs(inputs) {
  try {
    return JSON.stringify(inputs ?? {}, null, 2);
  } catch {
    return String(inputs);
  }
}

/** Small DOM helper: `h('div', { class: 'x', text: 'hi' }, child…)`. Never parses HTML. */
export function h(tag, props = {}, ...children) {
  const el = document.createElement(tag);
  for (const [k, v] of Object.entries(props)) {
    if (v === undefined || v === null || v === false) continue;
    if (k === 'text') el.textContent = v;
    else if (k === 'class') el.className = v;
    else if (k === 'dataset') Object.assign(el.dataset, v);
    else if (k.startsWith('on') && typeof v === 'function') el.addEventListener(k.slice(2), v);
    else if (v === true) el.setAttribute(k, '');
    else el.setAttribute(k, String(v));
  }
  for (const c of children.flat()) {
    if (c === null || c === undefined || c === false) continue;
    el.append(c instanceof Node ? c : document.createTextNode(String(c)));
  }
  return el;
}

const STATE_TEXT = { pending: 'Waiting for you', approved: 'Approved', rejected: 'Denied' };

/**
 * The approvals section. `onDecide(callId, decision)` must submit one decision
 * (`"approve"`, `"reject"` or `["reject", reason]`) and resolve when it is stored.
 * `labels` maps tool names to display names (the tool definitions' `label`).
 */
export class ApprovalCards {
  constructor({ onDecide, labels = {} }) {
    this.onDecide = onDecide;
    this.labels = labels;
    this.cards = new Map(); // callId -> { el, parts, entry }
    this.busy = false;
    this.el = h('section', { class: 'gh-approvals', hidden: true, 'aria-labelledby': 'gh-approvals-title' });
    this.title = h('h2', { class: 'gh-approvals-title', id: 'gh-approvals-title', tabindex: '-1' });
    this.summary = h('p', { class: 'gh-approvals-summary' });
    this.list = h('div', { class: 'gh-cards' });
    this.el.append(h('div', { class: 'gh-approvals-head' }, this.title, this.summary), this.list);
  }

  get visible() {
    return !this.el.hidden;
  }

  /** Moves keyboard focus to the section heading (never to a button). */
  focus() {
    if (this.visible) this.title.focus({ preventScroll: true });
  }

  /** Renders the cards for the thread's last message; patches cards in place (keeps typed reasons). */
  update(message, { busy = false } = {}) {
    this.busy = busy;
    const entries = approvalEntries(message);
    this.el.hidden = entries.length === 0;
    const ids = new Set(entries.map((e) => e.callId));
    for (const [id, card] of this.cards) {
      if (!ids.has(id)) {
        card.el.remove();
        this.cards.delete(id);
      }
    }
    entries.forEach((entry, i) => {
      let card = this.cards.get(entry.callId);
      if (!card) {
        card = this.#build(entry);
        this.cards.set(entry.callId, card);
      }
      if (this.list.children[i] !== card.el) this.list.insertBefore(card.el, this.list.children[i] ?? null);
      this.#patch(card, entry);
    });
    if (entries.length) {
      const pending = entries.filter((e) => e.approval === 'pending').length;
      this.title.textContent = entries.length === 1
        ? 'An action needs your approval'
        : `${entries.length} actions need your approval`;
      this.summary.textContent = entries.length === 1
        ? 'Nothing runs until you decide.'
        : `${entries.length - pending} of ${entries.length} decided. Nothing runs until all are decided; ` +
          'you can change a decision until then.';
    }
  }

  #build(entry) {
    const parts = {};
    parts.name = h('span', { class: 'gh-card-name' });
    parts.tech = h('span', { class: 'gh-card-tech' });
    parts.badge = h('span', { class: 'gh-badge' });
    parts.reason = h('p', { class: 'gh-card-reason' });
    parts.inputs = h('pre', { class: 'gh-card-inputs', tabindex: '0', 'aria-label': 'Inputs' });
    parts.rejectReason = h('p', { class: 'gh-card-reject-reason' });
    parts.error = h('p', { class: 'gh-card-error', role: 'alert', hidden: true });
    parts.approve = h('button', { type: 'button', class: 'gh-btn gh-approve', dataset: { action: 'approve' } }, 'Approve');
    parts.deny = h('button', { type: 'button', class: 'gh-btn gh-deny', dataset: { action: 'deny' } }, 'Deny…');
    // Enter never approves: only a click (or Space) on the button does.
    parts.approve.addEventListener('keydown', (e) => {
      if (e.key === 'Enter') e.preventDefault();
    });
    parts.approve.addEventListener('click', () => this.#decide(card, 'approve'));
    parts.deny.addEventListener('click', () => this.#openDeny(card));

    parts.reasonInput = h('textarea', {
      class: 'gh-deny-reason', rows: '2', maxlength: '2000',
      placeholder: 'e.g. "Archive it instead of deleting it". The model receives this verbatim.',
    });
    parts.confirmDeny = h('button', { type: 'button', class: 'gh-btn gh-confirm-deny' }, 'Deny');
    parts.cancelDeny = h('button', { type: 'button', class: 'gh-btn gh-ghost gh-cancel-deny' }, 'Cancel');
    parts.confirmDeny.addEventListener('click', () => {
      const why = parts.reasonInput.value.trim();
      this.#decide(card, why ? ['reject', why] : 'reject');
    });
    parts.cancelDeny.addEventListener('click', () => this.#closeDeny(card));
    parts.reasonInput.addEventListener('keydown', (e) => {
      if (e.key === 'Escape') {
        e.preventDefault();
        this.#closeDeny(card);
      } else if (e.key === 'Enter' && (e.ctrlKey || e.metaKey)) {
        e.preventDefault();
        parts.confirmDeny.click();
      }
    });
    parts.denyForm = h('div', { class: 'gh-deny-form', hidden: true },
      h('label', { class: 'gh-deny-label' }, 'Reason for the model (optional)', parts.reasonInput), h('div', { class: 'gh-card-actions' }, parts.confirmDeny, parts.cancelDeny));
    parts.actions = h('div', { class: 'gh-card-actions' }, parts.approve, parts.deny);

    const el = h('article', { class: 'gh-card', dataset: { callId: entry.callId } },
      h('header', { class: 'gh-card-head' }, h('div', { class: 'gh-card-titles' }, parts.name, parts.tech), parts.badge),
      parts.reason,
      parts.inputs,
      parts.rejectReason,
      parts.error,
      parts.actions,
      parts.denyForm);
    const card = { el, parts, entry, saving: false, denyOpen: false };
    return card;
  }

  #patch(card, entry) {
    const p = card.parts;
    card.entry = entry;
    const state = entry.approval;
    card.el.dataset.state = state;
    p.name.textContent = this.labels[entry.name] || entry.name;
    p.tech.textContent = this.labels[entry.name] && this.labels[entry.name] !== entry.name ? entry.name : '';
    p.badge.textContent = card.saving ? 'Saving…' : STATE_TEXT[state] ?? state;
    p.badge.dataset.state = card.saving ? 'saving' : state;
    p.reason.textContent = entry.approvalReason || '';
    p.reason.hidden = !entry.approvalReason;
    const inputs = prettyInputs(entry.inputs);
    if (p.inputs.textContent !== inputs) p.inputs.textContent = inputs;
    if (state === 'rejected') {
      p.rejectReason.textContent = entry.rejectReason
        ? `Your reason: ${entry.rejectReason}`
        : 'No reason given.';
      p.rejectReason.hidden = false;
    } else {
      p.rejectReason.hidden = true;
    }
    p.approve.textContent = state === 'approved' ? 'Approved ✓' : 'Approve';
    p.approve.setAttribute('aria-pressed', String(state === 'approved'));
    p.deny.textContent = state === 'rejected' ? 'Edit reason…' : 'Deny…';
    p.deny.setAttribute('aria-pressed', String(state === 'rejected'));
    const disabled = this.busy || card.saving;
    p.approve.disabled = disabled || state === 'approved';
    p.deny.disabled = disabled;
    p.confirmDeny.disabled = disabled;
    p.reasonInput.disabled = disabled;
  }

  #openDeny(card) {
    const p = card.parts;
    card.denyOpen = true;
    p.denyForm.hidden = false;
    p.actions.hidden = true;
    if (card.entry.approval === 'rejected' && !p.reasonInput.value) p.reasonInput.value = card.entry.rejectReason || '';
    p.reasonInput.focus();
  }

  #closeDeny(card) {
    card.denyOpen = false;
    card.parts.denyForm.hidden = true;
    card.parts.actions.hidden = false;
    card.parts.deny.focus();
  }

  async #decide(card, decision) {
    if (this.busy || card.saving) return;
    card.saving = true;
    card.parts.error.hidden = true;
    this.#patch(card, card.entry);
    try {
      await this.onDecide(card.entry.callId, decision);
      if (card.denyOpen) {
        card.denyOpen = false;
        card.parts.denyForm.hidden = true;
        card.parts.actions.hidden = false;
      }
    } catch (e) {
      card.parts.error.textContent = `Could not save this decision: ${e?.message ?? e}`;
      card.parts.error.hidden = false;
    } finally {
      card.saving = false;
      if (card.el.isConnected) this.#patch(card, card.entry);
    }
  }
}
