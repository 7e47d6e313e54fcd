//! Facts of the deliberation workspace (ReasonKit Think v2): deliberations, the thought DAG and
//! its typed edges, scoring and pruning, the assumption ledger, verification, quality
//! checkpoints and route decisions, skeleton-of-thought phases, consensus.
//!
//! Pure data, like the rest of `events`. Every free text a caller sent or a rule derived from
//! caller text is a [`TextRef`] (erasable); only ids, enums, numbers and rule-generated wording
//! that quotes no caller text are inline. Ids (`node-3`, `claim-2`, …) are scoped to their
//! session and numbered in order of creation, so a replay re-derives them.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use super::{SessionId, TextRef};

/// Per-session limits, fixed when the deliberation starts.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Budgets {
    pub max_nodes: u32,
    pub max_depth: u32,
    pub max_expansions_per_call: u32,
    pub max_verification_questions: u32,
}

/// A span of caller text replaced because it matched a prompt-injection rule. Offsets are in
/// Unicode scalar values of the original text, end exclusive.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Redaction {
    /// The argument path the text came from, e.g. `content` or `claims[1].text`.
    pub field: String,
    /// The rule that matched, e.g. `override_instructions`.
    pub rule: String,
    pub start: u32,
    pub end: u32,
}

/// A stored caller text after the injection scan: what is shown, and, when something was
/// redacted, the original (kept only in the erasable text store) and what was cut.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ScannedText {
    /// The text as shown (redacted if anything matched).
    pub text: TextRef,
    /// The text as sent, when it differs from `text`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub original: Option<TextRef>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub redactions: Vec<Redaction>,
}

/// Where a derived output came from (the seed's AnalysisMetadata).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct AnalysisMetadata {
    /// User-facing thinking mode in force (`Auto`, `Quick`, `Explore`, `Map`, `Sketch`, `Test`).
    pub mode: String,
    /// The rule or method that produced the output, e.g. `expand.lens_templates`.
    pub method: String,
    /// `heuristic`, `sot_heuristic_scaffold` or `caller` (text the caller wrote).
    pub provider: String,
    /// The model, when a model produced it; null for every output of this build.
    pub model: Option<String>,
    /// When it was derived: the `recordedAt` of the event that recorded it.
    pub generated_at: String,
    /// The nodes it was derived from.
    pub source_node_ids: Vec<String>,
    /// What it does not do or know, in plain words.
    pub limitations: Vec<String>,
}

/// A deliberation was opened in a session (one per session).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct DeliberationStarted {
    pub session_id: SessionId,
    pub deliberation_id: String,
    pub goal: ScannedText,
    pub constraints: Vec<ScannedText>,
    /// `Auto`, `Quick`, `Explore`, `Map`, `Sketch` or `Test`.
    pub user_mode: String,
    /// `cot`, `tot`, `got` or `reasonkit`.
    pub internal_method: String,
    /// `quick`, `balanced`, `deep` or `paranoid`.
    pub profile: String,
    pub budgets: Budgets,
    /// The id of the root node (the goal), added by a [`NodeAdded`] in the same event.
    pub root_node_id: String,
}

/// A node joined the thought DAG.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct NodeAdded {
    pub session_id: SessionId,
    pub node_id: String,
    pub parent_ids: Vec<String>,
    pub content: ScannedText,
    pub branch_id: String,
    /// Longest path from the root (the root is 0).
    pub depth: u32,
    /// `goal`, `thought`, `expansion`, `template`, `pattern`, `refinement`, `skeleton`,
    /// `elaboration`, `merge`, `stage`, `convergence`.
    pub kind: String,
    pub tags: Vec<String>,
    pub analysis: AnalysisMetadata,
}

/// A typed edge between two nodes. `from → to` reads "from supports to", "from depends_on to",
/// "from refines to", and so on.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct EdgeAdded {
    pub session_id: SessionId,
    pub from: String,
    pub to: String,
    /// One of the eleven edge types.
    pub edge_type: String,
}

/// The scoring rubric's dimension weights were set.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct RubricSet {
    pub session_id: SessionId,
    /// Weight by dimension, each in [0, 1]; dimensions not named weigh 0.
    pub weights: BTreeMap<String, f64>,
}

/// One node's score in a scoring run.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct NodeScore {
    pub node_id: String,
    /// Weighted score in [0, 1].
    pub score: f64,
    /// Each dimension's value in [0, 1].
    pub dimensions: BTreeMap<String, f64>,
}

/// Nodes were scored.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct NodesScored {
    pub session_id: SessionId,
    pub score_run_id: String,
    pub scores: Vec<NodeScore>,
    /// The weights used.
    pub weights: BTreeMap<String, f64>,
    pub analysis: AnalysisMetadata,
}

/// Nodes were pruned (they stay in the graph, marked pruned, and leave the beam).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct NodesPruned {
    pub session_id: SessionId,
    pub node_ids: Vec<String>,
    /// Nodes kept in the beam.
    pub kept: Vec<String>,
    pub beam_width: u32,
    /// Nodes below this score were pruned regardless of rank, when given.
    pub min_score: Option<f64>,
}

/// An assumption entered the ledger.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct AssumptionRecorded {
    pub session_id: SessionId,
    pub assumption_id: String,
    pub text: ScannedText,
    /// `low`, `medium`, `high` or `critical`.
    pub criticality: String,
    /// Whether evidence could settle it.
    pub verifiable: bool,
    pub source_node_ids: Vec<String>,
    /// `unverified` when recorded.
    pub status: String,
    pub analysis: AnalysisMetadata,
}

