//! Claims and their evidence: the claim-status rules (evidence counts once per independence
//! group, at its strongest tier; the bar a claim's criticality sets), the verification matrix
//! (claims × independence groups) and the chain-of-verification question templates.
//!
//! Pure: evidence in, tallies and statuses out. Must not know: the tool's arguments, refusals,
//! facts. Nothing here checks that a tier or an independence group is what the caller says.

use std::collections::{BTreeMap, BTreeSet, HashMap};

use schemars::JsonSchema;
use serde::Serialize;

use super::{is_high, round3, tier_weight};
use crate::events::deliberation::EvidenceRecorded;
use crate::projections::Deliberation;

/// The evidence on one claim, one entry per independence group: evidence sharing a group is one
/// source, so it counts once, at its strongest tier.
#[derive(Debug, Clone, Default, PartialEq)]
pub(crate) struct Tally {
    /// Strongest tier weight by supporting group.
    pub support: BTreeMap<String, f64>,
    /// Strongest tier weight by refuting group.
    pub refute: BTreeMap<String, f64>,
}

impl Tally {
    fn add(side: &mut BTreeMap<String, f64>, group: &str, weight: f64) {
        let slot = side.entry(group.to_owned()).or_insert(0.0);
        if weight > *slot {
            *slot = weight;
        }
    }

    pub fn support_weight(&self) -> f64 {
        round3(self.support.values().sum())
    }

    pub fn refute_weight(&self) -> f64 {
        round3(self.refute.values().sum())
    }

    pub(super) fn has_evidence(&self) -> bool {
        !self.support.is_empty() || !self.refute.is_empty()
    }

    /// A source conflict: some group supports and a different group refutes. (One group that
    /// says both contradicts itself; that is weak evidence, not a conflict between sources.)
    pub fn conflicted(&self) -> bool {
        self.support
            .keys()
            .any(|s| self.refute.keys().any(|r| r != s))
    }
}

/// Whether one side of a tally clears the bar: high and critical claims need a weight of at
/// least 1.0 from at least two independent groups; low and medium claims one group weighing at
/// least 0.6 (a primary or secondary source).
fn meets_bar(criticality: &str, side: &BTreeMap<String, f64>) -> bool {
    const EPS: f64 = 1e-9;
    if is_high(criticality) {
        side.len() >= 2 && side.values().sum::<f64>() >= 1.0 - EPS
    } else {
        side.values().any(|w| *w >= 0.6 - EPS)
    }
}

/// A claim's status from all its evidence and its recorded resolution, if any: the resolution's
/// outcome; else `contested` on a source conflict; else `verified` or `refuted` when that side
/// clears the bar; else `insufficient_evidence` when there is some evidence, `unverified` when
/// there is none.
pub(crate) fn claim_status(
    criticality: &str,
    tally: &Tally,
    resolution: Option<&str>,
) -> &'static str {
    match resolution {
        Some("refuted") => return "refuted",
        Some(_) => return "verified",
        None => {}
    }
    if tally.conflicted() {
        "contested"
    } else if meets_bar(criticality, &tally.support) {
        "verified"
    } else if meets_bar(criticality, &tally.refute) {
        "refuted"
    } else if tally.has_evidence() {
        "insufficient_evidence"
    } else {
        "unverified"
    }
}

/// One piece of evidence as the status rules read it (recorded or planned).
#[derive(Clone, Copy)]
pub(super) struct EvidenceView<'e> {
    id: &'e str,
    tier: &'e str,
    group: &'e str,
    supports: &'e [String],
    refutes: &'e [String],
}

pub(super) fn recorded_evidence(d: &Deliberation) -> impl Iterator<Item = EvidenceView<'_>> {
    d.evidence.iter().map(|e| EvidenceView {
        id: &e.evidence_id,
        tier: &e.tier,
        group: &e.independence_group,
        supports: &e.supports_claims,
        refutes: &e.refutes_claims,
    })
}

