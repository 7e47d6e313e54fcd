//! The cognition tools (ThoughtMCP's `think`, `analyze_systematically`, `think_parallel`,
//! `decompose_problem`, `assess_confidence`, `detect_bias`, `detect_emotion`,
//! `analyze_reasoning`) through the built binary and a real MCP client: the seed's envelope and
//! data fields with zero configuration, refusals with a suggestion (recorded), the results read
//! back after a restart, re-execution with no divergence and no skip; and, against the real
//! local model (skipped cleanly without it), `think` and `think_parallel` model-backed, the four
//! streams' recorded send times and latencies showing them in flight together.

use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;
use std::time::Duration;

use rmcp::model::{CallToolRequestParams, CallToolResult};
use serde_json::{Value, json};

use super::common::{Client, StdioServer, assert_intact, call, cli, ok, rejected, stored_events};
use super::model::llm_with_four_slots_or_skip;

/// Model calls share one slot of a small model on 2 shared cores with the other model tests.
const MODEL_PATIENCE: Duration = Duration::from_secs(900);

/// The seed's response envelope: `success`, `data`, `metadata` with its three members and the
/// session the call was recorded in. Returns `data`.
fn envelope(body: &Value, components: &[&str]) -> Value {
    assert_eq!(body["success"], true, "{body}");
    let metadata = &body["metadata"];
    assert!(metadata["timestamp"].is_string(), "{body}");
    assert!(metadata["processingTime"].is_u64(), "{body}");
    let used: Vec<&str> = metadata["componentsUsed"]
        .as_array()
        .unwrap_or_else(|| panic!("componentsUsed: {body}"))
        .iter()
        .filter_map(Value::as_str)
        .collect();
    for c in components {
        assert!(used.contains(c), "{c} in componentsUsed: {body}");
    }
    assert!(metadata["sessionId"].is_string(), "{body}");
    let data = body["data"].clone();
    let provenance = &data["provenance"];
    assert!(
        provenance["rules"]
            .as_str()
            .is_some_and(|r| r.starts_with("thinkledger.cognition.")),
        "every answer names its rule set and version: {body}"
    );
    assert!(provenance["limitations"].is_array(), "{body}");
    data
}

fn members(value: &Value) -> BTreeSet<&str> {
    value
        .as_object()
        .map(|o| o.keys().map(String::as_str).collect())
        .unwrap_or_default()
}

fn has(value: &Value, names: &[&str], what: &str) {
    let present = members(value);
    for name in names {
        assert!(present.contains(name), "{what} has `{name}`: {value}");
    }
}

fn unit(value: &Value, what: &str) -> f64 {
    let x = value
        .as_f64()
        .unwrap_or_else(|| panic!("{what} is a number: {value}"));
    assert!((0.0..=1.0).contains(&x), "{what} in [0, 1]: {x}");
    x
}

/// A rejection in the seed's shape: `success: false`, the error and a suggestion (checked by
/// `rejected`), recorded with its receipt.
fn refused(result: &CallToolResult, code: &str, error_contains: &str) -> Value {
    let body = rejected(result);
    assert_eq!(body["code"], code, "{body}");
    assert_eq!(body["success"], false, "{body}");
    assert!(
        body["error"]
            .as_str()
            .is_some_and(|e| e.contains(error_contains)),
        "the error says {error_contains:?}: {body}"
    );
    body
}

/// `replay SESSION --reexecute --json`: every call re-executed and matched.
async fn assert_replays_exactly(data_dir: &Path, session: &str, calls: u64) -> Value {
    let run = cli(data_dir, &["replay", session, "--reexecute", "--json"]).await;
    let report: Value = serde_json::from_str(&run.stdout)
        .unwrap_or_else(|e| panic!("replay --json printed no JSON ({e}): {run:?}"));
    let r = &report["reexecution"];
    assert_eq!(r["diverged"], 0, "no call diverges: {report}");
    assert_eq!(r["skipped"], 0, "no call is skipped: {report}");
    assert_eq!(r["matched"], calls, "every call matches: {report}");
    assert_eq!(run.status.code(), Some(0), "{run:?}");
    report
}

/// Every stored event is what docs/ledger-format.md and schemas/event.v1.json say; returns the
/// fact types seen.
fn assert_events_match_the_schema(data_dir: &Path) -> BTreeSet<String> {
    let schema = super::schemas::event_schema();
    let mut facts = BTreeSet::new();
    for event in stored_events(data_dir) {
        if let Err(e) = super::schemas::subset::validate(&schema, &event) {
            panic!("stored event does not match schemas/event.v1.json: {e}\n{event:#}");
        }
        for fact in event["facts"].as_array().expect("facts") {
            facts.insert(fact["type"].as_str().expect("type").to_owned());
        }
    }
    facts
}

