//! Facts of long-term memory (ThoughtMCP's memory tools): memories stored, superseded by an
//! update, retrieved (and so reinforced), soft-deleted and erased.
//!
//! Pure data, like the rest of `events`. A memory's content and metadata are [`TextRef`]s
//! (erasable); ids, owners, sectors and numbers are inline. A memory is never overwritten: an
//! update supersedes its current version, which stays in the log with its validity interval.
//! The vector a memory was embedded as is not here: it is an effect of the call that stored it
//! (`Call::effects`), recorded with the model that made it.

use serde::{Deserialize, Serialize};

use super::TextRef;

/// A waypoint: a link from one memory to a similar one of the same owner, made when the
/// memory was stored (or its content changed).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct WaypointLink {
    /// The linked memory.
    pub memory_id: String,
    /// The cosine of the two memories' vectors when the link was made, in (0, 1].
    pub weight: f64,
}

/// The vector a memory's content was embedded as: which model, how many dimensions (the
/// vector itself is the call's recorded effect).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct EmbeddingUsed {
    pub model: String,
    pub dimension: u32,
}

/// A new memory.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct MemoryStored {
    /// The owner (`userId`): only calls naming this owner see, change or delete the memory.
    pub user_id: String,
    /// `mem-` and 16 hex digits, derived from the owner and the number of memories the owner
    /// had stored before (so a re-execution derives it again).
    pub memory_id: String,
    /// The caller's `sessionId` (context tracking), as sent.
    pub context_session_id: String,
    pub primary_sector: String,
    /// Every sector the memory belongs to: its primary sector first, then those the content's
    /// wording names (rules, no model).
    pub sectors: Vec<String>,
    /// The content: the commitment the call's recorded `content` argument holds.
    pub content: TextRef,
    /// The metadata as stored (canonical JSON of `{keywords, tags, category?, context?,
    /// importance}`), keywords extracted when the caller gave none.
    pub metadata: TextRef,
    /// True when the keywords were extracted from the content rather than given.
    pub keywords_extracted: bool,
    pub salience: f64,
    pub strength: f64,
    /// The waypoints made to existing memories, strongest first.
    pub links: Vec<WaypointLink>,
    /// The model the content was embedded with.
    pub embedding: EmbeddingUsed,
}

/// A memory's current version was superseded by an update: the old version stays in the log,
/// valid from its own `validFrom` until this event's time.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct MemorySuperseded {
    pub user_id: String,
    pub memory_id: String,
    /// The new version's number (the stored memory is version 1).
    pub version: u32,
    /// The superseded version's validity interval: from its `validFrom` to this event's time.
    pub superseded_valid_from: String,
    /// The new content, when it changed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub content: Option<TextRef>,
    /// The new metadata (whole), when it changed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub metadata: Option<TextRef>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub keywords_extracted: Option<bool>,
    /// The new sectors, when the content changed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub sectors: Option<Vec<String>>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub strength: Option<f64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub salience: Option<f64>,
    /// The waypoints made anew, when the content changed (they replace the memory's own).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub links: Option<Vec<WaypointLink>>,
    /// The model the new content was embedded with, when it changed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub embedding: Option<EmbeddingUsed>,
}

/// One memory a retrieval or search returned, and its strength after reinforcement.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct MemoryAccess {
    pub memory_id: String,
    /// Its score (composite for a retrieval, rank for a search).
    pub score: f64,
    /// Its strength at this event's time after the access reinforced it.
    pub strength: f64,
}

/// A retrieval or search returned memories: each returned memory was accessed, and the access
/// reinforced it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct MemoriesRetrieved {
    pub user_id: String,
    /// `retrieve_memories` or `search_memories`.
    pub via: String,
    /// How similarity was computed: e.g. `hybrid: 0.5 bm25/best + 0.5 max(cosine, 0)`, with
    /// the composite weights and the embedding model (for a retrieval with text).
    pub method: String,
    /// The page returned, in order.
    pub memories: Vec<MemoryAccess>,
    /// How many memories matched in all (before the page was cut).
    pub total_count: u64,
}

/// A memory was soft-deleted: strength 0, hidden from default retrieval, recoverable.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct MemorySoftDeleted {
    pub user_id: String,
    pub memory_id: String,
}

/// A memory was hard-deleted: every text of every version (content, metadata, vectors) is
/// erased by the same event's `TextsErased` fact, and its derived copies are removed.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct MemoryErased {
    pub user_id: String,
    pub memory_id: String,
    /// How many versions it had.
    pub versions: u32,
}
