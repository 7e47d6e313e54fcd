//! The model provider: an OpenAI-compatible client (chat completions, streamed or not, with tool
//! calls, log-probabilities and JSON-schema response formats; embeddings) that keeps, for every
//! call, the exact bytes it sent and received in an [`Exchange`].
//!
//! A model call is an effect: callers take it on the caller's side, before the decision on the
//! ledger's writer, and record its [`Exchange`] as an input of that decision, so re-execution
//! replays the recorded answer instead of calling the model again. This module only makes the
//! call and records it.
//!
//! Owns: the wire format of an OpenAI-compatible `/v1` server, SSE reassembly, the retry policy
//! (exponential backoff with jitter drawn from an injected seed, `Retry-After` honoured),
//! configuration from a lookup function ([`ProviderConfig::from_lookup`]: `effects` reads the
//! environment, not this module), and each call's time and failure in the process's metrics
//! (`crate::metrics`). Must not know: the ledger, decisions, MCP, the environment,
//! the clock's wall time (only durations are measured).
//!
//! **Architecture Invariant:** the API key never leaves [`ProviderConfig`]: it is not in an
//! [`Exchange`], an error or a `Debug` output, and a base URL is kept and shown without its
//! userinfo.

mod client;
mod config;
mod exchange;
mod retry;
mod sse;
mod wire;

pub use client::{ChatOutcome, EmbeddingsOutcome, ModelClient, Retrying};
pub use config::{
    API_KEY_VAR, DEFAULT_MODEL_VAR, MAX_TOKENS_VAR, PROVIDER_URL_VAR, ProviderConfig, ProviderKind,
    Timeouts,
};
pub use exchange::{Endpoint, Exchange, request_digest};
pub use retry::RetryPolicy;
pub use wire::{
    ChatRequest, EmbeddingsRequest, FunctionCall, FunctionDefinition, Message, ResponseFormat,
    Role, TokenLogprob, ToolCall, ToolDefinition, TopLogprob, Usage,
};

use std::time::Duration;

/// Why a model call failed. Each message says what to do; none carries the API key or a URL's
/// credentials. Reaches a client as a tool error (the tools that call models are built on this).
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum ModelError {
    /// No provider URL is configured: model-backed tools are fail-closed.
    #[error(
        "no model provider is configured: set {PROVIDER_URL_VAR} to an OpenAI-compatible /v1 \
         base URL (for example http://127.0.0.1:8080/v1), {DEFAULT_MODEL_VAR} to the default \
         model, and {API_KEY_VAR} if the server needs a key"
    )]
    NotConfigured,
    /// The provider URL cannot be used as a `/v1` base.
    #[error(
        "{PROVIDER_URL_VAR} is not a usable base URL ({reason}); expected e.g. http://127.0.0.1:8080/v1"
    )]
    InvalidUrl {
        /// What is wrong with it (the URL itself is not repeated: it may hold credentials).
        reason: String,
    },
    /// A setting other than the URL cannot be used.
    #[error("the model provider's configuration cannot be used: {reason}")]
    InvalidSetting {
        /// Which setting and what it must be.
        reason: String,
    },
    /// The base URL asks for TLS, which this build does not include.
    #[error(
        "{base_url} needs TLS, which this build does not include: use an http:// provider on \
         loopback or a trusted network, or a local TLS-terminating proxy, in {PROVIDER_URL_VAR}"
    )]
    TlsUnavailable {
        /// The base URL, without credentials.
        base_url: String,
    },
    /// Neither the call nor the configuration names a model.
    #[error("no model named: pass `model` with the call or set {DEFAULT_MODEL_VAR}")]
    NoModel,
    /// The provider could not be reached, after every retry.
    #[error(
        "could not reach the model provider at {base_url} after {attempts} attempt(s): {reason}; \
         is the server running, and is {PROVIDER_URL_VAR} right?"
    )]
    Unreachable {
        /// The base URL, without credentials.
        base_url: String,
        /// How many attempts were made.
        attempts: u32,
        /// What the last attempt met.
        reason: String,
    },
    /// The call took longer than the configured total timeout.
    #[error("the model provider at {base_url} did not answer within {after:?}")]
    TimedOut {
        /// The base URL, without credentials.
        base_url: String,
        /// The total timeout that ran out.
        after: Duration,
    },
    /// The provider answered with an error status (after every retry for 429 and 5xx).
    #[error("the model provider answered HTTP {status} after {attempts} attempt(s){hint}: {body}")]
    Status {
        /// The HTTP status.
        status: u16,
        /// How many attempts were made.
        attempts: u32,
        /// What to do about it, when known (rate limited, wrong model, bad key).
        hint: &'static str,
        /// The start of the error body the server sent.
        body: String,
    },
    /// The provider answered 2xx with a body that is not an OpenAI-compatible response.
    #[error("the model provider's answer could not be read: {reason}")]
    Malformed {
        /// What was wrong.
        reason: String,
    },
    /// An answer (a stream, or a body whose connection broke) ended before it was complete,
    /// after every retry.
    #[error("the model provider's answer ended early after {attempts} attempt(s): {reason}")]
    TornStream {
        /// How many attempts were made.
        attempts: u32,
        /// What was missing.
        reason: String,
    },
    /// The request could not be encoded (a value JSON cannot carry).
    #[error("the model request could not be encoded: {reason}")]
    Encode {
        /// What serde said.
        reason: String,
    },
}

impl ModelError {
    /// The kind of failure, as a short name that carries no text the provider sent (for logs a
    /// client sees: an error body may echo the prompt).
    pub fn kind(&self) -> &'static str {
        match self {
            Self::NotConfigured => "not_configured",
            Self::InvalidUrl { .. } => "invalid_url",
            Self::InvalidSetting { .. } => "invalid_setting",
            Self::TlsUnavailable { .. } => "tls_unavailable",
            Self::NoModel => "no_model",
            Self::Unreachable { .. } => "unreachable",
            Self::TimedOut { .. } => "timed_out",
            Self::Status { .. } => "status",
            Self::Malformed { .. } => "malformed",
            Self::TornStream { .. } => "torn_stream",
            Self::Encode { .. } => "encode",
        }
    }
}