/// The seed's example requests, one per tool (`think_parallel` with a short timeout).
fn seed_requests() -> Vec<(&'static str, Value)> {
    vec![
        (
            "think",
            json!({"problem": "How to optimize database query performance?", "mode": "analytical",
                   "context": {"background": "PostgreSQL database with 1M records",
                               "constraints": ["No schema changes", "Minimal downtime"],
                               "goals": ["Reduce p95 latency to <100ms"]}}),
        ),
        (
            "analyze_systematically",
            json!({"problem": "Why is the system experiencing intermittent failures?",
                   "context": {"background": "Production system with 99.9% SLA",
                               "constraints": ["Cannot take system offline"]}}),
        ),
        (
            "think_parallel",
            json!({"problem": "How should we approach the product roadmap for Q1?",
                   "timeout": 30000,
                   "context": {"background": "SaaS product with growing user base",
                               "goals": ["Increase retention", "Launch mobile app"]}}),
        ),
        (
            "decompose_problem",
            json!({"problem": "Build a scalable web application", "maxDepth": 3}),
        ),
        (
            "assess_confidence",
            json!({"reasoning": "Based on benchmark results, the optimization will improve throughput by 40%",
                   "evidence": ["Benchmark results showing 40% improvement", "Load test data",
                                "Production metrics"],
                   "context": "Production deployment decision"}),
        ),
        (
            "detect_bias",
            json!({"reasoning": "All the data I've seen supports my hypothesis that users prefer feature A",
                   "context": "Product research analysis"}),
        ),
        (
            "detect_emotion",
            json!({"text": "I'm really excited about this new project! It's going to be amazing!",
                   "includeDiscrete": true, "context": "Work communication"}),
        ),
        (
            "analyze_reasoning",
            json!({"reasoning": "Based on our analysis, the proposed solution is optimal because it addresses all requirements while minimizing costs",
                   "context": "Technical decision review", "includeConfidence": true,
                   "includeBias": true, "includeEmotion": false}),
        ),
    ]
}

/// Checks the seed's data fields of one rule-decided (or scaffold) answer.
fn check_rule_answer(tool: &str, body: &Value) {
    match tool {
        "think" => {
            let data = envelope(body, &[]);
            has(
                &data,
                &[
                    "conclusion",
                    "reasoning",
                    "insights",
                    "confidence",
                    "status",
                ],
                tool,
            );
            assert_eq!(data["status"], "scaffold", "{data}");
            assert_eq!(
                data["conclusion"],
                Value::Null,
                "no template poses as a conclusion"
            );
            assert_eq!(data["confidence"], Value::Null, "{data}");
            assert_eq!(data["insights"], json!([]), "{data}");
            assert_eq!(
                data["reasoning"].as_array().map(Vec::len),
                Some(4),
                "{data}"
            );
            assert!(
                data["provenance"]["limitations"][0]
                    .as_str()
                    .is_some_and(|l| l.contains("No model is configured")),
                "the limitation is named: {data}"
            );
        }
        "analyze_systematically" => {
            let data = envelope(body, &["frameworkSelector"]);
            has(
                &data,
                &["framework", "selection", "result", "alternatives"],
                tool,
            );
            has(
                &data["framework"],
                &["id", "name", "description"],
                "framework",
            );
            assert_eq!(
                data["framework"]["id"], "root-cause-analysis",
                "a failure-analysis problem gets root-cause analysis: {data}"
            );
            has(
                &data["selection"],
                &["confidence", "reason", "isHybrid"],
                "selection",
            );
            unit(&data["selection"]["confidence"], "selection confidence");
            has(
                &data["result"],
                &["conclusion", "steps", "insights", "confidence"],
                "result",
            );
            assert!(
                data["result"]["steps"]
                    .as_array()
                    .is_some_and(|s| !s.is_empty()),
                "{data}"
            );
            assert_eq!(data["result"]["conclusion"], Value::Null, "{data}");
            let alternatives = data["alternatives"].as_array().expect("alternatives");
            assert!(!alternatives.is_empty(), "{data}");
            for a in alternatives {
                has(a, &["framework", "reason"], "alternative");
                has(&a["framework"], &["id", "name"], "alternative framework");
            }
        }
        "think_parallel" => {
            let data = envelope(body, &[]);
            has(
                &data,
                &[
                    "conclusion",
                    "insights",
                    "recommendations",
                    "conflicts",
                    "confidence",
                    "quality",
                ],
                tool,
            );
            assert_eq!(data["status"], "scaffold", "{data}");
            assert_eq!(data["conclusion"], Value::Null, "{data}");
            assert_eq!(data["insights"], json!([]), "{data}");
            assert_eq!(data["recommendations"], json!([]), "{data}");
            let streams: Vec<&str> = data["streams"]
                .as_array()
                .expect("streams")
                .iter()
                .map(|s| s["stream"].as_str().expect("stream"))
                .collect();
            assert_eq!(
                streams,
                ["analytical", "creative", "critical", "synthetic"],
                "{data}"
            );
        }
        "decompose_problem" => {
            let data = envelope(body, &["problemDecomposer"]);
            has(
                &data,
                &[
                    "problem",
                    "subProblems",
                    "dependencies",
                    "executionOrder",
                    "totalSubProblems",
                    "maxDepth",
                ],
                tool,
            );
            assert_eq!(data["maxDepth"], 3, "{data}");
            let nodes = data["subProblems"].as_array().expect("subProblems");
            assert_eq!(data["totalSubProblems"], nodes.len(), "{data}");
            assert_eq!(nodes[0]["id"], "problem-1-0", "{data}");
            assert_eq!(nodes[0]["depth"], 1, "{data}");
            let mut depth_of = BTreeMap::new();
            for n in nodes {
                has(n, &["id", "description", "depth"], "sub-problem");
                let depth = n["depth"].as_u64().expect("depth");
                assert!((1..=3).contains(&depth), "{n}");
                if depth > 1 {
                    let parent = n["parent"].as_str().expect("parent");
                    assert!(n["id"].as_str().unwrap().starts_with(parent), "{n}");
                }
                depth_of.insert(n["id"].as_str().unwrap().to_owned(), depth);
            }
            assert_topological(&data);
        }
        "assess_confidence" => {
            let data = envelope(body, &["confidenceAssessor"]);
            has(
                &data,
                &[
                    "overallConfidence",
                    "dimensions",
                    "interpretation",
                    "warnings",
                    "recommendations",
                ],
                tool,
            );
            unit(&data["overallConfidence"], "overallConfidence");
            for d in [
                "evidenceQuality",
                "reasoningCoherence",
                "completeness",
                "uncertaintyLevel",
                "biasFreedom",
            ] {
                unit(&data["dimensions"][d], d);
            }
            assert!(data["interpretation"].is_string(), "{data}");
        }
        "detect_bias" => {
            let data = envelope(body, &["biasDetector"]);
            has(
                &data,
                &["biases", "detectionTime", "monitoringActive"],
                tool,
            );
            let biases = data["biases"].as_array().expect("biases");
            let confirmation = biases
                .iter()
                .find(|b| b["type"] == "confirmation")
                .unwrap_or_else(|| panic!("the seed's example is confirmation bias: {data}"));
            has(
                confirmation,
                &["type", "severity", "evidence", "correction", "confidence"],
                "bias",
            );
            unit(&confirmation["severity"], "severity");
            unit(&confirmation["confidence"], "confidence");
            assert!(
                confirmation["evidence"][0]
                    .as_str()
                    .is_some_and(|e| e.contains("supports my hypothesis")),
                "the evidence is the span that matched: {data}"
            );
        }
        "detect_emotion" => {
            let data = envelope(body, &["emotionAnalyzer", "discreteEmotionClassifier"]);
            has(&data, &["circumplex", "discrete", "detectionTime"], tool);
            has(
                &data["circumplex"],
                &["valence", "arousal", "dominance", "confidence"],
                "circumplex",
            );
            assert!(
                data["circumplex"]["valence"].as_f64().unwrap() > 0.3,
                "{data}"
            );
            has(
                &data["discrete"],
                &["primary", "emotions", "confidence"],
                "discrete",
            );
            assert_eq!(data["discrete"]["primary"], "joy", "{data}");
            for e in data["discrete"]["emotions"].as_array().expect("emotions") {
                has(e, &["emotion", "score", "intensity"], "emotion");
            }
        }
        "analyze_reasoning" => {
            let data = envelope(body, &["confidenceAssessor", "biasDetector"]);
            // The rule set that made the measures is named first (features/2, not features/1).
            assert!(
                data["provenance"]["rules"]
                    .as_str()
                    .is_some_and(|r| r.starts_with("thinkledger.cognition.features/2 + ")),
                "{data}"
            );
            has(
                &data,
                &[
                    "quality",
                    "strengths",
                    "weaknesses",
                    "recommendations",
                    "confidence",
                    "biases",
                ],
                tool,
            );
            for q in [
                "coherence",
                "completeness",
                "logicalValidity",
                "evidenceSupport",
            ] {
                unit(&data["quality"][q], q);
            }
            has(
                &data["confidence"],
                &["overallConfidence", "dimensions"],
                "confidence",
            );
        }
        other => panic!("no check for {other}"),
    }
}

