//! The MCP face of the server, end to end: the built binary driven by rmcp's client over stdio
//! (and Streamable HTTP where noted), each test one realistic scenario with strict assertions on
//! what the client sees and on what the ledger recorded.

use std::collections::BTreeSet;

use rmcp::model::ErrorCode;
use rmcp::service::ServiceError;
use serde_json::{Value, json};

use crate::common::*;

mod http;
mod maxential;
mod rejections;
mod resources;
mod toolsets;

const ALL_TOOLS: &[&str] = &[
    "sequentialthinking",
    "reset",
    "search",
    "tag",
    "export",
    "visualize",
    "replay_reasoning_session",
    "diff_sessions",
    "export_reasoning_audit",
    "run_thinking_mode",
    "reasoning_intent_router",
    "reasoning_autopilot",
    "start_deliberation",
    "add_thought_node",
    "expand_thoughts",
    "apply_algorithm_template",
    "set_scoring_rubric",
    "score_thoughts",
    "prune_thoughts",
    "refine_thoughts",
    "record_assumption",
    "set_assumption_status",
    "apply_reasoning_pattern",
    "verify_thoughts",
    "evaluate_reasoning_quality",
    "run_reasoning_checkpoint",
    "converge_reasoning",
    "run_reasonkit_pipeline",
    "consensus_answer",
    "start_skeleton_of_thought",
    "run_skeleton_elaboration",
    "store_memory",
    "retrieve_memories",
    "update_memory",
    "delete_memory",
    "search_memories",
    "confer",
    "traced_reasoning",
    "planner",
    "biased_reasoning",
    "think",
    "analyze_systematically",
    "think_parallel",
    "decompose_problem",
    "assess_confidence",
    "detect_bias",
    "detect_emotion",
    "analyze_reasoning",
    "list_toolsets",
    "enable_toolset",
    "disable_toolset",
];
const MAXENTIAL_TOOLS: [&str; 8] = [
    "reset",
    "search",
    "tag",
    "export",
    "visualize",
    "list_toolsets",
    "enable_toolset",
    "disable_toolset",
];

/// The members of the reference server's response.
const REFERENCE_FIELDS: [&str; 5] = [
    "thoughtNumber",
    "totalThoughts",
    "nextThoughtNeeded",
    "branches",
    "thoughtHistoryLength",
];

fn names(tools: &[rmcp::model::Tool]) -> Vec<String> {
    tools.iter().map(|t| t.name.to_string()).collect()
}

fn string_set(value: &Value) -> BTreeSet<String> {
    value
        .as_array()
        .map(|a| {
            a.iter()
                .filter_map(Value::as_str)
                .map(str::to_owned)
                .collect()
        })
        .unwrap_or_default()
}

fn numbers_of(thoughts: &Value) -> Vec<u64> {
    thoughts
        .as_array()
        .expect("thoughts array")
        .iter()
        .map(|t| t["thoughtNumber"].as_u64().expect("number"))
        .collect()
}

/// Follows a local `$ref` of a generated schema.
fn resolve<'a>(root: &'a Value, schema: &'a Value) -> &'a Value {
    match schema["$ref"].as_str() {
        Some(reference) => root
            .pointer(reference.trim_start_matches('#'))
            .expect("resolvable $ref"),
        None => schema,
    }
}

