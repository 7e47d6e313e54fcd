//! The persisted contract: the event envelope and the facts a tool call produces.
//!
//! This module is pure data. It knows nothing of hashing, storage, MCP or business rules; every
//! other layer imports it and it imports none of them. Everything here is serialized into the
//! ledger and hashed, so changes must be additive: a new fact variant or an optional field, never
//! a rename. Names are past tense (`ThoughtRecorded`, `SessionClosed`) because an event states
//! what happened, not what was asked.
//!
//! The facts one family makes live in its own submodule (`thinking`, `deliberation`); the
//! envelope, the session lifecycle and erasure, which every family shares, stay here.

pub mod agent;
pub mod cognition;
pub mod deliberation;
pub mod lux;
pub mod memory;
pub mod thinking;
pub mod trace;

use std::fmt;

use serde::{Deserialize, Serialize};
use serde_json::Value;

pub use thinking::ThoughtRecorded;
pub use trace::{InvalidTraceContext, TraceContext};

/// The envelope version written by this build. Readers accept every version up to this one.
pub const ENVELOPE_VERSION: u32 = 1;

/// The only envelope kind so far: one per `tools/call`, whatever its outcome.
pub const KIND_TOOL_CALL_RECORDED: &str = "ToolCallRecorded";

/// A session identifier: a lowercase UUID v4 string, chosen by the server.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(transparent)]
pub struct SessionId(String);

impl SessionId {
    /// The session id 16 random bytes make (a UUID v4: version and variant bits set). Where the
    /// bytes come from is the caller's business: a decision draws them from its call's seed
    /// (`app`), the caller's side from the operating system (`effects`).
    pub fn from_random_bytes(bytes: [u8; 16]) -> Self {
        Self(
            uuid::Builder::from_random_bytes(bytes)
                .into_uuid()
                .to_string(),
        )
    }

    /// Parses a caller-supplied id; only the canonical lowercase hyphenated UUID form is accepted
    /// so that one session cannot be named two ways.
    pub fn parse(raw: &str) -> Option<Self> {
        let parsed = uuid::Uuid::parse_str(raw).ok()?;
        let canonical = parsed.to_string();
        (canonical == raw).then_some(Self(canonical))
    }

    pub fn as_str(&self) -> &str {
        &self.0
    }
}

impl fmt::Display for SessionId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

/// A commitment to a piece of erasable free text: `BLAKE3-derive_key(ctx, salt ‖ text)` in
/// lowercase hex. The text and its salt live beside the log, never inside an event.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
pub struct TextRef {
    /// 64 lowercase hex digits.
    #[serde(rename = "textCommitment")]
    pub commitment: String,
}

/// Resolves a text commitment to its text when the text is stored (and not erased). Projections
/// receive one with every event; the ledger provides it.
pub type TextLookup<'a> = dyn Fn(&TextRef) -> Option<std::sync::Arc<str>> + 'a;

/// One recorded `tools/call`: the unit of the log.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Event {
    /// Envelope version; see [`ENVELOPE_VERSION`].
    pub v: u32,
    /// Envelope kind, past tense; see [`KIND_TOOL_CALL_RECORDED`].
    pub kind: String,
    /// Position in the log: 1, 2, 3, … with no gaps.
    pub seq: u64,
    /// The ledger this event belongs to, so an event cannot be replayed into another ledger.
    pub ledger_id: String,
    /// The session the call acted on, when there was one.
    pub session_id: Option<SessionId>,
    /// UTC time the writer decided the call (RFC 3339, microseconds, `Z`). A claim of this
    /// server, not a proof of time.
    pub recorded_at: String,
    /// Who made the call.
    pub actor: Actor,
    /// The call as received: tool name and arguments, with erasable text replaced by [`TextRef`].
    pub call: Call,
    /// What the call changed. Empty for read-only and rejected calls.
    pub facts: Vec<Fact>,
    /// How the call ended and a digest of what the client was told.
    pub outcome: Outcome,
    /// Where derived output came from (rule set and version, or model and provider).
    pub provenance: Provenance,
    /// The W3C trace context the caller sent with the call (MCP `_meta.traceparent`, or the
    /// HTTP `traceparent` header), recorded as received so that an auditor can join the event
    /// with the caller's trace. Absent from the canonical form when the call carried none (or
    /// an ill-formed one), so every event without it hashes as before.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub trace: Option<TraceContext>,
    /// `hash` of event `seq - 1`; 64 zeros for the first event.
    pub prev_hash: String,
    /// This event's hash over its canonical form without this field.
    pub hash: String,
}