/// Every dependency's `from` comes before its `to` in `executionOrder`, which lists every
/// sub-problem once.
fn assert_topological(data: &Value) {
    let order: Vec<&str> = data["executionOrder"]
        .as_array()
        .expect("executionOrder")
        .iter()
        .map(|v| v.as_str().expect("id"))
        .collect();
    let ids: BTreeSet<&str> = data["subProblems"]
        .as_array()
        .expect("subProblems")
        .iter()
        .map(|n| n["id"].as_str().expect("id"))
        .collect();
    assert_eq!(order.len(), ids.len(), "{data}");
    assert_eq!(
        order.iter().copied().collect::<BTreeSet<_>>(),
        ids,
        "{data}"
    );
    let at: BTreeMap<&str, usize> = order.iter().enumerate().map(|(i, id)| (*id, i)).collect();
    let dependencies = data["dependencies"].as_array().expect("dependencies");
    assert!(!dependencies.is_empty(), "{data}");
    for d in dependencies {
        let (from, to) = (d["from"].as_str().unwrap(), d["to"].as_str().unwrap());
        assert!(
            ["hierarchical", "sequential"].contains(&d["type"].as_str().unwrap()),
            "{d}"
        );
        assert!(at[from] < at[to], "{from} before {to} in {order:?}");
    }
}

