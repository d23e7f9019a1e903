//! The context window (docs/design.md, "The context window"): which newest messages a request
//! carries, over real messages sized from their JSON as the driver sizes stored rows.

use gatehouse_agent::providers::{ModelConfig, ProviderKind};
use gatehouse_agent::thread::context::{DEFAULT_CONTEXT_WINDOW, Selection, Sized, factor, select};
use gatehouse_agent::thread::{Message, MessageId, ToolEntry, Usage};

fn id(n: u64) -> MessageId {
    MessageId::from_number(n)
}

/// A thread of `turns` turns, each [user, tool_call, tool_call_result, assistant], with texts
/// of `len` bytes.
fn thread(turns: u64, len: usize) -> Vec<Message> {
    let text = "x".repeat(len);
    let mut v = Vec::new();
    for t in 0..turns {
        let n = t * 4;
        v.push(Message::user_text(id(n + 1), &text));
        v.push(Message::tool_call(
            id(n + 2),
            &text,
            vec![ToolEntry::new("c", "t")],
        ));
        v.push(Message::tool_call_result(
            id(n + 3),
            vec![ToolEntry::new("c", "t")],
        ));
        v.push(Message::assistant_text(id(n + 4), &text));
    }
    v
}

fn sized(messages: &[Message]) -> Vec<Sized> {
    messages
        .iter()
        .map(|m| Sized::of(m, m.to_json_string().len()))
        .collect()
}

fn tokens(s: &[Sized]) -> u64 {
    s.iter().map(|m| m.tokens).sum()
}

fn start(sel: Selection) -> usize {
    match sel {
        Selection::Start(i) => i,
        other => panic!("expected a start, got {other:?}"),
    }
}

#[test]
fn the_newest_messages_that_fit_from_a_user_message_and_never_a_result_without_its_call() {
    let m = thread(50, 400);
    let s = sized(&m);
    let per_turn = tokens(&s[..4]);
    for budget in [
        per_turn,
        per_turn * 3 + 7,
        per_turn * 10 - 1,
        per_turn * 17 + 150,
    ] {
        let i = start(select(&s, true, 0, budget));
        assert!(tokens(&s[i..]) <= budget, "within the budget");
        assert_eq!(
            (i % 4, m[i].role),
            (0, gatehouse_agent::thread::Role::User),
            "starts at a user message"
        );
        assert!(
            i == 0 || tokens(&s[i - 4..]) > budget,
            "and it is the oldest one that fits"
        );
        // A result is never sent without its call: the window starts at a turn's start.
        assert!(m[i..].first().unwrap().tool_results().is_none());
    }
}

#[test]
fn the_instructions_and_tools_are_counted() {
    let s = sized(&thread(10, 400));
    let per_turn = tokens(&s[..4]);
    let budget = per_turn * 5;
    assert_eq!(start(select(&s, true, 0, budget)), 20);
    // With the fixed part taking one turn's room, one turn fewer is sent.
    assert_eq!(start(select(&s, true, per_turn, budget)), 24);
}

#[test]
fn a_turn_that_does_not_fit_is_refused_before_anything_is_sent() {
    let mut m = thread(3, 100);
    m.push(Message::user_text(id(99), &"y".repeat(40_000)));
    let s = sized(&m);
    match select(&s, true, 10, 5_000) {
        Selection::Overflow {
            tokens,
            budget,
            largest,
        } => {
            assert_eq!(budget, 5_000);
            assert!(
                largest >= 10_000 && tokens >= largest + 10,
                "{tokens} {largest}"
            );
        }
        other => panic!("{other:?}"),
    }
    // The instructions and tools alone can be too much as well.
    assert!(matches!(
        select(&sized(&thread(1, 10)), true, 6_000, 5_000),
        Selection::Overflow { .. }
    ));
}

#[test]
fn more_is_read_only_while_there_is_room() {
    let s = sized(&thread(10, 400));
    let per_turn = tokens(&s[..4]);
    // The newest 3 turns held, room for 5, older ones stored: read more.
    assert_eq!(
        select(&s[28..], false, 0, per_turn * 5),
        Selection::NeedMore
    );
    // Room for 2: what is held decides, nothing more is read.
    assert_eq!(
        select(&s[28..], false, 0, per_turn * 2),
        Selection::Start(4)
    );
}

#[test]
fn the_estimate_is_calibrated_by_the_usage_the_provider_reported() {
    let mut m = thread(20, 400);
    let last = m.len() - 1;
    // A usage of 0 input tokens calibrates nothing (and sizes the message as it will be).
    m[last].usage = Some(Usage {
        input_tokens: 0,
        output_tokens: 10,
        cached_input_tokens: 0,
        reasoning_tokens: 0,
    });
    let s0 = sized(&m);
    let per_turn = tokens(&s0[..4]);
    let budget = per_turn * 6 + 100;
    assert_eq!(start(select(&s0, true, 0, budget)), 56);
    // The last answer's request was reported at twice the estimate of what it carried: the
    // window holds half as many turns.
    let carried = tokens(&s0[56..last]);
    m[last].usage.as_mut().unwrap().input_tokens = carried * 2;
    let s = sized(&m);
    let f = factor(&s, 56, 0).unwrap();
    assert!((f - 2.0).abs() < 0.01, "{f}");
    assert_eq!(
        start(select(&s, true, 0, budget)),
        68,
        "3 turns instead of 6"
    );
    // Reported at half: twice as many turns fit.
    m[last].usage.as_mut().unwrap().input_tokens = carried / 2;
    assert_eq!(start(select(&sized(&m), true, 0, budget)), 32);
    // A count far off is bounded (a cache or another window, not a better count): at 4×
    // above, at ½ below, so a bogus low count never lets more than twice the estimate through.
    m[last].usage.as_mut().unwrap().input_tokens = carried * 100;
    assert_eq!(factor(&sized(&m), 56, 0), Some(4.0));
    m[last].usage.as_mut().unwrap().input_tokens = 1;
    assert_eq!(factor(&sized(&m), 56, 0), Some(0.5));
    assert_eq!(start(select(&sized(&m), true, 0, budget)), 32);
}

#[test]
fn the_window_and_budget_of_a_model() {
    let mut c = ModelConfig::new(ProviderKind::OpenAi, "local-model");
    assert_eq!(c.context_window(), DEFAULT_CONTEXT_WINDOW);
    assert_eq!(c.input_budget(), 50_000);
    c.max_tokens = Some(1_000);
    assert_eq!(c.input_budget(), 49_000, "the answer's room is kept");
    let c = ModelConfig::new(ProviderKind::Anthropic, "claude-sonnet-4-5");
    assert_eq!(
        (c.context_window(), c.input_budget()),
        (200_000, 200_000 - 4096)
    );
    let c = ModelConfig::from_json(
        r#"{"provider":"openai","model":"gpt-4o","contextWindow":8000,"maxTokens":500}"#,
    )
    .unwrap();
    assert_eq!((c.context_window(), c.input_budget()), (8_000, 7_500));
    let e = ModelConfig::from_json(
        r#"{"provider":"openai","model":"m","contextWindow":500,"maxTokens":500}"#,
    )
    .unwrap_err();
    assert!(e.to_string().contains("contextWindow"), "{e}");
}
