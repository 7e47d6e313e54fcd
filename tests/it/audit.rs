//! Audit exports through the real binary: a session recorded over MCP is exported with
//! `thinkledger audit` and passes `thinkledger verify-export` under the key `thinkledger key`
//! prints; one changed character fails, naming the member and seq; a seq range and an earlier
//! checkpoint are proven; the `export_reasoning_audit` tool answers with a file that verifies
//! the same way; every export conforms to `schemas/audit-export.v1.json`.

use std::path::{Path, PathBuf};

use serde_json::{Value, json};
use thinkledger::tools::{Catalog, Toolsets};

use crate::common::*;
use crate::schemas::subset;

/// `schemas/audit-export.v1.json`.
fn export_schema() -> Value {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("schemas/audit-export.v1.json");
    let text = std::fs::read_to_string(&path).expect("read schemas/audit-export.v1.json");
    serde_json::from_str(&text).expect("the schema is JSON")
}

fn conforms(export: &[u8]) {
    let value: Value = serde_json::from_slice(export).expect("the export is JSON");
    if let Err(e) = subset::validate(&export_schema(), &value) {
        panic!("export does not match schemas/audit-export.v1.json: {e}\n{value:#}");
    }
}

/// `thinkledger key`.
async fn ledger_key(dir: &Path) -> String {
    let run = cli(dir, &["key"]).await;
    assert!(run.status.success(), "key failed: {run:?}");
    run.stdout.trim().to_owned()
}

/// `thinkledger verify-export FILE --pubkey KEY [EXTRA...]`.
async fn verify_export(dir: &Path, file: &Path, key: &str, extra: &[&str]) -> CliRun {
    let file = file.to_str().expect("UTF-8 path");
    let mut args = vec!["verify-export", file, "--pubkey", key];
    args.extend_from_slice(extra);
    cli(dir, &args).await
}

/// Records a closed session of three thoughts; returns its id.
async fn record_session(dir: &Path) -> String {
    let server = StdioServer::start(dir, &[]).await;
    let first = think(&server, 1, 3, "Is the cache the bottleneck?", json!({})).await;
    let session = first["sessionId"].as_str().expect("sessionId").to_owned();
    think(
        &server,
        2,
        3,
        "Hit rate is 97%, so probably not.",
        json!({}),
    )
    .await;
    think(
        &server,
        3,
        3,
        "Profile the database instead.",
        json!({"nextThoughtNeeded": false}),
    )
    .await;
    server.stop().await;
    session
}