#[tokio::test]
async fn the_eight_tools_answer_in_the_seeds_shapes_without_a_model_refuse_bad_input_and_replay_exactly()
 {
    let dir = tempfile::tempdir().unwrap();
    // Zero configuration: no provider, even if the test's environment has one.
    let no_provider = [("THINKLEDGER_MODEL_PROVIDER_URL", "")];
    let server = StdioServer::start_with_env(dir.path(), &[], &no_provider).await;
    let mut session = None;
    for (tool, arguments) in seed_requests() {
        let body = ok(&call(&server, tool, arguments).await);
        check_rule_answer(tool, &body);
        let sid = body["metadata"]["sessionId"].as_str().unwrap().to_owned();
        assert_eq!(
            session.get_or_insert_with(|| sid.clone()),
            &sid,
            "every call continues the caller's session"
        );
    }
    let session = session.unwrap();

    // Deeper decompositions keep a topological order; a problem listing its parts is split.
    for depth in [1, 2, 4, 5] {
        let body = ok(&call(
            &server,
            "decompose_problem",
            json!({"problem": "Collect the requirements; design the schema, and then migrate the data",
                   "maxDepth": depth}),
        )
        .await);
        let data = envelope(&body, &["problemDecomposer"]);
        assert_eq!(data["maxDepth"], depth, "{data}");
        if depth > 1 {
            assert_topological(&data);
            let second: Vec<&str> = data["subProblems"]
                .as_array()
                .unwrap()
                .iter()
                .filter(|n| n["depth"] == 2)
                .map(|n| n["description"].as_str().unwrap())
                .collect();
            assert_eq!(second.len(), 3, "the problem's own three parts: {data}");
        }
    }
    // A preferred framework overrides the rule table.
    let body = ok(&call(
        &server,
        "analyze_systematically",
        json!({"problem": "Why is the build failing?", "preferredFramework": "first-principles"}),
    )
    .await);
    let data = envelope(&body, &["frameworkSelector"]);
    assert_eq!(data["framework"]["id"], "first-principles", "{data}");
    // `think` in parallel mode runs the four streams' scaffold.
    let body = ok(&call(
        &server,
        "think",
        json!({"problem": "Should we migrate to microservices architecture?", "mode": "parallel"}),
    )
    .await);
    let data = envelope(&body, &[]);
    assert_eq!(data["streams"].as_array().map(Vec::len), Some(4), "{data}");
    // Without discrete emotions, `discrete` is left out (or null) and only the circumplex runs.
    let body = ok(&call(
        &server,
        "detect_emotion",
        json!({"text": "I am furious about the delay.", "includeDiscrete": false}),
    )
    .await);
    let data = envelope(&body, &["emotionAnalyzer"]);
    assert!(
        data["circumplex"]["valence"].as_f64().unwrap() < 0.0,
        "{data}"
    );
    assert!(data["discrete"].is_null(), "{data}");
    let accepted = seed_requests().len() as u64 + 4 + 3;

    // Bad input: refused with the seed's error and a suggestion, and recorded.
    let bad = [
        (
            "think",
            json!({"mode": "analytical"}),
            "missing_parameter",
            "Missing required parameter: problem",
        ),
        (
            "think",
            json!({"problem": "x", "mode": "dreamy"}),
            "invalid_arguments",
            "Invalid mode",
        ),
        (
            "think_parallel",
            json!({"problem": "x", "timeout": 10}),
            "invalid_arguments",
            "timeout",
        ),
        (
            "decompose_problem",
            json!({"problem": "x", "maxDepth": 9}),
            "invalid_arguments",
            "maxDepth",
        ),
        (
            "analyze_systematically",
            json!({"problem": "x", "preferredFramework": "astrology"}),
            "invalid_arguments",
            "Unknown framework",
        ),
        (
            "assess_confidence",
            json!({"reasoning": "  "}),
            "invalid_arguments",
            "reasoning cannot be empty",
        ),
        (
            "detect_bias",
            json!({}),
            "missing_parameter",
            "Missing required parameter: reasoning",
        ),
        (
            "detect_emotion",
            json!({"text": ""}),
            "invalid_arguments",
            "text cannot be empty",
        ),
        (
            "analyze_reasoning",
            json!({"reasoning": 42}),
            "invalid_arguments",
            "Invalid arguments",
        ),
    ];
    for (tool, arguments, code, error) in &bad {
        let body = refused(&call(&server, tool, arguments.clone()).await, code, error);
        for caller_word in ["dreamy", "astrology"] {
            assert!(
                !body["error"].as_str().unwrap().contains(caller_word),
                "a refusal's message (stored in clear) does not echo the caller's text: {body}"
            );
        }
        assert!(
            body["suggestion"]
                .as_str()
                .is_some_and(|s| s.contains("pass")),
            "{tool}: the suggestion says what to pass: {body}"
        );
    }
    server.stop().await;
    let events = accepted + bad.len() as u64;
    assert_intact(dir.path(), events).await;

    let facts = assert_events_match_the_schema(dir.path());
    assert!(facts.contains("CognitionRecorded"), "{facts:?}");
    // Every call is re-executed and matches: the refusals are kept in their caller's session
    // beside the accepted ones.
    assert_replays_exactly(dir.path(), &session, events).await;

    // After a restart the results are read back from the ledger: the session's timeline shows
    // each call's recorded outcome (numbers, labels and ids).
    let server = StdioServer::start_with_env(dir.path(), &[], &no_provider).await;
    let replay = ok(&call(
        &server,
        "replay_reasoning_session",
        json!({"session_id": session}),
    )
    .await);
    server.stop().await;
    let timeline = replay["timeline"].as_array().expect("timeline");
    let recorded: Vec<&Value> = timeline
        .iter()
        .flat_map(|e| e["changes"].as_array().into_iter().flatten())
        .filter(|c| c["fact"] == "CognitionRecorded")
        .collect();
    assert_eq!(recorded.len() as u64, accepted, "{replay}");
    let summaries = serde_json::to_string(&recorded).unwrap();
    for expected in [
        "\"framework\":\"root-cause-analysis\"",
        "\"primary\":\"joy\"",
        "\"type\":\"confirmation\"",
        "\"executionOrder\":\"17 items\"",
        "\"status\":\"scaffold\"",
    ] {
        assert!(
            summaries.contains(&expected.replace('"', "\\\"")),
            "{expected} is read back after the restart: {summaries}"
        );
    }
}

