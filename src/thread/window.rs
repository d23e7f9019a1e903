//! Which messages to send to the model when only the latest `limit` may go.

use super::{Message, MessageKind, Role};

/// The index where a window of at most `limit` messages should start: at a user's own
/// message, so that no tool result is sent without the call it answers. With no user message
/// inside the window it starts at the last one before it (a longer window beats an orphaned
/// result), and with none at all at 0.
pub fn window_start(messages: &[Message], limit: usize) -> usize {
    if messages.len() <= limit {
        return 0;
    }
    let cut = messages.len() - limit;
    (cut..messages.len())
        .find(|&i| is_user_text(&messages[i]))
        .or_else(|| (0..cut).rev().find(|&i| is_user_text(&messages[i])))
        .unwrap_or(0)
}

fn is_user_text(m: &Message) -> bool {
    m.role == Role::User && matches!(m.kind, MessageKind::Plain)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::thread::{MessageId, ToolEntry};

    fn thread(kinds: &str) -> Vec<Message> {
        kinds
            .chars()
            .enumerate()
            .map(|(i, c)| {
                let id = MessageId::from_number(i as u64 + 1);
                match c {
                    'u' => Message::user_text(id, "hi"),
                    'a' => Message::assistant_text(id, "yo"),
                    'c' => Message::tool_call(id, "", vec![ToolEntry::new("c", "t")]),
                    'r' => Message::tool_call_result(id, vec![ToolEntry::new("c", "t")]),
                    _ => unreachable!(),
                }
            })
            .collect()
    }

    #[test]
    fn short_threads_go_whole() {
        assert_eq!(window_start(&thread("uacra"), 10), 0);
    }

    #[test]
    fn the_window_starts_at_a_user_message() {
        // u a u c r a u a : limit 4 cuts at index 4 (r) -> first user at 6
        assert_eq!(window_start(&thread("uaucraua"), 4), 6);
        // limit 6 cuts at index 2 (u) -> 2
        assert_eq!(window_start(&thread("uaucraua"), 6), 2);
    }

    #[test]
    fn no_user_message_inside_widens_the_window_instead_of_orphaning_a_result() {
        // u c r c r a : limit 3 cuts at 3 (c r a, no user) -> back to 0
        assert_eq!(window_start(&thread("ucrcra"), 3), 0);
        assert_eq!(window_start(&thread("crcra"), 2), 0);
    }
}
