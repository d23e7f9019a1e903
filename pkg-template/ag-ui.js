// @ts-check
// gatehouse-agent/ag-ui: a Gatehouse agent speaking AG-UI 1.0 (docs/design.md, "AG-UI"). One
// AG-UI run is one call on the agent: a new user message is `chat`, answers to interrupts
// (`resume`) are `submitDecisions`, tool messages are `submitToolResults`. The agent's events
// become AG-UI events; a run that stops for approvals finishes with an `interrupt` outcome,
// one interrupt per pending call, whose id is the call id. No AG-UI package is imported: the
// events are plain objects of the protocol's shapes (tests/node/ag-ui.test.mjs runs them
// through the official @ag-ui/client and validates them with @ag-ui/core's schemas).

// scripts/build-pkg.sh fills in the path of the error module (the class gatehouse.js exports).
import { GatehouseError } from "__ERROR_MODULE__";

/** What an approval interrupt's answer (`resume[].payload`) must look like. */
export const DECISION_SCHEMA = Object.freeze({
  type: "object",
  oneOf: [
    { properties: { decision: { const: "approve" } }, required: ["decision"] },
    { properties: { decision: { const: "reject" }, reason: { type: "string" } }, required: ["decision"] },
    { properties: { decision: { const: "edit" }, inputs: { type: "object" } }, required: ["decision", "inputs"] },
  ],
});

const bad = (code, message, callId) =>
  Object.assign(new GatehouseError(code, message, false), callId === undefined ? {} : { callId });

/** A resume entry as a Gatehouse decision; throws invalid_decision for one that is not. */
function decisionOf(entry) {
  if (entry?.status === "cancelled") return "reject";
  if (entry?.status !== "resolved") {
    throw bad("invalid_decision", `resume: the entry for "${entry?.interruptId}" has status ${JSON.stringify(entry?.status)}; it must be "resolved" or "cancelled"`, entry?.interruptId);
  }
  const p = entry.payload;
  switch (p?.decision) {
    case "approve":
      return "approve";
    case "reject":
      if (p.reason !== undefined && typeof p.reason !== "string") break;
      return p.reason ? ["reject", p.reason] : "reject";
    case "edit":
      if (p.inputs === null || typeof p.inputs !== "object" || Array.isArray(p.inputs)) break;
      return ["edit", p.inputs];
  }
  throw bad("invalid_decision", `resume: the payload for "${entry.interruptId}" must be { decision: "approve" }, { decision: "reject", reason? } or { decision: "edit", inputs }; got ${JSON.stringify(p)}`, entry.interruptId);
}

/** The text of an AG-UI message's content (a string, or parts of which the text ones count). */
function textOf(content) {
  if (typeof content === "string") return content;
  if (!Array.isArray(content)) return null;
  const parts = content.filter((p) => p?.type === "text" && typeof p.text === "string");
  return parts.length ? parts.map((p) => p.text).join("") : null;
}

/** What the run asks of the agent, read from the AG-UI input: [method, args].
 * @returns {[string, any[]]} */
function callOf(input) {
  if (input?.resume?.length) {
    const decisions = {};
    for (const entry of input.resume) {
      if (typeof entry?.interruptId !== "string") throw bad("invalid_decision", "resume: every entry needs an interruptId");
      decisions[entry.interruptId] = decisionOf(entry);
    }
    return ["submitDecisions", [decisions]];
  }
  const messages = Array.isArray(input?.messages) ? input.messages : [];
  // Tool messages after the last assistant message answer external calls.
  const results = {};
  for (let i = messages.length - 1; i >= 0 && messages[i]?.role === "tool"; i--) {
    const m = messages[i];
    results[m.toolCallId] = m.error ?? textOf(m.content) ?? JSON.stringify(m.content);
  }
  if (Object.keys(results).length) return ["submitToolResults", [results]];
  const last = messages[messages.length - 1];
  const text = last?.role === "user" ? textOf(last.content) : null;
  if (text == null) {
    throw bad("invalid_config", "AG-UI input: the last message must be a user message with text, tool messages answering pending calls, or the input must carry `resume`");
  }
  return ["chat", [text]];
}

