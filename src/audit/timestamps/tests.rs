//! Which kept token an export carries, and the verifier's judgement of the `timestamps` member
//! short of the token itself (whose RFC 3161 checks `rfc3161`'s tests make on OpenSSL's
//! tokens): the stamped checkpoint and its consistency proof, a missing member under
//! `--tsa-cert`, tokens left unchecked without it.

use super::super::*;
use crate::events::SessionId;
use crate::ledger::testlog::TestLog;
use crate::ledger::timestamps::KeptTimestamp;

const CA: &[u8] = include_bytes!("../../../tests/data/tsa/rsa-ca.pem");

/// A log of five thoughts with checkpoints signed at 3 and at 5; the note of the first.
fn log() -> (TestLog, String) {
    let mut log = TestLog::new();
    let session = SessionId::random();
    for text in ["one", "two", "three"] {
        log.think(&session, text);
    }
    let first = log.sign_checkpoint();
    for text in ["four", "five"] {
        log.think(&session, text);
    }
    log.sign_checkpoint();
    (log, first)
}

fn export(log: &TestLog, kept: &[KeptTimestamp]) -> Vec<u8> {
    build_export_with(
        log,
        &Selection::Range {
            from_seq: 1,
            to_seq: 5,
        },
        &ExportOptions {
            since_checkpoint: None,
            generated_at: "2026-11-28T00:00:00.000000Z".to_owned(),
            progress: None,
            cancelled: None,
            timestamps: kept,
        },
    )
    .expect("builds")
    .to_canonical_bytes()
    .expect("canonical")
}

/// (code, path) of every problem, and the notes.
fn check(
    log: &TestLog,
    bytes: &[u8],
    tsa_cert: Option<&[u8]>,
) -> (Vec<(String, String)>, Vec<String>) {
    let vkey = log.vkey();
    let report = verify_export_with(
        bytes,
        &VerifyOptions {
            pubkey: Some(&vkey),
            since_checkpoint: None,
            progress: None,
            tsa_cert,
        },
    );
    let problems = report
        .problems
        .iter()
        .map(|p| (p.code.to_string(), p.path.clone()))
        .collect();
    (problems, report.notes)
}

#[test]
fn the_latest_kept_token_the_checkpoint_extends_is_carried_with_its_proof() {
    let (log, first) = log();
    let kept = [
        KeptTimestamp {
            note: "not a checkpoint".to_owned(),
            token: vec![1],
        },
        KeptTimestamp {
            note: first.clone(),
            token: vec![0x30, 0x00],
        },
    ];
    let bytes = export(&log, &kept);
    let document: AuditExport = serde_json::from_slice(&bytes).expect("reads back");
    assert_eq!(document.timestamps.len(), 1);
    assert_eq!(document.timestamps[0].checkpoint, first);
    assert_eq!(document.timestamps[0].token, "MAA=");
    assert!(!document.timestamps[0].consistency.is_empty());

    // Without --tsa-cert the stamped checkpoint is checked, the token is not, and it says so.
    let (problems, notes) = check(&log, &bytes, None);
    assert_eq!(problems, Vec::new());
    assert!(
        notes
            .iter()
            .any(|n| n.contains("not checked: give the TSA's certificate")),
        "{notes:?}"
    );
    // With it, this token is no token.
    let (problems, _) = check(&log, &bytes, Some(CA));
    assert_eq!(
        problems,
        [(
            "timestamp_malformed".to_owned(),
            "$.timestamps[0].token".to_owned()
        )]
    );
}

#[test]
fn a_stamped_checkpoint_the_export_does_not_extend_fails() {
    let (log, first) = log();
    let kept = [KeptTimestamp {
        note: first,
        token: vec![0x30, 0x00],
    }];
    let mut document: serde_json::Value =
        serde_json::from_slice(&export(&log, &kept)).expect("JSON");
    document["timestamps"][0]["consistency"]
        .as_array_mut()
        .expect("proof")
        .pop();
    let bytes = crate::ledger::canonical::canonical_bytes(&document).expect("canonical");
    let (problems, _) = check(&log, &bytes, None);
    assert!(
        problems.contains(&(
            "timestamp_checkpoint".to_owned(),
            "$.timestamps[0].consistency".to_owned()
        )),
        "{problems:?}"
    );
}

#[test]
fn an_export_without_tokens_fails_only_when_the_tsa_is_asked_for() {
    let (log, _) = log();
    let bytes = export(&log, &[]);
    let document: serde_json::Value = serde_json::from_slice(&bytes).expect("JSON");
    assert!(document.get("timestamps").is_none(), "no empty member");
    assert_eq!(check(&log, &bytes, None).0, Vec::new());
    assert_eq!(
        check(&log, &bytes, Some(CA)).0,
        [("timestamps_missing".to_owned(), "--tsa-cert".to_owned())]
    );
    assert_eq!(
        check(&log, &bytes, Some(b"garbage")).0,
        [
            ("bad_tsa_cert".to_owned(), "--tsa-cert".to_owned()),
            ("timestamps_missing".to_owned(), "--tsa-cert".to_owned())
        ]
    );
}
