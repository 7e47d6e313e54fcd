//! Verification of a stored ledger: gap-free seqs, canonical bytes, the hash chain, the ledger
//! id, and every stored text against its commitment.
//!
//! Reads through the [`Store`] trait only and reports every problem with the seq it concerns,
//! rather than stopping at the first, so a reviewer sees the whole damage at once.

use serde::{Deserialize, Serialize};
use serde_json::Value;

use super::LedgerError;
use super::canonical::canonical_bytes;
use std::collections::HashMap;

use super::checkpoint::NoteVerifier;
use super::hash::{GENESIS_PREV_HASH, event_value_hash, parse_hex32, text_commitment};
use super::merkle::{Blake3Hasher, MerkleTree};
use super::notary::check_checkpoints;
use super::store::Store;
use super::view::SignedCheckpoint;
use crate::events::{ENVELOPE_VERSION, Event, Fact};

/// One thing found wrong.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Problem {
    /// The event concerned.
    pub seq: u64,
    /// Stable code: `gap`, `unparseable`, `seq_mismatch`, `not_canonical`, `unknown_version`,
    /// `foreign_ledger`, `broken_link`, `hash_mismatch`, `text_missing`, `text_mismatch`,
    /// `text_not_erased`, and for signed checkpoints (`seq` = the checkpoint's size)
    /// `checkpoint_signature`, `checkpoint_beyond_log`, `checkpoint_mismatch`,
    /// `checkpoints_inconsistent`, `checkpoint_unchecked`.
    pub code: &'static str,
    pub detail: String,
}

/// The result of [`verify`].
#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct VerifyReport {
    pub ledger_id: Option<String>,
    /// Events examined.
    pub events: u64,
    /// Hash of the last event, when there is one.
    pub head_hash: Option<String>,
    /// Text references (one per place a commitment appears) whose stored text was re-hashed
    /// and matched its commitment.
    pub texts_verified: u64,
    /// Text references whose text was erased by a recorded erasure event (and is gone).
    pub texts_erased: u64,
    /// Signed checkpoints checked against the log (signature, root at their size, order).
    pub checkpoints_verified: u64,
    pub problems: Vec<Problem>,
}

impl VerifyReport {
    pub fn is_intact(&self) -> bool {
        self.problems.is_empty()
    }
}

/// Verifies everything in `store` (no checkpoints).
pub fn verify<S: Store + ?Sized>(store: &S) -> Result<VerifyReport, LedgerError> {
    verify_with_checkpoints(store, &[], &[], None)
}

/// Verifies everything in `store`, and signed checkpoints against the log: the ledger's own
/// (`checkpoints`, in the order signed: each must also extend the one before) and any `kept`
/// by the verifier elsewhere, each signed by `verifier`, within the log, with the log's root at
/// its size. A kept checkpoint catches a log rolled back to an older, internally consistent
/// state, which the ledger's own checkpoints (rolled back with it) cannot.
pub fn verify_with_checkpoints<S: Store + ?Sized>(
    store: &S,
    checkpoints: &[SignedCheckpoint],
    kept: &[SignedCheckpoint],
    verifier: Option<&NoteVerifier>,
) -> Result<VerifyReport, LedgerError> {
    verify_with_progress(store, checkpoints, kept, verifier, &|_, _| {})
}

