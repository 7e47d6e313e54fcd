//! Tests of building and verifying exports against an in-memory log: a clean export passes; the
//! builder refuses what it cannot prove; every byte of an export matters; each kind of tampering
//! is reported with its exact code, seq and path.

use serde_json::{Value, json};

use super::*;
use crate::events::SessionId;
use crate::ledger::canonical::canonical_bytes;
use crate::ledger::checkpoint::{NoteSigner, sign_note};
use crate::ledger::keyfile::key_name;
use crate::ledger::testlog::TestLog;

/// Builds an export stamped with a fixed time (the builder reads no clock).
fn build_export(
    view: &dyn crate::ledger::LogView,
    selection: &Selection,
    since_checkpoint: Option<&str>,
) -> Result<AuditExport, AuditError> {
    build_export_with(
        view,
        selection,
        &ExportOptions {
            since_checkpoint,
            generated_at: "2026-11-25T00:00:00.000000Z".to_owned(),
            progress: None,
            cancelled: None,
            timestamps: &[],
        },
    )
}

/// A log with two sessions, a read outside any session and an erasure, all covered by a signed
/// checkpoint:
///
/// | seq | what |
/// |---|---|
/// | 1 | thought of A ("first") |
/// | 2 | thought of B |
/// | 3 | thought of A ("second", later erased) |
/// | 4 | read, no session |
/// | 5 | thought of A ("third") |
/// | 6 | erasure of seq 3's text |
struct Fixture {
    log: TestLog,
    a: SessionId,
    b: SessionId,
}

fn fixture() -> Fixture {
    let mut log = TestLog::new();
    let (a, b) = (SessionId::random(), SessionId::random());
    log.think(&a, "first");
    log.think(&b, "other session");
    log.think(&a, "second, to be erased");
    log.read();
    log.think(&a, "third");
    let erased = log.commitment_of(3);
    log.erase(&[erased]);
    log.sign_checkpoint();
    Fixture { log, a, b }
}

fn session(id: &SessionId) -> Selection {
    Selection::Session {
        session_id: id.clone(),
    }
}

fn range(from_seq: u64, to_seq: u64) -> Selection {
    Selection::Range { from_seq, to_seq }
}

fn bytes_of(export: &AuditExport) -> Vec<u8> {
    export.to_canonical_bytes().expect("canonical")
}

/// (code, seq) of every problem, in order.
fn problems(report: &ExportReport) -> Vec<(&'static str, Option<u64>)> {
    report
        .problems
        .iter()
        .map(|p| (p.code.as_str(), p.seq))
        .collect()
}

fn check(
    bytes: &[u8],
    pubkey: &str,
    since: Option<&str>,
    expect: &[(&str, Option<u64>)],
) -> ExportReport {
    let report = verify_export(bytes, Some(pubkey), since);
    assert_eq!(problems(&report), expect, "{:#?}", report.problems);
    assert_readable(&report);
    assert_eq!(report.passed, expect.is_empty());
    report
}

/// Every detail is a sentence for a person: no Rust debug text of an option or a JSON value.
fn assert_readable(report: &ExportReport) {
    for problem in &report.problems {
        for debug in [
            "Some(", "None", "Number(", "String(", "Bool(", "Object {", "Array [",
        ] {
            assert!(
                !problem.detail.contains(debug),
                "{} shows debug text: {}",
                problem.code,
                problem.detail
            );
        }
    }
}

/// Applies `edit` to the export's JSON and writes it canonically again, re-signing it with
/// `signer` when given (an insider who holds the key), else keeping the old signature.
fn tampered(
    export: &AuditExport,
    signer: Option<&NoteSigner>,
    edit: impl FnOnce(&mut Value),
) -> Vec<u8> {
    let mut value = export.to_value().expect("value");
    edit(&mut value);
    if let Some(signer) = signer {
        let digest = document_digest(&value).expect("digest");
        let body = signed_body(&key_name(&export.ledger_id), &digest);
        value[SIGNATURE_MEMBER] = Value::String(sign_note(signer, &body).expect("sign"));
    }
    canonical_bytes(&value).expect("canonical")
}

/// Index in `events` of the event with `seq`.
fn at(export: &AuditExport, seq: u64) -> usize {
    export
        .events
        .iter()
        .position(|e| e.event["seq"] == seq)
        .unwrap_or_else(|| panic!("seq {seq} not exported"))
}

