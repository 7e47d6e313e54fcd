//! Streamable HTTP: several clients sharing one server and ledger, stateless mode, and the
//! DNS-rebinding guard on the Host header.

use std::collections::BTreeSet;

use serde_json::{Value, json};
use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader};

use super::{ALL_TOOLS, names, numbers_of};
use crate::common::*;

async fn five_thoughts(client: &Client, who: &str) -> Vec<Value> {
    let mut answers = Vec::new();
    for n in 1..=5u32 {
        answers.push(think(client, n, 5, &format!("{who} thinks {n}"), json!({})).await);
    }
    answers
}

#[tokio::test]
async fn http_clients_share_one_ledger_each_in_its_own_session() {
    let dir = tempfile::tempdir().expect("tempdir");
    let server = HttpServer::start(dir.path(), &[]).await;
    let alice = server.connect().await;
    let bob = server.connect().await;
    let info = alice.peer_info().expect("initialized");
    assert_eq!(
        info.server_info.as_ref().map(|i| i.name.as_str()),
        Some("thinkledger")
    );
    assert_eq!(
        names(&alice.list_all_tools().await.expect("tools/list")),
        ALL_TOOLS
    );

    // Both think concurrently; each MCP session gets its own thinking session.
    let (a, b) = tokio::join!(five_thoughts(&alice, "alice"), five_thoughts(&bob, "bob"));
    let session_of = |answers: &[Value]| {
        answers[0]["sessionId"]
            .as_str()
            .expect("sessionId")
            .to_owned()
    };
    let (sa, sb) = (session_of(&a), session_of(&b));
    assert_ne!(sa, sb, "two HTTP clients, two sessions");
    let mut seqs = BTreeSet::new();
    for (answers, session) in [(&a, &sa), (&b, &sb)] {
        for (i, answer) in answers.iter().enumerate() {
            assert_eq!(answer["sessionId"], session.as_str());
            assert_eq!(answer["thoughtHistoryLength"], i + 1);
            assert!(
                seqs.insert(answer["seq"].as_u64().expect("seq")),
                "seqs are unique"
            );
        }
    }
    assert_eq!(
        seqs,
        (1..=10).collect(),
        "one gap-free log for both clients"
    );

    // One ledger: bob can read and continue alice's session by its id.
    let sessions = read_json(&bob, "ledger://sessions").await;
    assert_eq!(sessions["sessions"].as_array().map(Vec::len), Some(2));
    let joined = think(
        &bob,
        6,
        6,
        "bob helps alice",
        json!({ "sessionId": sa, "nextThoughtNeeded": false }),
    )
    .await;
    assert_eq!(
        pick(&joined, &["sessionId", "thoughtHistoryLength"]),
        json!({ "sessionId": sa, "thoughtHistoryLength": 6 })
    );
    let export = ok(&call(&alice, "export", json!({ "format": "json" })).await);
    let doc = &export["content"];
    assert_eq!(doc["thoughts"][5]["thought"], "bob helps alice");
    let last = export["seq"].as_u64().expect("seq");
    assert_eq!(last, 12);
    drop((alice, bob));
    server.kill().await;

    assert_intact(dir.path(), last).await;
    let events = stored_events(dir.path());
    assert!(
        events.iter().all(|e| e["actor"]["transport"] == "http"),
        "every call is recorded as http"
    );
}

#[tokio::test]
async fn stateless_http_continues_the_named_session_or_the_callers_current_one() {
    let dir = tempfile::tempdir().expect("tempdir");
    let server = HttpServer::start(dir.path(), &["--stateless"]).await;
    let client = server.connect().await;
    assert_eq!(
        names(&client.list_all_tools().await.expect("tools/list")),
        ALL_TOOLS
    );
    let first = think(&client, 1, 3, "stateless one", json!({})).await;
    let session = first["sessionId"].as_str().expect("sessionId").to_owned();
    for n in 2..=3u32 {
        let next = think(
            &client,
            n,
            3,
            &format!("stateless {n}"),
            json!({ "sessionId": session }),
        )
        .await;
        assert_eq!(next["sessionId"], session.as_str());
        assert_eq!(next["thoughtHistoryLength"], n);
    }
    let tagged = ok(&call(
        &client,
        "tag",
        json!({ "thoughtNumber": 2, "add": ["key"], "sessionId": session }),
    )
    .await);
    assert_eq!(tagged["tags"], json!(["key"]));
    let found = ok(&call(
        &client,
        "search",
        json!({ "tags": ["key"], "sessionId": session }),
    )
    .await);
    assert_eq!(numbers_of(&found["matches"]), [2]);
    let doc = read_json(&client, &format!("ledger://session/{session}")).await;
    assert_eq!(numbers_of(&doc["chain"]["thoughts"]), [1, 2, 3]);
    // Without MCP sessions every request stands alone, yet a call without sessionId continues
    // its principal's current session (the one its first call started), as the reference
    // server's one history per process does.
    let alone = think(&client, 4, 4, "stateless without an id", json!({})).await;
    assert_eq!(alone["sessionId"], session.as_str());
    assert_eq!(alone["thoughtHistoryLength"], 4);
    drop(client);
    server.kill().await;
    assert_intact(dir.path(), 6).await;
}

