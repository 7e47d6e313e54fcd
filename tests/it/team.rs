//! The team server: bearer tokens on `/mcp`, every family isolated between principals, the
//! auditor who reads everything and writes nothing, quotas. Real HTTP on 127.0.0.1, the
//! binary's own `token` command, real MCP clients.

use rmcp::model::CallToolResult;
use serde_json::{Value, json};

use crate::common::{
    HttpServer, call, cli, expect_rejected, ok, read_json, rejected, stored_events, text_of, think,
    try_read,
};

/// `thinkledger token create --json ARGS`: the token.
async fn token(dir: &std::path::Path, args: &[&str]) -> String {
    let mut all = vec!["token", "create", "--json"];
    all.extend_from_slice(args);
    let run = cli(dir, &all).await;
    assert!(run.status.success(), "token create failed: {run:?}");
    let made: Value = serde_json::from_str(&run.stdout).expect("token create --json prints JSON");
    made["token"].as_str().expect("a token").to_owned()
}

/// A ThoughtMCP-shaped answer (the memory tools), whether accepted or refused.
fn envelope(result: &CallToolResult) -> Value {
    result
        .structured_content
        .clone()
        .unwrap_or_else(|| serde_json::from_str(text_of(result)).expect("a JSON answer"))
}

#[tokio::test]
async fn principals_see_only_their_own_and_an_auditor_reads_all_and_writes_nothing() {
    let dir = tempfile::tempdir().expect("tempdir");
    let alice_token = token(dir.path(), &["--principal", "alice", "--user-id", "team-a"]).await;
    let bob_token = token(dir.path(), &["--principal", "bob"]).await;
    let auditor_token = token(dir.path(), &["--principal", "carol", "--role", "auditor"]).await;
    let server = HttpServer::start(dir.path(), &["--auth"]).await;

    // No token, or a wrong one: 401 with a challenge, and nothing recorded.
    let http = reqwest::Client::new();
    let initialize = json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
        "protocolVersion": "2025-11-25", "capabilities": {},
        "clientInfo": {"name": "curl", "version": "1"}}});
    for header in [None, Some("Bearer tlk_not-a-token")] {
        let mut request = http
            .post(&server.url)
            .header("content-type", "application/json")
            .header("accept", "application/json, text/event-stream")
            .body(initialize.to_string());
        if let Some(h) = header {
            request = request.header("authorization", h);
        }
        let response = request.send().await.expect("POST /mcp");
        assert_eq!(response.status(), 401);
        let challenge = response.headers()["www-authenticate"]
            .to_str()
            .expect("ascii")
            .to_owned();
        assert!(
            challenge.starts_with("Bearer realm=\"thinkledger\""),
            "{challenge}"
        );
        assert!(challenge.contains("resource_metadata="), "{challenge}");
        assert_eq!(
            header.is_some(),
            challenge.contains("invalid_token"),
            "{challenge}"
        );
    }
    let metadata: Value = http
        .get(
            server
                .url
                .replace("/mcp", "/.well-known/oauth-protected-resource"),
        )
        .send()
        .await
        .expect("metadata")
        .json()
        .await
        .expect("metadata JSON");
    assert_eq!(metadata["resource"], server.url.as_str());

    let alice = server.connect_with_token(&alice_token).await;
    let bob = server.connect_with_token(&bob_token).await;
    let auditor = server.connect_with_token(&auditor_token).await;

    // Alice's session, with a deliberation in another one, and a memory; Bob's session.
    let a1 = think(&alice, 1, 2, "Alice's private plan", json!({})).await;
    let alice_session = a1["sessionId"].as_str().expect("sessionId").to_owned();
    let b1 = think(&bob, 1, 1, "Bob's own thought", json!({})).await;
    let bob_session = b1["sessionId"].as_str().expect("sessionId").to_owned();
    let started = ok(&call(
        &alice,
        "start_deliberation",
        json!({"goal": "Which database should the team use?"}),
    )
    .await);
    let deliberation_session = started["session_id"]
        .as_str()
        .expect("session_id")
        .to_owned();
    let stored = envelope(
        &call(
            &alice,
            "store_memory",
            json!({"content": "The launch code word is heliotrope", "userId": "alice",
                   "sessionId": "s-1", "primarySector": "semantic"}),
        )
        .await,
    );
    assert_eq!(stored["success"], true, "{stored}");
    let memory_id = stored["data"]["memoryId"]
        .as_str()
        .expect("memoryId")
        .to_owned();
    let granted = envelope(
        &call(
            &alice,
            "store_memory",
            json!({"content": "Team A meets on Tuesdays", "userId": "team-a",
                   "sessionId": "s-1", "primarySector": "episodic"}),
        )
        .await,
    );
    assert_eq!(granted["success"], true, "a granted userId: {granted}");

    // Bob: every family answers as if Alice's things did not exist: word for word what a
    // missing id gets (but for the id itself and the receipt).
    let missing = "00000000-0000-4000-8000-000000000000";
    let answer = |result: &CallToolResult, id: &str| -> Value {
        assert_eq!(result.is_error, Some(true), "{result:?}");
        let mut body: Value = serde_json::from_str(text_of(result)).expect("JSON refusal");
        let body_map = body.as_object_mut().expect("object");
        body_map.remove("seq");
        body_map.remove("eventHash");
        serde_json::from_str(&body.to_string().replace(id, "ID")).expect("JSON")
    };
    for (tool, args) in [
        (
            "sequentialthinking",
            json!({"thought": "x", "thoughtNumber": 2, "totalThoughts": 2,
                   "nextThoughtNeeded": false, "sessionId": "ID"}),
        ),
        ("replay_reasoning_session", json!({"session_id": "ID"})),
        ("export_reasoning_audit", json!({"session_id": "ID"})),
        (
            "diff_sessions",
            json!({"session_a": "ID", "session_b": bob_session}),
        ),
        ("visualize", json!({"sessionId": "ID"})),
        ("search", json!({"query": "plan", "sessionId": "ID"})),
        (
            "tag",
            json!({"thoughtNumber": 1, "add": ["mine"], "sessionId": "ID"}),
        ),
        ("export", json!({"format": "json", "sessionId": "ID"})),
        (
            "confer",
            json!({"message": "summarise", "session_id": "ID"}),
        ),
        (
            "add_thought_node",
            json!({"session_id": "ID", "content": "sabotage"}),
        ),
    ] {
        let with = |id: &str| -> Value {
            serde_json::from_str(&args.to_string().replace("\"ID\"", &format!("\"{id}\"")))
                .expect("JSON")
        };
        let target = if tool == "add_thought_node" {
            &deliberation_session
        } else {
            &alice_session
        };
        let hidden = answer(&call(&bob, tool, with(target)).await, target);
        let absent = answer(&call(&bob, tool, with(missing)).await, missing);
        assert_eq!(
            hidden, absent,
            "{tool}: another's answer differs from a missing one's"
        );
    }
    let listed = read_json(&bob, "ledger://sessions").await;
    let ids: Vec<&str> = listed["sessions"]
        .as_array()
        .expect("sessions")
        .iter()
        .map(|s| s["sessionId"].as_str().expect("id"))
        .collect();
    assert_eq!(
        ids,
        [bob_session.as_str()],
        "Bob lists only his own: {listed}"
    );
    for (theirs, absent) in [
        (
            format!("ledger://session/{alice_session}"),
            format!("ledger://session/{missing}"),
        ),
        (
            format!("reasoning://session/{deliberation_session}/deliberation"),
            format!("reasoning://session/{missing}/deliberation"),
        ),
    ] {
        let hidden = try_read(&bob, &theirs)
            .await
            .expect_err("another's resource");
        let gone = try_read(&bob, &absent)
            .await
            .expect_err("a missing resource");
        assert_eq!(
            hidden
                .to_string()
                .replace(&alice_session, "ID")
                .replace(&deliberation_session, "ID"),
            gone.to_string().replace(missing, "ID"),
        );
    }
    let telemetry = try_read(&bob, "reasoning://telemetry/summary").await;
    assert!(
        telemetry.is_err(),
        "every principal's counts are for auditors: {telemetry:?}"
    );
    let empty = envelope(
        &call(
            &bob,
            "retrieve_memories",
            json!({"userId": "alice", "text": "launch code"}),
        )
        .await,
    );
    assert_eq!(empty["data"]["totalCount"], 0, "{empty}");
    let searched = envelope(
        &call(
            &bob,
            "search_memories",
            json!({"userId": "alice", "text": "heliotrope"}),
        )
        .await,
    );
    assert_eq!(searched["data"]["memories"], json!([]), "{searched}");
    for tool in ["update_memory", "delete_memory"] {
        let refused = envelope(
            &call(
                &bob,
                tool,
                json!({"memoryId": memory_id, "userId": "alice", "strength": 0.1}),
            )
            .await,
        );
        assert_eq!(refused["error"], "Memory not found", "{tool}: {refused}");
    }
    let foreign_store = envelope(
        &call(
            &bob,
            "store_memory",
            json!({"content": "planted", "userId": "alice", "sessionId": "s-2",
                   "primarySector": "semantic"}),
        )
        .await,
    );
    assert_eq!(foreign_store["success"], false, "{foreign_store}");
    assert!(
        foreign_store["error"]
            .as_str()
            .unwrap_or("")
            .contains("another userId"),
        "{foreign_store}"
    );

    // The auditor reads Alice's session and memories, changes nothing.
    let replayed = ok(&call(
        &auditor,
        "replay_reasoning_session",
        json!({"session_id": alice_session}),
    )
    .await);
    assert!(
        replayed.to_string().contains("sequentialthinking"),
        "{replayed}"
    );
    let counts = read_json(&auditor, "reasoning://telemetry/summary").await;
    assert!(counts["tool_calls"].as_u64().unwrap_or(0) > 10, "{counts}");
    let everyone = read_json(&auditor, "ledger://sessions").await;
    assert!(
        everyone["sessions"].as_array().expect("sessions").len() >= 3,
        "{everyone}"
    );
    let read_twice: Vec<Value> = {
        let mut out = Vec::new();
        for _ in 0..2 {
            let seen = envelope(
                &call(
                    &auditor,
                    "retrieve_memories",
                    json!({"userId": "alice", "text": "launch code"}),
                )
                .await,
            );
            assert_eq!(seen["data"]["totalCount"], 1, "{seen}");
            out.push(seen["data"]["memories"][0].clone());
        }
        out
    };
    // Strength only decays between the two reads (reinforcement would raise it), and the
    // memory's last access stays Alice's.
    let strength = |m: &Value| m["strength"].as_f64().expect("strength");
    assert!(
        strength(&read_twice[1]) <= strength(&read_twice[0]),
        "{read_twice:?}"
    );
    assert_eq!(read_twice[0]["lastAccessed"], read_twice[1]["lastAccessed"]);
    let write = expect_rejected(
        &auditor,
        "sequentialthinking",
        json!({"thought": "an auditor's note", "thoughtNumber": 1, "totalThoughts": 1,
               "nextThoughtNeeded": false}),
        "read_only_role",
    )
    .await;
    assert!(
        write["suggestion"]
            .as_str()
            .expect("suggestion")
            .contains("replay_reasoning_session")
    );

    // A revoked token stops working at the next request.
    let listed = cli(dir.path(), &["token", "list", "--json"]).await;
    let tokens: Value = serde_json::from_str(&listed.stdout).expect("token list --json");
    assert!(
        !listed.stdout.contains(&bob_token),
        "the list never shows a token"
    );
    let bob_id = tokens
        .as_array()
        .expect("tokens")
        .iter()
        .find(|t| t["principal"] == "bob")
        .and_then(|t| t["id"].as_str())
        .expect("bob's token id")
        .to_owned();
    let revoked = cli(dir.path(), &["token", "revoke", &bob_id]).await;
    assert!(revoked.status.success(), "{revoked:?}");
    let after = bob
        .call_tool(
            rmcp::model::CallToolRequestParams::new("sequentialthinking").with_arguments(
                json!({"thought": "still here?", "thoughtNumber": 2, "totalThoughts": 2,
                   "nextThoughtNeeded": false})
                .as_object()
                .cloned()
                .expect("object"),
            ),
        )
        .await;
    assert!(after.is_err(), "a revoked token is refused: {after:?}");
    drop((alice, bob, auditor));
    server.kill().await;

    // Every refused attempt is in the ledger, under the principal that made it.
    let events = stored_events(dir.path());
    let principal_of = |code: &str| -> Vec<String> {
        events
            .iter()
            .filter(|e| e["outcome"]["error"]["code"] == code)
            .map(|e| e["actor"]["principal"].as_str().unwrap_or("").to_owned())
            .collect()
    };
    assert!(principal_of("unknown_session").iter().all(|p| p == "bob"));
    assert!(principal_of("unknown_session").len() >= 8);
    assert_eq!(principal_of("read_only_role"), ["carol"]);
    let roles: Vec<&Value> = events
        .iter()
        .filter(|e| e["actor"]["principal"] == "carol")
        .map(|e| &e["actor"]["role"])
        .collect();
    assert!(roles.iter().all(|r| *r == "auditor"), "{roles:?}");
    let alice_grants = events
        .iter()
        .find(|e| e["actor"]["principal"] == "alice")
        .map(|e| e["actor"]["userIds"].clone());
    assert_eq!(alice_grants, Some(json!(["team-a"])));
    assert!(
        events.iter().all(|e| e["actor"]["principal"] != "local"),
        "every call of an authenticated server has its principal"
    );
}