#[test]
fn a_session_export_holds_its_events_their_texts_and_the_erasure_they_rely_on() {
    let f = fixture();
    let export = build_export(&f.log, &session(&f.a), None).unwrap();
    let seqs: Vec<&Value> = export.events.iter().map(|e| &e.event["seq"]).collect();
    assert_eq!(
        seqs,
        [1, 3, 5, 6],
        "session A's events and the erasure event"
    );
    assert_eq!(export.format, FORMAT);
    assert_eq!(export.public_key, f.log.vkey());
    let erased = f.log.commitment_of(3);
    assert_eq!(
        export.texts[&erased],
        ExportedText::Erased { erased_by_seq: 6 }
    );
    assert!(
        matches!(&export.texts[&f.log.commitment_of(1)], ExportedText::Present { text, .. } if text == "first")
    );
    assert_eq!(export.texts.len(), 3);

    let report = check(&bytes_of(&export), &f.log.vkey(), None, &[]);
    let summary = &report.summary;
    assert_eq!(
        (
            summary.events,
            summary.selected_events,
            summary.erasure_events
        ),
        (4, 3, 1)
    );
    assert_eq!((summary.texts_verified, summary.texts_erased), (2, 1));
    assert_eq!(summary.checkpoint_size, Some(6));
    assert!(summary.key_pinned);
    assert!(report.notes.is_empty(), "{:?}", report.notes);
}

#[test]
fn the_stored_bytes_of_each_event_appear_verbatim_in_the_export() {
    let f = fixture();
    let export = build_export(&f.log, &range(1, 6), None).unwrap();
    let document = String::from_utf8(bytes_of(&export)).unwrap();
    for seq in 1..=6 {
        let stored =
            String::from_utf8(crate::ledger::LogView::event_bytes(&f.log, seq).unwrap()).unwrap();
        assert!(
            document.contains(&stored),
            "event {seq} was not embedded byte for byte"
        );
    }
}

#[test]
fn a_range_export_verifies_and_an_unpinned_key_is_reported() {
    let f = fixture();
    let export = build_export(&f.log, &range(2, 5), None).unwrap();
    let report = verify_export(&bytes_of(&export), None, None);
    assert!(report.passed, "{:#?}", report.problems);
    assert!(!report.summary.key_pinned);
    assert!(
        report.notes.iter().any(|n| n.contains("not pinned")),
        "{:?}",
        report.notes
    );
    // seq 3's text was erased by seq 6, which comes along to prove it.
    assert_eq!(
        (
            report.summary.selected_events,
            report.summary.erasure_events
        ),
        (4, 1)
    );
}

#[test]
fn the_builder_refuses_what_it_cannot_prove() {
    let mut f = fixture();
    let err = build_export(&f.log, &session(&SessionId::random()), None).unwrap_err();
    assert_eq!(err.code(), "empty_session");
    let err = build_export(&f.log, &range(3, 9), None).unwrap_err();
    assert_eq!(err.code(), "invalid_range");
    assert!(build_export(&f.log, &range(0, 1), None).is_err());
    assert!(build_export(&f.log, &range(4, 3), None).is_err());

    // Events after the latest checkpoint.
    f.log.think(&f.b, "after the checkpoint");
    let err = build_export(&f.log, &session(&f.b), None).unwrap_err();
    assert_eq!(err.code(), "no_checkpoint");
    assert!(
        err.to_string().contains("seq 7") && err.to_string().contains("covers 6"),
        "{err}"
    );
    assert!(err.suggestion().contains("thinkledger checkpoint"));
    // Session A is still covered.
    assert!(build_export(&f.log, &session(&f.a), None).is_ok());

    let mut fresh = TestLog::new();
    let s = SessionId::random();
    fresh.think(&s, "never checkpointed");
    let err = build_export(&fresh, &session(&s), None).unwrap_err();
    assert_eq!(err.code(), "no_checkpoint");
    assert!(err.to_string().contains("signed none"), "{err}");

    let mut damaged = fixture();
    let lost = damaged.log.commitment_of(5);
    damaged.log.lose_text(&lost);
    let err = build_export(&damaged.log, &session(&damaged.a), None).unwrap_err();
    assert_eq!(err.code(), "text_missing");
    assert!(err.to_string().contains("seq 5"), "{err}");
}