/// The principal of calls that carry none: the process owner on stdio, or on an HTTP server
/// without authentication.
pub const LOCAL_PRINCIPAL: &str = "local";

/// The principal and client behind a call.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Actor {
    /// The authenticated principal, or `local` for the process owner on stdio / loopback HTTP.
    pub principal: String,
    /// `stdio` or `http`.
    pub transport: String,
    /// Client name from the MCP handshake (or per-request metadata), when known.
    pub client_name: Option<String>,
    /// Client version from the MCP handshake, when known.
    pub client_version: Option<String>,
    /// `auditor` for a principal that reads everything and writes nothing; absent for a member.
    #[serde(default, skip_serializing_if = "Role::is_member")]
    pub role: Role,
    /// Memory owners (`userId`s) the principal may act for besides its own name; absent when
    /// none.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub user_ids: Vec<String>,
}

/// What a principal may do.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Role {
    /// Reads and writes its own sessions, deliberations and memories.
    #[default]
    Member,
    /// Reads everything, writes nothing.
    Auditor,
}

impl Role {
    pub fn is_member(&self) -> bool {
        *self == Self::Member
    }
}

/// A tool call as recorded.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Call {
    pub tool: String,
    /// The arguments object in canonical form, erasable text replaced by `{"textCommitment": …}`.
    /// For a call whose arguments could not be parsed at all, the whole raw argument object is
    /// one text reference (it may hold anything, so it must stay erasable).
    pub arguments: Value,
    /// The client's idempotency key (MCP `_meta.idempotencyKey`), when it sent one. Absent from
    /// the canonical form otherwise.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub idempotency_key: Option<String>,
    /// The effects the call took before it was decided that a re-execution must be given back
    /// (an embedding). Absent from the canonical form when the call took none.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub effects: Option<RecordedEffects>,
}

/// The effects of one call that are recorded with it (see [`Call::effects`]).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct RecordedEffects {
    /// The vector of the call's text, when the call embedded one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub embedding: Option<RecordedEmbedding>,
    /// The model calls the call made, in the order its decision asked for them. Absent from the
    /// canonical form when it made none.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub model_calls: Vec<RecordedModelCall>,
}

/// One model call taken as an effect: what was asked of which model and what came back. The
/// exact request and response bytes are one erasable text (they hold the caller's words and the
/// model's); the rest is public. Never a key or a URL's credentials.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct RecordedModelCall {
    /// The kind of provider (`openai_compatible`).
    pub provider: String,
    /// `chat_completions` or `chat_completions_stream`.
    pub endpoint: String,
    /// The model the call asked for.
    pub model_requested: String,
    /// The model the provider said answered.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub model_reported: Option<String>,
    /// BLAKE3 derive-key (`thinkledger 2026-11 model request v1`) of the exact request bytes.
    pub request_digest: String,
    /// Why generation stopped, as the provider said.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub finish_reason: Option<String>,
    /// Token counts, when the provider reported them.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub usage: Option<TokenUsage>,
    /// The HTTP status of the recorded answer.
    pub status: u16,
    /// Attempts made (retries included).
    pub attempts: u32,
    /// From the first attempt to the last byte of the answer, in milliseconds.
    pub latency_ms: u64,
    /// For a call sent at once with others (`think_parallel`'s streams): milliseconds from the
    /// batch's start to this call's send, so the event itself shows whether the calls
    /// overlapped. Absent for a call made alone.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub started_after_ms: Option<u64>,
    /// The exchange as the provider module records it (JSON: the exact request and response
    /// bytes, base64), an erasable text.
    pub exchange: TextRef,
}

