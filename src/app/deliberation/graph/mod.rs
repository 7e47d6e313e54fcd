//! The thought graph's tools: starting a deliberation, adding caller nodes with typed edges,
//! heuristic expansion by lenses, algorithm templates and reasoning patterns, the scoring
//! rubric, structural scoring, beam pruning and refinement.
//!
//! Everything here is deterministic: heuristic nodes are prompt templates that quote the node
//! they start from (never semantic output), scores are computed from the graph's structure,
//! the caller's verification results and the words of the texts, and ids are numbered from the
//! projection's counts. Owns: these rules and the lens, template and pattern registries. Must
//! not know: MCP, storage, the clock.
//!
//! Layout: this file holds what the tools share (turning a graph edit into facts and response
//! parts, anchors, branch ids); [`nodes`] the tools that place one node (start_deliberation,
//! add_thought_node, refine_thoughts); [`expand`] the lenses and expand_thoughts; [`registry`]
//! the algorithm templates and reasoning patterns and the tools that apply them; [`scoring`]
//! the rubric and score_thoughts; [`prune`] prune_thoughts. Every tool's types are re-exported here, so
//! callers name them `graph::…`.

mod expand;
mod nodes;
mod prune;
mod registry;
mod scoring;
#[cfg(test)]
mod tests;

use std::collections::{BTreeSet, HashMap};

use schemars::JsonSchema;
use serde::Serialize;

pub use expand::{ExpandArgs, ExpandOutput, LENSES, Lens};
pub(crate) use expand::{decide_expand, plan_expand};
pub use nodes::{
    AddNodeArgs, AddNodeOutput, BudgetsOut, EdgeArg, RefineArgs, RefineOutput, StartArgs,
    StartOutput,
};
pub(crate) use nodes::{decide_add_node, decide_refine, decide_start};
pub(crate) use prune::decide_prune;
pub use prune::{PruneArgs, PruneOutput, PrunedNode};
pub use registry::{
    AlgorithmTemplate, PATTERNS, PatternArgs, PatternOutput, ReasoningPattern, TEMPLATES,
    TemplateArgs, TemplateEdge, TemplateOutput, TemplateStep,
};
pub(crate) use registry::{decide_pattern, decide_template, patterns, templates};
pub use scoring::{
    DEFAULT_WEIGHTS, DIMENSIONS, RubricArgs, RubricOutput, ScoreArgs, ScoreOutput, ScoredNode,
};
pub(crate) use scoring::{decide_rubric, decide_score, plan_score};

use crate::app::ErrorCode;
use crate::app::call::{Call, Refusal};
use crate::app::deliberation::context::refuse;
use crate::app::deliberation::graph_edit::GraphEdit;
use crate::app::deliberation::outputs::NodeOut;
use crate::events::Fact;
use crate::events::deliberation::ScannedText;
use crate::projections::Deliberation;

// ---------------------------------------------------------------------------------------------
// Shared response parts
// ---------------------------------------------------------------------------------------------

/// What is left of the budgets after the call.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, JsonSchema)]
pub struct BudgetRemaining {
    /// Nodes that may still be added (max_nodes − node_count).
    pub nodes: u32,
    /// Levels still allowed below the deepest node (max_depth − graph depth).
    pub depth_levels: u32,
    /// How many children one expand_thoughts call may create.
    pub max_expansions_per_call: u32,
}

/// An edge this call added. `from → to` reads "from supports to", "from depends_on to", …
#[derive(Debug, Clone, PartialEq, Eq, Serialize, JsonSchema)]
pub struct EdgeOut {
    pub from: String,
    pub to: String,
    pub edge_type: String,
}

/// Text shown for a node whose content was erased.
const ERASED: &str = "(content erased)";

/// The text a node shows (a placeholder once erased).
fn node_text<'a>(call: &Call<'a>, d: &'a Deliberation, id: &str) -> &'a str {
    let app = call.app;
    d.node(id)
        .and_then(|n| app.deliberations().text(&n.content))
        .unwrap_or(ERASED)
}