#[test]
fn an_earlier_checkpoint_is_proven_extended() {
    let mut f = fixture();
    let earlier = f.log.sign_checkpoint();
    f.log.think(&f.a, "fourth");
    f.log.read();
    f.log.sign_checkpoint();
    let export = build_export(&f.log, &session(&f.a), Some(&earlier)).unwrap();
    let consistency = export.consistency.clone().expect("consistency");
    assert_eq!(consistency.from_size, 6);
    let report = check(&bytes_of(&export), &f.log.vkey(), Some(&earlier), &[]);
    assert_eq!(report.summary.extends_checkpoint, Some(6));

    // Without the earlier checkpoint the proof is checked but said to be unanchored.
    let report = check(&bytes_of(&export), &f.log.vkey(), None, &[]);
    assert!(
        report
            .notes
            .iter()
            .any(|n| n.contains("--since-checkpoint")),
        "{:?}",
        report.notes
    );

    // An export without a proof cannot show it extends the reviewer's checkpoint.
    let plain = build_export(&f.log, &session(&f.a), None).unwrap();
    let report = check(
        &bytes_of(&plain),
        &f.log.vkey(),
        Some(&earlier),
        &[("consistency_missing", None)],
    );
    assert_eq!(report.problems[0].path, "$.consistency");

    // A proof from another size does not either.
    let mut g = fixture();
    let size6 = g.log.sign_checkpoint();
    g.log.read();
    let size7 = g.log.sign_checkpoint();
    g.log.read();
    g.log.sign_checkpoint();
    let export = build_export(&g.log, &session(&g.a), Some(&size6)).unwrap();
    let report = check(
        &bytes_of(&export),
        &g.log.vkey(),
        Some(&size7),
        &[("consistency_missing", None)],
    );
    assert_eq!(report.problems[0].path, "$.consistency.fromSize");
    assert!(
        report.problems[0]
            .detail
            .contains("from size 6, not from size 7"),
        "{}",
        report.problems[0].detail
    );
}

#[test]
fn an_earlier_checkpoint_from_elsewhere_or_beyond_the_log_is_refused() {
    let mut f = fixture();
    let other = {
        let mut log = TestLog::new();
        log.read();
        log.sign_checkpoint()
    };
    let err = build_export(&f.log, &session(&f.a), Some(&other)).unwrap_err();
    assert_eq!(err.code(), "foreign_checkpoint");

    // A restored backup (the first 4 events, same key) asked to extend the size-6 checkpoint.
    let six = f.log.sign_checkpoint();
    let mut backup = f.log.prefix(4);
    backup.sign_checkpoint();
    let err = build_export(&backup, &range(1, 2), Some(&six)).unwrap_err();
    assert_eq!(err.code(), "rollback");
    assert!(err.to_string().contains("rolled back"), "{err}");

    // A fork: same prefix of 4, then different events, checkpointed at size 6.
    let mut fork = f.log.prefix(4);
    fork.read();
    fork.read();
    fork.sign_checkpoint();
    fork.read();
    fork.sign_checkpoint();
    let err = build_export(&fork, &range(4, 7), Some(&six)).unwrap_err();
    assert_eq!(err.code(), "fork");
}

#[test]
fn every_byte_of_an_export_matters() {
    let mut log = TestLog::new();
    let s = SessionId::random();
    log.think(&s, "é!");
    log.think(&s, "b");
    let erased = log.commitment_of(2);
    log.erase(&[erased]);
    let earlier = log.sign_checkpoint();
    log.read();
    log.sign_checkpoint();
    let export = build_export(&log, &range(1, 3), Some(&earlier)).unwrap();
    let bytes = bytes_of(&export);
    let key = log.vkey();
    check(&bytes, &key, Some(&earlier), &[]);
    // Every byte is incremented, replaced once more (by its predecessor, its other ASCII case,
    // '0' or a space, in turn) and dropped; the two halves of the file run on two threads.
    let fails = |changed: &[u8], what: &str| {
        let report = verify_export(changed, Some(&key), Some(&earlier));
        assert!(!report.passed, "{what} went unnoticed");
        assert!(
            report.problems.iter().all(|p| !p.detail.is_empty()),
            "{what}: a problem without a reason: {:?}",
            report.problems
        );
    };
    let mutate = |positions: std::ops::Range<usize>| {
        for i in positions {
            let original = bytes[i];
            let other = match i % 4 {
                0 => original.wrapping_sub(1),
                1 => original ^ 0x20,
                2 => b'0',
                _ => b' ',
            };
            for substitute in [original.wrapping_add(1), other] {
                if substitute != original {
                    let mut changed = bytes.clone();
                    changed[i] = substitute;
                    fails(
                        &changed,
                        &format!("byte {i} changed from {original:#04x} to {substitute:#04x}"),
                    );
                }
            }
            let mut dropped = bytes.clone();
            dropped.remove(i);
            fails(&dropped, &format!("dropping byte {i}"));
        }
    };
    let half = bytes.len() / 2;
    std::thread::scope(|scope| {
        scope.spawn(|| mutate(0..half));
        mutate(half..bytes.len());
    });
}

#[test]
fn a_changed_text_or_salt_is_named_with_its_commitment_and_seq() {
    let f = fixture();
    let export = build_export(&f.log, &session(&f.a), None).unwrap();
    let commitment = f.log.commitment_of(5);
    for (member, new) in [("text", json!("thirD")), ("salt", json!("ab".repeat(32)))] {
        let edit = |v: &mut Value| v["texts"][&commitment][member] = new.clone();
        let report = check(
            &tampered(&export, Some(f.log.key()), edit),
            &f.log.vkey(),
            None,
            &[("text_mismatch", Some(5))],
        );
        assert_eq!(report.problems[0].path, format!("$.texts.{commitment}"));
        // Without the key, the export signature no longer matches either.
        check(
            &tampered(&export, None, edit),
            &f.log.vkey(),
            None,
            &[("text_mismatch", Some(5)), ("export_digest_mismatch", None)],
        );
    }
}