#[tokio::test]
async fn initialize_names_the_server_and_lists_every_tool_with_schemas_and_honest_annotations() {
    let dir = tempfile::tempdir().expect("tempdir");
    let server = StdioServer::start(dir.path(), &[]).await;

    let info = server.peer_info().expect("initialized");
    let implementation = info.server_info.as_ref().expect("server info");
    assert_eq!(implementation.name, "thinkledger");
    assert_eq!(implementation.version, env!("CARGO_PKG_VERSION"));
    assert!(info.capabilities.tools.is_some(), "tools capability");
    assert!(
        info.capabilities.resources.is_some(),
        "resources capability"
    );
    assert!(
        info.instructions
            .as_deref()
            .is_some_and(|i| i.contains("sessionId")),
        "instructions explain sessions"
    );

    let tools = server.list_all_tools().await.expect("tools/list");
    assert_eq!(names(&tools), ALL_TOOLS);
    for tool in &tools {
        let name = tool.name.as_ref();
        assert!(
            tool.description.as_deref().is_some_and(|d| d.len() > 20),
            "{name} is described"
        );
        assert!(tool.title.is_some(), "{name} has a title");
        assert_eq!(
            tool.input_schema["type"], "object",
            "{name} input schema root"
        );
        let output = tool
            .output_schema
            .as_ref()
            .unwrap_or_else(|| panic!("{name} has an output schema"));
        let output = Value::Object((**output).clone());
        assert_eq!(output["type"], "object", "{name} output schema root");
        let required = string_set(&output["required"]);
        assert!(
            required.contains("seq") && required.contains("eventHash"),
            "{name} output names the receipt"
        );
        assert_eq!(output["properties"]["seq"]["type"], "integer");
        assert_eq!(output["properties"]["eventHash"]["type"], "string");
        // Every call appends an event, so no tool is read-only.
        let annotations = tool
            .annotations
            .as_ref()
            .unwrap_or_else(|| panic!("{name} is annotated"));
        assert_eq!(
            annotations.read_only_hint,
            Some(false),
            "{name} readOnlyHint"
        );
        // Only a hard delete_memory removes what it names for good.
        assert_eq!(
            annotations.destructive_hint,
            Some(name == "delete_memory"),
            "{name} destructiveHint"
        );
        // Only the tools that may ask a model provider reach out.
        let asks_model = [
            "confer",
            "traced_reasoning",
            "planner",
            "biased_reasoning",
            "expand_thoughts",
            "score_thoughts",
            "verify_thoughts",
            "think",
            "think_parallel",
            "detect_bias",
            "detect_emotion",
        ];
        assert_eq!(
            annotations.open_world_hint,
            Some(asks_model.contains(&name)),
            "{name} openWorldHint"
        );
    }
    let by_name = |n: &str| tools.iter().find(|t| t.name == n).expect("listed");
    let thinking = by_name("sequentialthinking");
    assert_eq!(
        thinking
            .annotations
            .as_ref()
            .and_then(|a| a.idempotent_hint),
        Some(false),
        "a thought appends"
    );
    let input = Value::Object((*thinking.input_schema).clone());
    assert_eq!(
        string_set(&input["required"]),
        [
            "thought",
            "nextThoughtNeeded",
            "thoughtNumber",
            "totalThoughts"
        ]
        .map(String::from)
        .into()
    );
    let params: BTreeSet<String> = input["properties"]
        .as_object()
        .expect("properties")
        .keys()
        .cloned()
        .collect();
    for reference in [
        "thought",
        "nextThoughtNeeded",
        "thoughtNumber",
        "totalThoughts",
        "isRevision",
        "revisesThought",
        "branchFromThought",
        "branchId",
        "needsMoreThoughts",
    ] {
        assert!(
            params.contains(reference),
            "reference parameter {reference} is accepted: {params:?}"
        );
    }
    assert!(params.contains("sessionId") && params.contains("tags"));
    assert_eq!(input["properties"]["thoughtNumber"]["type"], "integer");
    assert_eq!(input["properties"]["nextThoughtNeeded"]["type"], "boolean");
    let output = Value::Object((**thinking.output_schema.as_ref().expect("output")).clone());
    for field in REFERENCE_FIELDS {
        assert!(
            string_set(&output["required"]).contains(field),
            "output requires {field}"
        );
    }
    let required_of = |n: &str| {
        string_set(
            by_name(n)
                .input_schema
                .get("required")
                .unwrap_or(&Value::Null),
        )
    };
    assert_eq!(required_of("reset"), ["confirm".to_owned()].into());
    assert_eq!(required_of("tag"), ["thoughtNumber".to_owned()].into());
    for optional_only in ["search", "export", "visualize"] {
        assert!(
            required_of(optional_only).is_empty(),
            "{optional_only} has no required parameter"
        );
    }
    for (tool, formats) in [
        ("export", ["markdown", "json"]),
        ("visualize", ["ascii", "mermaid"]),
    ] {
        let root = Value::Object((*by_name(tool).input_schema).clone());
        let format = resolve(&root, &root["properties"]["format"]);
        assert_eq!(
            string_set(&format["enum"]),
            formats.map(String::from).into(),
            "{tool} formats"
        );
    }

    // Listing records nothing: the first call is event 1.
    let first = think(&server, 1, 1, "listing tools records nothing", json!({})).await;
    assert_eq!(first["seq"], 1);
    server.stop().await;
    assert_intact(dir.path(), 1).await;
}

