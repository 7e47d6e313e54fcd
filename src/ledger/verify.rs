//! Verification of a stored ledger: gap-free seqs, canonical bytes, the hash chain, the ledger
//! id, and every stored text against its commitment.
//!
//! Reads through the [`Store`] trait only and reports every problem with the seq it concerns,
//! rather than stopping at the first, so a reviewer sees the whole damage at once. What one
//! event says about itself is checked in parallel (`event_check`); what spans events
//! is checked here, in seq order.

use std::collections::BTreeMap;
use std::sync::{Mutex, mpsc};

// Keyed by commitments read from the log: seeded, so a crafted ledger cannot pick collisions,
// and several times cheaper than SipHash on 32-byte keys (two million of them at a million
// events).
use foldhash::HashMap;
use serde::Serialize;
use serde_json::Value;

use super::LedgerError;
use super::chain;
use super::checkpoint::NoteVerifier;
use super::event_check::{Body, CheckedEvent, TextRefFound, check_event};
use super::hash::{hex, text_commitment_bytes};
use super::merkle::{Blake3Hasher, MerkleTree, NodeHash};
use super::notary::check_checkpoints;
use super::problem_code::LogProblem;
use super::store::{Store, TextIter, TextRecord};
use super::view::SignedCheckpoint;
use crate::events::ENVELOPE_VERSION;

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
    pub code: LogProblem,
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

/// One worker: checks what it is handed ([`Work::check`]) and hands the result back, until the
/// work runs out or nobody listens.
fn work(work_rx: &Mutex<mpsc::Receiver<Work>>, done_tx: &mpsc::SyncSender<Done>) {
    loop {
        let next = match work_rx.lock() {
            Ok(rx) => rx.recv(),
            Err(_) => return,
        };
        let Ok(work) = next else { return };
        if done_tx.send(work.check()).is_err() {
            return;
        }
    }
}

/// The workers' results folded into the [`Chain`]: text statuses as they come, event batches
/// put back in seq order.
fn fold_in_order(done_rx: mpsc::Receiver<Done>, ledger_id: Option<String>) -> Chain {
    let mut chain = Chain::new(ledger_id);
    let mut pending = BTreeMap::new();
    let mut next = 0u64;
    for done in done_rx {
        match done {
            Done::Texts(statuses) => chain.texts.extend(statuses),
            Done::Events(n, checked) => {
                pending.insert(n, checked);
                while let Some(checked) = pending.remove(&next) {
                    for (seq, event) in checked {
                        chain.event(seq, event);
                    }
                    next += 1;
                }
            }
        }
    }
    chain
}

/// The stored texts handed to the workers in batches of [`TEXT_BATCH`]. A failed send means a
/// worker stopped, which only a panic does: the join of the fold says so.
fn send_texts(texts: TextIter<'_>, work_tx: &mpsc::SyncSender<Work>) {
    let mut batch = Vec::with_capacity(TEXT_BATCH);
    for text in texts {
        batch.push(text);
        if batch.len() == TEXT_BATCH {
            let full = std::mem::replace(&mut batch, Vec::with_capacity(TEXT_BATCH));
            if work_tx.send(Work::Texts(full)).is_err() {
                break;
            }
        }
    }
    if !batch.is_empty() {
        let _ = work_tx.send(Work::Texts(batch));
    }
}

/// The stored events read in seq order and handed to the workers in numbered batches of
/// [`BATCH`], with `progress(events read, last)` every 1024 events. The read error that ended
/// the reading, if one did.
fn send_events<S: Store + ?Sized>(
    store: &S,
    work_tx: &mpsc::SyncSender<Work>,
    progress: &dyn Fn(u64, u64),
    last: u64,
) -> Option<LedgerError> {
    let mut read_error = None;
    let mut batch = Vec::with_capacity(BATCH);
    let mut n = 0u64;
    let mut read = 0u64;
    for item in store.events_from(1) {
        match item {
            Ok(event) => batch.push(event),
            Err(e) => {
                read_error = Some(e);
                break;
            }
        }
        read += 1;
        if read.is_multiple_of(1024) {
            progress(read, last);
        }
        if batch.len() == BATCH {
            let full = std::mem::replace(&mut batch, Vec::with_capacity(BATCH));
            if work_tx.send(Work::Events(n, full)).is_err() {
                break;
            }
            n += 1;
        }
    }
    if !batch.is_empty() {
        let _ = work_tx.send(Work::Events(n, batch));
    }
    read_error
}

