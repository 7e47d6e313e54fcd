//! `thinkledger backup DEST`: taken through the serving process while a client makes calls in
//! a loop, the copy verifies, holds every call acknowledged before the backup started byte for
//! byte, serves (a new call appends after its head), re-executes without divergence and signs
//! with the same key; taken with no server, by opening the ledger itself; a DEST that holds
//! anything is refused.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::Duration;

use serde_json::json;

use crate::common::{HttpServer, assert_intact, cli, receipt, stored_events, think, within};

#[tokio::test]
async fn a_backup_under_load_verifies_serves_and_holds_every_call_acknowledged_before_it() {
    let dir = tempfile::tempdir().expect("tempdir");
    let source = dir.path().join("source");
    let server = HttpServer::start(&source, &[]).await;
    // A session whose texts are erased before the backup: the copy keeps the erasure.
    let erased = server.connect().await;
    let first = think(&erased, 1, 2, "a text to erase", json!({})).await;
    let erased_session = first["sessionId"].as_str().expect("a session").to_owned();
    think(&erased, 2, 2, "another text to erase", json!({})).await;
    let run = cli(
        &source,
        &["erase", "--session", &erased_session, "--reason", "test"],
    )
    .await;
    assert!(run.status.success(), "erase failed: {run:?}");

    // The load: one client calling in a loop; the highest seq it heard acknowledged.
    let acknowledged = Arc::new(AtomicU64::new(0));
    let stop = Arc::new(AtomicBool::new(false));
    let client = server.connect().await;
    let load = tokio::spawn({
        let (acknowledged, stop) = (acknowledged.clone(), stop.clone());
        async move {
            let first = think(&client, 1, 2, "thought 1 of the load", json!({})).await;
            let session = first["sessionId"].as_str().expect("a session").to_owned();
            acknowledged.store(receipt(&first), Ordering::SeqCst);
            let mut n = 2;
            while !stop.load(Ordering::SeqCst) {
                let body = think(
                    &client,
                    n,
                    n + 1,
                    &format!("thought {n} of the load"),
                    json!({ "sessionId": session }),
                )
                .await;
                acknowledged.store(receipt(&body), Ordering::SeqCst);
                n += 1;
            }
            session
        }
    });
    within("the load to get going", async {
        while acknowledged.load(Ordering::SeqCst) < 40 {
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
    })
    .await;

    let backup = dir.path().join("backup");
    let before = acknowledged.load(Ordering::SeqCst);
    let run = cli(&source, &["backup", backup.to_str().expect("utf-8 path")]).await;
    let after = acknowledged.load(Ordering::SeqCst);
    assert!(run.status.success(), "backup failed: {run:?}");
    assert!(run.stdout.contains("the copy verifies"), "{run:?}");
    let mut files: Vec<String> = std::fs::read_dir(&backup)
        .expect("the backup is a directory")
        .map(|entry| {
            entry
                .expect("an entry")
                .file_name()
                .to_string_lossy()
                .into_owned()
        })
        .collect();
    files.sort();
    assert_eq!(
        files,
        ["ledger", "signing.key"],
        "the ledger and its key; caches and the owner's files stay behind"
    );
    tokio::time::sleep(Duration::from_millis(200)).await;
    stop.store(true, Ordering::SeqCst);
    let session = within("the load to stop", load)
        .await
        .expect("the load ran");
    assert!(
        after > before,
        "the load went on while the backup was taken ({before} → {after})"
    );

    // The copy verifies, its erasure included, and holds every call acknowledged before the
    // backup started, byte for byte.
    let (report, code) = crate::common::verify_json(&backup).await;
    assert_eq!(code, Some(0), "the backup verifies: {report}");
    let copied = report["events"].as_u64().expect("an event count");
    assert!(
        copied >= before,
        "the backup holds {copied} events, but seq {before} was acknowledged before it started"
    );
    assert!(
        report["textsErased"].as_u64() >= Some(2),
        "the erased texts are counted as erased: {report}"
    );
    server.kill().await;
    let (originals, copies) = (stored_events(&source), stored_events(&backup));
    assert_eq!(copies.len() as u64, copied);
    assert_eq!(&originals[..copies.len()], &copies[..]);
    assert_eq!(
        cli(&backup, &["key"]).await.stdout,
        cli(&source, &["key"]).await.stdout,
        "the copy signs with the ledger's key"
    );

    // It serves: a new call appends after the copied head, and the whole still verifies.
    let restored = HttpServer::start(&backup, &[]).await;
    let client = restored.connect().await;
    let body = think(&client, 1, 1, "after the restore", json!({})).await;
    assert_eq!(
        receipt(&body),
        copied + 1,
        "the next call follows the copy's head"
    );
    drop(client);
    restored.terminate().await;
    assert_intact(&backup, copied + 1).await;
    let run = cli(&backup, &["replay", &session, "--reexecute"]).await;
    assert!(
        run.status.success(),
        "the restored session re-executes without divergence: {run:?}"
    );

    // A DEST that holds anything is refused and left as it was.
    let run = cli(&source, &["backup", backup.to_str().expect("utf-8 path")]).await;
    assert!(!run.status.success(), "{run:?}");
    assert!(run.stderr.contains("not empty"), "{run:?}");
    assert_intact(&backup, copied + 1).await;

    // With no server, the command opens the ledger itself.
    let offline = dir.path().join("offline");
    std::fs::create_dir(&offline).expect("an empty DEST may exist");
    let run = cli(&source, &["backup", offline.to_str().expect("utf-8 path")]).await;
    assert!(run.status.success(), "offline backup failed: {run:?}");
    assert_intact(&offline, originals.len() as u64).await;
    assert!(!dir.path().join("offline.partial").exists());
}
