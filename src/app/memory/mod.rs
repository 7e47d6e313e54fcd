//! The memory family: ThoughtMCP's five memory tools (`store_memory`, `retrieve_memories`,
//! `update_memory`, `delete_memory`, `search_memories`) with the seed's parameters, its response
//! envelope (`success`, `data`, `metadata`) and its error texts. Facts are `events::memory`;
//! their fold, and the index derived from it, `projections::memory`.
//!
//! Every call is decided from state at the ledger's decision time, with the vector its caller
//! took as an effect (the catalog entry names the argument it embeds). `userId` scopes every
//! read and write: a memory of another owner is "Memory not found", never shown, changed or
//! deleted ([`owned`] is the one check).
//!
//! Owns: the memory tools' arguments, answers and rules ([`rules`]). Must not know any other
//! family.

mod change;
pub mod history;
#[cfg(test)]
mod query_tests;
mod retrieve;
pub(crate) mod rules;
mod store;
#[cfg(test)]
pub(crate) mod tests;

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value, json};

use super::call::{ArgsShape, Call, Decide, Refusal, ToolSpec, access};
use super::{ErrorCode, Rejection, lenient};
use crate::embed::Embedding;
use crate::projections::memory::Memory;

pub(crate) use store::precompute;

/// The name of the `store_memory` tool: its spec, its catalog entry and every reference use this.
pub const STORE_MEMORY_TOOL: &str = "store_memory";
/// The name of the `retrieve_memories` tool: its spec, its catalog entry and every reference use this.
pub const RETRIEVE_MEMORIES_TOOL: &str = "retrieve_memories";
/// The name of the `update_memory` tool: its spec, its catalog entry and every reference use this.
pub const UPDATE_MEMORY_TOOL: &str = "update_memory";
/// The name of the `delete_memory` tool: its spec, its catalog entry and every reference use this.
pub const DELETE_MEMORY_TOOL: &str = "delete_memory";
/// The name of the `search_memories` tool: its spec, its catalog entry and every reference use this.
pub const SEARCH_MEMORIES_TOOL: &str = "search_memories";

/// The tools of the memory toolset.
pub(crate) const SPECS: &[ToolSpec] = &[
    ToolSpec {
        name: STORE_MEMORY_TOOL,
        args: ArgsShape::of::<StoreMemoryArgs>,
        decide: Decide::InContext(store::decide_store),
    },
    ToolSpec {
        name: RETRIEVE_MEMORIES_TOOL,
        args: ArgsShape::of::<QueryArgs>,
        decide: Decide::InContext(retrieve::decide_retrieve),
    },
    ToolSpec {
        name: UPDATE_MEMORY_TOOL,
        args: ArgsShape::of::<UpdateMemoryArgs>,
        decide: Decide::InContext(change::decide_update),
    },
    ToolSpec {
        name: DELETE_MEMORY_TOOL,
        args: ArgsShape::of::<DeleteMemoryArgs>,
        decide: Decide::InContext(change::decide_delete),
    },
    ToolSpec {
        name: SEARCH_MEMORIES_TOOL,
        args: ArgsShape::of::<QueryArgs>,
        decide: Decide::InContext(retrieve::decide_search),
    },
];

/// Metadata given with a memory.
#[derive(Debug, Clone, Default, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct MetadataArgs {
    /// Keywords for search (extracted from the content when none are given).
    #[serde(default)]
    #[schemars(extend("x-text" = true))]
    pub keywords: Option<Vec<String>>,
    /// Tags for categorization.
    #[serde(default)]
    #[schemars(extend("x-text" = true))]
    pub tags: Option<Vec<String>>,
    /// Category for grouping.
    #[serde(default)]
    #[schemars(extend("x-text" = true))]
    pub category: Option<String>,
    /// Additional context.
    #[serde(default)]
    #[schemars(extend("x-text" = true))]
    pub context: Option<String>,
    /// Importance 0–1 (default 0.5); the memory's salience.
    #[serde(default)]
    #[schemars(range(min = 0.0, max = 1.0))]
    pub importance: Option<f64>,
}

/// Arguments of `store_memory` (the seed's).
#[derive(Debug, Clone, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct StoreMemoryArgs {
    /// Memory content (non-empty).
    #[schemars(extend("x-text" = true))]
    pub content: String,
    /// Owner: memories are isolated per userId.
    pub user_id: String,
    /// Session id for context tracking.
    pub session_id: String,
    /// episodic, semantic, procedural, emotional or reflective.
    #[schemars(with = "Sector")]
    pub primary_sector: String,
    #[serde(default)]
    pub metadata: Option<MetadataArgs>,
}

