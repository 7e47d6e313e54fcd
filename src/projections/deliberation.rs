//! The deliberation workspace as a projection: one [`Deliberation`] per session that started
//! one, with its thought DAG (direct lookup by node id, `children_by_parent`, `branch_index`,
//! strict adjacency for `depends_on` / `refines`), scores, assumption ledger, claims and
//! evidence, route decisions, quality checkpoints, skeleton phases and consensus.
//!
//! A pure fold of the deliberation facts: statuses, scores and gaps are decided in `app` and
//! recorded; this only files them and keeps indexes. Texts are held once, by commitment, so an
//! erasure (`TextsErased`) blanks every place that shows them.
//!
//! [`DeliberationState::apply`] dispatches each fact to one named step (`start`, `add_node`,
//! `record_verification`, …). The state is cheap to clone, because the writer publishes a copy
//! after every batch for reads to use: deliberations and texts sit in persistent maps (`imbl`),
//! each deliberation behind an `Arc` that a step copies only when a published view still
//! shares it (`Arc::make_mut`), once per batch.

use std::collections::{BTreeMap, HashMap};
use std::sync::Arc;

use serde::{Deserialize, Serialize};

use crate::events::deliberation::{
    AnalysisMetadata, AssumptionRecorded, AssumptionStatusSet, BlockingGap, Budgets,
    CheckpointRecorded, ConsensusReached, DeliberationStarted, DeliberationStatusChanged,
    EdgeAdded, GuardCheck, NodeAdded, NodesPruned, NodesScored, Redaction, RouteDecided,
    RouteDecision, ScannedText, SkeletonElaborated, SkeletonPhaseStarted, Suitability,
    VerificationRecorded,
};
use crate::events::{Event, Fact, SessionId, TextLookup, TextRef};

/// A stored caller or derived text: its commitment, and the original's when it was redacted.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Text {
    pub commitment: String,
    pub original: Option<String>,
    pub redactions: Vec<Redaction>,
}

impl Text {
    fn from_scanned(scanned: &ScannedText) -> Self {
        Self {
            commitment: scanned.text.commitment.clone(),
            original: scanned.original.as_ref().map(|r| r.commitment.clone()),
            redactions: scanned.redactions.clone(),
        }
    }

    fn plain(text: &TextRef) -> Self {
        Self {
            commitment: text.commitment.clone(),
            original: None,
            redactions: Vec::new(),
        }
    }
}

