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
    m.push(Message::user_text(id(99), "y".repeat(40_000)));
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

fn usage(input_tokens: u64) -> Option<Usage> {
    Some(Usage {
        input_tokens,
        output_tokens: 10,
        cached_input_tokens: 0,
        reasoning_tokens: 0,
    })
}

#[test]
fn the_estimate_is_calibrated_by_the_usage_the_provider_reported() {
    let mut m = thread(20, 400);
    let last = m.len() - 1;
    // A usage of 0 input tokens calibrates nothing (and sizes the message as it will be).
    m[last].usage = usage(0);
    let s0 = sized(&m);
    let per_turn = tokens(&s0[..4]);
    let budget = per_turn * 6 + 100;
    assert_eq!(start(select(&s0, true, 0, budget)), 56);
    // The last answer's request carried 6 turns but the last message, and was reported at
    // twice that estimate: the window holds half as many turns.
    let carried = tokens(&s0[56..last]);
    let reported = |n: u64| {
        let mut m = m.clone();
        m[last].usage = usage(n);
        let mut s = sized(&m);
        s[last].sent = Some(carried);
        s
    };
    let s = reported(carried * 2);
    let f = factor(&s).unwrap();
    assert!((f - 2.0).abs() < 0.01, "{f}");
    assert_eq!(
        start(select(&s, true, 0, budget)),
        68,
        "3 turns instead of 6"
    );
    // Reported at half: twice as many turns fit.
    assert_eq!(start(select(&reported(carried / 2), true, 0, budget)), 32);
    // A count far off is bounded (a cache, images: not a better count of the text): at 4×
    // above, at ½ below, so a bogus low count never lets more than twice the estimate through.
    assert_eq!(factor(&reported(carried * 100)), Some(4.0));
    assert_eq!(factor(&reported(1)), Some(0.5));
    assert_eq!(start(select(&reported(1), true, 0, budget)), 32);
    // Without a record of what the request carried (a thread written before it was recorded),
    // nothing is calibrated: the estimate is used as it is.
    let mut unrecorded = reported(carried * 2);
    unrecorded[last].sent = None;
    assert_eq!(factor(&unrecorded), None);
    assert_eq!(start(select(&unrecorded, true, 0, budget)), 56);
}

/// `turns` turns of a user message and an answer of `len` bytes each (about `len / 4` tokens).
fn chat(turns: u64, len: usize) -> Vec<Message> {
    let text = "x".repeat(len);
    (0..turns)
        .flat_map(|t| {
            [
                Message::user_text(id(t * 2 + 1), &text),
                Message::assistant_text(id(t * 2 + 2), &text),
            ]
        })
        .collect()
}

/// A thread answered at one window, then asked at another: the newest answer's usage is what
/// a provider that counts exactly as the estimate reported for the request that produced it.
/// Returns the thread with a new user message and its sizes, the answer's request recorded.
fn answered_at(turns: u64, len: usize, budget: u64) -> (Vec<Message>, Vec<Sized>) {
    let mut m = chat(turns, len);
    let last = m.len() - 1;
    let s = sized(&m);
    let from = start(select(&s[..last], true, 0, budget));
    let carried = tokens(&s[from..last]);
    m[last].usage = usage(carried);
    m.push(Message::user_text(id(last as u64 + 2), "y".repeat(len)));
    let mut s = sized(&m);
    s[last].sent = Some(carried);
    (m, s)
}

/// The same sizes without the provider's counts: what the estimate alone selects.
fn uncalibrated(s: &[Sized]) -> Vec<Sized> {
    s.iter()
        .map(|m| Sized {
            input_tokens: None,
            ..*m
        })
        .collect()
}

#[test]
fn a_thread_answered_at_a_large_window_and_asked_at_a_small_one_sends_what_fits() {
    // 60 turns of ~500-token messages at the default window, then `contextWindow: 4000`
    // (the issue's report: the request carried only the new message, at the factor 4 its
    // provider's count over the estimate of today's selection made).
    let (m, s) = answered_at(60, 2000, DEFAULT_CONTEXT_WINDOW);
    let n = m.len();
    let at_1x = start(select(&uncalibrated(&s), true, 0, 4_000));
    assert!(
        at_1x <= n - 5,
        "at 1×, two turns and the new message fit ({at_1x} of {n})"
    );
    assert_eq!(
        factor(&s),
        Some(1.0),
        "the provider agreed with the estimate"
    );
    assert_eq!(
        start(select(&s, true, 0, 4_000)),
        at_1x,
        "the request carries what fits, not only the new message"
    );
}

#[test]
fn a_thread_answered_at_a_small_window_and_asked_at_a_large_one_is_not_overfilled() {
    // The other way round: against the estimate of today's larger selection the count looked
    // small, the factor fell to ½ and twice what fits was sent.
    let (_, s) = answered_at(60, 2000, 4_000);
    assert_eq!(factor(&s), Some(1.0));
    let budget = 20_000;
    let i = start(select(&s, true, 0, budget));
    assert_eq!(i, start(select(&uncalibrated(&s), true, 0, budget)));
    assert!(tokens(&s[i..]) <= budget);
}

#[test]
fn the_record_keeps_the_size_of_the_newest_answers_request() {
    use gatehouse_agent::engine::{Commit, ThreadStatus, ToolPolicies};
    use gatehouse_agent::store::{MemoryStore, Writer};
    use gatehouse_agent::thread::context::RequestSize;
    let store = MemoryStore::open("context-window-request-size");
    let w = Writer::new("test-agent", false, false, 0.0);
    let commit = |append: Vec<Message>, request_size: Option<RequestSize>| Commit {
        replace_tail: None,
        append,
        run: None,
        policies: ToolPolicies::new(),
        status: ThreadStatus::Idle,
        audit: Vec::new(),
        request_size,
        mcp_tools: None,
    };
    let sent = RequestSize {
        answer: id(2).as_str().to_owned(),
        tokens: 1234,
    };
    let c = commit(
        vec![
            Message::user_text(id(1), "hi"),
            Message::assistant_text(id(2), "hello"),
        ],
        Some(sent.clone()),
    );
    store.commit("t", 0, &c, &w, 1.0).unwrap();
    // A later commit that records none (a user message) keeps it.
    let c = commit(vec![Message::user_text(id(3), "and?")], None);
    let record = store.commit("t", 1, &c, &w, 2.0).unwrap();
    assert_eq!(record.request_size, Some(sent));
    // In the record, beside the messages, whose JSON stays as documented.
    let json = serde_json::to_value(&record).unwrap();
    assert_eq!(
        json["requestSize"],
        serde_json::json!({"answer": id(2).as_str(), "tokens": 1234})
    );
    assert!(
        !Message::assistant_text(id(2), "hello")
            .to_json_string()
            .contains("1234")
    );
    // A record written before it existed reads as none.
    let mut older = json;
    older.as_object_mut().unwrap().remove("requestSize");
    let older: gatehouse_agent::store::ThreadRecord = serde_json::from_value(older).unwrap();
    assert_eq!(older.request_size, None);
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
