//! The context window (docs/design.md, "The context window"): which of the newest messages a
//! model request carries. Pure: the driver reads messages backwards from the tail, describes
//! each with [`Sized`], and asks [`select`] where the request starts — or for more messages,
//! or why nothing fits.
//!
//! Tokens are estimated from JSON text (4 bytes a token, plus a few per message) and calibrated
//! by what the provider reported: the newest answer with `usage.input_tokens` says how many
//! tokens the request that produced it really was, against the estimate of what that request
//! carried ([`RequestSize`], recorded when it was sent).

use super::message::{Message, MessageKind, Role};
use serde::{Deserialize, Serialize};

/// The window when neither the app nor the model name says (Neuron's documented default).
pub const DEFAULT_CONTEXT_WINDOW: u64 = 50_000;

/// Tokens counted per message for its framing (role, separators), besides its text.
const MESSAGE_OVERHEAD: u64 = 4;

/// The calibration factor is kept within these bounds: a provider's count far outside them
/// is not a better count of the text (a prompt cache, images, a provider that reports
/// something else). The lower bound is the tighter one: a count too low lets the window grow,
/// and at worst it then holds twice what the estimate allows, never more.
const MIN_FACTOR: f64 = 0.5;
const MAX_FACTOR: f64 = 4.0;

/// The context window of a model its name makes known (`None`: not known here).
pub fn known_context_window(model: &str) -> Option<u64> {
    let m = model.to_ascii_lowercase();
    let known: &[(&str, u64)] = &[
        ("gpt-4.1", 1_047_576),
        ("gpt-4o", 128_000),
        ("gpt-4-turbo", 128_000),
        ("gpt-3.5-turbo", 16_385),
        ("claude-", 200_000),
    ];
    known
        .iter()
        .find(|(prefix, _)| m.starts_with(prefix))
        .map(|&(_, n)| n)
}

/// A rough token count of `bytes` of text or JSON.
pub fn estimate(bytes: usize) -> u64 {
    (bytes as u64).div_ceil(4)
}

/// A message as the window sees it.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Sized {
    /// Its estimated tokens ([`estimate`] of its JSON, plus the framing).
    pub tokens: u64,
    /// A request may start here: a user's own message (never a tool result without its call).
    pub user_start: bool,
    /// The input tokens the provider reported for the request that produced it.
    pub input_tokens: Option<u64>,
    /// The estimate of what that request carried (its fixed part and messages, at 1×), where
    /// it was recorded ([`RequestSize`]).
    pub sent: Option<u64>,
}

impl Sized {
    /// `json_len`: the length of the message's JSON text (the stored row, or its serialization).
    pub fn of(m: &Message, json_len: usize) -> Self {
        Sized {
            tokens: estimate(json_len) + MESSAGE_OVERHEAD,
            user_start: m.role == Role::User && matches!(m.kind, MessageKind::Plain),
            input_tokens: m.usage.as_ref().map(|u| u.input_tokens).filter(|&n| n > 0),
            sent: None,
        }
    }
}

/// The estimated size of the request that produced the answer `answer` (a message id): what
/// the calibration divides the provider's count by. Bookkeeping kept beside the thread (the
/// stored record), not in the message JSON, whose shape is documented.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct RequestSize {
    pub answer: String,
    pub tokens: u64,
}

impl RequestSize {
    /// What `m` was sent with, if it is this request's answer.
    pub fn of(&self, m: &Message) -> Option<u64> {
        (m.id.as_str() == self.answer).then_some(self.tokens)
    }
}

/// What [`select`] decided.
#[derive(Debug, Clone, PartialEq)]
pub enum Selection {
    /// The request carries `messages[start..]`.
    Start(usize),
    /// The messages given all fit with room to spare, and older ones exist: read more.
    NeedMore,
    /// The latest turn (from its user message to the tail) does not fit: `tokens` it needs,
    /// `budget` the room there is, `largest` the estimate of its largest message.
    Overflow {
        tokens: u64,
        budget: u64,
        largest: u64,
    },
}

