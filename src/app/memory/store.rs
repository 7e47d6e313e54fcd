//! `store_memory`: a new memory, its keywords (extracted when none are given), its sectors, and
//! 1–3 waypoints to the owner's most similar memories.

use super::rules;
use super::{
    StoreMemoryArgs, StoreMemoryData, fail, own_user_id, parse, prepared_embedding, sector, texts,
    unit,
};
use crate::app::ErrorCode;
use crate::app::Outcome;
use crate::app::call::{Call, PathStep, Refusal};
use crate::embed::Embedding;
use crate::events::Fact;
use crate::events::memory::{EmbeddingUsed, MemoryStored, WaypointLink};
use crate::projections::memory::MemoryMetadata;

/// Default importance (the seed's), which is also the salience of a memory stored without one.
pub(super) const DEFAULT_IMPORTANCE: f64 = 0.5;

pub(super) fn decide_store(call: &mut Call<'_>) -> Outcome {
    let args: StoreMemoryArgs = parse(call)?;
    let user = own_user_id(call, &args.user_id)?.to_owned();
    if args.content.trim().is_empty() {
        return Err(fail(
            ErrorCode::EmptyContent,
            "Content cannot be empty",
            "Provide non-empty content",
        ));
    }
    let primary = sector(&args.primary_sector)?;
    let given = args.metadata.unwrap_or_default();
    let importance = unit("metadata.importance", given.importance)?.unwrap_or(DEFAULT_IMPORTANCE);
    let embedding = prepared_embedding(call)?;

    let keywords_extracted = given.keywords.as_ref().is_none_or(Vec::is_empty);
    let metadata = MemoryMetadata {
        keywords: texts(if keywords_extracted {
            rules::extract_keywords(&args.content)
        } else {
            given.keywords.clone().unwrap_or_default()
        }),
        tags: texts(given.tags.clone().unwrap_or_default()),
        category: given.category.clone(),
        context: given.context.clone(),
        importance,
    };
    let links = waypoints(call, &user, None, embedding)?;
    let ordinal = call.app.memories().owner(&user).map_or(0, |o| o.stored);
    let memory_id = rules::memory_id(&user, ordinal);
    let content = call
        .recorded_ref(&[PathStep::Key("content")])
        .ok_or_else(|| internal("the content was not recorded as a text"))?;
    let metadata_ref = call.derive_text(&metadata_json(&metadata));
    let fact = MemoryStored {
        user_id: user,
        memory_id: memory_id.clone(),
        context_session_id: args.session_id,
        primary_sector: primary.clone(),
        sectors: rules::classify(&primary, &args.content),
        content,
        metadata: metadata_ref,
        keywords_extracted,
        salience: importance,
        strength: 1.0,
        links: links.clone(),
        embedding: embedding_used(embedding),
    };
    let data = StoreMemoryData {
        memory_id,
        embeddings_generated: 1,
        links_created: u32::try_from(links.len()).unwrap_or(u32::MAX),
        salience: importance,
        strength: 1.0,
    };
    let body = call.seed_envelope(
        data,
        &["memoryRepository", "embeddingEngine", "graphBuilder"],
    );
    // Recorded in the session its `sessionId` names when that is a session of the caller's
    // (a `sessionId` a thinking tool answered with), else in the caller's current session;
    // any other `sessionId` is the memory's own conversation tag (ThoughtMCP's episodes).
    match crate::events::SessionId::parse(&fact.context_session_id)
        .filter(|id| crate::app::call::owned_session(call.app, call.command, id).is_some())
    {
        Some(named) => call.done(Some(named), vec![Fact::MemoryStored(fact)], body),
        None => call.done_in_current_session(vec![Fact::MemoryStored(fact)], body),
    }
}

/// The model and dimension of a vector, as facts record them.
pub(super) fn embedding_used(embedding: &Embedding) -> EmbeddingUsed {
    EmbeddingUsed {
        model: embedding.model().to_owned(),
        dimension: u32::try_from(embedding.dimension()).unwrap_or(u32::MAX),
    }
}

/// The canonical JSON a memory's metadata is stored as.
pub(super) fn metadata_json(metadata: &MemoryMetadata) -> String {
    let value = serde_json::to_value(metadata).unwrap_or_default();
    crate::ledger::canonical::canonical_bytes(&value)
        .ok()
        .and_then(|b| String::from_utf8(b).ok())
        .unwrap_or_else(|| value.to_string())
}

/// How many nearest memories a waypoint search asks for: one more than it links, so that the
/// memory an update replaces can be left out.
const WAYPOINT_CANDIDATES: usize = rules::MAX_LINKS + 1;

/// *Precompute* for a call that makes waypoints (`store_memory`, `update_memory` with new
/// content): the owner's nearest memories to its embedding, found on a published state off the
/// writer, for [`waypoints`] to check against the memories stored since instead of scanning
/// every one on the writer. Does nothing when the index is not built yet or the call is
/// malformed (its decision refuses it, or scans itself).
pub(crate) fn precompute(view: &crate::app::App, command: &mut crate::app::Command) {
    let makes_waypoints = match command.tool.as_str() {
        super::STORE_MEMORY_TOOL => true,
        super::UPDATE_MEMORY_TOOL => command.arguments.get("content").is_some(),
        _ => false,
    };
    let (true, Some(Ok(embedding)), Some(user)) = (
        makes_waypoints,
        &command.prepared.embedding,
        command
            .arguments
            .get("userId")
            .and_then(serde_json::Value::as_str),
    ) else {
        return;
    };
    command.precomputed.nearest =
        view.memory_index()
            .nearest_hint(user, embedding, WAYPOINT_CANDIDATES);
}

/// Up to [`rules::MAX_LINKS`] waypoints to the owner's live memories (not `except`) nearest
/// `embedding`, each with a cosine of at least [`rules::MIN_LINK_COSINE`].
pub(super) fn waypoints(
    call: &Call<'_>,
    user: &str,
    except: Option<&str>,
    embedding: &Embedding,
) -> Result<Vec<WaypointLink>, Refusal> {
    let memories = call.app.memories();
    let Some(owner) = memories.owner(user) else {
        return Ok(Vec::new());
    };
    if owner.memories.is_empty() {
        return Ok(Vec::new());
    }
    if let Some(any) = owner.memories.values().next()
        && *any.model != *embedding.model()
    {
        // Vectors of two models are never compared: no waypoints until the memories are
        // embedded again with this model.
        return Ok(Vec::new());
    }
    let index = call
        .app
        .memory_index()
        .lend_vectors(memories)
        .map_err(|e| internal(&e.to_string()))?;
    let hint = call.command.precomputed.nearest.as_ref();
    let nearest = index
        .nearest_after(user, embedding, WAYPOINT_CANDIDATES, hint)
        .map_err(|e| internal(&e.to_string()))?;
    Ok(nearest
        .into_iter()
        .filter(|(id, cos)| Some(id.as_str()) != except && *cos >= rules::MIN_LINK_COSINE)
        .filter(|(id, _)| {
            owner
                .memories
                .get(id.as_str())
                .is_some_and(|m| !m.soft_deleted)
        })
        .take(rules::MAX_LINKS)
        .map(|(memory_id, cos)| WaypointLink {
            memory_id,
            weight: f64::from(cos),
        })
        .collect())
}

/// A failure of the index, which no caller can fix.
pub(super) fn internal(reason: &str) -> Refusal {
    fail(
        ErrorCode::InternalError,
        format!("the memory index failed: {reason}"),
        "retry; the index is rebuilt from the ledger when it fails",
    )
}
