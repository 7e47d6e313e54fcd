//! The ledger on PostgreSQL (`--store postgres://…`), against real servers started from
//! Debian's packages (tests/postgres/server.rs): one node recording, verifying, erasing and
//! migrating both ways; three nodes sharing one chain under a mixed load with one of them
//! SIGKILLed; and a failover to a promoted synchronous replica. Each test passes with a line
//! on stderr when PostgreSQL is not installed, and fails under `CI=true`.

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use rmcp::model::{
    CallToolRequestParams, MetaObject, ReadResourceRequestParams, RequestMetaObject,
    ResourceContents,
};
use serde_json::{Value, json};
use thinkledger::ledger::{PgStore, Store};

use crate::common::{BIN, Client, HttpServer, call, cli, holds, ok, receipt, within};
use crate::pg_server::PgServer;

/// `thinkledger --data-dir DIR --store URL ARGS…`, to completion.
pub(crate) async fn on(data_dir: &Path, url: &str, args: &[&str]) -> crate::common::CliRun {
    let mut all = vec!["--store", url];
    all.extend_from_slice(args);
    cli(data_dir, &all).await
}

/// `verify --json` of the ledger at `url`: asserts it intact and returns the report.
async fn assert_intact_at(data_dir: &Path, url: &str) -> Value {
    let run = on(data_dir, url, &["verify", "--json"]).await;
    let report: Value = serde_json::from_str(&run.stdout)
        .unwrap_or_else(|e| panic!("verify --json printed no JSON ({e}): {run:?}"));
    assert_eq!(
        report["problems"],
        json!([]),
        "verify found problems: {report}"
    );
    assert_eq!(run.status.code(), Some(0), "{run:?}");
    report
}

/// Starts a node serving the ledger at `url` over HTTP.
async fn node(data_dir: &Path, url: &str) -> HttpServer {
    HttpServer::start(data_dir, &["--store", url]).await
}

