//! Rebuilding the [`Command`] an event recorded: its arguments read back from the text store
//! (texts at any depth, the vector and exchange of a call that had them), or why it cannot be
//! rebuilt honestly ([`Skip`]: omitted arguments, an erased, missing or altered text).

use std::sync::Arc;

use serde_json::{Map, Value};

use crate::app::{Command, ErrorCode};
use crate::effects::{Prepared, Seed};
use crate::embed::Embedding;
use crate::events::{Event, OutcomeStatus, SessionId};
use crate::ledger::hash::{parse_hex32, text_commitment};
use crate::ledger::{LogView, TextState};
use crate::model::ChatOutcome;

use super::{ReplayError, Skip, SkipReason, reads_log, text_state};

/// A recorded argument value as it was sent: every text commitment in it (at any depth: texts
/// inside arrays and objects, such as `claims[].text`) read back from the text store.
pub(super) fn restore(
    log: &dyn LogView,
    at: &str,
    value: &Value,
) -> Result<Result<Value, Skip>, ReplayError> {
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

/// The text behind a text reference, when the reference is one: `Some(commitment)`.
pub(super) fn text_ref(value: &Value) -> Option<&str> {
    match value {
        Value::Object(map) if map.len() == 1 => map.get("textCommitment")?.as_str(),
        _ => None,
    }
}

/// `Some(detail)` when `value` is `{"omitted": …}`.
pub(super) fn omitted(value: &Value) -> Option<String> {
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
pub(super) fn resolve(
    log: &dyn LogView,
    commitment: &str,
) -> Result<Result<String, Skip>, ReplayError> {
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

/// Why a recorded call is not re-executed at all, whatever its arguments: it failed, ran over
/// its time limit, found no model, was cancelled, or reads the log (which has grown since).
fn not_re_executable(event: &Event) -> Option<Skip> {
    if event.outcome.status == OutcomeStatus::Failed {
        return Some(Skip::new(
            SkipReason::RecordedFailure,
            "the recorded decision failed; there is no answer to reproduce",
        ));
    }
    if event
        .outcome
        .error
        .as_ref()
        .is_some_and(|e| e.code == ErrorCode::TimeLimitExceeded.as_str())
    {
        return Some(Skip::new(
            SkipReason::TimeLimited,
            "the call was refused for running over its time limit",
        ));
    }
    if event.outcome.error.as_ref().is_some_and(|e| {
        e.code == ErrorCode::ModelNotConfigured.as_str()
            || e.code == ErrorCode::ModelCallFailed.as_str()
    }) {
        return Some(Skip::new(
            SkipReason::ModelUnavailable,
            "the call was refused because the model provider could not answer then",
        ));
    }
    if event
        .outcome
        .error
        .as_ref()
        .is_some_and(|e| e.code == ErrorCode::CallCancelled.as_str())
    {
        return Some(Skip::new(
            SkipReason::Cancelled,
            "the client cancelled the call while it worked",
        ));
    }
    if reads_log(&event.call.tool) {
        return Some(Skip::new(
            SkipReason::ReadsLog,
            format!(
                "{} reads the log, which has grown since the call",
                event.call.tool
            ),
        ));
    }
    None
}

/// The arguments as sent: opaque arguments (`{"raw": <text>}`) read back and parsed, each
/// named argument restored ([`restore`]), anything else as recorded.
fn arguments(log: &dyn LogView, recorded: &Value) -> Result<Result<Value, Skip>, ReplayError> {
    if let Some(detail) = omitted(recorded) {
        return Ok(Err(Skip::new(
            SkipReason::ArgumentsOmitted,
            format!("the arguments were not recorded ({detail})"),
        )));
    }
    Ok(Ok(match recorded {
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
    }))
}

/// A call's vector as its `Prepared` holds it: none, or the embedding (or why there is none).
type TakenVector = Option<Result<Embedding, String>>;

/// The vector the call took, given back as recorded (read from the text store); a call whose
/// vector is erased cannot be re-executed honestly.
fn embedding(log: &dyn LogView, event: &Event) -> Result<Result<TakenVector, Skip>, ReplayError> {
    let Some(recorded) = event
        .call
        .effects
        .as_ref()
        .and_then(|e| e.embedding.as_ref())
    else {
        return Ok(Ok(None));
    };
    let text = match resolve(log, &recorded.vector.commitment)? {
        Ok(text) => text,
        Err(skip) => return Ok(Err(skip)),
    };
    let model: Arc<str> = Arc::from(recorded.model.as_str());
    Ok(match Embedding::from_base64(model, &text) {
        Some(e) => Ok(Some(Ok(e))),
        None => Err(Skip::new(
            SkipReason::RawUnparseable,
            "the recorded vector is not base64 of binary32 components".to_owned(),
        )),
    })
}

/// The model answers, given back as recorded (each exchange read again from its exact bytes),
/// so nothing is called again; an erased exchange cannot be re-executed honestly.
fn model_answers(
    log: &dyn LogView,
    event: &Event,
) -> Result<Result<Vec<ChatOutcome>, Skip>, ReplayError> {
    let mut answers = Vec::new();
    for call in event.call.effects.iter().flat_map(|e| &e.model_calls) {
        let text = match resolve(log, &call.exchange.commitment)? {
            Ok(text) => text,
            Err(skip) => return Ok(Err(skip)),
        };
        let outcome = serde_json::from_str::<crate::model::Exchange>(&text)
            .map_err(|e| e.to_string())
            .and_then(|x| ChatOutcome::from_exchange(x).map_err(|e| e.to_string()));
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
    Ok(Ok(answers))
}

/// The command as the server received it, rebuilt from its event; or why it cannot be.
pub fn rebuild(log: &dyn LogView, event: &Event) -> Result<Result<Command, Skip>, ReplayError> {
    if let Some(skip) = not_re_executable(event) {
        return Ok(Err(skip));
    }
    let arguments = match arguments(log, &event.call.arguments)? {
        Ok(arguments) => arguments,
        Err(skip) => return Ok(Err(skip)),
    };
    let embedding = match embedding(log, event)? {
        Ok(embedding) => embedding,
        Err(skip) => return Ok(Err(skip)),
    };
    let answers = match model_answers(log, event)? {
        Ok(answers) => answers,
        Err(skip) => return Ok(Err(skip)),
    };
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
