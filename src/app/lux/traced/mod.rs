//! `traced_reasoning`: the model reasons one thought at a time (revisions and branches as in
//! sequential thinking), and each thought is measured: perplexity from the provider's token
//! log-probabilities, similarity to earlier thoughts from vectors, consistency from a labelled
//! judge call to the model. The guardrails raise interventions from those numbers against the
//! caller's thresholds. Attention entropy is not observable through an API and is always null.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::json;

use super::{
    LuxProvenance, Unavailable, chain_session, check_numbering, level, line, parse, provenance,
    request, schema_format, session_of, short_list, short_text, temperature,
};
use crate::app::Outcome;
use crate::app::call::model::ModelStep;
use crate::app::call::{Call, PathStep, Refusal};
use crate::app::{App, Command};
use crate::events::lux::{InterventionRaised, TracedMetrics, TracedThoughtRecorded};
use crate::events::{Fact, SessionId};
use crate::model::{ChatRequest, Message};
use crate::projections::lux::{LuxSession, TracedThought};

mod measure;

use measure::{Measured, measure};

const USAGE: &str = "pass thought (the query for thought 1, guidance later), thought_number, \
                     total_thoughts, next_thought_needed; optionally is_revision + \
                     revises_thought, branch_from_thought + branch_id, needs_more_thoughts, \
                     session_id, model, temperature (0-2, default 0.7), guardrails";

const SYSTEM: &str = "You reason step by step. Write exactly one next thought: one short \
                      paragraph that moves the reasoning forward without repeating earlier \
                      thoughts.";

const DEFAULT_TEMPERATURE: f64 = 0.7;

/// Cosine to an earlier thought (other than the previous one) at or above which a thought is
/// taken to repeat it.
const CIRCULAR_COSINE: f64 = 0.92;

/// A judge's consistency score below which the logic is flagged.
const INCONSISTENT_BELOW: f64 = 0.5;

const ATTENTION_ENTROPY_UNAVAILABLE: &str = "attention weights are not observable through an \
     OpenAI-compatible API, so their entropy cannot be computed";

/// The seed's `GuardrailConfig`, with its defaults.
#[derive(Debug, Clone, Deserialize, JsonSchema)]
#[serde(default)]
pub struct Guardrails {
    pub semantic_drift_check: bool,
    /// Drift is flagged when the cosine to the first thought falls below this.
    pub semantic_drift_threshold: f64,
    pub perplexity_monitoring: bool,
    pub perplexity_threshold: f64,
    pub circular_reasoning_detection: bool,
    /// A labelled judge call to the model scores consistency with earlier thoughts.
    pub consistency_validation: bool,
    /// Accepted; attention is not observable through an API (always null, with the reason).
    pub attention_entropy_analysis: bool,
}

impl Default for Guardrails {
    fn default() -> Self {
        Self {
            semantic_drift_check: true,
            semantic_drift_threshold: 0.3,
            perplexity_monitoring: true,
            perplexity_threshold: 50.0,
            circular_reasoning_detection: true,
            consistency_validation: true,
            attention_entropy_analysis: true,
        }
    }
}

/// Arguments of `traced_reasoning` (the seed's `TracedReasoningRequest`).
#[derive(Debug, Clone, Deserialize, JsonSchema)]
pub struct TracedReasoningArgs {
    /// The query (thought 1) or guidance for this thought.
    #[schemars(extend("x-text" = true))]
    pub thought: String,
    /// From 1.
    pub thought_number: u32,
    pub total_thoughts: u32,
    /// false: this is the conclusion (the model then also writes a synthesis).
    pub next_thought_needed: bool,
    #[serde(default)]
    pub is_revision: bool,
    #[serde(default)]
    pub revises_thought: Option<u32>,
    #[serde(default)]
    pub branch_from_thought: Option<u32>,
    #[serde(default)]
    pub branch_id: Option<String>,
    #[serde(default)]
    pub needs_more_thoughts: bool,
    /// Continue this session (default: your current session).
    #[serde(default)]
    pub session_id: Option<String>,
    #[serde(default)]
    pub model: Option<String>,
    /// 0–2, default 0.7.
    #[serde(default)]
    pub temperature: Option<f64>,
    #[serde(default)]
    pub guardrails: Guardrails,
}

