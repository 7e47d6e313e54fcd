//! Projections: state rebuilt from the log by folds.
//!
//! Two folds are not yet pure (docs/ARCHITECTURE.md names them): `memory` keeps its full-text
//! index on disk and times itself inside the fold, and `thinking` reads session bodies back
//! from the log into a cache.
//!
//! `apply(state, event)` is the only way state changes, it cannot fail, and it holds no business
//! rules (those are decided in `app` before an event exists). Projections know nothing of
//! storage, hashing or MCP; the writer feeds them events, at start-up from the whole log and then
//! one committed event at a time.

pub mod agent;
pub mod cognition;
pub mod deliberation;
pub mod lux;
pub mod memory;
pub mod telemetry;
pub mod thinking;

pub use agent::AgentState;
pub use cognition::CognitionState;
pub use deliberation::{Deliberation, DeliberationState};
pub use lux::LuxState;
pub use memory::MemoryState;
pub use telemetry::Telemetry;
pub use thinking::{
    BODY_CACHE_BYTES, Branch, LoadError, Session, SessionBodies, SessionHead, SessionStatus,
    ThinkingState, Thought, thought_bytes,
};
