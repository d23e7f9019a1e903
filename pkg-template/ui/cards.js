// @ts-check
// Approval cards, used by the chat view (chat-view.js) and the widget (widget.js).
//
// Rendering rules (Neuron's "Rendering guidance", README "The thread JSON"):
// - the UI only looks at the LAST message of the thread; it is suspended when its
//   `type === "tool_call"` and some entry has `approval === "pending"`;
// - one card per entry of that message that HAS an `approval` field: the tool's label (or
//   an MCP tool's title, or its name), an MCP tool's server and hints labelled as the
//   server's (`parameters.mcp`, README "MCP tools"), its inputs (one row per argument,
//   beside its schema `description`; the raw JSON a click away), the `approvalReason` when
//   present, Approve and Deny (Deny takes an optional free-text reason, sent to the model
//   verbatim), and Edit (approve with inputs the human changed, `["edit", inputs]`) — only
//   the decisions the tool's `allowedDecisions` lists (default all three);
// - decided cards show their state and stay revisable (last write wins) until every gated
//   entry is decided; each click is submitted at once as a partial submission;
// - approvals are bare: no comment box on Approve;
// - with `onDecideAll`, "Approve all" and "Deny all" when several calls wait (each only for
//   the calls whose tool allows it); with `onAlwaysAllow`, "Always allow in this
//   conversation" on a card (the app sets this thread's `autoApprove` for the tool, which its
//   tools panel can revoke, and approves the call); with `grantScopes` too, "Always allow for
//   me" (`user`) and "Always allow for everyone" (`app`): a remembered grant of that scope
//   (README "Remembered grants"), then the call is approved;
// - a tool with a renderer (`renderers[name]`) gets a card whose body the app draws; the
//   card keeps its frame, its state and its error line, and the app's decide() goes through
//   the same path as the default card's buttons;
// - an error shows on the card it concerns: when `onDecide` rejects, or when the app says a
//   decision failed elsewhere (`setErrors`, e.g. one made through the React hook).
//
// Everything that comes from the model, a tool or the user is written with textContent,
// never as HTML. Enter never approves: the Approve button ignores the Enter key (Space and
// clicks still work) and nothing ever focuses it by default; the same holds for "Approve with
// these inputs" of the edit form, whose textarea takes Enter as a new line.

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

/** An MCP tool's hints (`parameters.mcp`: README "MCP tools"), or null for other tools. */
export function mcpHints(entry) {
  const m = entry?.parameters?.mcp;
  return m && typeof m === 'object' && typeof m.server === 'string' ? m : null;
}

/** The hints as one line, labelled as the server's word, not a fact. */
export function hintText(m) {
  const said = [];
  if (m.title) said.push(`title "${m.title}"`);
  if (m.readOnlyHint === true) said.push('read-only');
  if (m.destructiveHint === true) said.push('destructive');
  if (m.destructiveHint === false) said.push('not destructive');
  if (m.openWorldHint === true) said.push('reaches the outside world');
  if (m.openWorldHint === false) said.push('closed world');
  const hints = said.length ? `: ${said.join(', ')}` : ': no hints';
  return `MCP tool "${m.tool}" of server "${m.server}". Hints from the server (not verified)${hints}.`;
}

const STATE_TEXT = { pending: 'Waiting for you', approved: 'Approved', rejected: 'Denied', expired: 'Expired, not run' };
const ALL_DECISIONS = ['approve', 'reject', 'edit'];
const GRANT_TEXT = { user: 'Always allow for me', app: 'Always allow for everyone' };

/** Never lets Enter press `button` (Space and clicks still do). */
function ignoreEnter(button) {
  button.addEventListener('keydown', (e) => {
    if (e.key === 'Enter') e.preventDefault();
  });
}

/**
 * The approvals section. `onDecide(callId, decision)` must submit one decision
 * (`"approve"`, `"reject"`, `["reject", reason]` or `["edit", inputs]`) and resolve when it is
 * stored; `onDecideAll(decisions)` (optional) submits several at once, keyed by `callId`;
 * `onAlwaysAllow(entry)` (optional) lets the tool run without asking in this thread and
 * approves the call. `tools` are the tool definitions given to `Agent.open` (their `label`,
 * `allowedDecisions` and `parameters` are used); `labels` maps more tool names to display names.
 */
