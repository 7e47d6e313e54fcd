//! Snapshots of state in a PostgreSQL ledger (`thinkledger_snapshots`): a node saves one when it
//! stops, another node opens from it and answers as a full replay would; a snapshot that does
//! not match the log is ignored with a warning and state is rebuilt from the log; an erasure
//! leaves no snapshot older than it. Against a real server (tests/postgres/server.rs); each test
//! passes with a line on stderr when PostgreSQL is not installed, and fails under `CI=true`.

use std::path::Path;
use std::time::Duration;

use serde_json::{Value, json};

use crate::common::{Client, HttpServer, call, cli, ok, read_json, receipt, think, within};
use crate::pg_server::PgServer;
use crate::postgres::on;

/// Thoughts recorded through the first node.
const THOUGHTS: u32 = 12;

/// Starts a node serving the ledger at `url` over HTTP.
async fn node(data_dir: &Path, url: &str) -> HttpServer {
    HttpServer::start(data_dir, &["--store", url]).await
}

/// Records a session of [`THOUGHTS`] thoughts and a memory through a node on `dir`, stops it
/// as a service manager does (it saves a snapshot as it closes) and returns the session's id,
/// the last seq and what the session's resource showed.
async fn record_and_stop(dir: &Path, url: &str) -> (String, u64, Value) {
    let server = node(dir, url).await;
    let client = server.connect().await;
    let first = think(
        &client,
        1,
        THOUGHTS,
        "Where does the invoice go?",
        json!({}),
    )
    .await;
    let session = first["sessionId"].as_str().expect("sessionId").to_owned();
    for n in 2..=THOUGHTS {
        let text = format!("Step {n}: the invoice goes to accounts payable.");
        think(&client, n, THOUGHTS, &text, json!({"sessionId": session})).await;
    }
    let memory = ok(&call(
        &client,
        "store_memory",
        json!({"content": "Invoices are due in 30 days", "userId": "u", "sessionId": "s", "primarySector": "semantic"}),
    )
    .await);
    let last = receipt(&memory);
    let shown = read_json(&client, &format!("ledger://session/{session}")).await;
    drop(client);
    server.terminate().await;
    (session, last, shown)
}