/// The seed's `StepMetrics`: each null when it cannot be computed honestly (see
/// `metrics_unavailable`).
#[derive(Debug, Clone, Serialize, JsonSchema)]
pub struct StepMetrics {
    /// Cosine of this thought's vector and the previous thought's.
    pub semantic_similarity: Option<f64>,
    /// exp(−mean token log-probability) of this thought.
    pub perplexity: Option<f64>,
    /// Always null: not observable through an API.
    pub attention_entropy: Option<f64>,
    /// A judge model's consistency score in [0, 1].
    pub consistency_score: Option<f64>,
}

/// The seed's `TracedReasoningMetadata`.
#[derive(Debug, Clone, Serialize, JsonSchema)]
pub struct TracedMetadata {
    pub thought_history_length: u32,
    pub interventions_count: u32,
    /// Mean similarity of consecutive thoughts on this line (null before there are two).
    pub semantic_coherence: Option<f64>,
    /// The mean token probability of this thought (1 / perplexity).
    pub current_confidence: Option<f64>,
    pub is_revision: bool,
    pub revises_thought: Option<u32>,
    pub branch_id: Option<String>,
    pub needs_more_thoughts: bool,
}

/// The seed's `Intervention`.
#[derive(Debug, Clone, Serialize, JsonSchema)]
pub struct Intervention {
    pub step: u32,
    /// `SemanticDrift`, `HighPerplexity`, `CircularReasoning` or `InconsistentLogic`.
    pub intervention_type: String,
    pub description: String,
    /// `Low`, `Medium`, `High` or `Critical`.
    pub severity: String,
}

/// Metrics over the line of thoughts so far.
#[derive(Debug, Clone, Serialize, JsonSchema)]
pub struct ReasoningMetrics {
    pub total_steps: u32,
    pub average_perplexity: Option<f64>,
    pub average_semantic_similarity: Option<f64>,
    pub interventions: u32,
}

/// The seed's `SynthesisSnapshot`, written by the model on the concluding thought.
#[derive(Debug, Clone, Serialize, Deserialize, JsonSchema)]
pub struct TracedSynthesis {
    pub current_understanding: String,
    pub key_insights: Vec<String>,
    pub next_actions: Vec<String>,
    pub confidence_level: String,
    pub clarity_level: String,
    pub ready_for_conclusion: bool,
}

/// The answer of `traced_reasoning` (the seed's `TracedReasoningResponse`).
#[derive(Debug, Clone, Serialize, JsonSchema)]
pub struct TracedReasoningOutput {
    /// `thinking`, `intervention_needed` or `conclusion_reached`.
    pub status: String,
    pub thought_number: u32,
    pub total_thoughts: u32,
    pub next_thought_needed: bool,
    pub thought_content: String,
    /// `Initial`, `Exploration`, `Analysis`, `Synthesis`, `Validation` or `Conclusion`.
    pub thought_type: String,
    pub metrics: StepMetrics,
    pub metadata: TracedMetadata,
    /// The session handle: pass it as session_id to continue.
    pub continuation_id: Option<String>,
    pub reasoning_complete: Option<bool>,
    pub final_answer: Option<String>,
    pub next_steps: Option<String>,
    pub intervention: Option<Intervention>,
    pub overall_metrics: Option<ReasoningMetrics>,
    pub model_used: Option<String>,
    pub synthesis_snapshot: Option<TracedSynthesis>,
    pub session_id: String,
    /// Metrics and fields that are null, and why.
    pub metrics_unavailable: Unavailable,
    pub provenance: LuxProvenance,
}

fn args(command: &Command) -> Result<TracedReasoningArgs, Refusal> {
    let args: TracedReasoningArgs = parse(command, USAGE)?;
    if args.thought.trim().is_empty() {
        return Err(super::invalid("thought is empty", USAGE));
    }
    check_numbering(
        args.thought_number,
        args.total_thoughts,
        args.revises_thought.filter(|_| args.is_revision),
        args.branch_from_thought,
        [
            "thought_number",
            "total_thoughts",
            "revises_thought",
            "branch_from_thought",
        ],
    )?;
    Ok(args)
}

fn thought_line<'a>(
    lux: Option<&'a LuxSession>,
    args: &TracedReasoningArgs,
) -> Vec<&'a TracedThought> {
    line(
        lux.map(|l| l.traced.as_slice()).unwrap_or_default(),
        |t| (t.fact.branch_id.as_deref(), t.fact.branch_from_thought),
        |t| t.fact.thought_number,
        args.branch_id.as_deref(),
        args.branch_from_thought,
    )
}