#[tokio::test]
async fn quotas_refuse_per_principal_and_the_refusals_replay() {
    let dir = tempfile::tempdir().expect("tempdir");
    let alice_token = token(dir.path(), &["--principal", "alice"]).await;
    let bob_token = token(dir.path(), &["--principal", "bob"]).await;
    let server = HttpServer::start(
        dir.path(),
        &[
            "--auth",
            "--quota-calls-per-minute",
            "3",
            "--quota-text-bytes-per-day",
            "400",
        ],
    )
    .await;
    let alice = server.connect_with_token(&alice_token).await;
    let bob = server.connect_with_token(&bob_token).await;
    let first = think(&alice, 1, 5, "one", json!({})).await;
    let session = first["sessionId"].as_str().expect("sessionId").to_owned();
    think(&alice, 2, 5, "two", json!({})).await;
    think(&alice, 3, 5, "three", json!({})).await;
    let over = expect_rejected(
        &alice,
        "sequentialthinking",
        json!({"thought": "four", "thoughtNumber": 4, "totalThoughts": 5,
               "nextThoughtNeeded": true}),
        "quota_exceeded",
    )
    .await;
    assert!(
        over["error"]
            .as_str()
            .expect("error")
            .contains("3 calls in the last minute"),
        "{over}"
    );
    assert!(
        over["suggestion"]
            .as_str()
            .expect("suggestion")
            .contains("retry in"),
        "{over}"
    );
    // Bob has his own quota; a thought too long for his day's text is refused, a short one is not.
    let long = "x".repeat(500);
    let refused = expect_rejected(
        &bob,
        "sequentialthinking",
        json!({"thought": long, "thoughtNumber": 1, "totalThoughts": 1, "nextThoughtNeeded": false}),
        "quota_exceeded",
    )
    .await;
    assert!(
        refused["error"]
            .as_str()
            .expect("error")
            .contains("400 bytes a day"),
        "{refused}"
    );
    think(&bob, 1, 1, "short", json!({})).await;
    drop((alice, bob));
    server.kill().await;

    let events = stored_events(dir.path());
    let refusals: Vec<&str> = events
        .iter()
        .filter(|e| e["outcome"]["error"]["code"] == "quota_exceeded")
        .map(|e| e["actor"]["principal"].as_str().unwrap_or(""))
        .collect();
    assert_eq!(refusals, ["alice", "bob"]);
    // Alice's refused fourth call is in her session's timeline and re-executes identically.
    let run = cli(dir.path(), &["replay", &session, "--reexecute", "--json"]).await;
    assert!(run.status.success(), "{run:?}");
    let report: Value = serde_json::from_str(&run.stdout).expect("replay --json");
    assert_eq!(report["reexecution"]["diverged"], 0, "{report}");
    assert_eq!(report["reexecution"]["matched"], 4, "{report}");
}

