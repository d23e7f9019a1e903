// @ts-check
// The message box of the chat view (chat-view.js) and of the React <Composer>: a textarea,
// Send (Stop while a run goes on) and a hint that says why the box is locked. Enter sends
// only when sending is allowed and never approves anything; Shift+Enter is a new line. The
// box is locked while a call waits for a decision or external tools for their results.

import { h } from './cards.js';

let hintIds = 0;

export class Composer {
  /** `onSend(text)` sends (the box is emptied first; `restore(text)` puts it back);
   *  `onStop()` stops the running call. */
  constructor({ onSend, onStop }) {
    this.onSend = onSend;
    this.onStop = onStop;
    this.state = { ready: false, loading: true, pending: false, busy: false, interrupted: false, awaitingResults: false, awaitingDevice: false, queued: false, failed: false };
    this.input = h('textarea', {
      class: 'gh-input', rows: '1', placeholder: 'Message the agent…', 'aria-label': 'Message',
      maxlength: '20000',
    });
    this.sendBtn = h('button', { type: 'submit', class: 'gh-btn gh-primary gh-send' }, 'Send');
    this.stopBtn = h('button', { type: 'button', class: 'gh-btn gh-stop', hidden: true, onclick: () => this.onStop?.() }, 'Stop');
    // The hint describes the message box (read when it takes focus); it is not live.
    this.hint = h('p', { class: 'gh-hint', id: `gh-hint-${++hintIds}` });
    this.input.setAttribute('aria-describedby', this.hint.id);
    this.el = h('form', { class: 'gh-composer' },
      h('div', { class: 'gh-composer-row' }, this.input, this.stopBtn, this.sendBtn), this.hint);
    this.el.addEventListener('submit', (e) => {
      e.preventDefault();
      this.submit();
    });
    this.input.addEventListener('keydown', (e) => {
      if (e.key === 'Enter' && !e.shiftKey && !e.isComposing) {
        e.preventDefault(); // Enter sends only when sending is allowed; it never approves
        if (this.canSend()) this.submit();
      }
    });
    this.input.addEventListener('input', () => {
      this.autosize();
      this.update();
    });
    this.update();
  }

  /** Whether the text in the box can be sent now. */
  canSend() {
    const s = this.state;
    return s.ready && !s.loading && !s.busy && !s.pending && !s.awaitingResults && this.input.value.trim().length > 0;
  }

  /** Sends the text in the box (or `text`), emptying the box first. */
  submit(text = this.input.value) {
    text = text.trim();
    if (!text) return undefined;
    if (text === this.input.value.trim()) {
      this.input.value = '';
      this.autosize();
    }
    return this.onSend?.(text);
  }

  /** Puts `text` back in the box (a message that was not stored), unless something was typed since. */
  restore(text) {
    if (this.input.value) return;
    this.input.value = text;
    this.autosize();
    this.update();
  }

  /** `{ ready, loading, pending, busy, interrupted, awaitingResults, awaitingDevice, queued,
   *  failed }`: what the
   *  thread is doing; the box, its buttons and its hint follow. */
  update(patch = {}) {
    const s = Object.assign(this.state, patch);
    const locked = s.pending || s.awaitingResults;
    this.input.disabled = !s.ready || s.pending;
    this.sendBtn.disabled = !this.canSend();
    this.sendBtn.hidden = s.busy;
    this.stopBtn.hidden = !s.busy;
    this.el.dataset.locked = String(s.pending);
    this.el.dataset.loading = String(!s.ready || s.loading);
    this.el.dataset.busy = String(s.busy);
    let hint;
    if (s.failed && !s.ready) hint = 'The chat could not start: see the message above.';
    else if (!s.ready || s.loading) hint = 'Loading…';
    else if (s.pending) hint = 'Approve or deny every action above to unlock the message box.';
    else if (s.busy) hint = 'The agent is answering…';
    else if (s.awaitingResults) hint = 'Waiting for the results of tools the app runs.';
    else if (s.queued) hint = 'Offline: waiting to send. It goes out when the connection is back.';
    else if (s.awaitingDevice) hint = 'Decided here: it continues on a device that has the tool.';
    else if (s.interrupted) hint = 'Your last message has not been answered yet: Retry above, or send a new message.';
    else hint = 'Enter to send, Shift+Enter for a new line.';
    this.hint.textContent = hint;
    this.input.placeholder = locked && s.pending ? 'Waiting for your decision…' : 'Message the agent…';
  }

  autosize() {
    this.input.style.height = 'auto';
    this.input.style.height = `${Math.min(this.input.scrollHeight, 200)}px`;
  }

  focus() {
    this.input.focus({ preventScroll: true });
  }
}