/// The provider's settings for the server: the local model and a cap on each answer's tokens.
fn provider_env(base: &str, max_tokens: &str) -> [(&'static str, String); 3] {
    [
        ("THINKLEDGER_MODEL_PROVIDER_URL", base.to_owned()),
        ("THINKLEDGER_MODEL", "smollm2-test".to_owned()),
        ("THINKLEDGER_MODEL_MAX_TOKENS", max_tokens.to_owned()),
    ]
}

/// reader/2 (adopted by the fifth held-out set's decision rule, docs/cognition.md) names a
/// false dilemma of a development set, which the rules do not: among the weaknesses and
/// recommendations, in the recorded findings' place, with its name in the provenance.
#[tokio::test]
async fn analyze_reasoning_names_a_false_dilemma_by_reader_2() {
    let dir = tempfile::tempdir().unwrap();
    let no_provider = [("THINKLEDGER_MODEL_PROVIDER_URL", "")];
    let server = StdioServer::start_with_env(dir.path(), &[], &no_provider).await;
    let body = ok(&call(
        &server,
        "analyze_reasoning",
        json!({"reasoning": "Either we ship the feature this week or the company goes bankrupt."}),
    )
    .await);
    let data = envelope(&body, &["confidenceAssessor", "biasDetector"]);
    assert!(
        data["weaknesses"]
            .as_array()
            .unwrap()
            .iter()
            .any(|w| w.as_str().unwrap().starts_with(
                "False dilemma (the whole passage, read by thinkledger.cognition.reader/2"
            )),
        "{data}"
    );
    assert!(
        data["provenance"]["rules"]
            .as_str()
            .is_some_and(|r| r.contains("thinkledger.cognition.reader/2")),
        "{data}"
    );
    assert!(
        !data["provenance"]["limitations"]
            .to_string()
            .contains("do not assess false dilemmas"),
        "{data}"
    );
    server.stop().await;
}

/// Issue 41: a text that argues nothing gets the neutral answer (argues/2), and an argument —
/// sound or fallacious — does not.
#[tokio::test]
async fn analyze_reasoning_answers_neutrally_for_a_text_that_argues_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let no_provider = [("THINKLEDGER_MODEL_PROVIDER_URL", "")];
    let server = StdioServer::start_with_env(dir.path(), &[], &no_provider).await;
    let analyse = |text: &'static str| {
        let server = &server;
        async move {
            let body = ok(&call(server, "analyze_reasoning", json!({"reasoning": text})).await);
            envelope(&body, &["confidenceAssessor", "biasDetector"])
        }
    };
    for text in [
        "The sky is blue.",
        "Does anyone know if the pool is open on Sundays? I'd like to take the kids.",
        "The meeting is at 3pm in room 4.",
    ] {
        let data = analyse(text).await;
        for measure in [
            "coherence",
            "completeness",
            "logicalValidity",
            "evidenceSupport",
        ] {
            assert_eq!(data["quality"][measure], 0.5, "{text}: {data}");
        }
        assert_eq!(data["strengths"], json!([]), "{text}: {data}");
        assert_eq!(data["weaknesses"], json!([]), "{text}: {data}");
        assert!(
            data["recommendations"][0]
                .as_str()
                .is_some_and(|r| r.starts_with("No argument to assess")),
            "{text}: {data}"
        );
        assert!(
            data["provenance"]["rules"]
                .as_str()
                .is_some_and(|r| r.contains("thinkledger.cognition.argues/2")),
            "{text}: {data}"
        );
    }
    for text in [
        "We should move the release to Monday: two of the five blockers are still open and QA \
         needs two days to retest.",
        "The sky is blue because it is blue.",
    ] {
        let data = analyse(text).await;
        assert!(
            !data["recommendations"]
                .to_string()
                .contains("No argument to assess"),
            "{text}: {data}"
        );
        assert!(
            !data["provenance"]["rules"].to_string().contains("argues/2"),
            "{text}: {data}"
        );
    }
    server.stop().await;
}

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

