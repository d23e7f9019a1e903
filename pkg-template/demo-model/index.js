// @ts-check
// The offline demo model, loaded only for an agent whose model is `provider: "demo"` (or that
// gives no model): the main wasm leaves it out, so that apps with a real model never download
// it (docs/design.md, "The demo model"). Its answers are computed by its own small wasm
// (demo-model/ in the repository: the crate's providers::demo) and reach the agent the way a
// custom model's do, with the same events as before: word-sized text deltas, then each tool
// call's start and its arguments in fragments.
import init, { respond } from "./model.js";
import { loadOnce } from "../load-wasm.js";

/** Loads the module once; a failed load is not kept, so the next turn tries again. */
export const loadDemoModel = loadOnce(init, new URL("./model_bg.wasm", import.meta.url));

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
