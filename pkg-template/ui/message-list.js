// @ts-check
// The chat's message list: user messages as text, answers as sanitized Markdown (each parsed
// once per message id and text), tool calls with their state, result or reject reason. The
// approval cards of a suspended tail are not here (cards.js).

import { h, isSuspended, prettyInputs } from './cards.js';
import { setMarkdown } from './markdown.js';

/** The text of a message's content blocks. */
export function messageText(message) {
  const blocks = Array.isArray(message?.content) ? message.content : [];
  return blocks
    .map((b) => (b && b.type === 'text' ? String(b.content ?? '') : `[${b?.type ?? 'block'}]`))
    .filter((s) => s.length > 0)
    .join('\n\n');
}

/** A result string, pretty-printed when it is JSON. */
function prettyResult(result) {
  if (typeof result !== 'string') return prettyInputs(result);
  try {
    const v = JSON.parse(result);
    return typeof v === 'string' ? v : JSON.stringify(v, null, 2);
  } catch {
    return result;
  }
}

function oneLine(inputs) {
  let s;
  try {
    s = JSON.stringify(inputs ?? {});
  } catch {
    s = String(inputs);
  }
  return s.length > 120 ? `${s.slice(0, 117)}…` : s;
}

export class MessageList {
  /** @param {Record<string, string>} labels display names by tool name (shared, kept live) */
  constructor(labels) {
    this.labels = labels;
    this.el = h('div', { class: 'gh-messages' });
    this.rendered = new Map(); // message id -> { text, el }
  }

  /** Renders `messages`; `empty()` builds what an empty thread shows (when nothing runs). */
  render(messages, { hiddenCount = 0, busy = false, empty = null } = {}) {
    this.busy = busy;
    const results = new Map();
    for (const m of messages) {
      if (m.type === 'tool_call_result') for (const t of m.tools ?? []) results.set(t.callId, t.result);
    }
    const tail = messages.at(-1);
    const nodes = [];
    if (hiddenCount > 0) nodes.push(h('p', { class: 'gh-older' }, `${hiddenCount} earlier message(s) are not shown.`));
    for (const m of messages) {
      const el = this.#message(m, results, m === tail);
      if (el) nodes.push(el);
    }
    if (nodes.length === 0 && !busy && empty) nodes.push(empty());
    this.el.replaceChildren(...nodes);
    const ids = new Set(messages.map((m) => m.__id));
    for (const id of this.rendered.keys()) if (!ids.has(id)) this.rendered.delete(id);
  }

  /** The text an answer shows (its rendered Markdown), '' when it has none. */
  shownText(message) {
    return this.rendered.get(message.__id)?.el.textContent ?? '';
  }

  #markdown(m, text) {
    const seen = this.rendered.get(m.__id);
    if (seen && seen.text === text) return seen.el;
    const el = setMarkdown(h('div', { class: 'gh-bubble gh-md' }), text);
    this.rendered.set(m.__id, { text, el });
    return el;
  }

  #message(m, results, isTail) {
    if (m.type === 'tool_call_result') return null; // shown with their calls
    const text = messageText(m);
    if (m.role === 'user') {
      return h('div', { class: 'gh-turn gh-user', dataset: { id: m.__id } }, h('div', { class: 'gh-bubble' }, text));
    }
    const turn = h('div', { class: 'gh-turn gh-assistant', dataset: { id: m.__id } });
    if (text) turn.append(this.#markdown(m, text));
    if (m.type === 'tool_call') {
      const suspended = isTail && isSuspended(m);
      // In a suspended tail, the gated entries are the approval cards below.
      const entries = (m.tools ?? []).filter((t) => !(suspended && typeof t.approval === 'string'));
      if (entries.length) {
        turn.append(h('ul', { class: 'gh-calls' }, entries.map((t) => this.#call(t, results, suspended))));
      }
    }
    if (!turn.childElementCount) return null;
    return turn;
  }

  #call(t, results, waiting) {
    const result = results.has(t.callId) ? results.get(t.callId) : t.result;
    let state;
    let badge;
    if (t.approval === 'approved') [state, badge] = ['approved', 'Approved'];
    else if (t.approval === 'rejected') [state, badge] = ['rejected', 'Denied'];
    else if (t.approval === 'pending') [state, badge] = ['pending', 'Waiting for you'];
    else if (t.approval === 'expired') [state, badge] = ['expired', 'Expired, not run'];
    else if (waiting) [state, badge] = ['pending', 'Runs after your decision'];
    else [state, badge] = ['auto', 'Ran automatically'];
    if (t.approval !== 'rejected' && state !== 'pending' && (result === null || result === undefined)) {
      badge = this.busy ? 'Running…' : 'Not run yet';
    }
    const li = h('li', { class: 'gh-call', dataset: { state, callId: t.callId } },
      h('div', { class: 'gh-call-head' },
        h('span', { class: 'gh-call-name' }, this.labels[t.name] || t.name),
        h('code', { class: 'gh-call-args', title: prettyInputs(t.inputs) }, oneLine(t.inputs)),
        h('span', { class: 'gh-badge', dataset: { state } }, badge)));
    if (t.approval === 'rejected') {
      li.append(h('p', { class: 'gh-call-reject' }, t.rejectReason ? `Your reason: ${t.rejectReason}` : 'No reason given.'));
    } else if (t.approval === 'expired') {
      li.append(h('p', { class: 'gh-call-reject' }, 'Nobody decided in time, so it did not run.'));
    } else if (result !== null && result !== undefined) {
      li.append(h('details', { class: 'gh-call-result' },
        h('summary', {}, 'Result'), h('pre', {}, prettyResult(result))));
    }
    return li;
  }
}
