//! The `sequentialthinking` tool: a drop-in for the reference server's tool of that name.

use super::catalog::{Effect, ToolEntry, entry, render_json};
use crate::app::SEQUENTIALTHINKING_TOOL;
use crate::app::thinking::{SequentialThinkingArgs, SequentialThinkingOutput};

const DESCRIPTION: &str = "Think through a problem one recorded step at a time. Each call adds a \
thought to a session: plan with an estimate of the steps, revise earlier thoughts (isRevision + \
revisesThought), branch to explore an alternative (branchFromThought + branchId), and go past the \
estimate when needed (thoughtNumber above totalThoughts raises the estimate). Set \
nextThoughtNeeded to false only when a satisfactory answer is reached.\n\n\
Every thought is kept as a hash-chained ledger event, so the chain survives restarts: pass the \
returned sessionId to continue it later. Optional tags (hypothesis, evidence, counter, decision, \
question, rejected, key) make thoughts searchable.";

pub(super) fn entries() -> Vec<ToolEntry> {
    vec![entry::<SequentialThinkingArgs, SequentialThinkingOutput>(
        SEQUENTIALTHINKING_TOOL,
        "Sequential Thinking",
        DESCRIPTION,
        Effect::Appends,
        render_json,
    )]
}
