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
pub mod timeline;
pub(super) mod tools;

#[cfg(test)]
mod tests;

use std::collections::HashMap;
use std::sync::Arc;

use schemars::JsonSchema;
use serde::Serialize;
use serde_json::{Map, Value};

use super::call::{Decide, Watch};
use super::{Command, ErrorCode, registry};
use crate::effects::{Prepared, Seed};
use crate::events::{Event, Fact, OutcomeStatus, SessionId, TextRef};
use crate::ledger::hash::{parse_hex32, text_commitment};
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

/// The text behind a text reference, when the reference is one: `Some(commitment)`.
/// A recorded argument value as it was sent: every text commitment in it (at any depth: texts
/// inside arrays and objects, such as `claims[].text`) read back from the text store.
fn restore(log: &dyn LogView, at: &str, value: &Value) -> Result<Result<Value, Skip>, ReplayError> {
    if let Some(detail) = omitted(value) {
        return Ok(Err(Skip::new(
            SkipReason::ArgumentsOmitted,
            format!("`{at}` was not recorded ({detail})"),
        )));
    }
    if let Some(commitment) = text_ref(value) {
        return Ok(resolve(log, commitment)?.map(Value::String));
    }
    Ok(Ok(match value {
        Value::Array(items) => {
            let mut out = Vec::with_capacity(items.len());
            for (i, item) in items.iter().enumerate() {
                match restore(log, &format!("{at}[{i}]"), item)? {
                    Ok(v) => out.push(v),
                    Err(skip) => return Ok(Err(skip)),
                }
            }
            Value::Array(out)
        }
        Value::Object(map) => {
            let mut out = Map::new();
            for (name, item) in map {
                match restore(log, &format!("{at}.{name}"), item)? {
                    Ok(v) => out.insert(name.clone(), v),
                    Err(skip) => return Ok(Err(skip)),
                };
            }
            Value::Object(out)
        }
        other => other.clone(),
    }))
}

fn text_ref(value: &Value) -> Option<&str> {
    match value {
        Value::Object(map) if map.len() == 1 => map.get("textCommitment")?.as_str(),
        _ => None,
    }
}

/// `Some(detail)` when `value` is `{"omitted": …}`.
fn omitted(value: &Value) -> Option<String> {
    match value {
        Value::Object(map) if map.len() == 1 => {
            let info = map.get("omitted")?;
            let reason = info["reason"].as_str().unwrap_or("unknown");
            Some(match info["bytes"].as_u64() {
                Some(bytes) => format!("{reason}, {bytes} bytes"),
                None => reason.to_owned(),
            })
        }
        _ => None,
    }
}

/// Reads one committed text back, checking it against its commitment.
fn resolve(log: &dyn LogView, commitment: &str) -> Result<Result<String, Skip>, ReplayError> {
    Ok(match text_state(log, commitment)? {
        TextState::Present(record) => {
            if text_commitment(&record.salt, &record.text) == commitment {
                Ok(record.text)
            } else {
                Err(Skip::new(
                    SkipReason::TextMismatch,
                    format!("the stored text of {commitment} does not match it"),
                ))
            }
        }
        TextState::Erased { seq } => Err(Skip::new(
            SkipReason::TextErased,
            format!("text {commitment} was erased by event {seq}"),
        )),
        TextState::Missing => Err(Skip::new(
            SkipReason::TextMissing,
            format!("text {commitment} is not stored"),
        )),
    })
}

