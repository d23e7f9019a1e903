// @ts-check
// <gatehouse-chat>: the Gatehouse chat as an embeddable custom element (shadow DOM).
// Importing this module defines nothing: gatehouse-agent/ui/element (element.js) defines it
// on import, or the app calls defineGatehouseChat() from gatehouse-agent/ui.
//
//   <script type="module" src="/node_modules/gatehouse-agent/ui/element.js"></script>
//   <gatehouse-chat thread-id="support" tools="/assistant-tools.js"></gatehouse-chat>
//
// Attributes (all optional except where noted):
//   thread-id   the thread to show (default "gatehouse-widget"); kept in IndexedDB
//   provider    "demo" (default: the offline demo model), "openai" or "anthropic"
//   base-url    the model server, for openai/anthropic (e.g. your own proxy)
//   model       the model name, for openai/anthropic
//   database    the IndexedDB database name (default "gatehouse-widget")
//   tools       URL of an ES module that exports `tools` (an array of Gatehouse tool
//               definitions) and optionally `suggestions` (strings offered on an empty thread)
//   heading     the title shown at the top (default "Assistant")
//   instructions  the system instructions
// API keys are deliberately not an attribute: put a key-holding proxy behind `base-url`.
// Events: `gatehouse-change` (bubbles, composed) after every run.

import init, { Agent } from '../gatehouse.js';
import { ChatView } from './chat-view.js';
import { h } from './cards.js';

export class GatehouseChat extends HTMLElement {
  static observedAttributes = ['thread-id', 'provider', 'base-url', 'model', 'database', 'tools', 'heading', 'instructions'];

  #view = null;
  #title = null;
  #modelTag = null;
  #pending = null;
  #opened = 0;

  connectedCallback() {
    if (!this.shadowRoot) this.#build();
    this.#view.listen();
    this.#scheduleOpen();
  }

  disconnectedCallback() {
    this.#view?.destroy();
  }

  attributeChangedCallback(name, oldValue, newValue) {
    if (!this.#view || oldValue === newValue) return;
    if (name === 'heading') {
      this.#title.textContent = newValue || 'Assistant';
      return;
    }
    this.#scheduleOpen();
  }

  /** The open `Agent` (for pages that want to drive it), or null while loading. */
  get agent() {
    return this.#view?.agent ?? null;
  }

  #build() {
    const root = this.attachShadow({ mode: 'open' });
    // The stylesheet beside this module, loaded into the shadow root when an element is built.
    const links = [h('link', { rel: 'stylesheet', href: new URL('./gatehouse.css', import.meta.url).href })];
    const loaded = Promise.all(links.map((l) => new Promise((r) => { l.onload = r; l.onerror = r; })));
    this.#title = h('span', { class: 'gh-widget-title' }, this.getAttribute('heading') || 'Assistant');
    this.#modelTag = h('span', { class: 'gh-widget-model' });
    const chat = h('div', { class: 'gh-widget-chat' });
    const box = h('div', { class: 'gh-widget', part: 'container', hidden: true },
      h('header', { class: 'gh-widget-head', part: 'header' }, this.#title, this.#modelTag), chat);
    root.append(...links, box);
    loaded.then(() => { box.hidden = false; });
    this.#view = new ChatView({
      root: chat,
      onChange: () => this.dispatchEvent(new CustomEvent('gatehouse-change', { bubbles: true, composed: true })),
    });
  }

  #scheduleOpen() {
    if (this.#pending) return;
    this.#pending = Promise.resolve().then(() => {
      this.#pending = null;
      return this.#open();
    });
  }

  async #open() {
    const ticket = ++this.#opened;
    const view = this.#view;
    try {
      await init(); // the same promise for every caller; the wasm loads with the first widget
      const provider = this.getAttribute('provider') || 'demo';
      const name = this.getAttribute('model') || '';
      // The provider is the attribute's: Agent.open refuses an unknown one (invalid_config).
      const model = /** @type {import('../gatehouse.js').ModelOptions} */ (provider === 'demo'
        ? { provider: 'demo' }
        : { provider, baseUrl: this.getAttribute('base-url') || undefined, model: name });
      this.#modelTag.textContent = provider === 'demo' ? 'Demo model · offline' : (name || provider);
      let tools = [];
      let suggestions = [];
      const toolsUrl = this.getAttribute('tools');
      if (toolsUrl) {
        const mod = await import(new URL(toolsUrl, document.baseURI).href);
        tools = Array.isArray(mod.tools) ? mod.tools : [];
        suggestions = Array.isArray(mod.suggestions) ? mod.suggestions : [];
      }
      view.setTools(tools);
      view.suggestions = suggestions;
      view.intro = provider === 'demo'
        ? 'This assistant runs in your browser with an offline demo model. Actions that change things wait for your approval.'
        : 'Actions that change things wait for your approval.';
      const agent = await Agent.open({
        threadId: this.getAttribute('thread-id') || 'gatehouse-widget',
        model,
        instructions: this.getAttribute('instructions') || undefined,
        tools,
        storage: { kind: 'indexeddb', database: this.getAttribute('database') || 'gatehouse-widget' },
      });
      if (ticket !== this.#opened) return; // attributes changed again meanwhile
      await view.setAgent(agent);
      delete this.dataset.failed;
      this.dataset.ready = 'true';
    } catch (e) {
      if (ticket !== this.#opened) return;
      view.setError(`The assistant could not start: ${e?.message ?? e}`);
      this.dataset.failed = String(e?.message ?? e);
    }
  }
}

/** Defines `<gatehouse-chat>` (or `name`) unless the page already has an element of that name;
 *  returns the class the name is defined with. */
export function defineGatehouseChat(name = 'gatehouse-chat') {
  if (!customElements.get(name)) customElements.define(name, name === 'gatehouse-chat' ? GatehouseChat : class extends GatehouseChat {});
  return customElements.get(name);
}
