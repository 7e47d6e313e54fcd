//! Erasure and signed checkpoints through the real binary: `thinkledger erase` leaves no
//! plaintext on disk and a verifiable trace in its place; `thinkledger checkpoint` signs what
//! `thinkledger key` verifies; a ledger rolled back behind a checkpoint someone kept is caught.

use serde_json::{Value, json};

use crate::common::*;

#[tokio::test]
async fn an_erased_session_leaves_no_plaintext_on_disk_and_a_verifiable_trace() {
    let dir = tempfile::tempdir().expect("tempdir");
    let secret = "patient 4471 reported chest pain at 03:12";
    let kept = "an unrelated session that stays";
    let server = StdioServer::start(dir.path(), &[]).await;
    let first = think(&server, 1, 2, secret, json!({})).await;
    let session = first["sessionId"].as_str().expect("sessionId").to_owned();
    think(
        &server,
        2,
        2,
        "second thought of the same session",
        json!({"nextThoughtNeeded": false}),
    )
    .await;
    server.stop().await;
    // A new connection starts its own session.
    let server = StdioServer::start(dir.path(), &[]).await;
    think(&server, 1, 1, kept, json!({"nextThoughtNeeded": false})).await;
    server.stop().await;
    assert!(
        holds(&all_bytes(dir.path()), secret),
        "the text is stored before erasure"
    );
    let snapshot = dir.path().join("ledger").join("projections.snapshot");
    // The server's snapshot holds each session's head, not its thoughts: their texts are
    // only in the text file, read back from there when a session is asked for.
    assert!(
        !holds(&std::fs::read(&snapshot).expect("a snapshot"), secret),
        "the snapshot of state the server saved at shutdown holds no thought text"
    );

    let run = cli(
        dir.path(),
        &[
            "erase",
            "--session",
            &session,
            "--reason",
            "subject request 17",
        ],
    )
    .await;
    assert!(run.status.success(), "erase failed: {run:?}");
    assert!(run.stdout.contains("erased 2 text(s)"), "{}", run.stdout);

    let bytes = all_bytes(dir.path());
    assert!(!holds(&bytes, secret), "erased plaintext found on disk");
    assert!(!holds(&bytes, "second thought of the same session"));
    assert!(holds(&bytes, kept), "other sessions keep their text");

    // The erasure is an event saying who and why; verify passes and counts the erased texts.
    let events = stored_events(dir.path());
    let erasure = events.last().expect("an erasure event");
    assert_eq!(erasure["call"]["tool"], "erase");
    assert_eq!(erasure["actor"]["transport"], "cli");
    assert_eq!(erasure["facts"][0]["type"], "TextsErased");
    assert_eq!(erasure["facts"][0]["reason"], "subject request 17");
    assert_eq!(erasure["sessionId"], session.as_str());
    let report = assert_intact(dir.path(), events.len() as u64).await;
    // Counted per reference: each thought's commitment sits in its arguments and in its fact.
    assert_eq!(report["textsErased"], 4, "{report}");
    assert!(
        report["checkpointsVerified"].as_u64().unwrap_or(0) >= 1,
        "{report}"
    );

    // Erasing again changes nothing and is refused with a reason (and recorded).
    let again = cli(
        dir.path(),
        &["erase", "--session", &session, "--reason", "again"],
    )
    .await;
    assert_eq!(again.status.code(), Some(2), "{again:?}");
    assert!(again.stdout.contains("already erased"), "{}", again.stdout);

    // The session still reads, with its text marked erased.
    let markdown = export_cli(dir.path(), &session, "markdown").await;
    assert!(!markdown.contains(secret));
    assert!(markdown.to_lowercase().contains("erased"), "{markdown}");
}

