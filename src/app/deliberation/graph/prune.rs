//! prune_thoughts: the beam kept level by level from the nodes' scores (at most `beam_width`
//! per depth, none below `min_score`), the rest pruned. Must not know: how nodes were made or
//! scored.

use std::collections::{BTreeMap, HashMap, HashSet};

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::{Map, json};

use super::invalid;
use crate::app::ErrorCode;
use crate::app::call::{Call, Refusal};
use crate::app::deliberation::context::refuse;
use crate::app::deliberation::outputs::AnalysisOut;
use crate::app::{Outcome, lenient};
use crate::events::Fact;
use crate::events::deliberation::NodesPruned;
use crate::projections::Deliberation;
use crate::projections::deliberation::Node;

/// Arguments of `prune_thoughts`.
#[derive(Debug, Clone, Deserialize, JsonSchema)]
pub struct PruneArgs {
    /// How many candidates to keep at each depth level (at least 1).
    #[serde(deserialize_with = "lenient::u32_required")]
    #[schemars(with = "u32", range(min = 1))]
    pub beam_width: u32,
    /// Candidates scoring below this are pruned whatever their rank (in [0, 1]).
    #[serde(default)]
    #[schemars(with = "f64", range(min = 0.0, max = 1.0))]
    pub min_score: Option<f64>,
    /// Deliberation handle (`session_id` of an earlier response); omit for your current one.
    #[serde(default)]
    #[schemars(with = "String")]
    pub session_id: Option<String>,
}

/// A node a prune took out of the beam.
#[derive(Debug, Clone, Serialize, JsonSchema)]
pub struct PrunedNode {
    pub node_id: String,
    /// `beam` (outside the top beam_width of its level), `min_score`, or `ancestor_pruned`
    /// (every parent was pruned).
    pub reason: String,
    /// Its latest score (null for a node pruned with its ancestors that was never scored).
    pub score: Option<f64>,
    pub depth: u32,
}

/// Response of `prune_thoughts`.
#[derive(Debug, Clone, Serialize, JsonSchema)]
pub struct PruneOutput {
    pub session_id: String,
    pub deliberation_id: String,
    pub beam_width: u32,
    pub min_score: Option<f64>,
    pub pruned: Vec<PrunedNode>,
    /// Candidates kept in the beam, in node order.
    pub kept: Vec<String>,
    /// Live nodes after the prune.
    pub live_node_count: usize,
    pub analysis: AnalysisOut,
}

const PRUNE_USAGE: &str = "send {\"beam_width\": 2, \"min_score\": 0.4}";

/// Whether a node competes in the beam: live, not the goal, not a convergence summary.
fn is_candidate(d: &Deliberation, n: &Node) -> bool {
    n.pruned.is_none()
        && n.node_id != d.root_node_id
        && !matches!(n.kind.as_str(), "goal" | "convergence")
}

/// Decides `prune_thoughts`: the arguments, the candidates (every one scored), the beam level
/// by level, then the fact and the response.
pub(crate) fn decide_prune(call: &mut Call<'_>) -> Outcome {
    let args: PruneArgs = call.parse(PRUNE_USAGE)?;
    let d = call.open_deliberation(args.session_id.as_deref())?;
    if args.beam_width == 0 {
        return Err(invalid(
            d,
            "beam_width is 0",
            "keep at least 1 node per level",
        ));
    }
    if let Some(m) = args.min_score
        && (!m.is_finite() || !(0.0..=1.0).contains(&m))
    {
        return Err(invalid(
            d,
            format!("min_score is {m}; scores lie in [0, 1]"),
            "send min_score from 0 to 1, or omit it",
        ));
    }
    let candidates = scored_candidates(d)?;
    let width = usize::try_from(args.beam_width).unwrap_or(usize::MAX);
    let Beam { pruned, kept } = beam(d, width, args.min_score);
    let analysis = call.analysis(
        &d.user_mode,
        "prune.beam_by_level",
        "heuristic",
        candidates.iter().map(|n| n.node_id.clone()).collect(),
        &[
            "the beam ranks by the latest structural scores; a node changed since it was \
             scored keeps its old score until score_thoughts runs again",
            "a node is pruned with its ancestors only when every parent was pruned",
            "pruned nodes stay in the graph and the ledger, marked pruned",
        ],
    );
    let fact = Fact::NodesPruned(NodesPruned {
        session_id: d.session_id.clone(),
        node_ids: pruned.iter().map(|p| p.node_id.clone()).collect(),
        kept: kept.clone(),
        beam_width: args.beam_width,
        min_score: args.min_score,
    });
    let body = PruneOutput {
        session_id: d.session_id.to_string(),
        deliberation_id: d.deliberation_id.clone(),
        beam_width: args.beam_width,
        min_score: args.min_score,
        live_node_count: d.live_nodes().count().saturating_sub(pruned.len()),
        pruned,
        kept,
        analysis: AnalysisOut::from(&analysis),
    };
    call.done(Some(d.session_id.clone()), vec![fact], body)
}

