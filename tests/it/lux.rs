//! The model-backed tools (`confer`, `traced_reasoning`, `planner`, `biased_reasoning`) through
//! the built binary, driven by a real MCP client, against the real local model (llama.cpp's
//! server serving SmolLM2-135M-Instruct on 127.0.0.1, started as in `model.rs`): the seed's
//! fields, honest metrics, the exchange recorded without the key, re-execution with no
//! divergence, and a stale answer refused. Without a provider every tool is refused, naming
//! the variable to set.

use std::time::Duration;

use rmcp::model::{CallToolRequestParams, CallToolResult};
use serde_json::{Value, json};

use super::common::{
    Client, HttpServer, StdioServer, all_bytes, assert_intact, cli, holds, ok, rejected,
};
use super::model::llm_or_skip;

/// A key the provider is configured with; it must appear nowhere in the data directory.
const KEY: &str = "sk-thinkledger-test-key-that-must-never-be-stored";

/// Model calls share one slot of a small model on 2 cores with the other model tests: a call
/// that makes several may wait minutes under load.
const MODEL_PATIENCE: Duration = Duration::from_secs(900);

async fn model_call(client: &Client, tool: &str, arguments: Value) -> CallToolResult {
    let Value::Object(arguments) = arguments else {
        panic!("arguments must be a JSON object")
    };
    let params = CallToolRequestParams::new(tool.to_owned()).with_arguments(arguments);
    tokio::time::timeout(MODEL_PATIENCE, client.call_tool(params))
        .await
        .unwrap_or_else(|_| panic!("{tool} took longer than {MODEL_PATIENCE:?}"))
        .unwrap_or_else(|e| panic!("tools/call {tool} failed at the protocol level: {e}"))
}

/// The provider's settings for the server: the local model, short answers, the key.
fn provider_env(base: &str) -> Vec<(&'static str, String)> {
    vec![
        ("THINKLEDGER_MODEL_PROVIDER_URL", base.to_owned()),
        ("THINKLEDGER_MODEL", "smollm2-test".to_owned()),
        ("THINKLEDGER_MODEL_MAX_TOKENS", "96".to_owned()),
        ("THINKLEDGER_MODEL_API_KEY", KEY.to_owned()),
    ]
}