/// The reference server's response members, parsed from the text block a reference client reads.
fn reference_view(result: &rmcp::model::CallToolResult) -> Value {
    let text: Value = serde_json::from_str(text_of(result))
        .expect("the text block is JSON, as in the reference server");
    let members: BTreeSet<&str> = text
        .as_object()
        .expect("object")
        .keys()
        .map(String::as_str)
        .collect();
    let expected: BTreeSet<&str> = REFERENCE_FIELDS
        .into_iter()
        .chain(["sessionId", "seq", "eventHash"])
        .collect();
    assert_eq!(
        members, expected,
        "exactly the reference members plus sessionId and the receipt"
    );
    assert_eq!(
        Some(&text),
        result.structured_content.as_ref(),
        "structured content mirrors the text"
    );
    text
}

#[tokio::test]
async fn a_reference_sequentialthinking_client_works_unchanged() {
    let dir = tempfile::tempdir().expect("tempdir");
    let server = StdioServer::start(dir.path(), &[]).await;
    // (arguments exactly as a reference client sends them, expected reference response)
    let steps = [
        (
            json!({ "thought": "Understand the question", "nextThoughtNeeded": true, "thoughtNumber": 1, "totalThoughts": 3 }),
            json!({ "thoughtNumber": 1, "totalThoughts": 3, "nextThoughtNeeded": true, "branches": [], "thoughtHistoryLength": 1 }),
        ),
        (
            json!({ "thought": "List the constraints", "nextThoughtNeeded": true, "thoughtNumber": 2, "totalThoughts": 3, "isRevision": false, "needsMoreThoughts": false }),
            json!({ "thoughtNumber": 2, "totalThoughts": 3, "nextThoughtNeeded": true, "branches": [], "thoughtHistoryLength": 2 }),
        ),
        (
            json!({ "thought": "On reflection the question is narrower", "nextThoughtNeeded": true, "thoughtNumber": 3, "totalThoughts": 3, "isRevision": true, "revisesThought": 1 }),
            json!({ "thoughtNumber": 3, "totalThoughts": 3, "nextThoughtNeeded": true, "branches": [], "thoughtHistoryLength": 3 }),
        ),
        // All nine reference parameters at once; thoughtNumber above totalThoughts raises it.
        (
            json!({
                "thought": "Alternative: relax constraint two", "nextThoughtNeeded": true, "thoughtNumber": 4,
                "totalThoughts": 3, "isRevision": true, "revisesThought": 2, "branchFromThought": 2,
                "branchId": "relaxed", "needsMoreThoughts": true
            }),
            json!({ "thoughtNumber": 4, "totalThoughts": 4, "nextThoughtNeeded": true, "branches": ["relaxed"], "thoughtHistoryLength": 4 }),
        ),
        (
            json!({ "thought": "Another alternative: drop it", "nextThoughtNeeded": true, "thoughtNumber": 5, "totalThoughts": 6, "branchFromThought": 2, "branchId": "dropped" }),
            json!({ "thoughtNumber": 5, "totalThoughts": 6, "nextThoughtNeeded": true, "branches": ["relaxed", "dropped"], "thoughtHistoryLength": 5 }),
        ),
        (
            json!({ "thought": "Relaxing works", "nextThoughtNeeded": true, "thoughtNumber": 6, "totalThoughts": 6, "branchId": "relaxed" }),
            json!({ "thoughtNumber": 6, "totalThoughts": 6, "nextThoughtNeeded": true, "branches": ["relaxed", "dropped"], "thoughtHistoryLength": 6 }),
        ),
        (
            json!({ "thought": "Need two more steps than planned", "nextThoughtNeeded": true, "thoughtNumber": 8, "totalThoughts": 6, "needsMoreThoughts": true }),
            json!({ "thoughtNumber": 8, "totalThoughts": 8, "nextThoughtNeeded": true, "branches": ["relaxed", "dropped"], "thoughtHistoryLength": 7 }),
        ),
        // Loose clients send numbers and booleans as strings.
        (
            json!({ "thought": "Answer: relax constraint two", "nextThoughtNeeded": "false", "thoughtNumber": "9", "totalThoughts": "9", "isRevision": "false", "needsMoreThoughts": "false" }),
            json!({ "thoughtNumber": 9, "totalThoughts": 9, "nextThoughtNeeded": false, "branches": ["relaxed", "dropped"], "thoughtHistoryLength": 8 }),
        ),
    ];
    let mut session = None;
    for (i, (args, expected)) in steps.iter().enumerate() {
        let result = call(&server, "sequentialthinking", args.clone()).await;
        assert_eq!(
            result.is_error,
            Some(false),
            "step {i} succeeds: {}",
            text_of(&result)
        );
        let text = reference_view(&result);
        for field in REFERENCE_FIELDS {
            assert_eq!(text[field], expected[field], "step {i}: {field} in {text}");
        }
        assert_eq!(text["seq"], i + 1, "step {i} is event {}", i + 1);
        let id = text["sessionId"].as_str().expect("sessionId").to_owned();
        assert_eq!(
            session.get_or_insert_with(|| id.clone()),
            &id,
            "one connection, one session"
        );
    }
    let id = session.expect("session");

    // What was recorded: main thread, two branches, the revision, the raised estimates.
    let doc = read_json(&server, &format!("ledger://session/{id}")).await;
    let chain = &doc["chain"];
    assert_eq!(numbers_of(&chain["thoughts"]), [1, 2, 3, 8, 9]);
    assert_eq!(chain["branches"][0]["branchId"], "relaxed");
    assert_eq!(chain["branches"][0]["branchFromThought"], 2);
    assert_eq!(numbers_of(&chain["branches"][0]["thoughts"]), [4, 6]);
    assert_eq!(chain["branches"][1]["branchId"], "dropped");
    assert_eq!(numbers_of(&chain["branches"][1]["thoughts"]), [5]);
    let revision = &chain["thoughts"][2];
    assert_eq!(
        pick(revision, &["isRevision", "revisesThought"]),
        json!({ "isRevision": true, "revisesThought": 1 })
    );
    let all_nine = &chain["branches"][0]["thoughts"][0];
    assert_eq!(
        all_nine["totalThoughts"], 4,
        "the raised estimate is what is recorded"
    );
    assert_eq!(all_nine["needsMoreThoughts"], true);
    assert_eq!(all_nine["revisesThought"], 2);
    let last = &chain["thoughts"][4];
    assert_eq!(
        pick(last, &["thought", "nextThoughtNeeded"]),
        json!({ "thought": "Answer: relax constraint two", "nextThoughtNeeded": false })
    );
    server.stop().await;
    assert_intact(dir.path(), 8).await;
}

