// The AI SDK page of aisdk-app.js, persisting like Gatehouse: the chat's message list is saved
// to IndexedDB after every step, as the AI SDK's message-persistence guide does in its
// callbacks (onStepFinish / onFinish → saveChat), with idb-keyval (bench/README.md). On load
// the list is read back, and a pending approval is asked again. Bundled the same way.
import { streamText, tool, jsonSchema, stepCountIs } from 'ai';
import { createOpenAICompatible } from '@ai-sdk/openai-compatible';
import { get, set } from 'idb-keyval';

const log = (t) => document.body.append(Object.assign(document.createElement('p'), { textContent: t }));
const model = createOpenAICompatible({ name: 'llm', baseURL: '/llm/v1' }).chatModel('gpt-4o-mini');
const tools = {
  delete_file: tool({
    description: 'Delete a file from the filesystem',
    inputSchema: jsonSchema({ type: 'object', properties: { path: { type: 'string' } }, required: ['path'] }),
    needsApproval: true,
    execute: async ({ path }) => ({ deleted: path }),
  }),
};
const chatId = 'thread_1';
const messages = (await get(chatId)) ?? [{ role: 'user', content: 'Clean up the old logs' }];
const asked = (m) => (m?.role === 'assistant' && Array.isArray(m.content) ? m.content.filter((p) => p.type === 'tool-approval-request') : []);
const decide = (asks) => messages.push({ role: 'tool', content: asks.map((p) => ({
  type: 'tool-approval-response', approvalId: p.approvalId,
  approved: confirm(`Run ${p.toolCall.toolName}?`), reason: 'Not now',
})) });
if (asked(messages.at(-1)).length) decide(asked(messages.at(-1)));
for (;;) {
  const saved = [...messages];
  const r = streamText({
    model, messages, tools, stopWhen: stepCountIs(10),
    onStepEnd: async (step) => { saved.push(...step.response.messages); await set(chatId, saved); },
  });
  for await (const d of r.textStream) log(d);
  messages.push(...(await r.responseMessages));
  const asks = asked(messages.at(-1));
  if (!asks.length) break;
  decide(asks);
}
