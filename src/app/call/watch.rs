//! What a caller may watch of a long call while it is decided: progress, and whether the caller
//! still wants the answer.
//!
//! A decision that works through many events (a replay that re-executes a session, an audit
//! export) reports how far it got and stops when its caller has cancelled, refusing the call as
//! `call_cancelled` with how far it got; nothing partial is answered as a success. The tools
//! layer implements [`CallWatch`] over MCP (`notifications/progress`, `notifications/cancelled`);
//! the decision neither waits on it nor records what it says, except that it was cancelled.

use std::fmt;
use std::sync::Arc;

use super::Rejection;
use crate::app::ErrorCode;

/// A caller's view of its own call, given to the decision with the command. Never recorded.
pub trait CallWatch: Send + Sync {
    /// The call has done `done` of `total` units (events, steps); `message` says of what.
    /// Called from the ledger's writer: must not block.
    fn progress(&self, done: u64, total: Option<u64>, message: &str);
    /// Whether the caller has cancelled the call.
    fn cancelled(&self) -> bool;
}

/// A command's watch: `None` for calls no caller watches (the CLI, re-execution, tests).
#[derive(Clone, Default)]
pub struct Watch(pub Option<Arc<dyn CallWatch>>);

impl Watch {
    /// Reports progress, if anyone watches.
    pub fn progress(&self, done: u64, total: Option<u64>, message: &str) {
        if let Some(watch) = &self.0 {
            watch.progress(done, total, message);
        }
    }

    /// Whether the watching caller has cancelled the call.
    pub fn cancelled(&self) -> bool {
        self.0.as_ref().is_some_and(|w| w.cancelled())
    }
}

impl fmt::Debug for Watch {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(if self.0.is_some() {
            "Watch(watched)"
        } else {
            "Watch(none)"
        })
    }
}

/// The refusal of a call its caller cancelled while `tool` worked, after `progress` (what it
/// had done, e.g. "re-executed 400 of 1,000 events").
pub fn cancelled(tool: &str, progress: &str) -> Rejection {
    Rejection::new(
        ErrorCode::CallCancelled,
        format!("{tool}: cancelled by the client after {progress}; nothing was decided"),
        "send the call again if its answer is still wanted",
    )
}
