//! The assessment of a deliberation: the quality score with its weighted components and tier,
//! the five policy-guard checks with their blockers, and the gaps convergence and checkpoints
//! report. [`assess`] is the one place these are computed.
//!
//! Pure: it reads the deliberation alone. Must not know: tool arguments, refusals, facts, what a
//! caller does with the result.

use std::collections::{BTreeSet, HashMap};

use schemars::JsonSchema;
use serde::Serialize;

use super::claims::{recorded_evidence, tallies};
use super::{
    CHECK_ASSUMPTION, CHECK_CRITICAL_CLAIM, CHECK_DIVERSITY, CHECK_ROUTE, CHECK_SOURCE_CONFLICT,
    GAP_QUALITY, Tally, assumption_blocks, default_threshold, diversity_floor, is_candidate,
    is_deliberate, is_governed, is_high, quality_tier, ratio, round3,
};
use crate::events::deliberation::BlockingGap;
use crate::projections::deliberation::Node;
use crate::projections::{Deliberation, DeliberationState};

/// Weights of the quality components (they sum to 1). Verification and the critical gates
/// weigh most because they are what the policy guard enforces; conflict handling and
/// assumptions next; diversity and scoring least, as they measure process, not grounding.
const WEIGHTS: &[(&str, f64)] = &[
    ("verification_coverage", 0.25),
    ("assumption_coverage", 0.15),
    ("critical_gates", 0.25),
    ("diversity", 0.10),
    ("scoring_coverage", 0.10),
    ("conflict_handling", 0.15),
];

/// One component of the quality score.
#[derive(Debug, Clone, PartialEq, Serialize, JsonSchema)]
pub struct QualityComponent {
    /// `verification_coverage`, `assumption_coverage`, `critical_gates`, `diversity`,
    /// `scoring_coverage` or `conflict_handling`.
    pub name: String,
    /// Its weight in the score.
    pub weight: f64,
    /// Its value in [0, 1].
    pub value: f64,
    /// How the value was counted, in plain words.
    pub detail: String,
}

/// One policy-guard check as it stands.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Check {
    pub check: &'static str,
    pub passed: bool,
    pub detail: String,
    /// What blocks (empty when passed); `check` of each is this check's name.
    pub blockers: Vec<BlockingGap>,
}

/// The quality of a deliberation and its policy-guard checks, as [`assess`] finds them.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Assessment {
    /// Weighted mean of the components, in [0, 1], rounded to three decimals.
    pub quality_score: f64,
    pub quality_tier: &'static str,
    /// The threshold asked for, or the profile's.
    pub threshold: f64,
    pub components: Vec<QualityComponent>,
    /// The five checks, in order.
    pub checks: Vec<Check>,
    pub deliberate: bool,
    pub governed: bool,
    /// Distinct branches among live candidate nodes.
    pub branches: usize,
    /// The diversity floor of the profile.
    pub floor: usize,
}

impl Assessment {
    pub fn check(&self, name: &str) -> Option<&Check> {
        self.checks.iter().find(|c| c.check == name)
    }

    pub(super) fn passed(&self, name: &str) -> bool {
        self.check(name).is_some_and(|c| c.passed)
    }

    /// Checks 1–3 (claims, conflicts, assumptions): what convergence requires.
    pub fn critical_gates_pass(&self) -> bool {
        [
            CHECK_CRITICAL_CLAIM,
            CHECK_SOURCE_CONFLICT,
            CHECK_ASSUMPTION,
        ]
        .iter()
        .all(|c| self.passed(c))
    }

    pub fn below_threshold(&self) -> bool {
        self.quality_score < self.threshold
    }

    pub(super) fn quality_gap(&self) -> Option<BlockingGap> {
        self.below_threshold().then(|| BlockingGap {
            check: GAP_QUALITY.to_owned(),
            subject: None,
            detail: format!(
                "quality score {:.3} is below the threshold {:.3}",
                self.quality_score, self.threshold
            ),
        })
    }

    /// What blocks convergence and consensus short of the route decision: every blocker of
    /// checks 1–4, then `quality_threshold` when the score is below the threshold. (Check 5 is
    /// left out: a checkpoint emits the route decision itself.)
    pub fn gaps(&self) -> Vec<BlockingGap> {
        let mut gaps: Vec<BlockingGap> = self
            .checks
            .iter()
            .filter(|c| c.check != CHECK_ROUTE)
            .flat_map(|c| c.blockers.iter().cloned())
            .collect();
        gaps.extend(self.quality_gap());
        gaps
    }
}