/// When an entity was recorded.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Stamp {
    pub seq: u64,
    pub at: String,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Node {
    pub node_id: String,
    pub parent_ids: Vec<String>,
    pub content: Text,
    pub branch_id: String,
    pub depth: u32,
    pub kind: String,
    pub tags: Vec<String>,
    pub analysis: AnalysisMetadata,
    pub created: Stamp,
    /// The latest score, with its dimensions and the run that gave it.
    pub score: Option<f64>,
    pub dimensions: BTreeMap<String, f64>,
    pub scored_by: Option<String>,
    /// Set when a prune took the node out of the beam.
    pub pruned: Option<Stamp>,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Edge {
    pub from: String,
    pub to: String,
    pub edge_type: String,
    pub created: Stamp,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ScoreRun {
    pub score_run_id: String,
    pub node_ids: Vec<String>,
    pub weights: BTreeMap<String, f64>,
    pub created: Stamp,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Assumption {
    pub assumption_id: String,
    pub text: Text,
    pub criticality: String,
    pub verifiable: bool,
    pub source_node_ids: Vec<String>,
    pub status: String,
    pub evidence: Vec<Text>,
    pub rationale: Option<Text>,
    pub analysis: AnalysisMetadata,
    pub created: Stamp,
    pub updated: Stamp,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Claim {
    pub claim_id: String,
    pub text: Text,
    pub criticality: String,
    pub node_ids: Vec<String>,
    pub status: String,
    /// The caller's resolution of a source conflict: outcome and rationale.
    pub resolution: Option<(String, Text)>,
    pub created: Stamp,
    pub updated: Stamp,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Evidence {
    pub evidence_id: String,
    pub source: Text,
    pub excerpt: Option<Text>,
    pub tier: String,
    pub independence_group: String,
    pub supports_claims: Vec<String>,
    pub refutes_claims: Vec<String>,
    pub created: Stamp,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Question {
    pub claim_id: String,
    pub question: Text,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Verification {
    pub verification_id: String,
    pub statuses: BTreeMap<String, String>,
    pub analysis: AnalysisMetadata,
    pub created: Stamp,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Route {
    pub route_id: String,
    pub source: String,
    pub user_mode: String,
    pub internal_method: String,
    pub decision: RouteDecision,
    pub created: Stamp,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Checkpoint {
    pub checkpoint_id: String,
    pub quality_score: f64,
    pub quality_tier: String,
    pub route_decision: RouteDecision,
    pub blocking_gaps: Vec<BlockingGap>,
    pub recommended_tools: Vec<String>,
    pub phase_id: Option<String>,
    pub analysis: AnalysisMetadata,
    pub created: Stamp,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SkeletonPhase {
    pub phase_id: String,
    pub source_node_id: String,
    /// `skeleton`, `elaborating` or `merged`.
    pub state: String,
    pub style: String,
    pub suitability: Suitability,
    pub skeleton_node_ids: Vec<String>,
    pub elaboration_node_ids_by_skeleton: BTreeMap<String, Vec<String>>,
    pub prompt_pack: String,
    pub score_run_ids: Vec<String>,
    pub checkpoint_ids: Vec<String>,
    pub merge_node_id: Option<String>,
    pub analysis: AnalysisMetadata,
    pub created: Stamp,
    pub updated: Stamp,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Consensus {
    pub answer: Text,
    pub confidence: f64,
    pub route_decision: RouteDecision,
    pub checks: Vec<GuardCheck>,
    pub analysis: AnalysisMetadata,
    pub created: Stamp,
}

/// One session's deliberation.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Deliberation {
    pub session_id: SessionId,
    pub deliberation_id: String,
    pub goal: Text,
    pub constraints: Vec<Text>,
    pub user_mode: String,
    pub internal_method: String,
    pub profile: String,
    pub budgets: Budgets,
    pub root_node_id: String,
    /// `open`, `converged` or `concluded`.
    pub status: String,
    pub convergence_node_id: Option<String>,
    pub created: Stamp,
    /// The last event that changed the graph, claims or assumptions (not scores or gates).
    pub last_change: Stamp,

    pub nodes: Vec<Node>,
    node_index: HashMap<String, usize>,
    pub edges: Vec<Edge>,
    pub children_by_parent: HashMap<String, Vec<String>>,
    /// Node ids by branch, in creation order.
    pub branch_index: BTreeMap<String, Vec<String>>,
    /// `depends_on` and `refines` edges only (`from → [to]`): the relation that must stay
    /// acyclic.
    pub strict_adjacency: HashMap<String, Vec<String>>,

    pub rubric: Option<BTreeMap<String, f64>>,
    pub score_runs: Vec<ScoreRun>,
    pub pruned_total: usize,

    pub assumptions: Vec<Assumption>,
    /// Assumption ids by the node they came from.
    pub assumptions_by_node: BTreeMap<String, Vec<String>>,

    pub claims: Vec<Claim>,
    pub evidence: Vec<Evidence>,
    pub questions: Vec<Question>,
    pub verifications: Vec<Verification>,

    pub routes: Vec<Route>,
    pub checkpoints: Vec<Checkpoint>,
    pub phases: Vec<SkeletonPhase>,
    pub consensus: Option<Consensus>,
}

impl Deliberation {
    pub fn node(&self, id: &str) -> Option<&Node> {
        self.node_index.get(id).map(|&i| &self.nodes[i])
    }

    fn node_mut(&mut self, id: &str) -> Option<&mut Node> {
        self.node_index.get(id).map(|&i| &mut self.nodes[i])
    }

    pub fn claim(&self, id: &str) -> Option<&Claim> {
        self.claims.iter().find(|c| c.claim_id == id)
    }

    pub fn assumption(&self, id: &str) -> Option<&Assumption> {
        self.assumptions.iter().find(|a| a.assumption_id == id)
    }

    pub fn phase(&self, id: &str) -> Option<&SkeletonPhase> {
        self.phases.iter().find(|p| p.phase_id == id)
    }

    pub fn children(&self, id: &str) -> &[String] {
        self.children_by_parent.get(id).map_or(&[], Vec::as_slice)
    }

    /// Nodes not pruned.
    pub fn live_nodes(&self) -> impl Iterator<Item = &Node> {
        self.nodes.iter().filter(|n| n.pruned.is_none())
    }

    /// Deepest node depth.
    pub fn graph_depth(&self) -> u32 {
        self.nodes.iter().map(|n| n.depth).max().unwrap_or(0)
    }
}

/// Every deliberation, and the texts they show.
#[derive(Debug, Default, Clone, Serialize, Deserialize)]
pub struct DeliberationState {
    deliberations: imbl::HashMap<SessionId, Arc<Deliberation>>,
    order: imbl::Vector<SessionId>,
    /// Text by commitment: `None` once erased (or never stored).
    texts: imbl::HashMap<String, Option<Arc<str>>>,
}

impl DeliberationState {
    pub fn get(&self, session: &SessionId) -> Option<&Deliberation> {
        self.deliberations.get(session).map(|d| &**d)
    }

    /// Deliberations in the order they started.
    pub fn all(&self) -> impl Iterator<Item = &Deliberation> {
        self.order.iter().filter_map(|id| self.get(id))
    }

    /// The text shown for `text` (None when erased or missing).
    pub fn text(&self, text: &Text) -> Option<&str> {
        self.text_of(&text.commitment)
    }

    pub fn text_of(&self, commitment: &str) -> Option<&str> {
        self.texts.get(commitment).and_then(|t| t.as_deref())
    }

    /// The deliberation to change, copied first if a published view still shares it.
    fn get_mut(&mut self, session: &SessionId) -> Option<&mut Deliberation> {
        self.deliberations.get_mut(session).map(Arc::make_mut)
    }

    fn keep(&mut self, text: &TextRef, lookup: &TextLookup<'_>) {
        self.texts
            .entry(text.commitment.clone())
            .or_insert_with(|| lookup(text));
    }

    fn keep_scanned(&mut self, scanned: &ScannedText, lookup: &TextLookup<'_>) -> Text {
        self.keep(&scanned.text, lookup);
        // The original is kept only as a commitment: it is shown nowhere.
        Text::from_scanned(scanned)
    }

    /// Folds one event: each fact by its own step.
    pub fn apply(&mut self, event: &Event, lookup: &TextLookup<'_>) {
        let stamp = Stamp {
            seq: event.seq,
            at: event.recorded_at.clone(),
        };
        for fact in &event.facts {
            match fact {
                Fact::DeliberationStarted(d) => self.start(d, &stamp, lookup),
                Fact::NodeAdded(n) => self.add_node(n, &stamp, lookup),
                Fact::EdgeAdded(e) => self.add_edge(e, &stamp),
                Fact::RubricSet(r) => {
                    if let Some(d) = self.get_mut(&r.session_id) {
                        d.rubric = Some(r.weights.clone());
                    }
                }
                Fact::NodesScored(s) => self.score_nodes(s, &stamp),
                Fact::NodesPruned(p) => self.prune_nodes(p, &stamp),
                Fact::AssumptionRecorded(a) => self.record_assumption(a, &stamp, lookup),
                Fact::AssumptionStatusSet(a) => self.set_assumption_status(a, &stamp, lookup),
                Fact::VerificationRecorded(v) => self.record_verification(v, &stamp, lookup),
                Fact::RouteDecided(r) => self.decide_route(r, &stamp),
                Fact::CheckpointRecorded(c) => self.record_checkpoint(c, &stamp),
                Fact::DeliberationStatusChanged(s) => self.change_status(s),
                Fact::ConsensusReached(c) => self.reach_consensus(c, &stamp, lookup),
                Fact::SkeletonPhaseStarted(p) => self.start_phase(p, &stamp),
                Fact::SkeletonElaborated(p) => self.elaborate_phase(p, &stamp),
                Fact::TextsErased { commitments, .. } => self.erase(commitments),
                Fact::SessionStarted { .. }
                | Fact::ThoughtRecorded(_)
                | Fact::ThoughtTagged { .. }
                | Fact::SessionClosed { .. }
                | Fact::MemoryStored(_)
                | Fact::MemorySuperseded(_)
                | Fact::MemoriesRetrieved(_)
                | Fact::MemorySoftDeleted(_)
                | Fact::MemoryErased(_)
                | Fact::ModelConferred(_)
                | Fact::TracedThoughtRecorded(_)
                | Fact::PlanStepRecorded(_)
                | Fact::BiasedStepRecorded(_)
                | Fact::AgentRunStarted(_)
                | Fact::AgentModelRequested(_)
                | Fact::AgentModelResponded(_)
                | Fact::AgentModelFailed(_)
                | Fact::AgentToolRequested(_)
                | Fact::AgentToolReturned(_)
                | Fact::AgentBreakerTripped(_)
                | Fact::AgentIntentDetected(_)
                | Fact::AgentNudged(_)
                | Fact::AgentRunEnded(_)
                | Fact::CognitionRecorded(_) => {}
            }
        }
    }

    /// `DeliberationStarted`: a new deliberation with its goal and constraints (a second start
    /// in the same session is ignored).
    fn start(&mut self, d: &DeliberationStarted, stamp: &Stamp, lookup: &TextLookup<'_>) {
        if self.deliberations.contains_key(&d.session_id) {
            return;
        }
        let goal = self.keep_scanned(&d.goal, lookup);
        let constraints = d
            .constraints
            .iter()
            .map(|c| self.keep_scanned(c, lookup))
            .collect();
        self.order.push_back(d.session_id.clone());
        self.deliberations.insert(
            d.session_id.clone(),
            Arc::new(Deliberation {
                session_id: d.session_id.clone(),
                deliberation_id: d.deliberation_id.clone(),
                goal,
                constraints,
                user_mode: d.user_mode.clone(),
                internal_method: d.internal_method.clone(),
                profile: d.profile.clone(),
                budgets: d.budgets,
                root_node_id: d.root_node_id.clone(),
                status: "open".to_owned(),
                convergence_node_id: None,
                created: stamp.clone(),
                last_change: stamp.clone(),
                nodes: Vec::new(),
                node_index: HashMap::new(),
                edges: Vec::new(),
                children_by_parent: HashMap::new(),
                branch_index: BTreeMap::new(),
                strict_adjacency: HashMap::new(),
                rubric: None,
                score_runs: Vec::new(),
                pruned_total: 0,
                assumptions: Vec::new(),
                assumptions_by_node: BTreeMap::new(),
                claims: Vec::new(),
                evidence: Vec::new(),
                questions: Vec::new(),
                verifications: Vec::new(),
                routes: Vec::new(),
                checkpoints: Vec::new(),
                phases: Vec::new(),
                consensus: None,
            }),
        );
    }

    /// `NodeAdded`: the node, filed under its parents and its branch (a known id is ignored).
    fn add_node(&mut self, n: &NodeAdded, stamp: &Stamp, lookup: &TextLookup<'_>) {
        let content = self.keep_scanned(&n.content, lookup);
        let Some(d) = self.get_mut(&n.session_id) else {
            return;
        };
        if d.node_index.contains_key(&n.node_id) {
            return;
        }
        for parent in &n.parent_ids {
            d.children_by_parent
                .entry(parent.clone())
                .or_default()
                .push(n.node_id.clone());
        }
        d.branch_index
            .entry(n.branch_id.clone())
            .or_default()
            .push(n.node_id.clone());
        d.node_index.insert(n.node_id.clone(), d.nodes.len());
        d.nodes.push(Node {
            node_id: n.node_id.clone(),
            parent_ids: n.parent_ids.clone(),
            content,
            branch_id: n.branch_id.clone(),
            depth: n.depth,
            kind: n.kind.clone(),
            tags: n.tags.clone(),
            analysis: n.analysis.clone(),
            created: stamp.clone(),
            score: None,
            dimensions: BTreeMap::new(),
            scored_by: None,
            pruned: None,
        });
        d.last_change = stamp.clone();
    }

    /// `EdgeAdded`: the edge, and the strict relation's adjacency for `depends_on` / `refines`.
    fn add_edge(&mut self, e: &EdgeAdded, stamp: &Stamp) {
        let Some(d) = self.get_mut(&e.session_id) else {
            return;
        };
        if matches!(e.edge_type.as_str(), "depends_on" | "refines") {
            d.strict_adjacency
                .entry(e.from.clone())
                .or_default()
                .push(e.to.clone());
        }
        d.edges.push(Edge {
            from: e.from.clone(),
            to: e.to.clone(),
            edge_type: e.edge_type.clone(),
            created: stamp.clone(),
        });
        d.last_change = stamp.clone();
    }

    /// `NodesScored`: each node's latest score, the run, and the skeleton phases it covers.
    fn score_nodes(&mut self, s: &NodesScored, stamp: &Stamp) {
        let Some(d) = self.get_mut(&s.session_id) else {
            return;
        };
        for score in &s.scores {
            if let Some(node) = d.node_mut(&score.node_id) {
                node.score = Some(score.score);
                node.dimensions = score.dimensions.clone();
                node.scored_by = Some(s.score_run_id.clone());
            }
        }
        let node_ids: Vec<String> = s.scores.iter().map(|x| x.node_id.clone()).collect();
        for phase in &mut d.phases {
            let covers = node_ids.iter().any(|id| {
                phase.skeleton_node_ids.contains(id)
                    || phase
                        .elaboration_node_ids_by_skeleton
                        .values()
                        .any(|v| v.contains(id))
            });
            if covers {
                phase.score_run_ids.push(s.score_run_id.clone());
            }
        }
        d.score_runs.push(ScoreRun {
            score_run_id: s.score_run_id.clone(),
            node_ids,
            weights: s.weights.clone(),
            created: stamp.clone(),
        });
    }

    /// `NodesPruned`: marks the nodes not yet pruned, and counts them.
    fn prune_nodes(&mut self, p: &NodesPruned, stamp: &Stamp) {
        let Some(d) = self.get_mut(&p.session_id) else {
            return;
        };
        for id in &p.node_ids {
            if let Some(node) = d.node_mut(id)
                && node.pruned.is_none()
            {
                node.pruned = Some(stamp.clone());
                d.pruned_total += 1;
            }
        }
    }

    /// `AssumptionRecorded`: the assumption, filed under the nodes it came from.
    fn record_assumption(
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
    fn set_assumption_status(
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
    fn record_verification(
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
    fn decide_route(&mut self, r: &RouteDecided, stamp: &Stamp) {
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
    fn record_checkpoint(&mut self, c: &CheckpointRecorded, stamp: &Stamp) {
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
    fn change_status(&mut self, s: &DeliberationStatusChanged) {
        if let Some(d) = self.get_mut(&s.session_id) {
            d.status = s.status.clone();
            if s.node_id.is_some() {
                d.convergence_node_id = s.node_id.clone();
            }
        }
    }

    /// `ConsensusReached`: the answer; the deliberation is concluded.
    fn reach_consensus(&mut self, c: &ConsensusReached, stamp: &Stamp, lookup: &TextLookup<'_>) {
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

    /// `SkeletonPhaseStarted`: a phase in state `skeleton`.
    fn start_phase(&mut self, p: &SkeletonPhaseStarted, stamp: &Stamp) {
        if let Some(d) = self.get_mut(&p.session_id) {
            d.phases.push(SkeletonPhase {
                phase_id: p.phase_id.clone(),
                source_node_id: p.source_node_id.clone(),
                state: "skeleton".to_owned(),
                style: p.style.clone(),
                suitability: p.suitability.clone(),
                skeleton_node_ids: p.skeleton_node_ids.clone(),
                elaboration_node_ids_by_skeleton: BTreeMap::new(),
                prompt_pack: p.prompt_pack.clone(),
                score_run_ids: Vec::new(),
                checkpoint_ids: Vec::new(),
                merge_node_id: None,
                analysis: p.analysis.clone(),
                created: stamp.clone(),
                updated: stamp.clone(),
            });
        }
    }

    /// `SkeletonElaborated`: the phase's elaborations, merge node and new state.
    fn elaborate_phase(&mut self, p: &SkeletonElaborated, stamp: &Stamp) {
        let Some(d) = self.get_mut(&p.session_id) else {
            return;
        };
        if let Some(phase) = d.phases.iter_mut().find(|x| x.phase_id == p.phase_id) {
            for (skeleton, ids) in &p.elaboration_node_ids_by_skeleton {
                phase
                    .elaboration_node_ids_by_skeleton
                    .entry(skeleton.clone())
                    .or_default()
                    .extend(ids.iter().cloned());
            }
            if p.merge_node_id.is_some() {
                phase.merge_node_id = p.merge_node_id.clone();
            }
            phase.state = p.state.clone();
            phase.updated = stamp.clone();
        }
    }

    /// `TextsErased`: the texts are blanked wherever they are shown.
    fn erase(&mut self, commitments: &[String]) {
        for c in commitments {
            if let Some(text) = self.texts.get_mut(c) {
                *text = None;
            }
        }
    }
}