/// A memory sector.
#[derive(Debug, Clone, Copy, Deserialize, Serialize, JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum Sector {
    Episodic,
    Semantic,
    Procedural,
    Emotional,
    Reflective,
}

/// A creation-time range (ISO 8601).
#[derive(Debug, Clone, Deserialize, JsonSchema)]
pub struct DateRange {
    #[serde(default)]
    pub start: Option<String>,
    #[serde(default)]
    pub end: Option<String>,
}

/// Metadata filters of a query.
#[derive(Debug, Clone, Default, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct MetadataFilter {
    /// Any of these keywords.
    #[serde(default)]
    #[schemars(extend("x-text" = true))]
    pub keywords: Option<Vec<String>>,
    /// Any of these tags.
    #[serde(default)]
    #[schemars(extend("x-text" = true))]
    pub tags: Option<Vec<String>>,
    /// This category.
    #[serde(default)]
    #[schemars(extend("x-text" = true))]
    pub category: Option<String>,
}

/// Arguments of `retrieve_memories` and `search_memories` (the seed's).
#[derive(Debug, Clone, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct QueryArgs {
    /// Owner whose memories are searched.
    pub user_id: String,
    /// Query text. search_memories: AND, OR, NOT, "phrases".
    #[serde(default)]
    #[schemars(extend("x-text" = true))]
    pub text: Option<String>,
    /// Sectors to search (default all).
    #[serde(default)]
    #[schemars(with = "Option<Vec<Sector>>")]
    pub sectors: Option<Vec<String>>,
    /// Only this primary sector.
    #[serde(default)]
    #[schemars(with = "Option<Sector>")]
    pub primary_sector: Option<String>,
    /// Minimum current strength 0–1 (soft-deleted memories only with 0).
    #[serde(default)]
    #[schemars(range(min = 0.0, max = 1.0))]
    pub min_strength: Option<f64>,
    /// Minimum salience 0–1.
    #[serde(default)]
    #[schemars(range(min = 0.0, max = 1.0))]
    pub min_salience: Option<f64>,
    /// Creation date range.
    #[serde(default)]
    pub date_range: Option<DateRange>,
    #[serde(default)]
    pub metadata: Option<MetadataFilter>,
    /// 1–100, default 10.
    #[serde(default, deserialize_with = "lenient::u32_optional")]
    #[schemars(with = "Option<u32>", range(min = 1, max = 100))]
    pub limit: Option<u32>,
    /// Default 0.
    #[serde(default, deserialize_with = "lenient::u32_optional")]
    #[schemars(with = "Option<u32>")]
    pub offset: Option<u32>,
}

/// Arguments of `update_memory` (the seed's).
#[derive(Debug, Clone, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct UpdateMemoryArgs {
    pub memory_id: String,
    /// Owner of the memory.
    pub user_id: String,
    /// New content (re-embedded, waypoints remade).
    #[serde(default)]
    #[schemars(extend("x-text" = true))]
    pub content: Option<String>,
    /// New strength 0–1 (above 0 restores a soft-deleted memory).
    #[serde(default)]
    #[schemars(range(min = 0.0, max = 1.0))]
    pub strength: Option<f64>,
    /// New salience 0–1.
    #[serde(default)]
    #[schemars(range(min = 0.0, max = 1.0))]
    pub salience: Option<f64>,
    /// Metadata fields to replace.
    #[serde(default)]
    pub metadata: Option<MetadataArgs>,
}

/// Arguments of `delete_memory` (the seed's).
#[derive(Debug, Clone, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct DeleteMemoryArgs {
    pub memory_id: String,
    /// Owner of the memory.
    pub user_id: String,
    /// true: strength 0, recoverable. false (default): erased with every derived copy.
    #[serde(default, deserialize_with = "lenient::bool_optional")]
    #[schemars(with = "Option<bool>")]
    pub soft: Option<bool>,
}

/// The seed's response metadata.
#[derive(Debug, Clone, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ResponseMetadata {
    /// The decision time (ISO 8601).
    pub timestamp: String,
    /// Milliseconds the server spent on the call (a measurement, outside the response digest).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub processing_time: Option<u64>,
    pub components_used: Vec<String>,
}

