//! The history a model request carries (docs/design.md, "The context window"): read backwards
//! from the tail in pages until the window is full, never further; kept between the calls of
//! a run and after it (trimmed to what was sent), so a tool loop reads nothing twice and the
//! memory held follows the window, not the thread.

use super::error::AgentError;
use super::{Session, Shared};
use crate::engine::ThreadStatus;
use crate::providers::ToolDef;
use crate::store::page::Rows;
use crate::thread::context::{self, RequestSize, Selection, Sized};
use crate::thread::{Message, Role, window_start};

/// Rows read by the first page; each next page reads twice as many, up to [`MAX_PAGE`].
const FIRST_PAGE: u32 = 128;
const MAX_PAGE: u32 = 4096;

/// The newest messages of the view, oldest first, ending at its tail.
pub struct History {
    pub messages: Vec<Message>,
    sized: Vec<Sized>,
    /// `messages[0]` is the thread's first message.
    complete: bool,
    /// The message before `messages[0]` did not fit the window when it was last selected, so
    /// nothing older is read again while this view lasts (a reload starts afresh).
    full: bool,
    /// Rows the next page reads.
    page: u32,
    /// The estimated size of the last request made from this history, until its answer is
    /// written ([`History::answered`]).
    sent: Option<u64>,
    /// The size of the request behind the newest answer that recorded one (the record's at
    /// first, then this view's): sizes that answer's [`Sized::sent`].
    request: Option<RequestSize>,
}

impl History {
    /// The view's tail alone: where reading starts.
    fn tail_of(g: &Session) -> History {
        let mut h = History {
            messages: Vec::new(),
            sized: Vec::new(),
            complete: g.message_count <= 1,
            full: false,
            page: FIRST_PAGE,
            sent: None,
            request: g.request_size.clone(),
        };
        if let Some(t) = g.engine.tail() {
            h.push(t.clone());
        }
        h
    }

    fn size(&self, m: &Message, json_len: usize) -> Sized {
        Sized {
            sent: self.request.as_ref().and_then(|r| r.of(m)),
            ..Sized::of(m, json_len)
        }
    }

    /// A message written after the tail (it becomes the tail).
    pub fn push(&mut self, m: Message) {
        self.sized.push(self.size(&m, m.to_json_string().len()));
        self.messages.push(m);
    }

    /// The tail, rewritten in place.
    pub fn replace_tail(&mut self, m: Message) {
        let size = self.size(&m, m.to_json_string().len());
        if let (Some(last), Some(s)) = (self.messages.last_mut(), self.sized.last_mut()) {
            *s = size;
            *last = m;
        }
    }

    /// The size of the last request made from this history, if `append` (a commit's new
    /// messages) holds its answer with the provider's count: to be recorded with it.
    pub fn answered(&mut self, append: &[Message]) -> Option<RequestSize> {
        let answer = append.iter().find(|m| m.role == Role::Assistant)?;
        let tokens = self.sent.take()?;
        answer.usage.filter(|u| u.input_tokens > 0)?;
        let r = RequestSize {
            answer: answer.id.as_str().to_owned(),
            tokens,
        };
        self.request = Some(r.clone());
        Some(r)
    }

    /// Forgets the `n` oldest messages: they did not fit.
    fn drop_front(&mut self, n: usize) {
        if n > 0 {
            self.messages.drain(..n);
            self.sized.drain(..n);
            self.complete = false;
            self.full = true;
        }
    }

    /// Reads the page of stored messages before the oldest one held.
    async fn read_older(&mut self, s: &Shared) -> Result<(), AgentError> {
        let (store, thread, count) = {
            let g = s.borrow();
            (g.store.clone(), g.thread_id.clone(), g.message_count)
        };
        let first = (count + 1).saturating_sub(self.messages.len() as u64);
        let rows = store
            .rows(Rows::Messages, &thread, Some(first), self.page)
            .await?;
        self.complete = rows.first().is_none_or(|r| r.seq <= 1);
        self.page = (self.page * 2).min(MAX_PAGE);
        let mut older = Vec::with_capacity(rows.len() + self.messages.len());
        let mut sized = Vec::with_capacity(older.capacity());
        for r in &rows {
            let m = r.message()?;
            sized.push(self.size(&m, r.json.len()));
            older.push(m);
        }
        older.append(&mut self.messages);
        sized.append(&mut self.sized);
        self.messages = older;
        self.sized = sized;
        Ok(())
    }

    /// With a `historyLimit`: enough is held once the last `limit` messages include a user
    /// message to start at.
    fn enough_for(&self, limit: Option<u32>) -> bool {
        let Some(limit) = limit.map(|l| l as usize) else {
            return false;
        };
        let n = self.sized.len();
        n >= limit && self.sized[n - limit..].iter().any(|m| m.user_start)
    }
}