/// Where a request over `messages` (oldest first, ending at the tail; `complete` when they
/// start at the thread's first message) starts, when `fixed` tokens (instructions and tools)
/// and the messages share `budget`: at the oldest user message from which everything fits,
/// calibrated ([`factor`]).
pub fn select(messages: &[Sized], complete: bool, fixed: u64, budget: u64) -> Selection {
    start_with(
        messages,
        complete,
        fixed,
        budget,
        factor(messages).unwrap_or(1.0),
    )
}

/// The calibration factor: the provider's input tokens for the newest message that reports
/// them and whose request's size was recorded, over that size, within [0.5, 4]. `None`
/// without one: nothing else says what an earlier request carried (the window it was selected
/// for may have been another), so the estimate is used as it is.
pub fn factor(messages: &[Sized]) -> Option<f64> {
    let m = messages
        .iter()
        .rev()
        .find(|m| m.input_tokens.is_some() && m.sent.is_some_and(|n| n > 0))?;
    let (reported, sent) = (m.input_tokens? as f64, m.sent? as f64);
    Some((reported / sent).clamp(MIN_FACTOR, MAX_FACTOR))
}

fn start_with(messages: &[Sized], complete: bool, fixed: u64, budget: u64, f: f64) -> Selection {
    let scaled = |n: u64| (n as f64 * f).ceil() as u64;
    let mut used = scaled(fixed);
    if used > budget {
        // The instructions and tools alone do not fit.
        return Selection::Overflow {
            tokens: used,
            budget,
            largest: 0,
        };
    }
    let mut start = None;
    for (i, m) in messages.iter().enumerate().rev() {
        used += scaled(m.tokens);
        if used > budget {
            return match start {
                Some(s) => Selection::Start(s),
                None => overflow(messages, i, fixed, budget, f),
            };
        }
        if m.user_start {
            start = Some(i);
        }
    }
    match start {
        _ if !complete => Selection::NeedMore,
        Some(s) => Selection::Start(s),
        // No user message at all (a thread that starts otherwise): send it whole.
        None => Selection::Start(0),
    }
}

/// The latest turn does not fit: how much it needs with the fixed part, from its user message
/// (or the message `from`, when none is older) to the tail.
fn overflow(messages: &[Sized], from: usize, fixed: u64, budget: u64, f: f64) -> Selection {
    let start = (0..=from)
        .rev()
        .find(|&i| messages[i].user_start)
        .unwrap_or(from);
    let sized = |m: &Sized| (m.tokens as f64 * f).ceil() as u64;
    Selection::Overflow {
        tokens: (fixed as f64 * f).ceil() as u64 + messages[start..].iter().map(sized).sum::<u64>(),
        budget,
        largest: messages[start..].iter().map(sized).max().unwrap_or(0),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sized(kinds: &str, tokens: u64) -> Vec<Sized> {
        kinds
            .chars()
            .map(|c| Sized {
                tokens,
                user_start: c == 'u',
                input_tokens: None,
                sent: None,
            })
            .collect()
    }

    #[test]
    fn everything_fits_in_a_complete_thread() {
        assert_eq!(
            select(&sized("uacra", 10), true, 0, 1000),
            Selection::Start(0)
        );
        assert_eq!(
            select(&sized("uacra", 10), false, 0, 1000),
            Selection::NeedMore
        );
    }

    #[test]
    fn the_window_starts_at_the_oldest_user_message_that_fits() {
        // 8 messages of 10: a budget of 45 fits the last 4, which start at a tool call: the
        // window starts at the user message after it.
        let m = sized("uauacrua", 10);
        assert_eq!(select(&m, true, 0, 45), Selection::Start(6));
        assert_eq!(select(&m, true, 0, 70), Selection::Start(2));
    }

    #[test]
    fn estimates_are_four_bytes_a_token() {
        assert_eq!(
            (estimate(0), estimate(1), estimate(8), estimate(9)),
            (0, 1, 2, 3)
        );
    }

    #[test]
    fn known_models() {
        assert_eq!(known_context_window("gpt-4o-mini"), Some(128_000));
        assert_eq!(known_context_window("claude-sonnet-4-5"), Some(200_000));
        assert_eq!(known_context_window("llama3"), None);
    }
}
