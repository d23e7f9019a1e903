// @ts-check
// What the chat view says about a failed call and a retry, in words a person can act on:
// a key the server refused points to the settings, a rate limit says when the next try is.

import { isGatehouseError } from '../gatehouse.js';

// A GatehouseError of any copy of the package (by name and code: the kit may meet another's).
export { isGatehouseError };

/** Seconds until a retry, from the SDK's `retry` event or an error's `retryAfter`. */
export function seconds(ms) {
  return Math.max(1, Math.ceil(ms / 1000));
}

/**
 * The banner for a failed call: `{ text, kind, settings }` where `kind` is "error" or "notice"
 * and `settings` says the fix is in the model settings (a refused key).
 */
export function describeError(e, { canRetry = false, offline = false, hasSettings = false } = {}) {
  const code = isGatehouseError(e) ? e.code : 'error';
  const saved = canRetry ? ' Your message is saved: Retry sends it again.' : '';
  switch (code) {
    case 'network':
      return offline
        ? { text: 'You are offline. Your message is saved and will be sent when the connection is back.', kind: 'notice' }
        : { text: `Could not reach the model server.${canRetry ? ' Your message is saved: retry when it is reachable.' : ''}`, kind: 'notice' };
    case 'provider':
      if (e.status === 401 || e.status === 403) {
        const fix = hasSettings ? 'check the API key and the model in the settings' : 'its API key or model was not accepted';
        return {
          text: `The model server refused the request (HTTP ${e.status}): ${fix}.${saved}`,
          kind: 'error',
          settings: true,
        };
      }
      if (e.status === 429) {
        const after = Number(e.retryAfter);
        const when = Number.isFinite(after) && after > 0 ? ` It asks to wait ${Math.ceil(after)} s.` : '';
        return { text: `The model server is rate limiting requests (HTTP 429) and the retries ran out.${when}${saved}`, kind: 'error' };
      }
      return { text: `The model server could not answer: ${e.message}`, kind: 'error' };
    case 'aborted':
      return { text: 'Stopped. Your message is kept: Retry asks the model again, or send a new message.', kind: 'notice' };
    case 'conflict':
      return { text: 'This thread changed in another tab; showing its latest state.', kind: 'error' };
    // The in-page model's file (gatehouse-agent/local): the message names the file and why.
    case 'model_not_gguf':
    case 'model_checksum':
      return { text: `The model file cannot be used: ${e.message}`, kind: 'error', settings: true };
    case 'model_download':
      return { text: `The model could not be downloaded: ${e.message}${saved}`, kind: 'error' };
    case 'quota_exceeded':
      return { text: `This browser has no room left to keep the model: ${e.message}`, kind: 'error' };
    case 'out_of_memory':
      return { text: `The model does not fit in this page's memory; choose a smaller one. ${e.message}`, kind: 'error', settings: true };
    default:
      return { text: `${code === 'error' ? 'Error' : code}: ${e?.message ?? e}`, kind: 'error' };
  }
}

/**
 * The note under a streaming answer while the SDK waits to try a failed model call again
 * (its `retry` event), `left` ms before the next attempt. A rate limit is the provider's HTTP
 * status 429 (`ev.error.status`).
 */
export function retryNote(ev, left) {
  const s = seconds(left);
  const attempt = `attempt ${ev.attempt + 1}`;
  if (ev.error?.status === 429) return `Rate limited — retrying in ${s} s (${attempt})…`;
  return `Connection problem (${ev.error?.code ?? 'error'}); trying again in ${s} s (${attempt})…`;
}
