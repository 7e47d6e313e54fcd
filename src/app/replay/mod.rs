//! Replay with re-execution: proves (or disproves) that the recorded calls of a session still
//! decide the same way today.
//!
//! [`reexecute`] folds every event of the log, in order, into a fresh decider. Before it folds an
//! event of the target session it rebuilds the original [`Command`] from the event (its text
//! fields and opaque arguments read back from the text store, its actor, its session as the
//! connection's session, so a call that started the session starts it again under the same id)
//! and decides it again through [`Decider::decide`] — the production code path, nothing
//! re-implemented. The re-derived response digest, status, error, session, recorded arguments and
//! facts are compared with the recorded ones; fresh text commitments are mapped back to the
//! recorded ones first, since every commitment has its own salt.
//!
//! The recorded effects are fed back: the command's [`crate::effects::Prepared`] carries the
//! event's own `recordedAt`, which is also the decision time the view lends the decision. The
//! call's seed is secret and never recorded, so a re-execution draws from a public stand-in (the
//! event's hash): its salts differ, which the commitment mapping absorbs (the re-derived texts
//! are compared, never stored), and a session the call started is started again under its
//! recorded id, which arrives as the connection's session, not as a draw.
//!
//! A call is *skipped*, never counted as a match, when it cannot be re-executed honestly: its
//! arguments were omitted as too large, one of its texts is erased, missing or does not match its
//! commitment, its tool reads the log itself (its answer depends on a log that has grown since),
//! its recorded decision failed, or it diverged while reading a session whose text was available
//! then but is not now. A re-derived digest equal to the recorded one is a match even then: the
//! digest shows the answer was the same.
//!
//! Owns: rebuilding commands from events, the comparison, the report and the timeline
//! ([`timeline`]). Must not know: MCP, sled, how the log is stored (it reads a [`LogView`]).

mod compare;
mod rebuild;
mod render;
pub mod timeline;
pub(super) mod tools;

#[cfg(test)]
mod tests;

pub use rebuild::rebuild;
use rebuild::text_ref;
pub use render::render_text;

use std::collections::HashMap;
use std::sync::Arc;

use schemars::JsonSchema;
use serde::Serialize;
use serde_json::Value;

use super::call::{Decide, Watch};
use super::{Command, registry};
use crate::events::{Event, Fact, SessionId, TextRef};
use crate::ledger::hash::parse_hex32;
use crate::ledger::{Decider, LedgerError, LogView, TextState};

pub use compare::FieldDifference;
pub use tools::{
    DiffSessionsArgs, DiffSessionsOutput, ReplayArgs, ReplayOutput, render_replay_text,
    replay_session,
};

/// Why a replay could not be carried out at all (single calls that cannot be re-executed are
/// reported as skipped instead). Reaches a client as a rejected call, the CLI as a message.
#[derive(Debug, thiserror::Error)]
pub enum ReplayError {
    #[error(transparent)]
    Ledger(#[from] LedgerError),
    #[error("event {seq} of the log does not parse: {reason}")]
    Unparseable { seq: u64, reason: String },
    #[error("there is no session {0} in this ledger")]
    UnknownSession(SessionId),
    /// The caller cancelled while the log was folded; `done` of `total` events were.
    #[error("cancelled after re-executing {done} of {total} events")]
    Cancelled { done: u64, total: u64 },
}

/// Why one call was not re-executed.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum SkipReason {
    /// The arguments, or a text field of them, were over the size limit and never stored.
    ArgumentsOmitted,
    /// A text of the arguments was erased.
    TextErased,
    /// A text of the arguments is neither stored nor erased.
    TextMissing,
    /// A stored text does not match its commitment (see `thinkledger verify`).
    TextMismatch,
    /// Opaque arguments whose stored text is not JSON.
    RawUnparseable,
    /// The tool reads the log itself; the log has grown since, so its answer would differ.
    ReadsLog,
    /// The recorded decision failed (a server bug); there is no answer to reproduce.
    RecordedFailure,
    /// The call diverged while a session it may read had a text then that is erased or missing
    /// now, so the divergence may be the erasure's.
    TextUnavailable,
    /// The call was refused for running over its time limit: a measurement of that moment,
    /// not a rule a re-decision can reproduce.
    TimeLimited,
    /// The call was refused because the model provider could not be asked or did not answer:
    /// a fact of that moment (the provider's state), not a rule a re-decision can reproduce.
    ModelUnavailable,
    /// The caller cancelled the call while it worked: a fact of that moment (when the client
    /// gave up), not a rule a re-decision can reproduce.
    Cancelled,
}

