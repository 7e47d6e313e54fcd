//! `decompose_problem`'s rules: a sub-problem tree, its dependencies and an execution order.
//!
//! Depth 1 is the problem. Depth 2: the problem's own parts when it lists several (split on
//! `;`, `, and`, ` and then `, ` then `, `,`), else the four phases of the template (understand,
//! design, carry out, verify). Depth 3: each phase's template tasks (a part of the caller's is
//! treated as a phase to carry out). Depth 4 and 5: each node's preparation and its completion
//! check. Dependencies: every parent → child (`hierarchical`), each sibling → the next
//! (`sequential`: parts and phases are done in order). The graph is checked for cycles and
//! ordered topologically (Kahn's algorithm, ties broken by tree order), so `executionOrder` is
//! a topological order whenever one exists.
//!
//! Pure. Must not know MCP or the ledger.

use std::collections::{BTreeMap, VecDeque};

use schemars::JsonSchema;
use serde::Serialize;

/// The rule set and version every answer names.
pub const RULES: &str = "thinkledger.cognition.decompose/2";

const PHASES: [(&str, [&str; 3]); 4] = [
    (
        "Understand and define",
        [
            "Clarify goals and success criteria",
            "Gather requirements and constraints",
            "Identify stakeholders and risks",
        ],
    ),
    (
        "Design the approach",
        [
            "Generate candidate approaches",
            "Evaluate candidates against the criteria",
            "Choose and plan the approach",
        ],
    ),
    (
        "Carry out",
        [
            "Prepare resources",
            "Execute the plan in increments",
            "Track progress and adjust",
        ],
    ),
    (
        "Verify and deliver",
        [
            "Test against the success criteria",
            "Fix what fails",
            "Deliver and review lessons",
        ],
    ),
];

/// One node of the tree.
#[derive(Debug, Clone, PartialEq, Serialize, JsonSchema)]
pub struct SubProblem {
    pub id: String,
    pub description: String,
    pub depth: u32,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub parent: Option<String>,
}

/// One edge: `from` must come before `to`.
#[derive(Debug, Clone, PartialEq, Serialize, JsonSchema)]
pub struct Dependency {
    pub from: String,
    pub to: String,
    /// `hierarchical` or `sequential`.
    #[serde(rename = "type")]
    pub kind: String,
}

/// The decomposition.
#[derive(Debug, Clone, PartialEq)]
pub struct Tree {
    pub nodes: Vec<SubProblem>,
    pub dependencies: Vec<Dependency>,
    /// A topological order, or `None` when the dependencies have a cycle.
    pub order: Option<Vec<String>>,
    /// Whether depth 2 came from the problem's own parts (else the template's phases).
    pub split_into_parts: bool,
}

/// The most parts depth 2 takes from a problem: a longer list's remaining items are kept
/// together in the last part, so a problem of a thousand commas stays a tree one can read (and
/// a bounded amount of work: at depth 5, 12 × 3 × 2 × 2 leaves).
pub const MAX_PARTS: usize = 12;

/// The problem's own parts, when it lists at least two (at most [`MAX_PARTS`]).
fn parts(problem: &str) -> Vec<String> {
    let mut text = problem.trim().trim_end_matches(['.', '?', '!']).to_owned();
    for sep in [" and then ", ", then ", " then ", ", and ", "; "] {
        text = text.replace(sep, "\u{1f}");
    }
    let pieces: Vec<String> = text
        .split(['\u{1f}', ',', ';'])
        .map(|p| p.trim().to_owned())
        .filter(|p| p.split_whitespace().count() >= 2)
        .collect();
    if pieces.len() < 2 {
        return Vec::new();
    }
    let mut pieces = pieces;
    if pieces.len() > MAX_PARTS {
        let rest = pieces.split_off(MAX_PARTS - 1).join(", ");
        pieces.push(rest);
    }
    pieces
}

