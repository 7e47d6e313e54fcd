//! Facts of the model-backed tools (Lux MCP's `confer`, `traced_reasoning`, `planner`,
//! `biased_reasoning`): a reply received, a traced thought, a planning step, a step of a
//! biased-reasoning session.
//!
//! Pure data, like the rest of `events`. What the caller wrote and what the model answered are
//! [`TextRef`]s (erasable); numbers, step kinds and model names are inline. The model calls
//! themselves (request digest, usage, latency, the exact bytes) are the call's recorded effects
//! (`Call::effects.modelCalls`), not facts.

use serde::{Deserialize, Serialize};

use super::TextRef;

/// `confer`: the caller's message and the model's reply, one turn of the session's
/// conversation.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ModelConferred {
    /// The caller's message: the commitment its recorded `message` argument holds.
    pub message: TextRef,
    /// The model's reply.
    pub reply: TextRef,
    /// The model that answered, as the provider reported it.
    pub model: String,
}

/// The step metrics of a traced thought, each computed from what the provider returned or
/// absent (with the reason in the answer) when it cannot be computed honestly.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct TracedMetrics {
    /// exp(−mean log-probability) of the thought's tokens.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub perplexity: Option<f64>,
    /// Cosine of the thought's vector and the previous thought's.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub semantic_similarity: Option<f64>,
    /// Cosine of the thought's vector and the first thought's (what drift is measured by).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub similarity_to_first: Option<f64>,
    /// The highest cosine to any earlier thought but the previous one (circular reasoning).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_similarity_to_earlier: Option<f64>,
    /// The judge model's consistency score in [0, 1].
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub consistency_score: Option<f64>,
}

/// An intervention a guardrail raised on a step.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct InterventionRaised {
    /// `SemanticDrift`, `HighPerplexity`, `CircularReasoning` or `InconsistentLogic`.
    pub intervention_type: String,
    /// `Low`, `Medium`, `High` or `Critical`.
    pub severity: String,
    /// What was measured against which threshold.
    pub description: String,
}

/// `traced_reasoning`: one thought the model wrote, with its metrics and any intervention.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct TracedThoughtRecorded {
    pub thought_number: u32,
    pub total_thoughts: u32,
    pub next_thought_needed: bool,
    pub is_revision: bool,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub revises_thought: Option<u32>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub branch_from_thought: Option<u32>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub branch_id: Option<String>,
    /// The caller's query (thought 1) or guidance (later thoughts): the recorded `thought`.
    pub guidance: TextRef,
    /// The thought the model wrote.
    pub content: TextRef,
    /// `Initial`, `Exploration`, `Analysis`, `Synthesis`, `Validation` or `Conclusion`.
    pub thought_type: String,
    pub metrics: TracedMetrics,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub intervention: Option<InterventionRaised>,
    /// The model that wrote the thought, as the provider reported it.
    pub model: String,
}

/// `planner`: one planning step the model wrote.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct PlanStepRecorded {
    pub step_number: u32,
    pub total_steps: u32,
    pub next_step_required: bool,
    pub is_step_revision: bool,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub revises_step_number: Option<u32>,
    pub is_branch_point: bool,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub branch_from_step: Option<u32>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub branch_id: Option<String>,
    /// The caller's task (step 1) or planning guidance (later steps): the recorded `step`.
    pub guidance: TextRef,
    /// The step the model wrote.
    pub content: TextRef,
    /// The model that wrote it, as the provider reported it.
    pub model: String,
}

/// A bias the verifier model found in a reasoning step.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct BiasFound {
    /// The bias the verifier named, in its words: erasable like any model text.
    pub bias_type: TextRef,
    /// `low`, `medium` or `high`.
    pub severity: String,
    pub description: TextRef,
    pub suggested_correction: TextRef,
}

/// `biased_reasoning`: one step of a session (a reasoning step of the primary model, the
/// verifier's bias analysis, a correction, or the final synthesis).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct BiasedStepRecorded {
    pub step_number: u32,
    /// `Reasoning`, `BiasAnalysis`, `Correction` or `Synthesis`.
    pub step_type: String,
    /// The step's text: the model's answer (a bias analysis: its description).
    pub content: TextRef,
    /// The model that wrote it, as the provider reported it.
    pub model: String,
    /// What comes next: `BiasCheck`, `ContinueReasoning`, `Synthesize` or `Complete`.
    pub next_action: String,
    /// The session's round limit, set by its first step.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_analysis_rounds: Option<u32>,
    /// The session's question, recorded with its first step (the commitment the recorded
    /// `query` argument holds).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub question: Option<TextRef>,
    /// The bias found (a `BiasAnalysis` step that found one).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub bias: Option<BiasFound>,
}