/**
 * The line a card shows for a call under the handler's approver rules (README "Approver
 * rules"): "1 of 2 approvals: bob", and why this user may not decide; empty for a call that
 * needs one approval, by anyone.
 * @param {{ approvals?: { by: string | null }[], needed?: number, blocked?: string | null } | undefined} p
 */
export function progressText(p) {
  if (!p) return '';
  const parts = [];
  if ((p.needed ?? 1) > 1) {
    const by = (p.approvals ?? []).map((a) => a.by ?? 'someone');
    parts.push(`${by.length} of ${p.needed} approvals${by.length ? `: ${by.join(', ')}` : ''}.`);
  }
  if (p.blocked === 'self_approval') parts.push('You asked for this action, so someone else must approve it.');
  if (p.blocked === 'not_an_approver') parts.push('You are not one of the people who may decide this action.');
  return parts.join(' ');
}

export class ApprovalCards {
  constructor({ onDecide, onDecideAll, onAlwaysAllow, grantScopes = [], labels = {}, tools = [], renderers = {} }) {
    this.onDecide = onDecide;
    this.grantScopes = grantScopes.filter((s) => s in GRANT_TEXT);
    this.renderers = renderers; // tool name -> (entry, { el, decide, busy }) => void
    this.errors = {}; // callId -> an error made elsewhere (setErrors)
    this.onDecideAll = onDecideAll;
    this.onAlwaysAllow = onAlwaysAllow;
    this.entries = [];
    this.saving = false; // a bulk decision is being stored
    this.labels = { ...labels };
    this.allowed = {}; // tool name -> the decisions its cards offer
    this.properties = {}; // tool name -> its schema's `properties` (argument descriptions)
    this.cards = new Map(); // callId -> { el, parts, entry }
    this.setTools(tools);
    this.busy = false;
    this.el = h('section', { class: 'gh-approvals', hidden: true, 'aria-labelledby': 'gh-approvals-title' });
    this.title = h('h2', { class: 'gh-approvals-title', id: 'gh-approvals-title', tabindex: '-1' });
    this.summary = h('p', { class: 'gh-approvals-summary' });
    this.list = h('div', { class: 'gh-cards' });
    this.approveAll = h('button', { type: 'button', class: 'gh-btn gh-approve-all' }, 'Approve all');
    this.denyAll = h('button', { type: 'button', class: 'gh-btn gh-deny-all' }, 'Deny all');
    ignoreEnter(this.approveAll);
    this.approveAll.addEventListener('click', () => this.#decideAll('approve'));
    this.denyAll.addEventListener('click', () => this.#decideAll('reject'));
    this.bulkError = h('p', { class: 'gh-card-error', role: 'alert', hidden: true });
    this.bulk = h('div', { class: 'gh-card-actions gh-bulk', hidden: true }, this.approveAll, this.denyAll);
    this.el.append(h('div', { class: 'gh-approvals-head' }, this.title, this.summary, this.bulk, this.bulkError), this.list);
  }

  /** The pending calls whose tool allows `kind`, as one decisions map. */
  #bulkDecisions(kind) {
    const out = {};
    for (const e of this.entries) {
      if (e.approval === 'pending' && this.decisionsFor(e).has(kind)) out[e.callId] = kind;
    }
    return out;
  }

  #patchBulk() {
    const pending = this.entries.filter((e) => e.approval === 'pending').length;
    const approvable = Object.keys(this.#bulkDecisions('approve')).length;
    const deniable = Object.keys(this.#bulkDecisions('reject')).length;
    this.bulk.hidden = !this.onDecideAll || pending < 2;
    this.approveAll.hidden = approvable < 2;
    this.denyAll.hidden = deniable < 2;
    this.approveAll.textContent = approvable < pending ? `Approve ${approvable}` : 'Approve all';
    this.denyAll.textContent = deniable < pending ? `Deny ${deniable}` : 'Deny all';
    this.approveAll.disabled = this.denyAll.disabled = this.busy || this.saving;
  }

  async #decideAll(kind) {
    const decisions = this.#bulkDecisions(kind);
    if (this.busy || this.saving || Object.keys(decisions).length === 0) return;
    this.saving = true;
    this.bulkError.hidden = true;
    this.#patchBulk();
    try {
      await this.onDecideAll(decisions);
    } catch (e) {
      this.bulkError.textContent = `Could not save these decisions: ${e?.message ?? e}`;
      this.bulkError.hidden = false;
    } finally {
      this.saving = false;
      this.#patchBulk();
    }
  }

  /** Takes the labels and `allowedDecisions` of these tool definitions. */
  setTools(tools = []) {
    for (const t of tools) {
      if (!t || typeof t.name !== 'string') continue;
      if (t.label) this.labels[t.name] = t.label;
      const props = t.parameters?.properties;
      if (props && typeof props === 'object') this.properties[t.name] = props;
      else delete this.properties[t.name];
      if (Array.isArray(t.allowedDecisions)) this.allowed[t.name] = t.allowedDecisions.filter((d) => ALL_DECISIONS.includes(d));
      else delete this.allowed[t.name];
    }
    for (const card of this.cards.values()) this.#patch(card, card.entry);
    if (this.bulk) this.#patchBulk();
  }

  /** The decisions a card for `entry` offers. */
  decisionsFor(entry) {
    return new Set(this.allowed[entry.name] ?? ALL_DECISIONS);
  }

  get visible() {
    return !this.el.hidden;
  }

  /** Moves keyboard focus to the section heading (never to a button). */
  focus() {
    if (this.visible) this.title.focus({ preventScroll: true });
  }

  /**
   * Renders the cards for the thread's last message; patches cards in place (keeps typed
   * reasons). `pending`: the agent's `pendingTools()`, whose approver-rule progress each card
   * shows ("1 of 2 approvals", who, and why this user may not decide).
   * @param {any} message
   * @param {{ busy?: boolean, pending?: any[] }} [options]
   */
  update(message, { busy = false, pending } = {}) {
    this.busy = busy;
    if (pending !== undefined) {
      this.progress = new Map((Array.isArray(pending) ? pending : []).map((e) => [e.callId, e]));
    }
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
      const custom = typeof this.renderers[entry.name] === 'function';
      if (card && card.custom !== custom) {
        card.el.remove();
        card = null;
      }
      if (!card) {
        card = custom ? this.#buildCustom(entry) : this.#build(entry);
        this.cards.set(entry.callId, card);
      }
      if (this.list.children[i] !== card.el) this.list.insertBefore(card.el, this.list.children[i] ?? null);
      this.#patch(card, entry);
    });
    this.entries = entries;
    this.#patchBulk();
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

