// @ts-check
// OpenTelemetry spans for an agent, following the GenAI semantic conventions (docs/design.md,
// "Telemetry"). gatehouse.js imports this module only when Agent.open is given `telemetry`,
// so an app without it downloads none of it. The spans are made with the app's own tracer
// (@opentelemetry/api's Tracer): the package imports no OpenTelemetry package.
//
// - `invoke_agent {name}`: one per call that runs the agent (chat, submitDecisions,
//   submitToolResults, retry, handle), started with the tracer's startActiveSpan, so it is a
//   child of the app's active span and active while the call runs (with a context manager,
//   spans the app's tools make are its children).
// - `chat {model}`: one per model call, from the `model_call_started` to the
//   `model_call_ended` event, with the usage and the stop reason; retries are span events.
// - `execute_tool {tool}`: from `tool_started` to `tool_result`.
// - `await_approval {tool}`: a gated call's wait for a human, from the time it was asked
//   (the audit trail's requestedAt) to its decision (decidedAt), with the decision and who
//   made it. Made by the agent whose call decided it (or found it expired), once.
// Inputs and outputs are left out of the attributes unless `recordInputs` / `recordOutputs`.

// The context key under which @opentelemetry/api keeps a context's span. The API makes it
// with Symbol.for so that every copy of the API finds it: the contract that lets this module
// give a span's children their parent without importing the API (tests/node/telemetry.test.mjs
// checks the nesting with the real API and SDK).
const SPAN_KEY = Symbol.for("OpenTelemetry Context Key SPAN");
// @opentelemetry/api's SpanKind and SpanStatusCode, whose values are part of its API.
const INTERNAL = 0;
const CLIENT = 2;
const ERROR = 2;

const KEYS = ["tracer", "recordInputs", "recordOutputs", "agentName", "attributes"];
// The agent's calls that run it, and where each takes its options (onEvent).
const RUNS = { chat: 1, submitDecisions: 1, submitToolResults: 1, retry: 0, handle: 1 };

/** A context as @opentelemetry/api's `Context` is: immutable values by key. Made with a
 *  span under SPAN_KEY (or none: a root), it is what the tracer reads a parent from. */
