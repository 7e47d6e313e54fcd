//! `serve --timestamp-authority URL` against OpenSSL's own TSA: a throwaway CA and TSA
//! certificate made with the `openssl` CLI (tests/tsa/make-tsa.sh), served on loopback by a
//! tiny HTTP shim that answers each `application/timestamp-query` POST with
//! `openssl ts -reply`. While the TSA takes connections and never answers, calls and a
//! checkpoint are not delayed; once it answers, the checkpoint's token arrives, an export
//! carries it and passes `verify-export --tsa-cert`, and fails it when one byte of the token
//! is changed, or when another CA is given; an export made before any token fails
//! `--tsa-cert`, saying why; a backup keeps the tokens, and the checkpoint signed as the server
//! stops is stamped once it runs again. On PostgreSQL, a token one node kept is in the
//! database, and an export made through another data directory carries it.
//!
//! `openssl` is Debian's `openssl` package: without it the test prints why and passes, unless
//! `CI=true`, where it fails.

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::{Duration, Instant};

use axum::body::Bytes;
use base64::Engine;
use base64::engine::general_purpose::STANDARD;
use serde_json::{Value, json};
use tokio::net::TcpListener;

#[cfg(feature = "postgres")]
use crate::common::HttpServer;
use crate::common::{StdioServer, cli, cli_once, think, within};
#[cfg(feature = "postgres")]
use crate::pg_server::PgServer;

/// `openssl` on this machine, if installed.
fn openssl() -> Option<PathBuf> {
    std::env::var_os("PATH").and_then(|paths| {
        std::env::split_paths(&paths)
            .map(|dir| dir.join("openssl"))
            .find(|path| path.is_file())
    })
}

/// Makes the CA and TSA of tests/tsa/make-tsa.sh in `dir`.
fn make_tsa(dir: &Path, kind: &str) {
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/tsa/make-tsa.sh");
    let status = std::process::Command::new("sh")
        .arg(script)
        .arg(dir)
        .arg(kind)
        .status()
        .expect("run make-tsa.sh");
    assert!(status.success(), "make-tsa.sh failed");
}

/// Answers one time-stamp query with `openssl ts -reply` in the TSA's directory.
async fn reply(tsa: Arc<PathBuf>, n: u64, query: Bytes) -> Vec<u8> {
    let queryfile = tsa.join(format!("query-{n}.tsq"));
    let replyfile = tsa.join(format!("reply-{n}.tsr"));
    std::fs::write(&queryfile, &query).expect("write the query");
    let output = tokio::process::Command::new("openssl")
        .args(["ts", "-reply", "-config", "tsa.cnf", "-queryfile"])
        .arg(&queryfile)
        .arg("-out")
        .arg(&replyfile)
        .current_dir(&*tsa)
        .output()
        .await
        .expect("run openssl ts -reply");
    assert!(output.status.success(), "openssl ts -reply: {output:?}");
    std::fs::read(&replyfile).expect("the reply")
}

/// Serves the TSA in `tsa` over HTTP on `listener` until the task is aborted.
fn serve_tsa(listener: TcpListener, tsa: PathBuf) -> tokio::task::JoinHandle<()> {
    let tsa = Arc::new(tsa);
    let served = Arc::new(std::sync::atomic::AtomicU64::new(0));
    let app = axum::Router::new().route(
        "/",
        axum::routing::post(move |headers: axum::http::HeaderMap, query: Bytes| {
            let (tsa, served) = (tsa.clone(), served.clone());
            async move {
                assert_eq!(
                    headers
                        .get(axum::http::header::CONTENT_TYPE)
                        .and_then(|v| v.to_str().ok()),
                    Some("application/timestamp-query")
                );
                let n = served.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
                (
                    [(
                        axum::http::header::CONTENT_TYPE,
                        "application/timestamp-reply",
                    )],
                    reply(tsa, n, query).await,
                )
            }
        }),
    );
    tokio::spawn(async move {
        axum::serve(listener, app).await.expect("the TSA serves");
    })
}

/// A TSA that is down the slow way: it takes connections and never answers.
fn black_hole(listener: TcpListener) -> tokio::task::JoinHandle<()> {
    tokio::spawn(async move {
        let mut held = Vec::new();
        while let Ok((stream, _)) = listener.accept().await {
            held.push(stream);
        }
    })
}