  /** Shows errors of decisions made elsewhere (keyed by callId; `{}` clears them) on their cards. */
  setErrors(errors = {}) {
    this.errors = { ...errors };
    for (const card of this.cards.values()) this.#patch(card, card.entry);
  }

  /** The tools whose cards the app draws: `{ [toolName]: (entry, { el, decide, busy }) => void }`. */
  setRenderers(renderers = {}) {
    this.renderers = renderers;
    if (this.entries.length) this.update({ type: 'tool_call', tools: this.entries }, { busy: this.busy });
  }

  /** A card whose body the app's renderer draws into `parts.body`, called on every update. */
  #buildCustom(entry) {
    const parts = {};
    parts.body = h('div', { class: 'gh-card-body' });
    parts.error = h('p', { class: 'gh-card-error', role: 'alert', hidden: true });
    const el = h('article', { class: 'gh-card gh-card-custom', dataset: { callId: entry.callId } }, parts.body, parts.error);
    const card = { el, parts, entry, saving: false, form: null, custom: true };
    card.decideFn = (decision) => this.#decide(card, decision);
    return card;
  }

  #build(entry) {
    const parts = {};
    parts.name = h('span', { class: 'gh-card-name' });
    parts.tech = h('span', { class: 'gh-card-tech' });
    parts.badge = h('span', { class: 'gh-badge' });
    parts.reason = h('p', { class: 'gh-card-reason' });
    parts.hints = h('p', { class: 'gh-card-hints' });
    parts.inputs = h('pre', { class: 'gh-card-inputs', tabindex: '0', 'aria-label': 'Inputs as JSON' });
    parts.args = h('dl', { class: 'gh-card-args' });
    parts.raw = h('details', { class: 'gh-card-raw' }, h('summary', {}, 'Raw JSON'), parts.inputs);
    parts.rejectReason = h('p', { class: 'gh-card-reject-reason' });
    parts.progress = h('p', { class: 'gh-card-progress', hidden: true });
    parts.error = h('p', { class: 'gh-card-error', role: 'alert', hidden: true });
    parts.approve = h('button', { type: 'button', class: 'gh-btn gh-approve', dataset: { action: 'approve' } }, 'Approve');
    parts.deny = h('button', { type: 'button', class: 'gh-btn gh-deny', dataset: { action: 'deny' } }, 'Deny…');
    parts.edit = h('button', { type: 'button', class: 'gh-btn gh-ghost gh-edit', dataset: { action: 'edit' } }, 'Edit…');
    parts.always = h('button', { type: 'button', class: 'gh-btn gh-ghost gh-always', dataset: { action: 'always' } },
      'Always allow in this conversation');
    ignoreEnter(parts.always);
    parts.always.addEventListener('click', () => this.#alwaysAllow(card, 'thread'));
    // A remembered grant beyond this thread, per scope the app offers.
    parts.grants = this.grantScopes.map((scope) => {
      const b = h('button', { type: 'button', class: 'gh-btn gh-ghost gh-grant', dataset: { action: 'grant', scope } },
        GRANT_TEXT[scope]);
      ignoreEnter(b);
      b.addEventListener('click', () => this.#alwaysAllow(card, scope));
      return b;
    });
    // Enter never approves: only a click (or Space) on the button does.
    ignoreEnter(parts.approve);
    parts.approve.addEventListener('click', () => this.#decide(card, 'approve'));
    parts.deny.addEventListener('click', () => this.#openForm(card, 'deny'));
    parts.edit.addEventListener('click', () => this.#openForm(card, 'edit'));

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
    parts.cancelDeny.addEventListener('click', () => this.#closeForm(card));
    parts.reasonInput.addEventListener('keydown', (e) => {
      if (e.key === 'Escape') {
        e.preventDefault();
        this.#closeForm(card);
      } else if (e.key === 'Enter' && (e.ctrlKey || e.metaKey)) {
        e.preventDefault();
        parts.confirmDeny.click();
      }
    });
    parts.denyForm = h('div', { class: 'gh-deny-form', hidden: true },
      h('label', { class: 'gh-deny-label' }, 'Reason for the model (optional)', parts.reasonInput), h('div', { class: 'gh-card-actions' }, parts.confirmDeny, parts.cancelDeny));

    // Edit, then approve: the inputs as JSON, approved as `["edit", inputs]` (the SDK checks
    // them against the tool's schema and says what is wrong).
    parts.editInput = h('textarea', {
      class: 'gh-edit-inputs', rows: '5', spellcheck: 'false', 'aria-label': 'Inputs to run (JSON)',
    });
    parts.confirmEdit = h('button', { type: 'button', class: 'gh-btn gh-confirm-edit' }, 'Approve with these inputs');
    parts.cancelEdit = h('button', { type: 'button', class: 'gh-btn gh-ghost gh-cancel-edit' }, 'Cancel');
    ignoreEnter(parts.confirmEdit);
    parts.confirmEdit.addEventListener('click', () => {
      let inputs;
      try {
        inputs = JSON.parse(parts.editInput.value);
      } catch (e) {
        this.#showError(card, `These inputs are not JSON: ${e.message}`);
        return;
      }
      if (!inputs || typeof inputs !== 'object' || Array.isArray(inputs)) {
        this.#showError(card, 'The inputs must be a JSON object.');
        return;
      }
      this.#decide(card, ['edit', inputs]);
    });
    parts.cancelEdit.addEventListener('click', () => this.#closeForm(card));
    parts.editInput.addEventListener('keydown', (e) => {
      if (e.key === 'Escape') {
        e.preventDefault();
        this.#closeForm(card);
      }
    });
    parts.editForm = h('div', { class: 'gh-edit-form', hidden: true },
      h('label', { class: 'gh-deny-label' }, 'Inputs to run instead (JSON)', parts.editInput),
      h('div', { class: 'gh-card-actions' }, parts.confirmEdit, parts.cancelEdit));
    parts.proposed = h('p', { class: 'gh-card-proposed', hidden: true });
    parts.actions = h('div', { class: 'gh-card-actions' }, parts.approve, parts.deny, parts.edit, parts.always, ...parts.grants);

    const el = h('article', { class: 'gh-card', dataset: { callId: entry.callId } },
      h('header', { class: 'gh-card-head' }, h('div', { class: 'gh-card-titles' }, parts.name, parts.tech), parts.badge),
      parts.reason,
      parts.hints,
      parts.args,
      parts.raw,
      parts.proposed,
      parts.rejectReason,
      parts.progress,
      parts.error,
      parts.actions,
      parts.denyForm,
      parts.editForm);
    const card = { el, parts, entry, saving: false, form: null, custom: false };
    return card;
  }

  /** The error a card shows: its own action's, else one made elsewhere. */
  #patchError(card) {
    const own = card.error;
    const other = this.errors[card.entry.callId];
    const text = own ?? (other ? `Could not save this decision: ${other?.message ?? other}` : null);
    card.parts.error.textContent = text ?? '';
    card.parts.error.hidden = !text;
  }

  #patch(card, entry) {
    const p = card.parts;
    card.entry = entry;
    const state = entry.approval;
    card.el.dataset.state = state;
    card.el.dataset.saving = String(card.saving);
    this.#patchError(card);
    if (card.custom) {
      const render = this.renderers[entry.name];
      if (typeof render === 'function') {
        render(entry, { el: p.body, decide: card.decideFn, busy: this.busy || card.saving || state === 'expired' });
      }
      return;
    }
    const mcp = mcpHints(entry);
    const label = this.labels[entry.name] || mcp?.title || entry.name;
    p.name.textContent = label;
    p.tech.textContent = label !== entry.name ? entry.name : '';
    p.hints.textContent = mcp ? hintText(mcp) : '';
    p.hints.hidden = !mcp;
    const edited = state === 'approved' && entry.proposedInputs !== undefined;
    // The handler's approver rules: how far the call is, and what this user may not do
    // (the handler would refuse it with the same code).
    const progress = state === 'pending' ? this.progress?.get(entry.callId) : undefined;
    const outsider = progress?.blocked === 'not_an_approver';
    const own = progress?.blocked === 'self_approval';
    p.badge.textContent = card.saving ? 'Saving…' : edited ? 'Approved, edited'
      : outsider || own ? 'Waiting for others' : STATE_TEXT[state] ?? state;
    p.badge.dataset.state = card.saving ? 'saving' : state;
    p.reason.textContent = entry.approvalReason || '';
    p.reason.hidden = !entry.approvalReason;
    const inputs = prettyInputs(entry.inputs);
    if (p.inputs.textContent !== inputs || p.args.dataset.tool !== entry.name) {
      p.inputs.textContent = inputs;
      p.args.dataset.tool = entry.name;
      this.#renderArgs(p.args, entry);
    }
    p.proposed.hidden = !edited;
    p.proposed.textContent = edited ? `The model proposed: ${JSON.stringify(entry.proposedInputs)}` : '';
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
    p.edit.textContent = edited ? 'Edit again…' : 'Edit…';
    // Only the decisions the tool allows are offered.
    const allowed = this.decisionsFor(entry);
    p.approve.hidden = !allowed.has('approve');
    p.deny.hidden = !allowed.has('reject');
    p.edit.hidden = !allowed.has('edit');
    p.always.hidden = !this.onAlwaysAllow || !allowed.has('approve') || state !== 'pending';
    for (const b of p.grants) b.hidden = p.always.hidden;
    if (card.form === 'deny' && !allowed.has('reject')) this.#closeForm(card);
    if (card.form === 'edit' && !allowed.has('edit')) this.#closeForm(card);
    // An expired request can no longer be decided (the SDK would refuse it with `expired`).
    const disabled = this.busy || card.saving || state === 'expired';
    const text = progressText(progress);
    p.progress.textContent = text;
    p.progress.hidden = !text;
    p.progress.dataset.blocked = progress?.blocked ?? '';
    p.approve.disabled = disabled || state === 'approved' || outsider || own;
    p.deny.disabled = disabled || outsider;
    p.edit.disabled = disabled || outsider || own;
    p.always.disabled = disabled || outsider || own;
    for (const b of p.grants) b.disabled = p.always.disabled;
    p.confirmDeny.disabled = disabled;
    p.reasonInput.disabled = disabled;
    p.confirmEdit.disabled = disabled;
    p.editInput.disabled = disabled;
  }

  /** One row per argument: its name, its value (strings as they are, the rest as JSON) and
   *  the tool schema's `description` of it. */
  #renderArgs(list, entry) {
    const inputs = entry.inputs;
    const props = this.properties[entry.name] ?? {};
    const rows = inputs && typeof inputs === 'object' && !Array.isArray(inputs) ? Object.entries(inputs) : null;
    if (!rows) {
      list.replaceChildren(h('div', { class: 'gh-arg' }, h('dd', {}, h('code', {}, prettyInputs(inputs)))));
      return;
    }
    if (rows.length === 0) {
      list.replaceChildren(h('div', { class: 'gh-arg gh-arg-none' }, h('dd', {}, 'No arguments.')));
      return;
    }
    list.replaceChildren(...rows.map(([name, value]) => {
      const description = typeof props[name]?.description === 'string' ? props[name].description : null;
      return h('div', { class: 'gh-arg', dataset: { arg: name } },
        h('dt', { class: 'gh-arg-name' }, name),
        h('dd', { class: 'gh-arg-value' }, h('code', {}, typeof value === 'string' ? value : prettyInputs(value))),
        description ? h('dd', { class: 'gh-arg-desc' }, description) : null);
    }));
  }

  #showError(card, text) {
    card.error = text;
    this.#patchError(card);
  }

  /** Opens the deny form or the edit form in place of the card's buttons. */
  #openForm(card, form) {
    const p = card.parts;
    card.form = form;
    p.actions.hidden = true;
    p.denyForm.hidden = form !== 'deny';
    p.editForm.hidden = form !== 'edit';
    if (form === 'deny') {
      if (card.entry.approval === 'rejected' && !p.reasonInput.value) p.reasonInput.value = card.entry.rejectReason || '';
      p.reasonInput.focus({ preventScroll: true });
    } else {
      p.editInput.value = prettyInputs(card.entry.inputs);
      p.editInput.focus({ preventScroll: true });
    }
    // The whole form, its buttons too, comes into view (focus alone may show only part of
    // the box on a small screen, and never the buttons below it).
    (form === 'deny' ? p.denyForm : p.editForm).scrollIntoView({ block: 'nearest' });
  }

  #closeForm(card, { focus = true } = {}) {
    const p = card.parts;
    const was = card.form;
    card.form = null;
    p.denyForm.hidden = true;
    p.editForm.hidden = true;
    p.actions.hidden = false;
    if (focus && was) (was === 'edit' ? p.edit : p.deny).focus();
  }

  async #alwaysAllow(card, scope) {
    if (this.busy || card.saving) return;
    card.saving = true;
    card.error = null;
    this.#patch(card, card.entry);
    try {
      await this.onAlwaysAllow(card.entry, scope);
    } catch (e) {
      this.#showError(card, `Could not save this: ${e?.message ?? e}`);
    } finally {
      card.saving = false;
      if (card.el.isConnected) this.#patch(card, card.entry);
    }
  }

  async #decide(card, decision) {
    if (this.busy || card.saving) return false;
    card.saving = true;
    card.error = null;
    this.#patch(card, card.entry);
    try {
      await this.onDecide(card.entry.callId, decision);
      if (card.form) this.#closeForm(card, { focus: false });
      return true;
    } catch (e) {
      this.#showError(card, `Could not save this decision: ${e?.message ?? e}`);
      return false;
    } finally {
      card.saving = false;
      if (card.el.isConnected) this.#patch(card, card.entry);
    }
  }
}
