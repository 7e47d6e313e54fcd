//! `update_memory` (a new version supersedes the current one; the old stays in the log) and
//! `delete_memory` (soft: strength 0, recoverable; hard: every text of every version erased
//! through the erasure machinery, every derived copy removed).

use super::rules;
use super::store::{embedding_used, metadata_json, waypoints};
use super::{
    DeleteMemoryArgs, DeleteMemoryData, UpdateMemoryArgs, UpdateMemoryData, fail, owned, parse,
    prepared_embedding, texts, unit, user_id,
};
use crate::app::ErrorCode;
use crate::app::Outcome;
use crate::app::call::{Call, PathStep};
use crate::events::Fact;
use crate::events::memory::{MemoryErased, MemorySoftDeleted, MemorySuperseded};
use crate::projections::memory::millis;

pub(super) fn decide_update(call: &mut Call<'_>) -> Outcome {
    let args: UpdateMemoryArgs = parse(call)?;
    let user = user_id(&args.user_id)?.to_owned();
    let memory = owned(call, &user, &args.memory_id)?;
    if args.content.as_ref().is_some_and(|c| c.trim().is_empty()) {
        return Err(fail(
            ErrorCode::EmptyContent,
            "Content cannot be empty",
            "Provide non-empty content, or omit content to keep it",
        ));
    }
    let strength = unit("strength", args.strength)?;
    let salience = unit("salience", args.salience)?;
    let given = args.metadata.clone().unwrap_or_default();
    let importance = unit("metadata.importance", given.importance)?;
    if args.content.is_none() && strength.is_none() && salience.is_none() && args.metadata.is_none()
    {
        return Err(fail(
            ErrorCode::NothingToUpdate,
            "No fields to update",
            "pass at least one of content, strength, salience or metadata",
        ));
    }

    let mut fact = MemorySuperseded {
        user_id: user.clone(),
        memory_id: memory.id.to_string(),
        version: memory.version + 1,
        superseded_valid_from: memory.valid_from.to_string(),
        content: None,
        metadata: None,
        keywords_extracted: None,
        sectors: None,
        strength,
        salience: salience.or(importance),
        links: None,
        embedding: None,
    };
    let mut links_made = 0u32;
    if let Some(content) = &args.content {
        let embedding = prepared_embedding(call)?;
        let links = waypoints(call, &user, Some(&memory.id), embedding)?;
        links_made = u32::try_from(links.len()).unwrap_or(u32::MAX);
        fact.content = call.recorded_ref(&[PathStep::Key("content")]);
        fact.sectors = Some(rules::classify(&memory.primary_sector, content));
        fact.links = Some(links);
        fact.embedding = Some(embedding_used(embedding));
    }
    let mut metadata = (*memory.metadata).clone();
    let mut keywords_extracted = memory.keywords_extracted;
    match given.keywords.clone() {
        Some(keywords) if !keywords.is_empty() => {
            metadata.keywords = texts(keywords);
            keywords_extracted = false;
        }
        _ => {
            if let (Some(content), true) = (&args.content, keywords_extracted) {
                metadata.keywords = texts(rules::extract_keywords(content));
            }
        }
    }
    if let Some(tags) = given.tags {
        metadata.tags = texts(tags);
    }
    if given.category.is_some() {
        metadata.category = given.category;
    }
    if given.context.is_some() {
        metadata.context = given.context;
    }
    if let Some(importance) = importance {
        metadata.importance = importance;
    }
    if metadata != *memory.metadata {
        fact.metadata = Some(call.derive_text(&metadata_json(&metadata)));
        fact.keywords_extracted = Some(keywords_extracted);
    }

    let now_ms = millis(call.at);
    let data = UpdateMemoryData {
        memory_id: memory.id.to_string(),
        embeddings_regenerated: fact.content.is_some(),
        connections_updated: links_made,
        strength: strength.unwrap_or_else(|| {
            rules::decayed(
                memory.strength,
                memory.strength_at_ms,
                now_ms,
                &memory.primary_sector,
            )
        }),
        salience: fact.salience.unwrap_or(memory.salience),
    };
    let components: &[&str] = if fact.content.is_some() {
        &["memoryRepository", "embeddingEngine", "graphBuilder"]
    } else {
        &["memoryRepository"]
    };
    let body = call.seed_envelope(data, components);
    call.done_in_current_session(vec![Fact::MemorySuperseded(fact)], body)
}

pub(super) fn decide_delete(call: &mut Call<'_>) -> Outcome {
    let args: DeleteMemoryArgs = parse(call)?;
    let user = user_id(&args.user_id)?.to_owned();
    let memory = owned(call, &user, &args.memory_id)?;
    if args.soft.unwrap_or(false) {
        let data = DeleteMemoryData {
            memory_id: memory.id.to_string(),
            deletion_type: "soft".into(),
            message: "Memory soft-deleted: strength set to 0 and hidden from retrieval; \
                      update_memory with a strength above 0 restores it"
                .into(),
        };
        let fact = MemorySoftDeleted {
            user_id: user,
            memory_id: memory.id.to_string(),
        };
        let body = call.seed_envelope(data, &["memoryRepository"]);
        return call.done_in_current_session(vec![Fact::MemorySoftDeleted(fact)], body);
    }
    let mut commitments = memory.commitments.to_strings();
    commitments.sort_unstable();
    commitments.dedup();
    let facts = vec![
        Fact::MemoryErased(MemoryErased {
            user_id: user,
            memory_id: memory.id.to_string(),
            versions: memory.version,
        }),
        Fact::TextsErased {
            commitments,
            reason: format!("delete_memory: hard delete of {}", memory.id),
            session_id: None,
        },
    ];
    let data = DeleteMemoryData {
        memory_id: memory.id.to_string(),
        deletion_type: "hard".into(),
        message: "Memory and all related data removed".into(),
    };
    let body = call.seed_envelope(
        data,
        &["memoryRepository", "embeddingEngine", "graphBuilder"],
    );
    call.done_in_current_session(facts, body)
}