/// Waits for the first node to have made the ledger's signing key, and gives it to the other
/// nodes' data directories: one key per ledger (docs/scaling.md).
async fn share_key(from: &Path, to: &[&Path]) {
    let key = from.join("signing.key");
    within("the first node to make the signing key", async {
        while !key.exists() {
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    })
    .await;
    for dir in to {
        std::fs::create_dir_all(dir).expect("data dir");
        std::fs::copy(&key, dir.join("signing.key")).expect("copy the signing key");
    }
}

/// Every byte of the files under `dir`, skipping a file the server removes while they are
/// read (relation files go at checkpoints, temporary files come and go).
fn live_bytes(dir: &Path) -> Vec<u8> {
    let mut out = Vec::new();
    let Ok(entries) = std::fs::read_dir(dir) else {
        return out;
    };
    for entry in entries.flatten() {
        let path = entry.path();
        if path.is_dir() {
            out.extend(live_bytes(&path));
        } else if let Ok(bytes) = std::fs::read(&path) {
            out.extend(bytes);
        }
    }
    out
}

#[tokio::test]
async fn a_ledger_on_postgres_records_verifies_erases_for_good_and_migrates_both_ways() {
    let Some(pg) = PgServer::start() else { return };
    let url = pg.url("ledger");
    let dir = tempfile::tempdir().expect("tempdir");
    let secret = "quokkazanzibar insurance claim 8812";

    let server = node(dir.path(), &url).await;
    let client = server.connect().await;
    let first = ok(&call(
        &client,
        "sequentialthinking",
        json!({"thought": format!("Check {secret}"), "thoughtNumber": 1, "totalThoughts": 2, "nextThoughtNeeded": true}),
    )
    .await);
    let session = first["sessionId"].as_str().expect("sessionId").to_owned();
    ok(&call(
        &client,
        "sequentialthinking",
        json!({"thought": "It was paid twice.", "thoughtNumber": 2, "totalThoughts": 2, "nextThoughtNeeded": false}),
    )
    .await);
    let memory = ok(&call(
        &client,
        "store_memory",
        json!({"content": "Invoices are due in 30 days", "userId": "u", "sessionId": "s", "primarySector": "semantic"}),
    )
    .await);
    let last = receipt(&memory);
    drop(client);
    server.kill().await;

    // Everything answered is in the database, and the chain verifies there.
    let report = assert_intact_at(dir.path(), &url).await;
    assert_eq!(report["events"], last, "{report}");
    assert_eq!(
        pg.psql(
            "ledger",
            &format!("SELECT count(*) FROM thinkledger_texts WHERE text LIKE '%{secret}%'")
        ),
        "1"
    );

    // A node without the ledger's key is refused, saying where the key is.
    let keyless = tempfile::tempdir().expect("tempdir");
    let refused = on(keyless.path(), &url, &["sessions"]).await;
    assert!(!refused.status.success(), "{refused:?}");
    assert!(
        refused.stderr.contains("copy signing.key"),
        "{}",
        refused.stderr
    );
    assert!(!keyless.path().join("signing.key").exists());

    // A second server on the same database serves the same ledger, after the first.
    let again = node(dir.path(), &url).await;
    let client = again.connect().await;
    let found = ok(&call(
        &client,
        "search_memories",
        json!({"userId": "u", "text": "invoices due"}),
    )
    .await);
    assert_eq!(found["data"]["totalCount"], 1, "{found}");
    drop(client);
    again.kill().await;

    // Erasure removes the text from the table and from the table's files.
    let erased = on(
        dir.path(),
        &url,
        &[
            "erase",
            "--session",
            &session,
            "--reason",
            "customer request",
        ],
    )
    .await;
    assert!(erased.status.success(), "{erased:?}");
    assert_eq!(
        pg.psql(
            "ledger",
            &format!("SELECT count(*) FROM thinkledger_texts WHERE text LIKE '%{secret}%'")
        ),
        "0"
    );
    pg.psql("ledger", "CHECKPOINT");
    let table_files = live_bytes(&pg.pgdata().join("base"));
    assert!(
        !holds(&table_files, secret),
        "the erased text is still in the database's table files"
    );
    let report = assert_intact_at(dir.path(), &url).await;
    assert!(report["textsErased"].as_u64().unwrap_or(0) >= 1, "{report}");
    let head = report["headHash"].clone();
    let checkpoints = report["checkpointsVerified"].clone();

    // Migrate to a data directory and back to another database: the same chain, the same
    // checkpoints, verified on each side.
    let copy = tempfile::tempdir().expect("tempdir");
    let to_dir = copy.path().join("data");
    let run = cli(
        dir.path(),
        &[
            "migrate",
            "--from",
            &url,
            "--to",
            to_dir.to_str().expect("utf-8"),
        ],
    )
    .await;
    assert!(run.status.success(), "{run:?}");
    let (on_disk, code) = crate::common::verify_json(&to_dir).await;
    assert_eq!(code, Some(0), "{on_disk}");
    assert_eq!(on_disk["headHash"], head);
    assert_eq!(on_disk["checkpointsVerified"], checkpoints);
    let back = pg.url("back");
    let run = cli(
        &to_dir,
        &[
            "migrate",
            "--from",
            to_dir.to_str().expect("utf-8"),
            "--to",
            &back,
        ],
    )
    .await;
    assert!(run.status.success(), "{run:?}");
    let report = assert_intact_at(&to_dir, &back).await;
    assert_eq!(report["headHash"], head);
    assert_eq!(report["checkpointsVerified"], checkpoints);
    // Into a ledger that exists already, nothing is copied.
    let refused = cli(&to_dir, &["migrate", "--from", &url, "--to", &back]).await;
    assert!(!refused.status.success(), "{refused:?}");
    assert!(
        refused.stderr.contains("already holds a ledger"),
        "{refused:?}"
    );
}

/// What one client of a mixed load was answered: `(seq, eventHash)` of each call.
type Acked = Arc<Mutex<Vec<(u64, String)>>>;

/// A mixed load on one client: thinking, memory and deliberation calls in turn, `calls` of
/// them, stopping at the first transport failure (its node is gone). Returns how many calls
/// were answered with a refusal or not at all.
async fn mixed_load(client: Client, worker: usize, calls: usize, acked: Acked) -> usize {
    let mut failed = 0;
    let mut deliberation: Option<String> = None;
    for i in 0..calls {
        let (tool, arguments) = match i % 3 {
            0 => (
                "sequentialthinking",
                json!({"thought": format!("worker {worker} step {i}"), "thoughtNumber": i / 3 + 1,
                       "totalThoughts": calls / 3 + 1, "nextThoughtNeeded": true}),
            ),
            1 => (
                "store_memory",
                json!({"content": format!("worker {worker} fact {i}"), "userId": format!("w{worker}"),
                       "sessionId": "load", "primarySector": "semantic"}),
            ),
            _ => match &deliberation {
                None => (
                    "start_deliberation",
                    json!({"goal": format!("Which plan should worker {worker} take?")}),
                ),
                Some(sid) => (
                    "add_thought_node",
                    json!({"session_id": sid, "content": format!("Option {i} of worker {worker}")}),
                ),
            },
        };
        let Value::Object(arguments) = arguments else {
            unreachable!("arguments are objects")
        };
        let params = CallToolRequestParams::new(tool.to_owned()).with_arguments(arguments);
        // A call to a node that was killed may never be answered: given up after a while,
        // as its client would.
        let answer = tokio::time::timeout(Duration::from_secs(10), client.call_tool(params)).await;
        match answer {
            Ok(Ok(result)) if result.is_error != Some(true) => {
                let body = ok(&result);
                if tool == "start_deliberation" {
                    deliberation = body["session_id"].as_str().map(str::to_owned);
                }
                let seq = receipt(&body);
                let hash = body["eventHash"].as_str().expect("eventHash").to_owned();
                acked.lock().expect("acked").push((seq, hash));
            }
            Ok(Ok(_)) => failed += 1,
            Ok(Err(_)) | Err(_) => return failed + calls - i,
        }
    }
    failed
}

/// Every acknowledged call is in the log at its seq with the hash it was answered with, once.
fn assert_every_acknowledged_call_stored(url: &str, acked: &[(u64, String)]) {
    let seqs: BTreeSet<u64> = acked.iter().map(|(seq, _)| *seq).collect();
    assert_eq!(seqs.len(), acked.len(), "two answers named one seq");
    let store = PgStore::open_for_reading(url).expect("open the database's ledger");
    for (seq, hash) in acked {
        let bytes = store
            .event_bytes(*seq)
            .expect("read an event")
            .unwrap_or_else(|| panic!("acknowledged event {seq} is not in the log"));
        let stored: Value = serde_json::from_slice(&bytes).expect("event JSON");
        assert_eq!(
            stored["hash"],
            hash.as_str(),
            "event {seq} is not the one answered"
        );
    }
}

/// `thinkledger audit --from-seq 1 --to-seq N` taken through `data_dir`'s node setup, with a
/// fixed `SOURCE_DATE_EPOCH`; returns the file's bytes.
async fn export_through(data_dir: &Path, url: &str, to_seq: u64, out: &Path) -> Vec<u8> {
    let output = within(
        "audit export",
        tokio::process::Command::new(BIN)
            .arg("--data-dir")
            .arg(data_dir)
            .args(["--store", url, "audit", "--from-seq", "1", "--to-seq"])
            .arg(to_seq.to_string())
            .arg("--output")
            .arg(out)
            .env("SOURCE_DATE_EPOCH", "1795000000")
            .env("RUST_LOG", "warn")
            .env_remove("THINKLEDGER_DATA_DIR")
            .output(),
    )
    .await
    .expect("run audit");
    assert!(output.status.success(), "audit failed: {output:?}");
    std::fs::read(out).expect("the export")
}

#[tokio::test]
async fn three_nodes_on_one_database_keep_one_gap_free_chain_through_a_killed_node() {
    let Some(pg) = PgServer::start() else { return };
    let url = pg.url("shared");
    let dirs: Vec<tempfile::TempDir> = (0..3)
        .map(|_| tempfile::tempdir().expect("tempdir"))
        .collect();
    let first = node(dirs[0].path(), &url).await;
    share_key(dirs[0].path(), &[dirs[1].path(), dirs[2].path()]).await;
    let mut nodes = vec![
        first,
        node(dirs[1].path(), &url).await,
        node(dirs[2].path(), &url).await,
    ];

    // 32 clients spread over the nodes, 24 calls each; node 3 is SIGKILLed mid-load.
    let (clients, calls) = (32, 24);
    let acked: Acked = Arc::default();
    let mut load = tokio::task::JoinSet::new();
    for worker in 0..clients {
        let client = nodes[worker % 3].connect().await;
        load.spawn(mixed_load(client, worker, calls, acked.clone()));
    }
    within("a third of the load", async {
        while acked.lock().expect("acked").len() < clients * calls / 3 {
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
    })
    .await;
    let killed = nodes.pop().expect("node 3");
    killed.kill().await;
    let mut unanswered = 0;
    while let Some(done) = within("the load", load.join_next()).await {
        unanswered += done.expect("load task");
    }
    let acked = acked.lock().expect("acked").clone();
    // The two nodes left answered every call made to them.
    let answered = acked.len();
    let on_live_nodes = (0..clients).filter(|w| w % 3 != 2).count() * calls;
    assert!(
        answered >= on_live_nodes,
        "only {answered} calls answered ({unanswered} not), {on_live_nodes} made to live nodes"
    );

    // A call on one node sees a session written through another: a deliberation started
    // on node 1 takes a node added through node 2.
    let (one, two) = (nodes[0].connect().await, nodes[1].connect().await);
    let started = ok(&call(&one, "start_deliberation", json!({"goal": "Cross-node"})).await);
    let sid = started["session_id"]
        .as_str()
        .expect("session_id")
        .to_owned();
    ok(&call(
        &two,
        "add_thought_node",
        json!({"session_id": sid, "content": "from node 2"}),
    )
    .await);
    // A thought written through node 1, read through node 2 by a client that names the seq
    // of its answer: the read holds it.
    for round in 0..5 {
        let wrote = ok(&call(
            &one,
            "sequentialthinking",
            json!({"thought": format!("Written on node 1, round {round}"), "thoughtNumber": 1,
                   "totalThoughts": 1, "nextThoughtNeeded": false}),
        )
        .await);
        let seq = receipt(&wrote);
        let session = wrote["sessionId"].as_str().expect("sessionId");
        let uri = format!("ledger://session/{session}");
        let mut meta = serde_json::Map::new();
        meta.insert("thinkledger/afterSeq".into(), json!(seq));
        let mut params = ReadResourceRequestParams::new(uri.clone());
        params.meta = Some(RequestMetaObject(MetaObject(meta)));
        let read = within("read through node 2", two.read_resource(params))
            .await
            .unwrap_or_else(|e| panic!("resources/read {uri} on node 2: {e}"));
        let ResourceContents::TextResourceContents { text, .. } = &read.contents[0] else {
            panic!("not text: {read:?}")
        };
        let document: Value = serde_json::from_str(text).expect("JSON");
        assert_eq!(document["lastSeq"], seq, "node 2 read {document}");
    }
    drop((one, two));
    for node in nodes {
        node.kill().await;
    }

    assert_every_acknowledged_call_stored(&url, &acked);
    let report = assert_intact_at(dirs[0].path(), &url).await;
    let events = report["events"].as_u64().expect("events");
    assert!(events >= answered as u64 + 2, "{report}");

    // Exports of the same range through two nodes' setups are the same bytes, and verify
    // offline with the ledger's key.
    let out = tempfile::tempdir().expect("tempdir");
    let a = export_through(dirs[0].path(), &url, events, &out.path().join("a.json")).await;
    let b = export_through(dirs[1].path(), &url, events, &out.path().join("b.json")).await;
    assert!(a == b, "the exports differ");
    let key = on(dirs[1].path(), &url, &["key"]).await;
    assert!(key.status.success(), "{key:?}");
    let checked = cli(
        dirs[1].path(),
        &[
            "verify-export",
            out.path().join("a.json").to_str().expect("utf-8"),
            "--pubkey",
            key.stdout.trim(),
        ],
    )
    .await;
    assert_eq!(checked.status.code(), Some(0), "{checked:?}");
}

#[tokio::test]
async fn a_promoted_synchronous_replica_holds_every_acknowledged_call() {
    let Some(mut primary) = PgServer::start() else {
        return;
    };
    let url = primary.url("ledger");
    let replica = primary.start_sync_replica();
    let dirs: Vec<PathBuf> = ["a", "b"]
        .iter()
        .map(|_| tempfile::tempdir().expect("tempdir").keep())
        .collect();
    let first = node(&dirs[0], &url).await;
    share_key(&dirs[0], &[&dirs[1]]).await;
    let nodes = [first, node(&dirs[1], &url).await];

    let acked: Acked = Arc::default();
    let mut load = tokio::task::JoinSet::new();
    for worker in 0..6 {
        let client = nodes[worker % 2].connect().await;
        load.spawn(mixed_load(client, worker, 40, acked.clone()));
    }
    within("part of the load", async {
        while acked.lock().expect("acked").len() < 60 {
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
    })
    .await;
    // The primary goes away mid-load; the replica is promoted and the nodes are pointed at it.
    primary.stop();
    replica.promote();
    while within("the load", load.join_next()).await.is_some() {}
    // Each node's write (or its read of the others' events) fails: it stops, saying why, for
    // its supervisor to start it again.
    for mut node in nodes {
        let status = node.exited().await;
        assert!(!status.success(), "{status:?}");
        assert!(
            node.stderr().contains("start it again"),
            "{}",
            node.stderr()
        );
    }
    let promoted = replica.url("ledger");
    let nodes = [
        node(&dirs[0], &promoted).await,
        node(&dirs[1], &promoted).await,
    ];
    let mut load = tokio::task::JoinSet::new();
    for worker in 0..4 {
        let client = nodes[worker % 2].connect().await;
        load.spawn(mixed_load(client, 100 + worker, 12, acked.clone()));
    }
    let mut failed = 0;
    while let Some(done) = within("the load after failover", load.join_next()).await {
        failed += done.expect("load task");
    }
    assert_eq!(failed, 0, "calls failed on the promoted database");
    for node in nodes {
        node.kill().await;
    }
    let acked = acked.lock().expect("acked").clone();
    assert_every_acknowledged_call_stored(&promoted, &acked);
    assert_intact_at(&dirs[0], &promoted).await;
    for dir in dirs {
        let _ = std::fs::remove_dir_all(dir);
    }
}

#[tokio::test]
async fn sslmode_require_speaks_tls_to_the_database_and_refuses_an_untrusted_certificate() {
    let Some(pg) = PgServer::start() else { return };
    let ca = pg.enable_tls();
    let url = format!("{}?sslmode=require", pg.url("tls"));
    let dir = tempfile::tempdir().expect("tempdir");
    let ca = ca.to_str().expect("utf-8");
    let server =
        HttpServer::start_with_env(dir.path(), &["--store", &url], &[("SSL_CERT_FILE", ca)]).await;
    let client = server.connect().await;
    ok(&call(
        &client,
        "sequentialthinking",
        json!({"thought": "Over TLS", "thoughtNumber": 1, "totalThoughts": 1, "nextThoughtNeeded": false}),
    )
    .await);
    let encrypted = pg.psql(
        "postgres",
        "SELECT count(*) FROM pg_stat_ssl JOIN pg_stat_activity USING (pid) \
         WHERE ssl AND datname = 'tls'",
    );
    assert_ne!(encrypted, "0", "no connection of the node's is encrypted");
    let plain = pg.psql(
        "postgres",
        "SELECT count(*) FROM pg_stat_ssl JOIN pg_stat_activity USING (pid) \
         WHERE NOT ssl AND datname = 'tls'",
    );
    assert_eq!(plain, "0", "a connection of the node's is not encrypted");
    drop(client);
    server.kill().await;

    // A certificate the client does not trust is refused.
    let untrusted = tempfile::NamedTempFile::new().expect("temp file");
    let other = PgServer::start().expect("a second server");
    std::fs::copy(other.enable_tls(), untrusted.path()).expect("copy the other CA");
    drop(other);
    let output = within(
        "verify against an untrusted certificate",
        tokio::process::Command::new(BIN)
            .arg("--data-dir")
            .arg(dir.path())
            .args(["--store", &url, "verify"])
            .env("SSL_CERT_FILE", untrusted.path())
            .env_remove("THINKLEDGER_DATA_DIR")
            .output(),
    )
    .await
    .expect("run verify");
    assert!(!output.status.success(), "{output:?}");
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(
        stderr.contains("cannot reach") || stderr.contains("certificate"),
        "{stderr}"
    );
}

/// The HTTP status of an `initialize` POSTed to `url` with `token`.
async fn status_with_token(url: &str, token: &str) -> u16 {
    let body = json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
        "protocolVersion": "2025-06-18", "capabilities": {},
        "clientInfo": {"name": "t", "version": "0"}}});
    reqwest::Client::new()
        .post(url)
        .bearer_auth(token)
        .header("content-type", "application/json")
        .header("accept", "application/json, text/event-stream")
        .body(body.to_string())
        .send()
        .await
        .expect("POST")
        .status()
        .as_u16()
}