#[tokio::test]
async fn a_recorded_session_exports_and_verifies_offline_and_one_changed_character_is_named() {
    let dir = tempfile::tempdir().expect("tempdir");
    let session = record_session(dir.path()).await;
    let key = ledger_key(dir.path()).await;
    let file = dir.path().join("session.audit.json");

    let run = cli(
        dir.path(),
        &["audit", &session, "-o", file.to_str().expect("path")],
    )
    .await;
    assert!(run.status.success(), "audit failed: {run:?}");
    assert!(run.stderr.contains("verify-export"), "{}", run.stderr);
    let bytes = std::fs::read(&file).expect("export written");
    conforms(&bytes);

    let run = verify_export(dir.path(), &file, &key, &[]).await;
    assert_eq!(run.status.code(), Some(0), "verify-export failed: {run:?}");
    assert!(run.stdout.starts_with("PASSED"), "{}", run.stdout);
    assert!(
        run.stdout.contains("pinned with --pubkey"),
        "{}",
        run.stdout
    );
    let run = verify_export(dir.path(), &file, &key, &["--json"]).await;
    let report: Value = serde_json::from_str(&run.stdout).expect("--json prints JSON");
    assert_eq!(report["passed"], true, "{report:#}");
    assert_eq!(report["summary"]["selectedEvents"], 3, "{report:#}");
    assert_eq!(report["summary"]["textsVerified"], 3, "{report:#}");

    // One character of one thought changed: the text no longer matches its commitment, and the
    // export signature no longer matches the document.
    let text = String::from_utf8(bytes.clone()).expect("UTF-8");
    let edited = text.replacen("Hit rate is 97%", "Hit rate is 98%", 1);
    assert_ne!(edited, text, "the thought is in the export");
    let tampered = dir.path().join("tampered.json");
    std::fs::write(&tampered, edited).expect("write");
    let run = verify_export(dir.path(), &tampered, &key, &[]).await;
    assert_eq!(
        run.status.code(),
        Some(2),
        "a changed text must fail: {run:?}"
    );
    assert!(run.stdout.starts_with("FAILED"), "{}", run.stdout);
    assert!(
        run.stdout.contains("seq 2 text_mismatch at $.texts."),
        "the failure names the text and its seq: {}",
        run.stdout
    );
    assert!(
        run.stdout.contains("export_digest_mismatch"),
        "{}",
        run.stdout
    );

    // Another ledger's key is not this export's key.
    let other = tempfile::tempdir().expect("tempdir");
    let other_key = ledger_key(other.path()).await;
    let run = verify_export(dir.path(), &file, &other_key, &["--json"]).await;
    assert_eq!(run.status.code(), Some(2));
    let report: Value = serde_json::from_str(&run.stdout).expect("--json prints JSON");
    let codes: Vec<&str> = report["problems"]
        .as_array()
        .expect("problems")
        .iter()
        .filter_map(|p| p["code"].as_str())
        .collect();
    assert_eq!(
        codes,
        ["key_mismatch", "checkpoint_signature", "export_signature"],
        "{report:#}"
    );

    // Unpinned, it passes but says so.
    let run = cli(dir.path(), &["verify-export", file.to_str().expect("path")]).await;
    assert_eq!(run.status.code(), Some(0), "{run:?}");
    assert!(run.stdout.contains("NOT pinned"), "{}", run.stdout);
}

#[tokio::test]
async fn a_seq_range_since_a_kept_checkpoint_is_proven_complete_and_extended() {
    let dir = tempfile::tempdir().expect("tempdir");
    record_session(dir.path()).await;
    let kept = cli(dir.path(), &["checkpoint"]).await;
    assert!(kept.status.success(), "checkpoint failed: {kept:?}");
    let kept_file = dir.path().join("kept.checkpoint");
    std::fs::write(&kept_file, &kept.stdout).expect("write");
    let session = record_session(dir.path()).await;
    let key = ledger_key(dir.path()).await;
    let events = stored_events(dir.path()).len();
    assert_eq!(events, 6);

    let file = dir.path().join("range.json");
    let file_arg = file.to_str().expect("path");
    let kept_arg = kept_file.to_str().expect("path");
    let run = cli(
        dir.path(),
        &[
            "audit",
            "--from-seq",
            "2",
            "--to-seq",
            "6",
            "--since-checkpoint",
            kept_arg,
            "-o",
            file_arg,
        ],
    )
    .await;
    assert!(run.status.success(), "audit of a range failed: {run:?}");
    conforms(&std::fs::read(&file).expect("export"));
    let run = verify_export(dir.path(), &file, &key, &["--since-checkpoint", kept_arg]).await;
    assert_eq!(run.status.code(), Some(0), "{run:?}");
    assert!(
        run.stdout
            .contains("the log extends the given checkpoint of 3 events"),
        "{}",
        run.stdout
    );

    // Dropping an event from the range is caught as a gap at its seq.
    let mut export: Value =
        serde_json::from_slice(&std::fs::read(&file).expect("export")).expect("JSON");
    export["events"].as_array_mut().expect("events").remove(2);
    let dropped = dir.path().join("dropped.json");
    std::fs::write(&dropped, canonical(&export)).expect("write");
    let run = verify_export(dir.path(), &dropped, &key, &[]).await;
    assert_eq!(run.status.code(), Some(2), "{run:?}");
    assert!(
        run.stdout.contains("seq 4 gap at $.events"),
        "{}",
        run.stdout
    );

    // What cannot be proven is refused with a way out.
    let run = cli(dir.path(), &["audit", "--from-seq", "5", "--to-seq", "9"]).await;
    assert!(!run.status.success());
    assert!(
        run.stderr.contains("1 ≤ fromSeq ≤ toSeq ≤ 6"),
        "{}",
        run.stderr
    );
    let unknown = uuid::Uuid::new_v4().to_string();
    let run = cli(dir.path(), &["audit", &unknown]).await;
    assert!(!run.status.success());
    assert!(run.stderr.contains("has no events"), "{}", run.stderr);
    let _ = session;
}