/// The latest route decision by seq: its id (`route-N` or `ckpt-N`), decision and seq.
pub(super) fn latest_route(d: &Deliberation) -> Option<(&str, &str, u64)> {
    let routed = d.routes.last().map(|r| {
        (
            r.route_id.as_str(),
            r.decision.decision.as_str(),
            r.created.seq,
        )
    });
    let gated = d.checkpoints.last().map(|c| {
        (
            c.checkpoint_id.as_str(),
            c.route_decision.decision.as_str(),
            c.created.seq,
        )
    });
    match (routed, gated) {
        (Some(a), Some(b)) => Some(if a.2 >= b.2 { a } else { b }),
        (a, b) => a.or(b),
    }
}

fn blocker(check: &str, subject: Option<&str>, detail: String) -> BlockingGap {
    BlockingGap {
        check: check.to_owned(),
        subject: subject.map(str::to_owned),
        detail,
    }
}

fn tally_detail(t: Option<&Tally>, criticality: &str) -> String {
    let bar = if is_high(criticality) {
        "a support of at least 1.0 from at least 2 independent groups"
    } else {
        "one group weighing at least 0.6"
    };
    match t {
        Some(t) if t.has_evidence() => format!(
            "support {:.1} from {} group(s), refutation {:.1} from {} group(s); verifying needs \
             {bar}",
            t.support_weight(),
            t.support.len(),
            t.refute_weight(),
            t.refute.len()
        ),
        _ => format!("no evidence yet; verifying needs {bar}"),
    }
}

/// Assesses a deliberation: the quality score with its components and tier, and the five
/// policy-guard checks as they stand. Pure: it reads `d` alone (`state` is taken so callers
/// that show texts can pass what they hold; no number depends on a text). `threshold` defaults
/// to the profile's.
///
/// Components, each in [0, 1] (weights in [`WEIGHTS`]):
/// - verification coverage: claims verified or refuted / claims (no claims: 1, or 0 in governed
///   mode, where claims are expected);
/// - assumption coverage: assumptions no longer `unverified` / assumptions (1 if none);
/// - critical gates: 1 when checks 1–3 pass, else 0;
/// - diversity: min(1, branches / floor), the floor being the profile's in deliberate mode and
///   1 otherwise;
/// - scoring coverage: scored live candidate nodes / live candidate nodes (0 when there are
///   none: nothing has been deliberated);
/// - conflict handling: claims with a source conflict that carry a resolution / claims with a
///   source conflict (1 if none).
pub(crate) fn assess(
    _state: &DeliberationState,
    d: &Deliberation,
    threshold: Option<f64>,
) -> Assessment {
    let governed = is_governed(d);
    let deliberate = is_deliberate(d);
    let floor = diversity_floor(&d.profile);
    let tallies = tallies(recorded_evidence(d));
    let live_candidates: Vec<&Node> = d.live_nodes().filter(|n| is_candidate(&n.kind)).collect();
    let branches = live_candidates
        .iter()
        .map(|n| n.branch_id.as_str())
        .collect::<BTreeSet<_>>()
        .len();
    let checks = vec![
        check_critical_claims(d, &tallies),
        check_source_conflicts(d, &tallies),
        check_assumptions(d),
        check_diversity(d, deliberate, floor, branches, live_candidates.len()),
        check_route(d, governed),
    ];
    let gates = checks[..3].iter().all(|c| c.passed);
    let effective_floor = if deliberate { floor } else { 1 };
    let values = [
        verification_value(d, governed),
        assumption_value(d),
        (
            if gates { 1.0 } else { 0.0 },
            if gates {
                "checks 1–3 pass".to_owned()
            } else {
                "a check among 1–3 fails".to_owned()
            },
        ),
        (
            ratio(branches, effective_floor).min(1.0),
            format!("{branches} branch(es) for a floor of {effective_floor}"),
        ),
        scoring_value(&live_candidates),
        conflict_value(d, &tallies),
    ];
    let components: Vec<QualityComponent> = WEIGHTS
        .iter()
        .zip(values)
        .map(|((name, weight), (value, detail))| QualityComponent {
            name: (*name).to_owned(),
            weight: *weight,
            value: round3(value),
            detail,
        })
        .collect();
    let quality_score = round3(
        components
            .iter()
            .map(|c| c.weight * c.value)
            .sum::<f64>()
            .clamp(0.0, 1.0),
    );
    Assessment {
        quality_score,
        quality_tier: quality_tier(quality_score),
        threshold: threshold.unwrap_or_else(|| default_threshold(&d.profile)),
        components,
        checks,
        deliberate,
        governed,
        branches,
        floor,
    }
}

