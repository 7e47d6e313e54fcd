//! `consensus_answer`, the policy guard: concludes the deliberation only when all five checks of
//! the assessment pass, and otherwise refuses naming every blocker and its remedy.
//!
//! Must not know: whether the answer is true; the guard checks structure, and the confidence is
//! a heuristic.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

use super::{
    Assessment, CHECK_ASSUMPTION, CHECK_CRITICAL_CLAIM, CHECK_DIVERSITY, CHECK_SOURCE_CONFLICT,
    Check, CheckOut, assess, empty_text, guard_checks, ratio, round3,
};
use crate::app::ErrorCode;
use crate::app::Outcome;
use crate::app::call::{Call, PathStep, Refusal};
use crate::app::deliberation::context::refuse;
use crate::app::deliberation::injection::shown;
use crate::app::deliberation::outputs::{
    AnalysisOut, BlockingGapOut, RedactionOut, RouteDecisionOut,
};
use crate::events::Fact;
use crate::events::deliberation::{ConsensusReached, RouteDecision, ScannedText};
use crate::projections::Deliberation;

/// Arguments of `consensus_answer`.
#[derive(Debug, Clone, Deserialize, JsonSchema)]
pub struct ConsensusArgs {
    /// The answer to conclude with; without it, the convergence node's content is the answer.
    #[serde(default)]
    #[schemars(with = "String")]
    #[schemars(extend("x-text" = true))]
    pub answer: Option<String>,
    /// Deliberation handle (`session_id` of an earlier response); omit for your current one.
    #[serde(default)]
    #[schemars(with = "String")]
    pub session_id: Option<String>,
}

/// Response of `consensus_answer`.
#[derive(Debug, Clone, Serialize, JsonSchema)]
pub struct ConsensusOutput {
    /// The answer as stored (redacted if the injection scan matched).
    pub answer: String,
    /// `caller` (passed as answer) or `convergence` (the convergence node's content).
    pub answer_source: String,
    /// Heuristic confidence in [0, 1]: quality score × share of critical claims verified (1
    /// when there are none). Not a semantic calibration.
    pub confidence: f64,
    /// Always null: a model-backed provider would supply it; none is configured.
    pub semantic_confidence: Option<f64>,
    pub route_decision: RouteDecisionOut,
    /// The five policy-guard checks, all passed.
    pub checks: Vec<CheckOut>,
    pub quality_score: f64,
    pub quality_tier: String,
    /// What the answer must not rely on: refuted critical claims, retracted or falsified
    /// assumptions, claims still contested.
    pub safety_notes: Vec<String>,
    pub redactions: Vec<RedactionOut>,
    pub analysis: AnalysisOut,
    pub session_id: String,
    pub deliberation_id: String,
}

fn check_remedy(check: &str) -> &'static str {
    match check {
        CHECK_CRITICAL_CLAIM => "add evidence for the named critical claims with verify_thoughts",
        CHECK_SOURCE_CONFLICT => {
            "resolve the contested claims with verify_thoughts resolutions (outcome and \
             rationale)"
        }
        CHECK_ASSUMPTION => "validate or retract the named assumptions with set_assumption_status",
        CHECK_DIVERSITY => {
            "add thoughts on other branches (expand_thoughts, add_thought_node with a new \
             branch_id)"
        }
        _ => "run run_reasoning_checkpoint after the last change to emit a current route decision",
    }
}

fn safety_notes(d: &Deliberation) -> Vec<String> {
    let mut notes = Vec::new();
    for c in &d.claims {
        if c.criticality == "critical" && c.status == "refuted" {
            notes.push(format!(
                "{} (critical) was refuted: the answer must not rely on it",
                c.claim_id
            ));
        } else if c.status == "contested" {
            notes.push(format!(
                "{} ({}) is contested: its sources conflict and no resolution is recorded",
                c.claim_id, c.criticality
            ));
        }
    }
    for a in &d.assumptions {
        match a.status.as_str() {
            "retracted" => notes.push(format!(
                "{} ({}) was retracted: the answer must not rely on it",
                a.assumption_id, a.criticality
            )),
            "falsified" => notes.push(format!(
                "{} ({}) was falsified: the answer must not rely on it",
                a.assumption_id, a.criticality
            )),
            _ => {}
        }
    }
    notes.push(
        "the confidence is heuristic (quality score × share of critical claims verified), not a \
         semantic calibration; verification weighed only caller-supplied evidence"
            .to_owned(),
    );
    notes
}

