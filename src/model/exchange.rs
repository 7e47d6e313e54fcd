//! The record of one model call: what was asked, of whom, and what came back, with the exact
//! bytes on the wire, so a ledger can keep it and a re-execution can replay it. Never the key.

use std::fmt;

use base64::Engine;
use base64::engine::general_purpose::STANDARD;
use serde::{Deserialize, Deserializer, Serialize, Serializer};

use super::config::ProviderKind;
use super::wire::{ToolCall, Usage};

/// The BLAKE3 derive-key context of a request digest (64 hex digits over the request bytes).
const REQUEST_CONTEXT: &str = "thinkledger 2026-11 model request v1";

/// The digest of request bytes: BLAKE3 derive-key with context
/// `thinkledger 2026-11 model request v1`, lowercase hex.
pub fn request_digest(bytes: &[u8]) -> String {
    blake3::Hasher::new_derive_key(REQUEST_CONTEXT)
        .update(bytes)
        .finalize()
        .to_hex()
        .to_string()
}

/// Which endpoint was called.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Endpoint {
    /// `chat/completions`, one JSON answer.
    ChatCompletions,
    /// `chat/completions` with `stream: true`: the answer is the concatenated SSE stream.
    ChatCompletionsStream,
    /// `embeddings`.
    Embeddings,
}

impl Endpoint {
    /// Its name as recorded (and as the metrics label it).
    pub fn label(self) -> &'static str {
        match self {
            Self::ChatCompletions => "chat_completions",
            Self::ChatCompletionsStream => "chat_completions_stream",
            Self::Embeddings => "embeddings",
        }
    }
}

/// One model call as it happened (its last attempt, when it was retried).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Exchange {
    /// The kind of provider.
    pub provider: ProviderKind,
    /// The `/v1` base URL, without credentials.
    pub base_url: String,
    /// The endpoint called.
    pub endpoint: Endpoint,
    /// The model the call asked for (the caller's, or the configured default).
    pub model_requested: String,
    /// The model the server said answered: the one to record and show.
    pub model_reported: Option<String>,
    /// [`request_digest`] of `request_bytes`.
    pub request_digest: String,
    /// The generated text (chat), if any.
    pub response_text: Option<String>,
    /// The tool calls the model made (chat).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub tool_calls: Vec<ToolCall>,
    /// Why generation stopped (`stop`, `length`, `tool_calls`, …).
    pub finish_reason: Option<String>,
    /// Token counts, when the server reported them.
    pub usage: Option<Usage>,
    /// HTTP status of the answer.
    pub status: u16,
    /// Attempts made, the last (recorded) one included.
    pub attempts: u32,
    /// From the first attempt's send to the last byte of the recorded answer, in milliseconds.
    pub latency_ms: u64,
    /// For a call sent in a batch with others (`ModelStep::Concurrent`): milliseconds from the
    /// batch's start to this call's send. Absent otherwise.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub started_after_ms: Option<u64>,
    /// The exact request body sent.
    pub request_bytes: Bytes,
    /// The exact response body received (for a stream, every SSE byte in order).
    pub response_bytes: Bytes,
}

/// Raw bytes, serialized as standard base64 so that any byte survives JSON.
#[derive(Clone, PartialEq, Eq, Default)]
pub struct Bytes(pub Vec<u8>);

impl Bytes {
    /// The bytes as text, if they are UTF-8.
    pub fn as_str(&self) -> Option<&str> {
        std::str::from_utf8(&self.0).ok()
    }
}

impl fmt::Debug for Bytes {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.as_str() {
            Some(text) => write!(f, "Bytes({text:?})"),
            None => write!(f, "Bytes({} bytes)", self.0.len()),
        }
    }
}

impl Serialize for Bytes {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.serialize_str(&STANDARD.encode(&self.0))
    }
}

impl<'de> Deserialize<'de> for Bytes {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        let text = String::deserialize(deserializer)?;
        STANDARD
            .decode(text)
            .map(Bytes)
            .map_err(serde::de::Error::custom)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_digest_is_domain_separated_blake3_and_stable() {
        let digest = request_digest(b"{}");
        assert_eq!(digest.len(), 64);
        assert_eq!(digest, request_digest(b"{}"));
        assert_ne!(digest, blake3::hash(b"{}").to_hex().to_string());
    }

    #[test]
    fn bytes_round_trip_through_json() {
        let bytes = Bytes(vec![0, 255, b'a']);
        let json = serde_json::to_string(&bytes).unwrap();
        assert_eq!(serde_json::from_str::<Bytes>(&json).unwrap(), bytes);
    }
}
