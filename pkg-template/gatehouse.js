// @ts-check
// The package entry: the wasm-bindgen module (gatehouse_wasm.js) behind a small lifecycle,
// so that misuse is a GatehouseError with a code, never a raw wasm-bindgen error. A call
// before init() is `not_initialized` (a call while init() runs waits for it); dispose()
// while a call runs lets it finish and releases the agent after; any call after dispose()
// is `disposed`. scripts/build-pkg.sh fills in the path of the error module.
// The loaders and the registrations of the lazy modules are left out of gatehouse_wasm.d.ts
// (the users' types, which gatehouse.d.ts re-exports), so the type check cannot see them.
// @ts-expect-error: see above
import initWasm, { initSync as initSyncWasm, Agent as Core, setDemoModel, setMcpClient, setGrantsModule } from "./gatehouse_wasm.js";
import { GatehouseError, isGatehouseError } from "__ERROR_MODULE__";

export { GatehouseError, isGatehouseError };

// Only for TypeScript: it infers the inputs from `parameters` (gatehouse.d.ts).
export const defineTool = (tool) => tool;

let ready = null;
let loaded = false; // init() has finished: synchronous calls may go ahead
let mainLoaded = false; // the main module is loaded (init() or initSync() finished)

// The offline demo model is not in the main wasm: its module loads at its first model call,
// so an agent with another model, or one that never calls a model (a device that only reads
// and decides), never fetches it (docs/design.md, "The demo model").
const demoModel = async (request) => (await import("./demo-model/index.js")).demoCall(request);
// Nor is the MCP client: its module loads when an agent with `mcpServers` first asks a server
// (docs/design.md, "MCP tools").
// The page's WebMCP tools come in as one more server (`webmcp:`), whose connection is
// webmcp.js's instead (docs/design.md, "WebMCP").
const mcpClient = async (config) => JSON.parse(config).url === "webmcp:"
  ? (await import("./webmcp.js")).connect(config)
  : (await import("./mcp/index.js")).connect(config);
// Nor are remembered grants' reader and matcher: the stores keep grants as JSON, and their
// module loads when a grant is made or listed, or when a thread's store holds one as its
// calls are gated (docs/design.md, "The grants' module").
const grants = () => import("./grants/index.js");
const grantsModule = { book: async (texts, thread) => (await grants()).book(texts, thread) };
const invalidGrant = (message) => new GatehouseError("invalid_grant", message, false);
const grantsUnloaded = (e) => new GatehouseError("network", "the grants' module (grants/) could not be " +
  `loaded: ${e?.message ?? e}. Nothing was changed; try again`, true);
// agent.grant() and agent.grants(), over the core's store (`putGrant`, `grantTexts`).
const GRANTS = {
  async grant(core, request, options) {
    if (options !== undefined && options !== null) {
      if (typeof options !== "object" || Array.isArray(options)) throw invalidGrant("grant(options): expected an object { by }");
      const extra = Object.keys(options).find((k) => k !== "by");
      if (extra !== undefined) throw invalidGrant(`grant(options): unknown field \`${extra}\`, expected \`by\``);
      if (options.by !== undefined && options.by !== null && typeof options.by !== "string") {
        throw invalidGrant("grant(options): `by` must be a string");
      }
    }
    let text;
    try {
      text = JSON.stringify(request) ?? "null";
    } catch (e) {
      throw invalidGrant(`invalid grant: ${e?.message ?? e}`);
    }
    const now = Date.now();
    const id = `grant_${now.toString(16)}${Math.floor(Math.random() * 0xffffffff).toString(16).padStart(8, "0")}`;
    let grant;
    try {
      grant = await (await grants()).make(text, core.threadId, id, now, options?.by ?? undefined);
    } catch (e) {
      throw typeof e === "string" ? invalidGrant(e) : grantsUnloaded(e);
    }
    return JSON.parse(await core.putGrant(id, grant, text));
  },
  async grants(core) {
    const texts = await core.grantTexts();
    if (texts.length === 0) return [];
    const listed = await grants().then((m) => m.inForce(texts, core.threadId, Date.now()), (e) => {
      throw grantsUnloaded(e);
    });
    return listed.map((t) => JSON.parse(t));
  },
};
const register = (m) => {
  m.setDemoModel(demoModel);
  m.setMcpClient(mcpClient);
  m.setGrantsModule(grantsModule);
};

