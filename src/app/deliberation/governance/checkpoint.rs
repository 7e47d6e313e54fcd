//! The route rules (what a deliberation should do next, from its assessment) and
//! `run_reasoning_checkpoint`, which records a checkpoint with its route decision; in governed
//! mode that decision is what the guard's route check looks for.
//!
//! Must not know: how a route is carried out; the confidence is a rule heuristic.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use super::{
    Assessment, CHECK_ASSUMPTION, CHECK_CRITICAL_CLAIM, CHECK_DIVERSITY, CHECK_SOURCE_CONFLICT,
    GAP_QUALITY, QualityComponent, assess, count, threshold_or_refuse,
};
use crate::app::ErrorCode;
use crate::app::Outcome;
use crate::app::call::Call;
use crate::app::deliberation::context::refuse;
use crate::app::deliberation::outputs::{AnalysisOut, BlockingGapOut, RouteDecisionOut};
use crate::app::deliberation::{
    ADD_THOUGHT_NODE_TOOL, APPLY_REASONING_PATTERN_TOOL, CONSENSUS_ANSWER_TOOL,
    CONVERGE_REASONING_TOOL, EXPAND_THOUGHTS_TOOL, PRUNE_THOUGHTS_TOOL,
    RUN_REASONING_CHECKPOINT_TOOL, SCORE_THOUGHTS_TOOL, SET_ASSUMPTION_STATUS_TOOL,
    VERIFY_THOUGHTS_TOOL,
};
use crate::events::Fact;
use crate::events::deliberation::{CheckpointRecorded, RouteDecision};
use crate::projections::Deliberation;

// ---------------------------------------------------------------------------------------------
// Route rules (checkpoint, evaluation)
// ---------------------------------------------------------------------------------------------

/// What the checkpoint advises next.
#[derive(Debug, Clone, PartialEq)]
pub(super) struct Route {
    pub(super) decision: RouteDecision,
    pub(super) recommended_tools: Vec<String>,
}

fn remedy_tools(decision: &str, converged: bool) -> &'static [&'static str] {
    match decision {
        "resolve_conflicts" | "verify" => &[VERIFY_THOUGHTS_TOOL],
        "resolve_assumptions" => &[SET_ASSUMPTION_STATUS_TOOL],
        "expand" => &[
            EXPAND_THOUGHTS_TOOL,
            ADD_THOUGHT_NODE_TOOL,
            APPLY_REASONING_PATTERN_TOOL,
        ],
        "score" => &[SCORE_THOUGHTS_TOOL, PRUNE_THOUGHTS_TOOL],
        _ if converged => &[CONSENSUS_ANSWER_TOOL],
        _ => &[CONVERGE_REASONING_TOOL, CONSENSUS_ANSWER_TOOL],
    }
}

/// The remedy for a quality component that falls short.
fn component_remedy(name: &str) -> &'static str {
    match name {
        "verification_coverage" => "verify",
        "assumption_coverage" => "resolve_assumptions",
        "diversity" => "expand",
        "scoring_coverage" => "score",
        "conflict_handling" => "resolve_conflicts",
        _ => "verify",
    }
}

