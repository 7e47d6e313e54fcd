//! Replay and diff through the real binary: a session recorded over MCP (branches, a revision,
//! tags, reads, refusals) re-executes with no divergence, through the MCP tool and through
//! `thinkledger replay --reexecute`; a log rewritten with a valid chain but a forged answer is
//! caught and the forged call named; `diff_sessions` and `thinkledger diff` align two runs.

use std::path::Path;

use serde_json::{Value, json};
use thinkledger::ledger::Store;
use thinkledger::ledger::canonical::canonical_bytes;
use thinkledger::ledger::hash::event_hash;
use thinkledger::tools::{Catalog, Toolsets};

use crate::common::*;
use crate::schemas::subset;

/// Checks what `thinkledger replay --json` printed against the tool's output schema: the same
/// document, without the receipt of a recorded call.
fn conforms_without_receipt(tool: &str, doc: &Value) {
    let mut body = doc.clone();
    body["seq"] = json!(1);
    body["eventHash"] = json!("0".repeat(64));
    conforms(tool, &body);
}

/// Checks a successful result against its tool's golden output schema.
fn conforms(tool: &str, body: &Value) {
    let catalog = Catalog::new(Toolsets::all());
    let entry = catalog.entry(tool).expect("known tool");
    let schema = Value::Object((**entry.tool.output_schema.as_ref().expect("schema")).clone());
    if let Err(e) = subset::validate(&schema, body) {
        panic!("{tool} result does not match its output schema: {e}\n{body:#}");
    }
}

/// Two runs of one task in one connection: run A, a reset, run B (one thought reworded, one
/// added, another branch, a tag moved, another conclusion). Returns their session ids.
async fn two_runs(client: &Client) -> (String, String) {
    let first = think(
        client,
        1,
        4,
        "Is the cache the bottleneck?",
        json!({"tags": ["question"]}),
    )
    .await;
    let a = first["sessionId"].as_str().expect("sessionId").to_owned();
    think(client, 2, 4, "Measure the hit ratio", json!({})).await;
    think(
        client,
        3,
        4,
        "Hit ratio is flat: not the cache",
        json!({"isRevision": true, "revisesThought": 2}),
    )
    .await;
    think(
        client,
        3,
        4,
        "Profile the serializer",
        json!({"branchFromThought": 2, "branchId": "alt"}),
    )
    .await;
    think(
        client,
        4,
        4,
        "It allocates per field",
        json!({"branchId": "alt"}),
    )
    .await;
    ok(&call(client, "tag", json!({"thoughtNumber": 1, "add": ["key"]})).await);
    ok(&call(client, "search", json!({"query": "serial"})).await);
    ok(&call(client, "export", json!({"format": "json"})).await);
    expect_rejected(
        client,
        "sequentialthinking",
        json!({"thought": "x", "thoughtNumber": 5, "totalThoughts": 5,
            "nextThoughtNeeded": true, "revisesThought": 99}),
        "unknown_thought",
    )
    .await;
    expect_rejected(client, "search", json!({"query": "("}), "invalid_query").await;
    think(
        client,
        4,
        4,
        "Pool the buffers",
        json!({"nextThoughtNeeded": false}),
    )
    .await;
    ok(&call(client, "reset", json!({"confirm": true})).await);

    let first = think(
        client,
        1,
        4,
        "Is the cache the bottleneck?",
        json!({"tags": ["question"]}),
    )
    .await;
    let b = first["sessionId"].as_str().expect("sessionId").to_owned();
    assert_ne!(a, b, "a reset starts a new session");
    think(client, 2, 4, "Measure the hit ratio and p99", json!({})).await;
    think(client, 3, 4, "Look at GC pauses too", json!({})).await;
    think(
        client,
        3,
        4,
        "Check the network",
        json!({"branchFromThought": 2, "branchId": "net"}),
    )
    .await;
    think(
        client,
        4,
        4,
        "Shrink the payloads",
        json!({"nextThoughtNeeded": false}),
    )
    .await;
    (a, b)
}