/// Waits until the node has logged `what`, and returns the line.
async fn logged(server: &HttpServer, what: &str) -> String {
    within(&format!("the node to log {what:?}"), async {
        loop {
            if let Some(line) = server.stderr().lines().find(|l| l.contains(what)) {
                return line.to_owned();
            }
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    })
    .await
}

/// The second node's data directory, with the ledger's signing key.
fn second_dir(first: &Path, root: &Path) -> std::path::PathBuf {
    let dir = root.join("second");
    std::fs::create_dir_all(&dir).expect("data dir");
    std::fs::copy(first.join("signing.key"), dir.join("signing.key")).expect("copy the key");
    dir
}

/// The thought a second node adds to the session.
const NEXT_THOUGHT: &str = "And it is paid within 30 days.";

/// The session's resource read through `client` after one more thought ([`NEXT_THOUGHT`]).
async fn continue_session(client: &Client, session: &str) -> Value {
    let next = think(
        client,
        THOUGHTS + 1,
        THOUGHTS + 1,
        NEXT_THOUGHT,
        json!({"sessionId": session, "nextThoughtNeeded": false}),
    )
    .await;
    assert_eq!(next["thoughtNumber"], THOUGHTS + 1, "{next}");
    read_json(client, &format!("ledger://session/{session}")).await
}

#[tokio::test]
async fn a_node_opens_from_the_snapshot_another_node_saved_and_answers_as_a_replay_would() {
    let Some(pg) = PgServer::start() else { return };
    let url = pg.url("snapshots");
    let root = tempfile::tempdir().expect("tempdir");
    let first = root.path().join("first");
    let (session, last, shown) = record_and_stop(&first, &url).await;
    assert_eq!(
        pg.psql(
            "snapshots",
            "SELECT seq, hash = (SELECT convert_from(bytes, 'UTF8')::json->>'hash' \
             FROM thinkledger_events WHERE seq = s.seq) FROM thinkledger_snapshots s"
        ),
        format!("{last}|t"),
        "the first node saved one snapshot, anchored at its last event, with that event's hash"
    );

    let second = node(&second_dir(&first, root.path()), &url).await;
    let line = logged(&second, "state rebuilt").await;
    assert!(
        line.contains(&format!("from_snapshot={last}")) && line.contains("replayed=0"),
        "{line}"
    );
    let client = second.connect().await;
    let again = read_json(&client, &format!("ledger://session/{session}")).await;
    assert_eq!(again, shown, "the session as the snapshot shows it");
    let after = continue_session(&client, &session).await;
    drop(client);
    second.terminate().await;
    assert_eq!(
        after.to_string().matches(NEXT_THOUGHT).count(),
        1,
        "the session goes on from the snapshot: {after}"
    );

    // A one-shot command opens from the snapshot too, and sees the same session.
    let listed = on(&first, &url, &["sessions", "--json"]).await;
    assert!(listed.status.success(), "{listed:?}");
    assert!(listed.stdout.contains(&session), "{}", listed.stdout);

    // Its first events' proofs need tree nodes the snapshot does not hold: their leaves are read
    // back from the database a block at a time, and the export verifies offline.
    let file = root.path().join("session.audit.json");
    let path = file.to_str().expect("UTF-8 path");
    let audit = on(&first, &url, &["audit", &session, "-o", path]).await;
    assert!(audit.status.success(), "{audit:?}");
    let key = on(&first, &url, &["key"]).await;
    assert!(key.status.success(), "{key:?}");
    let checked = cli(
        &first,
        &["verify-export", path, "--pubkey", key.stdout.trim()],
    )
    .await;
    assert!(checked.stdout.starts_with("PASSED"), "{checked:?}");
}

#[tokio::test]
async fn a_snapshot_that_does_not_match_the_log_is_ignored_with_a_warning_and_state_replayed() {
    let Some(pg) = PgServer::start() else { return };
    let url = pg.url("mismatch");
    let root = tempfile::tempdir().expect("tempdir");
    let first = root.path().join("first");
    let (session, last, shown) = record_and_stop(&first, &url).await;
    let (client, connection) = tokio_postgres::connect(&url, tokio_postgres::NoTls)
        .await
        .expect("connect");
    tokio::spawn(connection);
    // The snapshot names another event as its anchor, its digest made whole again: only the
    // check against the log can tell.
    let row = client
        .query_one("SELECT seq, bytes FROM thinkledger_snapshots", &[])
        .await
        .expect("one snapshot");
    let (seq, bytes): (i64, Vec<u8>) = (row.get(0), row.get(1));
    assert_eq!(seq.unsigned_abs(), last);
    let forged = with_other_anchor_hash(&bytes);
    client
        .execute(
            "UPDATE thinkledger_snapshots SET bytes = $1 WHERE seq = $2",
            &[&forged, &seq],
        )
        .await
        .expect("forge the snapshot");

    let second = node(&second_dir(&first, root.path()), &url).await;
    let warning = logged(&second, "the snapshot is not used").await;
    assert!(
        warning.contains("WARN") && warning.contains("is not the event it was taken after"),
        "{warning}"
    );
    let line = logged(&second, "state rebuilt").await;
    assert!(
        line.contains("from_snapshot=0") && line.contains(&format!("replayed={last}")),
        "{line}"
    );
    let client = second.connect().await;
    let again = read_json(&client, &format!("ledger://session/{session}")).await;
    assert_eq!(again, shown, "the session as a full replay shows it");
    drop(client);
    second.kill().await;
}

/// `bytes`, a snapshot, with the anchor's hash in its header changed and its trailing BLAKE3
/// digest recomputed.
fn with_other_anchor_hash(bytes: &[u8]) -> Vec<u8> {
    let body = &bytes[..bytes.len() - 32];
    let text = String::from_utf8_lossy(body);
    let at = text.find("\"hash\":\"").expect("the header names its hash") + 8;
    let mut forged = body.to_vec();
    forged[at] = if forged[at] == b'0' { b'1' } else { b'0' };
    let digest = blake3::hash(&forged);
    forged.extend_from_slice(digest.as_bytes());
    forged
}

#[tokio::test]
async fn an_erasure_through_one_node_leaves_no_older_snapshot_for_any_node() {
    let Some(pg) = PgServer::start() else { return };
    let url = pg.url("erasure");
    let root = tempfile::tempdir().expect("tempdir");
    let first = root.path().join("first");
    let (session, last, _) = record_and_stop(&first, &url).await;
    let count = |sql: &str| pg.psql("erasure", sql);
    assert_eq!(count("SELECT count(*) FROM thinkledger_snapshots"), "1");
    let erased = on(
        &first,
        &url,
        &["erase", "--session", &session, "--reason", "test"],
    )
    .await;
    assert!(erased.status.success(), "{erased:?}");
    assert_eq!(
        count(&format!(
            "SELECT count(*) FROM thinkledger_snapshots WHERE seq <= {last}"
        )),
        "0",
        "no snapshot taken before the erasure is left"
    );
    let floor: u64 = count("SELECT seq FROM thinkledger_snapshot_floor")
        .parse()
        .expect("a seq");
    assert!(floor > last, "the floor is the erasure's seq: {floor}");
}
