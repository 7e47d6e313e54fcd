//! Lux MCP's model-backed tools: `confer`, `traced_reasoning`, `planner`, `biased_reasoning`.
//! Each asks the configured model provider before it is decided (the plan in `app::lux` says
//! what to ask); without one they are refused, naming the variables to set.

use super::catalog::{CallerEffect, Effect, ToolEntry, entry, render_json};
use crate::app::lux::{
    BiasedReasoningArgs, BiasedReasoningOutput, ConferArgs, ConferOutput, PlannerArgs,
    PlannerOutput, TracedReasoningArgs, TracedReasoningOutput,
};
use crate::app::{BIASED_REASONING_TOOL, CONFER_TOOL, PLANNER_TOOL, TRACED_REASONING_TOOL};

pub(super) fn entries() -> Vec<ToolEntry> {
    vec![
        entry::<ConferArgs, ConferOutput>(
            CONFER_TOOL,
            "Confer",
            "Send a message to the configured model, continuing the session's conversation. \
             The exchange is recorded.",
            Effect::AsksModel,
            render_json,
        ),
        entry::<TracedReasoningArgs, TracedReasoningOutput>(
            TRACED_REASONING_TOOL,
            "Traced Reasoning",
            "The model writes one thought per call (revisions, branches), measured: perplexity \
             from logprobs, similarity from vectors, a judge's consistency; guardrails raise \
             interventions.",
            Effect::AsksModel,
            render_json,
        )
        .with_caller(CallerEffect::ContinuesStartedSession),
        entry::<PlannerArgs, PlannerOutput>(
            PLANNER_TOOL,
            "Planner",
            "The model writes one plan step per call (revisions, branches); the final step \
             brings its synthesis of the plan.",
            Effect::AsksModel,
            render_json,
        )
        .with_caller(CallerEffect::ContinuesStartedSession),
        entry::<BiasedReasoningArgs, BiasedReasoningOutput>(
            BIASED_REASONING_TOOL,
            "Biased Reasoning",
            "One step per call: a primary model reasons, a verifier model checks it for \
             cognitive bias, biases are corrected, then a final synthesis.",
            Effect::AsksModel,
            render_json,
        )
        .with_caller(CallerEffect::ContinuesStartedSession),
    ]
}
