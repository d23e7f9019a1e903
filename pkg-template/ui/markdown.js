// @ts-check
// Answers as Markdown, safely: `marked` parses (GitHub-flavoured, line breaks kept), with raw
// HTML off — an HTML block or tag in the text is shown as its source text, never parsed — and
// DOMPurify then keeps only the elements and attributes below, with its safe-URL rule
// (http, https, mailto, tel…; no `javascript:` or `data:`). Links open in a new tab with
// `rel="noopener noreferrer"`. Images are not loaded: a model (or a prompt injection in a tool
// result) could put data in an image URL and have the page send it; they become links.
// Only gatehouse-agent/ui imports this module: the main entry never loads these libraries.

import { Marked } from 'marked';
import DOMPurify from 'dompurify';

const ESCAPES = { '&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;', "'": '&#39;' };
const escape = (s) => String(s).replace(/[&<>"']/g, (c) => ESCAPES[c]);

const marked = new Marked({ gfm: true, breaks: true, async: false });
marked.use({
  renderer: {
    // Raw HTML, block or inline: its source, as text.
    html: ({ text }) => escape(text),
    image: ({ href, text }) => `<a href="${escape(href)}">${escape(text || href)}</a>`,
  },
});

const ALLOWED_TAGS = ['p', 'br', 'hr', 'strong', 'em', 'del', 'code', 'pre', 'blockquote', 'a',
  'ul', 'ol', 'li', 'h1', 'h2', 'h3', 'h4', 'h5', 'h6', 'table', 'thead', 'tbody', 'tr', 'th', 'td',
  'input'];
const ALLOWED_ATTR = ['href', 'title', 'start', 'align', 'type', 'checked', 'disabled', 'class'];

let purifier = null;

/** A DOMPurify instance of our own, so its hooks never touch the app's. */
function purify() {
  if (purifier) return purifier;
  purifier = DOMPurify(window);
  purifier.addHook('afterSanitizeAttributes', (node) => {
    if (node.tagName === 'A' && node.hasAttribute('href')) {
      node.setAttribute('target', '_blank');
      node.setAttribute('rel', 'noopener noreferrer');
    }
    // Task-list checkboxes only, and never editable.
    if (node.tagName === 'INPUT' && node.getAttribute('type') !== 'checkbox') node.remove();
    else if (node.tagName === 'INPUT') node.setAttribute('disabled', '');
    // Only marked's own `language-*` classes on code blocks.
    const cls = node.getAttribute?.('class');
    if (cls && !(node.tagName === 'CODE' && /^language-[\w+#.-]{1,32}$/.test(cls))) node.removeAttribute('class');
  });
  return purifier;
}

/** The Markdown `text` as a sanitized DocumentFragment (never a string given to innerHTML). */
export function renderMarkdown(text) {
  const html = marked.parse(String(text ?? ''));
  return purify().sanitize(html, {
    ALLOWED_TAGS,
    ALLOWED_ATTR,
    ADD_ATTR: ['target'],
    RETURN_DOM_FRAGMENT: true,
  });
}

/** Fills `el` (class `gh-md`) with the rendered Markdown of `text`. */
export function setMarkdown(el, text) {
  el.replaceChildren(renderMarkdown(text));
  return el;
}
