//! Delivers [`Event`]s to the run's listener (the JS binding's wraps `onEvent`). A listener
//! never stops the run.

use super::error::AgentError;
use crate::event::Event;
use std::rc::Rc;

/// A run's event listener.
pub type EventListener = Rc<dyn Fn(&Event)>;

/// Who hears the runs an agent starts by itself, not from a call of the app's: the expiry
/// timer, the outbox sent once online, a live feed's retry (the package's telemetry:
/// docs/design.md, "Telemetry"). `start(why)` before each, its events, then `end(error)`.
#[derive(Clone)]
pub struct BackgroundHook {
    pub start: Rc<dyn Fn(&str)>,
    pub events: EventListener,
    pub end: RunEnd,
}

/// [`BackgroundHook::end`]: the error the run ended with, if it failed.
pub type RunEnd = Rc<dyn Fn(Option<&AgentError>)>;

/// Who hears a run's events: `None` when nobody listens (events are not even built then).
#[derive(Clone, Default)]
pub struct Emitter {
    listener: Option<EventListener>,
}

impl std::fmt::Debug for Emitter {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Emitter")
    }
}

impl Emitter {
    pub fn new(listener: Option<EventListener>) -> Self {
        Emitter { listener }
    }

    /// Whether anyone listens.
    pub fn enabled(&self) -> bool {
        self.listener.is_some()
    }

    pub fn emit(&self, event: &Event) {
        if let Some(l) = &self.listener {
            l(event);
        }
    }
}
