//! The call machinery every tool family shares: how a tool is described to the dispatcher
//! ([`ToolSpec`], [`Decide`]), typed argument parsing, the session a call acts on
//! ([`session`]) and the per-call context of tools decided at the ledger's decision time
//! ([`context`]).
//!
//! Owns no tool. Must not know any family (thinking, maxential, deliberation, replay, audit
//! export, erase): families import this module, never each other.

pub mod access;
pub mod args;
pub mod context;
pub mod model;
pub mod session;
pub mod watch;

use serde::de::DeserializeOwned;
use serde_json::Value;

use super::{App, Command, Outcome, Rejection};
use crate::app::ErrorCode;
use crate::events::SessionId;
use crate::ledger::LogView;

pub use args::ArgsShape;
pub use context::{Call, PathStep};
pub(crate) use session::{
    Target, owned_session, read_target, readable_session, reader_session, target,
};
pub use watch::{CallWatch, Watch};

/// Work done for a command before it reaches the writer, on a published state, which its
/// decision checks instead of redoing (*precompute*, [`App::precompute`]). Never recorded and
/// never trusted: a decision given none, or one that no longer holds, does the work itself
/// and reaches the same answer, so re-execution (which has none) gives the same events.
#[derive(Debug, Clone, Default)]
pub struct Precomputed {
    /// The nearest stored vectors to the call's embedding, as the memory index had them
    /// (`index::memory::NearestHint`).
    pub nearest: Option<crate::index::memory::NearestHint>,
}

/// A refusal, attributed to the session it concerns (if that session exists).
pub type Refusal = (Rejection, Option<SessionId>);

/// How the application handles one tool.
pub struct ToolSpec {
    pub name: &'static str,
    /// The shape of its argument type (`ArgsShape::of::<T>`): the fields an event records
    /// and their free texts (committed, stored beside the event, erasable). Derived once per
    /// tool ([`crate::app::registry`] keeps them).
    pub args: fn() -> ArgsShape,
    /// Decides the call from its arguments as sent and as recorded (the recorded form carries
    /// the commitments of its text fields).
    pub decide: Decide,
}

/// How a tool is decided: from application state alone, or also reading the log itself
/// (stored events, texts, proofs, checkpoints), read-only.
#[derive(Clone, Copy)]
pub enum Decide {
    Pure(fn(&App, &Command, &Value, &Value) -> Outcome),
    WithLog(fn(&App, &Command, &dyn LogView, &Value, &Value) -> Outcome),
    /// Decided from state at the ledger's decision time, which the call context carries with
    /// the texts the decision derives; never reads the log, and is held to the tool time limit
    /// (the deliberation tools).
    InContext(fn(&mut Call<'_>) -> Outcome),
    /// Decided like `InContext`, with the model answers its caller took in prepare as the
    /// tool's [`model::Plan`] asked for them, found current by [`model::check`] first (the
    /// model-backed tools). Not held to the tool time limit: the slow part, the model, ran
    /// before the decision.
    WithModel(model::ModelTool),
}

/// Parses typed arguments; a failure names the problem and the expected shape.
pub(crate) fn parse<T: DeserializeOwned>(args: &Value, usage: &str) -> Result<T, Rejection> {
    serde_json::from_value(args.clone()).map_err(|e| {
        Rejection::new(
            ErrorCode::InvalidArguments,
            format!("invalid arguments: {e}"),
            usage.to_owned(),
        )
    })
}