/**
 * Runs one AG-UI run on `agent` (a Gatehouse Agent) and yields its AG-UI events, from
 * RUN_STARTED to RUN_FINISHED or RUN_ERROR. `input` is AG-UI's RunAgentInput; its threadId
 * must be the agent's. Aborting `signal` ends the run with a `cancelled` outcome.
 * @param {any} agent
 * @param {any} input
 * @param {{ signal?: AbortSignal, by?: string }} [options]
 * @returns {AsyncGenerator<Record<string, any>>}
 */
export async function* agUiEvents(agent, input, options = {}) {
  const threadId = String(input?.threadId ?? "");
  const runId = String(input?.runId ?? "");
  const queue = [];
  let wake = null;
  const push = (e) => {
    queue.push({ timestamp: Date.now(), ...e });
    wake?.();
  };
  push({ type: "RUN_STARTED", threadId, runId });

  let settled = null;
  const run = (async () => {
    if (!threadId || !runId) throw bad("invalid_config", "AG-UI input: threadId and runId are required");
    if (threadId !== agent.threadId) {
      throw bad("invalid_config", `AG-UI input: threadId "${threadId}" is not this agent's thread ("${agent.threadId}")`);
    }
    const [method, args] = callOf(input);
    const stream = new Stream(runId, push);
    /** @type {Record<string, any>} */
    const opts = { onEvent: (e) => stream.event(e) };
    if (options.signal) opts.signal = options.signal;
    if (options.by !== undefined) opts.by = options.by;
    try {
      return { out: await agent[method](...args, opts), usage: stream.usage() };
    } finally {
      stream.close(); // a call that failed mid-stream leaves nothing open before RUN_ERROR
    }
  })().then(
    (v) => { settled = { ok: true, ...v }; },
    (e) => { settled = { ok: false, error: e }; },
  ).finally(() => wake?.());

  while (true) {
    while (queue.length) yield queue.shift();
    if (settled) break;
    await new Promise((r) => { wake = r; });
    wake = null;
  }
  await run;
  while (queue.length) yield queue.shift();
  yield finish(agent, threadId, runId, settled);
}

/** The run's last event. */
function finish(agent, threadId, runId, s) {
  const timestamp = Date.now();
  if (!s.ok) {
    const e = s.error;
    if (e?.code === "aborted") return { type: "RUN_FINISHED", timestamp, threadId, runId, outcome: { type: "cancelled" } };
    return { type: "RUN_ERROR", timestamp, message: String(e?.message ?? e), code: typeof e?.code === "string" ? e.code : "internal" };
  }
  const usage = s.usage.length ? { usage: s.usage } : {};
  if (s.out?.status === "conflict") {
    return { type: "RUN_ERROR", timestamp, message: String(s.out.error?.message ?? "conflict"), code: "conflict" };
  }
  if (s.out?.status === "awaiting_approval") {
    const interrupts = agent.pendingTools().map((e) => ({
      id: e.callId,
      reason: "tool_approval",
      message: e.approvalReason ?? `Run ${e.name}?`,
      toolCallId: e.callId,
      responseSchema: DECISION_SCHEMA,
      metadata: { tool: e.name, inputs: e.inputs, approvals: e.approvals, needed: e.needed, blocked: e.blocked },
    }));
    if (interrupts.length) return { type: "RUN_FINISHED", timestamp, threadId, runId, outcome: { type: "interrupt", interrupts }, ...usage };
  }
  /** @type {Record<string, any>} */
  const outcome = { type: "success" };
  if (s.out?.status === "awaiting_tool_results") {
    outcome.pendingToolCallIds = agent.pendingToolResults().map((e) => e.callId);
  }
  return { type: "RUN_FINISHED", timestamp, threadId, runId, outcome, ...usage };
}

/** The agent's events of one call as AG-UI message and tool call events. */
class Stream {
  #runId;
  #push;
  #n = 0;
  #text = null; // the open text message's id
  #streamed = false; // the model call under way streamed its text
  #calls = new Map(); // index → callId, of the model call under way
  #started = new Set(); // call ids whose TOOL_CALL_START was sent
  #ended = new Set();
  #results = new Set();
  #usage = null; // the model calls' tokens, summed

