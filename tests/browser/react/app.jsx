// The React app of react.test.mjs: useAgent and useThreads from gatehouse-agent/react in
// StrictMode (React's development build, so effects run twice on mount), with a probe on
// window that records every Agent.open, every dispose() and any call an agent gets after it
// was disposed. The URL says which thread, database and model server: ?thread=&db=&base=.

import React, { StrictMode, useEffect, useState } from 'react';
import { createRoot } from 'react-dom/client';
import { Agent } from 'gatehouse-agent';
import { ApprovalCards, useAgent, useThreads } from 'gatehouse-agent/react';

const params = new URLSearchParams(location.search);
const threadId = params.get('thread');
const database = params.get('db');
const baseUrl = params.get('base');
const pageSize = Number(params.get('page') ?? 50);
// ?mcp=<url>: the agent also has the MCP server `files` (its questions: elicitation).
const mcpUrl = params.get('mcp');
const mcpServers = mcpUrl ? [{ name: 'files', url: mcpUrl }] : undefined;
// ?reenter=<trigger>:<action>: the re-entrancy matrix of react.test.mjs (reenter below).
const reenterParam = params.get('reenter') ?? ':';
const trigger = reenterParam.slice(0, reenterParam.lastIndexOf(':'));
const action = reenterParam.slice(reenterParam.lastIndexOf(':') + 1);

const probe = {
  opens: [], disposes: 0, lateCalls: [], executed: [], streamed: [], effectRuns: 0, results: [],
  reentered: null, errors: [],
};
window.probe = probe;

// Every agent the hook opens is watched: dispose() is counted, and any method called on it
// afterwards is recorded (a disposed agent must never be called).
const METHODS = ['chat', 'submitDecisions', 'submitToolResults', 'retry', 'handle', 'messages', 'refresh',
  'setToolPolicy', 'pendingTools', 'pendingToolResults', 'status', 'lastMessage', 'toolPolicies', 'subscribe'];
const realOpen = Agent.open;
window.realOpen = (options) => realOpen.call(Agent, options);
Agent.open = async function open(options) {
  probe.opens.push(options.threadId);
  const agent = await realOpen.call(this, options);
  let disposed = false;
  for (const m of METHODS) {
    const method = agent[m];
    agent[m] = (...args) => {
      if (disposed) probe.lateCalls.push(m);
      return method.apply(agent, args);
    };
  }
  const dispose = agent.dispose;
  agent.dispose = () => {
    disposed = true;
    probe.disposes++;
    return dispose.call(agent);
  };
  return agent;
};

const storage = { database };
const tools = [{
  name: 'delete_file',
  description: 'Delete a file',
  parameters: { type: 'object', properties: { path: { type: 'string' } }, required: ['path'] },
  requireApproval: true,
  execute: async ({ path }) => {
    probe.executed.push(path);
    if (trigger === 'execute') reenter('execute');
    return { deleted: path };
  },
}];

// The hook's actions, each called once from where the app reacts (`trigger`): an effect on a
// status, on a new message or on streamed text, or the tool's execute. What it resolved to is
// recorded; a failure is the hook's `error` (every one rendered goes to probe.errors).
const ACTIONS = {
  send: (a) => a.send('again'),
  decide: (a) => a.decide({ call_1: 'approve' }),
  submitToolResults: (a) => a.submitToolResults({ call_1: 'done' }),
  retry: (a) => a.retry(),
  stop: (a) => a.stop(),
  setToolPolicy: (a) => a.setToolPolicy('delete_file', { autoApprove: true }),
  loadOlder: (a) => a.loadOlder(),
};
function reenter(why) {
  if (!action || probe.reentered) return;
  probe.reentered = { why, value: 'pending' };
  Promise.resolve()
    .then(() => ACTIONS[action](window.hook))
    .then((v) => { probe.reentered.value = v === undefined ? 'undefined' : v?.status ?? String(v); },
      (e) => { probe.reentered.value = `rejected: ${e?.name}: ${e?.code ?? e?.message}`; });
}