pub(super) fn planned_evidence(e: &[EvidenceRecorded]) -> impl Iterator<Item = EvidenceView<'_>> {
    e.iter().map(|e| EvidenceView {
        id: &e.evidence_id,
        tier: &e.tier,
        group: &e.independence_group,
        supports: &e.supports_claims,
        refutes: &e.refutes_claims,
    })
}

/// Tallies by claim id.
pub(super) fn tallies<'e>(
    evidence: impl Iterator<Item = EvidenceView<'e>>,
) -> HashMap<String, Tally> {
    let mut out: HashMap<String, Tally> = HashMap::new();
    for e in evidence {
        let weight = tier_weight(e.tier).unwrap_or(0.0);
        for c in e.supports {
            Tally::add(
                &mut out.entry(c.clone()).or_default().support,
                e.group,
                weight,
            );
        }
        for c in e.refutes {
            Tally::add(
                &mut out.entry(c.clone()).or_default().refute,
                e.group,
                weight,
            );
        }
    }
    out
}

/// One cell of the verification matrix: a group's stance on a claim.
#[derive(Debug, Clone, PartialEq, Serialize, JsonSchema)]
pub struct MatrixCell {
    pub independence_group: String,
    /// `supports` or `refutes`.
    pub stance: String,
    /// The group's strongest tier for this stance.
    pub tier: String,
    pub evidence_ids: Vec<String>,
}

/// One row of the verification matrix: a claim.
#[derive(Debug, Clone, PartialEq, Serialize, JsonSchema)]
pub struct MatrixRow {
    pub claim_id: String,
    pub criticality: String,
    pub status: String,
    /// One cell per group and stance (a group that both supports and refutes has two).
    pub cells: Vec<MatrixCell>,
}

/// Claims × independence groups, over every claim and all evidence so far.
#[derive(Debug, Clone, PartialEq, Serialize, JsonSchema)]
pub struct VerificationMatrix {
    /// The columns: every independence group, sorted.
    pub independence_groups: Vec<String>,
    pub rows: Vec<MatrixRow>,
}

/// Claim text quoted in a verification question is cut to this many characters.
const QUOTE_CHARS: usize = 200;

/// The chain-of-verification templates, by criticality: low and medium claims get the first
/// two (confirm, falsify), high the first three (plus an independent source), critical all four
/// (plus the conditions under which it stops holding). `{}` is the quoted claim.
pub(super) const QUESTION_TEMPLATES: &[&str] = &[
    "Which primary source directly confirms the claim \"{}\"?",
    "What evidence would show the claim \"{}\" to be false, and has it been looked for?",
    "Does a source independent of the evidence so far (another independence group) address \
     the claim \"{}\"?",
    "Under which conditions or constraints of this deliberation would the claim \"{}\" stop \
     holding?",
];

pub(super) fn questions_for(criticality: &str) -> usize {
    match criticality {
        "critical" => 4,
        "high" => 3,
        _ => 2,
    }
}

pub(super) fn quote(text: &str) -> String {
    if text.chars().count() <= QUOTE_CHARS {
        text.to_owned()
    } else {
        let cut: String = text.chars().take(QUOTE_CHARS).collect();
        format!("{cut}…")
    }
}

/// A claim as the verification reads it: recorded, or new in this call.
pub(super) struct ClaimView {
    pub(super) claim_id: String,
    pub(super) criticality: String,
    pub(super) text: Option<String>,
    pub(super) status: String,
    pub(super) resolution: Option<String>,
    pub(super) node_ids: Vec<String>,
    pub(super) new: bool,
}

