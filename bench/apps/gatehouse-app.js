// The smallest realistic page for row 1 (size): a chat with one gated tool on Gatehouse.
// bench/run.mjs bundles it with esbuild (esm, browser, minified); the wasm is counted apart.
import init, { Agent } from '../../pkg/gatehouse.js';

await init();
const log = (t) => document.body.append(Object.assign(document.createElement('p'), { textContent: t }));
const agent = await Agent.open({
  threadId: 'thread_1',
  model: { provider: 'openai', baseUrl: '/llm/v1', model: 'gpt-4o-mini' },
  tools: [{
    name: 'delete_file',
    description: 'Delete a file from the filesystem',
    parameters: { type: 'object', properties: { path: { type: 'string' } }, required: ['path'] },
    execute: async ({ path }) => ({ deleted: path }),
    requireApproval: true,
  }],
  storage: { kind: 'indexeddb', database: 'app' },
});
let state = await agent.chat('Clean up the old logs', { onEvent: (e) => e.type === 'text_delta' && log(e.delta) });
while (state.status === 'awaiting_approval') {
  const decisions = {};
  for (const call of agent.pendingTools()) decisions[call.callId] = confirm(`Run ${call.name}?`) ? 'approve' : ['reject', 'Not now'];
  state = await agent.submitDecisions(decisions);
}
log(state.message?.content?.[0]?.content ?? '');