/// The signed checkpoints checked against the log's Merkle tree (rebuilt from `leaves`): each
/// problem added to `report`, and the count of those that verified; without a key, or without
/// a tree, that they could not be checked.
fn check_against_tree(
    report: &mut VerifyReport,
    leaves: Option<Vec<NodeHash>>,
    checkpoints: &[SignedCheckpoint],
    kept: &[SignedCheckpoint],
    verifier: Option<&NoteVerifier>,
) {
    let tree = leaves.map(|leaves| MerkleTree::from_leaf_hashes(Blake3Hasher, leaves));
    match (&tree, verifier) {
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
            code: LogProblem::CheckpointUnchecked,
            detail: if verifier.is_none() {
                "no public key to check the checkpoints with: give the ledger's with --pubkey (as `thinkledger key` printed it)".into()
            } else {
                "the log is too damaged to rebuild its Merkle tree".into()
            },
        }),
    }
}

/// [`verify_with_checkpoints`], calling `progress(events read, last seq)` as it goes.
///
/// One pass, the calling thread reading and one worker per core checking. The events are read
/// in seq order and handed over in batches, each worker parsing, canonicalizing and hashing
/// them ([`check_event`]); then the stored texts, asked for first so that the store can find
/// them meanwhile, are read in file order and handed to the workers to re-hash. The events'
/// results are put back in seq order for the checks that span events (gaps, links, the tree);
/// text references are judged once every text's status is in. Queues
/// are bounded, so memory does not grow with the ledger beyond the text statuses, the text
/// references and the Merkle leaves.
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
    let texts = store.texts_in_file_order()?;
    let workers = std::thread::available_parallelism().map_or(1, std::num::NonZero::get);
    let (work_tx, work_rx) = mpsc::sync_channel::<Work>(2 * workers);
    let work_rx = Mutex::new(work_rx);
    let chain = std::thread::scope(|scope| {
        let (done_tx, done_rx) = mpsc::sync_channel::<Done>(2 * workers);
        for _ in 0..workers {
            let work_rx = &work_rx;
            let done_tx = done_tx.clone();
            scope.spawn(move || work(work_rx, &done_tx));
        }
        drop(done_tx);
        let ledger_id = ledger_id.clone();
        let consumer = scope.spawn(move || fold_in_order(done_rx, ledger_id));
        // Events first: the store may still be walking its text index (see
        // `Store::texts_in_file_order`), which the texts wait for.
        let read_error = send_events(store, &work_tx, progress, last);
        if read_error.is_none() {
            send_texts(texts, &work_tx);
        }
        drop(work_tx);
        let chain = consumer
            .join()
            .map_err(|_| LedgerError::Io(std::io::Error::other("a verification thread failed")))?;
        match read_error {
            Some(e) => Err(e),
            None => Ok(chain),
        }
    })?;
    let (mut report, leaves) = chain.finish()?;
    if !checkpoints.is_empty() || !kept.is_empty() {
        check_against_tree(&mut report, leaves, checkpoints, kept, verifier);
    }
    report.problems.sort_by_key(|p| p.seq);
    Ok(report)
}

/// Events handed to a worker at once: few enough to keep every core busy to the end, enough
/// that channel traffic stays small beside the work.
const BATCH: usize = 256;
/// Texts handed to a worker at once: each takes a few hash blocks, far less than an event.
const TEXT_BATCH: usize = 1024;

/// A stored text as read, with the commitment it is indexed under (see
/// [`Store::texts_in_file_order`]).
type StoredText = ([u8; 32], Result<Option<TextRecord>, LedgerError>);

/// What a worker is handed.
enum Work {
    /// Stored texts as read, each with the commitment it is indexed under.
    Texts(Vec<StoredText>),
    /// The `n`th batch of stored events, `(key seq, bytes)`.
    Events(u64, Vec<(u64, Vec<u8>)>),
}

/// What a worker hands back.
enum Done {
    /// Each text's status, or why it could not be read.
    Texts(Vec<([u8; 32], Result<TextStatus, LedgerError>)>),
    /// The `n`th batch of events, checked.
    Events(u64, Vec<(u64, CheckedEvent)>),
}