/// [`verify_with_checkpoints`], calling `progress(events done, last seq)` as it goes.
pub fn verify_with_progress<S: Store + ?Sized>(
    store: &S,
    checkpoints: &[SignedCheckpoint],
    kept: &[SignedCheckpoint],
    verifier: Option<&NoteVerifier>,
    progress: &dyn Fn(u64, u64),
) -> Result<VerifyReport, LedgerError> {
    let last = store.last_seq()?.unwrap_or(0);
    let meta = store.meta()?;
    let ledger_id = meta.as_ref().map(|m| m.ledger_id.clone());
    let mut report = VerifyReport {
        ledger_id: ledger_id.clone(),
        events: 0,
        head_hash: None,
        texts_verified: 0,
        texts_erased: 0,
        checkpoints_verified: 0,
        problems: Vec::new(),
    };
    // Leaf data of the Merkle tree: each event's stored hash as found. `None` once an event's
    // hash cannot be read, from which point checkpoints cannot be judged.
    let mut leaves: Option<MerkleTree<Blake3Hasher>> = Some(MerkleTree::new(Blake3Hasher));
    // Texts found missing, judged once every erasure is known; texts present, to flag erased
    // ones whose bytes are still on disk.
    let mut missing: Vec<(u64, String)> = Vec::new();
    let mut present: Vec<(u64, String)> = Vec::new();
    let mut erased: HashMap<String, u64> = HashMap::new();
    let mut expected_seq = 1u64;
    // The stored hash of the previous event, as found (not as recomputed), so one altered event
    // is reported once and its successor still links. `None` when the previous event's bytes
    // named no hash at all: its successor's link cannot be judged and is not blamed.
    let mut prev_hash = Some(GENESIS_PREV_HASH.to_owned());
    for item in store.events_from(1) {
        let (key_seq, bytes) = item?;
        report.events += 1;
        if report.events.is_multiple_of(1024) {
            progress(report.events, last);
        }
        if key_seq != expected_seq {
            report.problems.push(Problem {
                seq: expected_seq,
                code: "gap",
                detail: format!("events {expected_seq}..{} are missing", key_seq - 1),
            });
            // The gap explains a link that cannot hold: the event after it is not blamed.
            prev_hash = None;
        }
        expected_seq = key_seq + 1;
        let problem = |code, detail: String| Problem {
            seq: key_seq,
            code,
            detail,
        };
        let value: Value = match serde_json::from_slice(&bytes) {
            Ok(v) => v,
            Err(e) => {
                report
                    .problems
                    .push(problem("unparseable", format!("not JSON: {e}")));
                prev_hash = None;
                leaves = None;
                continue;
            }
        };
        match canonical_bytes(&value) {
            Ok(canonical) if canonical == bytes => {}
            Ok(_) => report.problems.push(problem(
                "not_canonical",
                "stored bytes are not in RFC 8785 form".into(),
            )),
            Err(e) => report
                .problems
                .push(problem("not_canonical", e.to_string())),
        }
        let event: Event = match Event::deserialize(&value) {
            Ok(e) => e,
            Err(e) => {
                report
                    .problems
                    .push(problem("unparseable", format!("not an event: {e}")));
                prev_hash = value.get("hash").and_then(Value::as_str).map(str::to_owned);
                leaves = None;
                continue;
            }
        };
        if event.seq != key_seq {
            report.problems.push(problem(
                "seq_mismatch",
                format!("stored under seq {key_seq} but says seq {}", event.seq),
            ));
        }
        if event.v == 0 || event.v > ENVELOPE_VERSION {
            report
                .problems
                .push(problem("unknown_version", format!("envelope v{}", event.v)));
        }
        if ledger_id.as_deref().is_some_and(|id| id != event.ledger_id) {
            report.problems.push(problem(
                "foreign_ledger",
                format!("belongs to ledger {}", event.ledger_id),
            ));
        }
        if prev_hash.as_ref().is_some_and(|p| *p != event.prev_hash) {
            report.problems.push(problem(
                "broken_link",
                "prevHash does not equal the hash of the event before it".into(),
            ));
        }
        // Over the stored object itself, every member (known or not) but `hash`: a member
        // slipped in that `Event` would ignore still changes the hash.
        match event_value_hash(&value) {
            Ok(h) if h == event.hash => {}
            Ok(h) => report.problems.push(problem(
                "hash_mismatch",
                format!("content hashes to {h}, event says {}", event.hash),
            )),
            Err(e) => report
                .problems
                .push(problem("hash_mismatch", e.to_string())),
        }
        for commitment in text_refs(&value) {
            let Some(key) = parse_hex32(&commitment) else {
                report.problems.push(problem(
                    "text_mismatch",
                    format!("bad commitment {commitment}"),
                ));
                continue;
            };
            match store.text(&key)? {
                None => missing.push((key_seq, commitment)),
                Some(record) => {
                    if text_commitment(&record.salt, &record.text) == commitment {
                        report.texts_verified += 1;
                        present.push((key_seq, commitment));
                    } else {
                        report.problems.push(problem(
                            "text_mismatch",
                            format!("stored text does not match commitment {commitment}"),
                        ));
                    }
                }
            }
        }
        for fact in &event.facts {
            if let Fact::TextsErased { commitments, .. } = fact {
                for c in commitments {
                    erased.entry(c.clone()).or_insert(key_seq);
                }
            }
        }
        match (leaves.as_mut(), parse_hex32(&event.hash)) {
            (Some(tree), Some(leaf)) => {
                tree.push_leaf(&leaf);
            }
            _ => leaves = None,
        }
        // An event out of place says nothing about the link of the one after it.
        prev_hash = (event.seq == key_seq).then(|| event.hash.clone());
        report.head_hash = Some(event.hash);
    }
    for (seq, commitment) in missing {
        if erased.contains_key(&commitment) {
            report.texts_erased += 1;
        } else {
            report.problems.push(Problem {
                seq,
                code: "text_missing",
                detail: format!("no stored text for {commitment}"),
            });
        }
    }
    for (seq, commitment) in present {
        if let Some(by) = erased.get(&commitment) {
            report.problems.push(Problem {
                seq,
                code: "text_not_erased",
                detail: format!(
                    "text {commitment} was erased by event {by} but is still stored; opening \
                     the ledger finishes the erasure"
                ),
            });
        }
    }
    if !checkpoints.is_empty() || !kept.is_empty() {
        match (&leaves, verifier) {
            (Some(tree), Some(verifier)) => {
                let mut problems = check_checkpoints(checkpoints, verifier, tree);
                for one in kept {
                    problems.extend(check_checkpoints(std::slice::from_ref(one), verifier, tree));
                }
                let failed: std::collections::BTreeSet<u64> =
                    problems.iter().map(|p| p.size).collect();
                report.checkpoints_verified = checkpoints
                    .iter()
                    .chain(kept)
                    .filter(|c| !failed.contains(&c.checkpoint.size()))
                    .count() as u64;
                report
                    .problems
                    .extend(problems.into_iter().map(|p| Problem {
                        seq: p.size,
                        code: p.code,
                        detail: format!("checkpoint of size {}: {}", p.size, p.detail),
                    }));
            }
            _ => report.problems.push(Problem {
                seq: report.events,
                code: "checkpoint_unchecked",
                detail: if verifier.is_none() {
                    "no public key to check the checkpoints with".into()
                } else {
                    "the log is too damaged to rebuild its Merkle tree".into()
                },
            }),
        }
    }
    report.problems.sort_by_key(|p| p.seq);
    Ok(report)
}

