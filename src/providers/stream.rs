//! Streaming decoders: SSE events in, [`StreamDelta`]s out while the answer arrives, and the
//! whole [`ModelOutput`] at the end.

use super::anthropic::AnthropicStream;
use super::config::{ProviderKind, WireFormat};
use super::error::ProviderError;
use super::openai::OpenAiStream;
use super::sse::{SseEvent, SseParser};
use crate::engine::{ModelOutput, ModelToolCall};

/// A piece of the answer as it streams. `index` is the tool call's position among this
/// answer's tool calls (0, 1, ...), whatever numbering the provider uses on the wire.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum StreamDelta {
    Text(String),
    ToolCallStarted {
        index: usize,
        id: String,
        name: String,
    },
    ToolCallArguments {
        index: usize,
        delta: String,
    },
}

/// Decodes one provider's event stream.
#[derive(Debug)]
pub enum StreamDecoder {
    OpenAi(OpenAiStream),
    Anthropic(AnthropicStream),
}

impl StreamDecoder {
    /// A decoder for `kind`; `demo` and `custom` have no wire format.
    pub fn new(kind: ProviderKind) -> Result<Self, ProviderError> {
        Ok(match kind.wire_format()? {
            WireFormat::OpenAi => StreamDecoder::OpenAi(OpenAiStream::default()),
            WireFormat::Anthropic => StreamDecoder::Anthropic(AnthropicStream::default()),
        })
    }

    /// Feeds one event. Events after the terminal one are ignored.
    pub fn on_event(&mut self, ev: &SseEvent) -> Result<Vec<StreamDelta>, ProviderError> {
        match self {
            StreamDecoder::OpenAi(d) => d.on_event(ev),
            StreamDecoder::Anthropic(d) => d.on_event(ev),
        }
    }

    /// The terminal event (`[DONE]`, `message_stop`) was seen.
    pub fn is_finished(&self) -> bool {
        match self {
            StreamDecoder::OpenAi(d) => d.is_finished(),
            StreamDecoder::Anthropic(d) => d.is_finished(),
        }
    }

    /// The assembled answer. Fails with a `network` error when the stream stopped before the
    /// provider said the answer was complete (its terminal event or, failing that, its stop
    /// reason, after which only usage can be missing).
    pub fn finish(self) -> Result<ModelOutput, ProviderError> {
        match self {
            StreamDecoder::OpenAi(d) => d.finish(),
            StreamDecoder::Anthropic(d) => d.finish(),
        }
    }
}

/// Bytes in, deltas out: an [`SseParser`] and a [`StreamDecoder`] together, for the driver's
/// read loop (`feed` every chunk and drain its deltas, then `finish` when the body ends).
#[derive(Debug)]
pub struct ResponseStream {
    parser: SseParser,
    decoder: StreamDecoder,
}

impl ResponseStream {
    pub fn new(kind: ProviderKind) -> Result<Self, ProviderError> {
        Ok(ResponseStream {
            parser: SseParser::new(),
            decoder: StreamDecoder::new(kind)?,
        })
    }

    /// The deltas of the next chunk, decoded one event at a time as they are asked for: the
    /// first delta of a large chunk is out before the rest of the chunk is parsed. After an
    /// error the iterator ends (the rest of the chunk is read, not decoded). Dropping it early
    /// reads and decodes the rest without handing out its deltas, so the answer stays whole.
    pub fn feed<'a>(&'a mut self, bytes: &'a [u8]) -> Deltas<'a> {
        Deltas {
            stream: self,
            rest: bytes,
            ready: Vec::new().into_iter(),
            failed: false,
        }
    }

    /// All the deltas of the next chunk (`feed`, collected); the first error fails the chunk.
    pub fn push(&mut self, bytes: &[u8]) -> Result<Vec<StreamDelta>, ProviderError> {
        let mut out = Vec::new();
        for d in self.feed(bytes) {
            out.push(d?);
        }
        Ok(out)
    }

    /// True once the terminal event arrived: the driver may stop reading.
    pub fn is_finished(&self) -> bool {
        self.decoder.is_finished()
    }

    /// Call when the body ended; returns the deltas of a trailing event and the whole answer.
    pub fn finish(mut self) -> Result<(Vec<StreamDelta>, ModelOutput), ProviderError> {
        let mut last = Vec::new();
        if let Some(ev) = self.parser.finish() {
            last = self.decoder.on_event(&ev)?;
        }
        Ok((last, self.decoder.finish()?))
    }
}