#[tokio::test]
async fn a_recorded_session_re_executes_without_divergence_over_mcp_and_the_cli() {
    let dir = tempfile::tempdir().expect("tempdir");
    let server = StdioServer::start(dir.path(), &[]).await;
    let (a, b) = two_runs(&server).await;

    let replay = ok(&call(
        &server,
        "replay_reasoning_session",
        json!({"session_id": a, "reexecute": true}),
    )
    .await);
    conforms("replay_reasoning_session", &replay);
    assert_eq!(replay["sessionId"], a.as_str());
    assert_eq!(replay["status"], "closed");
    assert_eq!(replay["calls"], 12, "{replay:#}");
    assert_eq!(replay["reexecution"]["matched"], 12, "{replay:#}");
    assert_eq!(replay["reexecution"]["diverged"], 0);
    let entries = replay["timeline"].as_array().expect("timeline");
    assert_eq!(entries[0]["changes"][0]["fact"], "SessionStarted");
    assert!(
        entries
            .iter()
            .any(|e| e["status"] == "rejected" && e["errorCode"] == "invalid_query")
    );
    assert!(entries.iter().all(|e| e["reexecution"] == "matched"));

    let diff = ok(&call(
        &server,
        "diff_sessions",
        json!({"session_a": a, "session_b": b}),
    )
    .await);
    conforms("diff_sessions", &diff);
    assert_eq!(diff["identical"], false);
    assert_eq!(diff["summary"]["branchesOnlyInA"], json!(["alt"]));
    assert_eq!(diff["summary"]["branchesOnlyInB"], json!(["net"]));
    assert_eq!(diff["conclusion"]["changed"], true);
    assert!(
        diff["text"]
            .as_str()
            .expect("text")
            .contains("@@ main line @@")
    );
    let same = ok(&call(
        &server,
        "diff_sessions",
        json!({"session_a": a, "session_b": a}),
    )
    .await);
    assert_eq!(same["identical"], true);
    expect_rejected(
        &server,
        "diff_sessions",
        json!({"session_a": a, "session_b": "nope"}),
        "unknown_session",
    )
    .await;
    server.stop().await;

    // The CLI re-executes the same session; the replay call recorded above reads the log, so it
    // is skipped (its answer depended on the log as it stood), never counted as a match.
    let run = cli(dir.path(), &["replay", &a, "--reexecute"]).await;
    assert_eq!(run.status.code(), Some(0), "{run:?}");
    assert!(
        run.stdout
            .contains("13 calls, 12 re-executed, 12 matched, 0 diverged, 1 skipped"),
        "{}",
        run.stdout
    );
    assert!(run.stdout.contains("replay_reasoning_session: reads_log"));
    let run = cli(dir.path(), &["replay", &a, "--reexecute", "--json"]).await;
    assert_eq!(run.status.code(), Some(0), "{run:?}");
    let report: Value = serde_json::from_str(&run.stdout).expect("replay --json prints JSON");
    assert_eq!(report["reexecution"]["diverged"], 0);
    assert_eq!(
        report["reexecution"]["skippedCalls"][0]["reason"],
        "reads_log"
    );
    let timeline = cli(dir.path(), &["replay", &b]).await;
    assert!(timeline.status.success(), "{timeline:?}");
    assert!(timeline.stdout.contains("on branch net from thought 2"));

    let run = cli(dir.path(), &["diff", &a, &b]).await;
    assert!(run.status.success(), "{run:?}");
    for line in [
        "-   2 | Measure the hit ratio",
        "+   2 | Measure the hit ratio and p99",
        "@@ branch alt (only in A, from thought 2 / -) @@",
        "@@ branch net (only in B, from thought - / 2) @@",
        "~ thought 1 / 1: -key",
        "-   4 | Pool the buffers",
        "+   4 | Shrink the payloads",
    ] {
        assert!(run.stdout.contains(line), "{line:?} not in\n{}", run.stdout);
    }
    let run = cli(dir.path(), &["diff", &a, &b, "--json"]).await;
    let doc: Value = serde_json::from_str(&run.stdout).expect("diff --json prints JSON");
    assert_eq!(doc["summary"]["tagChanges"], 1);
    let run = cli(dir.path(), &["diff", &a, &a]).await;
    assert!(run.stdout.contains("(no differences)"), "{}", run.stdout);
    let run = cli(dir.path(), &["diff", &a, "not-a-session"]).await;
    assert!(!run.status.success());

    // Replay and diff from the CLI record nothing.
    let events = stored_events(dir.path()).len();
    assert_intact(dir.path(), u64::try_from(events).expect("count")).await;
}

