//! Tests of set_scoring_rubric, score_thoughts and prune_thoughts, as a client calls them.

use serde_json::json;

use super::started;

#[tokio::test]
async fn the_rubric_names_known_dimensions_only() {
    let g = started(json!({})).await;
    let body = g
        .ok(
            "set_scoring_rubric",
            json!({"weights": {"grounding": 0.5, "novelty": 0.5}}),
        )
        .await;
    assert_eq!(body["weights"]["specificity"], 0.0);
    assert_eq!(body["previous_weights"]["grounding"], 0.25);
    let r = g
        .refused(
            "set_scoring_rubric",
            json!({"weights": {"elegance": 1.0}}),
            "invalid_rubric",
        )
        .await;
    assert!(
        r["suggestion"]
            .as_str()
            .unwrap()
            .contains("assumption_risk")
    );
    g.refused(
        "set_scoring_rubric",
        json!({"weights": {"grounding": 0.0}}),
        "invalid_rubric",
    )
    .await;
    g.refused(
        "set_scoring_rubric",
        json!({"weights": {"grounding": 1.5}}),
        "invalid_rubric",
    )
    .await;
    let rubric = g
        .read(|app| {
            app.deliberations()
                .all()
                .next()
                .and_then(|d| d.rubric.clone())
        })
        .await
        .expect("rubric");
    assert_eq!(rubric.get("novelty"), Some(&0.5));
}

#[tokio::test]
async fn scores_are_structural_weighted_and_ranked() {
    let g = started(json!({})).await;
    g.ok(
        "add_thought_node",
        json!({"content": "Choose a database for the ledger service"}),
    )
    .await;
    g.ok(
        "add_thought_node",
        json!({"content": "FoundationDB handles 100000 transactions per second"}),
    )
    .await;
    g.ok(
        "add_thought_node",
        json!({"content": "Measured p99 latency was 4 ms",
               "edges": [{"to": "node-3", "edge_type": "supports"},
                         {"to": "node-2", "edge_type": "contradicts_fatally"}]}),
    )
    .await;
    g.refused(
        "score_thoughts",
        json!({"agent_scores": {"node-1": 0.5}}),
        "invalid_arguments",
    )
    .await;
    let body = g
        .ok("score_thoughts", json!({"agent_scores": {"node-3": 1.0}}))
        .await;
    assert_eq!(body["score_run_id"], "score-1");
    assert_eq!(body["weights_source"], "default");
    assert!(body["semantic_confidence"].is_null());
    let scores = body["scores"].as_array().unwrap();
    assert_eq!(scores.len(), 3);
    assert_eq!(scores[0]["node_id"], "node-3");
    assert_eq!(scores[0]["rank"], 1);
    let by_id = |id: &str| {
        scores
            .iter()
            .find(|s| s["node_id"] == id)
            .map(|s| s["dimensions"].clone())
            .unwrap()
    };
    // The restated goal is no news; the fatal contradiction breaks coherence.
    assert_eq!(by_id("node-2")["novelty"], 0.0);
    assert_eq!(by_id("node-2")["coherence"], 0.0);
    assert_eq!(by_id("node-3")["grounding"], 0.75);
    assert_eq!(by_id("node-3")["agent"], 1.0);
    assert!(by_id("node-4").get("agent").is_none());
    let ranked: Vec<f64> = scores
        .iter()
        .map(|s| s["score"].as_f64().unwrap())
        .collect();
    assert!(ranked.windows(2).all(|w| w[0] >= w[1]));

    let again = g
        .ok("score_thoughts", json!({"node_ids": ["node-4"]}))
        .await;
    assert_eq!(again["score_run_id"], "score-2");
    let stored = g
        .read(|app| {
            let d = app.deliberations().all().next().expect("deliberation");
            (d.score_runs.len(), d.node("node-3").and_then(|n| n.score))
        })
        .await;
    assert_eq!(stored.0, 2);
    assert!(stored.1.is_some());

    g.ok("set_scoring_rubric", json!({"weights": {"agent": 1.0}}))
        .await;
    g.refused("score_thoughts", json!({}), "missing_agent_scores")
        .await;
    g.refused(
        "score_thoughts",
        json!({"node_ids": ["node-8"]}),
        "unknown_node",
    )
    .await;
}

#[tokio::test]
async fn pruning_keeps_a_beam_per_level_and_drops_orphans() {
    let g = started(json!({})).await;
    g.ok(
        "expand_thoughts",
        json!({"candidates": ["Option A with 3 replicas", "Option B", "Option C"]}),
    )
    .await;
    g.ok(
        "add_thought_node",
        json!({"content": "Detail of C", "parent_ids": ["node-4"]}),
    )
    .await;
    let r = g
        .refused("prune_thoughts", json!({"beam_width": 1}), "unscored_nodes")
        .await;
    assert_eq!(
        r["node_ids"],
        json!(["node-2", "node-3", "node-4", "node-5"])
    );
    g.ok(
        "score_thoughts",
        json!({"agent_scores": {"node-2": 1.0, "node-3": 0.0, "node-4": 0.0, "node-5": 1.0}}),
    )
    .await;
    g.refused(
        "prune_thoughts",
        json!({"beam_width": 0}),
        "invalid_arguments",
    )
    .await;
    let body = g.ok("prune_thoughts", json!({"beam_width": 1})).await;
    assert_eq!(body["kept"], json!(["node-2"]));
    let pruned: Vec<(String, String)> = body["pruned"]
        .as_array()
        .unwrap()
        .iter()
        .map(|p| {
            (
                p["node_id"].as_str().unwrap().to_owned(),
                p["reason"].as_str().unwrap().to_owned(),
            )
        })
        .collect();
    assert_eq!(
        pruned,
        [
            ("node-3".to_owned(), "beam".to_owned()),
            ("node-4".to_owned(), "beam".to_owned()),
            ("node-5".to_owned(), "ancestor_pruned".to_owned()),
        ]
    );
    assert_eq!(body["live_node_count"], 2);
    let total = g
        .read(|app| {
            app.deliberations()
                .all()
                .next()
                .map_or(0, |d| d.pruned_total)
        })
        .await;
    assert_eq!(total, 3);
    g.refused(
        "expand_thoughts",
        json!({"node_id": "node-3"}),
        "node_pruned",
    )
    .await;
    let floor = g
        .ok(
            "prune_thoughts",
            json!({"beam_width": 5, "min_score": 0.99}),
        )
        .await;
    assert_eq!(floor["pruned"][0]["reason"], "min_score");
}
