// @ts-check
// Cards for the questions MCP servers ask while their calls run (`pendingElicitations()`,
// docs/design.md "MCP elicitation"): a form built from the question's flat schema, or, in URL
// mode, the page to open with its host shown first. Answers go to `onAnswer(id, answer)`
// (the agent's `submitElicitations`); a refused answer is shown on its card.

import { h } from './cards.js';

const INPUT_TYPES = { email: 'email', uri: 'url', date: 'date', 'date-time': 'datetime-local' };

/** The host a URL leads to, as the user must see it before opening it. */
export function hostOf(url) {
  try {
    return new URL(url).host;
  } catch {
    return url;
  }
}

/** The choices of an enum field: `[value, label]`. */
function choices(p) {
  if (Array.isArray(p.oneOf)) return p.oneOf.map((o) => [o.const, o.title ?? o.const]);
  if (Array.isArray(p.anyOf)) return p.anyOf.map((o) => [o.const, o.title ?? o.const]);
  const names = Array.isArray(p.enumNames) ? p.enumNames : [];
  return (p.enum ?? []).map((v, i) => [v, names[i] ?? v]);
}

/** One field of a form: its element, and how to read its value (`undefined`: left empty). */
function field(name, p, required) {
  const label = `${p.title ?? name}${required ? ' *' : ''}`;
  const id = `gh-q-${name}-${Math.random().toString(36).slice(2, 8)}`;
  const hint = p.description ? h('small', { class: 'gh-q-hint' }, p.description) : null;
  if (p.type === 'boolean') {
    const box = h('input', { type: 'checkbox', id, name });
    box.checked = p.default === true;
    return { el: h('div', { class: 'gh-q-field gh-q-check' }, box, h('label', { for: id }, label), hint), read: () => box.checked };
  }
  if (p.type === 'array') {
    const boxes = choices(p.items ?? {}).map(([v, text]) => {
      const box = h('input', { type: 'checkbox', value: v });
      return { box, el: h('label', { class: 'gh-q-option' }, box, ` ${text}`) };
    });
    const el = h('fieldset', { class: 'gh-q-field' }, h('legend', {}, label), ...boxes.map((b) => b.el), hint);
    return { el, read: () => boxes.filter((b) => b.box.checked).map((b) => b.box.value) };
  }
  const options = choices(p);
  let input;
  if (options.length > 0) {
    input = h('select', { id, name, required },
      ...(required ? [] : [h('option', { value: '' }, '—')]),
      ...options.map(([v, text]) => h('option', { value: v }, text)));
  } else {
    const numeric = p.type === 'number' || p.type === 'integer';
    input = h('input', { id, name, required,
      type: numeric ? 'number' : (INPUT_TYPES[p.format] ?? 'text') });
    if (numeric) input.step = p.type === 'integer' ? '1' : 'any';
    for (const [k, attr] of [['minimum', 'min'], ['maximum', 'max'], ['minLength', 'minLength'], ['maxLength', 'maxLength']]) {
      if (typeof p[k] === 'number') input[attr] = p[k];
    }
  }
  if (p.default !== undefined) input.value = String(p.default);
  const read = () => {
    const v = input.value;
    if (v === '') return undefined;
    return p.type === 'number' || p.type === 'integer' ? Number(v) : v;
  };
  return { el: h('div', { class: 'gh-q-field' }, h('label', { for: id }, label), input, hint), read };
}

export class QuestionCards {
  /** @param {{ onAnswer: (id: string, answer: unknown) => void | Promise<unknown>, labels?: Record<string, string> }} o */
  constructor({ onAnswer, labels = {} }) {
    this.onAnswer = onAnswer;
    this.labels = labels;
    this.el = h('div', { class: 'gh-questions' });
    /** @type {Map<string, HTMLElement>} */
    this.cards = new Map();
  }

  /** Shows `pending` (the agent's `pendingElicitations()`): new questions get a card, answered
   *  ones lose theirs; a card being filled in is left as it is. */
  update(pending = []) {
    const ids = new Set(pending.map((p) => p.id));
    for (const [id, card] of this.cards) {
      if (!ids.has(id)) {
        card.remove();
        this.cards.delete(id);
      }
    }
    for (const p of pending) {
      if (this.cards.has(p.id)) continue;
      const card = this.#build(p);
      this.cards.set(p.id, card);
      this.el.append(card);
    }
  }

  async #answer(card, id, answer) {
    const error = card.querySelector('.gh-card-error');
    error.hidden = true;
    for (const b of card.querySelectorAll('button')) b.disabled = true;
    try {
      await this.onAnswer(id, answer);
    } catch (e) {
      error.textContent = e?.message ?? String(e);
      error.hidden = false;
      for (const b of card.querySelectorAll('button')) b.disabled = false;
    }
  }

  #build(p) {
    const who = this.labels[p.server] ?? p.server;
    const error = h('p', { class: 'gh-card-error', role: 'alert', hidden: true });
    const card = h('section', { class: 'gh-card gh-question', dataset: { id: p.id, mode: p.mode },
      'aria-label': `${who} asks` });
    const decline = h('button', { type: 'button', class: 'gh-btn gh-reject', onclick: () => this.#answer(card, p.id, 'decline') }, 'Decline');
    const cancel = h('button', { type: 'button', class: 'gh-btn', onclick: () => this.#answer(card, p.id, 'cancel') }, 'Not now');
    const head = h('div', { class: 'gh-card-head' }, h('strong', {}, `${who} asks`));
    const message = h('p', { class: 'gh-q-message' }, p.message);
    if (p.mode === 'url') {
      const host = hostOf(p.url);
      const open = h('button', { type: 'button', class: 'gh-btn gh-approve', onclick: () => {
        window.open(p.url, '_blank', 'noopener,noreferrer');
        this.#answer(card, p.id, 'accept');
      } }, `Open ${host}`);
      card.append(head, message,
        h('p', { class: 'gh-q-url' }, 'Opens ', h('strong', {}, host), ': ', h('code', {}, p.url)),
        error, h('div', { class: 'gh-card-actions' }, open, decline, cancel));
      return card;
    }
    const schema = p.requestedSchema ?? { properties: {} };
    const required = new Set(schema.required ?? []);
    /** @type {[string, { el: HTMLElement, read: () => unknown }][]} */
    const fields = Object.entries(schema.properties ?? {}).map(([name, prop]) => [name, field(name, prop, required.has(name))]);
    const form = h('form', { class: 'gh-q-form' }, ...fields.map(([, f]) => f.el));
    const submit = h('button', { type: 'submit', class: 'gh-btn gh-approve' }, 'Send');
    form.addEventListener('submit', (e) => {
      e.preventDefault();
      if (!form.reportValidity()) return;
      const content = {};
      for (const [name, f] of fields) {
        const v = f.read();
        if (v !== undefined) content[name] = v;
      }
      this.#answer(card, p.id, { action: 'accept', content });
    });
    form.append(error, h('div', { class: 'gh-card-actions' }, submit, decline, cancel));
    card.append(head, message, form);
    return card;
  }
}
