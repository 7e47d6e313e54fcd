//! Tests of skeleton-of-thought through the real writer: suitability, skeleton points,
//! elaboration, merging, and their refusals.

use serde_json::{Value, json};

use super::super::testing::{Given, given};
use super::suitability::outline_for;
use super::*;

async fn deliberation(goal: &str) -> Given {
    let g = given();
    g.ok("run_thinking_mode", json!({"mode": "Quick", "goal": goal}))
        .await;
    g
}

fn ids(nodes: &Value) -> Vec<String> {
    nodes
        .as_array()
        .map(|a| {
            a.iter()
                .filter_map(|n| n["node_id"].as_str().map(str::to_owned))
                .collect()
        })
        .unwrap_or_default()
}

#[test]
fn suitability_follows_the_documented_cues() {
    let plan = suitability("Write a plan with sections and steps for the launch");
    assert!(plan.suitable);
    assert_eq!(plan.score, 0.9);
    let proof = suitability("Prove the theorem by induction");
    assert!(!proof.suitable);
    assert_eq!(proof.score, 0.2);
    assert!(
        proof
            .reasons
            .iter()
            .any(|r| r.starts_with("sequential cue: proof"))
    );
    let neutral = suitability("Tell me about whales");
    assert!(neutral.suitable);
    assert_eq!(neutral.reasons, ["no cue either way: neutral"]);
    let debugging = suitability("Debug this traceback");
    assert!(!debugging.suitable);
}

#[test]
fn outline_templates_are_chosen_by_cues() {
    assert_eq!(outline_for("compare the options").0, "comparison");
    assert_eq!(outline_for("plan the migration").0, "plan");
    assert_eq!(outline_for("whales").0, "general");
}

#[tokio::test]
async fn caller_points_become_ordered_skeleton_nodes() {
    let g = deliberation("Write a guide to onboarding").await;
    let body = g
        .ok(
            "start_skeleton_of_thought",
            json!({"points": ["Accounts", "Tools", "First week"], "style": "bullet"}),
        )
        .await;
    assert_eq!(body["phase_id"], "sot-1");
    assert_eq!(body["state"], "skeleton");
    assert_eq!(body["source_node_id"], "node-1");
    assert_eq!(body["suitability"]["suitable"], true);
    assert_eq!(body["prompt_pack"], "sot_skeleton");
    assert_eq!(body["analysis"]["provider"], "caller");
    let nodes = body["skeleton_nodes"].as_array().expect("nodes");
    assert_eq!(nodes.len(), 3);
    assert_eq!(nodes[0]["content"], "Accounts");
    assert_eq!(nodes[0]["kind"], "skeleton");
    assert_ne!(nodes[0]["branch_id"], nodes[1]["branch_id"]);
    let id = g.connection.clone();
    let (edges, phase) = g
        .read(move |app| {
            let d = app.deliberations().get(&id).expect("deliberation");
            let edges: Vec<(String, String, String)> = d
                .edges
                .iter()
                .filter(|e| e.edge_type == "temporally_precedes")
                .map(|e| (e.from.clone(), e.to.clone(), e.edge_type.clone()))
                .collect();
            let phase = d.phase("sot-1").map(|p| p.skeleton_node_ids.clone());
            (edges, phase)
        })
        .await;
    let skeleton = ids(&body["skeleton_nodes"]);
    assert_eq!(phase, Some(skeleton.clone()));
    assert!(edges.contains(&(
        skeleton[0].clone(),
        skeleton[1].clone(),
        "temporally_precedes".to_owned()
    )));
}

#[tokio::test]
async fn without_points_a_flagged_template_scaffold() {
    let g = deliberation("Prove that the sum of two even numbers is even").await;
    let body = g.ok("start_skeleton_of_thought", json!({})).await;
    assert_eq!(body["skeleton_nodes"].as_array().map(Vec::len), Some(5));
    assert_eq!(body["analysis"]["provider"], "sot_heuristic_scaffold");
    assert!(
        body["analysis"]["limitations"]
            .to_string()
            .contains("scaffold, not semantic model output")
    );
    assert_eq!(body["suitability"]["suitable"], false);
    assert!(
        body["safety_notes"]
            .to_string()
            .contains("low skeleton suitability")
    );
    assert_eq!(
        body["skeleton_nodes"][0]["content"],
        "1. Context: what is asked and why it matters"
    );
    let body = g
        .ok(
            "start_skeleton_of_thought",
            json!({"source_node_id": "node-2", "style": "sections", "max_points": 2}),
        )
        .await;
    assert_eq!(body["phase_id"], "sot-2");
    assert_eq!(body["skeleton_nodes"].as_array().map(Vec::len), Some(2));
    assert!(
        body["skeleton_nodes"][0]["content"]
            .as_str()
            .is_some_and(|c| c.starts_with("## "))
    );
}