/// Rewrites the log so that event `seq` claims another answer, re-chaining every later event
/// (as a forger who controls the disk would), and drops the signed checkpoints that would
/// otherwise expose the rewrite at open.
fn forge_answer(data_dir: &Path, seq: u64) {
    std::fs::remove_file(data_dir.join("ledger").join("checkpoints.jsonl"))
        .expect("remove checkpoints");
    let mut store = super::common::open_ledger_store(data_dir);
    let last = store.last_seq().expect("last seq").expect("events");
    let mut prev: Option<String> = None;
    for s in seq..=last {
        let bytes = store.event_bytes(s).expect("read").expect("event");
        let mut event: thinkledger::events::Event =
            serde_json::from_slice(&bytes).expect("event parses");
        if s == seq {
            event.outcome.response_digest = "0".repeat(64);
        }
        if let Some(p) = prev {
            event.prev_hash = p;
        }
        event.hash = event_hash(&event).expect("hash");
        let value = serde_json::to_value(&event).expect("to value");
        store
            .tamper_event_bytes(s, &canonical_bytes(&value).expect("canonical"))
            .expect("write");
        prev = Some(event.hash);
    }
}

#[tokio::test]
async fn a_forged_answer_in_a_re_chained_log_is_caught_and_named() {
    let dir = tempfile::tempdir().expect("tempdir");
    let server = StdioServer::start(dir.path(), &[]).await;
    let first = think(&server, 1, 3, "one", json!({})).await;
    let session = first["sessionId"].as_str().expect("sessionId").to_owned();
    let second = think(&server, 2, 3, "two", json!({})).await;
    think(&server, 3, 3, "three", json!({"nextThoughtNeeded": false})).await;
    server.stop().await;
    let forged = receipt(&second);
    forge_answer(dir.path(), forged);
    // The chain still holds: only re-execution can tell.
    let (report, code) = verify_json(dir.path()).await;
    assert_eq!(report["problems"], json!([]), "{report}");
    assert_eq!(code, Some(0));

    let run = cli(dir.path(), &["replay", &session, "--reexecute"]).await;
    assert_eq!(run.status.code(), Some(2), "{run:?}");
    assert!(
        run.stdout.contains(&format!(
            "DIVERGED seq {forged} sequentialthinking (thought 2): response digest 000000000000… recorded"
        )),
        "{}",
        run.stdout
    );
    assert!(run.stdout.contains("1 diverged"), "{}", run.stdout);
    let run = cli(dir.path(), &["replay", &session, "--reexecute", "--json"]).await;
    assert_eq!(run.status.code(), Some(2));
    let report: Value = serde_json::from_str(&run.stdout).expect("JSON");
    conforms_without_receipt("replay_reasoning_session", &report);
    let divergence = &report["reexecution"]["divergences"][0];
    assert_eq!(divergence["seq"], forged);
    assert_eq!(divergence["tool"], "sequentialthinking");
    assert_eq!(divergence["thoughtNumber"], 2);
    assert_eq!(divergence["rederivedBody"]["thoughtNumber"], 2);
    // Without --reexecute nothing is compared: the timeline alone exits 0.
    let run = cli(dir.path(), &["replay", &session]).await;
    assert_eq!(run.status.code(), Some(0), "{run:?}");
}

#[tokio::test]
async fn replay_of_an_unknown_session_fails_with_a_message() {
    let dir = tempfile::tempdir().expect("tempdir");
    let server = StdioServer::start(dir.path(), &[]).await;
    think(&server, 1, 1, "only", json!({"nextThoughtNeeded": false})).await;
    expect_rejected(
        &server,
        "replay_reasoning_session",
        json!({"session_id": "0b1e7d1c-5a6f-4c2e-9d3b-8f0a1b2c3d4e"}),
        "unknown_session",
    )
    .await;
    server.stop().await;
    let run = cli(
        dir.path(),
        &["replay", "0b1e7d1c-5a6f-4c2e-9d3b-8f0a1b2c3d4e"],
    )
    .await;
    assert_eq!(run.status.code(), Some(1), "{run:?}");
    assert!(run.stderr.contains("no session"), "{}", run.stderr);
}