fn query<'a>(lux: Option<&'a LuxSession>, args: &'a TracedReasoningArgs) -> &'a str {
    lux.and_then(|l| l.traced.iter().find(|t| t.fact.thought_number == 1))
        .map_or(args.thought.as_str(), |t| t.guidance.or_erased())
}

fn earlier_text(lux: Option<&LuxSession>, args: &TracedReasoningArgs) -> String {
    let mut text = String::new();
    for t in thought_line(lux, args) {
        text.push_str(&format!(
            "{}. {}\n",
            t.fact.thought_number,
            t.content.or_erased()
        ));
    }
    text
}

fn thought_request(
    lux: Option<&LuxSession>,
    args: &TracedReasoningArgs,
    temperature: Option<f64>,
) -> ChatRequest {
    let mut prompt = format!("Question: {}\n", query(lux, args));
    let earlier = earlier_text(lux, args);
    if !earlier.is_empty() {
        prompt.push_str(&format!("\nThoughts so far:\n{earlier}"));
    }
    if args.thought_number > 1 {
        prompt.push_str(&format!("\nGuidance: {}\n", args.thought));
    }
    if let Some(r) = args.revises_thought.filter(|_| args.is_revision) {
        prompt.push_str(&format!("\nRevise thought {r}.\n"));
    }
    let conclude = if args.next_thought_needed {
        ""
    } else {
        " It is the conclusion: answer the question."
    };
    prompt.push_str(&format!(
        "\nWrite thought {} of about {}.{conclude}",
        args.thought_number,
        args.total_thoughts.max(args.thought_number)
    ));
    let mut chat = request(
        vec![Message::system(SYSTEM), Message::user(&prompt)],
        args.model.as_deref(),
        temperature,
    );
    chat.logprobs = args.guardrails.perplexity_monitoring;
    chat
}

fn judge_request(lux: Option<&LuxSession>, args: &TracedReasoningArgs, new: &str) -> ChatRequest {
    let prompt = format!(
        "Earlier thoughts:\n{}\nNew thought: {new}\n\nIs the new thought logically consistent \
         with the earlier thoughts? Score it from 0 (contradicts them) to 10 (fully \
         consistent), as JSON.",
        earlier_text(lux, args)
    );
    let mut chat = request(
        vec![
            Message::system(
                "You are a strict judge of logical consistency. Answer only with JSON.",
            ),
            Message::user(&prompt),
        ],
        args.model.as_deref(),
        Some(0.0),
    );
    chat.response_format = Some(schema_format(
        "consistency",
        json!({"score": {"type": "integer", "minimum": 0, "maximum": 10}}),
    ));
    chat
}

fn synthesis_request(
    lux: Option<&LuxSession>,
    args: &TracedReasoningArgs,
    new: &str,
) -> ChatRequest {
    let prompt = format!(
        "Question: {}\n\nThoughts:\n{}{}. {new}\n\nSummarise the reasoning as JSON: the \
         current understanding in one or two sentences, key insights, next actions, confidence \
         and clarity (low, medium or high), and whether it is ready for a conclusion.",
        query(lux, args),
        earlier_text(lux, args),
        args.thought_number
    );
    let mut chat = request(
        vec![
            Message::system("You summarise reasoning and answer only with JSON."),
            Message::user(&prompt),
        ],
        args.model.as_deref(),
        Some(0.0),
    );
    chat.response_format = Some(schema_format(
        "synthesis",
        json!({
            "current_understanding": short_text(),
            "key_insights": short_list(),
            "next_actions": short_list(),
            "confidence_level": level(),
            "clarity_level": level(),
            "ready_for_conclusion": {"type": "boolean"},
        }),
    ));
    chat
}

/// Whether this call asks the judge: consistency validation on, and earlier thoughts to judge
/// against.
fn judged(lux: Option<&LuxSession>, args: &TracedReasoningArgs) -> bool {
    args.guardrails.consistency_validation && !thought_line(lux, args).is_empty()
}