#[tokio::test]
async fn start_refusals() {
    let g = given();
    g.refused("start_skeleton_of_thought", json!({}), "no_deliberation")
        .await;
    let g = deliberation("Write a report").await;
    g.refused(
        "start_skeleton_of_thought",
        json!({"style": "prose"}),
        "invalid_style",
    )
    .await;
    g.refused(
        "start_skeleton_of_thought",
        json!({"max_points": 13}),
        "invalid_max_points",
    )
    .await;
    g.refused(
        "start_skeleton_of_thought",
        json!({"points": ["a", "b", "c"], "max_points": 2}),
        "too_many_points",
    )
    .await;
    g.refused(
        "start_skeleton_of_thought",
        json!({"points": ["a", " "]}),
        "invalid_arguments",
    )
    .await;
    g.refused(
        "start_skeleton_of_thought",
        json!({"source_node_id": "node-99"}),
        "unknown_node",
    )
    .await;
}

#[tokio::test]
async fn elaborate_then_merge() {
    let g = deliberation("Write a guide").await;
    let start = g
        .ok(
            "start_skeleton_of_thought",
            json!({"points": ["Setup", "Usage"]}),
        )
        .await;
    let skeleton = ids(&start["skeleton_nodes"]);

    // No elaborations: one prompt per point, once.
    let body = g
        .ok("run_skeleton_elaboration", json!({"phase_id": "sot-1"}))
        .await;
    assert_eq!(body["prompt_nodes"].as_array().map(Vec::len), Some(2));
    assert_eq!(body["state"], "skeleton");
    assert_eq!(
        body["prompt_nodes"][0]["provenance"],
        "sot_heuristic_scaffold"
    );
    g.refused(
        "run_skeleton_elaboration",
        json!({"phase_id": "sot-1"}),
        "nothing_to_elaborate",
    )
    .await;
    g.refused(
        "run_skeleton_elaboration",
        json!({"phase_id": "sot-1", "merge": true}),
        "nothing_to_merge",
    )
    .await;

    // One point: elaborating, not merged.
    let body = g
        .ok(
            "run_skeleton_elaboration",
            json!({"phase_id": "sot-1",
                   "elaborations": [{"skeleton_node_id": skeleton[0], "content": "Install it."}]}),
        )
        .await;
    assert_eq!(body["state"], "elaborating");
    assert_eq!(body["unelaborated_skeleton_node_ids"], json!([skeleton[1]]));
    let first = ids(&body["elaboration_nodes"]);
    assert_eq!(body["elaboration_nodes"][0]["parent_ids"][0], skeleton[0]);

    // The last point: merged by default, the merge subsumes every elaboration.
    let body = g
        .ok(
            "run_skeleton_elaboration",
            json!({"phase_id": "sot-1",
                   "elaborations": [{"skeleton_node_id": skeleton[1], "content": "Run it."}],
                   "merge_summary": "Install it, then run it."}),
        )
        .await;
    assert_eq!(body["state"], "merged");
    let merge = &body["merge_node"];
    assert_eq!(merge["kind"], "merge");
    assert_eq!(merge["provenance"], "caller");
    assert_eq!(merge["content"], "Install it, then run it.");
    let second = ids(&body["elaboration_nodes"]);
    let merge_id = merge["node_id"].as_str().unwrap_or_default().to_owned();
    let id = g.connection.clone();
    let (subsumed, state) = g
        .read(move |app| {
            let d = app.deliberations().get(&id).expect("deliberation");
            let subsumed: Vec<String> = d
                .edges
                .iter()
                .filter(|e| e.edge_type == "subsumes" && e.from == merge_id)
                .map(|e| e.to.clone())
                .collect();
            (subsumed, d.phase("sot-1").map(|p| p.state.clone()))
        })
        .await;
    assert_eq!(subsumed, [first[0].clone(), second[0].clone()]);
    assert_eq!(state.as_deref(), Some("merged"));

    g.refused(
        "run_skeleton_elaboration",
        json!({"phase_id": "sot-1",
               "elaborations": [{"skeleton_node_id": skeleton[0], "content": "More."}]}),
        "phase_merged",
    )
    .await;
}

#[tokio::test]
async fn elaboration_refusals() {
    let g = deliberation("Write a guide").await;
    g.refused(
        "run_skeleton_elaboration",
        json!({"phase_id": "sot-1"}),
        "unknown_phase",
    )
    .await;
    g.ok("start_skeleton_of_thought", json!({"points": ["A", "B"]}))
        .await;
    g.refused(
        "run_skeleton_elaboration",
        json!({"phase_id": "sot-1",
               "elaborations": [{"skeleton_node_id": "node-1", "content": "x"}]}),
        "unknown_node",
    )
    .await;
    g.refused(
        "run_skeleton_elaboration",
        json!({"phase_id": "sot-1",
               "elaborations": [{"skeleton_node_id": "node-5", "content": " "}]}),
        "invalid_arguments",
    )
    .await;
    g.refused(
        "run_skeleton_elaboration",
        json!({"phase_id": "sot-1", "merge": false, "merge_summary": "x"}),
        "invalid_arguments",
    )
    .await;
}
