//! A traced thought measured: its perplexity from the answer's token log-probabilities, its
//! cosine similarity to earlier thoughts, the judge model's consistency score, the synthesis of
//! a concluding thought, and the intervention they call for; each metric that cannot be had
//! honestly left null with why.
//!
//! Must not know: how the thought is recorded or answered.

use serde::Deserialize;

use super::super::{Unavailable, json_answer, model_used};
use super::{
    ATTENTION_ENTROPY_UNAVAILABLE, TracedReasoningArgs, TracedSynthesis, USAGE, intervention,
    judged,
};
use crate::app::call::{Call, Refusal};
use crate::embed::Embedding;
use crate::events::lux::{InterventionRaised, TracedMetrics};
use crate::model::ChatOutcome;
use crate::projections::lux::{LuxSession, TracedThought};

/// exp(−mean log-probability) of the answer's tokens, or why there is none.
fn perplexity(answer: &ChatOutcome) -> Result<f64, &'static str> {
    let tokens = answer
        .logprobs
        .as_deref()
        .filter(|t| !t.is_empty())
        .ok_or("the provider returned no token log-probabilities for this thought")?;
    let sum: f64 = tokens.iter().map(|t| t.logprob).sum();
    let count = f64::from(u32::try_from(tokens.len()).unwrap_or(u32::MAX));
    let value = (-sum / count).exp();
    if value.is_finite() {
        Ok(value)
    } else {
        Err("the provider's log-probabilities give no finite perplexity")
    }
}

fn cosine(a: &[f32], b: &[f32]) -> Option<f64> {
    if a.len() != b.len() || a.is_empty() {
        return None;
    }
    let (mut dot, mut na, mut nb) = (0.0f64, 0.0f64, 0.0f64);
    for (x, y) in a.iter().zip(b) {
        let (x, y) = (f64::from(*x), f64::from(*y));
        dot += x * y;
        na += x * x;
        nb += y * y;
    }
    let norm = na.sqrt() * nb.sqrt();
    (norm > 0.0).then(|| (dot / norm).clamp(-1.0, 1.0))
}

/// One traced thought as the model wrote it and the rules measured it, before it is recorded
/// and answered.
pub(super) struct Measured {
    /// The model's thought, trimmed.
    pub(super) content: String,
    /// The model that wrote it, as its answer names it.
    pub(super) model: String,
    /// What could be measured honestly.
    pub(super) metrics: TracedMetrics,
    /// What could not, each metric with why.
    pub(super) unavailable: Unavailable,
    /// The model's synthesis, written on the concluding thought.
    pub(super) synthesis: Option<TracedSynthesis>,
    /// The intervention the metrics call for, if any.
    pub(super) raised: Option<InterventionRaised>,
}

/// The thought's similarity to the previous thought, to the first and (the highest) to any
/// earlier one but the previous and the one it revises: cosines of the recorded vectors, when
/// they are of the same embedding model.
fn measure_similarity(
    embedding: Option<&Embedding>,
    earlier: &[&TracedThought],
    args: &TracedReasoningArgs,
    metrics: &mut TracedMetrics,
    unavailable: &mut Unavailable,
) {
    let comparable = |t: &TracedThought| -> Option<f64> {
        let v = embedding?;
        if t.vector_model.as_deref() != Some(v.model()) {
            return None;
        }
        cosine(v.vector(), &t.vector.as_ref()?.1)
    };
    match earlier.last() {
        None => unavailable.note(
            "semantic_similarity",
            "the first thought has no previous one",
        ),
        Some(prev) => match comparable(prev) {
            Some(s) => metrics.semantic_similarity = Some(s),
            None => unavailable.note(
                "semantic_similarity",
                "the previous thought's vector is erased or of another embedding model",
            ),
        },
    }
    metrics.similarity_to_first = earlier.first().and_then(|t| comparable(t));
    let before_previous = earlier.len().saturating_sub(1);
    metrics.max_similarity_to_earlier = earlier[..before_previous]
        .iter()
        .filter(|t| Some(t.fact.thought_number) != args.revises_thought)
        .filter_map(|t| comparable(t))
        .reduce(f64::max);
}

