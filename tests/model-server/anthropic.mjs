// Anthropic Messages wire format (POST /v1/messages).
//
// Non-streaming: { id, type: "message", role, model, content: [text | tool_use blocks], stop_reason,
//   stop_sequence, usage: { input_tokens, output_tokens, ... } }.
// Streaming (`stream: true`): `event: <type>\ndata: <json>\n\n` with
//   message_start -> per block: content_block_start (text: {text:""} | tool_use: {id,name,input:{}}),
//   content_block_delta (text_delta | input_json_delta partial_json, first fragment ""), content_block_stop
//   -> message_delta { delta: { stop_reason, stop_sequence }, usage: { output_tokens } } -> message_stop.
//   One `ping` follows the first content_block_start (or message_start when there is no block).
// Errors: HTTP status + { type: "error", error: { type, message }, request_id };
//   mid-stream: `event: error` with { type: "error", error: { type, message } }.

import { randomBytes } from 'node:crypto';

const rid = (n = 12) => randomBytes(n).toString('hex');

const FROM_OPENAI = { stop: 'end_turn', tool_calls: 'tool_use', length: 'max_tokens' };

function stopReason(plan) {
  if (plan.stopReason !== undefined) return FROM_OPENAI[plan.stopReason] ?? plan.stopReason;
  return plan.toolCalls.length ? 'tool_use' : 'end_turn';
}

function toolInput(tc) {
  // An invalid-JSON string argument cannot be an object here; it is sent as the raw string
  // (the non-streaming form has no way to carry broken JSON otherwise).
  return tc.argsValue;
}

const DEFAULT_ERRORS = {
  400: ['invalid_request_error', 'Invalid request.'],
  401: ['authentication_error', 'invalid x-api-key'],
  402: ['billing_error', 'Billing issue.'],
  403: ['permission_error', 'Your API key does not have permission to use the specified resource.'],
  404: ['not_found_error', 'Not found.'],
  405: ['invalid_request_error', 'Method not allowed.'],
  409: ['conflict_error', 'Conflict.'],
  413: ['request_too_large', 'Request exceeds the maximum allowed number of bytes.'],
  429: ['rate_limit_error', 'Number of requests has exceeded your rate limit.'],
  500: ['api_error', 'Internal server error'],
  529: ['overloaded_error', 'Overloaded'],
};

const event = (type, obj) => `event: ${type}\ndata: ${JSON.stringify(obj)}\n\n`;

export const anthropic = {
  name: 'anthropic',

  errorBody(status, over = {}, requestId = `req_${rid()}`) {
    const [type, message] = DEFAULT_ERRORS[status] ??
      (status >= 500 ? DEFAULT_ERRORS[500] : ['invalid_request_error', `HTTP ${status}`]);
    return { type: 'error', error: { type: over.type ?? type, message: over.message ?? message }, request_id: requestId };
  },

  streamErrorEvent(err = {}) {
    return event('error', { type: 'error', error: { type: err.type ?? 'overloaded_error', message: err.message ?? 'Overloaded' } });
  },

  responseHeaders(meta) {
    return { 'request-id': meta.requestId, 'anthropic-organization-id': 'model-server' };
  },

  requestId() { return `req_${rid()}`; },

  stream(plan, meta) {
    const u = plan.usage;
    const events = [event('message_start', {
      type: 'message_start',
      message: {
        id: `msg_${rid()}`, type: 'message', role: 'assistant', model: meta.model, content: [],
        stop_reason: null, stop_sequence: null,
        usage: { input_tokens: u.input, cache_creation_input_tokens: u.cacheCreation,
          cache_read_input_tokens: u.cacheRead, output_tokens: 1 },
      },
    })];
    let index = 0;
    let pinged = false;
    const ping = () => { if (!pinged) { pinged = true; events.push(event('ping', { type: 'ping' })); } };
    if (plan.textPieces.length) {
      events.push(event('content_block_start', { type: 'content_block_start', index, content_block: { type: 'text', text: '' } }));
      ping();
      const pre = `event: content_block_delta\ndata: {"type":"content_block_delta","index":${index},"delta":{"type":"text_delta","text":`;
      for (const piece of plan.textPieces) events.push(`${pre}${JSON.stringify(piece)}}}\n\n`);
      events.push(event('content_block_stop', { type: 'content_block_stop', index }));
      index++;
    }
    for (const tc of plan.toolCalls) {
      events.push(event('content_block_start', {
        type: 'content_block_start', index,
        content_block: { type: 'tool_use', id: tc.id ?? `toolu_${rid()}`, name: tc.name, input: {} },
      }));
      ping();
      for (const frag of ['', ...tc.argPieces]) {
        events.push(event('content_block_delta', { type: 'content_block_delta', index, delta: { type: 'input_json_delta', partial_json: frag } }));
      }
      events.push(event('content_block_stop', { type: 'content_block_stop', index }));
      index++;
    }
    ping();
    events.push(event('message_delta', {
      type: 'message_delta', delta: { stop_reason: stopReason(plan), stop_sequence: null }, usage: { output_tokens: u.output },
    }));
    events.push(event('message_stop', { type: 'message_stop' }));
    return { events, terminal: 1 };
  },

  json(plan, meta) {
    const content = [];
    if (plan.textPieces.length) content.push({ type: 'text', text: plan.fullText });
    for (const tc of plan.toolCalls) {
      content.push({ type: 'tool_use', id: tc.id ?? `toolu_${rid()}`, name: tc.name, input: toolInput(tc) });
    }
    const u = plan.usage;
    return {
      id: `msg_${rid()}`, type: 'message', role: 'assistant', model: meta.model, content,
      stop_reason: stopReason(plan), stop_sequence: null,
      usage: { input_tokens: u.input, cache_creation_input_tokens: u.cacheCreation,
        cache_read_input_tokens: u.cacheRead, output_tokens: u.output },
    };
  },
};
