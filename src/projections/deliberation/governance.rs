//! The deliberation's governance folded: the assumption ledger, claims and evidence from
//! verification, route decisions, quality checkpoints, status changes and the consensus.
//!
//! Must not know: how statuses, gaps or routes are decided (that is `app`).

use super::{
    Assumption, Checkpoint, Claim, Consensus, DeliberationState, Evidence, Question, Route, Stamp,
    Text, Verification,
};
use crate::events::TextLookup;
use crate::events::deliberation::{
    AssumptionRecorded, AssumptionStatusSet, CheckpointRecorded, ConsensusReached,
    DeliberationStatusChanged, RouteDecided, VerificationRecorded,
};

impl DeliberationState {
    /// `AssumptionRecorded`: the assumption, filed under the nodes it came from.
    pub(super) fn record_assumption(
        &mut self,
        a: &AssumptionRecorded,
        stamp: &Stamp,
        lookup: &TextLookup<'_>,
    ) {
        let text = self.keep_scanned(&a.text, lookup);
        let Some(d) = self.get_mut(&a.session_id) else {
            return;
        };
        for node in &a.source_node_ids {
            d.assumptions_by_node
                .entry(node.clone())
                .or_default()
                .push(a.assumption_id.clone());
        }
        d.assumptions.push(Assumption {
            assumption_id: a.assumption_id.clone(),
            text,
            criticality: a.criticality.clone(),
            verifiable: a.verifiable,
            source_node_ids: a.source_node_ids.clone(),
            status: a.status.clone(),
            evidence: Vec::new(),
            rationale: None,
            analysis: a.analysis.clone(),
            created: stamp.clone(),
            updated: stamp.clone(),
        });
        d.last_change = stamp.clone();
    }

    /// `AssumptionStatusSet`: the new status, with its evidence and rationale.
    pub(super) fn set_assumption_status(
        &mut self,
        a: &AssumptionStatusSet,
        stamp: &Stamp,
        lookup: &TextLookup<'_>,
    ) {
        let evidence: Vec<Text> = a
            .evidence
            .iter()
            .map(|e| self.keep_scanned(e, lookup))
            .collect();
        let rationale = a.rationale.as_ref().map(|r| self.keep_scanned(r, lookup));
        let Some(d) = self.get_mut(&a.session_id) else {
            return;
        };
        if let Some(found) = d
            .assumptions
            .iter_mut()
            .find(|x| x.assumption_id == a.assumption_id)
        {
            found.status = a.status.clone();
            found.evidence.extend(evidence);
            if rationale.is_some() {
                found.rationale = rationale;
            }
            found.updated = stamp.clone();
        }
        d.last_change = stamp.clone();
    }

