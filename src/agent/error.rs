//! `ReasoningError`: why the engine could not go on. Expected endings of a run (a failed tool,
//! the iteration bound, the breaker) are not errors: they are the run's status.

use std::time::Duration;

/// Why a step could not be taken. Each variant says what failed; none carries a secret.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum ReasoningError {
    /// The conversation the run was given cannot start a run.
    #[error("the run cannot start: {0}")]
    InvalidInput(String),
    /// The model could not be asked or did not answer.
    #[error("the model call failed: {0}")]
    Llm(String),
    /// A tool could not be reached (not its own refusal, which is a failed outcome).
    #[error("tool {tool} could not be run: {message}")]
    Tool { tool: String, message: String },
    /// Something took longer than it may.
    #[error("{what} took longer than {after:?}")]
    Timeout { what: String, after: Duration },
    /// The intent of an answer could not be read.
    #[error("the answer's intent could not be read: {0}")]
    Intent(String),
    /// A step could not be recorded: the run stops rather than go on unrecorded.
    #[error("a step of the run could not be recorded: {0}")]
    Record(String),
    /// The run's state could not be saved or loaded.
    #[error("the run's state could not be kept: {0}")]
    Persistence(String),
}