/// The result of re-executing one call.
#[derive(Debug, Clone, PartialEq, Serialize, JsonSchema)]
#[serde(tag = "verdict", rename_all = "snake_case")]
pub enum Verdict {
    /// Same response digest, status, error, session, recorded arguments and facts.
    Matched,
    Diverged(Divergence),
    Skipped {
        reason: SkipReason,
        detail: String,
    },
}

impl Verdict {
    /// `matched`, `diverged` or `skipped`.
    pub fn name(&self) -> &'static str {
        match self {
            Verdict::Matched => "matched",
            Verdict::Diverged(_) => "diverged",
            Verdict::Skipped { .. } => "skipped",
        }
    }
}

/// How a re-decided call differs from its record.
#[derive(Debug, Clone, PartialEq, Serialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct Divergence {
    pub recorded_digest: String,
    pub rederived_digest: String,
    /// `ok`, `rejected` or `failed`.
    pub recorded_status: String,
    pub rederived_status: String,
    /// Every member that differs (status, error, sessionId, call.arguments, facts, and `body`
    /// when the event kept its body), by path. Empty when only the response body differs and
    /// the record keeps only its digest.
    pub differences: Vec<FieldDifference>,
    /// The body the call gives today (the recorded body is known only by its digest).
    #[schemars(with = "serde_json::Map<String, Value>")]
    pub rederived_body: Value,
}

/// One call of the session and what re-executing it showed.
#[derive(Debug, Clone, PartialEq, Serialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct CallCheck {
    pub seq: u64,
    pub tool: String,
    /// The thought the call recorded or named, when it did.
    pub thought_number: Option<u32>,
    #[serde(flatten)]
    pub verdict: Verdict,
}

/// Re-execution of one session, summed up.
#[derive(Debug, Clone, PartialEq, Serialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ReexecutionReport {
    pub session_id: String,
    /// Calls recorded against the session.
    pub calls: usize,
    /// Calls decided again (matched + diverged).
    pub reexecuted: usize,
    pub matched: usize,
    pub diverged: usize,
    pub skipped: usize,
    /// The divergent calls, in log order.
    pub divergences: Vec<CallCheck>,
    /// The calls not re-executed, in log order, each with its reason.
    pub skipped_calls: Vec<CallCheck>,
}

impl ReexecutionReport {
    pub fn new(session: &SessionId, checks: &[CallCheck]) -> Self {
        let count = |name: &str| checks.iter().filter(|c| c.verdict.name() == name).count();
        let (matched, diverged, skipped) = (count("matched"), count("diverged"), count("skipped"));
        let pick = |name: &str| {
            checks
                .iter()
                .filter(|c| c.verdict.name() == name)
                .cloned()
                .collect()
        };
        Self {
            session_id: session.to_string(),
            calls: checks.len(),
            reexecuted: matched + diverged,
            matched,
            diverged,
            skipped,
            divergences: pick("diverged"),
            skipped_calls: pick("skipped"),
        }
    }
}

/// Whether `tool` reads the log while it is decided (a `Decide::WithLog` tool, admin commands
/// included): its answer depends on the log as it stood then, which has grown since.
pub fn reads_log(tool: &str) -> bool {
    registry::spec(tool)
        .or_else(|| registry::admin_spec(tool))
        .is_some_and(|spec| matches!(spec.decide, Decide::WithLog(_)))
}

/// Reads and parses the event at `seq`.
pub fn read_event(log: &dyn LogView, seq: u64) -> Result<Event, ReplayError> {
    let bytes = log.event_bytes(seq)?;
    serde_json::from_slice(&bytes).map_err(|e| ReplayError::Unparseable {
        seq,
        reason: e.to_string(),
    })
}

/// The events recorded against `session`, in log order.
pub fn session_events(log: &dyn LogView, session: &SessionId) -> Result<Vec<Event>, ReplayError> {
    let mut events = Vec::new();
    for seq in log.session_seqs(session)? {
        let event = read_event(log, seq)?;
        if event.session_id.as_ref() == Some(session) {
            events.push(event);
        }
    }
    if events.is_empty() {
        return Err(ReplayError::UnknownSession(session.clone()));
    }
    Ok(events)
}

