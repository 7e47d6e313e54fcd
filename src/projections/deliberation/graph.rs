//! The deliberation's start and its thought graph folded: nodes filed under their parents and
//! branch, edges with the strict relations' adjacency, score runs and prunes.
//!
//! Must not know: how scores or beams are decided (that is `app`), or any other family's facts.

use std::collections::{BTreeMap, HashMap};
use std::sync::Arc;

use super::{Deliberation, DeliberationState, Edge, Node, ScoreRun, Stamp};
use crate::events::TextLookup;
use crate::events::deliberation::{
    DeliberationStarted, EdgeAdded, NodeAdded, NodesPruned, NodesScored,
};

impl DeliberationState {
    /// `DeliberationStarted`: a new deliberation with its goal and constraints (a second start
    /// in the same session is ignored).
    pub(super) fn start(
        &mut self,
        d: &DeliberationStarted,
        stamp: &Stamp,
        lookup: &TextLookup<'_>,
    ) {
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
    pub(super) fn add_node(&mut self, n: &NodeAdded, stamp: &Stamp, lookup: &TextLookup<'_>) {
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
    pub(super) fn add_edge(&mut self, e: &EdgeAdded, stamp: &Stamp) {
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
    pub(super) fn score_nodes(&mut self, s: &NodesScored, stamp: &Stamp) {
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
    pub(super) fn prune_nodes(&mut self, p: &NodesPruned, stamp: &Stamp) {
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
}