#[tokio::test]
async fn a_token_revoked_through_one_node_is_refused_by_every_node() {
    let Some(pg) = PgServer::start() else { return };
    let url = pg.url("tokens");
    let (a, b) = (
        tempfile::tempdir().expect("tempdir"),
        tempfile::tempdir().expect("tempdir"),
    );
    // A token made before the ledger moved to the database is carried into it.
    let early = cli(
        a.path(),
        &["token", "create", "--principal", "early", "--json"],
    )
    .await;
    assert!(early.status.success(), "{early:?}");
    let early: Value = serde_json::from_str(&early.stdout).expect("token JSON");
    let first = HttpServer::start(a.path(), &["--store", &url, "--auth"]).await;
    share_key(a.path(), &[b.path()]).await;
    let second = HttpServer::start(b.path(), &["--store", &url, "--auth"]).await;
    let made = on(
        b.path(),
        &url,
        &["token", "create", "--principal", "alice", "--json"],
    )
    .await;
    assert!(made.status.success(), "{made:?}");
    let made: Value = serde_json::from_str(&made.stdout).expect("token JSON");
    let token = made["token"].as_str().expect("token");
    for server in [&first, &second] {
        assert_eq!(status_with_token(&server.url, token).await, 200);
        assert_eq!(
            status_with_token(&server.url, early["token"].as_str().expect("token")).await,
            200,
            "the data dir's earlier token works on every node"
        );
    }
    // Revoked through the first node's data dir: the very next request to either is refused.
    let revoked = on(
        a.path(),
        &url,
        &["token", "revoke", made["id"].as_str().expect("id")],
    )
    .await;
    assert!(revoked.status.success(), "{revoked:?}");
    for server in [&first, &second] {
        assert_eq!(status_with_token(&server.url, token).await, 401);
    }
    let listed = on(b.path(), &url, &["token", "list"]).await;
    assert!(listed.stdout.contains("revoked"), "{}", listed.stdout);
    first.kill().await;
    second.kill().await;
}