/// The thought; the judge (when there are earlier thoughts); the synthesis (on the
/// conclusion); then the thought's vector.
pub(super) fn plan(app: &App, command: &Command) -> Result<Option<ModelStep>, Refusal> {
    let args = args(command)?;
    let temperature = temperature(args.temperature, Some(DEFAULT_TEMPERATURE))?;
    let (_, lux) = chain_session(
        app,
        command,
        args.session_id.as_deref(),
        args.thought_number == 1,
    )?;
    let answers = &command.prepared.model.answers;
    let Some(thought) = answers.first() else {
        return Ok(Some(ModelStep::Chat(thought_request(
            lux,
            &args,
            temperature,
        ))));
    };
    let content = thought.text().trim();
    let mut wanted = 1;
    if judged(lux, &args) {
        wanted += 1;
        if answers.len() < wanted {
            return Ok(Some(ModelStep::Chat(judge_request(lux, &args, content))));
        }
    }
    if !args.next_thought_needed {
        wanted += 1;
        if answers.len() < wanted {
            return Ok(Some(ModelStep::Chat(synthesis_request(
                lux, &args, content,
            ))));
        }
    }
    if answers.len() > wanted {
        return Ok(None);
    }
    // Asked again while the vector is missing or failed: a failed embedding is then refused
    // (`embedding_unavailable`) by the check, never decided without its vector.
    Ok((!matches!(command.prepared.embedding, Some(Ok(_))))
        .then(|| ModelStep::Embed(content.to_owned())))
}

/// The rule that names a thought's type (docs/lux.md): the first is `Initial`, the last
/// (`next_thought_needed: false`) `Conclusion`, a revision `Validation`; otherwise by how far
/// the thought is through the estimated total: `Exploration` in the first 40 %, `Analysis` to
/// 70 %, then `Synthesis`.
fn thought_type(args: &TracedReasoningArgs) -> &'static str {
    if args.thought_number == 1 {
        "Initial"
    } else if !args.next_thought_needed {
        "Conclusion"
    } else if args.is_revision {
        "Validation"
    } else {
        let total = args.total_thoughts.max(args.thought_number);
        let through = f64::from(args.thought_number) / f64::from(total);
        if through <= 0.4 {
            "Exploration"
        } else if through <= 0.7 {
            "Analysis"
        } else {
            "Synthesis"
        }
    }
}

/// The guardrails' intervention, if any: the most severe finding (High before Medium; among
/// equals in the order circular, inconsistent, drift, perplexity).
fn intervention(args: &TracedReasoningArgs, m: &TracedMetrics) -> Option<InterventionRaised> {
    let g = &args.guardrails;
    let mut found = Vec::new();
    if g.circular_reasoning_detection
        && let Some(s) = m.max_similarity_to_earlier
        && s >= CIRCULAR_COSINE
    {
        found.push(("CircularReasoning", "High", format!(
            "this thought's cosine to an earlier thought is {s:.3} (at or above {CIRCULAR_COSINE})"
        )));
    }
    if g.consistency_validation
        && let Some(c) = m.consistency_score
        && c < INCONSISTENT_BELOW
    {
        found.push(("InconsistentLogic", "High", format!(
            "the judge model scored consistency with earlier thoughts {c:.1} (below {INCONSISTENT_BELOW})"
        )));
    }
    if g.semantic_drift_check
        && let Some(s) = m.similarity_to_first
        && s < g.semantic_drift_threshold
    {
        found.push((
            "SemanticDrift",
            "Medium",
            format!(
                "this thought's cosine to the first thought is {s:.3} (below {})",
                g.semantic_drift_threshold
            ),
        ));
    }
    if g.perplexity_monitoring
        && let Some(p) = m.perplexity
        && p > g.perplexity_threshold
    {
        found.push((
            "HighPerplexity",
            "Medium",
            format!(
                "this thought's perplexity is {p:.2} (above {})",
                g.perplexity_threshold
            ),
        ));
    }
    let pick = found
        .iter()
        .find(|f| f.1 == "High")
        .or_else(|| found.first())?;
    Some(InterventionRaised {
        intervention_type: pick.0.to_owned(),
        severity: pick.1.to_owned(),
        description: pick.2.clone(),
    })
}

fn mean(values: impl Iterator<Item = f64>) -> Option<f64> {
    let (sum, n) = values.fold((0.0, 0u32), |(s, n), v| (s + v, n + 1));
    (n > 0).then(|| sum / f64::from(n))
}

