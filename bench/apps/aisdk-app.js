// The same page on the Vercel AI SDK (ai 7 + @ai-sdk/openai-compatible): streamText with one
// tool that needs approval, the approval answered in the page. Bundled the same way.
import { streamText, tool, jsonSchema, stepCountIs } from 'ai';
import { createOpenAICompatible } from '@ai-sdk/openai-compatible';

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
const messages = [{ role: 'user', content: 'Clean up the old logs' }];
for (;;) {
  const r = streamText({ model, messages, tools, stopWhen: stepCountIs(10) });
  for await (const d of r.textStream) log(d);
  messages.push(...(await r.responseMessages));
  const asks = (await r.content).filter((p) => p.type === 'tool-approval-request');
  if (!asks.length) break;
  messages.push({ role: 'tool', content: asks.map((p) => ({
    type: 'tool-approval-response', approvalId: p.approvalId,
    approved: confirm(`Run ${p.toolCall.toolName}?`), reason: 'Not now',
  })) });
}
