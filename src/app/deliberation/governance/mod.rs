//! Governance of a deliberation: the assumption ledger (`record_assumption`,
//! `set_assumption_status`), verification of claims against caller-supplied evidence
//! (`verify_thoughts`), the quality assessment and its gates (`evaluate_reasoning_quality`,
//! `run_reasoning_checkpoint`), convergence (`converge_reasoning`) and the consensus policy guard
//! (`consensus_answer`).
//!
//! [`assess()`] is the one place the quality score, its tier and the five policy-guard checks are
//! computed; it is pure (a deliberation in, an assessment out) so resources and other tools show
//! the same numbers the guard acts on. Owns: the claim-status rules, what makes an assumption
//! blocking, the quality weights, the checkpoint's route rules. Must not know: MCP, storage, the
//! clock. Nothing here judges meaning: statuses follow the tiers and independence groups the
//! caller declared, and the scores are structural.
//!
//! Layout. This module holds the rules every part shares (candidate node kinds, evidence tiers,
//! each profile's diversity floor and threshold, what makes an assumption blocking, the names of
//! the five checks) and the argument checks the tools share. Pure rules: `claims` (claim status
//! from tiered, independent evidence; the verification matrix; the question templates) and
//! `assess` (quality score, components, the five checks, gaps). One module per tool family:
//! `assumptions` (the ledger), `verify` (`verify_thoughts`), `evaluate` (the evaluation and its
//! structural biases), `checkpoint` (the route rules and `run_reasoning_checkpoint`), `converge`
//! and `consensus` (the policy guard). Every item keeps its path here: the modules are private
//! and re-exported below.

mod assess;
mod assumptions;
mod checkpoint;
mod claims;
mod consensus;
mod converge;
mod evaluate;
mod verify;

#[cfg(test)]
mod tests;

use schemars::JsonSchema;
use serde::Serialize;

use crate::app::ErrorCode;
use crate::app::call::Refusal;
use crate::app::deliberation::context::refuse;
use crate::app::deliberation::graph_edit::GraphEdit;
use crate::app::deliberation::outputs::BlockingGapOut;
use crate::events::deliberation::GuardCheck;
use crate::projections::Deliberation;

pub use self::assess::QualityComponent;
pub(crate) use self::assess::{Assessment, Check, assess};
pub use self::assumptions::{
    AssumptionOut, AssumptionStatusArgs, AssumptionStatusOutput, BlockingAssumptionOut,
    RecordAssumptionArgs, RecordAssumptionOutput,
};
pub(crate) use self::assumptions::{decide_assumption_status, decide_record_assumption};
pub(crate) use self::checkpoint::decide_checkpoint;
pub use self::checkpoint::{CheckpointArgs, CheckpointOutput};
pub use self::claims::{MatrixCell, MatrixRow, VerificationMatrix};
pub(crate) use self::claims::{Tally, claim_status};
pub(crate) use self::consensus::decide_consensus;
pub use self::consensus::{ConsensusArgs, ConsensusOutput};
pub(crate) use self::converge::decide_converge;
pub use self::converge::{ConvergeArgs, ConvergeOutput};
pub(crate) use self::evaluate::decide_evaluate;
pub use self::evaluate::{BiasOut, EvaluateArgs, EvaluateOutput};
pub use self::verify::{
    ClaimArg, ClaimOut, ConflictOut, EvidenceArg, EvidenceOut, QuestionOut, ResolutionArg,
    VerifyArgs, VerifyOutput,
};
pub(crate) use self::verify::{decide_verify, plan_verify};

// ---------------------------------------------------------------------------------------------
// Shared rules
// ---------------------------------------------------------------------------------------------

/// How critical an assumption may be.
pub const CRITICALITIES: &[&str] = &["low", "medium", "high", "critical"];

/// Node kinds that are candidate reasoning (what diversity, scoring and convergence look at);
/// the goal, skeleton outlines, merges, stage markers and convergence nodes are not.
const CANDIDATE_KINDS: &[&str] = &[
    "thought",
    "expansion",
    "template",
    "pattern",
    "refinement",
    "elaboration",
];

/// Evidence tiers and their weights.
const TIERS: &[(&str, f64)] = &[("primary", 1.0), ("secondary", 0.6), ("tertiary", 0.3)];

/// The five policy-guard checks, in order.
pub(crate) const CHECK_CRITICAL_CLAIM: &str = "no_unresolved_critical_claim";
pub(crate) const CHECK_SOURCE_CONFLICT: &str = "no_unhandled_source_conflict";
pub(crate) const CHECK_ASSUMPTION: &str = "no_blocking_assumption";
pub(crate) const CHECK_DIVERSITY: &str = "diversity_floor";
pub(crate) const CHECK_ROUTE: &str = "route_decision_emitted";
/// The gap a checkpoint or convergence adds when the quality score is below the threshold.
pub(crate) const GAP_QUALITY: &str = "quality_threshold";

/// Per-call ceilings on list arguments (a call asking for more is refused, `too_many_items`).
const MAX_CLAIMS_PER_CALL: usize = 32;
const MAX_EVIDENCE_PER_CALL: usize = 64;
const MAX_IDS: usize = 64;

/// The minimum number of distinct branches among live candidate nodes, by profile.
pub(crate) fn diversity_floor(profile: &str) -> usize {
    match profile {
        "quick" => 1,
        "deep" | "paranoid" => 3,
        _ => 2,
    }
}