// Nor is the remote store (docs/design.md, "The remote store's module"): the main wasm is
// built without it, and the same crate built with it (gatehouse_remote.js and its wasm) loads
// for the first agent, list or subscription with `storage.kind: "remote"`, or at
// initRemote(). Agents of other stores stay in the main module.
let remote = null; // the remote module's load, once asked for
let remoteCore = null; // its Agent class, once loaded

function loadRemote(input) {
  remote ??= import("./gatehouse_remote.js")
    // (Its init and registrations are left out of gatehouse_remote.d.ts, as the main one's.)
    .then(async (/** @type {any} */ m) => {
      await m.default(input);
      register(m);
      remoteCore = m.Agent;
    })
    .catch((e) => {
      remote = null; // a later call (online again, or with a working URL) may try again
      throw new GatehouseError("network", "the remote store's module (gatehouse_remote_bg.wasm) could not be loaded: " +
        `${e?.message ?? e}. Nothing was changed; try again, or pass its URL to initRemote()`, true);
    });
  return remote;
}

export default function init(input) {
  // @ts-expect-error: not in gatehouse_wasm.d.ts (see the import)
  ready ??= initWasm(input).then(
    () => {
      register({ setDemoModel, setMcpClient, setGrantsModule });
      mainLoaded = true;
      loaded = true;
    },
    (e) => {
      ready = null; // a later init() (with a working URL) may try again
      throw e;
    },
  );
  return ready;
}

export function initSync(input) {
  initSyncWasm(input);
  register({ setDemoModel, setMcpClient, setGrantsModule });
  ready = Promise.resolve();
  mainLoaded = true;
  loaded = true;
}

/** Loads the module with the remote store now: an app whose threads are remote calls it
 *  instead of init() (then every agent runs in it, and the main wasm is never fetched), or
 *  beside it, to load it before the first remote agent opens. */
export function initRemote(input) {
  const r = loadRemote(input);
  if (!ready) {
    ready = r.then(() => { loaded = true; });
    ready.catch(() => (ready = null));
  }
  return r;
}

/** The Agent class of the module that serves `storage`. */
async function coreFor(storage) {
  await initialized();
  if (storage?.kind === "remote" || !mainLoaded) {
    await loadRemote();
    return remoteCore;
  }
  return Core;
}

// A trap (a Rust panic, compiled to `unreachable`, or any other wasm fault) leaves the module in
// a state nothing vouches for: it is reported as a GatehouseError `internal`, and every later
// call is `internal` too, until the page (or worker) loads the module again. Stored threads are
// intact: each write is one transaction (README, "Errors").
let trapped = null;

function internal() {
  return new GatehouseError("internal", "Gatehouse stopped after an internal error" +
    ` (${trapped}); reload the page to use it again. Stored threads are intact.`, false);
}

/** Runs `f`, a call into the wasm: a trap becomes `internal` (and so does every call after). */
function guard(f) {
  if (trapped) throw internal();
  try {
    const out = f();
    return out && typeof out.then === "function" ? out.catch(rethrow) : out;
  } catch (e) {
    return rethrow(e);
  }
}

function rethrow(e) {
  if (e instanceof WebAssembly.RuntimeError) {
    trapped ??= e.message || "a wasm trap";
    throw internal();
  }
  throw e;
}

async function initialized() {
  if (!ready) {
    throw new GatehouseError(
      "not_initialized",
      "Gatehouse is not initialized: call `await init()` (or `initSync({ module })`) before using Agent",
      false,
    );
  }
  await ready;
}

/** The calls that run the thread (and take `onEvent`). */
const RUNS = new Set(["chat", "submitDecisions", "submitToolResults", "retry", "handle"]);

export class Agent {
  #core;
  #calls = 0;
  #disposed = null; // the promise dispose() returns, once called
  #release;

  #telemetry;
  #questions; // the MCP servers' questions (mcp/questions.js), for an agent with mcpServers
  #listeners = new Set(); // subscribe()'s, told when a question comes or goes

