//! An incremental Server-Sent Events parser (WHATWG HTML, "Interpreting an event stream").
//!
//! Bytes go in as they arrive, in chunks cut anywhere (inside a line ending, inside a
//! multi-byte character); whole events come out. Lines end with CRLF, LF or CR; a line is only
//! decoded once its ending has arrived, and line endings are ASCII, so a character split
//! across chunks is always reassembled before decoding. Invalid UTF-8 becomes U+FFFD, as the
//! standard's decoder does.
//!
//! One deliberate difference from the standard: [`SseParser::finish`] dispatches an event whose
//! lines were complete but whose closing blank line never came (some servers end that way).
//! A final line without its line ending is still discarded: it was cut off.

/// One dispatched event. `event` is `None` when the stream gave no `event:` field (the
/// standard's default type "message").
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SseEvent {
    pub event: Option<String>,
    pub data: String,
}

#[derive(Debug, Default)]
pub struct SseParser {
    /// Bytes of the line being read, without its ending.
    line: Vec<u8>,
    /// The last byte seen was CR: an LF right after it ends the same line.
    after_cr: bool,
    /// The first line was seen (a leading byte-order mark is dropped from it).
    started: bool,
    event: String,
    data: String,
}

const BOM: &[u8] = b"\xEF\xBB\xBF";

impl SseParser {
    pub fn new() -> Self {
        Self::default()
    }

    /// Feeds the next bytes of the stream; returns the events they completed, in order.
    pub fn push(&mut self, bytes: &[u8]) -> Vec<SseEvent> {
        let mut out = Vec::new();
        let mut rest = bytes;
        while let Some(ev) = self.next_event(&mut rest) {
            out.push(ev);
        }
        out
    }

    /// Reads `rest` up to the end of the first event it completes and returns that event,
    /// leaving the bytes after it in `rest`; with no event complete, takes all of `rest` and
    /// returns `None`. Calling it until `None` is [`SseParser::push`], one event at a time,
    /// so a consumer can act on an event before the rest of a large chunk is parsed.
    pub fn next_event(&mut self, rest: &mut &[u8]) -> Option<SseEvent> {
        while !rest.is_empty() {
            if self.after_cr {
                self.after_cr = false;
                if rest[0] == b'\n' {
                    *rest = &rest[1..];
                    continue;
                }
            }
            match rest.iter().position(|&b| b == b'\n' || b == b'\r') {
                None => {
                    self.line.extend_from_slice(rest);
                    *rest = &[];
                }
                Some(i) => {
                    self.line.extend_from_slice(&rest[..i]);
                    self.after_cr = rest[i] == b'\r';
                    *rest = &rest[i + 1..];
                    let mut line = std::mem::take(&mut self.line);
                    let ev = self.on_line(&line);
                    line.clear();
                    self.line = line;
                    if ev.is_some() {
                        return ev;
                    }
                }
            }
        }
        None
    }

    /// Ends the stream: returns the event still being read, if its lines were complete.
    pub fn finish(&mut self) -> Option<SseEvent> {
        self.line.clear();
        self.after_cr = false;
        self.dispatch()
    }

    fn on_line(&mut self, mut line: &[u8]) -> Option<SseEvent> {
        if !self.started {
            self.started = true;
            line = line.strip_prefix(BOM).unwrap_or(line);
        }
        if line.is_empty() {
            return self.dispatch();
        }
        if line[0] == b':' {
            return None; // comment (keep-alive)
        }
        let (field, value) = match line.iter().position(|&b| b == b':') {
            Some(i) => {
                let v = &line[i + 1..];
                (&line[..i], v.strip_prefix(b" ").unwrap_or(v))
            }
            None => (line, &b""[..]),
        };
        match field {
            b"event" => self.event = String::from_utf8_lossy(value).into_owned(),
            b"data" => {
                self.data.push_str(&String::from_utf8_lossy(value));
                self.data.push('\n');
            }
            // `id` and `retry` steer EventSource reconnection, which a POST stream never does.
            _ => {}
        }
        None
    }

    fn dispatch(&mut self) -> Option<SseEvent> {
        let event = std::mem::take(&mut self.event);
        if self.data.is_empty() {
            return None;
        }
        let mut data = std::mem::take(&mut self.data);
        data.pop(); // the data buffer always ends with the LF its last line added
        Some(SseEvent {
            event: if event.is_empty() { None } else { Some(event) },
            data,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ev(event: Option<&str>, data: &str) -> SseEvent {
        SseEvent {
            event: event.map(str::to_owned),
            data: data.to_owned(),
        }
    }

    #[test]
    fn whole_chunk() {
        let mut p = SseParser::new();
        let evs = p.push(b"event: a\ndata: 1\n\ndata:2\n\n");
        assert_eq!(evs, vec![ev(Some("a"), "1"), ev(None, "2")]);
    }

    #[test]
    fn field_without_colon_and_empty_data() {
        let mut p = SseParser::new();
        // `data` alone is a data field with an empty value: an event with empty data.
        assert_eq!(p.push(b"data\n\n"), vec![ev(None, "")]);
        // An event with no data field is not dispatched, and its type does not leak.
        assert_eq!(p.push(b"event: x\n\ndata: y\n\n"), vec![ev(None, "y")]);
    }

    #[test]
    fn only_one_space_is_stripped() {
        let mut p = SseParser::new();
        assert_eq!(p.push(b"data:  two\n\n"), vec![ev(None, " two")]);
    }
}