/// The kept tokens' file of the ledger in `data`.
fn kept(data: &Path) -> String {
    std::fs::read_to_string(data.join("ledger/timestamps.jsonl")).unwrap_or_default()
}

/// `thinkledger verify-export FILE --pubkey KEY --json EXTRA...`: the report and exit code.
async fn verify_export(data: &Path, file: &Path, key: &str, extra: &[&str]) -> (Value, i32) {
    let file = file.to_str().expect("UTF-8 path");
    let mut args = vec!["verify-export", file, "--pubkey", key, "--json"];
    args.extend_from_slice(extra);
    let run = cli(data, &args).await;
    let report = serde_json::from_str(&run.stdout)
        .unwrap_or_else(|e| panic!("verify-export --json printed no JSON ({e}): {run:?}"));
    (report, run.status.code().unwrap_or(-1))
}

fn codes(report: &Value) -> Vec<&str> {
    report["problems"]
        .as_array()
        .expect("problems")
        .iter()
        .filter_map(|p| p["code"].as_str())
        .collect()
}

#[tokio::test]
async fn checkpoints_are_time_stamped_by_openssl_and_exports_carry_tokens_that_verify() {
    if openssl().is_none() {
        let ci = std::env::var("CI").is_ok_and(|v| v == "true");
        assert!(
            !ci,
            "CI=true but openssl is missing: install the Debian package openssl"
        );
        eprintln!("skipped: the time-stamping test (openssl not installed)");
        return;
    }
    let dir = tempfile::tempdir().expect("tempdir");
    let data = dir.path().join("data");
    let tsa = dir.path().join("tsa");
    let other = dir.path().join("other-tsa");
    make_tsa(&tsa, "rsa");
    make_tsa(&other, "ec");
    let listener = TcpListener::bind("127.0.0.1:0").await.expect("bind");
    let address = listener.local_addr().expect("address");
    let url = format!("http://{address}/");

    // The TSA is down: it takes the connection and never answers.
    let down = black_hole(listener);
    // The ledger's key, as a reviewer obtains it out of band (made here, before any server).
    let key = cli(&data, &["key"]).await.stdout.trim().to_owned();
    let server = StdioServer::start(&data, &["--timestamp-authority", &url]).await;
    let mut session = Value::Null;
    for n in 1..=5 {
        let started = Instant::now();
        let body = think(
            &server,
            n,
            6,
            &format!("thought {n}"),
            json!({ "sessionId": session }),
        )
        .await;
        session = body["sessionId"].clone();
        assert!(
            started.elapsed() < Duration::from_secs(2),
            "a call took {:?} while the TSA was down",
            started.elapsed()
        );
    }
    let started = Instant::now();
    let signed = cli(&data, &["checkpoint"]).await;
    assert!(signed.status.success(), "checkpoint: {signed:?}");
    assert!(
        started.elapsed() < Duration::from_secs(5),
        "signing a checkpoint took {:?} while the TSA was down",
        started.elapsed()
    );
    let started = Instant::now();
    think(&server, 6, 6, "thought 6", json!({ "sessionId": session })).await;
    assert!(started.elapsed() < Duration::from_secs(2));
    tokio::time::sleep(Duration::from_secs(1)).await;
    assert_eq!(kept(&data), "", "no token while the TSA is down");

    // An export made before any token: `--tsa-cert` fails and says why.
    let early = dir.path().join("early.json");
    let sid = session.as_str().expect("sessionId").to_owned();
    let run = cli(
        &data,
        &["audit", &sid, "--output", early.to_str().expect("path")],
    )
    .await;
    assert!(run.status.success(), "audit: {run:?}");
    let ca = tsa.join("ca.pem");
    let ca = ca.to_str().expect("path");
    let (report, code) = verify_export(&data, &early, &key, &["--tsa-cert", ca]).await;
    assert_eq!(code, 2, "{report}");
    assert_eq!(codes(&report), ["timestamps_missing"], "{report}");
    let (report, code) = verify_export(&data, &early, &key, &[]).await;
    assert_eq!(
        code, 0,
        "without --tsa-cert an export without tokens passes: {report}"
    );

    // The TSA comes back on the same port: the checkpoint's token arrives.
    down.abort();
    let _ = down.await;
    let listener = TcpListener::bind(address).await.expect("bind again");
    let up = serve_tsa(listener, tsa.clone());
    within("a token kept beside the checkpoints", async {
        while kept(&data).lines().count() < 1 {
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
    })
    .await;
    let line: Value =
        serde_json::from_str(kept(&data).lines().next().expect("a line")).expect("JSON");
    assert!(
        line["note"]
            .as_str()
            .expect("note")
            .starts_with("thinkledger/")
    );

    // More calls after it; the export's fresh checkpoint extends the stamped one.
    think(&server, 1, 1, "a later thought", json!({})).await;
    let export = dir.path().join("export.json");
    let run = cli(
        &data,
        &["audit", &sid, "--output", export.to_str().expect("path")],
    )
    .await;
    assert!(run.status.success(), "audit: {run:?}");
    let document: Value =
        serde_json::from_slice(&std::fs::read(&export).expect("export")).expect("JSON");
    let schema = Path::new(env!("CARGO_MANIFEST_DIR")).join("schemas/audit-export.v1.json");
    let schema: Value =
        serde_json::from_str(&std::fs::read_to_string(schema).expect("schema")).expect("JSON");
    if let Err(e) = crate::schemas::subset::validate(&schema, &document) {
        panic!("the export does not match schemas/audit-export.v1.json: {e}");
    }
    let stamps = document["timestamps"]
        .as_array()
        .expect("the export carries timestamps");
    assert_eq!(stamps.len(), 1, "{document}");
    let stamped = stamps[0]["checkpoint"]
        .as_str()
        .expect("checkpoint")
        .to_owned();
    assert!(
        !stamps[0]["consistency"]
            .as_array()
            .expect("proof")
            .is_empty()
    );

    let (report, code) = verify_export(&data, &export, &key, &["--tsa-cert", ca]).await;
    assert_eq!(code, 0, "{report}");
    let seen = &report["summary"]["timestamps"];
    assert_eq!(seen[0]["signer"], "CN=thinkledger test TSA", "{report}");
    assert_eq!(
        seen[0]["checkpointSize"],
        stamped
            .lines()
            .nth(1)
            .and_then(|l| l.parse::<u64>().ok())
            .expect("size")
    );
    let human = cli(
        &data,
        &[
            "verify-export",
            export.to_str().expect("path"),
            "--pubkey",
            &key,
            "--tsa-cert",
            ca,
        ],
    )
    .await;
    assert!(human.status.success(), "{human:?}");
    assert!(
        human
            .stdout
            .contains("(time-stamped by CN=thinkledger test TSA)"),
        "{}",
        human.stdout
    );

    // Another CA's certificate is not the TSA's.
    let other_ca = other.join("ca.pem");
    let (report, code) = verify_export(
        &data,
        &export,
        &key,
        &["--tsa-cert", other_ca.to_str().expect("path")],
    )
    .await;
    assert_eq!(code, 2, "{report}");
    assert_eq!(codes(&report), ["timestamp_untrusted"], "{report}");

    // One byte of the token changed (the last: its signature's): it fails, naming the token.
    let mut token = STANDARD
        .decode(stamps[0]["token"].as_str().expect("token"))
        .expect("base64");
    let last = token.len() - 1;
    token[last] ^= 0x01;
    let mut tampered = document.clone();
    tampered["timestamps"][0]["token"] = json!(STANDARD.encode(&token));
    let tampered_file = dir.path().join("tampered.json");
    std::fs::write(&tampered_file, serde_json::to_vec(&tampered).expect("JSON")).expect("write");
    let (report, code) = verify_export(&data, &tampered_file, &key, &["--tsa-cert", ca]).await;
    assert_eq!(code, 2, "{report}");
    let problem = report["problems"]
        .as_array()
        .expect("problems")
        .iter()
        .find(|p| p["code"] == "timestamp_signature")
        .unwrap_or_else(|| panic!("a timestamp_signature problem: {report}"));
    assert_eq!(problem["path"], "$.timestamps[0].token");
    assert!(
        problem["detail"]
            .as_str()
            .expect("detail")
            .contains("does not verify")
    );

    // A backup taken now carries the tokens of the checkpoints it copies.
    let copy = dir.path().join("copy");
    let run = cli(&data, &["backup", copy.to_str().expect("path")]).await;
    assert!(run.status.success(), "backup: {run:?}");
    let copied: Vec<String> = kept(&copy)
        .lines()
        .map(|line| {
            let line: Value = serde_json::from_str(line).expect("JSON");
            line["note"].as_str().expect("note").to_owned()
        })
        .collect();
    assert!(
        copied.contains(&stamped),
        "the stamped checkpoint's token is in the backup"
    );

    // One more call, and the server stops: it signs a last checkpoint as it closes, which it
    // stamps when it starts again (if it had no time to before).
    think(&server, 1, 1, "the last thought", json!({})).await;
    server.stop().await;
    let last = {
        let checkpoints =
            std::fs::read_to_string(data.join("ledger/checkpoints.jsonl")).expect("checkpoints");
        let line: Value =
            serde_json::from_str(checkpoints.lines().last().expect("a checkpoint")).expect("JSON");
        line["note"].as_str().expect("note").to_owned()
    };
    let server = StdioServer::start(&data, &["--timestamp-authority", &url]).await;
    within("the last checkpoint's token after a restart", async {
        while !kept(&data).lines().any(|line| {
            serde_json::from_str::<Value>(line).is_ok_and(|l| l["note"] == last.as_str())
        }) {
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
    })
    .await;
    server.stop().await;
    up.abort();
}

#[cfg(feature = "postgres")]
#[tokio::test]
async fn on_postgres_a_token_one_node_kept_is_carried_by_an_export_made_through_another() {
    if openssl().is_none() {
        let ci = std::env::var("CI").is_ok_and(|v| v == "true");
        assert!(
            !ci,
            "CI=true but openssl is missing: install the Debian package openssl"
        );
        eprintln!("skipped: the time-stamping test on PostgreSQL (openssl not installed)");
        return;
    }
    let Some(pg) = PgServer::start() else { return };
    let url = pg.url("timestamps");
    let dir = tempfile::tempdir().expect("tempdir");
    let (a, b) = (dir.path().join("a"), dir.path().join("b"));
    let tsa = dir.path().join("tsa");
    make_tsa(&tsa, "rsa");
    let listener = TcpListener::bind("127.0.0.1:0").await.expect("bind");
    let tsa_url = format!("http://{}/", listener.local_addr().expect("address"));
    let up = serve_tsa(listener, tsa.clone());

    let node = HttpServer::start(&a, &["--store", &url, "--timestamp-authority", &tsa_url]).await;
    let client = node.connect().await;
    // A checkpoint signed by the node (asked through its data directory), which it stamps.
    let body = think(&client, 1, 1, "on postgres", json!({})).await;
    let session = body["sessionId"].as_str().expect("sessionId").to_owned();
    let signed = cli(&a, &["--store", &url, "checkpoint"]).await;
    assert!(signed.status.success(), "checkpoint: {signed:?}");
    let stamped = tokio::time::timeout(Duration::from_secs(20), async {
        loop {
            let rows = pg.psql("timestamps", "SELECT count(*) FROM thinkledger_timestamps");
            if rows.trim().parse::<u64>().is_ok_and(|n| n >= 1) {
                return;
            }
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
    })
    .await;
    assert!(
        stamped.is_ok(),
        "no token in thinkledger_timestamps; node:\n{}",
        node.stderr()
    );
    // Another data directory with the ledger's key exports from the database: the token is
    // there for it too.
    std::fs::create_dir_all(&b).expect("data dir");
    std::fs::copy(a.join("signing.key"), b.join("signing.key")).expect("the key");
    let key = cli(&b, &["--store", &url, "key"])
        .await
        .stdout
        .trim()
        .to_owned();
    let export = dir.path().join("export.json");
    let run = cli(
        &b,
        &[
            "--store",
            &url,
            "audit",
            &session,
            "--output",
            export.to_str().expect("path"),
        ],
    )
    .await;
    assert!(run.status.success(), "audit: {run:?}");
    let ca = tsa.join("ca.pem");
    let (report, code) = verify_export(
        &b,
        &export,
        &key,
        &["--tsa-cert", ca.to_str().expect("path")],
    )
    .await;
    assert_eq!(code, 0, "{report}");
    assert_eq!(
        report["summary"]["timestamps"][0]["signer"], "CN=thinkledger test TSA",
        "{report}"
    );
    drop(client);
    node.kill().await;
    up.abort();
}

#[tokio::test]
async fn an_https_tsa_is_refused_at_start() {
    let dir = tempfile::tempdir().expect("tempdir");
    let run = cli_once(
        dir.path(),
        &["serve", "--timestamp-authority", "https://tsa.example.com/"],
    )
    .await;
    assert!(!run.status.success(), "{run:?}");
    assert!(
        run.stderr
            .contains("https is not supported by this build (no TLS)"),
        "{}",
        run.stderr
    );
}
