//! Facts of the thinking family: the thought a `sequentialthinking` call appends to a session's
//! chain. The session lifecycle (`SessionStarted`, `SessionClosed`) and erasure are every
//! family's and stay in `events` itself.
//!
//! Pure data, like the rest of `events`: the thought's text is a [`TextRef`] (erasable).

use serde::{Deserialize, Serialize};

use super::{SessionId, TextRef};

/// The body of [`Fact::ThoughtRecorded`]: the reference server's thought fields plus tags.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ThoughtRecorded {
    pub session_id: SessionId,
    pub text: TextRef,
    pub thought_number: u32,
    pub total_thoughts: u32,
    pub next_thought_needed: bool,
    pub is_revision: bool,
    pub revises_thought: Option<u32>,
    pub branch_from_thought: Option<u32>,
    pub branch_id: Option<String>,
    pub needs_more_thoughts: bool,
    pub tags: Vec<String>,
}
