//! `evaluate_reasoning_quality`: a read-only look at the assessment (score, components, the five
//! checks), the structural biases it suggests and the tools to use next. Records nothing.
//!
//! Must not know: the meaning of the content; every bias is a structural signal.

use std::collections::{BTreeMap, BTreeSet};

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use super::assess::latest_route;
use super::checkpoint::route;
use super::claims::{recorded_evidence, tallies};
use super::{
    Assessment, CHECK_ROUTE, CheckOut, QualityComponent, assess, is_candidate, is_high, ratio,
};
use crate::app::Outcome;
use crate::app::call::Call;
use crate::app::deliberation::outputs::AnalysisOut;
use crate::projections::Deliberation;

/// Arguments of `evaluate_reasoning_quality`.
#[derive(Debug, Clone, Deserialize, JsonSchema)]
pub struct EvaluateArgs {
    /// Deliberation handle (`session_id` of an earlier response); omit for your current one.
    #[serde(default)]
    #[schemars(with = "String")]
    pub session_id: Option<String>,
}

/// A bias the structure suggests.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, JsonSchema)]
pub struct BiasOut {
    /// `confirmation_bias`, `anchoring`, `premature_convergence`, `single_source_reliance` or
    /// `unexamined_assumptions`.
    pub bias: String,
    /// The ids that show it (claims, nodes, evidence, assumptions, routes).
    pub evidence: Vec<String>,
    /// What was found, in plain words.
    pub detail: String,
    pub suggestion: String,
}

/// Response of `evaluate_reasoning_quality`.
#[derive(Debug, Clone, Serialize, JsonSchema)]
pub struct EvaluateOutput {
    /// Weighted structural quality in [0, 1] (not a judgement of meaning).
    pub quality_score: f64,
    /// `low` (< 0.4), `moderate` (< 0.65), `high` (< 0.85) or `excellent`.
    pub quality_tier: String,
    /// The profile's default convergence threshold.
    pub threshold: f64,
    pub components: Vec<QualityComponent>,
    pub biases: Vec<BiasOut>,
    /// The five policy-guard checks as they stand now.
    pub gates: Vec<CheckOut>,
    pub recommended_tools: Vec<String>,
    pub analysis: AnalysisOut,
    pub session_id: String,
    pub deliberation_id: String,
}

/// Biases read from structure alone:
/// - `confirmation_bias`: a high or critical claim supported by exactly one independence group
///   and never refuted;
/// - `anchoring`: in deliberate mode, with at least 3 live candidate nodes, one branch holds
///   more than 70% of them;
/// - `premature_convergence`: in deliberate mode, converged (or routed to converge) with fewer
///   branches than the floor;
/// - `single_source_reliance`: all evidence sits in one independence group;
/// - `unexamined_assumptions`: high or critical assumptions still unverified.
fn biases(d: &Deliberation, a: &Assessment) -> Vec<BiasOut> {
    let mut out = Vec::new();
    let tallies = tallies(recorded_evidence(d));
    let one_sided: Vec<String> = d
        .claims
        .iter()
        .filter(|c| is_high(&c.criticality))
        .filter(|c| {
            tallies
                .get(&c.claim_id)
                .is_some_and(|t| t.support.len() == 1 && t.refute.is_empty())
        })
        .map(|c| c.claim_id.clone())
        .collect();
    if !one_sided.is_empty() {
        out.push(BiasOut {
            bias: "confirmation_bias".to_owned(),
            detail: format!(
                "{} high or critical claim(s) rest on one independence group and were never \
                 challenged by refuting evidence",
                one_sided.len()
            ),
            evidence: one_sided,
            suggestion: "look for an independent source, and for evidence that could refute \
                         the claim; record either with verify_thoughts"
                .to_owned(),
        });
    }
    let live: Vec<_> = d.live_nodes().filter(|n| is_candidate(&n.kind)).collect();
    if a.deliberate && live.len() >= 3 {
        let mut by_branch: BTreeMap<&str, Vec<String>> = BTreeMap::new();
        for n in &live {
            by_branch
                .entry(n.branch_id.as_str())
                .or_default()
                .push(n.node_id.clone());
        }
        if let Some((branch, ids)) = by_branch.iter().max_by_key(|(_, ids)| ids.len())
            && ratio(ids.len(), live.len()) > 0.7
        {
            out.push(BiasOut {
                bias: "anchoring".to_owned(),
                evidence: ids.clone(),
                detail: format!(
                    "branch \"{branch}\" holds {} of {} live candidate nodes",
                    ids.len(),
                    live.len()
                ),
                suggestion: "explore alternatives on other branches (expand_thoughts, \
                             add_thought_node with a new branch_id, apply_reasoning_pattern)"
                    .to_owned(),
            });
        }
    }
    let routed_to_converge = latest_route(d).filter(|(_, decision, _)| *decision == "converge");
    if a.deliberate
        && a.branches < a.floor
        && (d.status == "converged" || routed_to_converge.is_some())
    {
        let evidence = d
            .convergence_node_id
            .clone()
            .into_iter()
            .chain(routed_to_converge.map(|(id, _, _)| id.to_owned()))
            .collect();
        out.push(BiasOut {
            bias: "premature_convergence".to_owned(),
            evidence,
            detail: format!(
                "converging with {} branch(es) for a diversity floor of {}",
                a.branches, a.floor
            ),
            suggestion: "widen the search before concluding: add thoughts on other branches"
                .to_owned(),
        });
    }
    let groups: BTreeSet<&str> = d
        .evidence
        .iter()
        .map(|e| e.independence_group.as_str())
        .collect();
    if groups.len() == 1 {
        out.push(BiasOut {
            bias: "single_source_reliance".to_owned(),
            evidence: d.evidence.iter().map(|e| e.evidence_id.clone()).collect(),
            detail: format!(
                "all {} piece(s) of evidence come from one independence group",
                d.evidence.len()
            ),
            suggestion: "add evidence from an independent source with verify_thoughts".to_owned(),
        });
    }
    let unexamined: Vec<String> = d
        .assumptions
        .iter()
        .filter(|x| is_high(&x.criticality) && x.status == "unverified")
        .map(|x| x.assumption_id.clone())
        .collect();
    if !unexamined.is_empty() {
        out.push(BiasOut {
            bias: "unexamined_assumptions".to_owned(),
            detail: format!(
                "{} high or critical assumption(s) are still unverified",
                unexamined.len()
            ),
            evidence: unexamined,
            suggestion: "validate, falsify or retract them with set_assumption_status".to_owned(),
        });
    }
    out
}