/// Check 1: a critical claim still `unverified` or `insufficient_evidence` blocks, with what
/// its evidence weighs and what verifying it needs.
fn check_critical_claims(d: &Deliberation, tallies: &HashMap<String, Tally>) -> Check {
    let open_critical: Vec<BlockingGap> = d
        .claims
        .iter()
        .filter(|c| {
            c.criticality == "critical"
                && matches!(c.status.as_str(), "unverified" | "insufficient_evidence")
        })
        .map(|c| {
            blocker(
                CHECK_CRITICAL_CLAIM,
                Some(&c.claim_id),
                format!(
                    "{} (critical) is {}: {}",
                    c.claim_id,
                    c.status,
                    tally_detail(tallies.get(&c.claim_id), &c.criticality)
                ),
            )
        })
        .collect();
    let critical_count = d
        .claims
        .iter()
        .filter(|c| c.criticality == "critical")
        .count();
    Check {
        check: CHECK_CRITICAL_CLAIM,
        passed: open_critical.is_empty(),
        detail: if open_critical.is_empty() {
            format!(
                "none of {critical_count} critical claim(s) is unverified or insufficient_evidence"
            )
        } else {
            format!(
                "{} of {critical_count} critical claim(s) unverified or insufficient_evidence",
                open_critical.len()
            )
        },
        blockers: open_critical,
    }
}

/// Check 2: a critical claim whose sources conflict (`contested`) and that carries no
/// resolution blocks.
fn check_source_conflicts(d: &Deliberation, tallies: &HashMap<String, Tally>) -> Check {
    let contested: Vec<BlockingGap> = d
        .claims
        .iter()
        .filter(|c| c.criticality == "critical" && c.status == "contested")
        .map(|c| {
            let t = tallies.get(&c.claim_id).cloned().unwrap_or_default();
            blocker(
                CHECK_SOURCE_CONFLICT,
                Some(&c.claim_id),
                format!(
                    "{} (critical) is contested: {} group(s) support it and {} other group(s) \
                     refute it, and no resolution is recorded",
                    c.claim_id,
                    t.support.len(),
                    t.refute.len()
                ),
            )
        })
        .collect();
    Check {
        check: CHECK_SOURCE_CONFLICT,
        passed: contested.is_empty(),
        detail: if contested.is_empty() {
            "no critical claim has an unresolved source conflict".to_owned()
        } else {
            format!(
                "{} critical claim(s) contested without a resolution",
                contested.len()
            )
        },
        blockers: contested,
    }
}

/// Check 3: a high or critical verifiable assumption still unverified, or falsified, blocks.
fn check_assumptions(d: &Deliberation) -> Check {
    let blocking: Vec<BlockingGap> = d
        .assumptions
        .iter()
        .filter(|a| assumption_blocks(&a.criticality, a.verifiable, &a.status))
        .map(|a| {
            blocker(
                CHECK_ASSUMPTION,
                Some(&a.assumption_id),
                format!(
                    "{} ({}, verifiable) is {}",
                    a.assumption_id, a.criticality, a.status
                ),
            )
        })
        .collect();
    Check {
        check: CHECK_ASSUMPTION,
        passed: blocking.is_empty(),
        detail: if blocking.is_empty() {
            "no high or critical verifiable assumption is unverified or falsified".to_owned()
        } else {
            format!(
                "{} high or critical verifiable assumption(s) unverified or falsified",
                blocking.len()
            )
        },
        blockers: blocking,
    }
}

/// Check 4: in deliberate mode, fewer distinct branches among the live candidate nodes than the
/// profile's floor blocks; outside it the check passes.
fn check_diversity(
    d: &Deliberation,
    deliberate: bool,
    floor: usize,
    branches: usize,
    live_candidates: usize,
) -> Check {
    if !deliberate {
        return Check {
            check: CHECK_DIVERSITY,
            passed: true,
            detail: "not in deliberate mode".to_owned(),
            blockers: Vec::new(),
        };
    }
    let detail = format!(
        "{branches} distinct branch(es) among {live_candidates} live candidate node(s); the {} \
         profile's floor is {floor}",
        d.profile
    );
    let passed = branches >= floor;
    Check {
        check: CHECK_DIVERSITY,
        passed,
        blockers: if passed {
            Vec::new()
        } else {
            vec![blocker(CHECK_DIVERSITY, None, detail.clone())]
        },
        detail,
    }
}

