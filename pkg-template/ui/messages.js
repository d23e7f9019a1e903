// @ts-check
// The messages a view shows, kept from a run's events: one reducer for the React hook
// (gatehouse-agent/react) and the chat view (gatehouse-agent/ui), so both show a message once,
// however it reaches them (an event, then a live reload; or the other way round).

/**
 * `messages` with `message` in it: in place of the one with the same `__id`, else at the end.
 * The array is new when anything changed.
 * @template {{ __id?: string }} M
 * @param {M[]} messages
 * @param {M} message
 * @returns {M[]}
 */
export function upsertMessage(messages, message) {
  const at = messages.findIndex((m) => m.__id === message.__id);
  if (at < 0) return [...messages, message];
  const next = messages.slice();
  next[at] = message;
  return next;
}

/**
 * The messages after one event of a run: `message` (a new message stored) and
 * `message_updated` (the tail rewritten) put the event's message in by `__id`; any other event
 * leaves them as they were (the same array).
 * @template {{ __id?: string }} M
 * @param {M[]} messages
 * @param {{ type: string, message?: M }} event
 * @returns {M[]}
 */
export function messagesAfter(messages, event) {
  if ((event.type === 'message' || event.type === 'message_updated') && event.message) {
    return upsertMessage(messages, event.message);
  }
  return messages;
}
