// The offline demo model, loaded only for an agent whose model is `provider: "demo"` (or that
// gives no model): the main wasm leaves it out, so that apps with a real model never download
// it (docs/design.md, "The demo model"). Its answers are computed by its own small wasm
// (demo-model/ in the repository: the crate's providers::demo) and reach the agent the way a
// custom model's do, with the same events as before: word-sized text deltas, then each tool
// call's start and its arguments in fragments.
import init, { respond } from "./model.js";

let ready;

/** Loads the module once; a failed load is not kept, so the next turn tries again. */
export function loadDemoModel() {
  ready ??= (async () => {
    const url = new URL("./model_bg.wasm", import.meta.url);
    // Node (tests, scripts) cannot fetch a file: URL; browsers and bundlers fetch the URL.
    const fs = url.protocol === "file:" ? globalThis.process?.getBuiltinModule?.("node:fs") : undefined;
    await init({ module_or_path: fs ? fs.readFileSync(url) : url });
  })();
  ready.catch(() => (ready = undefined));
  return ready;
}

/** The demo model as a custom model's `call` (CustomModelRequest → CustomModelAnswer). */
export async function demoCall({ messages, tools, onText, onToolCallStart, onToolCallDelta }) {
  await loadDemoModel();
  const { deltas, ...answer } = JSON.parse(respond(JSON.stringify(messages), JSON.stringify(tools)));
  for (const d of deltas) {
    if (d.text !== undefined) onText(d.text);
    else if (d.name !== undefined) onToolCallStart(d.index, d.id, d.name);
    else onToolCallDelta(d.index, d.arguments);
  }
  return answer;
}