#[tokio::test]
async fn a_node_without_the_ledgers_key_stops_saying_where_the_key_is() {
    let Some(pg) = PgServer::start() else { return };
    let url = pg.url("keyless");
    let first = tempfile::tempdir().expect("tempdir");
    let made = on(first.path(), &url, &["key"]).await;
    assert!(made.status.success(), "{made:?}");
    let keyless = tempfile::tempdir().expect("tempdir");
    // Run to its end: a node that kept serving would time the test out.
    let run = crate::common::cli_once(
        keyless.path(),
        &["--store", &url, "serve", "--http", "127.0.0.1:0"],
    )
    .await;
    assert!(!run.status.success(), "{run:?}");
    assert!(run.stderr.contains("copy signing.key"), "{}", run.stderr);
}

/// `thinkledger ARGS…` with `home` as its home directory and no `--data-dir`, to completion.
async fn with_home(home: &Path, args: &[&str]) -> std::process::Output {
    within(
        "thinkledger with a home of its own",
        tokio::process::Command::new(BIN)
            .args(args)
            .env("HOME", home)
            .env_remove("XDG_DATA_HOME")
            .env_remove("THINKLEDGER_DATA_DIR")
            .env_remove("THINKLEDGER_STORE")
            .env("RUST_LOG", "warn")
            .output(),
    )
    .await
    .expect("run thinkledger")
}