/// Re-executes every call of `session`: folds the whole log (up to the session's last event)
/// into `decider`, a fresh decider built with the configuration the log was recorded with, and
/// decides each of the session's calls again just before folding its event.
pub fn reexecute<D>(
    log: &dyn LogView,
    session: &SessionId,
    decider: D,
) -> Result<Vec<CallCheck>, ReplayError>
where
    D: Decider<Command = Command>,
{
    reexecute_watched(log, session, decider, &Watch::default())
}

/// [`reexecute`], reporting to `watch` how far the fold has got (about a hundred reports in
/// all) and stopping with [`ReplayError::Cancelled`] once its caller has cancelled.
pub fn reexecute_watched<D>(
    log: &dyn LogView,
    session: &SessionId,
    mut decider: D,
    watch: &Watch,
) -> Result<Vec<CallCheck>, ReplayError>
where
    D: Decider<Command = Command>,
{
    /// Fewest events between two reports: a short log is not worth a hundred messages.
    const LEAST_STRIDE: u64 = 256;
    let targets = log.session_seqs(session)?;
    let Some(&last) = targets.last() else {
        return Err(ReplayError::UnknownSession(session.clone()));
    };
    let stride = (last / 100).max(LEAST_STRIDE);
    // Sessions that hold a thought whose text is unavailable now, with the seq until which the
    // original decisions still saw that text (the seq of its erasure; never, if it is missing).
    let mut unavailable: HashMap<SessionId, u64> = HashMap::new();
    let mut checks = Vec::with_capacity(targets.len());
    for seq in 1..=last {
        if seq.is_multiple_of(stride) {
            if watch.cancelled() {
                return Err(ReplayError::Cancelled {
                    done: seq - 1,
                    total: last,
                });
            }
            watch.progress(
                seq - 1,
                Some(last),
                &format!("re-executed {} of {last} events", seq - 1),
            );
        }
        let event = read_event(log, seq)?;
        if event.session_id.as_ref() == Some(session) {
            checks.push(check(log, &decider, &event, &unavailable)?);
        }
        let lookup = |r: &TextRef| -> Option<Arc<str>> {
            match text_state(log, &r.commitment) {
                Ok(TextState::Present(record)) => Some(Arc::from(record.text)),
                _ => None,
            }
        };
        decider.apply(&event, &lookup);
        // Any text a fact holds (a thought, a node's content, a claim, a derived text) is state
        // later decisions of its session may read.
        let Some(session_of_facts) = &event.session_id else {
            continue;
        };
        let facts = serde_json::to_value(&event.facts).unwrap_or(Value::Null);
        for commitment in crate::ledger::verify::text_refs(&facts) {
            let until = match text_state(log, &commitment)? {
                TextState::Present(_) => continue,
                TextState::Erased { seq } => seq,
                TextState::Missing => u64::MAX,
            };
            let entry = unavailable.entry(session_of_facts.clone()).or_insert(0);
            *entry = (*entry).max(until);
        }
    }
    watch.progress(
        last,
        Some(last),
        &format!("re-executed {last} of {last} events"),
    );
    Ok(checks)
}

/// The log as it is, with the decision time of the recorded event: a re-decision sees the
/// "now" the original decision saw.
struct AtTime<'a> {
    log: &'a dyn LogView,
    at: &'a str,
}

impl LogView for AtTime<'_> {
    fn meta(&self) -> &crate::ledger::LedgerMeta {
        self.log.meta()
    }
    fn len(&self) -> u64 {
        self.log.len()
    }
    fn event_bytes(&self, seq: u64) -> Result<Vec<u8>, LedgerError> {
        self.log.event_bytes(seq)
    }
    fn session_seqs(&self, session: &SessionId) -> Result<Vec<u64>, LedgerError> {
        self.log.session_seqs(session)
    }
    fn text(&self, commitment: &[u8; 32]) -> Result<TextState, LedgerError> {
        self.log.text(commitment)
    }
    fn root_at(
        &self,
        size: u64,
    ) -> Result<crate::ledger::merkle::NodeHash, crate::ledger::merkle::MerkleError> {
        self.log.root_at(size)
    }
    fn inclusion_proof(
        &self,
        index: u64,
        size: u64,
    ) -> Result<Vec<crate::ledger::merkle::NodeHash>, crate::ledger::merkle::MerkleError> {
        self.log.inclusion_proof(index, size)
    }
    fn consistency_proof(
        &self,
        old_size: u64,
        new_size: u64,
    ) -> Result<Vec<crate::ledger::merkle::NodeHash>, crate::ledger::merkle::MerkleError> {
        self.log.consistency_proof(old_size, new_size)
    }
    fn latest_checkpoint(&self) -> Option<&crate::ledger::SignedCheckpoint> {
        self.log.latest_checkpoint()
    }
    fn signer(&self) -> Option<&crate::ledger::checkpoint::NoteSigner> {
        self.log.signer()
    }
    fn decided_at(&self) -> Option<&str> {
        Some(self.at)
    }
}

