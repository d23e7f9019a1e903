// @ts-check
// What a screen reader hears from the chat: one polite live region that only ever gets new
// text appended (a finished answer, "an action needs your approval", a retry notice). The
// message log itself is not live: it is re-rendered as the thread changes, and a live log
// would read the whole conversation again on every change.

import { h } from './cards.js';

const KEEP = 20; // announcements kept in the region; older ones are removed (not re-read)

export class Announcer {
  constructor() {
    this.el = h('div', { class: 'gh-sr-only', role: 'log', 'aria-live': 'polite', 'aria-relevant': 'additions' });
  }

  /** Announces `text` (appended as a new paragraph; nothing already there is touched). */
  say(text) {
    const t = String(text ?? '').trim();
    if (!t) return;
    this.el.append(h('p', {}, t));
    while (this.el.childElementCount > KEEP) this.el.firstElementChild.remove();
  }
}