/// Two principals behind an authenticating proxy: each continues its own current session, and
/// the other's session does not exist for it in any family (thinking, maxential, deliberation,
/// replay, diff, audit export).
#[tokio::test]
async fn two_principals_never_meet_in_one_session() {
    let dir = tempfile::tempdir().expect("tempdir");
    for flags in [
        &["--principal-header", "X-Forwarded-User"][..],
        &["--principal-header", "X-Forwarded-User", "--stateless"][..],
    ] {
        let server = HttpServer::start(dir.path(), flags).await;
        let alice = server.connect_as("alice").await;
        let bob = server.connect_as("bob").await;
        let a1 = think(&alice, 1, 2, "alice thinks", json!({})).await;
        let b1 = think(&bob, 1, 2, "bob thinks", json!({})).await;
        let sa = a1["sessionId"].as_str().expect("sessionId").to_owned();
        let sb = b1["sessionId"].as_str().expect("sessionId").to_owned();
        assert_ne!(sa, sb);
        let a2 = think(&alice, 2, 2, "alice goes on", json!({})).await;
        assert_eq!(
            pick(&a2, &["sessionId", "thoughtHistoryLength"]),
            json!({"sessionId": sa, "thoughtHistoryLength": 2})
        );
        let stolen = [
            (
                "sequentialthinking",
                json!({"thought": "x", "thoughtNumber": 3, "totalThoughts": 3, "nextThoughtNeeded": false, "sessionId": sa}),
            ),
            ("search", json!({"query": "alice", "sessionId": sa})),
            ("export", json!({"sessionId": sa})),
            ("replay_reasoning_session", json!({"session_id": sa})),
            ("diff_sessions", json!({"session_a": sb, "session_b": sa})),
            ("export_reasoning_audit", json!({"session_id": sa})),
            (
                "start_deliberation",
                json!({"goal": "take over", "session_id": sa}),
            ),
        ];
        for (tool, args) in stolen {
            let answer = call(&bob, tool, args).await;
            assert_eq!(answer.is_error, Some(true), "{tool}: {answer:?}");
            // What a missing id gets: an export of a session without events is empty.
            let code = if tool == "export_reasoning_audit" {
                "empty_session"
            } else {
                "unknown_session"
            };
            assert!(text_of(&answer).contains(code), "{tool}: {answer:?}");
        }
        // Alice's session is untouched: still two thoughts, and hers alone.
        let a3 = think(
            &alice,
            3,
            3,
            "alice ends",
            json!({"sessionId": sa, "nextThoughtNeeded": false}),
        )
        .await;
        assert_eq!(a3["thoughtHistoryLength"], 3);
        drop((alice, bob));
        server.kill().await;
    }
}

/// Sends a raw `initialize` POST with the given Host header; returns the response status line.
async fn post_initialize_with_host(authority: &str, host: &str) -> String {
    let body = r#"{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"raw","version":"0"}}}"#;
    let request = format!(
        "POST /mcp HTTP/1.1\r\nHost: {host}\r\nContent-Type: application/json\r\nAccept: application/json, text/event-stream\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
        body.len()
    );
    let mut stream = within("connect", tokio::net::TcpStream::connect(authority))
        .await
        .expect("connect");
    stream
        .write_all(request.as_bytes())
        .await
        .expect("send request");
    let mut status = String::new();
    within(
        "response status",
        BufReader::new(stream).read_line(&mut status),
    )
    .await
    .expect("read status");
    status.trim_end().to_owned()
}

#[tokio::test]
async fn http_refuses_a_request_whose_host_is_not_loopback() {
    let dir = tempfile::tempdir().expect("tempdir");
    let server = HttpServer::start(dir.path(), &[]).await;
    let authority = server.authority().to_owned();
    for host in ["evil.example", "evil.example:80", "127.0.0.1.evil.example"] {
        let status = post_initialize_with_host(&authority, host).await;
        assert!(
            status.starts_with("HTTP/1.1 403"),
            "Host: {host} must be refused, got {status:?}"
        );
    }
    let status = post_initialize_with_host(&authority, &authority).await;
    assert!(
        status.starts_with("HTTP/1.1 200"),
        "the same request with a loopback Host is served: {status:?}"
    );
    server.kill().await;
    assert_intact(dir.path(), 0).await;
}
