//! The one door for effects: everything a call takes from the world outside the log — the
//! clock, randomness, the environment — comes through [`Effects`], and only on the caller's
//! side, before the call reaches the ledger's writer (*prepare*). What a call took is put in
//! its [`Prepared`], which travels inside the command; the decision on the writer is then a
//! pure function of state, command and log (*decide*), so deciding the same commands again
//! with the same prepared effects gives the same events, byte for byte.
//!
//! Production uses [`SystemEffects`] (the system clock, the operating system's randomness,
//! the process environment); tests use [`FixedEffects`] (a fixed clock, seeded randomness, a
//! chosen environment, or randomness that fails). Re-execution builds a [`Prepared`] from the
//! recorded event instead (`app::replay`).
//!
//! Owns: the effect primitives (`Utc::now`, `getrandom`, `Uuid::new_v4`, `std::env::var`)
//! outside the operator's CLI and the ledger's own stamping of its metadata and checkpoints
//! (`tidy::effects_come_through_one_door` fails on any other use). Must not know: what a
//! decision does with a seed (salts and session ids are expanded from it in `app`), the
//! ledger, MCP.
//!
//! **Architecture Invariant:** a seed never leaves the process: it is not recorded, logged or
//! shown ([`Seed`]'s `Debug` hides it); only values expanded from it with BLAKE3 `derive_key`
//! (a salt stored beside its text, a session id in an event) are kept.

use std::fmt;
use std::sync::{Arc, Mutex, OnceLock};

use chrono::{DateTime, Utc};

use crate::embed::{Embedder, Embedding, StaticEmbedder};
use crate::events::SessionId;
use crate::model::{ChatOutcome, ModelClient, ModelError, ProviderConfig};

/// A call's 32 secret random bytes, from which its decision expands every draw it needs.
#[derive(Clone, PartialEq, Eq)]
pub struct Seed([u8; 32]);

impl Seed {
    pub fn new(bytes: [u8; 32]) -> Self {
        Self(bytes)
    }

    pub fn bytes(&self) -> &[u8; 32] {
        &self.0
    }
}

impl fmt::Debug for Seed {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("Seed(…)")
    }
}

/// The effects one call took before it was sent to the writer.
#[derive(Debug, Clone, PartialEq)]
pub struct Prepared {
    /// The clock when the call was prepared. The writer stamps the event with
    /// `max(at, the previous event's recordedAt)`, so recorded time never goes back in log
    /// order; that stamped time is the decision's "now".
    pub at: DateTime<Utc>,
    /// The call's seed, or why the random source failed (the call is then refused,
    /// `randomness_unavailable`, never decided with weaker randomness).
    pub seed: Result<Seed, String>,
    /// The vector of the call's text, for a tool that embeds one (its catalog entry says which
    /// argument): `None` when the call embeds nothing, an error when the embedder failed (the
    /// call is then refused, never decided without it).
    pub embedding: Option<Result<Embedding, String>>,
    /// What the call asked a model provider, for a tool whose decision plans model calls
    /// (`app::call::model`): every answer in the order the plan asked, or why the provider
    /// could not answer. Empty for every other call.
    pub model: ModelTaken,
    /// Why the caller is over its quota (`tools::quotas`), when it is: the call is then
    /// refused (`quota_exceeded`) with this text, never decided.
    pub over_quota: Option<OverQuota>,
}

/// A caller over its quota, as its refusal says it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct OverQuota {
    pub message: String,
    pub suggestion: String,
}

/// The model answers one call took in prepare.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct ModelTaken {
    /// Each chat answer, in the order the decision's plan asked for them.
    pub answers: Vec<ChatOutcome>,
    /// Why the next answer the plan asked for could not be had (the call is then refused,
    /// recorded, and changes nothing).
    pub failure: Option<ModelFailure>,
}

/// Why a model call could not be made or did not answer.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ModelFailure {
    /// No provider is configured (or its configuration cannot be used): model-backed tools are
    /// fail-closed. The message names the variables to set.
    NotConfigured(String),
    /// The provider was asked and failed (unreachable, timed out, an error status after the
    /// retries, an unreadable answer). The message says what happened, never a key.
    Failed(String),
    /// The caller cancelled the call while the provider was being asked; the request was
    /// aborted. The message says how far the call had got.
    Cancelled(String),
}

impl ModelFailure {
    /// The failure of a model call, as a call records it.
    pub fn of(error: &ModelError) -> Self {
        match error {
            ModelError::NotConfigured
            | ModelError::InvalidUrl { .. }
            | ModelError::InvalidSetting { .. }
            | ModelError::TlsUnavailable { .. }
            | ModelError::NoModel => Self::NotConfigured(error.to_string()),
            _ => Self::Failed(error.to_string()),
        }
    }