fn env_refs<'a>(env: &'a [(&'static str, String)]) -> Vec<(&'static str, &'a str)> {
    env.iter().map(|(k, v)| (*k, v.as_str())).collect()
}

/// `replay SESSION --reexecute --json`: every call re-executed and matched.
async fn assert_replays_exactly(data_dir: &std::path::Path, session: &str, calls: u64) {
    let run = cli(data_dir, &["replay", session, "--reexecute", "--json"]).await;
    let report: Value = serde_json::from_str(&run.stdout)
        .unwrap_or_else(|e| panic!("replay --json printed no JSON ({e}): {run:?}"));
    let r = &report["reexecution"];
    assert_eq!(r["diverged"], 0, "no call diverges: {report}");
    assert_eq!(r["skipped"], 0, "no call is skipped: {report}");
    assert_eq!(r["matched"], calls, "every call matches: {report}");
    assert_eq!(run.status.code(), Some(0), "{run:?}");
}

#[tokio::test]
async fn without_a_provider_every_model_tool_is_refused_naming_the_variable_and_recorded() {
    let dir = tempfile::tempdir().unwrap();
    let server =
        StdioServer::start_with_env(dir.path(), &[], &[("THINKLEDGER_MODEL_PROVIDER_URL", "")])
            .await;
    let calls = [
        ("confer", json!({"message": "hello"})),
        (
            "traced_reasoning",
            json!({"thought": "why?", "thought_number": 1, "total_thoughts": 2,
                   "next_thought_needed": true}),
        ),
        (
            "planner",
            json!({"step": "plan a trip", "step_number": 1, "total_steps": 2,
                   "next_step_required": true}),
        ),
        ("biased_reasoning", json!({"query": "is it safe?"})),
    ];
    for (tool, arguments) in &calls {
        let body = rejected(&model_call(&server, tool, arguments.clone()).await);
        assert_eq!(body["code"], "model_not_configured", "{tool}: {body}");
        let error = body["error"].as_str().unwrap_or_default();
        assert!(
            error.contains("THINKLEDGER_MODEL_PROVIDER_URL"),
            "{tool}'s error names the variable: {body}"
        );
        assert!(
            body["suggestion"]
                .as_str()
                .is_some_and(|s| s.contains("THINKLEDGER_MODEL_PROVIDER_URL")),
            "{body}"
        );
    }
    // Bad input is refused for what it is first, before the missing provider.
    let body = rejected(
        &model_call(
            &server,
            "planner",
            json!({"step": "x", "step_number": 0, "total_steps": 1, "next_step_required": false}),
        )
        .await,
    );
    assert_eq!(body["code"], "invalid_arguments", "{body}");
    server.stop().await;
    assert_intact(dir.path(), 5).await;
}

#[tokio::test]
async fn the_lux_tools_run_against_the_real_model_record_no_key_and_replay_exactly() {
    let Some(base) = llm_or_skip("the_lux_tools_run_against_the_real_model…") else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let env = provider_env(&base);
    let server = StdioServer::start_with_env(dir.path(), &[], &env_refs(&env)).await;

    // confer: two turns of one conversation.
    let first = ok(&model_call(
        &server,
        "confer",
        json!({"message": "What is the capital of France?", "temperature": 0, "max_tokens": 24}),
    )
    .await);
    assert!(
        first["model"].as_str().unwrap().contains("SmolLM2"),
        "the model the server reported is named: {first}"
    );
    assert!(
        !first["content"].as_str().unwrap().trim().is_empty(),
        "{first}"
    );
    assert!(
        first["usage"]["completion_tokens"].as_u64().unwrap() > 0,
        "{first}"
    );
    let conversation = first["session_id"].as_str().unwrap().to_owned();
    let second = ok(&model_call(
        &server,
        "confer",
        json!({"message": "And of Italy?", "temperature": 0, "max_tokens": 24,
               "session_id": conversation}),
    )
    .await);
    assert_eq!(second["turns"], 2, "{second}");
    assert_eq!(second["session_id"], conversation.as_str());

    // traced_reasoning: two thoughts on a new session, measured.
    let t1 = ok(&model_call(
        &server,
        "traced_reasoning",
        json!({"thought": "Why is the sky blue?", "thought_number": 1, "total_thoughts": 2,
               "next_thought_needed": true, "temperature": 0}),
    )
    .await);
    let traced = t1["continuation_id"].as_str().unwrap().to_owned();
    assert_eq!(t1["thought_type"], "Initial", "{t1}");
    let perplexity = t1["metrics"]["perplexity"].as_f64().unwrap_or_else(|| {
        panic!("perplexity is a number from the provider's log-probabilities: {t1}")
    });
    assert!(perplexity >= 1.0 && perplexity.is_finite(), "{t1}");
    assert_eq!(t1["metrics"]["attention_entropy"], Value::Null, "{t1}");
    assert!(
        t1["metrics_unavailable"]["attention_entropy"]
            .as_str()
            .is_some_and(|r| r.contains("not observable")),
        "attention entropy is null with its reason: {t1}"
    );
    let confidence = t1["metadata"]["current_confidence"].as_f64().unwrap();
    assert!((confidence - 1.0 / perplexity).abs() < 1e-9, "{t1}");
    let t2 = ok(&model_call(
        &server,
        "traced_reasoning",
        json!({"thought": "Conclude.", "thought_number": 2, "total_thoughts": 2,
               "next_thought_needed": false, "temperature": 0, "session_id": traced}),
    )
    .await);
    assert_eq!(t2["thought_type"], "Conclusion", "{t2}");
    assert_eq!(t2["reasoning_complete"], true, "{t2}");
    let similarity = t2["metrics"]["semantic_similarity"]
        .as_f64()
        .unwrap_or_else(|| panic!("similarity to the previous thought, from vectors: {t2}"));
    assert!((-1.0..=1.0).contains(&similarity), "{t2}");
    assert!(
        t2["metrics"]["consistency_score"].is_number()
            || t2["metrics_unavailable"]["consistency_score"].is_string(),
        "the judge's score is a number or null with its reason: {t2}"
    );
    assert!(
        t2["synthesis_snapshot"].is_object()
            || t2["metrics_unavailable"]["synthesis_snapshot"].is_string(),
        "{t2}"
    );
    assert!(
        ["thinking", "intervention_needed", "conclusion_reached"]
            .contains(&t2["status"].as_str().unwrap()),
        "{t2}"
    );
    assert_eq!(t2["metadata"]["thought_history_length"], 2, "{t2}");

    // planner: a two-step plan.
    let p1 = ok(&model_call(
        &server,
        "planner",
        json!({"step": "Plan a small vegetable garden", "step_number": 1, "total_steps": 2,
               "next_step_required": true, "temperature": 0}),
    )
    .await);
    let plan = p1["continuation_id"].as_str().unwrap().to_owned();
    assert_eq!(p1["status"], "planning", "{p1}");
    assert!(
        !p1["step_content"].as_str().unwrap().trim().is_empty(),
        "{p1}"
    );
    let p2 = ok(&model_call(
        &server,
        "planner",
        json!({"step": "Finish the plan", "step_number": 2, "total_steps": 2,
               "next_step_required": false, "temperature": 0, "session_id": plan}),
    )
    .await);
    assert_eq!(p2["status"], "complete", "{p2}");
    assert_eq!(p2["planning_complete"], true, "{p2}");
    assert_eq!(p2["metadata"]["step_history_length"], 2, "{p2}");
    assert!(
        p2["synthesis_snapshot"].is_object() || p2["unavailable"]["synthesis_snapshot"].is_string(),
        "{p2}"
    );

    // biased_reasoning: one round, to completion.
    let mut step = ok(&model_call(
        &server,
        "biased_reasoning",
        json!({"query": "Should a small team rewrite its app in a new language?",
               "new_session": true, "max_analysis_rounds": 1}),
    )
    .await);
    let biased = step["session_id"].as_str().unwrap().to_owned();
    assert_eq!(step["step_type"], "Reasoning", "{step}");
    assert_eq!(step["next_action"], "BiasCheck", "{step}");
    let mut calls = 1;
    while step["next_action"] != "Complete" {
        assert!(calls < 5, "one round ends within four steps: {step}");
        step = ok(&model_call(
            &server,
            "biased_reasoning",
            json!({"query": "Should a small team rewrite its app in a new language?",
                   "session_id": biased}),
        )
        .await);
        calls += 1;
        if step["step_type"] == "BiasAnalysis" {
            assert!(
                step["bias_detected"].is_object()
                    || step["unavailable"]["bias_detected"].is_string(),
                "{step}"
            );
        }
    }
    assert_eq!(step["step_type"], "Synthesis", "{step}");
    assert_eq!(step["session_status"]["is_complete"], true, "{step}");
    assert_eq!(step["session_status"]["reasoning_rounds"], 1, "{step}");
    assert!(step["final_synthesis"].is_string(), "{step}");
    // A complete run takes no more steps.
    let done = rejected(
        &model_call(
            &server,
            "biased_reasoning",
            json!({"query": "more?", "session_id": biased}),
        )
        .await,
    );
    assert_eq!(done["code"], "session_closed", "{done}");

    server.stop().await;
    let events = 2 + 2 + 2 + calls + 1;
    assert_intact(dir.path(), events).await;
    assert!(
        !holds(&all_bytes(dir.path()), KEY),
        "the API key appears nowhere in the data directory"
    );
    // Every event, model calls and lux facts included, is what docs/ledger-format.md and
    // schemas/event.v1.json say.
    let schema = super::schemas::event_schema();
    let mut facts = std::collections::BTreeSet::new();
    for event in super::common::stored_events(dir.path()) {
        if let Err(e) = super::schemas::subset::validate(&schema, &event) {
            panic!("stored event does not match schemas/event.v1.json: {e}\n{event:#}");
        }
        for fact in event["facts"].as_array().expect("facts") {
            facts.insert(fact["type"].as_str().expect("type").to_owned());
        }
        if event["call"]["effects"]["modelCalls"].is_array() {
            facts.insert("modelCalls".to_owned());
        }
    }
    for kind in [
        "ModelConferred",
        "TracedThoughtRecorded",
        "PlanStepRecorded",
        "BiasedStepRecorded",
        "modelCalls",
    ] {
        assert!(facts.contains(kind), "{kind}: {facts:?}");
    }
    assert_replays_exactly(dir.path(), &conversation, 2).await;
    assert_replays_exactly(dir.path(), &traced, 2).await;
    assert_replays_exactly(dir.path(), &plan, 2).await;
    // The refused call after completion is re-executed too (and refused again).
    assert_replays_exactly(dir.path(), &biased, calls + 1).await;
}

#[tokio::test]
async fn an_answer_to_a_session_that_moved_meanwhile_is_refused_as_stale() {
    let Some(base) = llm_or_skip("an_answer_to_a_session_that_moved…") else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let env = provider_env(&base);
    let server =
        HttpServer::start_with_env(dir.path(), &["--toolsets", "all"], &env_refs(&env)).await;
    let (a, b) = (server.connect().await, server.connect().await);
    let first = ok(&model_call(
        &a,
        "confer",
        json!({"message": "Name a colour.", "temperature": 0, "max_tokens": 8}),
    )
    .await);
    let session = first["session_id"].as_str().unwrap().to_owned();
    // Both calls build their prompt from the one-turn conversation; the model's slot answers
    // them one after the other, so the second decided was asked about a session that moved.
    let ask = |text: &str| json!({"message": text, "temperature": 0, "max_tokens": 8, "session_id": session});
    let (x, y) = tokio::join!(
        model_call(&a, "confer", ask("Name a fruit.")),
        model_call(&b, "confer", ask("Name an animal."))
    );
    let outcomes = [x, y];
    let accepted = outcomes.iter().filter(|r| r.is_error != Some(true)).count();
    assert_eq!(accepted, 1, "one of the two is decided: {outcomes:?}");
    let refused = outcomes
        .iter()
        .find(|r| r.is_error == Some(true))
        .map(rejected)
        .unwrap();
    assert_eq!(refused["code"], "model_answer_stale", "{refused}");
    // The refused call changed nothing: the conversation has two turns, and a retry works.
    let retry = ok(&model_call(&a, "confer", ask("Name a fruit.")).await);
    assert_eq!(retry["turns"], 3, "{retry}");
    server.kill().await;
}

#[tokio::test]
async fn reasonkit_expand_score_and_verify_run_model_backed_and_replay_exactly() {
    let Some(base) = llm_or_skip("reasonkit_expand_score_and_verify_run_model_backed…") else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let env = provider_env(&base);
    let server = StdioServer::start_with_env(dir.path(), &[], &env_refs(&env)).await;
    let started = ok(&model_call(
        &server,
        "start_deliberation",
        json!({"goal": "Choose a database for a small web shop", "mode": "Test"}),
    )
    .await);
    let sid = started["session_id"].as_str().unwrap().to_owned();

    let expanded = ok(&model_call(
        &server,
        "expand_thoughts",
        json!({"session_id": sid, "provider": "model_backed", "count": 2}),
    )
    .await);
    let nodes = expanded["nodes"].as_array().unwrap();
    assert_eq!(nodes.len(), 2, "{expanded}");
    let analysis = &expanded["analysis"];
    assert_eq!(analysis["provider"], "model_backed", "{expanded}");
    assert!(
        analysis["model"]
            .as_str()
            .is_some_and(|m| m.contains("SmolLM2")),
        "the analysis names the model: {expanded}"
    );

    let scored = ok(&model_call(
        &server,
        "score_thoughts",
        json!({"session_id": sid, "provider": "model_backed"}),
    )
    .await);
    let scores = scored["scores"].as_array().unwrap();
    assert_eq!(scores.len(), 2, "{scored}");
    for s in scores {
        let m = s["dimensions"]["model"].as_f64().unwrap_or_else(|| {
            panic!("each node has the model's judgement as a dimension: {scored}")
        });
        assert!((0.0..=1.0).contains(&m), "{scored}");
    }
    assert_eq!(scored["analysis"]["provider"], "model_backed", "{scored}");

    let verified = ok(&model_call(
        &server,
        "verify_thoughts",
        json!({"session_id": sid, "provider": "model_backed",
               "claims": [{"text": "PostgreSQL handles the expected load", "criticality": "low"}]}),
    )
    .await);
    assert_eq!(
        verified["questions"].as_array().map(Vec::len),
        Some(2),
        "{verified}"
    );
    assert_eq!(
        verified["analysis"]["provider"], "model_backed",
        "{verified}"
    );
    // The heuristic provider is still the default.
    let heuristic = ok(&model_call(&server, "score_thoughts", json!({"session_id": sid})).await);
    assert_eq!(
        heuristic["analysis"]["provider"], "heuristic",
        "{heuristic}"
    );
    server.stop().await;
    assert_intact(dir.path(), 5).await;
    assert_replays_exactly(dir.path(), &sid, 5).await;
}

#[tokio::test]
async fn a_model_answer_cut_at_the_token_limit_is_named_and_never_taken_as_valid() {
    let Some(base) = llm_or_skip("a_model_answer_cut_at_the_token_limit…") else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let mut env = provider_env(&base);
    for (name, value) in &mut env {
        if *name == "THINKLEDGER_MODEL_MAX_TOKENS" {
            *value = "5".to_owned();
        }
    }
    let server = StdioServer::start_with_env(dir.path(), &[], &env_refs(&env)).await;
    // A one-step plan: its synthesis is JSON the token cap cuts short.
    let plan = ok(&model_call(
        &server,
        "planner",
        json!({"step": "Plan a picnic", "step_number": 1, "total_steps": 1,
               "next_step_required": false, "temperature": 0}),
    )
    .await);
    assert_eq!(plan["synthesis_snapshot"], Value::Null, "{plan}");
    let reason = plan["unavailable"]["synthesis_snapshot"]
        .as_str()
        .unwrap_or_default();
    assert!(reason.contains("cut at the token limit"), "{plan}");
    let sid = plan["session_id"].as_str().unwrap().to_owned();
    // A workspace call whose model answer is cut is refused, and changes nothing.
    let started = ok(&model_call(
        &server,
        "start_deliberation",
        json!({"goal": "Pick a picnic spot", "mode": "Test"}),
    )
    .await);
    let deliberation = started["session_id"].as_str().unwrap().to_owned();
    let refused = rejected(
        &model_call(
            &server,
            "expand_thoughts",
            json!({"session_id": deliberation, "provider": "model_backed", "count": 2}),
        )
        .await,
    );
    assert_eq!(refused["code"], "model_answer_unusable", "{refused}");
    assert!(
        refused["error"]
            .as_str()
            .is_some_and(|e| e.contains("cut at the token limit")),
        "{refused}"
    );
    let nodes = ok(&model_call(
        &server,
        "expand_thoughts",
        json!({"session_id": deliberation, "candidates": ["by the lake"]}),
    )
    .await);
    assert_eq!(
        nodes["node_count"], 2,
        "only the root and the caller's node: {nodes}"
    );
    server.stop().await;
    assert_intact(dir.path(), 4).await;
    assert_replays_exactly(dir.path(), &sid, 1).await;
    assert_replays_exactly(dir.path(), &deliberation, 3).await;
}