/// A derived text as node content: nothing to redact (it quotes only stored, already scanned
/// texts), so it is its own original.
fn derived(call: &mut Call<'_>, text: &str) -> ScannedText {
    ScannedText {
        text: call.derive_text(text),
        original: None,
        redactions: Vec::new(),
    }
}

/// The nodes and edges a graph edit planned, as the response shows them, and the facts.
struct Applied {
    facts: Vec<Fact>,
    nodes: Vec<NodeOut>,
    edges: Vec<EdgeOut>,
    node_count: usize,
    remaining: BudgetRemaining,
}

impl Applied {
    /// The node of an edit that planned one, taken out of the parts.
    fn take_node(&mut self, d: &Deliberation) -> Result<NodeOut, Refusal> {
        std::mem::take(&mut self.nodes)
            .into_iter()
            .next()
            .ok_or_else(|| invalid(d, "no node was planned", "retry the call"))
    }
}

/// Turns a finished edit into facts and response parts; `shown` holds each new node's text.
fn finish(edit: GraphEdit<'_>, shown: &HashMap<String, String>, at: &str) -> Applied {
    let d = edit.d;
    let nodes: Vec<NodeOut> = edit
        .planned()
        .iter()
        .map(|n| {
            let text = shown.get(&n.node_id).map_or(ERASED, String::as_str);
            NodeOut::planned(n, text, at)
        })
        .collect();
    let node_count = d.nodes.len() + nodes.len();
    let depth = nodes
        .iter()
        .map(|n| n.depth)
        .max()
        .unwrap_or(0)
        .max(d.graph_depth());
    let facts = edit.into_facts();
    let edges = facts
        .iter()
        .filter_map(|f| match f {
            Fact::EdgeAdded(e) => Some(EdgeOut {
                from: e.from.clone(),
                to: e.to.clone(),
                edge_type: e.edge_type.clone(),
            }),
            _ => None,
        })
        .collect();
    let count = u32::try_from(node_count).unwrap_or(u32::MAX);
    Applied {
        facts,
        nodes,
        edges,
        node_count,
        remaining: BudgetRemaining {
            nodes: d.budgets.max_nodes.saturating_sub(count),
            depth_levels: d.budgets.max_depth.saturating_sub(depth),
            max_expansions_per_call: d.budgets.max_expansions_per_call,
        },
    }
}

/// A fresh branch id for the `k`-th new line of thought under `anchor`: `b-<anchor>-<k>`,
/// skipping ids already in use (so two calls never share a branch by accident).
fn fresh_branch(d: &Deliberation, anchor: &str, taken: &mut BTreeSet<String>) -> String {
    let mut k = d.children(anchor).len() + 1;
    loop {
        let id = format!("b-{anchor}-{k}");
        if !d.branch_index.contains_key(&id) && taken.insert(id.clone()) {
            return id;
        }
        k += 1;
    }
}

fn invalid(d: &Deliberation, message: impl Into<String>, suggestion: &str) -> Refusal {
    refuse(
        d,
        ErrorCode::InvalidArguments,
        message,
        suggestion.to_owned(),
    )
}

/// A graph edit anchored at the node `node_id` names: it must exist and still be live (new
/// work hangs off live nodes, never off one that left the beam).
fn edit_at_live_node<'a>(d: &'a Deliberation, id: &str) -> Result<GraphEdit<'a>, Refusal> {
    let edit = GraphEdit::new(d);
    edit.require_node(id, "node_id")?;
    if d.node(id).is_some_and(|n| n.pruned.is_some()) {
        return Err(refuse(
            d,
            ErrorCode::NodePruned,
            format!("{id} was pruned; it no longer takes part in the search"),
            "continue from a live node (prune_thoughts lists the kept ones), or add a new \
             thought with add_thought_node",
        ));
    }
    Ok(edit)
}