/// The estimated tokens of what every request carries besides messages: the instructions and
/// the tool definitions.
pub fn fixed_tokens(instructions: Option<&str>, tools: &[ToolDef]) -> u64 {
    let tools: usize = tools
        .iter()
        .map(|t| {
            let schema = crate::thread::json_text(&t.parameters).len();
            t.name.len() + t.description.as_deref().map_or(0, str::len) + schema
        })
        .sum();
    context::estimate(instructions.map_or(0, str::len) + tools)
}

/// Refuses, before it is stored, a user message that could never be sent: with the
/// instructions and tools it alone is more than the model's window allows (estimated).
pub fn check_message(g: &Session, text: &str) -> Result<(), AgentError> {
    let fixed = fixed_tokens(g.instructions.as_deref(), &super::tool_defs(g));
    let m = Message::user_text(crate::thread::MessageId::from_number(0), text);
    let sized = [Sized::of(&m, m.to_json_string().len())];
    match context::select(&sized, true, fixed, g.model.cfg.input_budget()) {
        Selection::Overflow { tokens, budget, .. } => Err(AgentError::ContextOverflow(format!(
            "this message and the instructions and tools need about {tokens} tokens, more than \
             the {budget} the model's context window of {} tokens leaves for the input; it was \
             not stored or sent",
            g.model.cfg.context_window()
        ))),
        Selection::Start(_) | Selection::NeedMore => Ok(()),
    }
}

/// After open, a thread that waits for a person (a decision, an external tool's result) calls
/// the model as soon as they answer. The history that request needs is read now, in the
/// background, while they read the approval card: the answer → request path then builds the
/// request from memory (docs/design.md, "The context window"). A run that starts meanwhile
/// waits for it ([`wait_warm`]); the read is dropped if the view moved on while it was made.
pub fn warm(s: &Shared) {
    {
        let g = s.borrow();
        let waiting = matches!(
            g.engine.status(),
            ThreadStatus::AwaitingApproval | ThreadStatus::AwaitingToolResults
        );
        if !waiting || !g.engine.model_here() || g.history.is_some() {
            return;
        }
    }
    let shared = s.clone();
    let read = wasm_bindgen_futures::future_to_promise(async move {
        let s = shared;
        // After the task that opened it: the page shows what `open` returned first.
        let next_task = js_sys::Promise::new(&mut |resolve, _| {
            super::fetch::set_timeout(&resolve, 0.0);
        });
        let _ = wasm_bindgen_futures::JsFuture::from(next_task).await;
        let (version, fixed) = {
            let g = s.borrow();
            let defs = super::tool_defs(&g);
            (g.version, fixed_tokens(g.instructions.as_deref(), &defs))
        };
        // Overflow or a failed read: the request meets it again, and says so.
        if let Ok(mut h) = for_request(&s, fixed).await {
            h.sent = None;
            let mut g = s.borrow_mut();
            if g.version == version && g.history.is_none() {
                g.history = Some(h);
            }
        }
        s.borrow_mut().warming = None;
        Ok(wasm_bindgen::JsValue::UNDEFINED)
    });
    s.borrow_mut().warming = Some(read);
}

/// Waits for the background read [`warm`] started, if it is still under way.
pub async fn wait_warm(s: &Shared) {
    let warming = s.borrow().warming.clone();
    if let Some(read) = warming {
        let _ = wasm_bindgen_futures::JsFuture::from(read).await;
    }
}

/// The messages of the next request: the newest that fit the model's window with `fixed`
/// tokens of instructions and tools, starting at a user message, at most `historyLimit` of
/// them. Reads only as far back as that needs. The latest turn not fitting at all is
/// `context_overflow`, before anything is sent.
pub async fn for_request(s: &Shared, fixed: u64) -> Result<History, AgentError> {
    let (limit, budget, window) = {
        let g = s.borrow();
        let cfg = &g.model.cfg;
        (g.history_limit, cfg.input_budget(), cfg.context_window())
    };
    let cached = s.borrow_mut().history.take();
    let mut h = match cached {
        Some(h) => h,
        None => History::tail_of(&s.borrow()),
    };
    loop {
        let complete = h.complete || h.full || h.enough_for(limit);
        match context::select(&h.sized, complete, fixed, budget) {
            Selection::Start(start) => {
                h.drop_front(start);
                h.page = FIRST_PAGE;
                break;
            }
            Selection::NeedMore => {
                h.read_older(s).await?;
            }
            Selection::Overflow {
                tokens,
                budget,
                largest,
            } => {
                s.borrow_mut().history = Some(h);
                return Err(AgentError::ContextOverflow(format!(
                    "the latest turn needs about {tokens} tokens (its largest message about \
                     {largest}) but the model's context window of {window} tokens leaves \
                     {budget} for the input; nothing was sent. Raise `contextWindow` if the \
                     model allows more, or send less"
                )));
            }
        }
    }
    if let Some(limit) = limit {
        let start = window_start(&h.messages, limit as usize);
        h.drop_front(start);
    }
    h.sent = Some(fixed + h.sized.iter().map(|m| m.tokens).sum::<u64>());
    Ok(h)
}