/// Decides `consensus_answer`: refused, naming every blocker and its remedy, unless all five
/// policy-guard checks pass; else the answer (the caller's, or the convergence node's) is
/// recorded with a heuristic confidence and the deliberation concludes.
pub(crate) fn decide_consensus(call: &mut Call<'_>) -> Outcome {
    let args: ConsensusArgs = call.parse("send {\"answer\": \"…\"} or nothing")?;
    let d = call.open_deliberation(args.session_id.as_deref())?;
    let state = call.app.deliberations();
    if args.answer.as_deref().is_some_and(|s| s.trim().is_empty()) {
        return Err(empty_text(
            d,
            "answer",
            "the answer, or omit it to use the convergence node's content",
        ));
    }
    let a = assess(state, d, None);
    let failed: Vec<&Check> = a.checks.iter().filter(|c| !c.passed).collect();
    if !failed.is_empty() {
        return Err(blocked(d, &a, &failed));
    }
    let Answer {
        answer,
        source: answer_source,
        shown: shown_answer,
    } = the_answer(call, d, args.answer.as_deref())?;
    let confidence = confidence(d, a.quality_score);
    let decision = RouteDecision {
        decision: "answer".to_owned(),
        confidence,
        rationale: "all five policy-guard checks pass".to_owned(),
        blocking_gaps: Vec::new(),
    };
    let convergence = d.convergence_node_id.as_deref().and_then(|id| d.node(id));
    // The answer's provider is whoever wrote its text: the caller, or the convergence node's.
    let provider = match (answer_source, convergence) {
        ("convergence", Some(n)) => n.analysis.provider.clone(),
        _ => "caller".to_owned(),
    };
    let source_node_ids = convergence.map(|n| n.node_id.clone()).into_iter().collect();
    let analysis = call.analysis(
        &d.user_mode,
        "consensus.policy_guard",
        &provider,
        source_node_ids,
        &[
            "the guard checks structure (claim statuses, conflicts, assumptions, diversity, \
             route); it does not judge whether the answer is true",
            "verification weighed only caller-supplied evidence; no retrieval or model provider \
             is configured",
        ],
    );
    let redactions = answer.redactions.iter().map(RedactionOut::from).collect();
    let body = ConsensusOutput {
        answer: shown_answer,
        answer_source: answer_source.to_owned(),
        confidence,
        semantic_confidence: None,
        route_decision: RouteDecisionOut::from(&decision),
        checks: a.checks.iter().map(CheckOut::from).collect(),
        quality_score: a.quality_score,
        quality_tier: a.quality_tier.to_owned(),
        safety_notes: safety_notes(d),
        redactions,
        analysis: AnalysisOut::from(&analysis),
        session_id: d.session_id.to_string(),
        deliberation_id: d.deliberation_id.clone(),
    };
    let fact = Fact::ConsensusReached(ConsensusReached {
        session_id: d.session_id.clone(),
        answer,
        confidence,
        route_decision: decision,
        checks: guard_checks(&a),
        analysis,
    });
    call.done(Some(d.session_id.clone()), vec![fact], body)
}

/// The refusal of a consensus the guard blocks: each failed check with its blockers in the
/// message, their remedies in order as the suggestion, blockers and checks in the details.
fn blocked(d: &Deliberation, a: &Assessment, failed: &[&Check]) -> Refusal {
    let blockers: Vec<BlockingGapOut> = failed
        .iter()
        .flat_map(|c| c.blockers.iter().map(BlockingGapOut::from))
        .collect();
    let message = format!(
        "consensus is blocked by {} of the 5 policy-guard checks: {}",
        failed.len(),
        failed
            .iter()
            .map(|c| {
                let items: Vec<&str> = c.blockers.iter().map(|b| b.detail.as_str()).collect();
                format!("{} — {}", c.check, items.join("; "))
            })
            .collect::<Vec<_>>()
            .join(" | ")
    );
    let suggestion = failed
        .iter()
        .map(|c| check_remedy(c.check))
        .collect::<Vec<_>>()
        .join("; then ");
    let mut details = Map::new();
    details.insert(
        "blockers".into(),
        serde_json::to_value(blockers).unwrap_or(Value::Null),
    );
    details.insert(
        "checks".into(),
        serde_json::to_value(a.checks.iter().map(CheckOut::from).collect::<Vec<_>>())
            .unwrap_or(Value::Null),
    );
    let (rejection, session) = refuse(d, ErrorCode::ConsensusBlocked, message, suggestion);
    (rejection.with_details(details), session)
}

/// The answer a consensus records, and where it came from.
struct Answer {
    answer: ScannedText,
    /// `caller`, or `convergence` (the convergence node's content).
    source: &'static str,
    /// The answer as the response shows it.
    shown: String,
}