/// The seed's envelope around a tool's `data`.
#[derive(Debug, Clone, Serialize, JsonSchema)]
pub struct Envelope<T> {
    pub success: bool,
    pub data: T,
    pub metadata: ResponseMetadata,
}

/// `store_memory`'s data.
#[derive(Debug, Clone, Serialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct StoreMemoryData {
    pub memory_id: String,
    /// Vectors made (one per memory).
    pub embeddings_generated: u32,
    pub links_created: u32,
    pub salience: f64,
    pub strength: f64,
}

/// A memory as a retrieval returns it.
#[derive(Debug, Clone, Serialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct RetrievedMemory {
    pub id: String,
    pub content: String,
    pub created_at: String,
    pub last_accessed: String,
    pub strength: f64,
    pub salience: f64,
    pub primary_sector: String,
    pub metadata: Value,
    pub score: f64,
}

/// `retrieve_memories`' data.
#[derive(Debug, Clone, Serialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct RetrieveMemoriesData {
    pub memories: Vec<RetrievedMemory>,
    pub total_count: u64,
    /// Memory id → score.
    pub scores: Map<String, Value>,
}

/// A memory as a search returns it.
#[derive(Debug, Clone, Serialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct FoundMemory {
    pub id: String,
    pub content: String,
    pub created_at: String,
    pub strength: f64,
    pub salience: f64,
    pub primary_sector: String,
    /// BM25 relative to the best match (1 for the best).
    pub rank: f64,
    /// The best fragment, matches in `<b>…</b>`.
    pub highlight: String,
    /// Query terms found (as indexed: lower-cased, stemmed).
    pub matched_terms: Vec<String>,
}

/// `search_memories`' data.
#[derive(Debug, Clone, Serialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct SearchMemoriesData {
    pub memories: Vec<FoundMemory>,
    pub total_count: u64,
    /// `full-text` (with text) or `metadata` (filters only).
    pub search_type: String,
}

/// `update_memory`'s data.
#[derive(Debug, Clone, Serialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct UpdateMemoryData {
    pub memory_id: String,
    pub embeddings_regenerated: bool,
    pub connections_updated: u32,
    pub strength: f64,
    pub salience: f64,
}

/// `delete_memory`'s data.
#[derive(Debug, Clone, Serialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct DeleteMemoryData {
    pub memory_id: String,
    /// `soft` or `hard`.
    pub deletion_type: String,
    pub message: String,
}

/// The response schemas, for the catalog.
pub type StoreMemoryOutput = Envelope<StoreMemoryData>;
pub type RetrieveMemoriesOutput = Envelope<RetrieveMemoriesData>;
pub type UpdateMemoryOutput = Envelope<UpdateMemoryData>;
pub type DeleteMemoryOutput = Envelope<DeleteMemoryData>;
pub type SearchMemoriesOutput = Envelope<SearchMemoriesData>;

/// The seed's suggestion for bad memory input.
const FIELDS_SUGGESTION: &str = "Check that all required fields are provided and content is \
                                 non-empty. Ensure primarySector is one of: episodic, semantic, \
                                 procedural, emotional, reflective";

/// A refusal in the seed's shape: `success: false`, its `error` text, a suggestion.
pub(super) fn fail(code: ErrorCode, error: impl Into<String>, suggestion: &str) -> Refusal {
    let mut details = Map::new();
    details.insert("success".into(), json!(false));
    (
        Rejection::new(code, error, suggestion).with_details(details),
        None,
    )
}

/// Parses a memory tool's arguments: a missing field is the seed's "Missing required
/// parameter".
pub(super) fn parse<T: serde::de::DeserializeOwned>(call: &Call<'_>) -> Result<T, Refusal> {
    serde_json::from_value(call.args.clone()).map_err(|e| {
        let message = e.to_string();
        match message
            .strip_prefix("missing field `")
            .and_then(|rest| rest.split('`').next())
        {
            Some(field) => fail(
                ErrorCode::MissingParameter,
                format!("Missing required parameter: {field}"),
                FIELDS_SUGGESTION,
            ),
            None => fail(
                ErrorCode::InvalidArguments,
                format!("Invalid arguments: {message}"),
                FIELDS_SUGGESTION,
            ),
        }
    })
}