  constructor(core, telemetry = null, questions = null) {
    this.#core = core;
    this.#telemetry = telemetry;
    // Runs the agent starts by itself are traced too (docs/design.md, "Telemetry").
    if (telemetry) guard(() => core.setBackgroundHook(telemetry.hook(this)));
    // MCP elicitation (docs/design.md, "MCP elicitation"): the questions wait in JS, beside
    // the wasm; subscribers hear them come and go.
    this.#questions = questions;
    if (questions) {
      questions.changed = () => {
        if (this.#disposed || this.#listeners.size === 0) return;
        const change = { threadId: this.threadId, status: this.status(), lastMessage: this.lastMessage() };
        for (const l of this.#listeners) {
          try {
            l(change);
          } catch (e) {
            console.warn("gatehouse: a subscribe() listener threw", e);
          }
        }
      };
      guard(() => core.setElicitationHook(questions.hook));
    }
  }

  static async open(options) {
    await initialized();
    // An agent whose model is the demo fetches the demo's module as it opens, so that its
    // first answer needs no network; a remote thread's device without a model (it reads and
    // decides, model_here) does not.
    const model = options?.model;
    if ((model == null || model.provider === "demo") && options?.storage?.kind !== "remote") {
      import("./demo-model/index.js").then((m) => m.loadDemoModel()).catch(() => {});
    }
    const invalid = (m) => new GatehouseError("invalid_config", `invalid configuration: Agent.open: ${m}`, false);
    // OpenTelemetry spans: their module loads only for an agent given a tracer
    // (docs/design.md, "Telemetry"); it reads the options as the app wrote them.
    const telemetry = options?.telemetry == null ? null
      : (await import("./telemetry.js")).telemetryOf(options, invalid);
    if (options?.webmcp != null && options.webmcp !== false) {
      const { webmcpServer } = await import("./webmcp.js");
      const { webmcp, ...rest } = options;
      options = { ...rest, mcpServers: [...(Array.isArray(rest.mcpServers) ? rest.mcpServers : []), webmcpServer(webmcp, invalid)] };
    }
    if (options?.model?.provider === "local") {
      // The in-page model's module loads only now (docs/design.md, "A model in the page").
      const { localModel } = await import("./local/index.js");
      options = { ...options, model: localModel(options.model, invalid) };
    }
    const core = await coreFor(options?.storage);
    // The MCP servers' questions: their module loads only for an agent with MCP servers; a
    // form's answer is checked with this module's schema validator.
    const questions = Array.isArray(options?.mcpServers) && options.mcpServers.length > 0
      ? new (await import("./mcp/questions.js")).Questions((schema, content) => guard(() => core.checkJson(schema, content)))
      : null;
    return new Agent(await guard(() => core.open(options)), telemetry, questions);
  }

  static async listThreads(storage) {
    const core = await coreFor(storage);
    return guard(() => core.listThreads(storage));
  }

  static async deleteThread(threadId, storage) {
    const core = await coreFor(storage);
    return guard(() => core.deleteThread(threadId, storage));
  }

  static subscribeThreads(storage, listener) {
    if (!loaded) {
      throw new GatehouseError(
        "not_initialized",
        "Gatehouse is not initialized: `await init()` (or call `initSync({ module })`) before Agent.subscribeThreads",
        false,
      );
    }
    if (typeof listener !== "function") {
      throw new GatehouseError("invalid_config", "subscribeThreads(storage, listener): the listener must be a function", false);
    }
    const core = storage?.kind === "remote" || !mainLoaded ? remoteCore : Core;
    if (core) {
      const stop = guard(() => core.subscribeThreads(storage, listener));
      return () => guard(stop);
    }
    // A remote store's first subscription before its module loaded: it starts once the module
    // has loaded (unless stopped before); what goes wrong meanwhile is said on the console,
    // since nothing else is there to hear it. initRemote() first makes this synchronous.
    let stop = null;
    let stopped = false;
    loadRemote().then(() => {
      if (!stopped) stop = guard(() => remoteCore.subscribeThreads(storage, listener));
    }).catch((e) => console.error("Gatehouse: Agent.subscribeThreads:", e));
    return () => {
      stopped = true;
      if (stop) guard(stop);
    };
  }

  #live(method) {
    if (this.#disposed) {
      throw new GatehouseError("disposed", `${method}(): this agent was disposed; open the thread again with Agent.open()`, false);
    }
    return this.#core;
  }