impl Work {
    fn check(self) -> Done {
        match self {
            Self::Texts(texts) => Done::Texts(
                texts
                    .into_iter()
                    .map(|(commitment, record)| {
                        let status = record.map(|record| match record {
                            None => TextStatus::Gone,
                            Some(record) => {
                                if text_commitment_bytes(&record.salt, &record.text) == commitment {
                                    TextStatus::Matches
                                } else {
                                    TextStatus::Differs
                                }
                            }
                        });
                        (commitment, status)
                    })
                    .collect(),
            ),
            Self::Events(n, events) => Done::Events(
                n,
                events
                    .into_iter()
                    .map(|(seq, bytes)| (seq, check_event(&bytes)))
                    .collect(),
            ),
        }
    }
}

/// What became of a stored text.
#[derive(Clone, Copy)]
enum TextStatus {
    /// Its salt and text hash to its commitment.
    Matches,
    /// They do not.
    Differs,
    /// Indexed, but not there (erased, or never made durable).
    Gone,
}

/// Every stored text's status, read in one forward pass over the log file: what
/// [`Store::text`] would give for each commitment, judged once.
#[derive(Default)]
struct StoredTexts {
    status: HashMap<[u8; 32], TextStatus>,
    /// Texts that could not be read, with why: the first referenced one stops verification,
    /// as reading it one by one would.
    errors: HashMap<[u8; 32], LedgerError>,
    /// A failure that names no text (the zero commitment: a failed read or walk of the
    /// index): it stops verification, since any text may be behind it.
    unnamed: Option<LedgerError>,
}

impl StoredTexts {
    fn extend(&mut self, statuses: Vec<([u8; 32], Result<TextStatus, LedgerError>)>) {
        for (commitment, status) in statuses {
            match status {
                Ok(status) => {
                    self.status.insert(commitment, status);
                }
                Err(e) if commitment == [0; 32] => {
                    self.unnamed.get_or_insert(e);
                }
                Err(e) => {
                    self.errors.insert(commitment, e);
                }
            }
        }
    }

    /// The status of the text under `key`; `None` when none is stored.
    fn get(&mut self, key: &[u8; 32]) -> Result<Option<TextStatus>, LedgerError> {
        if let Some(e) = self.errors.remove(key) {
            return Err(e);
        }
        Ok(match self.status.get(key) {
            None | Some(TextStatus::Gone) => None,
            Some(status) => Some(*status),
        })
    }
}

/// The checks that span events, fed checked events in seq order.
struct Chain {
    ledger_id: Option<String>,
    /// Filled as the workers re-hash the texts, alongside the events.
    texts: StoredTexts,
    report: VerifyReport,
    /// Leaf hashes of the Merkle tree: each event's stored hash as found. `None` once an
    /// event's hash cannot be read, from which point checkpoints cannot be judged.
    leaves: Option<Vec<NodeHash>>,
    /// Every text reference with the seq of its event, in seq order, judged in [`Chain::finish`]
    /// when every text's status is known.
    text_refs: Vec<(u64, TextRefFound)>,
    /// The seq of the first event that erased each commitment.
    erased: HashMap<[u8; 32], u64>,
    expected_seq: u64,
    /// The stored hash of the previous event, as found (not as recomputed), so one altered
    /// event is reported once and its successor still links. `None` when the previous event's
    /// bytes named no hash at all: its successor's link cannot be judged and is not blamed.
    prev_hash: Option<String>,
}

impl Chain {
    fn new(ledger_id: Option<String>) -> Self {
        Self {
            report: VerifyReport {
                ledger_id: ledger_id.clone(),
                events: 0,
                head_hash: None,
                texts_verified: 0,
                texts_erased: 0,
                checkpoints_verified: 0,
                problems: Vec::new(),
            },
            ledger_id,
            texts: StoredTexts::default(),
            leaves: Some(Vec::new()),
            text_refs: Vec::new(),
            erased: HashMap::default(),
            expected_seq: 1,
            prev_hash: chain::expected_prev_hash(1, None).map(str::to_owned),
        }
    }