/// A non-empty `userId`.
pub(super) fn user_id(raw: &str) -> Result<&str, Refusal> {
    let trimmed = raw.trim();
    if trimmed.is_empty() {
        return Err(fail(
            ErrorCode::MissingParameter,
            "Missing required parameter: userId",
            "pass the userId whose memories this call concerns",
        ));
    }
    Ok(raw)
}

/// A `userId` the caller acts for, for a call that stores under it.
pub(super) fn own_user_id<'a>(call: &Call<'_>, raw: &'a str) -> Result<&'a str, Refusal> {
    let user = user_id(raw)?;
    if access::acts_for(&call.command.actor, user) {
        return Ok(user);
    }
    Err(fail(
        ErrorCode::UserIdNotYours,
        format!(
            "{} may not store memories for another userId",
            call.command.actor.principal
        ),
        "pass your own principal name as userId, or ask the server's operator for a token \
         that grants this userId (thinkledger token create --user-id)",
    ))
}

/// A known sector.
pub(super) fn sector(raw: &str) -> Result<String, Refusal> {
    if rules::SECTORS.contains(&raw) {
        Ok(raw.to_owned())
    } else {
        Err(fail(
            ErrorCode::InvalidSector,
            "Invalid sector",
            "Use: episodic, semantic, procedural, emotional, reflective",
        ))
    }
}

/// A number in [0, 1].
pub(super) fn unit(name: &str, value: Option<f64>) -> Result<Option<f64>, Refusal> {
    match value {
        Some(v) if !(0.0..=1.0).contains(&v) || v.is_nan() => Err(fail(
            ErrorCode::InvalidArguments,
            format!("{name} must be between 0 and 1"),
            &format!("pass {name} as a number from 0 to 1"),
        )),
        other => Ok(other),
    }
}

/// The memory `id` of `user`: the one ownership check. Another owner's memory, an erased one
/// and one that never existed are all "Memory not found".
pub(super) fn owned<'a>(call: &Call<'a>, user: &str, id: &str) -> Result<&'a Memory, Refusal> {
    call.app
        .memories()
        .memory(user, id)
        .filter(|_| access::acts_for(&call.command.actor, user))
        .map(AsRef::as_ref)
        .ok_or_else(|| {
            fail(
                ErrorCode::MemoryNotFound,
                "Memory not found",
                "Verify memoryId exists and belongs to user",
            )
        })
}

/// The vector the caller took for this call's text (the effect its catalog entry declares).
pub(super) fn prepared_embedding<'a>(call: &Call<'a>) -> Result<&'a Embedding, Refusal> {
    match &call.command.prepared.embedding {
        Some(Ok(e)) => Ok(e),
        Some(Err(reason)) => Err(fail(
            ErrorCode::EmbeddingUnavailable,
            format!("the text could not be embedded: {reason}"),
            "retry; if this persists, check the embedding model the server was started with \
             (--embedding-model)",
        )),
        None => Err(fail(
            ErrorCode::EmbeddingUnavailable,
            "the text was not embedded before the call was decided",
            "this call must come through the MCP server, which embeds its text first",
        )),
    }
}

/// Keywords or tags as a memory's metadata holds them.
pub(super) fn texts(words: Vec<String>) -> Vec<std::sync::Arc<str>> {
    words.into_iter().map(std::sync::Arc::from).collect()
}

/// The metadata JSON a memory shows (its stored metadata).
pub(super) fn metadata_value(memory: &Memory) -> Value {
    serde_json::to_value(&memory.metadata).unwrap_or(Value::Null)
}

impl super::App {
    /// What the operator's `erase --user-id` removes for `user`: every memory stored for that
    /// user id (soft-deleted ones included), as one `MemoryErased` fact each, and the
    /// commitments of every text of every version. `None` when none is stored.
    pub(crate) fn user_memories_erasure(
        &self,
        user: &str,
    ) -> Option<(Vec<String>, Vec<crate::events::Fact>)> {
        let owner = self.memories().owner(user)?;
        let mut commitments = Vec::new();
        let mut facts = Vec::new();
        for memory in owner.memories.values() {
            commitments.extend(memory.commitments.to_strings());
            facts.push(crate::events::Fact::MemoryErased(
                crate::events::memory::MemoryErased {
                    user_id: user.to_owned(),
                    memory_id: memory.id.to_string(),
                    versions: memory.version,
                },
            ));
        }
        (!facts.is_empty()).then_some((commitments, facts))
    }
}