    /// `VerificationRecorded`: new claims, evidence, conflict resolutions, questions, and the
    /// claims' statuses.
    pub(super) fn record_verification(
        &mut self,
        v: &VerificationRecorded,
        stamp: &Stamp,
        lookup: &TextLookup<'_>,
    ) {
        let claims: Vec<(usize, Text)> = v
            .claims
            .iter()
            .enumerate()
            .map(|(i, c)| (i, self.keep_scanned(&c.text, lookup)))
            .collect();
        let evidence: Vec<(Text, Option<Text>)> = v
            .evidence
            .iter()
            .map(|e| {
                let source = self.keep_scanned(&e.source, lookup);
                let excerpt = e.excerpt.as_ref().map(|x| self.keep_scanned(x, lookup));
                (source, excerpt)
            })
            .collect();
        let resolutions: Vec<Text> = v
            .resolutions
            .iter()
            .map(|r| self.keep_scanned(&r.rationale, lookup))
            .collect();
        for q in &v.questions {
            self.keep(&q.question, lookup);
        }
        let Some(d) = self.get_mut(&v.session_id) else {
            return;
        };
        for (i, text) in claims {
            let c = &v.claims[i];
            d.claims.push(Claim {
                claim_id: c.claim_id.clone(),
                text,
                criticality: c.criticality.clone(),
                node_ids: c.node_ids.clone(),
                status: "unverified".to_owned(),
                resolution: None,
                created: stamp.clone(),
                updated: stamp.clone(),
            });
        }
        for (e, (source, excerpt)) in v.evidence.iter().zip(evidence) {
            d.evidence.push(Evidence {
                evidence_id: e.evidence_id.clone(),
                source,
                excerpt,
                tier: e.tier.clone(),
                independence_group: e.independence_group.clone(),
                supports_claims: e.supports_claims.clone(),
                refutes_claims: e.refutes_claims.clone(),
                created: stamp.clone(),
            });
        }
        for (r, rationale) in v.resolutions.iter().zip(resolutions) {
            if let Some(claim) = d.claims.iter_mut().find(|c| c.claim_id == r.claim_id) {
                claim.resolution = Some((r.outcome.clone(), rationale));
            }
        }
        for q in &v.questions {
            d.questions.push(Question {
                claim_id: q.claim_id.clone(),
                question: Text::plain(&q.question),
            });
        }
        for (id, status) in &v.statuses {
            if let Some(claim) = d.claims.iter_mut().find(|c| &c.claim_id == id) {
                claim.status = status.clone();
                claim.updated = stamp.clone();
            }
        }
        d.verifications.push(Verification {
            verification_id: v.verification_id.clone(),
            statuses: v.statuses.clone(),
            analysis: v.analysis.clone(),
            created: stamp.clone(),
        });
        d.last_change = stamp.clone();
    }

    /// `RouteDecided`: the route, in order.
    pub(super) fn decide_route(&mut self, r: &RouteDecided, stamp: &Stamp) {
        if let Some(d) = self.get_mut(&r.session_id) {
            d.routes.push(Route {
                route_id: r.route_id.clone(),
                source: r.source.clone(),
                user_mode: r.user_mode.clone(),
                internal_method: r.internal_method.clone(),
                decision: r.decision.clone(),
                created: stamp.clone(),
            });
        }
    }

    /// `CheckpointRecorded`: the quality checkpoint, and its skeleton phase's list of them.
    pub(super) fn record_checkpoint(&mut self, c: &CheckpointRecorded, stamp: &Stamp) {
        let Some(d) = self.get_mut(&c.session_id) else {
            return;
        };
        if let Some(phase_id) = &c.phase_id
            && let Some(phase) = d.phases.iter_mut().find(|p| &p.phase_id == phase_id)
        {
            phase.checkpoint_ids.push(c.checkpoint_id.clone());
        }
        d.checkpoints.push(Checkpoint {
            checkpoint_id: c.checkpoint_id.clone(),
            quality_score: c.quality_score,
            quality_tier: c.quality_tier.clone(),
            route_decision: c.route_decision.clone(),
            blocking_gaps: c.blocking_gaps.clone(),
            recommended_tools: c.recommended_tools.clone(),
            phase_id: c.phase_id.clone(),
            analysis: c.analysis.clone(),
            created: stamp.clone(),
        });
    }

    /// `DeliberationStatusChanged`: the status, and the node it converged on if it names one.
    pub(super) fn change_status(&mut self, s: &DeliberationStatusChanged) {
        if let Some(d) = self.get_mut(&s.session_id) {
            d.status = s.status.clone();
            if s.node_id.is_some() {
                d.convergence_node_id = s.node_id.clone();
            }
        }
    }

    /// `ConsensusReached`: the answer; the deliberation is concluded.
    pub(super) fn reach_consensus(
        &mut self,
        c: &ConsensusReached,
        stamp: &Stamp,
        lookup: &TextLookup<'_>,
    ) {
        let answer = self.keep_scanned(&c.answer, lookup);
        if let Some(d) = self.get_mut(&c.session_id) {
            d.consensus = Some(Consensus {
                answer,
                confidence: c.confidence,
                route_decision: c.route_decision.clone(),
                checks: c.checks.clone(),
                analysis: c.analysis.clone(),
                created: stamp.clone(),
            });
            d.status = "concluded".to_owned();
        }
    }
}