#[tokio::test]
async fn resources_list_sessions_and_return_one_session_with_its_chain() {
    let dir = tempfile::tempdir().expect("tempdir");
    let server = StdioServer::start(dir.path(), &[]).await;
    let s = &server;
    let resources = s.list_all_resources().await.expect("resources/list");
    assert_eq!(
        resources.iter().map(|r| r.uri.as_str()).collect::<Vec<_>>(),
        [
            "ledger://sessions",
            "reasoning://thinking-modes",
            "reasoning://config/providers",
            "reasoning://config/transports",
            "reasoning://patterns",
            "reasoning://memory/sinks",
            "reasoning://telemetry/summary",
        ]
    );
    let templates = s
        .list_all_resource_templates()
        .await
        .expect("resources/templates/list");
    assert_eq!(
        templates
            .iter()
            .map(|t| t.uri_template.as_str())
            .collect::<Vec<_>>(),
        [
            "ledger://session/{id}",
            "ledger://memories/{userId}",
            "reasoning://session/{id}/deliberation",
            "reasoning://session/{id}/assumptions",
            "reasoning://session/{id}/checkpoints",
            "reasoning://session/{id}/skeleton-phases",
            "reasoning://session/{id}/skeleton-phase/{phase_id}",
            "reasoning://schemas/{name}",
        ]
    );
    assert_eq!(
        read_json(s, "ledger://sessions").await,
        json!({ "sessions": [] })
    );

    think(
        s,
        1,
        2,
        "Read the resource",
        json!({ "tags": ["question"] }),
    )
    .await;
    let second = think(
        s,
        2,
        2,
        "Branch off",
        json!({ "branchFromThought": 1, "branchId": "side", "nextThoughtNeeded": false }),
    )
    .await;
    let id = second["sessionId"].as_str().expect("sessionId").to_owned();

    let sessions = read_json(s, "ledger://sessions").await;
    let listed = sessions["sessions"].as_array().expect("sessions");
    assert_eq!(listed.len(), 1);
    let summary = &listed[0];
    let members = [
        "sessionId",
        "status",
        "closedAt",
        "thoughts",
        "events",
        "firstSeq",
        "lastSeq",
        "branches",
    ];
    assert_eq!(
        pick(summary, &members),
        json!({
            "sessionId": id, "status": "active", "closedAt": null, "thoughts": 2, "events": 2,
            "firstSeq": 1, "lastSeq": 2, "branches": ["side"]
        })
    );

    let doc = read_json(s, &format!("ledger://session/{id}")).await;
    assert_eq!(doc["sessionId"], id.as_str());
    assert_eq!(doc["thoughts"], 2);
    let chain = &doc["chain"];
    assert_eq!(chain["sessionId"], id.as_str());
    assert_eq!(chain["thoughts"][0]["thought"], "Read the resource");
    assert_eq!(chain["thoughts"][0]["tags"], json!(["question"]));
    assert_eq!(chain["thoughts"][0]["seq"], 1);
    assert_eq!(chain["branches"][0]["branchId"], "side");
    assert_eq!(chain["branches"][0]["thoughts"][0]["thought"], "Branch off");
    assert_eq!(chain["branches"][0]["thoughts"][0]["seq"], 2);

    for uri in [
        "ledger://session/0b0e8f1c-6d0a-4f4e-9a53-3f1c2a9d7e65".to_owned(),
        "ledger://session/not-a-uuid".to_owned(),
        format!("ledger://session/{}", id.to_uppercase()),
        "ledger://nothing".to_owned(),
    ] {
        match try_read(s, &uri).await {
            Err(ServiceError::McpError(error)) => {
                assert_eq!(
                    error.code,
                    ErrorCode::RESOURCE_NOT_FOUND,
                    "{uri}: {error:?}"
                );
                assert!(
                    error.message.contains("ledger://sessions"),
                    "{uri}: the error points at the list: {}",
                    error.message
                );
            }
            other => panic!("{uri} should be a resource-not-found error, got {other:?}"),
        }
    }
    // Reads record nothing.
    let third = think(s, 3, 3, "after reading", json!({})).await;
    assert_eq!(third["seq"], 3);
    server.stop().await;
    assert_intact(dir.path(), 3).await;
}

