// The page of reenter.test.mjs: <gatehouse-chat> on the offline demo model, and one call of
// its agent (?action=) made once from one place an app reacts (?trigger=): the element's
// `gatehouse-change` event (`change`: after the first run; `change-2`: after the second) or the
// tool's execute (reenter-tools.js). What the call resolved to, or the error it rejected
// with, is kept in window.reentered.
import '/pkg/ui/element.js';

const params = new URLSearchParams(location.search);
const trigger = params.get('trigger');
const action = params.get('action');
const chat = document.createElement('gatehouse-chat');

const ACTIONS = {
  chat: (a) => a.chat('again'),
  submitDecisions: (a) => a.submitDecisions({ [a.pendingTools()[0]?.callId ?? 'no_such_call']: 'approve' }),
  submitToolResults: (a) => a.submitToolResults({ no_such_call: 'done' }),
  retry: (a) => a.retry(),
  refresh: (a) => a.refresh(),
  setToolPolicy: (a) => a.setToolPolicy('delete_file', { autoApprove: true }),
  messages: (a) => a.messages({ limit: 5 }),
  subscribe: (a) => { const off = a.subscribe(() => {}); off(); return 'subscribed'; },
  pendingTools: (a) => a.pendingTools().length,
  status: (a) => a.status(),
};

window.ran = [];
window.reentered = null;
window.reenter = (why) => {
  if (window.reentered) return;
  const entry = { why, value: 'pending' };
  window.reentered = entry;
  Promise.resolve()
    .then(() => ACTIONS[action](chat.agent))
    .then((v) => { entry.value = v?.status ?? (Array.isArray(v) ? `messages:${v.length}` : String(v)); },
      (e) => { entry.value = 'rejected'; entry.error = { name: e?.name, code: e?.code, message: String(e?.message ?? e) }; });
};

let changes = 0;
chat.addEventListener('gatehouse-change', () => {
  changes++;
  if ((trigger === 'change' && changes === 1) || (trigger === 'change-2' && changes === 2)) window.reenter(trigger);
});
chat.setAttribute('thread-id', 'reenter');
chat.setAttribute('database', params.get('db'));
chat.setAttribute('tools', new URL('./reenter-tools.js', import.meta.url).href);
chat.setAttribute('heading', 'Re-entrancy');
document.body.append(chat);
