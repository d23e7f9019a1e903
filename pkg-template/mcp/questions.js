// @ts-check
// The questions MCP servers ask while their calls run (MCP elicitation: docs/design.md, "MCP
// elicitation"), as an agent of the package shows them. Loaded with the MCP client, only for
// an agent opened with `mcpServers`, so the main wasm and an app without MCP carry none of it.
// The MCP client's module reads each question (a malformed one is refused there and never
// gets here) and hands it to `hook`; it waits here until `submit` answers it, the run is
// aborted (`cancel`), or the client stops waiting (the server withdrew it, or the call
// ended: `cancel`). A question lives only as long as the server's request: nothing is stored.
import { GatehouseError } from "../gatehouse.js";
import { checkAnswer } from "./index.js";

/** A GatehouseError made here (its constructor is not the app's API: gatehouse.d.ts). */
const fault = (code, message) => new (/** @type {any} */ (GatehouseError))(code, message, false);

export class Questions {
  /** @type {Map<string, { entry: any, question: string, end: (result: any) => void }>} */
  #waiting = new Map();
  #next = 0;
  /** The running call's `onEvent` (the package entry sets it for each run). */
  listener = null;
  /** Tells the agent's subscribers that what they show changed. */
  changed = () => {};
  #fits;

  /** @param {(schema: string, content: string) => string | undefined} fits  the main wasm's
   *  schema check (`checkJson`): why a form's content does not fit it, or undefined. */
  constructor(fits) {
    this.#fits = fits;
  }

  /** The main wasm's hook (`setElicitationHook`), which binds the first three to the call:
   *  resolves to the answer's `ElicitResult` as JSON text. */
  hook = (callId, server, signal, question, withdrawn) => new Promise((resolve) => {
    const id = `elicit_${++this.#next}`;
    const entry = { id, callId, server, ...JSON.parse(question) };
    const cancel = () => end({ action: "cancel" });
    const end = (result) => {
      if (!this.#waiting.delete(id)) return;
      signal?.removeEventListener("abort", cancel);
      withdrawn?.removeEventListener("abort", cancel);
      resolve(JSON.stringify(result));
      this.#tell({ type: "elicitation_ended", id, callId, action: result.action });
    };
    this.#waiting.set(id, { entry, question, end });
    this.#tell({ type: "elicitation_requested", elicitation: structuredClone(entry) });
    if (signal?.aborted || withdrawn?.aborted) return cancel();
    signal?.addEventListener("abort", cancel, { once: true });
    withdrawn?.addEventListener("abort", cancel, { once: true });
  });

  /** Tells the run's listener and the subscribers, after the current task's code: never
   *  from inside a wasm call (the MCP client's module asks, and withdraws, from within its
   *  own code), so that the app's listeners may call the agent. */
  #tell(event) {
    const listener = this.listener;
    queueMicrotask(() => {
      try {
        listener?.(event);
      } catch (e) {
        console.warn("gatehouse: the onEvent listener threw", e);
      }
      this.changed();
    });
  }

  /** Whether a question waits. */
  get asking() {
    return this.#waiting.size > 0;
  }

  /** The questions waiting, oldest first (copies). */
  pending() {
    return [...this.#waiting.values()].map((w) => structuredClone(w.entry));
  }

  /** Answers by question id. The whole map is checked first (`checkAnswers`); then each
   *  answer is sent. */
  submit(answers) {
    const checked = checkAnswers(answers, (id) => this.#waiting.get(id), this.#fits);
    for (const [w, result] of checked) w.end(result);
  }

  /** `message` (a fresh copy from the agent) with each waiting question on its call's entry,
   *  last; the tail is the only message that can hold one. */
  shown(message) {
    if (this.#waiting.size === 0 || message?.type !== "tool_call") return message;
    for (const t of message.tools) {
      const w = [...this.#waiting.values()].find((q) => q.entry.callId === t.callId);
      if (w) t.elicitation = structuredClone(w.entry);
    }
    return message;
  }
}

/** Checks answers against the questions `waiting(id)` finds, all before any is sent: an id
 *  that waits for nothing is `unknown_elicitation`; an answer that is not one of the forms
 *  (the MCP client's `checkAnswer`) or whose content does not fit the form (`fits`) is
 *  `invalid_elicitation_answer`. */
export function checkAnswers(answers, waiting, fits) {
  if (answers === null || typeof answers !== "object" || Array.isArray(answers)) {
    throw fault("invalid_elicitation_answer", "submitElicitations(answers): answers must be an object keyed by question id");
  }
  const checked = [];
  for (const [id, answer] of Object.entries(answers)) {
    const w = waiting(id);
    if (!w) throw fault("unknown_elicitation", `no elicitation "${id}" waits for an answer`);
    let result;
    try {
      result = JSON.parse(checkAnswer(w.question, JSON.stringify(answer ?? null) ?? "null"));
    } catch (e) {
      throw fault("invalid_elicitation_answer", `${id}: ${e?.message ?? e}`);
    }
    const schema = w.entry.requestedSchema;
    const why = result.content && schema ? fits(JSON.stringify(schema), JSON.stringify(result.content)) : undefined;
    if (why) throw fault("invalid_elicitation_answer", `${id}: ${why}`);
    checked.push([w, result]);
  }
  return checked;
}