class MapContext {
  #values;
  constructor(values) { this.#values = values; }
  getValue(key) { return this.#values.get(key); }
  setValue(key, value) { return new MapContext(new Map(this.#values).set(key, value)); }
  deleteValue(key) {
    const values = new Map(this.#values);
    values.delete(key);
    return new MapContext(values);
  }
}

/** The context whose span is `span` (undefined: a root). */
const within = (span) => new MapContext(new Map([[SPAN_KEY, span]]));

/** The `telemetry` option checked, or null when it is absent. `invalid(message)` makes the
 *  error to throw (invalid_config). */
export function telemetryOf(options, invalid) {
  const t = options?.telemetry;
  if (t == null) return null;
  if (typeof t !== "object" || Array.isArray(t)) throw invalid("`telemetry` must be an object with a `tracer`");
  for (const key of Object.keys(t)) {
    if (!KEYS.includes(key)) throw invalid(`\`telemetry\`: unknown key \`${key}\`; the keys are \`${KEYS.join("`, `")}\``);
  }
  const tracer = t.tracer;
  if (typeof tracer?.startSpan !== "function" || typeof tracer?.startActiveSpan !== "function") {
    throw invalid("`telemetry.tracer` must be an OpenTelemetry Tracer (trace.getTracer(name) of @opentelemetry/api)");
  }
  for (const key of ["recordInputs", "recordOutputs"]) {
    if (t[key] !== undefined && typeof t[key] !== "boolean") throw invalid(`\`telemetry.${key}\` must be a boolean`);
  }
  if (t.agentName !== undefined && (typeof t.agentName !== "string" || t.agentName === "")) {
    throw invalid("`telemetry.agentName` must be a non-empty string");
  }
  const extra = t.attributes ?? {};
  if (typeof extra !== "object" || Array.isArray(extra)) throw invalid("`telemetry.attributes` must be an object");
  for (const [k, v] of Object.entries(extra)) {
    if (!["string", "number", "boolean"].includes(typeof v)) {
      throw invalid(`\`telemetry.attributes.${k}\` must be a string, a number or a boolean`);
    }
  }
  return new Telemetry(t, options);
}

class Telemetry {
  #tracer;
  #inputs;
  #outputs;
  #agent;
  #base; // attributes of every span
  #model; // the chat span's request attributes
  #modelName;
  #gatedBy = new Map(); // callId → the invoke_agent span whose run asked for it
  #reported = new Set(); // `${callId}:${seq}` of the await_approval spans made

  constructor(t, options) {
    this.#tracer = t.tracer;
    this.#inputs = t.recordInputs === true;
    this.#outputs = t.recordOutputs === true;
    this.#agent = t.agentName ?? "gatehouse";
    const m = options.model ?? { provider: "demo" };
    this.#modelName = typeof m.model === "string" && m.model !== "" ? m.model : m.provider;
    this.#base = { ...t.attributes, "gen_ai.conversation.id": String(options.threadId) };
    this.#model = {
      "gen_ai.provider.name": String(m.provider ?? "demo"),
      "gen_ai.request.model": this.#modelName,
    };
    if (typeof m.maxTokens === "number") this.#model["gen_ai.request.max_tokens"] = m.maxTokens;
    if (typeof m.temperature === "number") this.#model["gen_ai.request.temperature"] = m.temperature;
  }

  /** Runs `call(args)`, the agent's `method`, inside its invoke_agent span. `agent` is the
   *  Agent (its pendingTools and audit are read around the call). */
  invoke(agent, method, args, call) {
    const at = Object.hasOwn(RUNS, method) ? RUNS[method] : undefined;
    // Options that are not an object are the core's to refuse, as without telemetry.
    if (at === undefined || (args[at] != null && (typeof args[at] !== "object" || Array.isArray(args[at])))) return call(args);
    const attributes = this.#invokeAttributes(method);
    if (this.#inputs && method === "chat" && typeof args[0] === "string") {
      attributes["gen_ai.input.messages"] = JSON.stringify([{ role: "user", parts: [{ type: "text", content: args[0] }] }]);
    }
    return this.#tracer.startActiveSpan(`invoke_agent ${this.#agent}`, { kind: INTERNAL, attributes }, async (span) => {
      const run = new Run(this, span);
      const opts = args[at];
      const listener = typeof opts?.onEvent === "function" ? opts.onEvent : null;
      const a = [...args];
      while (a.length < at) a.push(undefined);
      a[at] = {
        ...(opts && typeof opts === "object" ? opts : {}),
        onEvent: (e) => {
          run.event(e);
          if (listener) listener(e);
        },
      };
      try {
        const out = await call(a);
        run.close(null);
        if (out?.status) span.setAttribute("gatehouse.run.status", out.status);
        if (out?.status === "conflict") {
          span.setStatus({ code: ERROR, message: out.error?.message });
          span.setAttribute("error.type", "conflict");
        }
        if (out?.status === "awaiting_approval") this.#remember(out.message, span);
        if (this.#outputs && out?.message) span.setAttribute("gen_ai.output.messages", JSON.stringify([messageOf(out.message)]));
        await this.#decided(agent, run, span);
        return out;
      } catch (e) {
        run.close(e);
        failed(span, e);
        await this.#decided(agent, run, span);
        throw e;
      } finally {
        span.end();
      }
    });
  }

  /** The hook of the runs the agent starts by itself, not from a call of the app's (the
   *  expiry timer, the outbox sent once online, a live feed's retry): `hook(kind, value)`
   *  (src/js/agent.rs, setBackgroundHook). Each is an invoke_agent span of its own, a root
   *  (no call of the app's is there to be its parent), named by why it ran. */
  hook(agent) {
    let open = null;
    return (kind, value) => {
      try {
        if (kind === "start") {
          open?.span.end();
          const attributes = this.#invokeAttributes(String(value));
          // A root, whatever context the timer or the feed that started it was made in.
          const span = this.#tracer.startSpan(`invoke_agent ${this.#agent}`, { kind: INTERNAL, attributes }, within(undefined));
          open = { span, run: new Run(this, span) };
        } else if (kind === "event" && open) {
          open.run.event(value);
          if (value?.type === "awaiting_approval") this.#remember(value.message, open.span);
          if (typeof value?.type === "string" && FINAL.includes(value.type)) open.span.setAttribute("gatehouse.run.status", value.type);
        } else if (kind === "end" && open) {
          const { span, run } = open;
          open = null;
          run.close(value);
          if (value) failed(span, value);
          span.end();
          this.#decided(agent, run, span).catch(() => {});
        }
      } catch {
        // A tracer that throws never stops a run.
      }
    };
  }

  /** An invoke_agent span's attributes; `method` is the call, or why the agent ran by itself. */
  #invokeAttributes(method) {
    return {
      ...this.#base,
      ...this.#model,
      "gen_ai.operation.name": "invoke_agent",
      "gen_ai.agent.name": this.#agent,
      "gatehouse.method": method,
    };
  }

  /** The calls of `message` waiting for a decision were asked by the run of `span`. */
  #remember(message, span) {
    for (const t of message?.tools ?? []) {
      if (t.approval === "pending" && !this.#gatedBy.has(t.callId)) this.#gatedBy.set(t.callId, span);
    }
    while (this.#gatedBy.size > 1000) this.#gatedBy.delete(this.#gatedBy.keys().next().value);
  }

  /** An await_approval span for each call whose decision `run` wrote (a human's, or an
   *  expiry), with its times and who decided from the audit trail. Who wrote a decision is
   *  known from the run's own events, not guessed: a decision another tab or device wrote
   *  reaches this agent as a reload, never as this run's event, so each is reported once, by
   *  the agent that wrote it (an offline decision by the outbox run that sent it). */
  async #decided(agent, run, span) {
    const decided = run.decided();
    if (decided.length === 0) return;
    let records;
    try {
      records = await agent.audit({ limit: Math.max(20, 2 * decided.length) });
    } catch {
      return; // the trail could not be read (offline, a remote store refusing): no span
    }
    for (const r of records) {
      if (!decided.includes(r.callId) || r.decidedAt == null || r.decision == null) continue;
      const key = `${r.callId}:${r.seq}`;
      if (this.#reported.has(key)) continue;
      this.#reported.add(key);
      const asked = this.#gatedBy.get(r.callId);
      this.#gatedBy.delete(r.callId);
      const attributes = {
        ...this.#base,
        "gen_ai.tool.name": r.tool,
        "gen_ai.tool.call.id": r.callId,
        "gatehouse.approval.decision": r.decision,
      };
      if (r.decidedBy != null) attributes["gatehouse.approval.decided_by"] = String(r.decidedBy);
      if (r.reason != null) attributes["gatehouse.approval.reason"] = String(r.reason);
      if (r.rejectReason != null) attributes["gatehouse.approval.reject_reason"] = String(r.rejectReason);
      if (this.#inputs) attributes["gen_ai.tool.call.arguments"] = JSON.stringify(r.proposedInputs ?? null);
      const links = asked ? [{ context: span.spanContext() }] : [];
      const wait = this.#tracer.startSpan(`await_approval ${r.tool}`, {
        kind: INTERNAL, attributes, links, startTime: r.requestedAt,
      }, within(asked ?? span));
      if (r.decision === "expired") wait.setStatus({ code: ERROR, message: "no decision before the deadline" });
      wait.end(r.decidedAt);
    }
    while (this.#reported.size > 1000) this.#reported.delete(this.#reported.values().next().value);
  }

  chatSpan(parent) {
    return this.#tracer.startSpan(`chat ${this.#modelName}`, {
      kind: CLIENT,
      attributes: { ...this.#base, ...this.#model, "gen_ai.operation.name": "chat" },
    }, within(parent));
  }

  toolSpan(parent, e) {
    const attributes = {
      ...this.#base,
      "gen_ai.operation.name": "execute_tool",
      "gen_ai.tool.name": e.name,
      "gen_ai.tool.call.id": e.callId,
      "gen_ai.tool.type": "function",
    };
    if (this.#inputs) attributes["gen_ai.tool.call.arguments"] = JSON.stringify(e.inputs ?? null);
    return this.#tracer.startSpan(`execute_tool ${e.name}`, { kind: INTERNAL, attributes }, within(parent));
  }

  get recordOutputs() { return this.#outputs; }
}

/** The spans of one call's run, opened and closed by its events. */
class Run {
  #t;
  #span;
  #chat = null;
  #tools = new Map(); // callId → execute_tool span
  #tail = null; // the last tool_call message this run wrote

  constructor(t, span) {
    this.#t = t;
    this.#span = span;
  }

  event(e) {
    try {
      this.#on(e);
    } catch {
      // A tracer that throws never stops the run.
    }
  }

  #on(e) {
    switch (e?.type) {
      case "message":
      case "message_updated":
        if (e.message?.type === "tool_call") this.#tail = e.message;
        break;
      case "model_call_started":
        this.#chat?.end();
        this.#chat = this.#t.chatSpan(this.#span);
        break;
      case "model_call_ended": {
        const c = this.#chat;
        if (!c) break;
        this.#chat = null;
        if (e.usage) {
          c.setAttribute("gen_ai.usage.input_tokens", e.usage.input_tokens);
          c.setAttribute("gen_ai.usage.output_tokens", e.usage.output_tokens);
        }
        if (e.stopReason) c.setAttribute("gen_ai.response.finish_reasons", [e.stopReason]);
        if (!e.ok) {
          c.setStatus({ code: ERROR, message: e.error?.message });
          c.setAttribute("error.type", e.error?.code ?? "_OTHER");
        }
        c.end();
        break;
      }
      case "retry":
        this.#chat?.addEvent("gen_ai.retry", {
          "gatehouse.retry.attempt": e.attempt,
          "gatehouse.retry.delay_ms": e.delayMs,
          "error.type": e.error?.code ?? "_OTHER",
        });
        break;
      case "tool_started":
        this.#tools.get(e.callId)?.end();
        this.#tools.set(e.callId, this.#t.toolSpan(this.#span, e));
        break;
      case "tool_result": {
        const s = this.#tools.get(e.callId);
        if (!s) break;
        this.#tools.delete(e.callId);
        if (!e.ok) {
          s.setStatus({ code: ERROR, message: typeof e.result === "string" ? e.result : undefined });
          s.setAttribute("error.type", "tool_error");
        }
        if (this.#t.recordOutputs) s.setAttribute("gen_ai.tool.call.result", JSON.stringify(e.result ?? null));
        s.end();
        break;
      }
    }
  }

  /** The calls whose decision this run wrote: those of the last tool_call message it wrote,
   *  once none of them waits (a decision is revisable until the last one is made). */
  decided() {
    const tools = this.#tail?.tools ?? [];
    if (tools.some((e) => e.approval === "pending")) return [];
    return tools.filter((e) => e.approval != null).map((e) => e.callId);
  }

  /** The call ended (`error`: what it threw): spans still open end with it. */
  close(error) {
    for (const s of [this.#chat, ...this.#tools.values()]) {
      if (!s) continue;
      if (error) failed(s, error);
      else s.setAttribute("gatehouse.cut_off", true);
      s.end();
    }
    this.#chat = null;
    this.#tools.clear();
  }
}

// The events that end a run.
const FINAL = ["completed", "awaiting_approval", "awaiting_tool_results", "awaiting_device"];

function failed(span, e) {
  span.setStatus({ code: ERROR, message: e?.message ?? String(e) });
  span.setAttribute("error.type", typeof e?.code === "string" ? e.code : "_OTHER");
  try {
    span.recordException(e);
  } catch {
    // not an Error
  }
}

/** A stored message as the GenAI conventions' message: role and parts. */
function messageOf(m) {
  const parts = [];
  for (const b of m.content ?? []) {
    if (b.type === "text") parts.push({ type: "text", content: b.content });
  }
  for (const t of m.tools ?? []) {
    parts.push({ type: "tool_call", id: t.callId, name: t.name, arguments: t.inputs });
  }
  return { role: m.role, parts };
}
