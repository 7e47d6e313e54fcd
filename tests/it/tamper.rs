//! The tamper suite: each kind of damage to a stopped ledger — a changed byte (durability.rs),
//! a deleted event, two events swapped, a truncated tail, a rollback to an older copy — is
//! named by `thinkledger verify` at the exact seq, and the server refuses to start on it.
//! The tail and the rollback leave a hash chain that holds: only signed checkpoints catch them.

use std::path::Path;

use serde_json::{Value, json};
use thinkledger::ledger::{SledStore, Store};

use crate::common::*;

/// A stopped ledger of `n` thoughts (its shutdown signed a checkpoint covering all of them).
async fn ledger(n: u32) -> tempfile::TempDir {
    let dir = tempfile::tempdir().expect("tempdir");
    append(dir.path(), 1, n).await;
    dir
}

/// Records thoughts `from..=to` in one connection.
async fn append(dir: &Path, from: u32, to: u32) {
    let server = StdioServer::start(dir, &[]).await;
    for n in from..=to {
        think(&server, n, to, &format!("thought {n}"), json!({})).await;
    }
    server.stop().await;
}

fn store(dir: &Path) -> SledStore {
    super::common::open_ledger_store(dir)
}

/// `verify --json`'s problems as (seq, code), after asserting it exits 2.
async fn problems(dir: &Path, extra: &[&str]) -> Vec<(u64, String)> {
    let mut args = vec!["verify", "--json"];
    args.extend_from_slice(extra);
    let run = cli(dir, &args).await;
    assert_eq!(run.status.code(), Some(2), "verify must fail: {run:?}");
    let report: Value = serde_json::from_str(&run.stdout).expect("json report");
    report["problems"]
        .as_array()
        .expect("problems")
        .iter()
        .map(|p| {
            (
                p["seq"].as_u64().expect("seq"),
                p["code"].as_str().expect("code").to_owned(),
            )
        })
        .collect()
}

async fn refuses_to_start(dir: &Path) -> String {
    let run = cli(dir, &["sessions"]).await;
    assert!(!run.status.success(), "opening must be refused: {run:?}");
    assert!(run.stderr.contains("thinkledger verify"), "{}", run.stderr);
    run.stderr
}

#[tokio::test]
async fn a_deleted_event_is_a_gap_at_its_seq() {
    let dir = ledger(6).await;
    store(dir.path()).tamper_remove_event(3).expect("delete");
    let found = problems(dir.path(), &[]).await;
    assert_eq!(found[0], (3, "gap".to_owned()), "{found:?}");
    assert!(
        found
            .iter()
            .all(|(seq, code)| *seq == 3 || code.starts_with("checkpoint")),
        "only seq 3 is blamed (and the checkpoint, which no longer matches): {found:?}"
    );
    let stderr = refuses_to_start(dir.path()).await;
    assert!(stderr.contains("expected event 3"), "{stderr}");
}

#[tokio::test]
async fn two_swapped_events_are_named_at_both_seqs() {
    let dir = ledger(6).await;
    let mut s = store(dir.path());
    let third = s.event_bytes(3).expect("read").expect("3");
    let fourth = s.event_bytes(4).expect("read").expect("4");
    s.tamper_event_bytes(3, &fourth).expect("swap");
    s.tamper_event_bytes(4, &third).expect("swap");
    drop(s);
    let found = problems(dir.path(), &[]).await;
    let events: Vec<&(u64, String)> = found
        .iter()
        .filter(|(_, c)| !c.starts_with("checkpoint"))
        .collect();
    assert!(
        events.iter().all(|(seq, _)| *seq == 3 || *seq == 4),
        "{found:?}"
    );
    assert!(found.contains(&(3, "seq_mismatch".to_owned())), "{found:?}");
    assert!(found.contains(&(4, "seq_mismatch".to_owned())), "{found:?}");
    refuses_to_start(dir.path()).await;
}

#[tokio::test]
async fn a_truncated_tail_is_caught_by_the_ledgers_own_checkpoint() {
    let dir = ledger(6).await;
    let mut s = store(dir.path());
    s.tamper_remove_event(6).expect("truncate");
    s.tamper_remove_event(5).expect("truncate");
    drop(s);
    // The remaining chain is intact: only the checkpoint signed for 6 events shows the loss.
    let found = problems(dir.path(), &[]).await;
    assert_eq!(
        found,
        vec![(6, "checkpoint_beyond_log".to_owned())],
        "{found:?}"
    );
    let stderr = refuses_to_start(dir.path()).await;
    assert!(stderr.contains("rolled back"), "{stderr}");
}

#[tokio::test]
async fn a_rollback_that_then_grows_again_is_caught_by_a_kept_checkpoint() {
    let dir = ledger(2).await;
    let old_copy = tempfile::tempdir().expect("tempdir");
    copy_dir(dir.path(), old_copy.path());
    append(dir.path(), 3, 4).await;
    let kept = cli(dir.path(), &["checkpoint"]).await;
    assert!(kept.status.success(), "{kept:?}");
    let kept_file = tempfile::NamedTempFile::new().expect("tempfile");
    std::fs::write(kept_file.path(), &kept.stdout).expect("keep");
    let kept_path = kept_file.path().to_str().expect("utf-8");

    // Someone restores the old copy (its own checkpoints and all) and the log grows past the
    // kept size with other events: internally consistent, and as long as the kept one.
    append(old_copy.path(), 3, 5).await;
    let own = cli(old_copy.path(), &["verify"]).await;
    assert!(own.status.success(), "consistent on its own: {own:?}");
    let found = problems(old_copy.path(), &["--checkpoint", kept_path]).await;
    assert_eq!(
        found,
        vec![(4, "checkpoint_mismatch".to_owned())],
        "{found:?}"
    );
}