#[tokio::test]
async fn think_and_think_parallel_reason_with_the_real_model_four_calls_in_flight_together() {
    // A server with four slots computes the four streams at once; the shared one-slot server
    // would queue them (docs/cognition.md gives both measurements).
    let Some(base) =
        llm_with_four_slots_or_skip("think_and_think_parallel_reason_with_the_real_model…")
    else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let env = provider_env(&base, "160");
    let env: Vec<(&str, &str)> = env.iter().map(|(k, v)| (*k, v.as_str())).collect();
    let server = StdioServer::start_with_env(dir.path(), &[], &env).await;

    let body = ok(&model_call(
        &server,
        "think",
        json!({"problem": "How to optimize database query performance?", "mode": "critical"}),
    )
    .await);
    let data = envelope(&body, &["reasoningModel"]);
    assert_eq!(data["status"], "completed", "{data}");
    assert!(
        data["conclusion"]
            .as_str()
            .is_some_and(|c| !c.trim().is_empty()),
        "the model wrote a conclusion: {data}"
    );
    assert!(
        data["provenance"]["model"]
            .as_str()
            .is_some_and(|m| m.contains("SmolLM2")),
        "the model that reasoned is named: {data}"
    );
    let session = body["metadata"]["sessionId"].as_str().unwrap().to_owned();
    server.stop().await;

    // The four streams: sent at once, each answer recorded with its send time and latency.
    // Answers capped at 64 tokens: the four share 2 cores with other builds and must all
    // answer within the seed's 60-second limit; a stream cut short is named, not taken.
    let env = provider_env(&base, "64");
    let env: Vec<(&str, &str)> = env.iter().map(|(k, v)| (*k, v.as_str())).collect();
    let server = StdioServer::start_with_env(dir.path(), &[], &env).await;
    // The 2 cores are shared with other builds: when they are saturated the four streams may
    // miss the seed's 60-second ceiling. That refusal is the tool working as specified (it is
    // recorded, outside the session); the overlap is then measured on one more try.
    let ask = json!({"problem": "Should a small team adopt microservices?", "timeout": 60000,
                     "context": {"constraints": ["Four engineers"]}});
    let mut refused_for_time = 0;
    let body = loop {
        let result = model_call(&server, "think_parallel", ask.clone()).await;
        if result.is_error == Some(true) && refused_for_time == 0 {
            refused(&result, "model_call_failed", "Timeout exceeded");
            eprintln!("think_parallel missed its 60 s ceiling under load; trying once more");
            refused_for_time += 1;
            continue;
        }
        break ok(&result);
    };
    let data = envelope(&body, &["parallelStreams", "reasoningModel"]);
    assert_eq!(data["status"], "completed", "{data}");
    has(
        &data,
        &[
            "conclusion",
            "insights",
            "recommendations",
            "conflicts",
            "confidence",
            "quality",
        ],
        "think_parallel",
    );
    let timings = data["timings"].as_array().expect("timings");
    assert_eq!(timings.len(), 4, "{data}");
    let sent: Vec<u64> = timings
        .iter()
        .map(|t| t["startedAfterMs"].as_u64().expect("startedAfterMs"))
        .collect();
    let answered: Vec<u64> = timings
        .iter()
        .map(|t| t["startedAfterMs"].as_u64().unwrap() + t["latencyMs"].as_u64().unwrap())
        .collect();
    let last_sent = *sent.iter().max().unwrap();
    let first_answer = *answered.iter().min().unwrap();
    eprintln!("think_parallel timings: {timings:?}");
    assert!(
        last_sent < first_answer,
        "all four calls were sent before any was answered: {timings:?}"
    );
    assert_eq!(data["overlapping"], true, "{data}");
    let points: Vec<u64> = data["synchronization"]
        .as_array()
        .expect("synchronization")
        .iter()
        .map(|p| p["percent"].as_u64().unwrap())
        .collect();
    assert_eq!(points, [25, 50, 75], "{data}");
    for insight in data["insights"].as_array().unwrap() {
        has(
            insight,
            &["content", "sources", "importance", "confidence"],
            "insight",
        );
        let source = insight["sources"][0].as_str().unwrap();
        assert!(
            ["analytical", "creative", "critical", "synthetic"].contains(&source),
            "each insight names its stream: {insight}"
        );
    }
    // Each stream whose answer could not be read is named, and nothing of it is taken.
    let quality = unit(&data["quality"], "quality");
    let unreadable = data["provenance"]["limitations"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|l| l.as_str().unwrap().contains("stream's answer"))
        .count();
    assert_eq!(quality, (4 - unreadable) as f64 / 4.0, "{data}");
    let recommendations = data["recommendations"].as_array().expect("recommendations");
    assert_eq!(recommendations.len(), 4 - unreadable, "{data}");
    for r in recommendations {
        has(
            r,
            &[
                "description",
                "sources",
                "priority",
                "confidence",
                "rationale",
            ],
            "recommendation",
        );
    }
    for c in data["conflicts"].as_array().expect("conflicts") {
        has(
            c,
            &["id", "type", "description", "severity", "sourceStreams"],
            "conflict",
        );
        assert!(
            ["support", "oppose", "mixed"]
                .iter()
                .filter(|s| c["description"].as_str().unwrap().contains(*s))
                .count()
                >= 1,
            "a conflict names the stances: {c}"
        );
    }
    let parallel_session = body["metadata"]["sessionId"].as_str().unwrap().to_owned();
    server.stop().await;
    assert_intact(dir.path(), 2 + refused_for_time).await;

    // The event itself shows the overlap: four model calls with their send offsets.
    let events = stored_events(dir.path());
    let parallel = events.last().expect("the think_parallel event");
    let calls = parallel["call"]["effects"]["modelCalls"]
        .as_array()
        .expect("modelCalls");
    assert_eq!(calls.len(), 4, "{parallel:#}");
    let recorded_last_sent = calls
        .iter()
        .map(|c| c["startedAfterMs"].as_u64().expect("startedAfterMs"))
        .max()
        .unwrap();
    let recorded_first_answer = calls
        .iter()
        .map(|c| c["startedAfterMs"].as_u64().unwrap() + c["latencyMs"].as_u64().unwrap())
        .min()
        .unwrap();
    assert!(recorded_last_sent < recorded_first_answer, "{calls:?}");
    assert!(
        events[0]["call"]["effects"]["modelCalls"][0]
            .get("startedAfterMs")
            .is_none(),
        "a call made alone records no batch offset"
    );
    let facts = assert_events_match_the_schema(dir.path());
    assert!(facts.contains("CognitionRecorded"), "{facts:?}");
    assert_replays_exactly(dir.path(), &session, 1).await;
    assert_replays_exactly(dir.path(), &parallel_session, 1).await;
}