  async #run(method, args) {
    const core = this.#live(method);
    this.#calls++;
    // The questions asked during a run go to its `onEvent`.
    const options = method === "retry" ? args[0] : args[1];
    const runs = this.#questions && RUNS.has(method);
    if (runs) this.#questions.listener = options?.onEvent ?? null;
    try {
      const call = Object.hasOwn(GRANTS, method) ? (a) => GRANTS[method](core, ...a) : (a) => core[method](...a);
      if (this.#telemetry) return await this.#telemetry.invoke(this, method, args, (a) => guard(() => call(a)));
      return await guard(() => call(args));
    } finally {
      if (runs && this.#questions.listener === (options?.onEvent ?? null)) this.#questions.listener = null;
      if (--this.#calls === 0 && this.#disposed) this.#release();
    }
  }

  chat(...a) { return this.#run("chat", a); }
  submitDecisions(...a) { return this.#run("submitDecisions", a); }
  submitToolResults(...a) { return this.#run("submitToolResults", a); }
  retry(...a) { return this.#run("retry", a); }
  handle(...a) { return this.#run("handle", a); }
  async messages(...a) {
    const page = await this.#run("messages", a);
    const last = page.at(-1);
    // The tail is read again (across the wasm boundary) only while a question waits, and not
    // after a dispose() made while it read: the agent may be released by now.
    if (last && this.#questions?.asking && !this.#disposed && last.__id === this.#core.lastMessage()?.__id) {
      this.#shown(last);
    }
    return page;
  }
  audit(...a) { return this.#run("audit", a); }
  setToolPolicy(...a) { return this.#run("setToolPolicy", a); }
  grant(...a) { return this.#run("grant", a); }
  grants(...a) { return this.#run("grants", a); }
  revokeGrant(...a) { return this.#run("revokeGrant", a); }
  refresh(...a) { return this.#run("refresh", a); }
  pendingTools() { return guard(() => this.#live("pendingTools").pendingTools()); }
  pendingToolResults() { return guard(() => this.#live("pendingToolResults").pendingToolResults()); }
  /** The questions MCP servers ask while their calls run here (docs/design.md, "MCP elicitation"). */
  pendingElicitations() {
    this.#live("pendingElicitations");
    return this.#questions?.pending() ?? [];
  }
  /** Answers them by id; the whole map is checked before any answer is sent. */
  submitElicitations(answers) {
    this.#live("submitElicitations");
    if (this.#questions) return this.#questions.submit(answers);
    if (answers === null || typeof answers !== "object" || Array.isArray(answers)) {
      throw new GatehouseError("invalid_elicitation_answer",
        "submitElicitations(answers): answers must be an object keyed by question id", false);
    }
    for (const id of Object.keys(answers)) {
      throw new GatehouseError("unknown_elicitation", `no elicitation "${id}" waits for an answer`, false);
    }
  }
  status() { return guard(() => this.#live("status").status()); }
  lastMessage() { return this.#shown(guard(() => this.#live("lastMessage").lastMessage())); }
  /** A message as this agent shows it: the tail with the questions waiting on its calls. */
  #shown(message) {
    return this.#questions ? this.#questions.shown(message) : message;
  }
  toolPolicies() { return guard(() => this.#live("toolPolicies").toolPolicies()); }
  subscribe(listener) {
    if (typeof listener !== "function") {
      throw new GatehouseError("invalid_config", "subscribe(listener): the listener must be a function", false);
    }
    // Nothing is heard after dispose(), even from a call that finishes after it.
    const heard = (change) => {
      if (this.#disposed) return;
      this.#shown(change.lastMessage);
      listener(change);
    };
    const off = guard(() => this.#live("subscribe").subscribe(heard));
    this.#listeners.add(heard);
    return () => {
      this.#listeners.delete(heard);
      guard(off);
    };
  }
  get threadId() { return guard(() => this.#live("threadId").threadId); }
  get messageCount() { return guard(() => this.#live("messageCount").messageCount); }

  dispose() {
    if (!this.#disposed) {
      this.#disposed = new Promise((resolve) => {
        this.#release = () => {
          this.#core.free();
          resolve();
        };
      });
      if (this.#calls === 0) this.#release();
    }
    return this.#disposed;
  }

  free() {
    this.dispose();
  }
}

if (Symbol.dispose) Agent.prototype[Symbol.dispose] = Agent.prototype.free;
if (Symbol.asyncDispose) Agent.prototype[Symbol.asyncDispose] = Agent.prototype.dispose;