  constructor(runId, push) {
    this.#runId = runId;
    this.#push = push;
  }

  #id(kind) {
    return `${this.#runId}:${kind}:${++this.#n}`;
  }

  event(e) {
    switch (e?.type) {
      case "model_call_started":
        this.#calls.clear();
        this.#streamed = false;
        break;
      case "text_delta":
        if (!e.delta) break;
        this.#streamed = true;
        if (!this.#text) {
          this.#text = this.#id("text");
          this.#push({ type: "TEXT_MESSAGE_START", messageId: this.#text, role: "assistant" });
        }
        this.#push({ type: "TEXT_MESSAGE_CONTENT", messageId: this.#text, delta: e.delta });
        break;
      case "tool_call_started":
        this.#endText();
        this.#calls.set(e.index, e.callId);
        this.#start(e.callId, e.name);
        break;
      case "tool_call_delta": {
        const id = this.#calls.get(e.index);
        if (id && e.delta && !this.#ended.has(id)) this.#push({ type: "TOOL_CALL_ARGS", toolCallId: id, delta: e.delta });
        break;
      }
      case "model_call_ended":
        this.#endText();
        for (const id of this.#calls.values()) this.#end(id);
        this.#calls.clear();
        if (e.usage) {
          this.#usage ??= { inputTokens: 0, outputTokens: 0 };
          this.#usage.inputTokens += e.usage.input_tokens;
          this.#usage.outputTokens += e.usage.output_tokens;
        }
        break;
      // A new message: its calls, if they were not streamed, and its results. (An updated
      // one is a decision rewriting the tail: its calls went out in the run that asked.)
      case "message":
        this.#message(e.message);
        break;
    }
  }

  /** A stored message: calls not streamed get their start, arguments and end; results go out. */
  #message(m) {
    if (m?.role === "assistant" && !this.#streamed) {
      // An answer that was not streamed (stream: false, a custom model): its text in one piece.
      const text = (m.content ?? []).filter((b) => b?.type === "text").map((b) => b.content).join("");
      if (text) {
        const id = this.#id("text");
        this.#push({ type: "TEXT_MESSAGE_START", messageId: id, role: "assistant" });
        this.#push({ type: "TEXT_MESSAGE_CONTENT", messageId: id, delta: text });
        this.#push({ type: "TEXT_MESSAGE_END", messageId: id });
      }
      this.#streamed = true;
    }
    if (m?.type === "tool_call" && m.role === "assistant") {
      this.#endText();
      for (const t of m.tools ?? []) {
        if (this.#started.has(t.callId)) continue;
        this.#start(t.callId, t.name);
        this.#push({ type: "TOOL_CALL_ARGS", toolCallId: t.callId, delta: JSON.stringify(t.proposedInputs ?? t.inputs ?? {}) });
        this.#end(t.callId);
      }
    }
    if (m?.type === "tool_call_result") {
      for (const t of m.tools ?? []) {
        if (t.result == null || this.#results.has(t.callId)) continue;
        this.#results.add(t.callId);
        this.#push({ type: "TOOL_CALL_RESULT", messageId: this.#id("tool"), toolCallId: t.callId, content: t.result, role: "tool" });
      }
    }
  }

  #start(id, name) {
    if (this.#started.has(id)) return;
    this.#started.add(id);
    this.#push({ type: "TOOL_CALL_START", toolCallId: id, toolCallName: name });
  }

  #end(id) {
    if (!this.#started.has(id) || this.#ended.has(id)) return;
    this.#ended.add(id);
    this.#push({ type: "TOOL_CALL_END", toolCallId: id });
  }

  #endText() {
    if (!this.#text) return;
    this.#push({ type: "TEXT_MESSAGE_END", messageId: this.#text });
    this.#text = null;
  }

  /** Whatever is still open when the call returns (a cut stream) is closed. */
  close() {
    this.#endText();
    for (const id of this.#started) this.#end(id);
  }

  /** AG-UI's TokenUsage entries of the run. */
  usage() {
    const u = this.#usage;
    return u ? [{ ...u, totalTokens: u.inputTokens + u.outputTokens }] : [];
  }
}
