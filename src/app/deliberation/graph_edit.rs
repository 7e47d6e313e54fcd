//! The graph edit: a planned change to a deliberation's thought graph (new nodes and typed
//! edges), checked against its budgets, its nodes and the acyclicity of strict edges before any
//! fact is made; node ids are numbered here. Also the edge types themselves.
//!
//! Owns those checks. Must not know MCP, storage or any other family.

use std::collections::HashSet;

use super::context::refuse;
use crate::app::ErrorCode;
use crate::app::call::Refusal;
use crate::events::Fact;
use crate::events::deliberation::{AnalysisMetadata, EdgeAdded, NodeAdded, ScannedText};
use crate::projections::Deliberation;

/// The eleven edge types of the thought graph.
pub const EDGE_TYPES: &[&str] = &[
    "supports",
    "conflicts",
    "depends_on",
    "refines",
    "subsumes",
    "analogous_to",
    "contradicts_fatally",
    "temporally_precedes",
    "requires_grounding",
    "contextualizes",
    "exemplifies",
];

/// Edge types that must stay acyclic.
pub const STRICT_EDGE_TYPES: &[&str] = &["depends_on", "refines"];

/// A planned change to the graph: new nodes and edges, checked against the deliberation's
/// budgets, its nodes and the strict-edge acyclicity before any fact exists.
pub struct GraphEdit<'a> {
    pub d: &'a Deliberation,
    nodes: Vec<NodeAdded>,
    edges: Vec<EdgeAdded>,
}

impl<'a> GraphEdit<'a> {
    pub fn new(d: &'a Deliberation) -> Self {
        Self {
            d,
            nodes: Vec::new(),
            edges: Vec::new(),
        }
    }

    /// The id the next node will get.
    pub fn next_node_id(&self) -> String {
        format!("node-{}", self.d.nodes.len() + self.nodes.len() + 1)
    }

    fn depth_of(&self, id: &str) -> Option<u32> {
        self.d
            .node(id)
            .map(|n| n.depth)
            .or_else(|| self.nodes.iter().find(|n| n.node_id == id).map(|n| n.depth))
    }

    pub fn has_node(&self, id: &str) -> bool {
        self.depth_of(id).is_some()
    }

    /// Refuses a node id the graph does not hold.
    pub fn require_node(&self, id: &str, role: &str) -> Result<(), Refusal> {
        if self.has_node(id) {
            return Ok(());
        }
        Err(refuse(
            self.d,
            ErrorCode::UnknownNode,
            format!("{role} \"{id}\" is not a node of this deliberation"),
            format!(
                "use a node id returned earlier (node-1 … node-{}); reasoning://session/{}/… \
                 and replay_reasoning_session list them",
                self.d.nodes.len(),
                self.d.session_id
            ),
        ))
    }

    /// Adds a node under `parents` (which must exist); checks the node and depth budgets.
    pub fn add_node(
        &mut self,
        parents: Vec<String>,
        content: ScannedText,
        branch_id: String,
        kind: &str,
        tags: Vec<String>,
        analysis: AnalysisMetadata,
    ) -> Result<String, Refusal> {
        let budgets = self.d.budgets;
        let total = self.d.nodes.len() + self.nodes.len();
        if total >= budgets.max_nodes as usize {
            return Err(refuse(
                self.d,
                ErrorCode::BudgetExceeded,
                format!(
                    "the node budget is spent: this deliberation holds {total} of at most {} \
                     nodes",
                    budgets.max_nodes
                ),
                "prune_thoughts to focus, converge_reasoning with what you have, or start a new \
                 deliberation with a larger budgets.max_nodes (or the deep profile)",
            ));
        }
        let mut depth = 0;
        for parent in &parents {
            self.require_node(parent, "parent")?;
            depth = depth.max(self.depth_of(parent).unwrap_or(0) + 1);
        }
        if depth > budgets.max_depth {
            return Err(refuse(
                self.d,
                ErrorCode::BudgetExceeded,
                format!(
                    "this node would sit at depth {depth}; the budget allows at most {}",
                    budgets.max_depth
                ),
                "attach it higher in the graph, refine an existing node instead, or start a new \
                 deliberation with a larger budgets.max_depth",
            ));
        }
        let node_id = self.next_node_id();
        self.nodes.push(NodeAdded {
            session_id: self.d.session_id.clone(),
            node_id: node_id.clone(),
            parent_ids: parents,
            content,
            branch_id,
            depth,
            kind: kind.to_owned(),
            tags,
            analysis,
        });
        Ok(node_id)
    }

    /// Adds a typed edge; refuses unknown types and nodes, self-loops, duplicates, and a
    /// `depends_on` / `refines` edge that would close a cycle.
    pub fn add_edge(&mut self, from: &str, to: &str, edge_type: &str) -> Result<(), Refusal> {
        if !EDGE_TYPES.contains(&edge_type) {
            return Err(refuse(
                self.d,
                ErrorCode::InvalidEdgeType,
                format!("\"{edge_type}\" is not an edge type"),
                format!("use one of: {}", EDGE_TYPES.join(", ")),
            ));
        }
        self.require_node(from, "edge source")?;
        self.require_node(to, "edge target")?;
        if from == to {
            return Err(refuse(
                self.d,
                ErrorCode::InvalidEdge,
                format!("an edge from {from} to itself"),
                "relate two different nodes",
            ));
        }
        let exists = |e: (&str, &str, &str)| e == (from, to, edge_type);
        if self
            .d
            .edges
            .iter()
            .any(|e| exists((&e.from, &e.to, &e.edge_type)))
            || self
                .edges
                .iter()
                .any(|e| exists((&e.from, &e.to, &e.edge_type)))
        {
            return Ok(());
        }
        if STRICT_EDGE_TYPES.contains(&edge_type) && self.strictly_reaches(to, from) {
            return Err(refuse(
                self.d,
                ErrorCode::CycleDetected,
                format!(
                    "{from} {edge_type} {to} would close a cycle: {to} already reaches {from} \
                     through depends_on / refines edges"
                ),
                "depends_on and refines must stay acyclic; reverse the relation or relate the \
                 nodes with another edge type (supports, conflicts, contextualizes, …)",
            ));
        }
        self.edges.push(EdgeAdded {
            session_id: self.d.session_id.clone(),
            from: from.to_owned(),
            to: to.to_owned(),
            edge_type: edge_type.to_owned(),
        });
        Ok(())
    }

    fn strictly_reaches(&self, from: &str, to: &str) -> bool {
        let mut stack = vec![from.to_owned()];
        let mut seen = HashSet::new();
        while let Some(at) = stack.pop() {
            if at == to {
                return true;
            }
            if !seen.insert(at.clone()) {
                continue;
            }
            if let Some(next) = self.d.strict_adjacency.get(&at) {
                stack.extend(next.iter().cloned());
            }
            for e in &self.edges {
                if e.from == at && STRICT_EDGE_TYPES.contains(&e.edge_type.as_str()) {
                    stack.push(e.to.clone());
                }
            }
        }
        false
    }

    /// The nodes planned so far.
    pub fn planned(&self) -> &[NodeAdded] {
        &self.nodes
    }

    /// The facts: nodes first, then edges.
    pub fn into_facts(self) -> Vec<Fact> {
        let mut facts: Vec<Fact> = self.nodes.into_iter().map(Fact::NodeAdded).collect();
        facts.extend(self.edges.into_iter().map(Fact::EdgeAdded));
        facts
    }
}
