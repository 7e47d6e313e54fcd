//! Idempotency keys: a call whose key its principal already used is answered with the recorded
//! outcome of the first call and appends nothing; the same key on a different call is refused.
//!
//! The index is a projection like any other: built from events carrying `call.idempotencyKey`
//! (the first event with a key defines it), so it survives restarts. The first call's response
//! body is stored as erasable text (`outcome.responseRef`) so that a retry gets the very same
//! answer; once erased, a retry is told so instead.

use imbl::HashMap;
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value, json};

use super::Rejection;
use crate::app::ErrorCode;
use crate::events::{ErrorRecord, Event, OutcomeStatus, SessionId, TextRef};
use crate::ledger::hash::parse_hex32;
use crate::ledger::{Committed, LogView, NewText, TextState};

/// Longest accepted key, in bytes.
pub const MAX_KEY_BYTES: usize = 255;

/// What the first call with a key recorded.
#[derive(Debug, Clone, Serialize, Deserialize)]
struct Entry {
    seq: u64,
    hash: String,
    session_id: Option<SessionId>,
    tool: String,
    arguments: Value,
    status: OutcomeStatus,
    error: Option<ErrorRecord>,
    response_ref: Option<TextRef>,
}

/// Keys used so far, per principal. A persistent map, so that the copy of state the writer
/// publishes after every batch costs no copy of the index.
#[derive(Debug, Default, Clone, Serialize, Deserialize)]
pub struct IdempotencyIndex {
    /// Kept as a list of `(principal, key, entry)` in snapshots: JSON maps need string keys.
    #[serde(with = "pairs")]
    entries: HashMap<(String, String), Entry>,
}

/// `(principal, key) → entry` as a list of triples.
mod pairs {
    use imbl::HashMap;
    use serde::{Deserialize, Deserializer, Serialize, Serializer};

    use super::Entry;

    pub fn serialize<S: Serializer>(
        entries: &HashMap<(String, String), Entry>,
        serializer: S,
    ) -> Result<S::Ok, S::Error> {
        let mut list: Vec<(&str, &str, &Entry)> = entries
            .iter()
            .map(|((principal, key), entry)| (principal.as_str(), key.as_str(), entry))
            .collect();
        list.sort_by_key(|(_, _, entry)| entry.seq);
        list.serialize(serializer)
    }

    pub fn deserialize<'de, D: Deserializer<'de>>(
        deserializer: D,
    ) -> Result<HashMap<(String, String), Entry>, D::Error> {
        let list = Vec::<(String, String, Entry)>::deserialize(deserializer)?;
        Ok(list
            .into_iter()
            .map(|(principal, key, entry)| ((principal, key), entry))
            .collect())
    }
}

/// What to do with a call that carries a key.
pub enum Check {
    /// First use: decide and record it normally.
    New,
    /// A repeat of the recorded call: answer with this and append nothing.
    Repeat(Committed),
    /// Refused (the key is malformed, or names a different call).
    Refused(Rejection),
}

impl IdempotencyIndex {
    pub fn apply(&mut self, event: &Event) {
        let Some(key) = &event.call.idempotency_key else {
            return;
        };
        self.entries
            .entry((event.actor.principal.clone(), key.clone()))
            .or_insert_with(|| Entry {
                seq: event.seq,
                hash: event.hash.clone(),
                session_id: event.session_id.clone(),
                tool: event.call.tool.clone(),
                arguments: event.call.arguments.clone(),
                status: event.outcome.status,
                error: event.outcome.error.clone(),
                response_ref: event.outcome.response_ref.clone(),
            });
    }

    /// Whether `principal` has used `key`.
    pub fn contains(&self, principal: &str, key: &str) -> bool {
        self.entries
            .contains_key(&(principal.to_owned(), key.to_owned()))
    }

    /// Checks a call with `key` against the calls recorded before it. `recorded` is the new
    /// call's arguments as they would be recorded, with the texts in `texts`.
    pub fn check(
        &self,
        principal: &str,
        key: &str,
        tool: &str,
        recorded: &Value,
        texts: &[NewText],
        log: &dyn LogView,
    ) -> Check {
        if key.is_empty() || key.len() > MAX_KEY_BYTES || key.chars().any(char::is_control) {
            return Check::Refused(Rejection::new(
                ErrorCode::InvalidIdempotencyKey,
                format!(
                    "an idempotency key must be 1 to {MAX_KEY_BYTES} bytes without control \
                     characters"
                ),
                "send a UUID as _meta.idempotencyKey",
            ));
        }
        let Some(entry) = self.entries.get(&(principal.to_owned(), key.to_owned())) else {
            return Check::New;
        };
        let reused = |why: &str| {
            Check::Refused(Rejection::new(
                ErrorCode::IdempotencyKeyReused,
                format!(
                    "the idempotency key \"{key}\" was used for event {} ({}), {why}",
                    entry.seq, entry.tool
                ),
                "send a new key for a new call; repeat a call only with exactly the same tool \
                 and arguments",
            ))
        };
        if entry.tool != tool {
            return reused("a call of another tool");
        }
        let new = resolve(recorded, &|c| {
            texts
                .iter()
                .find(|t| t.text_ref.commitment == c)
                .map(|t| t.record.text.clone())
        });
        let old = resolve(
            &entry.arguments,
            &|c| match parse_hex32(c).map(|k| log.text(&k)) {
                Some(Ok(TextState::Present(record))) => Some(record.text),
                _ => None,
            },
        );
        match (old, new) {
            (Some(old), Some(new)) if old == new => {}
            (None, _) => {
                return reused("whose text has since been erased, so it cannot be matched");
            }
            _ => return reused("with other arguments"),
        }
        let body = entry
            .response_ref
            .as_ref()
            .and_then(|r| parse_hex32(&r.commitment))
            .and_then(|k| match log.text(&k) {
                Ok(TextState::Present(record)) => serde_json::from_str(&record.text).ok(),
                _ => None,
            })
            .unwrap_or_else(|| {
                json!({
                    "status": "erased",
                    "note": format!(
                        "this call repeats event {}; its recorded response was erased",
                        entry.seq
                    ),
                })
            });
        Check::Repeat(Committed {
            seq: entry.seq,
            hash: entry.hash.clone(),
            session_id: entry.session_id.clone(),
            status: entry.status,
            error: entry.error.clone(),
            body,
            replayed: true,
        })
    }
}

/// `value` with every `{"textCommitment": c}` replaced by its text; `None` if one is unknown.
fn resolve(value: &Value, text: &dyn Fn(&str) -> Option<String>) -> Option<Value> {
    Some(match value {
        Value::Object(map) => {
            if map.len() == 1
                && let Some(Value::String(c)) = map.get("textCommitment")
            {
                return text(c).map(Value::String);
            }
            let mut out = Map::new();
            for (k, v) in map {
                out.insert(k.clone(), resolve(v, text)?);
            }
            Value::Object(out)
        }
        Value::Array(items) => Value::Array(
            items
                .iter()
                .map(|v| resolve(v, text))
                .collect::<Option<Vec<_>>>()?,
        ),
        other => other.clone(),
    })
}