#[test]
fn a_changed_event_field_breaks_its_hash() {
    let f = fixture();
    let export = build_export(&f.log, &session(&f.a), None).unwrap();
    let i = at(&export, 3);
    let report = check(
        &tampered(&export, Some(f.log.key()), |v| {
            v["events"][i]["event"]["call"]["tool"] = json!("search")
        }),
        &f.log.vkey(),
        None,
        &[("hash_mismatch", Some(3))],
    );
    assert_eq!(report.problems[0].path, format!("$.events[{i}].event.hash"));

    // Re-hashing the changed event moves the damage to its proof: it is not in the signed tree.
    let mut event = export.events[i].event.clone();
    event["call"]["tool"] = json!("search");
    let mut typed: crate::events::Event = serde_json::from_value(event).unwrap();
    typed.hash = crate::ledger::hash::event_hash(&typed).unwrap();
    let rehashed = serde_json::to_value(&typed).unwrap();
    check(
        &tampered(&export, Some(f.log.key()), |v| {
            v["events"][i]["event"] = rehashed
        }),
        &f.log.vkey(),
        None,
        &[("inclusion_failed", Some(3))],
    );

    // An event moved to another ledger id.
    check(
        &tampered(&export, Some(f.log.key()), |v| {
            v["events"][0]["event"]["ledgerId"] = json!(uuid::Uuid::new_v4().to_string())
        }),
        &f.log.vkey(),
        None,
        &[("foreign_ledger", Some(1)), ("hash_mismatch", Some(1))],
    );
}

#[test]
fn swapped_inclusion_proofs_fail_for_both_events() {
    let f = fixture();
    let export = build_export(&f.log, &session(&f.a), None).unwrap();
    let (i, j) = (at(&export, 1), at(&export, 5));
    let report = check(
        &tampered(&export, Some(f.log.key()), |v| {
            let a = v["events"][i]["inclusionProof"].take();
            let b = std::mem::replace(&mut v["events"][j]["inclusionProof"], a);
            v["events"][i]["inclusionProof"] = b;
        }),
        &f.log.vkey(),
        None,
        &[("inclusion_failed", Some(1)), ("inclusion_failed", Some(5))],
    );
    assert_eq!(
        report.problems[1].path,
        format!("$.events[{j}].inclusionProof")
    );
}

#[test]
fn an_event_dropped_from_a_range_is_a_gap() {
    let f = fixture();
    let export = build_export(&f.log, &range(1, 6), None).unwrap();
    let i = at(&export, 4);
    let report = check(
        &tampered(&export, Some(f.log.key()), |v| {
            v["events"].as_array_mut().unwrap().remove(i);
        }),
        &f.log.vkey(),
        None,
        &[("gap", Some(4))],
    );
    assert!(
        report.problems[0].detail.contains("4..=4"),
        "{}",
        report.problems[0].detail
    );

    // Dropping the last event of the range is a gap too.
    let export = build_export(&f.log, &range(1, 2), None).unwrap();
    check(
        &tampered(&export, Some(f.log.key()), |v| {
            v["events"].as_array_mut().unwrap().pop();
        }),
        &f.log.vkey(),
        None,
        &[("text_unreferenced", None), ("gap", Some(2))],
    );

    // In a session export, dropping an event is not detectable, but a broken chain between
    // neighbours is: swap the order of two events.
    let export = build_export(&f.log, &range(1, 3), None).unwrap();
    check(
        &tampered(&export, Some(f.log.key()), |v| {
            v["events"].as_array_mut().unwrap().swap(0, 1);
        }),
        &f.log.vkey(),
        None,
        &[("seq_order", Some(1))],
    );
}

