//! The governed flow end to end, refusals across the tools, and the fixture the tool tests
//! beside each module share (a started deliberation, a thought on a branch, a refusal's
//! blockers and message).

use serde_json::{Value, json};

use super::{CHECK_ASSUMPTION, CHECK_CRITICAL_CLAIM, CHECK_ROUTE};
use crate::app::deliberation::testing::{Given, given};

/// Starts a deliberation; its session id.
pub(super) async fn start(g: &Given, mode: &str, profile: &str) -> String {
    let body = g
        .ok(
            "start_deliberation",
            json!({"goal": "Choose a storage engine for the audit log", "mode": mode,
                   "profile": profile}),
        )
        .await;
    body["session_id"].as_str().expect("session_id").to_owned()
}

/// Adds a thought under the root on `branch`; its node id.
pub(super) async fn thought(g: &Given, session: &str, branch: &str, content: &str) -> String {
    let body = g
        .ok(
            "add_thought_node",
            json!({"content": content, "parent_ids": ["node-1"], "branch_id": branch,
                   "session_id": session}),
        )
        .await;
    body["node"]["node_id"]
        .as_str()
        .expect("node_id")
        .to_owned()
}

pub(super) fn blocker_checks(body: &Value) -> Vec<String> {
    body["blockers"]
        .as_array()
        .expect("blockers")
        .iter()
        .map(|b| b["check"].as_str().unwrap_or_default().to_owned())
        .collect()
}

pub(super) fn message(body: &Value) -> &str {
    body["error"].as_str().unwrap_or_default()
}

/// A Quick (linear, ungoverned) deliberation: only checks 1–3 can fail there.
pub(super) async fn quick(g: &Given) -> String {
    let s = start(g, "Quick", "balanced").await;
    thought(g, &s, "main", "Start from the write path.").await;
    s
}