/// RFC 8785 bytes of a value, through the library the verifier itself uses.
fn canonical(value: &Value) -> Vec<u8> {
    thinkledger::ledger::canonical::canonical_bytes(value).expect("canonical")
}

/// Writes the text block of an `export_reasoning_audit` result to a file in `dir`.
fn save_text(dir: &Path, result: &rmcp::model::CallToolResult) -> PathBuf {
    let path = dir.join("tool.audit.json");
    std::fs::write(&path, text_of(result)).expect("write");
    path
}

#[tokio::test]
async fn the_export_reasoning_audit_tool_records_its_call_and_answers_with_a_verifiable_file() {
    let dir = tempfile::tempdir().expect("tempdir");
    let server = StdioServer::start(dir.path(), &[]).await;
    let first = think(&server, 1, 2, "Which index is missing?", json!({})).await;
    let session = first["sessionId"].as_str().expect("sessionId").to_owned();
    think(&server, 2, 2, "The one on orders.customer_id.", json!({})).await;
    // The session is still open: the server signs a checkpoint covering it before exporting.

    let result = call(
        &server,
        "export_reasoning_audit",
        json!({ "session_id": session }),
    )
    .await;
    let body = ok(&result);
    let seq = receipt(&body);
    assert_eq!(body["format"], "thinkledger-audit/1");
    assert_eq!(body["selection"], json!({ "sessionId": session }));
    let catalog = Catalog::new(Toolsets::all());
    let entry = catalog.entry("export_reasoning_audit").expect("listed");
    let schema = Value::Object((**entry.tool.output_schema.as_ref().expect("schema")).clone());
    if let Err(e) = subset::validate(&schema, &body) {
        panic!("result does not match its output schema: {e}");
    }
    let file = save_text(dir.path(), &result);
    conforms(&std::fs::read(&file).expect("saved"));

    expect_rejected(
        &server,
        "export_reasoning_audit",
        json!({ "session_id": "not-a-session" }),
        "unknown_session",
    )
    .await;
    expect_rejected(
        &server,
        "export_reasoning_audit",
        json!({ "session_id": uuid::Uuid::new_v4().to_string() }),
        "empty_session",
    )
    .await;
    server.stop().await;

    // The call was recorded like any other, against the session it exported.
    let events = stored_events(dir.path());
    let recorded = &events[usize::try_from(seq).expect("seq") - 1];
    assert_eq!(recorded["call"]["tool"], "export_reasoning_audit");
    assert_eq!(recorded["sessionId"], session.as_str());

    let key = ledger_key(dir.path()).await;
    let run = verify_export(dir.path(), &file, &key, &[]).await;
    assert_eq!(run.status.code(), Some(0), "{run:?}");
    assert!(run.stdout.contains("2 selected"), "{}", run.stdout);
}