#[test]
fn a_forged_erasure_mark_is_unbacked() {
    let f = fixture();
    let export = build_export(&f.log, &session(&f.a), None).unwrap();
    let commitment = f.log.commitment_of(5);
    // Claim seq 5's text was erased by the real erasure event (which names another commitment).
    let report = check(
        &tampered(&export, Some(f.log.key()), |v| {
            v["texts"][&commitment] = json!({"erasedBySeq": 6})
        }),
        &f.log.vkey(),
        None,
        &[("erasure_unbacked", Some(6))],
    );
    assert_eq!(
        report.problems[0].path,
        format!("$.texts.{commitment}.erasedBySeq")
    );
    // Or by an event the export does not hold.
    check(
        &tampered(&export, Some(f.log.key()), |v| {
            v["texts"][&commitment] = json!({"erasedBySeq": 4})
        }),
        &f.log.vkey(),
        None,
        &[("erasure_unbacked", Some(4))],
    );
    // Dropping the erasure event leaves its mark unbacked.
    let i = at(&export, 6);
    let erased = f.log.commitment_of(3);
    check(
        &tampered(&export, Some(f.log.key()), |v| {
            v["events"].as_array_mut().unwrap().remove(i);
        }),
        &f.log.vkey(),
        None,
        &[("erasure_unbacked", Some(6))],
    );
    // Dropping a text entirely leaves its reference unaccounted for, at the exact place.
    let report = check(
        &tampered(&export, Some(f.log.key()), |v| {
            v["texts"].as_object_mut().unwrap().remove(&erased);
        }),
        &f.log.vkey(),
        None,
        &[
            ("text_missing", Some(3)),
            ("text_missing", Some(3)),
            ("not_selected", Some(6)),
        ],
    );
    let paths: Vec<&str> = report.problems.iter().map(|p| p.path.as_str()).collect();
    let i3 = at(&export, 3);
    assert_eq!(
        paths[..2],
        [
            format!("$.events[{i3}].event.call.arguments.thought"),
            format!("$.events[{i3}].event.facts[0].text"),
        ]
    );
}

#[test]
fn a_wrong_pinned_key_fails_every_signature() {
    let f = fixture();
    let export = build_export(&f.log, &session(&f.a), None).unwrap();
    let other = TestLog::new();
    check(
        &bytes_of(&export),
        &other.vkey(),
        None,
        &[
            ("key_mismatch", None),
            ("checkpoint_signature", None),
            ("export_signature", None),
        ],
    );
    // A key swapped inside the file, re-signed by the impostor, fails against the pinned key.
    let impostor = NoteSigner::generate(&key_name(f.log.ledger_id())).unwrap();
    let forged = tampered(&export, Some(&impostor), |v| {
        v["publicKey"] = json!(impostor.verifier().to_vkey())
    });
    check(
        &forged,
        &f.log.vkey(),
        None,
        &[("key_mismatch", None), ("export_signature", None)],
    );
    // Unpinned, the impostor's export signature holds but the ledger's checkpoint does not.
    let report = verify_export(&forged, None, None);
    assert_eq!(problems(&report), [("checkpoint_signature", None)]);
}

#[test]
fn a_checkpoint_the_export_does_not_extend_is_a_fork_or_a_rollback() {
    let mut f = fixture();
    let earlier = f.log.sign_checkpoint();
    f.log.read();
    f.log.sign_checkpoint();
    let export = build_export(&f.log, &range(1, 7), Some(&earlier)).unwrap();

    // The reviewer holds a size-6 checkpoint of a fork (same key, different events after seq 4).
    let mut fork = f.log.prefix(4);
    fork.read();
    fork.read();
    let forked = fork.sign_checkpoint();
    let report = check(
        &bytes_of(&export),
        &f.log.vkey(),
        Some(&forked),
        &[("fork", None)],
    );
    assert_eq!(report.problems[0].path, "$.consistency.fromRoot");

    // The reviewer holds a checkpoint larger than the export's: the log was rolled back.
    fork.read();
    fork.read();
    let larger = fork.sign_checkpoint();
    check(
        &bytes_of(&export),
        &f.log.vkey(),
        Some(&larger),
        &[("rollback", None)],
    );

    // A checkpoint signed by another key is refused as such.
    let stranger = {
        let mut log = TestLog::new();
        log.read();
        log.sign_checkpoint()
    };
    check(
        &bytes_of(&export),
        &f.log.vkey(),
        Some(&stranger),
        &[
            ("since_checkpoint_invalid", None),
            ("origin_mismatch", None),
        ],
    );

    // A consistency proof altered by the key holder still fails.
    check(
        &tampered(&export, Some(f.log.key()), |v| {
            v["consistency"]["proof"][0] = json!("00".repeat(32))
        }),
        &f.log.vkey(),
        Some(&earlier),
        &[("consistency_failed", None)],
    );
}

