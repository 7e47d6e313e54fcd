//! ThoughtMCP's reasoning and metacognition tools (the `cognition` toolset): `think` and
//! `think_parallel` ask the configured model when there is one (open world), and so do
//! `detect_bias` and `detect_emotion`, for a judgement beside their rules; the other four are
//! decided by documented rules alone (docs/cognition.md).

use super::catalog::{Effect, ToolEntry, entry, render_json};
use crate::app::cognition::{
    AnalyzeReasoningArgs, AnalyzeReasoningOutput, AnalyzeSystematicallyArgs,
    AnalyzeSystematicallyOutput, AssessConfidenceArgs, AssessConfidenceOutput,
    DecomposeProblemArgs, DecomposeProblemOutput, DetectBiasArgs, DetectBiasOutput,
    DetectEmotionArgs, DetectEmotionOutput, ThinkArgs, ThinkOutput, ThinkParallelArgs,
    ThinkParallelOutput,
};
use crate::app::{
    ANALYZE_REASONING_TOOL, ANALYZE_SYSTEMATICALLY_TOOL, ASSESS_CONFIDENCE_TOOL,
    DECOMPOSE_PROBLEM_TOOL, DETECT_BIAS_TOOL, DETECT_EMOTION_TOOL, THINK_PARALLEL_TOOL, THINK_TOOL,
};

pub(super) fn entries() -> Vec<ToolEntry> {
    vec![
        entry::<ThinkArgs, ThinkOutput>(
            THINK_TOOL,
            "Think",
            "Reason about a problem in a mode (analytical, creative, critical, synthetic, \
             parallel) with the configured model; without one, the mode's steps only.",
            Effect::AsksModel,
            render_json,
        ),
        entry::<AnalyzeSystematicallyArgs, AnalyzeSystematicallyOutput>(
            ANALYZE_SYSTEMATICALLY_TOOL,
            "Analyze Systematically",
            "Pick one of 8 thinking frameworks for a problem by a rule table; its steps, \
             selection confidence and alternatives.",
            Effect::Appends,
            render_json,
        ),
        entry::<ThinkParallelArgs, ThinkParallelOutput>(
            THINK_PARALLEL_TOOL,
            "Think in Parallel",
            "Four model streams (analytical, creative, critical, synthetic) at once: attributed \
             insights, conflicts, timings; without a model, their steps only.",
            Effect::AsksModel,
            render_json,
        ),
        entry::<DecomposeProblemArgs, DecomposeProblemOutput>(
            DECOMPOSE_PROBLEM_TOOL,
            "Decompose Problem",
            "Split a problem into a sub-problem tree (maxDepth 1-5) with dependencies and a \
             topological execution order.",
            Effect::Appends,
            render_json,
        ),
        entry::<AssessConfidenceArgs, AssessConfidenceOutput>(
            ASSESS_CONFIDENCE_TOOL,
            "Assess Confidence",
            "Confidence in reasoning from evidence, hedges, absolutes, contradictions and \
             context coverage: dimensions, warnings, recommendations.",
            Effect::Appends,
            render_json,
        ),
        entry::<DetectBiasArgs, DetectBiasOutput>(
            DETECT_BIAS_TOOL,
            "Detect Bias",
            "Find 8 cognitive bias types in reasoning by phrase rules and labelled examples: \
             severity, evidence span, correction; the configured model's judgement beside.",
            Effect::AsksModel,
            render_json,
        ),
        entry::<DetectEmotionArgs, DetectEmotionOutput>(
            DETECT_EMOTION_TOOL,
            "Detect Emotion",
            "Valence, arousal, dominance and 11 discrete emotions of a text from published \
             lexicons (VADER, WordNet-Affect) and labelled examples; the configured model's \
             judgement beside.",
            Effect::AsksModel,
            render_json,
        ),
        entry::<AnalyzeReasoningArgs, AnalyzeReasoningOutput>(
            ANALYZE_REASONING_TOOL,
            "Analyze Reasoning",
            "Reasoning quality (coherence, completeness, validity, evidence) with strengths, \
             weaknesses, recommendations; optional confidence, bias, emotion.",
            Effect::Appends,
            render_json,
        ),
    ]
}