/// The deltas of one chunk, decoded lazily (see [`ResponseStream::feed`]).
pub struct Deltas<'a> {
    stream: &'a mut ResponseStream,
    rest: &'a [u8],
    ready: std::vec::IntoIter<StreamDelta>,
    failed: bool,
}

impl Deltas<'_> {
    /// Bytes of the chunk not parsed yet.
    pub fn unparsed(&self) -> usize {
        self.rest.len()
    }
}

impl Iterator for Deltas<'_> {
    type Item = Result<StreamDelta, ProviderError>;

    fn next(&mut self) -> Option<Self::Item> {
        loop {
            if let Some(d) = self.ready.next() {
                return Some(Ok(d));
            }
            let ev = self.stream.parser.next_event(&mut self.rest)?;
            if self.failed {
                continue;
            }
            match self.stream.decoder.on_event(&ev) {
                Ok(ds) => self.ready = ds.into_iter(),
                Err(e) => {
                    self.failed = true;
                    self.ready = Vec::new().into_iter();
                    return Some(Err(e));
                }
            }
        }
    }
}

impl Drop for Deltas<'_> {
    fn drop(&mut self) {
        while self.next().is_some() {}
    }
}

/// Tool calls being assembled from fragments, in the order they started.
#[derive(Debug, Default)]
pub(crate) struct ToolCallSlots {
    calls: Vec<PendingCall>,
}

#[derive(Debug)]
struct PendingCall {
    /// The provider's position for the call (OpenAI `index`, Anthropic block index).
    order: u64,
    id: String,
    name: String,
    arguments: String,
    /// Arguments to use when no fragment came (Anthropic's `input` in `content_block_start`).
    fallback_arguments: Option<String>,
}

impl ToolCallSlots {
    /// Opens a call; returns its slot and the delta announcing it.
    pub fn start(&mut self, order: u64, id: &str, name: &str) -> (usize, StreamDelta) {
        let index = self.calls.len();
        self.calls.push(PendingCall {
            order,
            id: id.to_owned(),
            name: name.to_owned(),
            arguments: String::new(),
            fallback_arguments: None,
        });
        (
            index,
            StreamDelta::ToolCallStarted {
                index,
                id: id.to_owned(),
                name: name.to_owned(),
            },
        )
    }

    pub fn set_fallback_arguments(&mut self, slot: usize, args: String) {
        if let Some(c) = self.calls.get_mut(slot) {
            c.fallback_arguments = Some(args);
        }
    }

    pub fn id(&self, slot: usize) -> Option<&str> {
        self.calls.get(slot).map(|c| c.id.as_str())
    }

    /// Fills in an id or a name that arrived after the call opened; the first value wins
    /// (OpenAI sends each once; some compatible servers repeat them with every fragment).
    pub fn complete(&mut self, slot: usize, id: &str, name: &str) {
        if let Some(c) = self.calls.get_mut(slot) {
            if c.id.is_empty() {
                c.id = id.to_owned();
            }
            if c.name.is_empty() {
                c.name = name.to_owned();
            }
        }
    }

    pub fn append(&mut self, slot: usize, fragment: &str) -> Option<StreamDelta> {
        let c = self.calls.get_mut(slot)?;
        if fragment.is_empty() {
            return None;
        }
        c.arguments.push_str(fragment);
        Some(StreamDelta::ToolCallArguments {
            index: slot,
            delta: fragment.to_owned(),
        })
    }

    pub fn len(&self) -> usize {
        self.calls.len()
    }

    /// The finished calls in the provider's order. A call without an id gets `call_<n>`; one
    /// without arguments gets `{}`.
    pub fn into_calls(self) -> Vec<ModelToolCall> {
        let mut calls: Vec<(usize, PendingCall)> = self.calls.into_iter().enumerate().collect();
        // Stable: calls of equal order stay in slot order.
        calls.sort_by_key(|(_, c)| c.order);
        calls
            .into_iter()
            .map(|(slot, c)| {
                let arguments = if !c.arguments.trim().is_empty() {
                    c.arguments
                } else {
                    c.fallback_arguments.unwrap_or_else(|| "{}".to_owned())
                };
                let id = if c.id.is_empty() {
                    format!("call_{slot}")
                } else {
                    c.id
                };
                ModelToolCall {
                    id,
                    name: c.name,
                    arguments,
                }
            })
            .collect()
    }
}