/// The route rules, in order:
/// 1. a failed gate decides: conflicts (check 2) → `resolve_conflicts`, open critical claims
///    (check 1) → `verify`, blocking assumptions (check 3) → `resolve_assumptions`, diversity
///    below the floor (check 4) → `expand`;
/// 2. with every gate passing but the score below the threshold, the component with the largest
///    weighted shortfall decides (verification → `verify`, assumptions →
///    `resolve_assumptions`, diversity → `expand`, scoring → `score`, conflicts →
///    `resolve_conflicts`);
/// 3. otherwise `converge`.
///
/// Confidence (heuristic, not calibrated): for `converge`, the quality score; for a gate, 0.9
/// less 0.1 for each other failing gate (the order among failing gates is a policy choice), at
/// least 0.5; for a shortfall, 0.7 less 0.1 for each other component short by at least 0.05 of
/// weighted score, at least 0.4. `route_pending` says the route check (5) fails now and no
/// route is about to be recorded, so the tools include `run_reasoning_checkpoint`.
pub(super) fn route(a: &Assessment, d: &Deliberation, route_pending: bool) -> Route {
    let converged = d.status == "converged";
    let gate_remedies: Vec<(&str, &str)> = [
        (CHECK_SOURCE_CONFLICT, "resolve_conflicts"),
        (CHECK_CRITICAL_CLAIM, "verify"),
        (CHECK_ASSUMPTION, "resolve_assumptions"),
        (CHECK_DIVERSITY, "expand"),
    ]
    .into_iter()
    .filter(|(check, _)| !a.passed(check))
    .collect();
    let mut blocking_gaps: Vec<String> =
        gate_remedies.iter().map(|(c, _)| (*c).to_owned()).collect();
    if a.below_threshold() {
        blocking_gaps.push(GAP_QUALITY.to_owned());
    }
    let shortfalls: Vec<(&str, f64)> = {
        let mut s: Vec<(&str, f64)> = a
            .components
            .iter()
            .filter(|c| c.name != "critical_gates")
            .map(|c| (c.name.as_str(), c.weight * (1.0 - c.value)))
            .filter(|(_, short)| *short > 1e-9)
            .collect();
        // Largest shortfall first; ties keep component order (stable sort).
        s.sort_by(|x, y| y.1.total_cmp(&x.1));
        s
    };
    let (decision, confidence, rationale, others): (&str, f64, String, Vec<&str>) =
        if let Some((check, remedy)) = gate_remedies.first() {
            let confidence = (0.9 - 0.1 * count(gate_remedies.len() - 1)).max(0.5);
            (
                remedy,
                confidence,
                format!(
                    "policy-guard check {check} fails; failing gates are handled in the order \
                     source conflicts, critical claims, assumptions, diversity"
                ),
                gate_remedies[1..].iter().map(|(_, r)| *r).collect(),
            )
        } else if a.below_threshold() {
            let (name, _) = shortfalls
                .first()
                .copied()
                .unwrap_or(("verification_coverage", 0.0));
            let others_short = shortfalls[1.min(shortfalls.len())..]
                .iter()
                .filter(|(_, short)| *short >= 0.05)
                .count();
            (
                component_remedy(name),
                (0.7 - 0.1 * count(others_short)).max(0.4),
                format!(
                    "the gates pass but the quality score {:.3} is below the threshold {:.3}; \
                     {name} has the largest weighted shortfall",
                    a.quality_score, a.threshold
                ),
                shortfalls[1.min(shortfalls.len())..]
                    .iter()
                    .map(|(n, _)| component_remedy(n))
                    .collect(),
            )
        } else {
            (
                "converge",
                a.quality_score,
                if converged {
                    format!(
                        "checks 1–4 pass and the quality score {:.3} meets the threshold {:.3}; \
                         the deliberation has converged and may conclude",
                        a.quality_score, a.threshold
                    )
                } else {
                    format!(
                        "checks 1–4 pass and the quality score {:.3} meets the threshold {:.3}",
                        a.quality_score, a.threshold
                    )
                },
                Vec::new(),
            )
        };
    let mut tools: Vec<String> = Vec::new();
    let mut push = |t: &str| {
        if !tools.iter().any(|x| x == t) {
            tools.push(t.to_owned());
        }
    };
    if decision == "converge" {
        if !converged {
            push(CONVERGE_REASONING_TOOL);
            if a.governed {
                // Converging changes the graph, so the route must be decided again after it.
                push(RUN_REASONING_CHECKPOINT_TOOL);
            }
        } else if route_pending {
            push(RUN_REASONING_CHECKPOINT_TOOL);
        }
        push(CONSENSUS_ANSWER_TOOL);
    } else {
        for t in remedy_tools(decision, converged) {
            push(t);
        }
        for other in others {
            for t in remedy_tools(other, converged) {
                push(t);
            }
        }
        push(RUN_REASONING_CHECKPOINT_TOOL);
    }
    Route {
        decision: RouteDecision {
            decision: decision.to_owned(),
            confidence: (confidence * 100.0).round() / 100.0,
            rationale,
            blocking_gaps,
        },
        recommended_tools: tools,
    }
}

// ---------------------------------------------------------------------------------------------
// run_reasoning_checkpoint
// ---------------------------------------------------------------------------------------------