/// Check 5: in governed mode, a route decision must be recorded and current (nothing changed
/// after it); outside it the check passes.
fn check_route(d: &Deliberation, governed: bool) -> Check {
    if !governed {
        return Check {
            check: CHECK_ROUTE,
            passed: true,
            detail: "not in governed mode".to_owned(),
            blockers: Vec::new(),
        };
    }
    match latest_route(d) {
        None => {
            let detail =
                "no route decision has been recorded in this governed deliberation".to_owned();
            Check {
                check: CHECK_ROUTE,
                passed: false,
                blockers: vec![blocker(CHECK_ROUTE, None, detail.clone())],
                detail,
            }
        }
        Some((id, _, seq)) if seq < d.last_change.seq => {
            let detail = format!(
                "the latest route decision {id} (seq {seq}) is stale: the deliberation changed \
                 after it (seq {})",
                d.last_change.seq
            );
            Check {
                check: CHECK_ROUTE,
                passed: false,
                blockers: vec![blocker(CHECK_ROUTE, Some(id), detail.clone())],
                detail,
            }
        }
        Some((id, _, seq)) => Check {
            check: CHECK_ROUTE,
            passed: true,
            detail: format!("route decision {id} (seq {seq}) is current: nothing changed after it"),
            blockers: Vec::new(),
        },
    }
}

/// Verification coverage: claims verified or refuted over claims; with no claims, 1, or 0 in
/// governed mode, where claims are expected.
fn verification_value(d: &Deliberation, governed: bool) -> (f64, String) {
    if d.claims.is_empty() {
        let v = if governed { 0.0 } else { 1.0 };
        let why = if governed {
            "no claims recorded; governed mode expects claims under verification"
        } else {
            "no claims recorded"
        };
        return (v, why.to_owned());
    }
    let decided = d
        .claims
        .iter()
        .filter(|c| matches!(c.status.as_str(), "verified" | "refuted"))
        .count();
    (
        ratio(decided, d.claims.len()),
        format!(
            "{decided} of {} claim(s) verified or refuted",
            d.claims.len()
        ),
    )
}

/// Assumption coverage: assumptions no longer `unverified` over assumptions (1 if none).
fn assumption_value(d: &Deliberation) -> (f64, String) {
    if d.assumptions.is_empty() {
        return (1.0, "no assumptions recorded".to_owned());
    }
    let examined = d
        .assumptions
        .iter()
        .filter(|a| a.status != "unverified")
        .count();
    (
        ratio(examined, d.assumptions.len()),
        format!(
            "{examined} of {} assumption(s) validated, falsified or retracted",
            d.assumptions.len()
        ),
    )
}

/// Scoring coverage: scored live candidate nodes over live candidate nodes (0 when there are
/// none: nothing has been deliberated).
fn scoring_value(live_candidates: &[&Node]) -> (f64, String) {
    if live_candidates.is_empty() {
        return (0.0, "no live candidate nodes to score".to_owned());
    }
    let scored = live_candidates.iter().filter(|n| n.score.is_some()).count();
    (
        ratio(scored, live_candidates.len()),
        format!(
            "{scored} of {} live candidate node(s) scored",
            live_candidates.len()
        ),
    )
}

/// Conflict handling: claims with a source conflict that carry a resolution over claims with a
/// source conflict (1 if none).
fn conflict_value(d: &Deliberation, tallies: &HashMap<String, Tally>) -> (f64, String) {
    let conflicted: Vec<_> = d
        .claims
        .iter()
        .filter(|c| tallies.get(&c.claim_id).is_some_and(Tally::conflicted))
        .collect();
    if conflicted.is_empty() {
        return (1.0, "no claim has a source conflict".to_owned());
    }
    let resolved = conflicted.iter().filter(|c| c.resolution.is_some()).count();
    (
        ratio(resolved, conflicted.len()),
        format!(
            "{resolved} of {} claim(s) with a source conflict resolved",
            conflicted.len()
        ),
    )
}