/// The consistency score the judge model gave (0-10, scaled to 0-1) when it was asked, else
/// why there is none.
fn judge_consistency(
    judged: bool,
    judge: Option<&ChatOutcome>,
    args: &TracedReasoningArgs,
    metrics: &mut TracedMetrics,
    unavailable: &mut Unavailable,
) {
    if judged {
        match judge.map(json_answer::<Judged>) {
            Some(Ok(j)) if j.score <= 10 => {
                metrics.consistency_score = Some(f64::from(j.score) / 10.0);
            }
            Some(Ok(j)) => unavailable.note(
                "consistency_score",
                format!("the judge model answered {} outside 0-10", j.score),
            ),
            Some(Err(reason)) => unavailable.note("consistency_score", reason),
            None => unavailable.note("consistency_score", "the judge model was not asked"),
        }
    } else if args.guardrails.consistency_validation {
        unavailable.note(
            "consistency_score",
            "the first thought on a line has no earlier thought to be consistent with",
        );
    } else {
        unavailable.note("consistency_score", "consistency_validation is off");
    }
}

/// The model's synthesis of a concluding thought (none while more thoughts are needed, or
/// when its answer could not be read).
fn synthesis(
    args: &TracedReasoningArgs,
    answer: Option<&ChatOutcome>,
    unavailable: &mut Unavailable,
) -> Option<TracedSynthesis> {
    if args.next_thought_needed {
        unavailable.note(
            "synthesis_snapshot",
            "the model writes a synthesis on the concluding thought (next_thought_needed: false)",
        );
        None
    } else {
        match answer.map(json_answer::<TracedSynthesis>) {
            Some(Ok(s)) => Some(s),
            Some(Err(reason)) => {
                unavailable.note("synthesis_snapshot", reason);
                None
            }
            None => None,
        }
    }
}

/// The model's answers read and measured: the thought (the first answer), its perplexity and
/// similarities, the judge's consistency score (the next answer, when a judge was asked), the
/// synthesis (the last, on a concluding thought) and the intervention they call for.
pub(super) fn measure(
    call: &Call<'_>,
    lux: Option<&LuxSession>,
    args: &TracedReasoningArgs,
    earlier: &[&TracedThought],
) -> Result<Measured, Refusal> {
    let answers = call.model_answers();
    let thought = answers
        .first()
        .ok_or_else(|| super::super::invalid("no model answer", USAGE))?;
    let mut unavailable = Unavailable::default();
    unavailable.note("attention_entropy", ATTENTION_ENTROPY_UNAVAILABLE);
    let mut metrics = TracedMetrics::default();
    match perplexity(thought) {
        Ok(p) => metrics.perplexity = Some(p),
        Err(reason) if args.guardrails.perplexity_monitoring => {
            unavailable.note("perplexity", reason);
        }
        Err(_) => unavailable.note("perplexity", "perplexity_monitoring is off"),
    }
    let embedding = match &call.command.prepared.embedding {
        Some(Ok(e)) => Some(e),
        _ => None,
    };
    measure_similarity(embedding, earlier, args, &mut metrics, &mut unavailable);
    let judged = judged(lux, args);
    judge_consistency(judged, answers.get(1), args, &mut metrics, &mut unavailable);
    let synthesis = synthesis(args, answers.get(1 + usize::from(judged)), &mut unavailable);
    let raised = intervention(args, &metrics);
    Ok(Measured {
        content: thought.text().trim().to_owned(),
        model: model_used(thought),
        metrics,
        unavailable,
        synthesis,
        raised,
    })
}

/// The judge's answer.
#[derive(Debug, Deserialize)]
struct Judged {
    score: u32,
}