fn text_state(log: &dyn LogView, commitment: &str) -> Result<TextState, LedgerError> {
    match parse_hex32(commitment) {
        Some(key) => log.text(&key),
        None => Ok(TextState::Missing),
    }
}

/// A call that cannot be re-executed, and why.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Skip {
    pub reason: SkipReason,
    pub detail: String,
}

impl Skip {
    fn new(reason: SkipReason, detail: impl Into<String>) -> Self {
        Self {
            reason,
            detail: detail.into(),
        }
    }
}

/// Re-decides one recorded call against the decider's current state.
fn check<D>(
    log: &dyn LogView,
    decider: &D,
    event: &Event,
    unavailable: &HashMap<SessionId, u64>,
) -> Result<CallCheck, ReplayError>
where
    D: Decider<Command = Command>,
{
    let verdict = match rebuild(log, event)? {
        Err(skip) => Verdict::Skipped {
            reason: skip.reason,
            detail: skip.detail,
        },
        Ok(command) => {
            let at = AtTime {
                log,
                at: &event.recorded_at,
            };
            let draft = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
                decider.decide(&command, &at)
            }))
            .unwrap_or_else(|_| decider.failed(&command, "re-deciding the call panicked"));
            let recorded_text = |commitment: &str| match text_state(log, commitment) {
                Ok(TextState::Present(record)) => Some(record.text),
                _ => None,
            };
            match compare::compare(event, draft, recorded_body(log, event)?, &recorded_text)? {
                None => Verdict::Matched,
                Some(divergence) => {
                    let may_read = sessions_named(event, &command.arguments);
                    let blind = may_read
                        .iter()
                        .find(|s| unavailable.get(*s).is_some_and(|&until| event.seq < until));
                    match blind {
                        Some(s) => Verdict::Skipped {
                            reason: SkipReason::TextUnavailable,
                            detail: format!(
                                "diverged, but session {s} held a text when this call was \
                                 decided that is erased or missing now"
                            ),
                        },
                        None => Verdict::Diverged(divergence),
                    }
                }
            }
        }
    };
    Ok(CallCheck {
        seq: event.seq,
        tool: event.call.tool.clone(),
        thought_number: thought_number(event),
        verdict,
    })
}

/// The response body itself, when the event kept it (`outcome.responseRef`, for calls with an
/// idempotency key) and it is still stored.
fn recorded_body(log: &dyn LogView, event: &Event) -> Result<Option<Value>, ReplayError> {
    let Some(response) = &event.outcome.response_ref else {
        return Ok(None);
    };
    Ok(match text_state(log, &response.commitment)? {
        TextState::Present(record) => serde_json::from_str(&record.text).ok(),
        _ => None,
    })
}

/// The sessions a call may have read: its own and any session id among its arguments.
fn sessions_named(event: &Event, arguments: &Value) -> Vec<SessionId> {
    let mut out: Vec<SessionId> = event.session_id.iter().cloned().collect();
    if let Value::Object(map) = arguments {
        out.extend(
            map.values()
                .filter_map(Value::as_str)
                .filter_map(SessionId::parse),
        );
    }
    out
}

/// The thought a call recorded (from its facts) or named (from its arguments).
fn thought_number(event: &Event) -> Option<u32> {
    let recorded = event.facts.iter().find_map(|f| match f {
        Fact::ThoughtRecorded(t) => Some(t.thought_number),
        _ => None,
    });
    recorded.or_else(|| {
        let n = &event.call.arguments["thoughtNumber"];
        n.as_u64()
            .or_else(|| n.as_str().and_then(|s| s.trim().parse().ok()))
            .and_then(|n| u32::try_from(n).ok())
    })
}