#[tokio::test]
async fn a_governed_deliberation_reaches_consensus_only_after_every_gate_clears() {
    let g = given();
    let s = start(&g, "Test", "paranoid").await;
    for (branch, content) in [
        ("sled", "An embedded B-tree keeps deployment simple."),
        ("sqlite", "SQLite gives SQL queries over the log."),
        ("files", "Append-only files are the simplest to audit."),
    ] {
        thought(&g, &s, branch, content).await;
    }

    let asm = g
        .ok(
            "record_assumption",
            json!({"text": "Writes never exceed 1k events per second", "criticality":
                   "critical", "source_node_ids": ["node-2"], "session_id": s}),
        )
        .await;
    assert_eq!(asm["assumption"]["assumption_id"], "asm-1");
    assert_eq!(asm["assumption"]["status"], "unverified");
    assert_eq!(asm["blocking"], true);

    let v = g
        .ok(
            "verify_thoughts",
            json!({"claims": [{"text": "sled survives power loss without corruption",
                               "criticality": "critical", "node_ids": ["node-2"]}],
                   "evidence": [{"source": "sled README", "tier": "primary",
                                 "independence_group": "sled-docs",
                                 "supports_claims": ["claim-1"]}],
                   "session_id": s}),
        )
        .await;
    assert_eq!(v["claims"][0]["claim_id"], "claim-1");
    assert_eq!(v["claims"][0]["status"], "insufficient_evidence");
    assert_eq!(v["questions"].as_array().map(Vec::len), Some(4));
    assert!(
        v["questions"][0]["question"]
            .as_str()
            .unwrap_or_default()
            .contains("sled survives power loss")
    );
    assert_eq!(
        v["verification_matrix"]["rows"][0]["cells"][0]["stance"],
        "supports"
    );
    assert!(
        v["analysis"]["limitations"][0]
            .as_str()
            .unwrap_or_default()
            .contains("caller-supplied evidence")
    );

    let blocked = g
        .refused(
            "consensus_answer",
            json!({"answer": "Use sled", "session_id": s}),
            "consensus_blocked",
        )
        .await;
    assert_eq!(
        blocker_checks(&blocked),
        [CHECK_CRITICAL_CLAIM, CHECK_ASSUMPTION, CHECK_ROUTE]
    );
    for named in ["claim-1", "asm-1", CHECK_ROUTE] {
        assert!(message(&blocked).contains(named), "{}", message(&blocked));
    }
    assert_eq!(blocked["checks"].as_array().map(Vec::len), Some(5));

    let not_yet = g
        .refused(
            "converge_reasoning",
            json!({"session_id": s}),
            "convergence_blocked",
        )
        .await;
    assert!(message(&not_yet).contains("claim-1"));

    let v = g
        .ok(
            "verify_thoughts",
            json!({"evidence": [{"source": "Jepsen-style crash test", "tier": "secondary",
                                 "independence_group": "own-test",
                                 "supports_claims": ["claim-1"]}],
                   "session_id": s}),
        )
        .await;
    assert_eq!(v["claims"][0]["status"], "verified");
    assert_eq!(v["claims"][0]["previous_status"], "insufficient_evidence");
    assert_eq!(v["claims"][0]["support_weight"], 1.6);

    let set = g
        .ok(
            "set_assumption_status",
            json!({"assumption_id": "asm-1", "status": "validated",
                   "evidence": ["load test peaked at 400 events/s"], "session_id": s}),
        )
        .await;
    assert_eq!(set["previous_status"], "unverified");
    assert_eq!(set["assumption"]["blocking"], false);
    assert_eq!(set["blocking_assumptions"], json!([]));

    let eval = g
        .ok("evaluate_reasoning_quality", json!({"session_id": s}))
        .await;
    // Everything but scoring (no node scored): 1 − 0.10.
    assert_eq!(eval["quality_score"], 0.9);
    assert_eq!(eval["quality_tier"], "excellent");
    let gates = eval["gates"].as_array().expect("gates");
    assert_eq!(gates.iter().filter(|c| c["passed"] == false).count(), 1);
    assert_eq!(gates[4]["passed"], false);
    assert_eq!(eval["recommended_tools"][0], "converge_reasoning");

    let conv = g.ok("converge_reasoning", json!({"session_id": s})).await;
    assert_eq!(conv["node"]["kind"], "convergence");
    assert_eq!(conv["node"]["node_id"], "node-5");
    assert_eq!(
        conv["subsumed_node_ids"],
        json!(["node-2", "node-3", "node-4"])
    );
    assert_eq!(conv["node"]["provenance"], "heuristic");
    assert!(
        conv["node"]["content"]
            .as_str()
            .unwrap_or_default()
            .contains("SQLite gives SQL queries")
    );

    // Converging changed the graph: the route must be decided again.
    let stale = g
        .refused(
            "consensus_answer",
            json!({"session_id": s}),
            "consensus_blocked",
        )
        .await;
    assert_eq!(blocker_checks(&stale), [CHECK_ROUTE]);
    assert!(message(&stale).contains("no route decision"));

    let ckpt = g
        .ok("run_reasoning_checkpoint", json!({"session_id": s}))
        .await;
    assert_eq!(ckpt["checkpoint_id"], "ckpt-1");
    assert_eq!(ckpt["route_decision"]["decision"], "converge");
    assert_eq!(ckpt["blocking_gaps"], json!([]));
    assert_eq!(ckpt["recommended_tools"], json!(["consensus_answer"]));

    let done = g.ok("consensus_answer", json!({"session_id": s})).await;
    assert_eq!(done["answer_source"], "convergence");
    assert_eq!(done["analysis"]["provider"], "heuristic");
    assert_eq!(done["analysis"]["source_node_ids"], json!(["node-5"]));
    assert!(
        done["answer"]
            .as_str()
            .unwrap_or_default()
            .contains("node-2")
    );
    assert_eq!(done["semantic_confidence"], Value::Null);
    assert_eq!(done["route_decision"]["decision"], "answer");
    assert_eq!(done["confidence"], 0.9);
    assert!(
        done["checks"]
            .as_array()
            .expect("checks")
            .iter()
            .all(|c| c["passed"] == true)
    );

    g.refused(
        "consensus_answer",
        json!({"answer": "again", "session_id": s}),
        "deliberation_concluded",
    )
    .await;
}

#[tokio::test]
async fn unknown_ids_and_missing_answers_are_refused() {
    let g = given();
    let s = quick(&g).await;
    g.refused(
        "set_assumption_status",
        json!({"assumption_id": "asm-7", "status": "validated", "rationale": "x",
               "session_id": s}),
        "unknown_assumption",
    )
    .await;
    g.refused(
        "record_assumption",
        json!({"text": "x", "source_node_ids": ["node-99"], "session_id": s}),
        "unknown_node",
    )
    .await;
    g.refused(
        "record_assumption",
        json!({"text": "x", "criticality": "severe", "session_id": s}),
        "invalid_criticality",
    )
    .await;
    g.refused(
        "run_reasoning_checkpoint",
        json!({"phase_id": "sot-1", "session_id": s}),
        "unknown_phase",
    )
    .await;
    g.ok("record_assumption", json!({"text": "x", "session_id": s}))
        .await;
    g.refused(
        "set_assumption_status",
        json!({"assumption_id": "asm-1", "status": "validated", "session_id": s}),
        "rationale_required",
    )
    .await;
    g.refused(
        "set_assumption_status",
        json!({"assumption_id": "asm-1", "status": "maybe", "session_id": s}),
        "invalid_status",
    )
    .await;
    let none = g
        .refused("consensus_answer", json!({"session_id": s}), "no_answer")
        .await;
    assert!(
        none["suggestion"]
            .as_str()
            .unwrap_or_default()
            .contains("converge_reasoning")
    );
}