const textOf = (m) => (m?.content ?? []).filter((b) => b.type === 'text').map((b) => b.content).join('');

function Chat() {
  const a = useAgent({ threadId, model: { provider: 'openai', baseUrl, model: 'gpt-test' }, storage, tools, pageSize, mcpServers });
  window.hook = a;
  useEffect(() => { probe.effectRuns++; }, []);
  if (a.streamingText && probe.streamed.at(-1) !== a.streamingText) probe.streamed.push(a.streamingText);
  if (a.error && probe.errors.at(-1)?.error !== a.error) {
    probe.errors.push({ error: a.error, name: a.error.name, code: a.error.code ?? null });
  }
  const lastId = a.lastMessage?.__id;
  useEffect(() => {
    if (trigger === `status:${a.status}`) reenter(trigger);
    if (trigger === 'message' && a.lastMessage?.role === 'assistant') reenter(trigger);
    if (trigger === 'streaming' && a.streamingText) reenter(trigger);
    if (trigger === 'done' && a.status === 'idle' && probe.executed.length) reenter(trigger);
  }, [a.status, lastId, a.streamingText !== '']);
  const send = (e) => {
    e.preventDefault();
    const input = e.currentTarget.elements.msg;
    const text = input.value;
    input.value = '';
    a.chat(text).then((state) => probe.results.push(state?.status ?? `error:${a.error?.code}`));
  };
  const decide = (d) => a.decide(d).then((state) => probe.results.push(state?.status ?? 'error'));
  return (
    <section id="chat" data-status={a.status} data-ready={String(a.ready)} data-error={a.error ? a.error.code ?? String(a.error) : ''}>
      <p id="last">{textOf(a.lastMessage)}</p>
      <p id="streaming">{a.streamingText}</p>
      <p id="questions">{a.pendingElicitations.map((q) => `${q.id}:${q.callId}`).join(',')}</p>
      <ul id="cards">
        {a.pendingTools.map((t) => (
          <li className="card" key={t.callId} data-call-id={t.callId}>
            {t.name} {JSON.stringify(t.inputs)}
            <button type="button" className="approve" onClick={() => decide({ [t.callId]: 'approve' })}>Approve</button>
            <input className="reason" aria-label="Reason" />
            <button type="button" className="deny" onClick={(e) => {
              const why = e.currentTarget.parentElement.querySelector('.reason').value.trim();
              decide({ [t.callId]: ['reject', why || 'not now'] });
            }}>Deny</button>
          </li>
        ))}
      </ul>
      <ol id="messages" data-has-older={String(a.hasOlder)}>
        {a.messages.map((m) => <li key={m.__id} data-id={m.__id} data-role={m.role}>{textOf(m)}</li>)}
      </ol>
      {a.hasOlder && <button type="button" id="older" onClick={a.loadOlder}>Earlier messages</button>}
      <div id="kit-cards"><ApprovalCards chat={a} tools={tools} /></div>
      <form id="composer" onSubmit={send}>
        <input name="msg" aria-label="Message" disabled={!a.ready || a.pendingTools.length > 0} />
        <button type="submit">Send</button>
        <button type="button" onClick={a.stop}>Stop</button>
      </form>
    </section>
  );
}

function Threads() {
  const list = useThreads(storage);
  window.threads = list;
  const { threads } = list;
  return (
    <ul id="threads">
      {threads.map((t) => <li key={t.threadId} data-thread={t.threadId} data-status={t.status}>{t.title ?? t.threadId}</li>)}
    </ul>
  );
}

function App() {
  const [shown, setShown] = useState(true);
  window.unmountChat = () => setShown(false);
  return (
    <>
      <Threads />
      {shown ? <Chat /> : <p id="unmounted">unmounted</p>}
    </>
  );
}

createRoot(document.getElementById('root')).render(<StrictMode><App /></StrictMode>);