#[test]
fn non_canonical_or_foreign_documents_are_named() {
    let f = fixture();
    let export = build_export(&f.log, &session(&f.a), None).unwrap();
    let pretty = serde_json::to_vec_pretty(&export.to_value().unwrap()).unwrap();
    check(&pretty, &f.log.vkey(), None, &[("not_canonical", None)]);
    check(b"not json", &f.log.vkey(), None, &[("unparseable", None)]);
    check(
        b"[ ]",
        &f.log.vkey(),
        None,
        &[("not_canonical", None), ("malformed", None)],
    );
    check(b"[]", &f.log.vkey(), None, &[("malformed", None)]);
    check(
        &tampered(&export, Some(f.log.key()), |v| {
            v["selection"] = json!({"sessionId": "A"})
        }),
        &f.log.vkey(),
        None,
        &[("malformed", None)],
    );
    check(
        &tampered(&export, Some(f.log.key()), |v| v["extra"] = json!(1)),
        &f.log.vkey(),
        None,
        &[("unknown_member", None)],
    );
    check(
        &tampered(&export, Some(f.log.key()), |v| {
            v["format"] = json!("thinkledger-audit/2")
        }),
        &f.log.vkey(),
        None,
        &[("unknown_format", None)],
    );
    // Empty input and truncations never panic and always fail.
    let bytes = bytes_of(&export);
    for cut in [0, 1, bytes.len() / 2, bytes.len() - 1] {
        assert!(!verify_export(&bytes[..cut], Some(&f.log.vkey()), None).passed);
    }
}

#[test]
fn the_streamed_document_is_byte_for_byte_the_canonical_serialization() {
    // `write_export` writes the document piece by piece (stored event bytes verbatim, the
    // signature spliced in); it must equal RFC 8785 over the whole typed document.
    let f = fixture();
    let mut log = f.log;
    let earlier = log.sign_checkpoint();
    log.read();
    log.sign_checkpoint();
    for (selection, since) in [
        (session(&f.a), None),
        (session(&f.b), Some(earlier.as_str())),
        (range(1, 7), Some(earlier.as_str())),
        (range(4, 4), None),
    ] {
        let options = ExportOptions {
            since_checkpoint: since,
            generated_at: "2026-11-21T09:30:00.000000Z".to_owned(),
            progress: None,
            cancelled: None,
            timestamps: &[],
        };
        let mut streamed = Vec::new();
        let written = write_export(&log, &selection, &options, &mut streamed).unwrap();
        assert_eq!(written.bytes, streamed.len() as u64);
        let export: AuditExport = serde_json::from_slice(&streamed).unwrap();
        assert_eq!(written.events, export.events.len() as u64);
        assert_eq!(bytes_of(&export), streamed, "{selection:?}");
        let report = verify_export(&streamed, Some(&log.vkey()), since);
        assert!(report.passed, "{selection:?}: {:#?}", report.problems);
    }
}

#[test]
fn whitespace_or_repeats_anywhere_are_not_canonical_but_the_signature_still_holds() {
    let f = fixture();
    let export = build_export(&f.log, &range(1, 6), None).unwrap();
    let bytes = String::from_utf8(bytes_of(&export)).unwrap();
    let key = f.log.vkey();
    // Inside the events array, between elements, inside an element, at the top level, and
    // after the document: each is reported once, first, and the signature (over the canonical
    // form) still verifies.
    for (from, to) in [
        ("\"events\":[{", "\"events\":[ {"),
        ("]},{\"event\"", "]}, {\"event\""),
        ("{\"event\":{", "{\"event\": {"),
        (",\"format\":", ", \"format\":"),
    ] {
        let changed = bytes.replacen(from, to, 1);
        assert_ne!(changed, bytes, "{from}");
        check(changed.as_bytes(), &key, None, &[("not_canonical", None)]);
    }
    check(
        format!("{bytes}\n").as_bytes(),
        &key,
        None,
        &[("not_canonical", None)],
    );
    // Members out of order: `texts` moved first.
    let texts_at = bytes.find(",\"texts\":").unwrap();
    let texts = &bytes[texts_at + 1..bytes.len() - 1];
    let reordered = format!("{{{texts},{}}}", &bytes[1..texts_at]);
    check(reordered.as_bytes(), &key, None, &[("not_canonical", None)]);
    // A repeated member (the last one counts, as for any JSON parser).
    let repeated = format!("{},\"texts\":{{}}}}", &bytes[..bytes.len() - 1]);
    let report = verify_export(repeated.as_bytes(), Some(&key), None);
    assert_eq!(report.problems[0].code, "not_canonical");
    assert!(!report.passed);
}

#[test]
fn the_fuzz_seeds_still_pass() {
    // The seed exports of tests/fuzz/corpus/verify_export were written by an earlier build:
    // the format is unchanged, so they still verify (first byte: whether the key is pinned).
    const PINNED: &str = "thinkledger/02d6a34c-2991-43ba-9edc-257bf334c99b+87ac4dca+AfqmlfojZCSAhNJRb0zS1aKSI2sOfzcxfxJHnzRxkX5m";
    let corpus =
        std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fuzz/corpus/verify_export");
    let mut seeds = 0;
    for entry in std::fs::read_dir(corpus).unwrap() {
        let data = std::fs::read(entry.unwrap().path()).unwrap();
        let (flag, document) = data.split_first().unwrap();
        let report = verify_export(document, (flag & 1 == 1).then_some(PINNED), None);
        assert!(report.passed, "{:#?}", report.problems);
        seeds += 1;
    }
    assert!(seeds >= 2);
}

