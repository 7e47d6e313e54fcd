//! The writer's contract with the application: the [`Decider`] it drives (pure decisions, folds
//! that cannot fail, views for queries, snapshots), the [`Draft`] a decision produces and the
//! [`Committed`] outcome a caller is answered with. Knows nothing of the writer's thread or store.

use std::sync::Arc;
use std::time::Duration;

use chrono::{DateTime, Utc};
use serde_json::Value;

use crate::events::{
    Actor, Call, ErrorRecord, Event, Fact, OutcomeStatus, Provenance, SessionId, TextLookup,
    TextRef, TraceContext,
};
use crate::ledger::store::TextRecord;
use crate::ledger::view::{LogView, SessionLog};

/// New erasable text produced by a decision, to be stored beside its event.
#[derive(Debug, Clone)]
pub struct NewText {
    pub text_ref: TextRef,
    pub record: TextRecord,
}

/// What a decision produced, before the writer gives it a seq, a time and a hash.
#[derive(Debug, Clone)]
pub struct Draft {
    pub session_id: Option<SessionId>,
    pub actor: Actor,
    pub call: Call,
    pub facts: Vec<Fact>,
    pub status: OutcomeStatus,
    pub error: Option<ErrorRecord>,
    /// The response body returned to the client (its digest goes into the event).
    pub body: Value,
    pub provenance: Provenance,
    pub texts: Vec<NewText>,
    /// The stored response body (one of `texts`), for calls with an idempotency key.
    pub response_ref: Option<TextRef>,
    /// Set when the call repeats one already recorded (same idempotency key): the writer answers
    /// with this outcome and appends nothing.
    pub replay_of: Option<Committed>,
    /// The caller's trace context, recorded as the event's `trace` member.
    pub trace: Option<TraceContext>,
}

/// A durable call, as answered to its caller.
#[derive(Debug, Clone)]
pub struct Committed {
    pub seq: u64,
    pub hash: String,
    pub session_id: Option<SessionId>,
    pub status: OutcomeStatus,
    pub error: Option<ErrorRecord>,
    pub body: Value,
    /// True when this is the recorded outcome of an earlier call with the same idempotency key
    /// (nothing was appended for this one).
    pub replayed: bool,
}

/// The application side of the writer: pure decisions and folds over state it owns.
pub trait Decider: Send + 'static {
    type Command: Send + 'static;
    type Query: Send + 'static;
    type Answer: Send + 'static;
    /// An immutable copy of the state, which queries are answered from off the writer thread.
    type View: Send + Sync + 'static;

    /// When `command` was prepared (the clock on the caller's side, before it was sent). The
    /// writer stamps the event with this time, or with the previous event's `recordedAt` if
    /// that is later, and lends the stamp to the decision as its "now"
    /// ([`LogView::decided_at`]): the writer reads no clock for a decision.
    fn prepared_at(&self, command: &Self::Command) -> DateTime<Utc>;
    /// Decides one command against the current state. Must not mutate state: the writer calls
    /// [`Decider::apply`] with the resulting event. Pure: the same state, command and log give
    /// the same draft.
    fn decide(&self, command: &Self::Command, log: &dyn LogView) -> Draft;
    /// The draft to record once the writer has measured that deciding `command` took
    /// `elapsed` (the one measured effect around a decision): a decider with a time limit
    /// refuses here a decision that ran over it. The default keeps `draft`.
    fn over_time(
        &self,
        _command: &Self::Command,
        _log: &dyn LogView,
        _elapsed: Duration,
        draft: Draft,
    ) -> Draft {
        draft
    }
    /// The draft of a command whose decision panicked (a bug): recorded with outcome `failed`
    /// and no facts, so the call is still accounted for and nothing changes.
    fn failed(&self, command: &Self::Command, reason: &str) -> Draft;
    /// Folds one event into state. Cannot fail: a recorded event is a fact. A fold only folds:
    /// it touches no file, lock or clock (what is derived from the state is fed by
    /// [`Decider::derive`]).
    fn apply(&mut self, event: &Event, texts: &TextLookup<'_>);
    /// Brings what the decider derives from its state (indexes kept beside it, which may live
    /// on disk) up to date with every event folded so far. The writer calls it after each
    /// [`Decider::apply`] (its own events, a replay's, other writers'), so that the next
    /// decision finds them current; their failures are the decider's to report. The default
    /// derives nothing.
    fn derive(&mut self) {}
    /// The tool `command`'s event is counted under in the process's metrics
    /// (`thinkledger_calls_total`): its tool's name when the decider has that tool, else
    /// [`crate::metrics::UNKNOWN_TOOL_LABEL`], so that callers naming tools that do not exist
    /// cannot grow the metrics without bound.
    fn counted_as(&self, _command: &Self::Command) -> &'static str {
        crate::metrics::UNKNOWN_TOOL_LABEL
    }
    /// Called once as the ledger shuts down, after its final sync and snapshot: lets go of
    /// what the state holds beside the log (a derived index's files), so the ledger can be
    /// opened again at once, in this process too. The default holds nothing.
    fn close(&mut self) {}
    /// The state as it is now, for queries. The writer takes one after every durable batch, so
    /// it must be cheap at any size: share structure with the state (persistent maps, `Arc`s
    /// copied on write), never copy it whole.
    fn view(&self) -> Self::View;
    /// Answers a read-only query from a view of durable state (on the caller's task).
    fn answer(view: &Self::View, query: Self::Query) -> Self::Answer;
    /// Names the layout and meaning of [`Decider::save_view`]'s bytes: a snapshot saved under
    /// another version is ignored and state is rebuilt from the log. `None` (the default): the
    /// decider keeps no snapshots.
    fn state_version(&self) -> Option<&'static str> {
        None
    }
    /// The whole state a view holds, as bytes [`Decider::load_state`] turns back into it.
    /// Called on the snapshot thread, with a view the writer took when every event it covers
    /// was durable.
    fn save_view(_view: &Self::View) -> Result<Vec<u8>, String> {
        Err("this decider keeps no snapshots".into())
    }
    /// Replaces the state by the one `bytes` hold; on error the state is unchanged.
    fn load_state(&mut self, _bytes: &[u8]) -> Result<(), String> {
        Err("this decider keeps no snapshots".into())
    }
    /// Called once, before any event is folded, when the store can be read beside the writer
    /// ([`Store::session_log`]): a decider may then keep out of memory what it can read again
    /// from the log when asked. The default keeps everything in memory.
    fn attach_log(&mut self, _log: Arc<dyn SessionLog>) {}
}