pub(crate) fn decide_evaluate(call: &mut Call<'_>) -> Outcome {
    let args: EvaluateArgs = call.parse("send {\"session_id\": \"…\"} or nothing")?;
    let d = call.deliberation(args.session_id.as_deref())?;
    let a = assess(call.app.deliberations(), d, None);
    let route_pending = !a.passed(CHECK_ROUTE);
    let r = route(&a, d, route_pending);
    let analysis = call.analysis(
        &d.user_mode,
        "evaluate.structural_quality",
        "heuristic",
        vec![d.root_node_id.clone()],
        &[
            "scores the deliberation's structure (coverage of verification, assumptions, \
             scoring, conflicts; branch diversity), not the meaning of its content",
            "biases are structural signals; none is a finding about the reasoning's content",
        ],
    );
    let body = EvaluateOutput {
        quality_score: a.quality_score,
        quality_tier: a.quality_tier.to_owned(),
        threshold: a.threshold,
        biases: biases(d, &a),
        gates: a.checks.iter().map(CheckOut::from).collect(),
        components: a.components,
        recommended_tools: r.recommended_tools,
        analysis: AnalysisOut::from(&analysis),
        session_id: d.session_id.to_string(),
        deliberation_id: d.deliberation_id.clone(),
    };
    call.done(Some(d.session_id.clone()), Vec::new(), body)
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::super::tests::{start, thought};
    use crate::app::deliberation::testing::given;

    #[tokio::test]
    async fn evaluation_reads_biases_from_structure_and_records_nothing() {
        let g = given();
        let s = start(&g, "Explore", "balanced").await;
        for content in ["One", "Two", "Three"] {
            thought(&g, &s, "a", content).await;
        }
        g.ok(
            "record_assumption",
            json!({"text": "Load stays flat", "criticality": "critical", "session_id": s}),
        )
        .await;
        g.ok(
            "verify_thoughts",
            json!({"claims": [{"text": "It scales", "criticality": "high"}],
                   "evidence": [{"source": "blog", "tier": "tertiary",
                                 "independence_group": "blog", "supports_claims": ["claim-1"]}],
                   "session_id": s}),
        )
        .await;
        let eval = g
            .ok("evaluate_reasoning_quality", json!({"session_id": s}))
            .await;
        let biases: Vec<&str> = eval["biases"]
            .as_array()
            .expect("biases")
            .iter()
            .filter_map(|b| b["bias"].as_str())
            .collect();
        assert_eq!(
            biases,
            [
                "confirmation_bias",
                "anchoring",
                "single_source_reliance",
                "unexamined_assumptions"
            ]
        );
        assert_eq!(eval["biases"][0]["evidence"], json!(["claim-1"]));
        assert_eq!(eval["biases"][3]["evidence"], json!(["asm-1"]));
        let checkpoints = g
            .read(move |app| {
                app.deliberations()
                    .all()
                    .map(|d| d.checkpoints.len() + d.routes.len())
                    .sum::<usize>()
            })
            .await;
        assert_eq!(checkpoints, 0);
    }
}