#[test]
fn an_earlier_checkpoint_of_the_same_size_is_proven_by_an_empty_proof_of_equal_roots() {
    let mut f = fixture();
    let same = f.log.sign_checkpoint();
    let export = build_export(&f.log, &session(&f.a), Some(&same)).unwrap();
    let consistency = export.consistency.clone().expect("consistency");
    assert_eq!((consistency.from_size, consistency.proof.len()), (6, 0));
    let report = check(&bytes_of(&export), &f.log.vkey(), Some(&same), &[]);
    assert_eq!(report.summary.extends_checkpoint, Some(6));
    let report = check(&bytes_of(&export), &f.log.vkey(), None, &[]);
    assert_eq!(report.notes.len(), 1, "{:?}", report.notes);

    // The empty proof holds only between equal roots, and no other proof holds between equal
    // sizes.
    let key = f.log.key();
    let other_root = tampered(&export, Some(key), |v| {
        v["consistency"]["fromRoot"] = json!("ab".repeat(32));
    });
    let report = check(
        &other_root,
        &f.log.vkey(),
        None,
        &[("consistency_failed", None)],
    );
    assert!(
        report.problems[0].detail.contains("root"),
        "{}",
        report.problems[0].detail
    );
    let padded = tampered(&export, Some(key), |v| {
        v["consistency"]["proof"] = json!(["ab".repeat(32)]);
    });
    check(
        &padded,
        &f.log.vkey(),
        None,
        &[("consistency_failed", None)],
    );
}

#[test]
fn a_failed_proof_does_not_hide_that_it_is_from_another_tree() {
    let mut g = fixture();
    let size6 = g.log.sign_checkpoint();
    g.log.read();
    let size7 = g.log.sign_checkpoint();
    g.log.read();
    g.log.sign_checkpoint();
    let export = build_export(&g.log, &session(&g.a), Some(&size6)).unwrap();
    let key = g.log.key();
    let broken = tampered(&export, Some(key), |v| {
        v["consistency"]["proof"][0] = json!("ab".repeat(32));
    });
    check(
        &broken,
        &g.log.vkey(),
        Some(&size7),
        &[("consistency_failed", None), ("consistency_missing", None)],
    );
    let forked = tampered(&export, Some(key), |v| {
        v["consistency"]["fromRoot"] = json!("ab".repeat(32));
    });
    let report = check(
        &forked,
        &g.log.vkey(),
        Some(&size6),
        &[("consistency_failed", None), ("fork", None)],
    );
    assert_eq!(report.summary.extends_checkpoint, None);
}

#[test]
fn an_unparseable_public_key_is_also_not_the_pinned_key() {
    let f = fixture();
    let export = build_export(&f.log, &session(&f.a), None).unwrap();
    let bad = tampered(&export, Some(f.log.key()), |v| {
        v["publicKey"] = json!("not a key");
    });
    let report = check(
        &bad,
        &f.log.vkey(),
        None,
        &[("bad_public_key", None), ("key_mismatch", None)],
    );
    assert!(
        report.problems[1].detail.contains("not a key"),
        "{}",
        report.problems[1].detail
    );
}

#[test]
fn a_signature_by_another_key_does_not_hide_a_changed_document() {
    let f = fixture();
    let export = build_export(&f.log, &session(&f.a), None).unwrap();
    let changed = tampered(&export, None, |v| {
        v["generatedAt"] = json!("2026-11-22T00:00:00.000000Z");
    });
    check(
        &changed,
        &TestLog::new().vkey(),
        None,
        &[
            ("key_mismatch", None),
            ("checkpoint_signature", None),
            ("export_signature", None),
            ("export_digest_mismatch", None),
        ],
    );
    // Unchanged, only the signature fails; changed under the right key, only the digest.
    check(
        &bytes_of(&export),
        &TestLog::new().vkey(),
        None,
        &[
            ("key_mismatch", None),
            ("checkpoint_signature", None),
            ("export_signature", None),
        ],
    );
    check(
        &changed,
        &f.log.vkey(),
        None,
        &[("export_digest_mismatch", None)],
    );
}

#[test]
fn a_kept_checkpoint_saved_with_a_final_newline_or_crlf_is_read_as_signed() {
    let mut f = fixture();
    let earlier = f.log.sign_checkpoint();
    f.log.read();
    f.log.sign_checkpoint();
    let crlf = earlier.replace('\n', "\r\n");
    for kept in [format!("{earlier}\n"), crlf.clone(), format!("{crlf}\r\n")] {
        let export = build_export(&f.log, &session(&f.a), Some(&kept)).unwrap();
        let report = check(&bytes_of(&export), &f.log.vkey(), Some(&kept), &[]);
        assert_eq!(report.summary.extends_checkpoint, Some(6), "{kept:?}");
    }
}