#[tokio::test]
async fn erasing_a_session_removes_the_texts_the_cognition_tools_derived() {
    let dir = tempfile::tempdir().unwrap();
    let no_provider = [("THINKLEDGER_MODEL_PROVIDER_URL", "")];
    let server = StdioServer::start_with_env(dir.path(), &[], &no_provider).await;
    // The bias evidence and the sub-problems are cut from the caller's words: derived texts.
    let evidence = "supports my hypothesis that patient 4471 is faking";
    let body = ok(&call(
        &server,
        "detect_bias",
        json!({"reasoning": format!("Everything I read {evidence}.")}),
    )
    .await);
    let data = envelope(&body, &["biasDetector"]);
    assert!(
        data["biases"][0]["evidence"][0]
            .as_str()
            .is_some_and(|e| e.contains("supports my hypothesis")),
        "{data}"
    );
    let part = "call the clinic at 555-0199";
    let body = ok(&call(
        &server,
        "decompose_problem",
        json!({"problem": format!("Collect the records; {part}, and then file the claim"),
               "maxDepth": 2}),
    )
    .await);
    let session = body["metadata"]["sessionId"].as_str().unwrap().to_owned();
    server.stop().await;
    let bytes = super::common::all_bytes(dir.path());
    assert!(super::common::holds(&bytes, "patient 4471"));
    assert!(super::common::holds(&bytes, part));

    let run = cli(
        dir.path(),
        &[
            "erase",
            "--session",
            &session,
            "--reason",
            "subject request",
        ],
    )
    .await;
    assert!(run.status.success(), "erase failed: {run:?}");
    let bytes = super::common::all_bytes(dir.path());
    assert!(
        !super::common::holds(&bytes, "patient 4471"),
        "erased plaintext found on disk"
    );
    assert!(
        !super::common::holds(&bytes, part),
        "erased plaintext found on disk"
    );
    let events = stored_events(dir.path());
    assert_intact(dir.path(), events.len() as u64).await;
    assert_events_match_the_schema(dir.path());

    // A restarted server reads the session with its texts gone.
    let server = StdioServer::start_with_env(dir.path(), &[], &no_provider).await;
    let body = ok(&call(
        &server,
        "detect_emotion",
        json!({"text": "A new, cheerful start."}),
    )
    .await);
    envelope(&body, &["emotionAnalyzer"]);
    server.stop().await;
}

/// A model server that accepts connections and never answers.
async fn silent_model_server() -> (String, tokio::task::JoinHandle<()>) {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let base = format!("http://{}/v1", listener.local_addr().unwrap());
    let task = tokio::spawn(async move {
        let mut held = Vec::new();
        while let Ok((socket, _)) = listener.accept().await {
            held.push(socket);
        }
    });
    (base, task)
}

#[tokio::test]
async fn think_parallel_past_its_timeout_is_refused_as_the_seed_says_and_recorded() {
    let (base, silent) = silent_model_server().await;
    let dir = tempfile::tempdir().unwrap();
    let env = provider_env(&base, "64");
    let env: Vec<(&str, &str)> = env.iter().map(|(k, v)| (*k, v.as_str())).collect();
    let server = StdioServer::start_with_env(dir.path(), &[], &env).await;
    let started = std::time::Instant::now();
    let result = call(
        &server,
        "think_parallel",
        json!({"problem": "Should we rewrite the billing service?", "timeout": 1000}),
    )
    .await;
    let waited = started.elapsed();
    let body = refused(&result, "model_call_failed", "Timeout exceeded");
    assert!(
        body["error"].as_str().unwrap().contains("1000 ms"),
        "the error names the caller's timeout: {body}"
    );
    assert!(
        waited < Duration::from_secs(20),
        "the batch gives up at its timeout, not the client's: {waited:?}"
    );
    assert_eq!(
        body["suggestion"], "Reduce complexity or increase timeout (at most 60000 ms)",
        "{body}"
    );
    // A configured model that does not answer is never replaced by the scaffold.
    assert!(body.get("data").is_none(), "{body}");
    server.stop().await;
    silent.abort();
    assert_intact(dir.path(), 1).await;
    assert_events_match_the_schema(dir.path());
}

