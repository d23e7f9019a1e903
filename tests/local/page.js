// The local model tests' page: the built package (/pkg/), its `local` provider, and helpers
// the tests call through page.evaluate. Every event an agent's runs emit is kept in `events`.
import init, { Agent } from '/pkg/gatehouse.js';

const agents = new Map();
export const events = [];

async function open(threadId, model, extra = {}) {
  const deleted = [];
  const agent = await Agent.open({
    threadId,
    model,
    instructions: extra.instructions,
    tools: extra.schema ? [{
      name: 'plan_trip',
      description: 'Plan a trip',
      parameters: extra.schema,
      requireApproval: true,
      execute: () => 'planned',
    }] : extra.gated ? [{
      name: 'delete_file',
      description: 'Delete a file',
      parameters: { type: 'object', properties: { path: { type: 'string' } }, required: ['path'], additionalProperties: false },
      requireApproval: true,
      execute: ({ path }) => { deleted.push(path); return `deleted ${path}`; },
    }] : [],
  });
  agents.set(threadId, { agent, deleted });
  return threadId;
}

async function chat(threadId, text, { abortAfterDeltas } = {}) {
  const { agent } = agents.get(threadId);
  const controller = new AbortController();
  let deltas = 0;
  const onEvent = (e) => {
    events.push({ threadId, ...e, at: performance.now() });
    if (e.type === 'text_delta' && abortAfterDeltas && ++deltas === abortAfterDeltas) controller.abort();
  };
  try {
    const r = await agent.chat(text, { onEvent, signal: controller.signal });
    return { status: r.status, message: r.message };
  } catch (e) {
    return { error: { code: e.code, name: e.name, message: e.message } };
  }
}

async function decide(threadId, decisions) {
  const { agent } = agents.get(threadId);
  try {
    const r = await agent.submitDecisions(decisions, { onEvent: (e) => events.push({ threadId, ...e }) });
    return { status: r.status, message: r.message };
  } catch (e) {
    return { error: { code: e.code, message: e.message } };
  }
}

const messages = (threadId) => agents.get(threadId).agent.messages();

window.t = { open, chat, decide, messages, events, agents, Agent };
// The offline steps need the service worker; a browser that refuses one still runs the rest.
try {
  await navigator.serviceWorker.register('./sw.js');
  await navigator.serviceWorker.ready;
} catch (e) {
  console.warn(`no service worker: ${e.message}`);
}
await init();
window.ready = true;