/// A change made to an event's JSON before it is hashed.
type EventEdit = dyn FnOnce(&mut Value);

/// A log of one event, recorded with `edit` applied, exported as the range 1..=1 and verified.
fn verify_one_edited(edit: impl FnOnce(&mut Value)) -> ExportReport {
    let mut log = TestLog::new();
    log.record_edited(edit);
    log.sign_checkpoint();
    let export = build_export(&log, &range(1, 1), None).unwrap();
    let report = verify_export(&bytes_of(&export), Some(&log.vkey()), None);
    assert_readable(&report);
    report
}

#[test]
fn known_members_must_have_their_documented_form() {
    let cases: Vec<(&str, Box<EventEdit>)> = vec![
        ("kind", Box::new(|e| e["kind"] = json!("Other"))),
        (
            "recordedAt",
            Box::new(|e| e["recordedAt"] = json!("yesterday")),
        ),
        (
            "actor.transport",
            Box::new(|e| e["actor"]["transport"] = json!("carrier-pigeon")),
        ),
        (
            "outcome.responseDigest",
            Box::new(|e| e["outcome"]["responseDigest"] = json!("nothex")),
        ),
        (
            "provenance.kind",
            Box::new(|e| e["provenance"]["kind"] = json!("magic")),
        ),
        (
            "call.arguments",
            Box::new(|e| e["call"]["arguments"] = json!(5)),
        ),
        (
            "call.idempotencyKey",
            Box::new(|e| e["call"]["idempotencyKey"] = json!("")),
        ),
        (
            "facts[0].reason",
            Box::new(|e| {
                e["facts"] = json!([{"type": "SessionClosed",
                    "sessionId": SessionId::random().as_str(), "reason": "bored"}]);
            }),
        ),
        (
            "facts[0].type",
            Box::new(|e| e["facts"] = json!([{"type": 7}])),
        ),
    ];
    for (member, edit) in cases {
        let report = verify_one_edited(edit);
        assert_eq!(
            problems(&report),
            [("event_malformed", Some(1))],
            "{member}: {:#?}",
            report.problems
        );
        assert_eq!(
            report.problems[0].path,
            format!("$.events[0].event.{member}")
        );
    }
}

#[test]
fn unknown_members_and_fact_types_are_tolerated_and_other_versions_named() {
    let tolerated: Vec<Box<EventEdit>> = vec![
        Box::new(|e| e["addedLater"] = json!({"any": ["thing"]})),
        Box::new(|e| e["actor"]["addedLater"] = json!(1)),
        Box::new(|e| e["outcome"]["addedLater"] = json!(null)),
        Box::new(|e| {
            e["facts"] = json!([{"type": "SessionClosed",
                "sessionId": SessionId::random().as_str(), "reason": "reset", "addedLater": 1}]);
        }),
        Box::new(|e| e["facts"] = json!([{"type": "ThoughtsMerged", "count": 4_294_967_296u64}])),
        Box::new(|e| e["actor"]["transport"] = json!("cli")),
        Box::new(|e| e["outcome"]["decideMicros"] = json!(9_007_199_254_740_991u64)),
    ];
    for edit in tolerated {
        let report = verify_one_edited(edit);
        assert!(report.passed, "{:#?}", report.problems);
    }
    let report = verify_one_edited(|e| {
        e["v"] = json!(2);
        e["kind"] = json!("SomethingElse");
    });
    assert_eq!(problems(&report), [("unknown_version", Some(1))]);
    assert_eq!(
        report.problems[0].detail,
        "the envelope version is 2; this verifier reads version 1"
    );
}

#[test]
fn a_build_stops_with_how_far_it_got_once_its_caller_cancels() {
    let f = fixture();
    let selection = Selection::Session {
        session_id: f.a.clone(),
    };
    let asked = std::cell::Cell::new(0u32);
    let cancelled = || {
        asked.set(asked.get() + 1);
        asked.get() >= 2
    };
    let built = build_export_with(
        &f.log,
        &selection,
        &ExportOptions {
            since_checkpoint: None,
            generated_at: "2026-11-25T00:00:00.000000Z".to_owned(),
            progress: None,
            cancelled: Some(&cancelled),
            timestamps: &[],
        },
    );
    match built {
        Err(AuditError::Cancelled { done: 2, total }) => assert!(total > 2, "{total}"),
        other => panic!("expected a cancelled build, got {:?}", other.map(|_| ())),
    }
}