/// Arguments of `run_reasoning_checkpoint`.
#[derive(Debug, Clone, Deserialize, JsonSchema)]
pub struct CheckpointArgs {
    /// The quality the deliberation should reach, in [0, 1]; default by profile (quick 0.5,
    /// balanced 0.65, deep 0.75, paranoid 0.85).
    #[serde(default)]
    #[schemars(with = "f64", range(min = 0.0, max = 1.0))]
    pub quality_threshold: Option<f64>,
    /// The skeleton-of-thought phase this checkpoint is for (must exist).
    #[serde(default)]
    #[schemars(with = "String")]
    pub phase_id: Option<String>,
    /// Deliberation handle (`session_id` of an earlier response); omit for your current one.
    #[serde(default)]
    #[schemars(with = "String")]
    pub session_id: Option<String>,
}

/// Response of `run_reasoning_checkpoint`.
#[derive(Debug, Clone, Serialize, JsonSchema)]
pub struct CheckpointOutput {
    pub checkpoint_id: String,
    pub quality_score: f64,
    pub quality_tier: String,
    pub threshold: f64,
    pub components: Vec<QualityComponent>,
    /// Failed policy-guard checks 1–4, one entry per blocker, and `quality_threshold` when the
    /// score is below the threshold.
    pub blocking_gaps: Vec<BlockingGapOut>,
    /// The route this checkpoint decides (it satisfies the guard's route check until the
    /// deliberation next changes).
    pub route_decision: RouteDecisionOut,
    pub recommended_tools: Vec<String>,
    pub phase_id: Option<String>,
    pub analysis: AnalysisOut,
    pub session_id: String,
    pub deliberation_id: String,
}

pub(crate) fn decide_checkpoint(call: &mut Call<'_>) -> Outcome {
    let args: CheckpointArgs =
        call.parse("send {\"quality_threshold\": 0.8, \"phase_id\": \"sot-1\"} or nothing")?;
    let d = call.open_deliberation(args.session_id.as_deref())?;
    let threshold = threshold_or_refuse(d, args.quality_threshold)?;
    if let Some(phase) = &args.phase_id
        && d.phase(phase).is_none()
    {
        return Err(refuse(
            d,
            ErrorCode::UnknownPhase,
            format!("\"{phase}\" is not a skeleton phase of this deliberation"),
            "use a phase_id start_skeleton_of_thought returned, or omit phase_id",
        ));
    }
    let a = assess(call.app.deliberations(), d, threshold);
    let r = route(&a, d, false);
    let gaps = a.gaps();
    let checkpoint_id = format!("ckpt-{}", d.checkpoints.len() + 1);
    let analysis = call.analysis(
        &d.user_mode,
        "checkpoint.weighted_structural_quality",
        "heuristic",
        vec![d.root_node_id.clone()],
        &[
            "the quality score weighs structure (verification, assumptions, gates, diversity, \
             scoring, conflicts), not the meaning of the content",
            "the route confidence is a rule heuristic, not a calibrated probability",
        ],
    );
    let body = CheckpointOutput {
        checkpoint_id: checkpoint_id.clone(),
        quality_score: a.quality_score,
        quality_tier: a.quality_tier.to_owned(),
        threshold: a.threshold,
        components: a.components.clone(),
        blocking_gaps: gaps.iter().map(BlockingGapOut::from).collect(),
        route_decision: RouteDecisionOut::from(&r.decision),
        recommended_tools: r.recommended_tools.clone(),
        phase_id: args.phase_id.clone(),
        analysis: AnalysisOut::from(&analysis),
        session_id: d.session_id.to_string(),
        deliberation_id: d.deliberation_id.clone(),
    };
    let fact = Fact::CheckpointRecorded(CheckpointRecorded {
        session_id: d.session_id.clone(),
        checkpoint_id,
        quality_score: a.quality_score,
        quality_tier: a.quality_tier.to_owned(),
        route_decision: r.decision,
        blocking_gaps: gaps,
        recommended_tools: r.recommended_tools,
        phase_id: args.phase_id,
        analysis,
    });
    call.done(Some(d.session_id.clone()), vec![fact], body)
}