    /// Takes the next stored event, stored under `key_seq`.
    fn event(&mut self, key_seq: u64, checked: CheckedEvent) {
        let report = &mut self.report;
        report.events += 1;
        if key_seq != self.expected_seq {
            report.problems.push(Problem {
                seq: self.expected_seq,
                code: LogProblem::Gap,
                detail: format!("events {}..{} are missing", self.expected_seq, key_seq - 1),
            });
            // The gap explains a link that cannot hold: the event after it is not blamed.
            self.prev_hash = None;
        }
        self.expected_seq = key_seq + 1;
        let problem = |code, detail: String| Problem {
            seq: key_seq,
            code,
            detail,
        };
        if let Some(detail) = checked.not_canonical {
            report
                .problems
                .push(problem(LogProblem::NotCanonical, detail));
        }
        let event = match checked.body {
            Body::NotJson(detail) => {
                report
                    .problems
                    .push(problem(LogProblem::Unparseable, detail));
                self.prev_hash = None;
                self.leaves = None;
                return;
            }
            Body::NotEvent { detail, hash } => {
                report
                    .problems
                    .push(problem(LogProblem::Unparseable, detail));
                self.prev_hash = hash;
                self.leaves = None;
                return;
            }
            Body::Event(event) => event,
        };
        if event.seq != key_seq {
            report.problems.push(problem(
                LogProblem::SeqMismatch,
                format!("stored under seq {key_seq} but says seq {}", event.seq),
            ));
        }
        if event.v == 0 || event.v > ENVELOPE_VERSION {
            report.problems.push(problem(
                LogProblem::UnknownVersion,
                format!("envelope v{}", event.v),
            ));
        }
        if self
            .ledger_id
            .as_deref()
            .is_some_and(|id| id != event.ledger_id)
        {
            report.problems.push(problem(
                LogProblem::ForeignLedger,
                format!("belongs to ledger {}", event.ledger_id),
            ));
        }
        if !chain::links(self.prev_hash.as_deref(), Some(&event.prev_hash)) {
            report.problems.push(problem(
                LogProblem::BrokenLink,
                "prevHash does not equal the hash of the event before it".into(),
            ));
        }
        if let Some(detail) = event.hash_mismatch {
            report
                .problems
                .push(problem(LogProblem::HashMismatch, detail));
        }
        self.text_refs
            .extend(event.text_refs.into_iter().map(|r| (key_seq, r)));
        for c in event.erased {
            self.erased.entry(c).or_insert(key_seq);
        }
        match (self.leaves.as_mut(), event.leaf) {
            (Some(leaves), Some(leaf)) => leaves.push(leaf),
            _ => self.leaves = None,
        }
        // An event out of place says nothing about the link of the one after it.
        self.prev_hash = (event.seq == key_seq).then(|| event.hash.clone());
        report.head_hash = Some(event.hash);
    }

    /// The report once every event and every text status is in (checkpoints not yet checked),
    /// and the leaf hashes. Each text reference is judged here, in seq order: a problem it
    /// has lands after the other problems of its event, as if judged with the event.
    fn finish(mut self) -> Result<(VerifyReport, Option<Vec<NodeHash>>), LedgerError> {
        if let Some(e) = self.texts.unnamed.take() {
            return Err(e);
        }
        let mut report = self.report;
        // Texts found missing, judged once every erasure is known; texts present, to flag
        // erased ones whose bytes are still on disk.
        let mut missing = Vec::new();
        let mut present = Vec::new();
        for (seq, found) in self.text_refs {
            let key = match found {
                TextRefFound::Commitment(key) => key,
                TextRefFound::Malformed(commitment) => {
                    report.problems.push(Problem {
                        seq,
                        code: LogProblem::TextMismatch,
                        detail: format!("bad commitment {commitment}"),
                    });
                    continue;
                }
            };
            match self.texts.get(&key)? {
                None => missing.push((seq, key)),
                Some(TextStatus::Matches) => {
                    report.texts_verified += 1;
                    present.push((seq, key));
                }
                Some(_) => report.problems.push(Problem {
                    seq,
                    code: LogProblem::TextMismatch,
                    detail: format!("stored text does not match commitment {}", hex(&key)),
                }),
            }
        }
        for (seq, key) in missing {
            if self.erased.contains_key(&key) {
                report.texts_erased += 1;
            } else {
                report.problems.push(Problem {
                    seq,
                    code: LogProblem::TextMissing,
                    detail: format!("no stored text for {}", hex(&key)),
                });
            }
        }
        for (seq, key) in present {
            if let Some(by) = self.erased.get(&key) {
                report.problems.push(Problem {
                    seq,
                    code: LogProblem::TextNotErased,
                    detail: format!(
                        "text {} was erased by event {by} but is still stored; \
                         opening the ledger finishes the erasure",
                        hex(&key)
                    ),
                });
            }
        }
        Ok((report, self.leaves))
    }
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
    use crate::ledger::canonical::canonical_bytes;
    use crate::ledger::hash::{GENESIS_PREV_HASH, event_hash, parse_hex32, text_commitment};
    use crate::ledger::store::{Batch, LedgerMeta, MemStore, StagedEvent, TextRecord};