#[tokio::test]
async fn migrate_checks_everything_before_copying_and_takes_its_key_where_servers_look() {
    let Some(pg) = PgServer::start() else { return };
    let source = tempfile::tempdir().expect("tempdir");
    let server = crate::common::StdioServer::start(source.path(), &[]).await;
    crate::common::think(&server, 1, 1, "moved", json!({})).await;
    server.stop().await;
    let src = source.path().to_str().expect("utf-8");
    // The default data directory already holds another ledger's key: refused up front, and
    // the database is left without a ledger.
    let home = tempfile::tempdir().expect("tempdir");
    let default_dir = home.path().join(".local/share/thinkledger");
    let other = tempfile::tempdir().expect("tempdir");
    cli(other.path(), &["key"]).await;
    std::fs::create_dir_all(&default_dir).expect("default data dir");
    std::fs::copy(
        other.path().join("signing.key"),
        default_dir.join("signing.key"),
    )
    .expect("another ledger's key");
    let url = pg.url("moved");
    let refused = with_home(home.path(), &["migrate", "--from", src, "--to", &url]).await;
    assert!(!refused.status.success());
    let said = String::from_utf8_lossy(&refused.stderr);
    assert!(said.contains("nothing was copied"), "{said}");
    assert_eq!(
        pg.try_psql("moved", "SELECT count(*) FROM thinkledger_events")
            .unwrap_or_else(|_| "0".into())
            .trim(),
        "0",
        "no event was copied"
    );
    // Without --data-dir, into a home whose data directory does not exist yet: the key goes
    // there, the copy verifies, and a node started there serves it.
    std::fs::remove_dir_all(home.path().join(".local")).expect("clean home");
    let moved = with_home(home.path(), &["migrate", "--from", src, "--to", &url]).await;
    assert!(
        moved.status.success(),
        "{}",
        String::from_utf8_lossy(&moved.stderr)
    );
    assert!(String::from_utf8_lossy(&moved.stdout).contains("the copy verifies"));
    assert!(default_dir.join("signing.key").exists());
    let verified = with_home(home.path(), &["--store", &url, "verify"]).await;
    assert!(
        verified.status.success(),
        "{}{}",
        String::from_utf8_lossy(&verified.stdout),
        String::from_utf8_lossy(&verified.stderr)
    );
    // Again: the destination holds a ledger now, refused before anything is written.
    let again = with_home(home.path(), &["migrate", "--from", src, "--to", &url]).await;
    assert!(!again.status.success());
    assert!(String::from_utf8_lossy(&again.stderr).contains("already holds a ledger"));
}