/// Every text commitment in an event: the values of objects of the exact form
/// `{"textCommitment": "<hex>"}`, wherever they sit.
pub fn text_refs(value: &Value) -> Vec<String> {
    let mut out = Vec::new();
    collect_text_refs(value, &mut out);
    out
}

fn collect_text_refs(value: &Value, out: &mut Vec<String>) {
    match value {
        Value::Object(map) => {
            if map.len() == 1
                && let Some(Value::String(c)) = map.get("textCommitment")
            {
                out.push(c.clone());
                return;
            }
            map.values().for_each(|v| collect_text_refs(v, out));
        }
        Value::Array(items) => items.iter().for_each(|v| collect_text_refs(v, out)),
        _ => {}
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;
    use crate::events::Event;
    use crate::ledger::hash::{GENESIS_PREV_HASH, event_hash};
    use crate::ledger::store::{Batch, LedgerMeta, MemStore, StagedEvent};

    /// A store holding `n` chained, valid events.
    fn chain(n: u64) -> MemStore {
        let mut store = MemStore::default();
        store
            .init_meta(&LedgerMeta {
                ledger_id: "l".into(),
                created_at: "t".into(),
                format: "thinkledger/1".into(),
            })
            .unwrap();
        let mut prev = GENESIS_PREV_HASH.to_owned();
        for seq in 1..=n {
            let mut event: Event = serde_json::from_value(json!({
                "v": 1, "kind": "ToolCallRecorded", "seq": seq, "ledgerId": "l", "sessionId": null,
                "recordedAt": "2026-01-01T00:00:00.000000Z",
                "actor": {"principal": "local", "transport": "stdio", "clientName": null, "clientVersion": null},
                "call": {"tool": "search", "arguments": {}}, "facts": [],
                "outcome": {"status": "ok", "responseDigest": "00", "error": null},
                "provenance": {"kind": "rules", "name": "t", "version": "1"},
                "prevHash": prev, "hash": ""
            }))
            .unwrap();
            event.hash = event_hash(&event).unwrap();
            prev = event.hash.clone();
            let bytes = canonical_bytes(&serde_json::to_value(&event).unwrap()).unwrap();
            store
                .append_batch(&Batch {
                    events: vec![StagedEvent {
                        seq,
                        bytes,
                        session: None,
                    }],
                    texts: vec![],
                })
                .unwrap();
        }
        store
    }

    fn check(store: &MemStore, expect: &[(u64, &str)]) {
        let report = verify(store).unwrap();
        let got: Vec<(u64, &str)> = report.problems.iter().map(|p| (p.seq, p.code)).collect();
        assert_eq!(got, expect, "{:?}", report.problems);
    }

    fn edit(store: &mut MemStore, seq: u64, f: impl Fn(String) -> String) {
        let bytes = store.event_bytes(seq).unwrap().unwrap();
        store.tamper_event_bytes(seq, f(String::from_utf8(bytes).unwrap()).as_bytes());
    }

    #[test]
    fn an_intact_chain_verifies() {
        check(&chain(4), &[]);
        assert_eq!(verify(&chain(4)).unwrap().events, 4);
    }

    #[test]
    fn each_kind_of_damage_is_named_at_its_seq_only() {
        let mut store = chain(5);
        edit(&mut store, 2, |s| s.replace("search", "seArch"));
        check(&store, &[(2, "hash_mismatch")]);

        // A member the envelope does not know, slipped in where canonical order puts it: the
        // bytes stay canonical and `Event` would ignore it, but the hash covers it.
        let mut store = chain(5);
        edit(&mut store, 2, |s| {
            s.replacen("\"facts\":", "\"extra\":\"forged\",\"facts\":", 1)
        });
        check(&store, &[(2, "hash_mismatch")]);

        let mut store = chain(5);
        edit(&mut store, 3, |s| s.replacen('{', "[", 1));
        check(&store, &[(3, "unparseable")]);

        let mut store = chain(5);
        edit(&mut store, 3, |s| {
            s.replace("\"kind\":\"ToolCallRecorded\",", "")
        });
        check(&store, &[(3, "unparseable")]);

        let mut store = chain(5);
        store.remove_event(4);
        check(&store, &[(4, "gap")]);

        let mut store = chain(5);
        edit(&mut store, 2, |s| s.replace("{\"actor\"", "{ \"actor\""));
        check(&store, &[(2, "not_canonical")]);
    }
}
