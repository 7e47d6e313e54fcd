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
//! `record_verification`, …), kept by family in the modules below: `graph` (the deliberation,
//! its nodes, edges, scores and prunes), `governance` (assumptions, verification, routes,
//! checkpoints, status and consensus) and `skeleton` (skeleton phases). The state is cheap to clone, because the writer publishes a copy
//! after every batch for reads to use: deliberations and texts sit in persistent maps (`imbl`),
//! each deliberation behind an `Arc` that a step copies only when a published view still
//! shares it (`Arc::make_mut`), once per batch.

use std::collections::{BTreeMap, HashMap};
use std::sync::Arc;

use serde::{Deserialize, Serialize};

use crate::events::deliberation::{
    AnalysisMetadata, BlockingGap, Budgets, GuardCheck, Redaction, RouteDecision, ScannedText,
    Suitability,
};
use crate::events::{Event, Fact, SessionId, TextLookup, TextRef};

mod governance;
mod graph;
mod skeleton;

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

    /// `TextsErased`: the texts are blanked wherever they are shown.
    fn erase(&mut self, commitments: &[String]) {
        for c in commitments {
            if let Some(text) = self.texts.get_mut(c) {
                *text = None;
            }
        }
    }
}
