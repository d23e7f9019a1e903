// Writes a rendered turn to the HTTP response, applying pacing (chunkDelayMs, splitWrites)
// and faults (dropAfterEvents, hang, hangAfterEvents, streamError, truncate).
// Every loop here runs over a finite event list and stops as soon as the client goes away.

const BATCH_BYTES = 32 * 1024; // coalesce undelayed events into writes of about this size
const SPLIT_GAP_MS = 5; // pause between the two halves of a split event

/** Resolves after `ms`, or early (false) when `signal` aborts. */
export function sleep(ms, signal) {
  if (signal.aborted) return Promise.resolve(false);
  if (ms <= 0) return Promise.resolve(true);
  return new Promise((resolve) => {
    const done = (v) => { clearTimeout(t); signal.removeEventListener('abort', onAbort); resolve(v); };
    const onAbort = () => done(false);
    const t = setTimeout(() => done(true), ms);
    signal.addEventListener('abort', onAbort, { once: true });
  });
}

/** Resolves when the client disconnects (or the server shuts down). */
export function untilAborted(signal) {
  if (signal.aborted) return Promise.resolve();
  return new Promise((resolve) => signal.addEventListener('abort', () => resolve(), { once: true }));
}

/** res.write that resolves once the data is handed to the socket (or the client is gone). */
function write(res, signal, data) {
  if (signal.aborted || res.destroyed) return Promise.resolve(false);
  return new Promise((resolve) => {
    const onAbort = () => resolve(false);
    signal.addEventListener('abort', onAbort, { once: true });
    res.write(data, (err) => { signal.removeEventListener('abort', onAbort); resolve(!err); });
  });
}

/** Where to cut one event in two: inside the first multi-byte UTF-8 character if any, else mid/end. */
function splitPoint(buf, n) {
  const mb = buf.findIndex((b) => b >= 0x80);
  if (mb >= 0) return mb + 1; // between a UTF-8 lead byte and its continuation byte(s)
  return n % 2 ? buf.length - 1 : buf.length >> 1; // alternately: before the blank-line terminator, or mid-line
}

class EventWriter {
  #buf = '';
  #n = 0;
  constructor(res, signal, { chunkDelayMs = 0, splitWrites = false }) {
    Object.assign(this, { res, signal, chunkDelayMs, splitWrites });
  }

  async event(text) {
    const first = this.#n++ === 0;
    if (!this.splitWrites && this.chunkDelayMs === 0) {
      this.#buf += text;
      return this.#buf.length >= BATCH_BYTES ? this.flush() : !this.signal.aborted;
    }
    if (!first && !(await sleep(this.chunkDelayMs, this.signal))) return false;
    if (!this.splitWrites) return write(this.res, this.signal, text);
    const buf = Buffer.from(text, 'utf8');
    const at = splitPoint(buf, this.#n);
    if (!(await write(this.res, this.signal, buf.subarray(0, at)))) return false;
    if (!(await sleep(Math.max(SPLIT_GAP_MS, this.chunkDelayMs >> 1), this.signal))) return false;
    return write(this.res, this.signal, buf.subarray(at));
  }

  async flush() {
    if (!this.#buf) return !this.signal.aborted;
    const data = this.#buf;
    this.#buf = '';
    return write(this.res, this.signal, data);
  }
}

/**
 * Picks the single stream-ending action of a fault and the number of normal events before it.
 * Precedence when several are given: dropAfterEvents, hangAfterEvents, streamError, truncate.
 */
function streamPlan(fault, events, terminal) {
  const body = events.length - terminal;
  const f = fault ?? {};
  if (f.dropAfterEvents !== undefined) return { action: 'drop', count: Math.min(f.dropAfterEvents, events.length) };
  if (f.hangAfterEvents !== undefined) return { action: 'hang', count: Math.min(f.hangAfterEvents, events.length) };
  if (f.streamError) {
    return { action: 'error', count: Math.min(f.streamError.afterEvents ?? Math.max(1, body >> 1), body) };
  }
  if (f.truncate === true) return { action: 'end', count: body };
  if (typeof f.truncate === 'number') return { action: 'end', count: Math.min(f.truncate, body) };
  return { action: 'end', count: events.length };
}

/**
 * Streams `events` as text/event-stream. Returns the outcome string recorded for the request:
 * "completed" | "dropped" | "stream-error" | "truncated" | "aborted".
 */
export async function deliverStream(res, signal, { events, terminal, errorEvent, headers, turn }) {
  res.writeHead(200, {
    'Content-Type': 'text/event-stream; charset=utf-8',
    'Cache-Control': 'no-cache',
    Connection: 'keep-alive',
    'X-Accel-Buffering': 'no',
    ...headers,
  });
  res.flushHeaders();
  const { action, count } = streamPlan(turn.fault, events, terminal);
  const w = new EventWriter(res, signal, turn);
  for (let i = 0; i < count; i++) {
    if (!(await w.event(events[i]))) return 'aborted';
  }
  if (action === 'error' && !(await w.event(errorEvent))) return 'aborted';
  if (!(await w.flush())) return 'aborted';
  if (action === 'drop') {
    res.socket?.destroy(); // abrupt: no terminating chunk, no terminal event
    return 'dropped';
  }
  if (action === 'hang') {
    await untilAborted(signal);
    return 'aborted';
  }
  res.end();
  if (action === 'error') return 'stream-error';
  return count < events.length ? 'truncated' : 'completed';
}

/** Sends a JSON body; dropAfterEvents / truncate / hangAfterEvents cut it after half the bytes. */
export async function deliverJson(res, signal, { status = 200, body, headers, fault }) {
  const data = Buffer.from(typeof body === 'string' ? body : JSON.stringify(body), 'utf8');
  const f = fault ?? {};
  const partial = f.dropAfterEvents !== undefined || f.hangAfterEvents !== undefined || f.truncate !== undefined;
  const type = { 'Content-Type': 'application/json' };
  if (!partial) {
    res.writeHead(status, { ...type, 'Content-Length': data.length, ...headers });
    res.end(data);
    return status < 400 ? 'completed' : `http-${status}`;
  }
  res.writeHead(status, { ...type, ...headers }); // chunked: the client cannot tell the length
  if (!(await write(res, signal, data.subarray(0, data.length >> 1)))) return 'aborted';
  if (f.dropAfterEvents !== undefined) { res.socket?.destroy(); return 'dropped'; }
  if (f.hangAfterEvents !== undefined) { await untilAborted(signal); return 'aborted'; }
  res.end();
  return 'truncated';
}