    /// What happened, for the caller.
    pub fn message(&self) -> &str {
        match self {
            Self::NotConfigured(m) | Self::Failed(m) | Self::Cancelled(m) => m,
        }
    }
}

/// Where a call's effects come from.
pub trait Effects: Send + Sync {
    /// The current time.
    fn now(&self) -> DateTime<Utc>;
    /// 32 fresh secret random bytes, or why there are none.
    fn seed(&self) -> Result<Seed, String>;
    /// Whether the environment variable `name` is set to something other than blanks. Only
    /// this leaves the door, never a value.
    fn env_is_set(&self, name: &str) -> bool;
    /// A fresh session id for a caller's slot (not a decision's: those come from the seed).
    fn session_id(&self) -> SessionId;

    /// The vector of `text` from the embedder in use ([`use_embedder`], else the built-in
    /// static model).
    fn embed(&self, text: &str) -> Result<Embedding, String> {
        embedder()?.embed_one(text).map_err(|e| e.to_string())
    }

    /// The model provider calls are sent to, or why there is none (fail-closed).
    fn model(&self) -> Result<Arc<ModelClient>, ModelFailure>;

    /// Takes every effect a call needs: *prepare*.
    fn prepare(&self) -> Prepared {
        Prepared {
            at: self.now(),
            seed: self.seed(),
            embedding: None,
            model: ModelTaken::default(),
            over_quota: None,
        }
    }

    /// Takes every effect a call needs, embedding `text` when there is one.
    fn prepare_embedding(&self, text: Option<&str>) -> Prepared {
        Prepared {
            embedding: text.map(|t| self.embed(t)),
            ..self.prepare()
        }
    }
}

/// The embedder every call of this process uses, once chosen.
static EMBEDDER: OnceLock<Result<Arc<dyn Embedder>, String>> = OnceLock::new();

/// Chooses the embedder of this process (the server's `--embedding-model`): to be called once,
/// before the first call is prepared. False when one was already in use.
pub fn use_embedder(embedder: Arc<dyn Embedder>) -> bool {
    EMBEDDER.set(Ok(embedder)).is_ok()
}

/// The embedder in use: the one chosen, else the built-in static model (loaded on first use).
pub fn embedder() -> Result<Arc<dyn Embedder>, String> {
    EMBEDDER
        .get_or_init(|| {
            StaticEmbedder::potion_base_2m()
                .map(|e| Arc::new(e) as Arc<dyn Embedder>)
                .map_err(|e| e.to_string())
        })
        .clone()
}

/// The model provider of this process, configured from the environment on first use.
static MODEL: OnceLock<Result<Arc<ModelClient>, ModelFailure>> = OnceLock::new();

/// The provider the environment configures (`THINKLEDGER_MODEL_PROVIDER_URL`,
/// `THINKLEDGER_MODEL_API_KEY`, `THINKLEDGER_MODEL`), built once: one connection pool per
/// process. Its retry jitter is seeded from the operating system's randomness.
fn system_model() -> Result<Arc<ModelClient>, ModelFailure> {
    MODEL
        .get_or_init(|| {
            let config = ProviderConfig::from_lookup(|name| std::env::var(name).ok())
                .map_err(|e| ModelFailure::of(&e))?;
            let jitter = SystemEffects
                .seed()
                .map(|s| {
                    let mut first = [0u8; 8];
                    first.copy_from_slice(&s.bytes()[..8]);
                    u64::from_le_bytes(first)
                })
                .unwrap_or_default();
            ModelClient::new(config, jitter)
                .map(Arc::new)
                .map_err(|e| ModelFailure::of(&e))
        })
        .clone()
}

/// The system: its clock, the operating system's randomness, the process environment.
#[derive(Debug, Clone, Copy, Default)]
pub struct SystemEffects;

impl Effects for SystemEffects {
    fn now(&self) -> DateTime<Utc> {
        Utc::now()
    }

    fn seed(&self) -> Result<Seed, String> {
        let mut bytes = [0u8; 32];
        getrandom::fill(&mut bytes)
            .map_err(|e| format!("the operating system gave no randomness: {e}"))?;
        Ok(Seed(bytes))
    }

    fn env_is_set(&self, name: &str) -> bool {
        set_and_not_blank(std::env::var(name).ok().as_deref())
    }

    fn session_id(&self) -> SessionId {
        SessionId::from_random_bytes(*uuid::Uuid::new_v4().as_bytes())
    }

    fn model(&self) -> Result<Arc<ModelClient>, ModelFailure> {
        system_model()
    }
}

