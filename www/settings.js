// Model settings of the demo app. The provider, base URL and model are kept in localStorage.
// API keys stay in memory (lost on reload) unless the user ticks "remember", which stores
// them in localStorage (in plain text: the settings panel says so). Keys never go to
// IndexedDB: the SDK does not store them either.

const STORE = 'gatehouse-demo.settings';
const KEYS = 'gatehouse-demo.apiKeys';

export const PROVIDERS = {
  demo: { title: 'Demo model', detail: 'built in, offline, no key' },
  openai: {
    title: 'OpenAI-compatible', detail: 'OpenAI, Ollama, vLLM, LM Studio…',
    baseUrl: 'https://api.openai.com/v1', model: 'gpt-4o-mini',
  },
  anthropic: {
    title: 'Anthropic', detail: 'Messages API',
    baseUrl: 'https://api.anthropic.com', model: 'claude-sonnet-4-5',
  },
  // A GGUF file run in this page (gatehouse-agent/local); `make demo` serves the test model
  // here (scripts/serve-demo.sh).
  local: {
    title: 'In-browser model', detail: 'a GGUF file run in this page, offline once loaded',
    url: '/target/demo/models/SmolLM2-135M-Instruct.Q4_1.gguf',
  },
};

/** The providers reached over HTTP, with a base URL, a model name and a key of their own. */
const REMOTE = Object.keys(PROVIDERS).filter((p) => PROVIDERS[p].baseUrl);
const memoryKeys = Object.fromEntries(REMOTE.map((p) => [p, '']));
let mcpToken = ''; // the MCP server's bearer token: memory only

function read(key) {
  try {
    return JSON.parse(localStorage.getItem(key) || 'null');
  } catch {
    return null;
  }
}

/** The current settings: `{ provider, rememberKey, mcp, local: {url}, openai: {baseUrl, model, apiKey}, anthropic: {…}, … }`. */
export function loadSettings() {
  const s = read(STORE) || {};
  const stored = read(KEYS) || {};
  const out = {
    provider: PROVIDERS[s.provider] ? s.provider : 'demo',
    rememberKey: !!s.rememberKey,
    mcp: { url: typeof s.mcp?.url === 'string' ? s.mcp.url : '', token: mcpToken },
  };
  for (const p of REMOTE) {
    out[p] = {
      baseUrl: s[p]?.baseUrl || PROVIDERS[p].baseUrl,
      model: s[p]?.model || PROVIDERS[p].model,
      apiKey: memoryKeys[p] || (out.rememberKey ? stored[p] || '' : ''),
    };
  }
  out.local = { url: s.local?.url || PROVIDERS.local.url };
  return out;
}

export function saveSettings(s) {
  const plain = { provider: s.provider, rememberKey: !!s.rememberKey, mcp: { url: s.mcp.url.trim() } };
  mcpToken = s.mcp.token || '';
  for (const p of REMOTE) {
    plain[p] = { baseUrl: s[p].baseUrl.trim(), model: s[p].model.trim() };
    memoryKeys[p] = s[p].apiKey || '';
  }
  plain.local = { url: s.local.url.trim() };
  localStorage.setItem(STORE, JSON.stringify(plain));
  if (s.rememberKey) {
    localStorage.setItem(KEYS, JSON.stringify(memoryKeys));
  } else {
    localStorage.removeItem(KEYS);
  }
}

/** The `model` option for `Agent.open`. */
export function modelOptions(s) {
  if (s.provider === 'demo') return { provider: 'demo' };
  // The demo's tools are gated; a model this small calls one only when made to, so the answer
  // to each message is a call and the answer to its result is text (README "A model in the page").
  if (s.provider === 'local') return { provider: 'local', url: s.local.url, maxTokens: 256, toolChoice: 'required' };
  const p = s[s.provider];
  const o = { provider: s.provider, baseUrl: p.baseUrl, model: p.model, maxRetries: 2 };
  if (p.apiKey) o.apiKey = p.apiKey;
  return o;
}

/** The `mcpServers` option for `Agent.open`: the one server of the settings, if any. */
export function mcpOptions(s) {
  if (!s.mcp.url) return [];
  const server = { name: 'mcp', url: s.mcp.url };
  if (s.mcp.token) server.headers = { authorization: `Bearer ${s.mcp.token}` };
  return [server];
}

/** A short label for the header, e.g. "Demo model · offline" or "OpenAI-compatible · gpt-4o-mini". */
export function modelLabel(s) {
  if (s.provider === 'demo') return 'Demo model · offline';
  if (s.provider === 'local') return `In-browser model · ${s.local.url.split('/').pop()}`;
  return `${PROVIDERS[s.provider].title} · ${s[s.provider].model}`;
}