#[tokio::test]
async fn a_refused_probe_is_kept_in_the_probers_own_session_not_in_the_probed_one() {
    let dir = tempfile::tempdir().expect("tempdir");
    let alice_token = token(dir.path(), &["--principal", "alice"]).await;
    let bob_token = token(dir.path(), &["--principal", "bob"]).await;
    let server = HttpServer::start(dir.path(), &["--auth"]).await;
    let alice = server.connect_with_token(&alice_token).await;
    let bob = server.connect_with_token(&bob_token).await;
    let secret = think(&alice, 1, 2, "alice's plan", json!({})).await["sessionId"]
        .as_str()
        .expect("sessionId")
        .to_owned();
    let own = think(&bob, 1, 3, "bob's own work", json!({})).await["sessionId"]
        .as_str()
        .expect("sessionId")
        .to_owned();
    // Bob probes Alice's session: refused as unknown, and kept in Bob's own session.
    let probe = rejected(
        &call(
            &bob,
            "sequentialthinking",
            json!({"thought": "peek", "thoughtNumber": 2, "totalThoughts": 2,
                   "nextThoughtNeeded": true, "sessionId": secret}),
        )
        .await,
    );
    let probe_seq = probe["seq"].as_u64().expect("seq");
    // A call refused for its arguments also lands in its caller's session.
    let bad = rejected(&call(&bob, "sequentialthinking", json!({"thoughtNumber": 0})).await);
    let bad_seq = bad["seq"].as_u64().expect("seq");
    let _ = alice.cancel().await;
    let _ = bob.cancel().await;
    server.kill().await;
    let events = stored_events(dir.path());
    let session_of = |seq: u64| {
        events
            .iter()
            .find(|e| e["seq"] == seq)
            .map(|e| e["sessionId"].clone())
            .expect("the event")
    };
    assert_eq!(
        session_of(probe_seq),
        json!(own),
        "the probe is Bob's to answer for"
    );
    assert_eq!(session_of(bad_seq), json!(own));
    let replayed = cli(dir.path(), &["replay", &own, "--json"]).await;
    assert!(replayed.status.success(), "{replayed:?}");
    assert!(
        replayed.stdout.contains("unknown_session"),
        "{}",
        replayed.stdout
    );
    let theirs = cli(dir.path(), &["replay", &secret, "--json"]).await;
    assert!(
        !theirs.stdout.contains("peek"),
        "nothing of Bob's in Alice's session"
    );
    assert!(!theirs.stdout.contains("unknown_session"));
}

