//! The checks and plans of one `verify_thoughts` call: the counts, the new claims with their
//! ids, the evidence and the resolutions, each refused before anything is recorded.
//!
//! Must not know: the statuses the call settles, questions, the model or the response.

use std::collections::HashMap;

use super::super::claims::ClaimView;
use super::super::{
    MAX_CLAIMS_PER_CALL, MAX_EVIDENCE_PER_CALL, MAX_IDS, Tally, criticality_or_refuse, empty_text,
    require_nodes, tier_weight, too_many,
};
use super::{ClaimArg, EvidenceArg, NewClaim, ResolutionArg, lower};
use crate::app::ErrorCode;
use crate::app::call::{Call, PathStep, Refusal};
use crate::app::deliberation::context::refuse;
use crate::app::deliberation::injection::shown;
use crate::events::deliberation::{ConflictResolved, EvidenceRecorded};
use crate::projections::Deliberation;

/// Refuses a call that sends nothing, or more than a call may hold.
pub(super) fn check_counts(
    d: &Deliberation,
    claims: &[ClaimArg],
    evidence: &[EvidenceArg],
    resolutions: &[ResolutionArg],
) -> Result<(), Refusal> {
    if claims.is_empty() && evidence.is_empty() && resolutions.is_empty() {
        return Err(refuse(
            d,
            ErrorCode::NothingToVerify,
            "no claims, evidence or resolutions were sent",
            "send new claims, evidence on claims (new or existing), or resolutions of contested \
             claims",
        ));
    }
    if claims.len() > MAX_CLAIMS_PER_CALL {
        return Err(too_many(d, "claims", claims.len(), MAX_CLAIMS_PER_CALL));
    }
    if evidence.len() > MAX_EVIDENCE_PER_CALL {
        return Err(too_many(
            d,
            "evidence",
            evidence.len(),
            MAX_EVIDENCE_PER_CALL,
        ));
    }
    if resolutions.len() > MAX_CLAIMS_PER_CALL {
        return Err(too_many(
            d,
            "resolutions",
            resolutions.len(),
            MAX_CLAIMS_PER_CALL,
        ));
    }
    Ok(())
}

/// The recorded claims, then the new ones with their ids (checked: text, criticality, nodes).
pub(super) fn plan_claims(
    call: &Call<'_>,
    d: &Deliberation,
    claims: &[ClaimArg],
) -> Result<(Vec<ClaimView>, Vec<NewClaim>), Refusal> {
    let state = call.app.deliberations();
    let mut views: Vec<ClaimView> = d
        .claims
        .iter()
        .map(|c| ClaimView {
            claim_id: c.claim_id.clone(),
            criticality: c.criticality.clone(),
            text: state.text(&c.text).map(str::to_owned),
            status: c.status.clone(),
            resolution: c.resolution.as_ref().map(|(o, _)| o.clone()),
            node_ids: c.node_ids.clone(),
            new: false,
        })
        .collect();
    let mut new_claims = Vec::with_capacity(claims.len());
    for (i, c) in claims.iter().enumerate() {
        let field = format!("claims[{i}].text");
        if c.text.trim().is_empty() {
            return Err(empty_text(d, &field, "the claim as a checkable statement"));
        }
        let criticality = criticality_or_refuse(
            d,
            c.criticality.as_deref(),
            &format!("claims[{i}].criticality"),
        )?;
        let node_ids = c.node_ids.clone().unwrap_or_default();
        if node_ids.len() > MAX_IDS {
            return Err(too_many(
                d,
                &format!("claims[{i}].node_ids"),
                node_ids.len(),
                MAX_IDS,
            ));
        }
        require_nodes(d, &node_ids, "claim node")?;
        let claim_id = format!("claim-{}", d.claims.len() + i + 1);
        views.push(ClaimView {
            claim_id: claim_id.clone(),
            criticality: criticality.clone(),
            text: Some(shown(&c.text, &field)),
            status: "unverified".to_owned(),
            resolution: None,
            node_ids: node_ids.clone(),
            new: true,
        });
        new_claims.push((i, claim_id, criticality, node_ids));
    }
    Ok((views, new_claims))
}

/// The refusal of a claim id that is neither recorded nor new in this call.
fn unknown_claim(d: &Deliberation, id: &str, role: &str) -> Refusal {
    refuse(
        d,
        ErrorCode::UnknownClaim,
        format!("{role} names \"{id}\", which is not a claim of this deliberation"),
        format!(
            "use an existing claim id (claim-1 … claim-{}) or claim-{} … for the claims of \
             this call, in order",
            d.claims.len(),
            d.claims.len() + 1
        ),
    )
}

