// Records real event streams of the package (pkg/, built) in Node, with the memory store and
// the demo model, into tests/fixtures/event-streams/: what `messages.test.mjs` replays through
// the one message reducer without a wasm build. Run again after changing what events say:
//   node tests/js/record-streams.mjs
import fs from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../..');
const { initSync, Agent } = await import(path.join(root, 'pkg/gatehouse.js'));
initSync({ module: fs.readFileSync(path.join(root, 'pkg/gatehouse_bg.wasm')) });
const out = path.join(root, 'tests/fixtures/event-streams');

const deleteFile = {
  name: 'delete_file',
  description: 'Delete a file',
  parameters: { type: 'object', properties: { path: { type: 'string' } }, required: ['path'] },
  requireApproval: true,
  execute: async ({ path: p }) => ({ deleted: p }),
};

/** One stream: the messages shown before, every event of the calls, the messages after. */
async function record(name, steps) {
  const agent = await Agent.open({ threadId: name, storage: { kind: 'memory', database: `rec-${name}` },
    tools: [deleteFile] });
  const before = await agent.messages();
  const events = [];
  for (const step of steps) await step(agent, (e) => events.push(e));
  const after = await agent.messages();
  // Deltas carry no message: a few are kept, to show the reducer passes them by.
  const kept = events.filter((e, i) => e.type !== 'text_delta' || i < 3);
  fs.writeFileSync(path.join(out, `${name}.json`), `${JSON.stringify({ before, events: kept, after }, null, 2)}\n`);
  console.log(`${name}: ${kept.length} events, ${after.length} messages`);
}

await record('chat', [
  (a, onEvent) => a.chat('hello there', { onEvent }),
  (a, onEvent) => a.chat('and again', { onEvent }),
]);
await record('approval', [
  (a, onEvent) => a.chat('delete C:/a.txt', { onEvent }),
  async (a, onEvent) => {
    const [call] = a.pendingTools();
    await a.submitDecisions({ [call.callId]: 'approve' }, { onEvent });
  },
]);
await record('rejection', [
  (a, onEvent) => a.chat('delete C:/b.txt', { onEvent }),
  async (a, onEvent) => {
    const [call] = a.pendingTools();
    await a.submitDecisions({ [call.callId]: ['reject', 'not that one'] }, { onEvent });
  },
]);