/// `thinkledger erase` of a session that stored a memory leaves no byte of it in the data dir:
/// not in the log, the snapshot, nor the memory index the server keeps on disk beside them.
#[tokio::test]
async fn an_erased_session_takes_its_memories_out_of_the_index_files_too() {
    let dir = tempfile::tempdir().expect("tempdir");
    let secret = "zanzibarquokka vaccination record";
    let server = StdioServer::start(dir.path(), &["--toolsets", "memory"]).await;
    let content = format!("The code word is {secret}");
    ok(&call(
        &server,
        "store_memory",
        json!({"content": content, "userId": "u", "sessionId": "s", "primarySector": "episodic"}),
    )
    .await);
    // A search commits the index to its directory.
    let found = ok(&call(
        &server,
        "search_memories",
        json!({"userId": "u", "text": "zanzibarquokka"}),
    )
    .await);
    assert_eq!(found["data"]["totalCount"], 1, "{found}");
    server.stop().await;
    let index = all_bytes(&dir.path().join("memory-index"));
    assert!(holds(&index, "zanzibarquokka"), "the index holds the text");
    let session = stored_events(dir.path())
        .iter()
        .find(|e| e["call"]["tool"] == "store_memory")
        .and_then(|e| e["sessionId"].as_str().map(str::to_owned))
        .expect("the store's session");

    let run = cli(
        dir.path(),
        &["erase", "--session", &session, "--reason", "request 18"],
    )
    .await;
    assert!(run.status.success(), "erase failed: {run:?}");
    assert!(
        !holds(&all_bytes(dir.path()), "zanzibarquokka"),
        "erased memory text found on disk"
    );

    // The server starts again on the erased ledger: the memory is gone, the tools work.
    let server = StdioServer::start(dir.path(), &["--toolsets", "memory"]).await;
    let found = ok(&call(
        &server,
        "search_memories",
        json!({"userId": "u", "text": "zanzibarquokka"}),
    )
    .await);
    assert_eq!(found["data"]["totalCount"], 0, "{found}");
    server.stop().await;
}

#[tokio::test]
async fn checkpoints_are_signed_by_the_ledger_key_and_a_rollback_behind_a_kept_one_is_caught() {
    let dir = tempfile::tempdir().expect("tempdir");
    let server = StdioServer::start(dir.path(), &[]).await;
    think(&server, 1, 3, "one", json!({})).await;
    think(&server, 2, 3, "two", json!({})).await;
    server.stop().await;
    let snapshot = tempfile::tempdir().expect("tempdir");
    copy_dir(dir.path(), snapshot.path());

    let server = StdioServer::start(dir.path(), &[]).await;
    think(&server, 3, 3, "three", json!({"nextThoughtNeeded": false})).await;
    server.stop().await;
    let run = cli(dir.path(), &["checkpoint"]).await;
    assert!(run.status.success(), "{run:?}");
    let note = run.stdout;
    let lines: Vec<&str> = note.lines().collect();
    let key = cli(dir.path(), &["key"]).await.stdout;
    let key_name = key.split('+').next().expect("key name");
    assert_eq!(lines[0], key_name, "origin is the key name: {note}");
    assert_eq!(lines[1], "3", "covers every event: {note}");
    assert!(
        lines[4].starts_with(&format!("— {key_name} ")),
        "signature line: {note}"
    );
    let kept = tempfile::NamedTempFile::new().expect("tempfile");
    std::fs::write(kept.path(), &note).expect("keep the checkpoint");
    let kept_path = kept.path().to_str().expect("utf-8 path");

    let ok = cli(dir.path(), &["verify", "--json", "--checkpoint", kept_path]).await;
    assert_eq!(ok.status.code(), Some(0), "{ok:?}");

    // Roll the whole data dir back to the copy taken after two events: internally consistent,
    // so only the checkpoint kept outside catches it.
    let rolled = tempfile::tempdir().expect("tempdir");
    copy_dir(snapshot.path(), rolled.path());
    let own = cli(rolled.path(), &["verify", "--json"]).await;
    assert_eq!(
        own.status.code(),
        Some(0),
        "the old copy is consistent on its own: {own:?}"
    );
    let caught = cli(
        rolled.path(),
        &["verify", "--json", "--checkpoint", kept_path],
    )
    .await;
    assert_eq!(caught.status.code(), Some(2), "{caught:?}");
    let report: Value = serde_json::from_str(&caught.stdout).expect("json");
    assert_eq!(
        report["problems"][0]["code"], "checkpoint_beyond_log",
        "{report}"
    );
    assert_eq!(report["problems"][0]["seq"], 3, "{report}");
}

#[tokio::test]
async fn a_log_that_does_not_extend_its_own_checkpoints_is_refused_at_start() {
    let dir = tempfile::tempdir().expect("tempdir");
    let server = StdioServer::start(dir.path(), &[]).await;
    think(&server, 1, 2, "one", json!({})).await;
    server.stop().await;
    let snapshot = tempfile::tempdir().expect("tempdir");
    copy_dir(dir.path(), snapshot.path());
    let server = StdioServer::start(dir.path(), &[]).await;
    think(&server, 2, 2, "two", json!({"nextThoughtNeeded": false})).await;
    server.stop().await;
    // Put back the old log but keep the newer checkpoints file.
    let ledger = dir.path().join("ledger");
    let checkpoints = std::fs::read(ledger.join("checkpoints.jsonl")).expect("checkpoints");
    std::fs::remove_dir_all(&ledger).expect("remove");
    copy_dir(&snapshot.path().join("ledger"), &ledger);
    std::fs::write(ledger.join("checkpoints.jsonl"), checkpoints).expect("write");
    let run = cli(dir.path(), &["sessions"]).await;
    assert!(!run.status.success(), "{run:?}");
    assert!(run.stderr.contains("rolled back"), "{}", run.stderr);
}