/// An assumption's status changed.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct AssumptionStatusSet {
    pub session_id: SessionId,
    pub assumption_id: String,
    /// `unverified`, `validated`, `falsified` or `retracted`.
    pub status: String,
    pub evidence: Vec<ScannedText>,
    pub rationale: Option<ScannedText>,
}

/// A claim under verification.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ClaimRecorded {
    pub claim_id: String,
    pub text: ScannedText,
    /// `low`, `medium`, `high` or `critical`.
    pub criticality: String,
    /// Nodes the claim is made in.
    pub node_ids: Vec<String>,
}

/// A piece of caller-supplied evidence.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct EvidenceRecorded {
    pub evidence_id: String,
    /// Where it comes from (a citation, a URL, a document name), as the caller gave it.
    pub source: ScannedText,
    /// What it says, when given.
    pub excerpt: Option<ScannedText>,
    /// `primary`, `secondary` or `tertiary`.
    pub tier: String,
    /// Evidence sharing a group is one source for independence counts.
    pub independence_group: String,
    pub supports_claims: Vec<String>,
    pub refutes_claims: Vec<String>,
}

/// A caller's resolution of a claim whose sources conflict.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ConflictResolved {
    pub claim_id: String,
    /// `verified` or `refuted`.
    pub outcome: String,
    pub rationale: ScannedText,
}

/// A verification question generated for a claim (chain-of-verification).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct VerificationQuestion {
    pub claim_id: String,
    pub question: TextRef,
}

/// A verification round: new claims, new evidence, resolutions, and every touched claim's
/// status as the rules derive it from all evidence so far.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct VerificationRecorded {
    pub session_id: SessionId,
    pub verification_id: String,
    pub claims: Vec<ClaimRecorded>,
    pub evidence: Vec<EvidenceRecorded>,
    pub resolutions: Vec<ConflictResolved>,
    pub questions: Vec<VerificationQuestion>,
    /// Status by claim id after this round: `unverified`, `insufficient_evidence`, `verified`,
    /// `refuted` or `contested`.
    pub statuses: BTreeMap<String, String>,
    pub analysis: AnalysisMetadata,
}

/// A route decision (the seed's RouteDecision).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct RouteDecision {
    pub decision: String,
    /// Heuristic route confidence in [0, 1]; not a semantic calibration.
    pub confidence: f64,
    pub rationale: String,
    pub blocking_gaps: Vec<String>,
}

/// A route was decided and recorded in a session (router, autopilot, mode runs).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct RouteDecided {
    pub session_id: SessionId,
    pub route_id: String,
    /// The tool that decided it.
    pub source: String,
    pub user_mode: String,
    pub internal_method: String,
    pub decision: RouteDecision,
}

/// One gap that blocks convergence or consensus.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct BlockingGap {
    /// Which gate: one of the guard's checks (`no_unresolved_critical_claim`,
    /// `no_unhandled_source_conflict`, `no_blocking_assumption`, `diversity_floor`,
    /// `route_decision_emitted`) or `quality_threshold`.
    pub check: String,
    /// What blocks, by id (claim, assumption, node), when it is one thing.
    pub subject: Option<String>,
    /// In plain words.
    pub detail: String,
}

/// A quality gate was run and kept (the seed's QualityCheckpoint).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct CheckpointRecorded {
    pub session_id: SessionId,
    pub checkpoint_id: String,
    pub quality_score: f64,
    pub quality_tier: String,
    pub route_decision: RouteDecision,
    pub blocking_gaps: Vec<BlockingGap>,
    pub recommended_tools: Vec<String>,
    /// The skeleton phase this checkpoint was taken for, if any.
    pub phase_id: Option<String>,
    pub analysis: AnalysisMetadata,
}

/// The deliberation's status changed: `converged` (a convergence node was made) or
/// `concluded` (a consensus answer was given).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct DeliberationStatusChanged {
    pub session_id: SessionId,
    pub status: String,
    /// The convergence node, for `converged`.
    pub node_id: Option<String>,
    /// The quality score at the change.
    pub quality_score: Option<f64>,
}

/// The result of one policy-guard check at consensus.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct GuardCheck {
    pub check: String,
    pub passed: bool,
    pub detail: String,
}

/// A consensus answer passed the policy guard.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ConsensusReached {
    pub session_id: SessionId,
    pub answer: ScannedText,
    /// Heuristic confidence in [0, 1] (structure and evidence, not semantics).
    pub confidence: f64,
    pub route_decision: RouteDecision,
    pub checks: Vec<GuardCheck>,
    pub analysis: AnalysisMetadata,
}

/// How well a problem suits skeleton-of-thought.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Suitability {
    pub suitable: bool,
    pub score: f64,
    pub reasons: Vec<String>,
}

/// A skeleton-of-thought phase began: its skeleton nodes are added in the same event.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct SkeletonPhaseStarted {
    pub session_id: SessionId,
    pub phase_id: String,
    pub source_node_id: String,
    /// `bullet`, `numbered` or `sections`.
    pub style: String,
    pub suitability: Suitability,
    pub skeleton_node_ids: Vec<String>,
    pub prompt_pack: String,
    pub analysis: AnalysisMetadata,
}

/// Elaborations were added to a skeleton phase (nodes added in the same event).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct SkeletonElaborated {
    pub session_id: SessionId,
    pub phase_id: String,
    /// New elaboration nodes by skeleton node.
    pub elaboration_node_ids_by_skeleton: BTreeMap<String, Vec<String>>,
    pub merge_node_id: Option<String>,
    /// `skeleton`, `elaborating` or `merged`.
    pub state: String,
}