/// The answer: the thought, its metrics, and the line's and the session's running figures.
fn output(
    args: &TracedReasoningArgs,
    measured: Measured,
    all: &[TracedThought],
    earlier: &[&TracedThought],
    session_id: &SessionId,
    revises_thought: Option<u32>,
) -> TracedReasoningOutput {
    let Measured {
        content,
        model,
        metrics,
        unavailable,
        synthesis,
        raised,
    } = measured;
    let interventions = all.iter().filter(|t| t.fact.intervention.is_some()).count()
        + usize::from(raised.is_some());
    let similarities: Vec<f64> = earlier
        .iter()
        .filter_map(|t| t.fact.metrics.semantic_similarity)
        .chain(metrics.semantic_similarity)
        .collect();
    let line_interventions = earlier
        .iter()
        .filter(|t| t.fact.intervention.is_some())
        .count()
        + usize::from(raised.is_some());
    let count = |n: usize| u32::try_from(n).unwrap_or(u32::MAX);
    let complete = !args.next_thought_needed;
    let status = if raised.is_some() {
        "intervention_needed"
    } else if complete {
        "conclusion_reached"
    } else {
        "thinking"
    };
    TracedReasoningOutput {
        status: status.to_owned(),
        thought_number: args.thought_number,
        total_thoughts: args.total_thoughts.max(args.thought_number),
        next_thought_needed: args.next_thought_needed,
        thought_content: content.clone(),
        thought_type: thought_type(args).to_owned(),
        metrics: StepMetrics {
            semantic_similarity: metrics.semantic_similarity,
            perplexity: metrics.perplexity,
            attention_entropy: None,
            consistency_score: metrics.consistency_score,
        },
        metadata: TracedMetadata {
            thought_history_length: count(all.len() + 1),
            interventions_count: count(interventions),
            semantic_coherence: mean(similarities.iter().copied()),
            current_confidence: metrics.perplexity.map(|p| 1.0 / p),
            is_revision: args.is_revision,
            revises_thought,
            branch_id: args.branch_id.clone(),
            needs_more_thoughts: args.needs_more_thoughts,
        },
        continuation_id: Some(session_id.to_string()),
        reasoning_complete: Some(complete),
        final_answer: complete.then(|| content.clone()),
        next_steps: synthesis.as_ref().map(|s| s.next_actions.join("; ")),
        intervention: raised.as_ref().map(|r| Intervention {
            step: args.thought_number,
            intervention_type: r.intervention_type.clone(),
            description: r.description.clone(),
            severity: r.severity.clone(),
        }),
        overall_metrics: Some(ReasoningMetrics {
            total_steps: count(earlier.len() + 1),
            average_perplexity: mean(
                earlier
                    .iter()
                    .filter_map(|t| t.fact.metrics.perplexity)
                    .chain(metrics.perplexity),
            ),
            average_semantic_similarity: mean(similarities.iter().copied()),
            interventions: count(line_interventions),
        }),
        model_used: Some(model.clone()),
        synthesis_snapshot: synthesis,
        session_id: session_id.to_string(),
        metrics_unavailable: unavailable,
        provenance: provenance(&model),
    }
}

/// `traced_reasoning`: the model's thought measured, recorded with its metrics, and answered
/// with the line's running figures.
pub(super) fn decide(call: &mut Call<'_>) -> Outcome {
    let args = args(call.command)?;
    let (target, lux) = chain_session(
        call.app,
        call.command,
        args.session_id.as_deref(),
        args.thought_number == 1,
    )?;
    let earlier = thought_line(lux, &args);
    let measured = measure(call, lux, &args, &earlier)?;
    let guidance = call
        .recorded_ref(&[PathStep::Key("thought")])
        .ok_or_else(|| super::invalid("the thought was not recorded as a text", USAGE))?;
    let content_ref = call.derive_text(&measured.content);
    let fact = TracedThoughtRecorded {
        thought_number: args.thought_number,
        total_thoughts: args.total_thoughts.max(args.thought_number),
        next_thought_needed: args.next_thought_needed,
        is_revision: args.is_revision,
        revises_thought: args.revises_thought.filter(|_| args.is_revision),
        branch_from_thought: args.branch_from_thought,
        branch_id: args.branch_id.clone(),
        guidance,
        content: content_ref,
        thought_type: thought_type(&args).to_owned(),
        metrics: measured.metrics.clone(),
        intervention: measured.raised.clone(),
        model: measured.model.clone(),
    };
    let all = lux.map(|l| l.traced.as_slice()).unwrap_or_default();
    let (session_id, mut facts) = session_of(call, target);
    let body = output(
        &args,
        measured,
        all,
        &earlier,
        &session_id,
        fact.revises_thought,
    );
    facts.push(Fact::TracedThoughtRecorded(fact));
    call.done(Some(session_id), facts, body)
}