/// `thinkledger erase --user-id` takes every memory stored for one user id off the disk, each
/// version's text included, and leaves another user's alone; the memory-only session that
/// stored them is listed by `thinkledger sessions`.
#[tokio::test]
async fn erasing_a_user_id_removes_every_version_of_their_memories_and_nothing_else() {
    let dir = tempfile::tempdir().expect("tempdir");
    let server = StdioServer::start(dir.path(), &["--toolsets", "memory"]).await;
    let store = |user: &str, content: &str| json!({"content": content, "userId": user, "sessionId": "chat", "primarySector": "semantic"});
    let first = ok(&call(
        &server,
        "store_memory",
        store("ana", "ana likes okapiberries"),
    )
    .await);
    let id = first["data"]["memoryId"].as_str().expect("id").to_owned();
    ok(&call(
        &server,
        "update_memory",
        json!({"memoryId": id, "userId": "ana", "content": "ana likes quinceplums now"}),
    )
    .await);
    ok(&call(
        &server,
        "store_memory",
        store("ana", "ana lives near the marrowfen"),
    )
    .await);
    ok(&call(
        &server,
        "store_memory",
        store("ben", "ben likes okapiberries too, says ben"),
    )
    .await);
    // Every version stays readable until it is erased.
    let history = read_json(&server, "ledger://memories/ana").await;
    let first = &history["memories"][0];
    assert_eq!(first["memoryId"], id.as_str(), "{history}");
    assert_eq!(first["changes"][0]["change"], "stored");
    assert_eq!(first["changes"][0]["content"], "ana likes okapiberries");
    assert_eq!(first["changes"][1]["change"], "superseded");
    assert_eq!(first["changes"][1]["version"], 2);
    assert_eq!(first["changes"][1]["content"], "ana likes quinceplums now");
    server.stop().await;

    let listed = cli(dir.path(), &["sessions"]).await;
    assert!(listed.status.success(), "{listed:?}");
    assert!(
        listed.stdout.contains("4 calls"),
        "the memory-only session is listed: {}",
        listed.stdout
    );

    let run = cli(
        dir.path(),
        &["erase", "--user-id", "ana", "--reason", "GDPR request 7"],
    )
    .await;
    assert!(run.status.success(), "erase failed: {run:?}");
    assert!(
        run.stdout.contains("erased 2 memory(ies)"),
        "{}",
        run.stdout
    );
    let disk = all_bytes(dir.path());
    for gone in ["quinceplums", "marrowfen", "ana likes okapiberries"] {
        assert!(!holds(&disk, gone), "{gone} still on disk");
    }
    assert!(
        holds(&disk, "ben likes okapiberries"),
        "another user's memory kept"
    );
    let verified = cli(dir.path(), &["verify"]).await;
    assert_eq!(verified.status.code(), Some(0), "{verified:?}");

    let server = StdioServer::start(dir.path(), &["--toolsets", "memory"]).await;
    let ana = ok(&call(
        &server,
        "retrieve_memories",
        json!({"userId": "ana", "minStrength": 0}),
    )
    .await);
    assert_eq!(ana["data"]["totalCount"], 0, "{ana}");
    let ben = ok(&call(&server, "retrieve_memories", json!({"userId": "ben"})).await);
    assert_eq!(ben["data"]["totalCount"], 1, "{ben}");
    let history = read_json(&server, "ledger://memories/ana").await;
    let changes = history["memories"][0]["changes"]
        .as_array()
        .expect("changes");
    assert_eq!(changes[0]["contentErased"], true, "{history}");
    let erased = changes.last().expect("the erasure");
    assert_eq!(erased["change"], "erased");
    assert_eq!(erased["reason"], "GDPR request 7");
    server.stop().await;

    let again = cli(
        dir.path(),
        &["erase", "--user-id", "ana", "--reason", "GDPR request 7"],
    )
    .await;
    assert_eq!(again.status.code(), Some(2), "{again:?}");
    assert!(
        again.stdout.contains("no memories are stored"),
        "{}",
        again.stdout
    );
}