#[tokio::test]
async fn the_models_judgement_of_emotions_biases_and_fallacies_stands_beside_the_rules() {
    let Some(base) =
        super::model::llm_or_skip("the_models_judgement_of_emotions_biases_and_fallacies…")
    else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let env = provider_env(&base, "48");
    let env: Vec<(&str, &str)> = env.iter().map(|(k, v)| (*k, v.as_str())).collect();
    let server = StdioServer::start_with_env(dir.path(), &[], &env).await;

    let text = "I'm so grateful to my neighbour, who fed our cat all summer.";
    let body = ok(&model_call(&server, "detect_emotion", json!({"text": text})).await);
    let data = envelope(
        &body,
        &[
            "emotionAnalyzer",
            "discreteEmotionClassifier",
            "reasoningModel",
        ],
    );
    // The rules' reading is whole, and the model's answer stands beside it, labelled.
    assert_eq!(data["discrete"]["primary"], "gratitude", "{data}");
    assert!(
        data["circumplex"]["valence"].as_f64().unwrap() > 0.0,
        "{data}"
    );
    let judgement = &data["modelJudgement"];
    assert!(
        judgement["model"]
            .as_str()
            .is_some_and(|m| m.contains("SmolLM2")),
        "the model that judged is named: {data}"
    );
    assert_eq!(data["provenance"]["model"], judgement["model"], "{data}");
    match judgement["status"].as_str() {
        Some("answered") => {
            let emotion = judgement["emotion"].as_str().expect("emotion");
            assert!(
                emotion == "none"
                    || thinkledger::app::cognition::emotion::EMOTIONS.contains(&emotion),
                "only the rules' labels are taken: {data}"
            );
            assert!(
                ["positive", "negative", "neutral"]
                    .contains(&judgement["valence"].as_str().unwrap()),
                "{data}"
            );
        }
        Some("unreadable") => assert!(judgement.get("emotion").is_none(), "{data}"),
        other => panic!("status {other:?}: {data}"),
    }
    let limitations = data["provenance"]["limitations"].to_string();
    assert!(limitations.contains("modelJudgement"), "{data}");

    let reasoning = "We've already spent two years on this tool, so we can't switch now.";
    let body = ok(&model_call(&server, "detect_bias", json!({"reasoning": reasoning})).await);
    let data = envelope(&body, &["biasDetector", "reasoningModel"]);
    let found: Vec<&str> = data["biases"]
        .as_array()
        .unwrap()
        .iter()
        .map(|b| b["type"].as_str().unwrap())
        .collect();
    assert!(found.contains(&"sunk_cost"), "the rules find it: {data}");
    let judgement = &data["modelJudgement"];
    match judgement["status"].as_str() {
        Some("answered") => {
            for b in judgement["biases"].as_array().expect("biases") {
                assert!(
                    thinkledger::app::cognition::bias::BIAS_TYPES.contains(&b.as_str().unwrap()),
                    "{data}"
                );
            }
        }
        Some("unreadable") => assert!(judgement.get("biases").is_none(), "{data}"),
        other => panic!("status {other:?}: {data}"),
    }

    // analyze_reasoning: the rules' measures as without a model, the model's fallacies beside.
    let reasoning = "You back the new surveillance bill or you're comfortable with criminals \
                     walking free. There's no middle ground here.";
    let body = ok(&model_call(
        &server,
        "analyze_reasoning",
        json!({"reasoning": reasoning}),
    )
    .await);
    let data = envelope(&body, &["reasoningAnalyzer", "reasoningModel"]);
    assert!(data["quality"]["logicalValidity"].is_number(), "{data}");
    let judgement = &data["modelJudgement"];
    assert_eq!(data["provenance"]["model"], judgement["model"], "{data}");
    match judgement["status"].as_str() {
        Some("answered") => {
            for f in judgement["fallacies"].as_array().expect("fallacies") {
                assert!(
                    [
                        "circular",
                        "hasty_generalisation",
                        "false_dilemma",
                        "appeal_to_authority",
                        "non_sequitur",
                        "bandwagon"
                    ]
                    .contains(&f.as_str().unwrap()),
                    "only the six labels are taken: {data}"
                );
            }
        }
        Some("unreadable") => assert!(judgement.get("fallacies").is_none(), "{data}"),
        other => panic!("status {other:?}: {data}"),
    }
    assert!(
        data["provenance"]["limitations"]
            .to_string()
            .contains("modelJudgement"),
        "{data}"
    );
    let session = body["metadata"]["sessionId"].as_str().unwrap().to_owned();
    server.stop().await;
    assert_intact(dir.path(), 3).await;

    // Each call is one event with its one model call; re-executed from the log, both match.
    let events = stored_events(dir.path());
    for event in &events {
        let calls = event["call"]["effects"]["modelCalls"]
            .as_array()
            .expect("modelCalls");
        assert_eq!(calls.len(), 1, "{event:#}");
    }
    assert_events_match_the_schema(dir.path());
    assert_replays_exactly(dir.path(), &session, 3).await;
}
