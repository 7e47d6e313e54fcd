//! Tests of apply_algorithm_template and apply_reasoning_pattern, and the registries' edges.

use serde_json::json;

use super::{ids, started};
use crate::app::deliberation::graph::{patterns, templates};
use crate::app::deliberation::graph_edit::EDGE_TYPES;

#[tokio::test]
async fn templates_scaffold_ordered_steps() {
    let g = started(json!({})).await;
    let body = g
        .ok("apply_algorithm_template", json!({"template": "pros_cons"}))
        .await;
    assert_eq!(ids(&body["nodes"]), ["node-2", "node-3", "node-4"]);
    assert_eq!(body["edges_added"].as_array().unwrap().len(), 4);
    assert!(
        body["edges_added"]
            .as_array()
            .unwrap()
            .contains(&json!({"from": "node-4", "to": "node-2", "edge_type": "depends_on"}))
    );
    assert_eq!(body["nodes"][0]["branch_id"], body["nodes"][2]["branch_id"]);
    assert_eq!(body["nodes"][2]["kind"], "template");
    assert_eq!(body["analysis"]["method"], "template.pros_cons");
    let r = g
        .refused(
            "apply_algorithm_template",
            json!({"template": "guess"}),
            "unknown_template",
        )
        .await;
    assert!(r["suggestion"].as_str().unwrap().contains("five_whys"));
    for t in templates() {
        for e in t.edges {
            assert!(e.from_step < t.steps.len() && e.to_step < t.steps.len());
            assert!(EDGE_TYPES.contains(&e.edge_type));
        }
    }
}

#[tokio::test]
async fn patterns_add_a_prompt_node_with_their_edge() {
    let g = started(json!({})).await;
    let body = g
        .ok("apply_reasoning_pattern", json!({"pattern": "red_team"}))
        .await;
    assert_eq!(body["node"]["kind"], "pattern");
    assert_eq!(body["node"]["branch_id"], "b-node-1-1");
    assert_eq!(
        body["edges_added"],
        json!([{"from": "node-2", "to": "node-1", "edge_type": "conflicts"}])
    );
    assert!(
        body["node"]["content"]
            .as_str()
            .unwrap()
            .starts_with("Red team:")
    );
    let analogy = g
        .ok(
            "apply_reasoning_pattern",
            json!({"pattern": "analogy", "node_id": "node-2"}),
        )
        .await;
    assert_eq!(analogy["edges_added"][0]["edge_type"], "analogous_to");
    g.refused(
        "apply_reasoning_pattern",
        json!({"pattern": "vibes"}),
        "unknown_pattern",
    )
    .await;
    for p in patterns() {
        assert!(EDGE_TYPES.contains(&p.edge_type));
    }
}