pub(super) fn matrix(views: &[ClaimView], evidence: &[EvidenceView<'_>]) -> VerificationMatrix {
    let groups: BTreeSet<String> = evidence.iter().map(|e| e.group.to_owned()).collect();
    let rows = views
        .iter()
        .map(|v| {
            // (group, stance) → (strongest tier, ids)
            let mut cells: BTreeMap<(String, &str), (&str, Vec<String>)> = BTreeMap::new();
            for e in evidence {
                let stance = if e.supports.contains(&v.claim_id) {
                    "supports"
                } else if e.refutes.contains(&v.claim_id) {
                    "refutes"
                } else {
                    continue;
                };
                let cell = cells
                    .entry((e.group.to_owned(), stance))
                    .or_insert((e.tier, Vec::new()));
                if tier_weight(e.tier) > tier_weight(cell.0) {
                    cell.0 = e.tier;
                }
                cell.1.push(e.id.to_owned());
            }
            MatrixRow {
                claim_id: v.claim_id.clone(),
                criticality: v.criticality.clone(),
                status: v.status.clone(),
                cells: cells
                    .into_iter()
                    .map(|((group, stance), (tier, ids))| MatrixCell {
                        independence_group: group,
                        stance: stance.to_owned(),
                        tier: tier.to_owned(),
                        evidence_ids: ids,
                    })
                    .collect(),
            }
        })
        .collect();
    VerificationMatrix {
        independence_groups: groups.into_iter().collect(),
        rows,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn independence_groups_count_once_at_their_strongest_tier() {
        let mut t = Tally::default();
        Tally::add(&mut t.support, "vendor", 1.0);
        Tally::add(&mut t.support, "vendor", 1.0);
        Tally::add(&mut t.support, "vendor", 0.3);
        assert_eq!(t.support_weight(), 1.0);
        // Two primaries from one group are one source: not enough for a critical claim.
        assert_eq!(claim_status("critical", &t, None), "insufficient_evidence");
        // … but enough for a medium one.
        assert_eq!(claim_status("medium", &t, None), "verified");
        Tally::add(&mut t.support, "lab", 0.3);
        assert_eq!(t.support_weight(), 1.3);
        assert_eq!(claim_status("high", &t, None), "verified");
    }

    #[test]
    fn tiers_weigh_primary_secondary_tertiary() {
        let side = |tiers: &[(&str, &str)]| {
            let mut t = Tally::default();
            for (group, tier) in tiers {
                Tally::add(&mut t.support, group, tier_weight(tier).unwrap_or(0.0));
            }
            t
        };
        assert_eq!(
            claim_status("low", &side(&[("a", "tertiary")]), None),
            "insufficient_evidence"
        );
        assert_eq!(
            claim_status("low", &side(&[("a", "secondary")]), None),
            "verified"
        );
        assert_eq!(
            claim_status(
                "high",
                &side(&[("a", "secondary"), ("b", "tertiary")]),
                None
            ),
            "insufficient_evidence"
        );
        assert_eq!(
            claim_status(
                "high",
                &side(&[("a", "secondary"), ("b", "secondary")]),
                None
            ),
            "verified"
        );
        assert_eq!(
            claim_status("critical", &Tally::default(), None),
            "unverified"
        );
        let mut refuted = Tally::default();
        Tally::add(&mut refuted.refute, "a", 1.0);
        assert_eq!(claim_status("medium", &refuted, None), "refuted");
    }

    #[test]
    fn a_conflict_between_groups_is_contested_until_resolved() {
        let mut t = Tally::default();
        Tally::add(&mut t.support, "a", 1.0);
        Tally::add(&mut t.refute, "a", 0.3);
        // One source contradicting itself is weak evidence, not a conflict between sources.
        assert!(!t.conflicted());
        assert_eq!(claim_status("low", &t, None), "verified");
        Tally::add(&mut t.refute, "b", 0.3);
        assert!(t.conflicted());
        assert_eq!(claim_status("low", &t, None), "contested");
        assert_eq!(claim_status("low", &t, Some("refuted")), "refuted");
        assert_eq!(claim_status("low", &t, Some("verified")), "verified");
    }
}