/// The quality threshold convergence needs when the caller names none, by profile.
pub(crate) fn default_threshold(profile: &str) -> f64 {
    match profile {
        "quick" => 0.5,
        "deep" => 0.75,
        "paranoid" => 0.85,
        _ => 0.65,
    }
}

/// Deliberate mode: any internal method other than linear `cot`.
pub(crate) fn is_deliberate(d: &Deliberation) -> bool {
    d.internal_method != "cot"
}

/// Governed mode: the `reasonkit` method (Test) or the paranoid profile.
pub(crate) fn is_governed(d: &Deliberation) -> bool {
    d.internal_method == "reasonkit" || d.profile == "paranoid"
}

fn is_candidate(kind: &str) -> bool {
    CANDIDATE_KINDS.contains(&kind)
}

fn tier_weight(tier: &str) -> Option<f64> {
    TIERS.iter().find(|(t, _)| *t == tier).map(|(_, w)| *w)
}

fn is_high(criticality: &str) -> bool {
    matches!(criticality, "high" | "critical")
}

/// Whether an assumption blocks convergence and consensus: high or critical, verifiable, and
/// not (yet) shown to hold.
pub(crate) fn assumption_blocks(criticality: &str, verifiable: bool, status: &str) -> bool {
    is_high(criticality) && verifiable && matches!(status, "unverified" | "falsified")
}

/// `x` to three decimals; never `-0` (an empty sum of weights is `-0.0` in Rust, which a
/// client would read back as "-0").
fn round3(x: f64) -> f64 {
    (x * 1000.0).round() / 1000.0 + 0.0
}

#[cfg(test)]
#[test]
fn no_weight_is_negative_zero() {
    let none: f64 = std::iter::empty::<f64>().sum();
    assert!(round3(none).is_sign_positive());
    assert_eq!(serde_json::json!(round3(-0.0004)).to_string(), "0.0");
}

/// A count as a float (counts here are far below 2³², so exact).
fn count(n: usize) -> f64 {
    u32::try_from(n).map_or(f64::from(u32::MAX), f64::from)
}

fn ratio(part: usize, whole: usize) -> f64 {
    count(part) / count(whole)
}

/// Tier by score: below 0.4 low, below 0.65 moderate, below 0.85 high, else excellent.
pub(crate) fn quality_tier(score: f64) -> &'static str {
    if score < 0.4 {
        "low"
    } else if score < 0.65 {
        "moderate"
    } else if score < 0.85 {
        "high"
    } else {
        "excellent"
    }
}

// ---------------------------------------------------------------------------------------------
// Shared argument checks and response shapes
// ---------------------------------------------------------------------------------------------

fn criticality_or_refuse(
    d: &Deliberation,
    raw: Option<&str>,
    field: &str,
) -> Result<String, Refusal> {
    let value = raw.map_or("medium".to_owned(), |c| c.trim().to_ascii_lowercase());
    if CRITICALITIES.contains(&value.as_str()) {
        Ok(value)
    } else {
        Err(refuse(
            d,
            ErrorCode::InvalidCriticality,
            format!("{field} \"{value}\" is not a criticality"),
            "use low, medium, high or critical (default medium)",
        ))
    }
}

fn threshold_or_refuse(d: &Deliberation, raw: Option<f64>) -> Result<Option<f64>, Refusal> {
    match raw {
        Some(t) if !(t.is_finite() && (0.0..=1.0).contains(&t)) => Err(refuse(
            d,
            ErrorCode::InvalidThreshold,
            format!("quality_threshold {t} is not between 0 and 1"),
            format!(
                "pass a number from 0 to 1, or omit it for the {} profile's {}",
                d.profile,
                default_threshold(&d.profile)
            ),
        )),
        other => Ok(other),
    }
}

fn too_many(d: &Deliberation, field: &str, n: usize, max: usize) -> Refusal {
    refuse(
        d,
        ErrorCode::TooManyItems,
        format!("{field} holds {n} items; at most {max} are accepted in one call"),
        "split them over several calls",
    )
}

fn empty_text(d: &Deliberation, field: &str, what: &str) -> Refusal {
    refuse(
        d,
        ErrorCode::InvalidArguments,
        format!("{field} is empty"),
        format!("send {what}"),
    )
}

fn require_nodes(d: &Deliberation, ids: &[String], role: &str) -> Result<(), Refusal> {
    let graph = GraphEdit::new(d);
    ids.iter().try_for_each(|id| graph.require_node(id, role))
}

/// A policy-guard check as responses show it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, JsonSchema)]
pub struct CheckOut {
    /// `no_unresolved_critical_claim`, `no_unhandled_source_conflict`, `no_blocking_assumption`,
    /// `diversity_floor` or `route_decision_emitted`.
    pub check: String,
    pub passed: bool,
    pub detail: String,
    /// What blocks, one entry per claim, assumption or shortfall (empty when passed).
    pub blockers: Vec<BlockingGapOut>,
}

impl From<&Check> for CheckOut {
    fn from(c: &Check) -> Self {
        Self {
            check: c.check.to_owned(),
            passed: c.passed,
            detail: c.detail.clone(),
            blockers: c.blockers.iter().map(BlockingGapOut::from).collect(),
        }
    }
}

fn guard_checks(a: &Assessment) -> Vec<GuardCheck> {
    a.checks
        .iter()
        .map(|c| GuardCheck {
            check: c.check.to_owned(),
            passed: c.passed,
            detail: c.detail.clone(),
        })
        .collect()
}