/// The command as the server received it, rebuilt from its event; or why it cannot be.
pub fn rebuild(log: &dyn LogView, event: &Event) -> Result<Result<Command, Skip>, ReplayError> {
    if event.outcome.status == OutcomeStatus::Failed {
        return Ok(Err(Skip::new(
            SkipReason::RecordedFailure,
            "the recorded decision failed; there is no answer to reproduce",
        )));
    }
    if event
        .outcome
        .error
        .as_ref()
        .is_some_and(|e| e.code == ErrorCode::TimeLimitExceeded.as_str())
    {
        return Ok(Err(Skip::new(
            SkipReason::TimeLimited,
            "the call was refused for running over its time limit",
        )));
    }
    if event.outcome.error.as_ref().is_some_and(|e| {
        e.code == ErrorCode::ModelNotConfigured.as_str()
            || e.code == ErrorCode::ModelCallFailed.as_str()
    }) {
        return Ok(Err(Skip::new(
            SkipReason::ModelUnavailable,
            "the call was refused because the model provider could not answer then",
        )));
    }
    if event
        .outcome
        .error
        .as_ref()
        .is_some_and(|e| e.code == ErrorCode::CallCancelled.as_str())
    {
        return Ok(Err(Skip::new(
            SkipReason::Cancelled,
            "the client cancelled the call while it worked",
        )));
    }
    if reads_log(&event.call.tool) {
        return Ok(Err(Skip::new(
            SkipReason::ReadsLog,
            format!(
                "{} reads the log, which has grown since the call",
                event.call.tool
            ),
        )));
    }
    let recorded = &event.call.arguments;
    if let Some(detail) = omitted(recorded) {
        return Ok(Err(Skip::new(
            SkipReason::ArgumentsOmitted,
            format!("the arguments were not recorded ({detail})"),
        )));
    }
    let arguments = match recorded {
        Value::Object(map) if map.len() == 1 && map.get("raw").and_then(text_ref).is_some() => {
            let commitment = map.get("raw").and_then(text_ref).unwrap_or_default();
            let raw = match resolve(log, commitment)? {
                Ok(raw) => raw,
                Err(skip) => return Ok(Err(skip)),
            };
            match serde_json::from_str::<Value>(&raw) {
                Ok(value) => value,
                Err(e) => {
                    return Ok(Err(Skip::new(
                        SkipReason::RawUnparseable,
                        format!("the opaque arguments are not JSON: {e}"),
                    )));
                }
            }
        }
        Value::Object(map) => {
            let mut out = Map::new();
            for (name, value) in map {
                match restore(log, name, value)? {
                    Ok(value) => out.insert(name.clone(), value),
                    Err(skip) => return Ok(Err(skip)),
                };
            }
            Value::Object(out)
        }
        other => other.clone(),
    };
    // The effects the call took are given back as recorded (its vector, read from the text
    // store); a call whose vector is erased cannot be re-executed honestly.
    let embedding = match event
        .call
        .effects
        .as_ref()
        .and_then(|e| e.embedding.as_ref())
    {
        None => None,
        Some(recorded) => {
            let text = match resolve(log, &recorded.vector.commitment)? {
                Ok(text) => text,
                Err(skip) => return Ok(Err(skip)),
            };
            let model: Arc<str> = Arc::from(recorded.model.as_str());
            match crate::embed::Embedding::from_base64(model, &text) {
                Some(e) => Some(Ok(e)),
                None => {
                    return Ok(Err(Skip::new(
                        SkipReason::RawUnparseable,
                        "the recorded vector is not base64 of binary32 components".to_owned(),
                    )));
                }
            }
        }
    };
    // The model answers are given back as recorded (each exchange read again from its exact
    // bytes), so nothing is called again; an erased exchange cannot be re-executed honestly.
    let mut answers = Vec::new();
    for call in event.call.effects.iter().flat_map(|e| &e.model_calls) {
        let text = match resolve(log, &call.exchange.commitment)? {
            Ok(text) => text,
            Err(skip) => return Ok(Err(skip)),
        };
        let outcome = serde_json::from_str::<crate::model::Exchange>(&text)
            .map_err(|e| e.to_string())
            .and_then(|x| crate::model::ChatOutcome::from_exchange(x).map_err(|e| e.to_string()));
        match outcome {
            Ok(outcome) => answers.push(outcome),
            Err(reason) => {
                return Ok(Err(Skip::new(
                    SkipReason::RawUnparseable,
                    format!("a recorded model exchange cannot be read: {reason}"),
                )));
            }
        }
    }
    let stand_in = parse_hex32(&event.hash).unwrap_or([0; 32]);
    let tool_enabled = event
        .outcome
        .error
        .as_ref()
        .is_none_or(|e| e.code != ErrorCode::ToolDisabled.as_str());
    Ok(Ok(Command {
        tool: event.call.tool.clone(),
        arguments,
        actor: event.actor.clone(),
        // A call that named no session acted on its connection's, which is the session it was
        // recorded against (a first thought started it under that id).
        // A call recorded without a session started none, so any id does; the event's hash
        // keeps it fixed.
        connection_session: event.session_id.clone().unwrap_or_else(|| {
            let mut bytes = [0u8; 16];
            bytes.copy_from_slice(&stand_in[..16]);
            SessionId::from_random_bytes(bytes)
        }),
        // A refusal is recorded where the event says: the session it concerned, its caller's,
        // or none (before refusals were kept in their caller's session).
        refused_in: event.session_id.clone(),
        tool_enabled,
        toolsets: Vec::new(),
        // The operator's commands come from the CLI (and read the log, so they are skipped
        // before this point; kept right for completeness).
        admin: event.actor.transport == "cli",
        idempotency_key: event.call.idempotency_key.clone(),
        // The trace context is an input recorded as received: given back as recorded.
        trace: event.trace.clone(),
        prepared: Prepared {
            at: chrono::DateTime::parse_from_rfc3339(&event.recorded_at)
                .map(|at| at.with_timezone(&chrono::Utc))
                .unwrap_or_default(),
            seed: Ok(Seed::new(stand_in)),
            embedding,
            model: crate::effects::ModelTaken {
                // A call decided with no model answer was decided without a provider (a tool
                // that works without one: `app::call::model::check`); it is given that back.
                failure: (answers.is_empty() && event.outcome.status == OutcomeStatus::Ok).then(
                    || crate::effects::ModelFailure::NotConfigured("none recorded".to_owned()),
                ),
                answers,
            },
            // The caller's count of its quota was an effect; its verdict is in the refusal.
            over_quota: event
                .outcome
                .error
                .as_ref()
                .filter(|e| e.code == ErrorCode::QuotaExceeded.as_str())
                .map(|e| crate::effects::OverQuota {
                    message: e.message.clone(),
                    suggestion: e.suggestion.clone(),
                }),
        },
        watch: Default::default(),
        precomputed: Default::default(),
    }))
}