#[tokio::test]
async fn an_auditors_reads_are_kept_in_its_own_session_and_it_may_call_every_reading_tool() {
    let dir = tempfile::tempdir().expect("tempdir");
    let alice_token = token(dir.path(), &["--principal", "alice"]).await;
    let auditor_token = token(dir.path(), &["--principal", "carol", "--role", "auditor"]).await;
    let server = HttpServer::start(dir.path(), &["--auth", "--toolsets", "all"]).await;
    let alice = server.connect_with_token(&alice_token).await;
    let carol = server.connect_with_token(&auditor_token).await;
    let reviewed = think(&alice, 1, 1, "a reviewed thought", json!({})).await["sessionId"]
        .as_str()
        .expect("sessionId")
        .to_owned();
    let mut seqs = Vec::new();
    for (tool, arguments) in [
        ("replay_reasoning_session", json!({"session_id": reviewed})),
        ("export_reasoning_audit", json!({"session_id": reviewed})),
        (
            "search",
            json!({"query": "reviewed", "sessionId": reviewed}),
        ),
        ("export", json!({"format": "json", "sessionId": reviewed})),
        ("visualize", json!({"sessionId": reviewed})),
    ] {
        let body = ok(&call(&carol, tool, arguments).await);
        seqs.push((tool, body["seq"].as_u64().expect("seq")));
    }
    let _ = alice.cancel().await;
    let _ = carol.cancel().await;
    server.kill().await;
    let events = stored_events(dir.path());
    for (tool, seq) in seqs {
        let event = events.iter().find(|e| e["seq"] == seq).expect("the event");
        assert_ne!(
            event["sessionId"],
            json!(reviewed),
            "{tool}: the auditor's read is not filed among Alice's calls: {event}"
        );
        assert_eq!(event["actor"]["principal"], "carol");
    }
    let alices: Vec<&Value> = events
        .iter()
        .filter(|e| e["sessionId"] == json!(reviewed))
        .collect();
    assert_eq!(alices.len(), 1, "Alice's session holds her own call only");
}