/// The nodes competing in the beam; refused when there is none, or when one has no score yet
/// (the details list them).
fn scored_candidates(d: &Deliberation) -> Result<Vec<&Node>, Refusal> {
    let candidates: Vec<_> = d.nodes.iter().filter(|n| is_candidate(d, n)).collect();
    if candidates.is_empty() {
        return Err(refuse(
            d,
            ErrorCode::NothingToPrune,
            "there is no live node to prune besides the root",
            "add and score thoughts first",
        ));
    }
    let unscored: Vec<&str> = candidates
        .iter()
        .filter(|n| n.score.is_none())
        .map(|n| n.node_id.as_str())
        .collect();
    if !unscored.is_empty() {
        let mut details = Map::new();
        details.insert("node_ids".to_owned(), json!(unscored));
        let (rejection, session) = refuse(
            d,
            ErrorCode::UnscoredNodes,
            format!(
                "these candidates have no score yet: {}",
                unscored.join(", ")
            ),
            "run score_thoughts (with no node_ids it scores every live node), then prune",
        );
        return Err((rejection.with_details(details), session));
    }
    Ok(candidates)
}

/// What a prune keeps and drops, each in creation order.
struct Beam {
    pruned: Vec<PrunedNode>,
    kept: Vec<String>,
}

/// The beam, level by level from the top, so a level's beam is chosen among the children of
/// what survived above it: a node whose every parent was pruned goes with them
/// (`ancestor_pruned`); of the rest, best score first (equal scores keep node order), one below
/// `min_score` is pruned (`min_score`), and past the first `width` (`beam`).
fn beam(d: &Deliberation, width: usize, min_score: Option<f64>) -> Beam {
    let mut pruned: Vec<PrunedNode> = Vec::new();
    let mut gone: HashSet<&str> = HashSet::new();
    let mut kept: Vec<&str> = Vec::new();
    let mut by_depth: BTreeMap<u32, Vec<&Node>> = BTreeMap::new();
    for n in d.live_nodes().filter(|n| n.node_id != d.root_node_id) {
        by_depth.entry(n.depth).or_default().push(n);
    }
    for level in by_depth.values() {
        let mut contenders = Vec::new();
        for n in level {
            let orphaned =
                !n.parent_ids.is_empty() && n.parent_ids.iter().all(|p| gone.contains(p.as_str()));
            if orphaned {
                gone.insert(&n.node_id);
                pruned.push(PrunedNode {
                    node_id: n.node_id.clone(),
                    reason: "ancestor_pruned".to_owned(),
                    score: n.score,
                    depth: n.depth,
                });
            } else if is_candidate(d, n) {
                contenders.push(*n);
            }
        }
        // Stable: equal scores keep node order.
        contenders.sort_by(|a, b| b.score.unwrap_or(0.0).total_cmp(&a.score.unwrap_or(0.0)));
        for (rank, n) in contenders.into_iter().enumerate() {
            let score = n.score.unwrap_or(0.0);
            let reason = if min_score.is_some_and(|m| score < m) {
                Some("min_score")
            } else if rank >= width {
                Some("beam")
            } else {
                None
            };
            match reason {
                Some(reason) => {
                    gone.insert(&n.node_id);
                    pruned.push(PrunedNode {
                        node_id: n.node_id.clone(),
                        reason: reason.to_owned(),
                        score: n.score,
                        depth: n.depth,
                    });
                }
                None => kept.push(&n.node_id),
            }
        }
    }
    // Creation order, looked up once per node (not by scanning the graph per comparison).
    let position: HashMap<&str, usize> = d
        .nodes
        .iter()
        .enumerate()
        .map(|(i, n)| (n.node_id.as_str(), i))
        .collect();
    let order = |id: &str| position.get(id).copied();
    pruned.sort_by_key(|p| order(&p.node_id));
    kept.sort_by_key(|id| order(id));
    Beam {
        pruned,
        kept: kept.into_iter().map(str::to_owned).collect(),
    }
}