/// Whether a variable's value counts as set: present and not only blanks.
fn set_and_not_blank(value: Option<&str>) -> bool {
    value.is_some_and(|v| !v.trim().is_empty())
}

impl SessionId {
    /// A fresh session id from the operating system: for the caller's side, the CLI and
    /// tests, never for a decision (`tidy::effects_come_through_one_door`).
    pub fn random() -> Self {
        SystemEffects.session_id()
    }
}

/// Effects for tests: a fixed clock, seeded randomness (the n-th seed is the base seed with n
/// mixed into its last 8 bytes, so every call gets its own), the variables named as set, and
/// optionally a random source that fails.
#[derive(Debug)]
pub struct FixedEffects {
    at: DateTime<Utc>,
    base: Option<[u8; 32]>,
    set: Vec<String>,
    drawn: Mutex<u64>,
    /// The model provider given to the test; none: not configured.
    model: Option<Arc<ModelClient>>,
}

impl FixedEffects {
    /// A clock stopped at `at` and seeds expanded from `base`.
    pub fn new(at: DateTime<Utc>, base: [u8; 32]) -> Self {
        Self {
            at,
            base: Some(base),
            set: Vec::new(),
            drawn: Mutex::new(0),
            model: None,
        }
    }

    /// A clock stopped at `at` and a random source that always fails.
    pub fn without_randomness(at: DateTime<Utc>) -> Self {
        Self {
            at,
            base: None,
            set: Vec::new(),
            drawn: Mutex::new(0),
            model: None,
        }
    }

    /// The same, with the environment variables `names` set.
    #[must_use]
    pub fn with_env(mut self, names: &[&str]) -> Self {
        self.set = names.iter().map(|n| (*n).to_owned()).collect();
        self
    }

    /// The same, with calls sent to `model`.
    #[must_use]
    pub fn with_model(mut self, model: Arc<ModelClient>) -> Self {
        self.model = Some(model);
        self
    }

    fn draw(&self) -> Option<[u8; 32]> {
        let mut base = self.base?;
        let mut drawn = self.drawn.lock().unwrap_or_else(|e| e.into_inner());
        *drawn += 1;
        let mut tail = [0u8; 8];
        tail.copy_from_slice(&base[24..]);
        let mixed = u64::from_le_bytes(tail) ^ *drawn;
        base[24..].copy_from_slice(&mixed.to_le_bytes());
        Some(base)
    }
}

impl Effects for FixedEffects {
    fn now(&self) -> DateTime<Utc> {
        self.at
    }

    fn seed(&self) -> Result<Seed, String> {
        self.draw()
            .map(Seed)
            .ok_or_else(|| "the test's random source is set to fail".to_owned())
    }

    fn env_is_set(&self, name: &str) -> bool {
        self.set.iter().any(|n| n == name)
    }

    fn session_id(&self) -> SessionId {
        let bytes = self.draw().unwrap_or([0x5a; 32]);
        let mut id = [0u8; 16];
        id.copy_from_slice(&bytes[..16]);
        SessionId::from_random_bytes(id)
    }

    fn model(&self) -> Result<Arc<ModelClient>, ModelFailure> {
        self.model
            .clone()
            .ok_or_else(|| ModelFailure::of(&ModelError::NotConfigured))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fixed_effects_repeat_from_the_start_and_differ_per_call() {
        let at = Utc::now();
        let (a, b) = (
            FixedEffects::new(at, [1; 32]),
            FixedEffects::new(at, [1; 32]),
        );
        let (a1, a2) = (a.prepare(), a.prepare());
        assert_eq!(a1, b.prepare());
        assert_eq!(a2, b.prepare());
        assert_ne!(a1.seed, a2.seed);
        assert_eq!(a1.at, at);
    }

    #[test]
    fn a_failing_source_says_so_and_a_seed_never_shows() {
        let failing = FixedEffects::without_randomness(Utc::now());
        assert!(failing.prepare().seed.is_err());
        let shown = format!("{:?}", FixedEffects::new(Utc::now(), [7; 32]).prepare());
        assert!(
            shown.contains("Seed(…)") && !shown.contains("7, 7"),
            "{shown}"
        );
    }

    #[test]
    fn a_blank_variable_is_not_set() {
        assert!(set_and_not_blank(Some("https://x.example")));
        assert!(!set_and_not_blank(Some("  ")));
        assert!(!set_and_not_blank(None));
    }

    #[test]
    fn the_system_gives_distinct_seeds_and_session_ids() {
        assert_ne!(SystemEffects.seed(), SystemEffects.seed());
        assert_ne!(SessionId::random(), SessionId::random());
    }
}
