//! ThoughtMCP's memory tools: `store_memory`, `retrieve_memories`, `update_memory`,
//! `delete_memory`, `search_memories`. Each declares the argument whose text its caller embeds
//! before the call is decided.

use super::catalog::{CallerEffect, Effect, ToolEntry, entry, render_json};
use crate::app::memory::{
    DeleteMemoryArgs, DeleteMemoryOutput, QueryArgs, RetrieveMemoriesOutput, SearchMemoriesOutput,
    StoreMemoryArgs, StoreMemoryOutput, UpdateMemoryArgs, UpdateMemoryOutput,
};
use crate::app::{
    DELETE_MEMORY_TOOL, RETRIEVE_MEMORIES_TOOL, SEARCH_MEMORIES_TOOL, STORE_MEMORY_TOOL,
    UPDATE_MEMORY_TOOL,
};

pub(super) fn entries() -> Vec<ToolEntry> {
    vec![
        entry::<StoreMemoryArgs, StoreMemoryOutput>(
            STORE_MEMORY_TOOL,
            "Store Memory",
            "Store a memory for a userId: embedded, keywords extracted if none given, linked to \
             up to 3 similar memories.",
            Effect::Appends,
            render_json,
        )
        .with_caller(CallerEffect::Embeds("content")),
        entry::<QueryArgs, RetrieveMemoriesOutput>(
            RETRIEVE_MEMORIES_TOOL,
            "Retrieve Memories",
            "Retrieve a userId's memories by 0.6×similarity (BM25 + vectors) + 0.2×salience + \
             0.1×recency + 0.1×linkWeight, with filters and paging. Access reinforces them.",
            Effect::Idempotent,
            render_json,
        )
        .with_caller(CallerEffect::Embeds("text")),
        entry::<UpdateMemoryArgs, UpdateMemoryOutput>(
            UPDATE_MEMORY_TOOL,
            "Update Memory",
            "Update a memory's content, strength, salience or metadata. The old version stays \
             in the ledger; new content is re-embedded and relinked.",
            Effect::Idempotent,
            render_json,
        )
        .with_caller(CallerEffect::Embeds("content")),
        entry::<DeleteMemoryArgs, DeleteMemoryOutput>(
            DELETE_MEMORY_TOOL,
            "Delete Memory",
            "Delete a memory. soft=true: strength 0, recoverable. Default hard: its texts are \
             erased from disk with every derived copy; the ledger still verifies.",
            Effect::Erases,
            render_json,
        ),
        entry::<QueryArgs, SearchMemoriesOutput>(
            SEARCH_MEMORIES_TOOL,
            "Search Memories",
            "Full-text search of a userId's memories: AND, OR, NOT, \"phrases\"; ranked, with \
             <b> highlights and matched terms; the same filters as retrieve_memories.",
            Effect::Idempotent,
            render_json,
        ),
    ]
}
