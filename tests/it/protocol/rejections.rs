//! Bad input of every kind over stdio: each call is refused with a code and a suggestion,
//! recorded as exactly one `rejected` event with no facts, and leaves the session as it was.

use serde_json::{Value, json};

use super::numbers_of;
use crate::common::*;

/// A valid third thought, with `changes` merged in.
fn third_thought(changes: Value) -> Value {
    let mut args = json!({ "thought": "third", "thoughtNumber": 3, "totalThoughts": 3, "nextThoughtNeeded": true });
    let changes = changes.as_object().expect("changes are an object").clone();
    args.as_object_mut().expect("object").extend(changes);
    args
}

#[tokio::test]
async fn bad_input_is_refused_with_a_suggestion_recorded_once_and_changes_nothing() {
    let dir = tempfile::tempdir().expect("tempdir");
    let server = StdioServer::start(dir.path(), &["--max-text-bytes", "1024"]).await;
    let s = &server;
    think(s, 1, 3, "first", json!({})).await;
    let branch = json!({ "branchFromThought": 1, "branchId": "b" });
    let second = think(s, 2, 3, "second", branch).await;
    let session = second["sessionId"].as_str().expect("sessionId").to_owned();

    // (tool, arguments, expected code, something the error message must name)
    #[rustfmt::skip]
    let bad_calls: Vec<(&str, Value, &str, &str)> = vec![
        ("sequentialthinking", json!({ "nextThoughtNeeded": true, "thoughtNumber": 3, "totalThoughts": 3 }), "invalid_arguments", "thought"),
        ("sequentialthinking", third_thought(json!({ "thoughtNumber": "three" })), "invalid_arguments", "three"),
        ("sequentialthinking", third_thought(json!({ "thought": 42 })), "invalid_arguments", "string"),
        ("sequentialthinking", third_thought(json!({ "nextThoughtNeeded": "maybe" })), "invalid_arguments", "maybe"),
        ("sequentialthinking", third_thought(json!({ "thoughtNumber": 0 })), "invalid_arguments", "start at 1"),
        ("sequentialthinking", third_thought(json!({ "thought": "x".repeat(2000) })), "text_too_large", "2000"),
        ("sequentialthinking", third_thought(json!({ "sessionId": "0b0e8f1c-6d0a-4f4e-9a53-3f1c2a9d7e65" })), "unknown_session", "0b0e8f1c"),
        ("sequentialthinking", third_thought(json!({ "sessionId": "session-1" })), "unknown_session", "session-1"),
        ("sequentialthinking", third_thought(json!({ "isRevision": true, "revisesThought": 99 })), "unknown_thought", "99"),
        ("sequentialthinking", third_thought(json!({ "branchFromThought": 42, "branchId": "c" })), "unknown_thought", "42"),
        ("search", json!({ "query": "(unclosed" }), "invalid_query", "regular expression"),
        ("tag", json!({ "thoughtNumber": 99, "add": ["key"] }), "unknown_thought", "99"),
        ("tag", json!({ "add": ["key"] }), "invalid_arguments", "thoughtNumber"),
        ("reset", json!({}), "invalid_arguments", "confirm"),
        ("export", json!({ "format": "pdf" }), "invalid_arguments", "pdf"),
        ("sequential_thinking", third_thought(json!({})), "unknown_tool", "sequential_thinking"),
    ];
    let mut seq = second["seq"].as_u64().expect("seq");
    let mut refused = Vec::new();
    for (tool, args, code, named) in &bad_calls {
        let body = expect_rejected(s, tool, args.clone(), code).await;
        seq += 1;
        assert_eq!(
            body["seq"], seq,
            "{tool} {code}: every call appends exactly one event"
        );
        let error = body["error"].as_str().expect("error");
        assert!(
            error.contains(named),
            "{code}: the error names {named:?}: {error}"
        );
        refused.push((seq, *tool, *code));
    }
    let unknown_tool = json!({ "thought": "t" });
    let unknown = expect_rejected(s, "no_such_tool", unknown_tool, "unknown_tool").await;
    let suggestion = unknown["suggestion"].as_str().expect("suggestion");
    assert!(
        suggestion.contains("sequentialthinking") && suggestion.contains("visualize"),
        "{suggestion}"
    );
    seq += 1;

    // The session goes on as if the bad calls never happened.
    let third = think(s, 3, 3, "third", json!({ "nextThoughtNeeded": false })).await;
    assert_eq!(
        pick(
            &third,
            &["seq", "sessionId", "thoughtHistoryLength", "branches"]
        ),
        json!({ "seq": seq + 1, "sessionId": session, "thoughtHistoryLength": 3, "branches": ["b"] })
    );
    let doc = read_json(s, &format!("ledger://session/{session}")).await;
    assert_eq!(numbers_of(&doc["chain"]["thoughts"]), [1, 3]);
    assert_eq!(numbers_of(&doc["chain"]["branches"][0]["thoughts"]), [2]);
    assert_eq!(
        doc["chain"]["thoughts"][0]["tags"],
        json!([]),
        "the refused tag left no tag"
    );
    server.stop().await;

    // Each refusal is its own event: rejected, with its code, changing nothing.
    assert_intact(dir.path(), seq + 1).await;
    let events = stored_events(dir.path());
    for (seq, tool, code) in &refused {
        let event = &events[usize::try_from(*seq).expect("small") - 1];
        assert_eq!(event["call"]["tool"], *tool, "event {seq}");
        assert_eq!(event["outcome"]["status"], "rejected", "event {seq}");
        assert_eq!(event["outcome"]["error"]["code"], *code, "event {seq}");
        assert_eq!(
            event["facts"],
            json!([]),
            "a rejected call changes nothing (event {seq})"
        );
    }
    let too_large = events
        .iter()
        .find(|e| e["outcome"]["error"]["code"] == "text_too_large");
    let too_large = too_large.expect("recorded");
    assert_eq!(
        too_large["call"]["arguments"]["thought"],
        json!({ "omitted": { "reason": "too_large", "bytes": 2000 } }),
        "oversized text is recorded by size only"
    );
    let misnamed = events
        .iter()
        .find(|e| e["call"]["tool"] == "sequential_thinking");
    let misnamed = misnamed.expect("recorded");
    assert!(
        misnamed["call"]["arguments"]["raw"]["textCommitment"].is_string(),
        "arguments of an unknown tool are committed, not stored in clear: {misnamed}"
    );
    let everything = serde_json::to_string(&events).expect("serialize");
    assert!(
        !everything.contains("xxxxxxxxxx"),
        "oversized text is not stored in any event"
    );
    assert!(
        !everything.contains("\"third\""),
        "no thought text lands in an event in clear"
    );
}
