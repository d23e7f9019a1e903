// OpenAI Chat Completions wire format (POST /v1/chat/completions).
//
// Non-streaming: one `chat.completion` object.
// Streaming (`stream: true`): `data: <chat.completion.chunk>\n\n` lines, then `data: [DONE]\n\n`.
//   - first chunk: delta { role: "assistant", content: "" | null }
//   - text:        delta { content: "<piece>" }
//   - tool call:   first delta { tool_calls: [{ index, id, type: "function", function: { name, arguments: "" } }] },
//                  then delta { tool_calls: [{ index, function: { arguments: "<fragment>" } }] } ...
//   - last choice chunk: delta {}, finish_reason
//   - stream_options.include_usage: every chunk carries `usage: null`, and one extra chunk with
//     `choices: []` and the real `usage` comes right before [DONE].
// Errors: HTTP status + { error: { message, type, param, code } }; mid-stream: `data: {"error":{...}}`.

import { randomBytes } from 'node:crypto';

const rid = (n = 12) => randomBytes(n).toString('hex');

const FROM_ANTHROPIC = { end_turn: 'stop', tool_use: 'tool_calls', max_tokens: 'length', stop_sequence: 'stop' };

function finishReason(plan) {
  if (plan.stopReason !== undefined) return FROM_ANTHROPIC[plan.stopReason] ?? plan.stopReason;
  return plan.toolCalls.length ? 'tool_calls' : 'stop';
}

function usageObject(u) {
  return {
    prompt_tokens: u.input,
    completion_tokens: u.output,
    total_tokens: u.input + u.output,
    prompt_tokens_details: { cached_tokens: u.cacheRead, audio_tokens: 0 },
    completion_tokens_details: { reasoning_tokens: 0, audio_tokens: 0, accepted_prediction_tokens: 0, rejected_prediction_tokens: 0 },
  };
}

const DEFAULT_ERRORS = {
  400: ['invalid_request_error', null, 'We could not parse the JSON body of your request.'],
  401: ['invalid_request_error', 'invalid_api_key', 'Incorrect API key provided.'],
  403: ['invalid_request_error', 'unsupported_country_region_territory', 'Country, region, or territory not supported'],
  404: ['invalid_request_error', 'model_not_found', 'The model does not exist or you do not have access to it.'],
  405: ['invalid_request_error', null, 'Method not allowed.'],
  413: ['invalid_request_error', null, 'Request too large.'],
  429: ['requests', 'rate_limit_exceeded', 'Rate limit reached for requests. Please try again in 1s.'],
  500: ['server_error', null, 'The server had an error while processing your request. Sorry about that!'],
  503: ['server_error', null, 'The engine is currently overloaded, please try again later.'],
};

export const openai = {
  name: 'openai',

  /** The provider-shaped HTTP error body for `status`; `over` may set type/message/code. */
  errorBody(status, over = {}) {
    const [type, code, message] = DEFAULT_ERRORS[status] ??
      (status >= 500 ? DEFAULT_ERRORS[500] : ['invalid_request_error', null, `HTTP ${status}`]);
    return {
      error: {
        message: over.message ?? message,
        type: over.type ?? type,
        param: over.param ?? null,
        code: over.code !== undefined ? over.code : code,
      },
    };
  },

  /** Mid-stream error line: `data: {"error":{...}}` (no [DONE] follows). */
  streamErrorEvent(err = {}) {
    const error = { message: err.message ?? 'The server had an error while processing your request. Sorry about that!',
      type: err.type ?? 'server_error', param: err.param ?? null, code: err.code ?? null };
    return `data: ${JSON.stringify({ error })}\n\n`;
  },

  responseHeaders(meta) {
    return { 'x-request-id': meta.requestId, 'openai-processing-ms': '1', 'openai-version': '2020-10-01' };
  },

  requestId() { return `req_${rid(16)}`; },

  /** @returns {{ events: string[], terminal: number }} `terminal` = how many trailing events are terminal. */
  stream(plan, meta) {
    const includeUsage = meta.reqBody?.stream_options?.include_usage === true;
    const head = `{"id":${JSON.stringify(`chatcmpl-${rid()}`)},"object":"chat.completion.chunk","created":${meta.created},` +
      `"model":${JSON.stringify(meta.model)},"system_fingerprint":"fp_model_server",`;
    const tail = includeUsage ? ',"usage":null}' : '}';
    // Hand-assembled prefix/suffix keeps 20k-token streams cheap; the choice part is JSON.stringify'd.
    const chunk = (delta, finish = null) =>
      `data: ${head}"choices":[${JSON.stringify({ index: 0, delta, logprobs: null, finish_reason: finish })}]${tail}\n\n`;

    const events = [chunk({ role: 'assistant', content: plan.textPieces.length || !plan.toolCalls.length ? '' : null, refusal: null })];
    for (const piece of plan.textPieces) events.push(chunk({ content: piece }));
    plan.toolCalls.forEach((tc, index) => {
      const id = tc.id ?? `call_${rid()}`;
      events.push(chunk({ tool_calls: [{ index, id, type: 'function', function: { name: tc.name, arguments: '' } }] }));
      for (const frag of tc.argPieces) events.push(chunk({ tool_calls: [{ index, function: { arguments: frag } }] }));
    });
    events.push(chunk({}, finishReason(plan)));
    if (includeUsage) {
      events.push(`data: ${head}"choices":[],"usage":${JSON.stringify(usageObject(plan.usage))}}\n\n`);
    }
    events.push('data: [DONE]\n\n');
    return { events, terminal: 1 };
  },

  json(plan, meta) {
    const message = { role: 'assistant', content: plan.textPieces.length ? plan.fullText : null, refusal: null, annotations: [] };
    if (plan.toolCalls.length) {
      message.tool_calls = plan.toolCalls.map((tc) => ({
        id: tc.id ?? `call_${rid()}`, type: 'function', function: { name: tc.name, arguments: tc.argsString },
      }));
    }
    return {
      id: `chatcmpl-${rid()}`,
      object: 'chat.completion',
      created: meta.created,
      model: meta.model,
      choices: [{ index: 0, message, logprobs: null, finish_reason: finishReason(plan) }],
      usage: usageObject(plan.usage),
      system_fingerprint: 'fp_model_server',
    };
  },
};