/// The caller's answer (scanned), else the convergence node's content; refused when neither
/// is there.
fn the_answer(
    call: &mut Call<'_>,
    d: &Deliberation,
    text: Option<&str>,
) -> Result<Answer, Refusal> {
    let state = call.app.deliberations();
    if let Some(text) = text {
        return Ok(Answer {
            answer: call.scanned("answer", &[PathStep::Key("answer")], text),
            source: "caller",
            shown: shown(text, "answer"),
        });
    }
    let content = d
        .convergence_node_id
        .as_deref()
        .and_then(|id| d.node(id))
        .and_then(|n| state.text(&n.content));
    let Some(content) = content else {
        return Err(refuse(
            d,
            ErrorCode::NoAnswer,
            "no answer was passed and the deliberation has no convergence node with \
             content",
            "run converge_reasoning first (its node's content becomes the answer), or \
             pass answer",
        ));
    };
    Ok(Answer {
        answer: ScannedText {
            text: call.derive_text(content),
            original: None,
            redactions: Vec::new(),
        },
        source: "convergence",
        shown: content.to_owned(),
    })
}

/// The heuristic confidence: the quality score times the share of critical claims verified
/// (1 with no critical claim), rounded to three decimals.
fn confidence(d: &Deliberation, quality_score: f64) -> f64 {
    let critical: Vec<_> = d
        .claims
        .iter()
        .filter(|c| c.criticality == "critical")
        .collect();
    let verified = critical.iter().filter(|c| c.status == "verified").count();
    let share = if critical.is_empty() {
        1.0
    } else {
        ratio(verified, critical.len())
    };
    round3(quality_score * share)
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::super::tests::{blocker_checks, message, quick, start, thought};
    use super::super::{
        CHECK_ASSUMPTION, CHECK_CRITICAL_CLAIM, CHECK_DIVERSITY, CHECK_ROUTE, CHECK_SOURCE_CONFLICT,
    };
    use crate::app::deliberation::testing::given;

    #[tokio::test]
    async fn an_open_critical_claim_alone_blocks_consensus() {
        let g = given();
        let s = quick(&g).await;
        g.ok(
            "verify_thoughts",
            json!({"claims": [{"text": "The log fits in memory", "criticality": "critical"}],
                   "generate_questions": false, "session_id": s}),
        )
        .await;
        let blocked = g
            .refused(
                "consensus_answer",
                json!({"answer": "Keep it in memory", "session_id": s}),
                "consensus_blocked",
            )
            .await;
        assert_eq!(blocker_checks(&blocked), [CHECK_CRITICAL_CLAIM]);
        assert_eq!(blocked["blockers"][0]["subject"], "claim-1");
        assert!(message(&blocked).contains("claim-1 (critical) is unverified"));
    }
    #[tokio::test]
    async fn a_source_conflict_alone_blocks_consensus_until_resolved() {
        let g = given();
        let s = quick(&g).await;
        let v = g
            .ok(
                "verify_thoughts",
                json!({"claims": [{"text": "fsync is durable on this disk", "criticality": "critical"}],
                       "evidence": [
                           {"source": "vendor datasheet", "tier": "primary",
                            "independence_group": "vendor", "supports_claims": ["claim-1"]},
                           {"source": "our power-cut test", "tier": "primary",
                            "independence_group": "lab", "refutes_claims": ["claim-1"]}],
                       "session_id": s}),
            )
            .await;
        assert_eq!(v["claims"][0]["status"], "contested");
        assert_eq!(v["conflicts"][0]["refuting_groups"], json!(["lab"]));
        let blocked = g
            .refused(
                "consensus_answer",
                json!({"answer": "Trust fsync", "session_id": s}),
                "consensus_blocked",
            )
            .await;
        assert_eq!(blocker_checks(&blocked), [CHECK_SOURCE_CONFLICT]);
        assert!(message(&blocked).contains("claim-1 (critical) is contested"));

        g.refused(
            "verify_thoughts",
            json!({"resolutions": [{"claim_id": "claim-1", "outcome": "refuted",
                                    "rationale": "  "}], "session_id": s}),
            "rationale_required",
        )
        .await;
        let r = g
            .ok(
                "verify_thoughts",
                json!({"resolutions": [{"claim_id": "claim-1", "outcome": "refuted",
                                        "rationale": "the lab test reproduced data loss"}],
                       "session_id": s}),
            )
            .await;
        assert_eq!(r["claims"][0]["status"], "refuted");
        assert_eq!(r["claims"][0]["previous_status"], "contested");
        let done = g
            .ok(
                "consensus_answer",
                json!({"answer": "Do not rely on fsync alone", "session_id": s}),
            )
            .await;
        assert_eq!(done["answer_source"], "caller");
        // A refuted critical claim is resolved, but the answer is warned off it, and it counts
        // against the confidence (no critical claim verified).
        assert!(
            done["safety_notes"][0]
                .as_str()
                .unwrap_or_default()
                .contains("claim-1")
        );
        assert_eq!(done["confidence"], 0.0);
    }
    #[tokio::test]
    async fn a_blocking_assumption_alone_blocks_consensus() {
        let g = given();
        let s = quick(&g).await;
        g.ok(
            "record_assumption",
            json!({"text": "Clocks are synchronised", "criticality": "high", "session_id": s}),
        )
        .await;
        // Unverifiable assumptions never block.
        let free = g
            .ok(
                "record_assumption",
                json!({"text": "Users prefer speed", "criticality": "critical",
                       "verifiable": false, "session_id": s}),
            )
            .await;
        assert_eq!(free["blocking"], false);
        let blocked = g
            .refused(
                "consensus_answer",
                json!({"answer": "Use timestamps", "session_id": s}),
                "consensus_blocked",
            )
            .await;
        assert_eq!(blocker_checks(&blocked), [CHECK_ASSUMPTION]);
        assert!(message(&blocked).contains("asm-1 (high, verifiable) is unverified"));

        // Falsified still blocks; retracted does not.
        g.ok(
            "set_assumption_status",
            json!({"assumption_id": "asm-1", "status": "falsified",
                   "rationale": "NTP drift observed", "session_id": s}),
        )
        .await;
        let blocked = g
            .refused(
                "consensus_answer",
                json!({"answer": "Use timestamps", "session_id": s}),
                "consensus_blocked",
            )
            .await;
        assert!(message(&blocked).contains("asm-1 (high, verifiable) is falsified"));
        let retracted = g
            .ok(
                "set_assumption_status",
                json!({"assumption_id": "asm-1", "status": "retracted", "session_id": s}),
            )
            .await;
        assert_eq!(retracted["previous_status"], "falsified");
        let done = g
            .ok(
                "consensus_answer",
                json!({"answer": "Use sequence numbers", "session_id": s}),
            )
            .await;
        assert!(
            done["safety_notes"]
                .as_array()
                .expect("notes")
                .iter()
                .any(|n| n
                    .as_str()
                    .unwrap_or_default()
                    .contains("asm-1 (high) was retracted"))
        );
    }
    #[tokio::test]
    async fn diversity_below_the_floor_alone_blocks_a_deliberate_mode() {
        let g = given();
        let s = start(&g, "Explore", "balanced").await;
        thought(&g, &s, "a", "One idea.").await;
        thought(&g, &s, "a", "The same idea, restated.").await;
        let blocked = g
            .refused(
                "consensus_answer",
                json!({"answer": "The idea", "session_id": s}),
                "consensus_blocked",
            )
            .await;
        assert_eq!(blocker_checks(&blocked), [CHECK_DIVERSITY]);
        assert!(message(&blocked).contains("1 distinct branch(es)"));
        assert!(message(&blocked).contains("floor is 2"));
        thought(&g, &s, "b", "Another idea.").await;
        g.ok(
            "consensus_answer",
            json!({"answer": "The better idea", "session_id": s}),
        )
        .await;
    }
    #[tokio::test]
    async fn a_missing_or_stale_route_alone_blocks_a_governed_mode() {
        let g = given();
        let s = start(&g, "Test", "quick").await;
        thought(&g, &s, "main", "A first thought.").await;
        let blocked = g
            .refused(
                "consensus_answer",
                json!({"answer": "Answer", "session_id": s}),
                "consensus_blocked",
            )
            .await;
        assert_eq!(blocker_checks(&blocked), [CHECK_ROUTE]);
        assert!(message(&blocked).contains("no route decision has been recorded"));

        g.ok("run_reasoning_checkpoint", json!({"session_id": s}))
            .await;
        thought(&g, &s, "main", "A later thought.").await;
        let stale = g
            .refused(
                "consensus_answer",
                json!({"answer": "Answer", "session_id": s}),
                "consensus_blocked",
            )
            .await;
        assert_eq!(blocker_checks(&stale), [CHECK_ROUTE]);
        assert_eq!(stale["blockers"][0]["subject"], "ckpt-1");
        assert!(message(&stale).contains("ckpt-1"));
        assert!(message(&stale).contains("stale"));

        g.ok("run_reasoning_checkpoint", json!({"session_id": s}))
            .await;
        g.ok(
            "consensus_answer",
            json!({"answer": "Answer", "session_id": s}),
        )
        .await;
    }
}
