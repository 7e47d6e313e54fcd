//! How responses and resources show a deliberation: nodes, analysis metadata, redactions,
//! route decisions and blocking gaps in the seed's shapes (snake_case), and whether an
//! assumption blocks consensus.
//!
//! Pure conversions from facts and the projection. Must not know MCP or storage.

use crate::events::deliberation::{AnalysisMetadata, NodeAdded, Redaction};

/// Analysis metadata as responses show it (the seed's AnalysisMetadata, snake_case).
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, schemars::JsonSchema)]
pub struct AnalysisOut {
    pub mode: String,
    pub method: String,
    /// `heuristic`, `sot_heuristic_scaffold` or `caller`.
    pub provider: String,
    /// Always null in this build: no model produced anything.
    pub model: Option<String>,
    pub generated_at: String,
    pub source_node_ids: Vec<String>,
    pub limitations: Vec<String>,
}

impl From<&AnalysisMetadata> for AnalysisOut {
    fn from(a: &AnalysisMetadata) -> Self {
        Self {
            mode: a.mode.clone(),
            method: a.method.clone(),
            provider: a.provider.clone(),
            model: a.model.clone(),
            generated_at: a.generated_at.clone(),
            source_node_ids: a.source_node_ids.clone(),
            limitations: a.limitations.clone(),
        }
    }
}

/// A redacted span as responses show it.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, schemars::JsonSchema)]
pub struct RedactionOut {
    pub field: String,
    pub rule: String,
    /// Character offsets into the original text, end exclusive.
    pub start: u32,
    pub end: u32,
}

impl From<&Redaction> for RedactionOut {
    fn from(r: &Redaction) -> Self {
        Self {
            field: r.field.clone(),
            rule: r.rule.clone(),
            start: r.start,
            end: r.end,
        }
    }
}

/// A node as responses and resources show it (the seed's DeliberationNode).
#[derive(Debug, Clone, PartialEq, serde::Serialize, schemars::JsonSchema)]
pub struct NodeOut {
    pub node_id: String,
    pub parent_ids: Vec<String>,
    /// The content as stored (redacted if the scan matched); null once erased.
    pub content: Option<String>,
    pub branch_id: String,
    pub depth: u32,
    pub kind: String,
    pub tags: Vec<String>,
    /// Latest heuristic score in [0, 1], if scored.
    pub score: Option<f64>,
    pub pruned: bool,
    pub created_at: String,
    /// Where the content came from: `caller`, `heuristic`, `sot_heuristic_scaffold`.
    pub provenance: String,
    pub redactions: Vec<RedactionOut>,
    pub analysis: AnalysisOut,
}

impl NodeOut {
    /// A node of the projection.
    pub fn of(
        state: &crate::projections::DeliberationState,
        n: &crate::projections::deliberation::Node,
    ) -> Self {
        Self {
            node_id: n.node_id.clone(),
            parent_ids: n.parent_ids.clone(),
            content: state.text(&n.content).map(str::to_owned),
            branch_id: n.branch_id.clone(),
            depth: n.depth,
            kind: n.kind.clone(),
            tags: n.tags.clone(),
            score: n.score,
            pruned: n.pruned.is_some(),
            created_at: n.created.at.clone(),
            provenance: n.analysis.provider.clone(),
            redactions: n
                .content
                .redactions
                .iter()
                .map(RedactionOut::from)
                .collect(),
            analysis: AnalysisOut::from(&n.analysis),
        }
    }

    /// A node this call is adding, with the text it shows (`shown`).
    pub fn planned(n: &NodeAdded, shown: &str, at: &str) -> Self {
        Self {
            node_id: n.node_id.clone(),
            parent_ids: n.parent_ids.clone(),
            content: Some(shown.to_owned()),
            branch_id: n.branch_id.clone(),
            depth: n.depth,
            kind: n.kind.clone(),
            tags: n.tags.clone(),
            score: None,
            pruned: false,
            created_at: at.to_owned(),
            provenance: n.analysis.provider.clone(),
            redactions: n
                .content
                .redactions
                .iter()
                .map(RedactionOut::from)
                .collect(),
            analysis: AnalysisOut::from(&n.analysis),
        }
    }
}

/// A route decision as responses show it (the seed's RouteDecision).
#[derive(Debug, Clone, PartialEq, serde::Serialize, schemars::JsonSchema)]
pub struct RouteDecisionOut {
    pub decision: String,
    /// Heuristic route confidence in [0, 1], not a semantic calibration.
    pub confidence: f64,
    pub rationale: String,
    pub blocking_gaps: Vec<String>,
}

impl From<&crate::events::deliberation::RouteDecision> for RouteDecisionOut {
    fn from(r: &crate::events::deliberation::RouteDecision) -> Self {
        Self {
            decision: r.decision.clone(),
            confidence: r.confidence,
            rationale: r.rationale.clone(),
            blocking_gaps: r.blocking_gaps.clone(),
        }
    }
}

/// A blocking gap as responses show it.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, schemars::JsonSchema)]
pub struct BlockingGapOut {
    pub check: String,
    pub subject: Option<String>,
    pub detail: String,
}

impl From<&crate::events::deliberation::BlockingGap> for BlockingGapOut {
    fn from(g: &crate::events::deliberation::BlockingGap) -> Self {
        Self {
            check: g.check.clone(),
            subject: g.subject.clone(),
            detail: g.detail.clone(),
        }
    }
}

/// Whether an assumption blocks consensus (guard check 3): high or critical, verifiable, and
/// unverified or falsified.
pub fn assumption_blocks(a: &crate::projections::deliberation::Assumption) -> bool {
    super::governance::assumption_blocks(&a.criticality, a.verifiable, &a.status)
}