/// Decomposes `problem` to `max_depth` levels (1–5).
pub fn decompose(problem: &str, max_depth: u32) -> Tree {
    let mut nodes = Vec::new();
    let mut dependencies = Vec::new();
    let root = "problem-1-0".to_owned();
    nodes.push(SubProblem {
        id: root.clone(),
        description: problem.trim().to_owned(),
        depth: 1,
        parent: None,
    });
    let own = parts(problem);
    let split_into_parts = !own.is_empty();
    // (id, description, template tasks for its children)
    let mut frontier: Vec<(String, String, Option<[&str; 3]>)> = vec![(root, String::new(), None)];
    for depth in 2..=max_depth.min(5) {
        let mut next = Vec::new();
        for (parent, parent_text, tasks) in &frontier {
            let children: Vec<(String, Option<[&str; 3]>)> = match (depth, tasks) {
                (2, _) if split_into_parts => {
                    own.iter().map(|p| (p.clone(), Some(PHASES[2].1))).collect()
                }
                (2, _) => PHASES
                    .iter()
                    .map(|(name, tasks)| (format!("{name}: {}", problem.trim()), Some(*tasks)))
                    .collect(),
                (3, Some(tasks)) => tasks
                    .iter()
                    .map(|t| (format!("{t} ({parent_text})"), None))
                    .collect(),
                _ => vec![
                    (format!("Prepare: {parent_text}"), None),
                    (format!("Complete and check: {parent_text}"), None),
                ],
            };
            let mut previous: Option<String> = None;
            for (k, (description, tasks)) in children.into_iter().enumerate() {
                let id = format!("{parent}-{k}");
                dependencies.push(Dependency {
                    from: parent.clone(),
                    to: id.clone(),
                    kind: "hierarchical".to_owned(),
                });
                if let Some(prev) = previous.replace(id.clone()) {
                    dependencies.push(Dependency {
                        from: prev,
                        to: id.clone(),
                        kind: "sequential".to_owned(),
                    });
                }
                let short = short(&description);
                nodes.push(SubProblem {
                    id: id.clone(),
                    description,
                    depth,
                    parent: Some(parent.clone()),
                });
                next.push((id, short, tasks));
            }
        }
        frontier = next;
    }
    let order = topological(&nodes, &dependencies);
    Tree {
        nodes,
        dependencies,
        order,
        split_into_parts,
    }
}

/// A description cut to its first 60 characters, for the children that name it.
fn short(text: &str) -> String {
    let head: String = text
        .split(" (")
        .next()
        .unwrap_or(text)
        .chars()
        .take(60)
        .collect();
    head
}

/// Kahn's algorithm; `None` when a cycle leaves nodes unordered.
pub fn topological(nodes: &[SubProblem], edges: &[Dependency]) -> Option<Vec<String>> {
    let position: BTreeMap<&str, usize> = nodes
        .iter()
        .enumerate()
        .map(|(i, n)| (n.id.as_str(), i))
        .collect();
    let mut indegree = vec![0usize; nodes.len()];
    let mut out: Vec<Vec<usize>> = vec![Vec::new(); nodes.len()];
    for e in edges {
        let (Some(&a), Some(&b)) = (position.get(e.from.as_str()), position.get(e.to.as_str()))
        else {
            return None;
        };
        out[a].push(b);
        indegree[b] += 1;
    }
    let mut ready: VecDeque<usize> = (0..nodes.len()).filter(|i| indegree[*i] == 0).collect();
    let mut order = Vec::with_capacity(nodes.len());
    while let Some(i) = ready.pop_front() {
        order.push(nodes[i].id.clone());
        let mut freed: Vec<usize> = Vec::new();
        for &j in &out[i] {
            indegree[j] -= 1;
            if indegree[j] == 0 {
                freed.push(j);
            }
        }
        freed.sort_unstable();
        ready.extend(freed);
    }
    (order.len() == nodes.len()).then_some(order)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_long_list_keeps_its_remaining_items_in_the_last_part() {
        let problem = (1..=40)
            .map(|k| format!("step number {k}"))
            .collect::<Vec<_>>()
            .join(", ");
        let found = parts(&problem);
        assert_eq!(found.len(), MAX_PARTS);
        assert!(found[MAX_PARTS - 1].starts_with("step number 12, step number 13"));
        assert!(found[MAX_PARTS - 1].ends_with("step number 40"));
        let tree = decompose(&problem, 5);
        assert!(tree.order.is_some());
        assert!(tree.nodes.len() < 300, "{}", tree.nodes.len());
    }

    fn is_topological(tree: &Tree) -> bool {
        let order = tree.order.as_ref().expect("acyclic");
        let at = |id: &str| {
            order
                .iter()
                .position(|o| o == id)
                .expect("every node ordered")
        };
        order.len() == tree.nodes.len() && tree.dependencies.iter().all(|d| at(&d.from) < at(&d.to))
    }

    #[test]
    fn every_depth_gives_a_topological_order() {
        for depth in 1..=5 {
            let tree = decompose("Build a scalable web application", depth);
            assert!(is_topological(&tree), "depth {depth}");
            assert_eq!(tree.nodes.iter().map(|n| n.depth).max(), Some(depth));
        }
        assert_eq!(
            decompose("Build a scalable web application", 3).nodes.len(),
            1 + 4 + 12
        );
    }

    #[test]
    fn listed_parts_become_the_sub_problems() {
        let tree = decompose(
            "Migrate the database, rewrite the API and then retrain the support team",
            2,
        );
        assert!(tree.split_into_parts);
        assert_eq!(tree.nodes.len(), 4);
        assert_eq!(tree.nodes[1].description, "Migrate the database");
        assert!(is_topological(&tree));
    }

    #[test]
    fn a_cycle_has_no_order() {
        let n = |id: &str| SubProblem {
            id: id.into(),
            description: String::new(),
            depth: 1,
            parent: None,
        };
        let e = |a: &str, b: &str| Dependency {
            from: a.into(),
            to: b.into(),
            kind: "sequential".into(),
        };
        assert_eq!(
            topological(&[n("a"), n("b")], &[e("a", "b"), e("b", "a")]),
            None
        );
    }
}