/// Token counts of a model call.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct TokenUsage {
    pub prompt_tokens: u64,
    pub completion_tokens: u64,
    pub total_tokens: u64,
}

/// A vector taken as an effect: its model, its dimension, and the vector itself as an erasable
/// text (the base64 of its components as IEEE 754 binary32, little-endian, in order), since a
/// vector is derived from the text it embeds.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct RecordedEmbedding {
    pub model: String,
    pub dimension: u32,
    pub vector: TextRef,
}

/// The outcome of a call.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Outcome {
    pub status: OutcomeStatus,
    /// BLAKE3 (derive_key context `thinkledger 2026-11 response v1`) of the canonical JSON of the
    /// response body the client received, receipt fields (`seq`, `eventHash`) excluded.
    pub response_digest: String,
    /// Present when `status` is not `ok`.
    pub error: Option<ErrorRecord>,
    /// The response body itself, stored as erasable text, for calls with an idempotency key (so
    /// a retry can be answered with it). Absent from the canonical form otherwise.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub response_ref: Option<TextRef>,
    /// Microseconds the writer spent deciding the call (parsing, rules, building the facts);
    /// excludes queueing and the durable write. A measurement, not part of the decision:
    /// re-execution does not compare it. Absent in events written before it was recorded.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub decide_micros: Option<u64>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum OutcomeStatus {
    /// The call did what it was asked.
    Ok,
    /// The call was refused for bad input; nothing changed.
    Rejected,
    /// The call was valid but could not be carried out; nothing changed.
    Failed,
}

/// Why a call did not succeed, as told to the client.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ErrorRecord {
    /// Stable machine-readable code, e.g. `invalid_arguments`, `unknown_session`.
    pub code: String,
    pub message: String,
    pub suggestion: String,
}

/// Where derived output came from.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Provenance {
    /// `rules` (deterministic code of this server) or `model`.
    pub kind: String,
    /// The rule set or model name.
    pub name: String,
    /// Its version.
    pub version: String,
}

impl Provenance {
    /// Deterministic rules of this server build.
    pub fn rules(name: &str) -> Self {
        Self {
            kind: "rules".to_owned(),
            name: name.to_owned(),
            version: env!("CARGO_PKG_VERSION").to_owned(),
        }
    }
}