/// A checkpoint kept the way reviewers save it — `jq -r .checkpoint export.json > kept` adds a
/// newline, an editor may write CRLF — is read as the note it is by `audit`, `verify-export` and
/// `verify`; and an export asked to extend a checkpoint of its own size carries the empty proof
/// that holds between equal roots.
#[tokio::test]
async fn a_kept_checkpoint_saved_with_a_final_newline_or_crlf_is_accepted_everywhere() {
    let dir = tempfile::tempdir().expect("tempdir");
    let session = record_session(dir.path()).await;
    let key = ledger_key(dir.path()).await;
    let events = stored_events(dir.path()).len();
    let kept = cli(dir.path(), &["checkpoint"]).await;
    assert!(kept.status.success(), "checkpoint failed: {kept:?}");
    let saved = [
        ("jq.checkpoint", format!("{}\n", kept.stdout)),
        ("crlf.checkpoint", kept.stdout.replace('\n', "\r\n")),
    ];
    for (name, text) in saved {
        let path = dir.path().join(name);
        std::fs::write(&path, &text).expect("write");
        let kept_arg = path.to_str().expect("path");
        let file = dir.path().join(format!("{name}.audit.json"));
        let file_arg = file.to_str().expect("path");
        let run = cli(
            dir.path(),
            &[
                "audit",
                &session,
                "--since-checkpoint",
                kept_arg,
                "-o",
                file_arg,
            ],
        )
        .await;
        assert!(run.status.success(), "{name}: audit refused it: {run:?}");
        let export: Value =
            serde_json::from_slice(&std::fs::read(&file).expect("export")).expect("JSON");
        assert_eq!(export["consistency"]["fromSize"], json!(events), "{name}");
        assert_eq!(export["consistency"]["proof"], json!([]), "{name}");
        let run = verify_export(dir.path(), &file, &key, &["--since-checkpoint", kept_arg]).await;
        assert_eq!(run.status.code(), Some(0), "{name}: {run:?}");
        assert!(
            run.stdout.contains(&format!(
                "the log extends the given checkpoint of {events} events"
            )),
            "{}",
            run.stdout
        );
        let run = cli(dir.path(), &["verify", "--checkpoint", kept_arg]).await;
        assert_eq!(
            run.status.code(),
            Some(0),
            "{name}: verify refused it: {run:?}"
        );
    }
}

/// `verify-export` judges known members by `schemas/event.v1.json`, names each member at fault
/// in words (no debug text), and tolerates members it does not know: they only change the hash.
#[tokio::test]
async fn malformed_members_are_named_in_words_and_unknown_members_tolerated() {
    let dir = tempfile::tempdir().expect("tempdir");
    let session = record_session(dir.path()).await;
    let key = ledger_key(dir.path()).await;
    let file = dir.path().join("session.audit.json");
    let run = cli(
        dir.path(),
        &["audit", &session, "-o", file.to_str().expect("path")],
    )
    .await;
    assert!(run.status.success(), "audit failed: {run:?}");
    let mut export: Value =
        serde_json::from_slice(&std::fs::read(&file).expect("export")).expect("JSON");
    export["events"][0]["event"]["actor"]["transport"] = json!("carrier-pigeon");
    export["events"][1]["event"]["addedLater"] = json!(true);
    export["events"][2]["event"]["prevHash"] = json!(7);
    let edited = dir.path().join("edited.json");
    std::fs::write(&edited, canonical(&export)).expect("write");
    let run = verify_export(dir.path(), &edited, &key, &[]).await;
    assert_eq!(run.status.code(), Some(2), "{run:?}");
    let out = &run.stdout;
    assert!(
        out.contains("seq 1 event_malformed at $.events[0].event.actor.transport"),
        "{out}"
    );
    assert!(out.contains("\"carrier-pigeon\" is not one of"), "{out}");
    assert!(out.contains("seq 2 hash_mismatch"), "{out}");
    assert!(!out.contains("at $.events[1].event.addedLater"), "{out}");
    assert!(
        out.contains("prevHash is 7, but the hash of seq 2 is"),
        "{out}"
    );
    for debug in ["Some(", "None", "Number(", "String("] {
        assert!(
            !out.contains(debug),
            "debug text {debug:?} in the report: {out}"
        );
    }
}