    /// The salt, text and commitment of the text event `seq` refers to.
    fn text_of(seq: u64) -> ([u8; 32], String, String) {
        let salt = [u8::try_from(seq).unwrap(); 32];
        let text = format!("thought {seq}");
        let commitment = text_commitment(&salt, &text);
        (salt, text, commitment)
    }

    /// A store holding `n` chained, valid events, event `seq` referring to the stored text
    /// [`text_of`]`(seq)`; with `erasure = Some((at, of))`, event `at` also erases the text of
    /// event `of` (which stays stored, as if the erasure had not been carried out).
    fn chain_erasing(n: u64, erasure: Option<(u64, u64)>) -> MemStore {
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
            let (salt, text, commitment) = text_of(seq);
            let facts = match erasure {
                Some((at, of)) if at == seq => json!([{"type": "TextsErased",
                    "commitments": [text_of(of).2], "reason": "asked"}]),
                _ => json!([]),
            };
            let mut event: Event = serde_json::from_value(json!({
                "v": 1, "kind": "ToolCallRecorded", "seq": seq, "ledgerId": "l", "sessionId": null,
                "recordedAt": "2026-01-01T00:00:00.000000Z",
                "actor": {"principal": "local", "transport": "stdio", "clientName": null, "clientVersion": null},
                "call": {"tool": "search", "arguments": {"thought": {"textCommitment": commitment}}},
                "facts": facts,
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
                    texts: vec![(parse_hex32(&commitment).unwrap(), TextRecord { salt, text })],
                })
                .unwrap();
        }
        store
    }

    fn chain(n: u64) -> MemStore {
        chain_erasing(n, None)
    }

    fn check(store: &MemStore, expect: &[(u64, &str)]) {
        let report = verify(store).unwrap();
        let got: Vec<(u64, &str)> = report
            .problems
            .iter()
            .map(|p| (p.seq, p.code.as_str()))
            .collect();
        assert_eq!(got, expect, "{:?}", report.problems);
    }

    fn edit(store: &mut MemStore, seq: u64, f: impl Fn(String) -> String) {
        let bytes = store.event_bytes(seq).unwrap().unwrap();
        store.tamper_event_bytes(seq, f(String::from_utf8(bytes).unwrap()).as_bytes());
    }

    #[test]
    fn a_failure_naming_no_text_stops_verification() {
        let mut chain = Chain::new(None);
        let failed = LedgerError::Io(std::io::Error::other("walk failed"));
        chain.texts.extend(vec![([0; 32], Err(failed))]);
        assert!(chain.finish().is_err());
    }

    #[test]
    fn an_intact_chain_verifies() {
        check(&chain(4), &[]);
        let report = verify(&chain(4)).unwrap();
        assert_eq!((report.events, report.texts_verified), (4, 4));
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
        let mut store = chain(5);
        edit(&mut store, 3, |s| {
            s.replace("\"ledgerId\":\"l\"", "\"ledgerId\":\"m\"")
        });
        check(&store, &[(3, "foreign_ledger"), (3, "hash_mismatch")]);

        let mut store = chain(5);
        let prev = verify(&store).unwrap().head_hash.unwrap();
        edit(&mut store, 3, |s| {
            let at = s.find("\"prevHash\":\"").unwrap() + 12;
            format!("{}{prev}{}", &s[..at], &s[at + 64..])
        });
        check(&store, &[(3, "broken_link"), (3, "hash_mismatch")]);

        // Text damage lands after the event's own problems, and at the event that refers to it.
        let mut store = chain(5);
        edit(&mut store, 2, |s| s.replace(&text_of(2).2, "not hex"));
        check(&store, &[(2, "hash_mismatch"), (2, "text_mismatch")]);

        let mut store = chain(5);
        let (salt, _, commitment) = text_of(4);
        let key = parse_hex32(&commitment).unwrap();
        let text = "altered".to_owned();
        store
            .append_batch(&Batch {
                events: vec![],
                texts: vec![(key, TextRecord { salt, text })],
            })
            .unwrap();
        check(&store, &[(4, "text_mismatch")]);

        let mut store = chain(5);
        store.erase_texts(&[key]).unwrap();
        check(&store, &[(4, "text_missing")]);

        // Erased by event 5: gone is as it should be; still stored is not.
        let mut store = chain_erasing(5, Some((5, 4)));
        check(&store, &[(4, "text_not_erased")]);
        store.erase_texts(&[key]).unwrap();
        check(&store, &[]);
        let report = verify(&store).unwrap();
        assert_eq!((report.texts_verified, report.texts_erased), (4, 1));
    }
}