/// Something a call changed. Projections fold these; nothing else changes state.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "type")]
pub enum Fact {
    /// A thinking session was opened.
    SessionStarted {
        #[serde(rename = "sessionId")]
        session_id: SessionId,
    },
    /// A thought was appended to a session's chain.
    ThoughtRecorded(ThoughtRecorded),
    /// Tags were added to or removed from one thought.
    ThoughtTagged {
        #[serde(rename = "sessionId")]
        session_id: SessionId,
        /// The seq of the event that recorded the thought: its stable identity.
        #[serde(rename = "thoughtSeq")]
        thought_seq: u64,
        added: Vec<String>,
        removed: Vec<String>,
    },
    /// A session was closed; its thoughts stay in the ledger and stay readable.
    SessionClosed {
        #[serde(rename = "sessionId")]
        session_id: SessionId,
        reason: String,
    },
    /// Stored texts were erased: their bytes and salts were removed from disk once this event
    /// was durable. Their commitments stay in the events that reference them, so the chain and
    /// every proof still verify; the text can no longer be shown or checked.
    TextsErased {
        /// The commitments erased (64 lowercase hex digits each), ascending.
        commitments: Vec<String>,
        /// Why, as given by whoever erased them.
        reason: String,
        /// The session whose texts were erased, when the erasure named one.
        #[serde(rename = "sessionId", default, skip_serializing_if = "Option::is_none")]
        session_id: Option<SessionId>,
    },
    DeliberationStarted(deliberation::DeliberationStarted),
    NodeAdded(deliberation::NodeAdded),
    EdgeAdded(deliberation::EdgeAdded),
    RubricSet(deliberation::RubricSet),
    NodesScored(deliberation::NodesScored),
    NodesPruned(deliberation::NodesPruned),
    AssumptionRecorded(deliberation::AssumptionRecorded),
    AssumptionStatusSet(deliberation::AssumptionStatusSet),
    VerificationRecorded(deliberation::VerificationRecorded),
    RouteDecided(deliberation::RouteDecided),
    CheckpointRecorded(deliberation::CheckpointRecorded),
    DeliberationStatusChanged(deliberation::DeliberationStatusChanged),
    ConsensusReached(deliberation::ConsensusReached),
    SkeletonPhaseStarted(deliberation::SkeletonPhaseStarted),
    SkeletonElaborated(deliberation::SkeletonElaborated),
    MemoryStored(memory::MemoryStored),
    MemorySuperseded(memory::MemorySuperseded),
    MemoriesRetrieved(memory::MemoriesRetrieved),
    MemorySoftDeleted(memory::MemorySoftDeleted),
    MemoryErased(memory::MemoryErased),
    ModelConferred(lux::ModelConferred),
    TracedThoughtRecorded(lux::TracedThoughtRecorded),
    PlanStepRecorded(lux::PlanStepRecorded),
    BiasedStepRecorded(lux::BiasedStepRecorded),
    AgentRunStarted(agent::AgentRunStarted),
    AgentModelRequested(agent::AgentModelRequested),
    AgentModelResponded(agent::AgentModelResponded),
    AgentModelFailed(agent::AgentModelFailed),
    AgentToolRequested(agent::AgentToolRequested),
    AgentToolReturned(agent::AgentToolReturned),
    AgentBreakerTripped(agent::AgentBreakerTripped),
    AgentIntentDetected(agent::AgentIntentDetected),
    AgentNudged(agent::AgentNudged),
    AgentRunEnded(agent::AgentRunEnded),
    CognitionRecorded(cognition::CognitionRecorded),
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn session_ids_accept_only_the_canonical_form() {
        let id = SessionId::random();
        assert_eq!(SessionId::parse(id.as_str()), Some(id.clone()));
        assert_eq!(SessionId::parse(&id.as_str().to_uppercase()), None);
        assert_eq!(SessionId::parse("not-a-uuid"), None);
    }

    /// `trace` is left out when absent, so events written before it existed keep their bytes;
    /// present, it holds the two W3C strings under their W3C names.
    #[test]
    fn the_trace_member_is_omitted_when_absent() {
        let example = r#"{"actor":{"clientName":null,"clientVersion":null,"principal":"local","transport":"stdio"},"call":{"arguments":{},"tool":"t"},"facts":[],"hash":"","kind":"ToolCallRecorded","ledgerId":"l","outcome":{"error":null,"responseDigest":"d","status":"ok"},"prevHash":"p","provenance":{"kind":"rules","name":"n","version":"1"},"recordedAt":"r","seq":1,"sessionId":null,"v":1}"#;
        let mut event: Event = serde_json::from_str(example).unwrap();
        assert_eq!(event.trace, None);
        let json = serde_json::to_value(&event).unwrap();
        assert_eq!(json, serde_json::from_str::<Value>(example).unwrap());
        event.trace = Some(TraceContext {
            traceparent: "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01".into(),
            tracestate: None,
        });
        let json = serde_json::to_value(&event).unwrap();
        assert_eq!(
            json["trace"],
            serde_json::json!({"traceparent": "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"})
        );
        assert_eq!(serde_json::from_value::<Event>(json).unwrap(), event);
    }

    #[test]
    fn facts_are_tagged_with_past_tense_names() {
        let fact = Fact::SessionClosed {
            session_id: SessionId::random(),
            reason: "reset".into(),
        };
        let json = serde_json::to_value(&fact).unwrap();
        assert_eq!(json["type"], "SessionClosed");
        assert_eq!(json["reason"], "reset");
    }
}