/// The report as text: one line of counts, then each divergent call with its differences, then
/// each skipped call with its reason.
#[must_use]
pub fn render_text(report: &ReexecutionReport) -> String {
    let mut out = format!(
        "session {}: {} calls, {} re-executed, {} matched, {} diverged, {} skipped\n",
        report.session_id,
        report.calls,
        report.reexecuted,
        report.matched,
        report.diverged,
        report.skipped
    );
    for call in &report.divergences {
        let Verdict::Diverged(d) = &call.verdict else {
            continue;
        };
        out.push_str(&format!(
            "DIVERGED seq {} {}{}: response digest {} recorded, {} re-derived",
            call.seq,
            call.tool,
            thought_label(call),
            short(&d.recorded_digest),
            short(&d.rederived_digest),
        ));
        if d.recorded_status != d.rederived_status {
            out.push_str(&format!(
                "; status {} recorded, {} re-derived",
                d.recorded_status, d.rederived_status
            ));
        }
        out.push('\n');
        for diff in &d.differences {
            out.push_str(&format!(
                "    {}: {} → {}\n",
                diff.path,
                compact(&diff.recorded),
                compact(&diff.rederived)
            ));
        }
        if d.differences.is_empty() {
            out.push_str(&format!(
                "    response body today: {}\n",
                compact(&d.rederived_body)
            ));
        }
    }
    for call in &report.skipped_calls {
        if let Verdict::Skipped { reason, detail } = &call.verdict {
            let reason = serde_json::to_value(reason)
                .ok()
                .and_then(|v| v.as_str().map(str::to_owned))
                .unwrap_or_default();
            out.push_str(&format!(
                "skipped seq {} {}{}: {reason} — {detail}\n",
                call.seq,
                call.tool,
                thought_label(call)
            ));
        }
    }
    out
}

fn thought_label(call: &CallCheck) -> String {
    call.thought_number
        .map_or_else(String::new, |n| format!(" (thought {n})"))
}

fn short(digest: &str) -> String {
    digest.chars().take(12).collect::<String>() + "…"
}

/// One-line JSON, cut at 200 characters.
fn compact(value: &Value) -> String {
    let text = value.to_string();
    if text.chars().count() <= 200 {
        return text;
    }
    text.chars().take(200).collect::<String>() + "…"
}
