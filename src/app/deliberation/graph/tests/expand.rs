//! Tests of expand_thoughts, as a client calls it: lenses, candidates and the per-call budget.

use serde_json::json;

use super::{ids, started};

#[tokio::test]
async fn expansion_uses_fresh_lenses_on_new_branches() {
    let g = started(json!({})).await;
    let body = g.ok("expand_thoughts", json!({})).await;
    assert_eq!(ids(&body["nodes"]), ["node-2", "node-3", "node-4"]);
    assert_eq!(
        body["lenses_used"],
        json!(["decomposition", "constraint_first", "counter_position"])
    );
    assert_eq!(body["analysis"]["provider"], "heuristic");
    assert_eq!(body["analysis"]["method"], "expand.lens_templates");
    let branches: Vec<&str> = body["nodes"]
        .as_array()
        .unwrap()
        .iter()
        .map(|n| n["branch_id"].as_str().unwrap())
        .collect();
    assert_eq!(branches, ["b-node-1-1", "b-node-1-2", "b-node-1-3"]);
    let text = body["nodes"][0]["content"].as_str().unwrap();
    assert!(text.starts_with("Decomposition:"));
    assert!(text.contains("\"Choose a database for the ledger service\""));

    let again = g
        .ok("expand_thoughts", json!({"node_id": "node-1", "count": 2}))
        .await;
    assert_eq!(again["lenses_used"], json!(["analogy", "failure_mode"]));
    assert_eq!(again["nodes"][0]["branch_id"], "b-node-1-4");
    g.refused("expand_thoughts", json!({"count": 4}), "lenses_exhausted")
        .await;

    let own = g
        .ok(
            "expand_thoughts",
            json!({"node_id": "node-2", "candidates": ["Split reads from writes",
                                                       "Shard by tenant"]}),
        )
        .await;
    assert_eq!(own["analysis"]["provider"], "caller");
    assert_eq!(own["nodes"][1]["content"], "Shard by tenant");
    assert_eq!(own["nodes"][1]["depth"], 2);
    assert_eq!(own["nodes"][1]["branch_id"], "b-node-2-2");
    g.refused(
        "expand_thoughts",
        json!({"node_id": "node-99"}),
        "unknown_node",
    )
    .await;
}

#[tokio::test]
async fn expansions_beyond_the_per_call_budget_are_refused() {
    let g = started(json!({"max_expansions_per_call": 2})).await;
    let body = g.ok("expand_thoughts", json!({})).await;
    assert_eq!(ids(&body["nodes"]).len(), 2);
    let r = g
        .refused("expand_thoughts", json!({"count": 3}), "budget_exceeded")
        .await;
    assert!(r["error"].as_str().unwrap().contains("2 per call"));
    g.refused(
        "expand_thoughts",
        json!({"candidates": ["a", "b", "c"]}),
        "budget_exceeded",
    )
    .await;
}