#[tokio::test]
async fn toolsets_limit_what_is_listed_and_a_disabled_tool_is_refused_and_recorded() {
    let dir = tempfile::tempdir().expect("tempdir");
    let server = StdioServer::start(dir.path(), &["--toolsets", "maxential"]).await;
    assert_eq!(
        names(&server.list_all_tools().await.expect("tools/list")),
        MAXENTIAL_TOOLS
    );
    let refused = expect_rejected(
        &server,
        "sequentialthinking",
        json!({ "thought": "t", "thoughtNumber": 1, "totalThoughts": 1, "nextThoughtNeeded": false }),
        "tool_disabled",
    )
    .await;
    assert_eq!(refused["seq"], 1);
    assert!(
        refused["suggestion"]
            .as_str()
            .expect("suggestion")
            .contains("enable_toolset with {\"toolset\": \"thinking\"}"),
        "{refused}"
    );
    let searched = ok(&call(&server, "search", json!({})).await);
    assert_eq!(
        pick(&searched, &["seq", "searchedThoughts"]),
        json!({ "seq": 2, "searchedThoughts": 0 })
    );
    server.stop().await;
    assert_intact(dir.path(), 2).await;
    let events = stored_events(dir.path());
    assert_eq!(events[0]["call"]["tool"], "sequentialthinking");
    assert_eq!(events[0]["outcome"]["error"]["code"], "tool_disabled");
    assert_eq!(events[0]["facts"], json!([]));

    let thinking_only = StdioServer::start(dir.path(), &["--toolsets", "thinking"]).await;
    assert_eq!(
        names(&thinking_only.list_all_tools().await.expect("tools/list")),
        [
            "sequentialthinking",
            "list_toolsets",
            "enable_toolset",
            "disable_toolset"
        ]
    );
    expect_rejected(&thinking_only, "visualize", json!({}), "tool_disabled").await;
    thinking_only.stop().await;
    assert_intact(dir.path(), 3).await;

    let run = cli(dir.path(), &["serve", "--toolsets", "thinking,bogus"]).await;
    assert!(!run.status.success(), "an unknown toolset is refused");
    assert!(
        run.stderr.contains("bogus") && run.stderr.contains("maxential"),
        "{}",
        run.stderr
    );
}
