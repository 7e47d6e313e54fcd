//! The MAXential Thinking v2.2 tools: `reset`, `search`, `tag`, `export`, `visualize`.

use serde_json::Value;

use super::catalog::{CallerEffect, Effect, ToolEntry, entry, render_json};
use crate::app::thinking::{ResetArgs, ResetOutput};
use crate::app::{EXPORT_TOOL, RESET_TOOL, SEARCH_TOOL, TAG_TOOL, VISUALIZE_TOOL};
use crate::app::{
    ExportArgs, ExportOutput, SearchArgs, SearchOutput, TagArgs, TagOutput, VisualizeArgs,
    VisualizeOutput,
};

/// The text block of `export` and `visualize`: the document itself, ready to read.
fn field(body: &Value, name: &str) -> String {
    body.get(name)
        .and_then(Value::as_str)
        .unwrap_or_default()
        .to_owned()
}

pub(super) fn entries() -> Vec<ToolEntry> {
    vec![
        entry::<ResetArgs, ResetOutput>(
            RESET_TOOL,
            "Reset Session",
            "Close the current thinking session and start fresh; use when beginning a new \
             problem. confirm must be true. Nothing is deleted: the closed session stays in the \
             ledger and can still be exported by its sessionId.",
            Effect::Idempotent,
            render_json,
        )
        .with_caller(CallerEffect::RotatesClosedSession),
        entry::<SearchArgs, SearchOutput>(
            SEARCH_TOOL,
            "Search Thoughts",
            "Search the thought history by content (case-insensitive regular expression), tags \
             (all must match), branch, and whether to include revisions.",
            Effect::Reads,
            render_json,
        ),
        entry::<TagArgs, TagOutput>(
            TAG_TOOL,
            "Tag Thought",
            "Add or remove tags on a thought to organize and filter the chain. Tags are \
             lowercased, trimmed and deduplicated. Suggested: hypothesis, evidence, counter, \
             decision, question, rejected, key.",
            Effect::Idempotent,
            render_json,
        ),
        entry::<ExportArgs, ExportOutput>(
            EXPORT_TOOL,
            "Export Chain",
            "Export the thinking chain as markdown or JSON, with or without branches, or one \
             branch alone.",
            Effect::Reads,
            |body| field(body, "content"),
        ),
        entry::<VisualizeArgs, VisualizeOutput>(
            VISUALIZE_TOOL,
            "Visualize Chain",
            "Draw the thinking chain and its branches and revisions as a Mermaid flowchart or \
             ASCII art.",
            Effect::Reads,
            |body| field(body, "diagram"),
        ),
    ]
}