/// The evidence, checked and planned with its ids.
pub(super) fn plan_evidence(
    call: &mut Call<'_>,
    d: &Deliberation,
    views: &[ClaimView],
    evidence: &[EvidenceArg],
) -> Result<Vec<EvidenceRecorded>, Refusal> {
    let known = |id: &str| views.iter().any(|v| v.claim_id == id);
    let mut planned: Vec<EvidenceRecorded> = Vec::with_capacity(evidence.len());
    for (i, e) in evidence.iter().enumerate() {
        let at = format!("evidence[{i}]");
        if e.source.trim().is_empty() {
            return Err(empty_text(
                d,
                &format!("{at}.source"),
                "where the evidence comes from",
            ));
        }
        let tier = lower(&e.tier);
        if tier_weight(&tier).is_none() {
            return Err(refuse(
                d,
                ErrorCode::InvalidTier,
                format!("{at}.tier \"{tier}\" is not an evidence tier"),
                "use primary (weight 1.0), secondary (0.6) or tertiary (0.3)",
            ));
        }
        let group = e.independence_group.trim().to_owned();
        if group.is_empty() {
            return Err(refuse(
                d,
                ErrorCode::InvalidEvidence,
                format!("{at}.independence_group is empty"),
                "name the source's independence group; sources sharing an origin share a group",
            ));
        }
        let supports = e.supports_claims.clone().unwrap_or_default();
        let refutes = e.refutes_claims.clone().unwrap_or_default();
        if supports.is_empty() && refutes.is_empty() {
            return Err(refuse(
                d,
                ErrorCode::InvalidEvidence,
                format!("{at} neither supports nor refutes a claim"),
                "list the claims it bears on in supports_claims or refutes_claims",
            ));
        }
        if supports.len() + refutes.len() > MAX_IDS {
            return Err(too_many(
                d,
                &format!("{at} claims"),
                supports.len() + refutes.len(),
                MAX_IDS,
            ));
        }
        if let Some(both) = supports.iter().find(|c| refutes.contains(c)) {
            return Err(refuse(
                d,
                ErrorCode::InvalidEvidence,
                format!("{at} both supports and refutes {both}"),
                "send the supporting and the refuting parts as two pieces of evidence, in \
                 different independence groups if they come from different sources",
            ));
        }
        for id in supports.iter().chain(&refutes) {
            if !known(id) {
                return Err(unknown_claim(d, id, &at));
            }
        }
        let source = call.scanned(
            &format!("{at}.source"),
            &[
                PathStep::Key("evidence"),
                PathStep::Index(i),
                PathStep::Key("source"),
            ],
            &e.source,
        );
        let excerpt = e
            .excerpt
            .as_deref()
            .filter(|x| !x.trim().is_empty())
            .map(|x| {
                call.scanned(
                    &format!("{at}.excerpt"),
                    &[
                        PathStep::Key("evidence"),
                        PathStep::Index(i),
                        PathStep::Key("excerpt"),
                    ],
                    x,
                )
            });
        planned.push(EvidenceRecorded {
            evidence_id: format!("ev-{}", d.evidence.len() + i + 1),
            source,
            excerpt,
            tier,
            independence_group: group,
            supports_claims: supports,
            refutes_claims: refutes,
        });
    }
    Ok(planned)
}

/// The resolutions, only for claims whose sources conflict.
pub(super) fn plan_resolutions(
    call: &mut Call<'_>,
    d: &Deliberation,
    views: &[ClaimView],
    all_tallies: &HashMap<String, Tally>,
    resolutions: &[ResolutionArg],
) -> Result<Vec<ConflictResolved>, Refusal> {
    let mut planned_resolutions: Vec<ConflictResolved> = Vec::with_capacity(resolutions.len());
    for (i, r) in resolutions.iter().enumerate() {
        let at = format!("resolutions[{i}]");
        let Some(view) = views.iter().find(|v| v.claim_id == r.claim_id) else {
            return Err(unknown_claim(d, &r.claim_id, &at));
        };
        if planned_resolutions.iter().any(|p| p.claim_id == r.claim_id) {
            return Err(refuse(
                d,
                ErrorCode::InvalidArguments,
                format!("{} is resolved twice in this call", r.claim_id),
                "send one resolution per claim",
            ));
        }
        let outcome = lower(&r.outcome);
        if !matches!(outcome.as_str(), "verified" | "refuted") {
            return Err(refuse(
                d,
                ErrorCode::InvalidOutcome,
                format!("{at}.outcome \"{outcome}\" is not a resolution outcome"),
                "use verified or refuted",
            ));
        }
        if !all_tallies
            .get(&view.claim_id)
            .is_some_and(Tally::conflicted)
        {
            return Err(refuse(
                d,
                ErrorCode::NoConflict,
                format!(
                    "{} has no source conflict to resolve: no group supports it while another \
                     refutes it",
                    view.claim_id
                ),
                "resolutions are for contested claims; add evidence instead, and its status \
                 follows the tier and independence rules",
            ));
        }
        if r.rationale.trim().is_empty() {
            return Err(refuse(
                d,
                ErrorCode::RationaleRequired,
                format!("{at}.rationale is empty"),
                "say why one side of the conflict prevails",
            ));
        }
        let rationale = call.scanned(
            &format!("{at}.rationale"),
            &[
                PathStep::Key("resolutions"),
                PathStep::Index(i),
                PathStep::Key("rationale"),
            ],
            &r.rationale,
        );
        planned_resolutions.push(ConflictResolved {
            claim_id: view.claim_id.clone(),
            outcome,
            rationale,
        });
    }
    Ok(planned_resolutions)
}
