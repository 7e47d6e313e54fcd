//! Tests of the writer: the Merkle leaves read back from events, the check under a snapshot,
//! group commit (gap-free seqs, recorded time, admission order), queries during syncs, reopening,
//! fail-stop, panicking decisions, checkpoints, and opening behind the gate.

use serde_json::json;

use super::replay::{LogLeaves, PrefixCheck, TREE_FLOOR, leaf_data};
use super::*;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::{Duration, Instant};

use chrono::{DateTime, Utc};
use serde_json::Value;

use crate::events::{
    Actor, Call, ENVELOPE_VERSION, Event, KIND_TOOL_CALL_RECORDED, Outcome, OutcomeStatus,
    Provenance, SessionId, TextLookup,
};
use crate::ledger::checkpoint::NoteSigner;
use crate::ledger::hash::{GENESIS_PREV_HASH, parse_hex32};
use crate::ledger::merkle::{
    Blake3Hasher, LeafSource as MerkleLeafSource, MerkleHasher, MerkleTree, NodeHash,
};
use crate::ledger::notary::Notary;
use crate::ledger::store::{Batch, LedgerMeta, StagedEvent, Store, TextRecord};
use crate::ledger::store::{EventIter, MemStore};
use crate::ledger::verify;
use crate::ledger::view::{LogView, SessionLog};
use crate::ledger::{FORMAT, LedgerError};

struct Leaves(Vec<NodeHash>);

impl MerkleLeafSource for Leaves {
    fn leaf_hashes(&self, start: u64, end: u64) -> Result<Vec<NodeHash>, String> {
        Ok(self.0[start as usize..end as usize].to_vec())
    }
}

fn leaves(n: u8) -> Vec<NodeHash> {
    (0..n).map(|i| Blake3Hasher.hash_leaf(&[i])).collect()
}

/// Stored events holding only their hash, counting the reads (a range is one read: one round
/// trip to a database).
struct Hashes {
    reads: std::sync::atomic::AtomicU64,
}

impl SessionLog for Hashes {
    fn session_seqs(&self, _: &crate::events::SessionId) -> Result<Vec<u64>, LedgerError> {
        Ok(Vec::new())
    }
    fn event_bytes(&self, seq: u64) -> Result<Option<Vec<u8>>, LedgerError> {
        self.reads.fetch_add(1, Ordering::Relaxed);
        Ok(Some(
            json!({ "hash": format!("{seq:064x}") })
                .to_string()
                .into_bytes(),
        ))
    }
    fn events_bytes(&self, first: u64, last: u64) -> Result<Vec<(u64, Vec<u8>)>, LedgerError> {
        self.reads.fetch_add(1, Ordering::Relaxed);
        Ok((first..=last)
            .map(|seq| {
                let event = json!({ "hash": format!("{seq:064x}") });
                (seq, event.to_string().into_bytes())
            })
            .collect())
    }
    fn text(&self, _: &[u8; 32]) -> Result<Option<TextRecord>, LedgerError> {
        Ok(None)
    }
}

/// A tree keeping only its top gives the proofs of a full one from the stored events' hashes,
/// reading each block once for neighbouring leaves, in one read.
#[test]
fn dropped_tree_nodes_are_read_back_from_the_events_a_block_at_a_time() {
    let log = Arc::new(Hashes {
        reads: Default::default(),
    });
    let leaf = |seq: u64| Blake3Hasher.hash_leaf(&leaf_data(&format!("{seq:064x}")).unwrap());
    let full = MerkleTree::from_leaf_hashes(Blake3Hasher, (1..=50).map(leaf));
    let mut kept = full.clone();
    kept.keep_lower_levels_in(TREE_FLOOR, Arc::new(LogLeaves::new(log.clone())));
    for index in 0..16 {
        assert_eq!(
            kept.inclusion_proof(index, 50),
            full.inclusion_proof(index, 50)
        );
    }
    // Leaves 0..16 are two blocks: each read once, as one range.
    assert_eq!(log.reads.load(Ordering::Relaxed), 2);
    assert_eq!(
        kept.consistency_proof(13, 50),
        full.consistency_proof(13, 50)
    );
}

/// The check of the log under a snapshot judges leaves the tree no longer keeps by their
/// block's node, also when the tree drops a block while the check is half-way through it.
#[test]
fn the_check_under_a_snapshot_judges_dropped_leaves_by_their_block() {
    let all = leaves(40);
    let source = Arc::new(Leaves(all.clone()));
    let tree_of = |n: usize| {
        let mut tree = MerkleTree::from_leaf_hashes(Blake3Hasher, all[..n].iter().copied());
        tree.keep_lower_levels_in(3, source.clone());
        tree
    };
    // Every leaf right: holds, kept or dropped.
    let tree = tree_of(20);
    let mut check = PrefixCheck::new(20);
    assert_eq!(check.target(&tree), 20);
    assert!((1..=20u64).all(|seq| check.leaf_holds(&tree, seq, all[seq as usize - 1])));
    // A wrong dropped leaf fails its block, at the block's last leaf.
    let mut check = PrefixCheck::new(20);
    let verdicts: Vec<bool> = (1..=8u64)
        .map(|seq| {
            let leaf = if seq == 3 {
                all[30]
            } else {
                all[seq as usize - 1]
            };
            check.leaf_holds(&tree, seq, leaf)
        })
        .collect();
    assert_eq!(verdicts, [true, true, true, true, true, true, true, false]);
    // A wrong kept leaf fails at once.
    let mut check = PrefixCheck::new(20);
    assert!((1..=16u64).all(|seq| check.leaf_holds(&tree, seq, all[seq as usize - 1])));
    assert!(!check.leaf_holds(&tree, 17, all[0]));
    // The anchor's block is dropped half-way: the check runs to the block's end and judges
    // it whole; its first leaves were compared while they were kept.
    let mut grown = tree_of(18);
    let mut check = PrefixCheck::new(18);
    assert_eq!(check.target(&grown), 18);
    assert!((1..=17u64).all(|seq| check.leaf_holds(&grown, seq, all[seq as usize - 1])));
    for leaf in &all[18..30] {
        grown.push_leaf_hash(*leaf);
    }
    grown.drop_lower_nodes(30);
    assert_eq!(grown.kept_node(0, 17), None, "the block is dropped now");
    assert_eq!(check.target(&grown), 24);
    assert!((18..=24u64).all(|seq| check.leaf_holds(&grown, seq, all[seq as usize - 1])));
    let mut check = PrefixCheck::new(18);
    assert!((1..=17u64).all(|seq| check.leaf_holds(&grown, seq, all[seq as usize - 1])));
    assert!(!(18..=24u64).all(|seq| {
        let leaf = if seq == 18 {
            all[0]
        } else {
            all[seq as usize - 1]
        };
        check.leaf_holds(&grown, seq, leaf)
    }));
}

/// Opens the sled store in `dir`, waiting (up to 10 s) for a just-shut ledger's background
/// threads to let go of its lock.
fn open_store(dir: &std::path::Path) -> crate::ledger::SledStore {
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(10);
    loop {
        match crate::ledger::SledStore::open(dir) {
            Ok(store) => return store,
            Err(LedgerError::Locked { .. }) if std::time::Instant::now() < deadline => {
                std::thread::sleep(std::time::Duration::from_millis(10));
            }
            Err(e) => panic!("cannot open the store: {e}"),
        }
    }
}

/// A log with nothing in it, for deciding outside the writer: the tests' one in-memory view.
fn no_log() -> crate::ledger::testlog::TestLog {
    crate::ledger::testlog::TestLog::new()
}

/// Echoes its command; counts the events applied.
#[derive(Default)]
struct Echo {
    applied: Vec<u64>,
}

impl Decider for Echo {
    type Command = String;
    type Query = ();
    type Answer = Vec<u64>;
    type View = Vec<u64>;

    /// `at <RFC 3339>` was prepared then; anything else now.
    fn prepared_at(&self, command: &String) -> DateTime<Utc> {
        command
            .strip_prefix("at ")
            .and_then(|at| DateTime::parse_from_rfc3339(at).ok())
            .map_or_else(Utc::now, |at| at.with_timezone(&Utc))
    }

    fn decide(&self, command: &String, _log: &dyn LogView) -> Draft {
        if command == "panic" {
            panic!("decider bug");
        }
        Draft {
            session_id: None,
            actor: Actor {
                principal: "test".into(),
                transport: "none".into(),
                client_name: None,
                client_version: None,
                role: Default::default(),
                user_ids: Vec::new(),
            },
            call: Call {
                tool: "echo".into(),
                arguments: json!({ "say": command }),
                idempotency_key: None,
                effects: None,
            },
            facts: Vec::new(),
            status: OutcomeStatus::Ok,
            error: None,
            body: json!({ "echo": command, "after": self.applied.len() }),
            provenance: Provenance::rules("test"),
            texts: Vec::new(),
            response_ref: None,
            replay_of: None,
            trace: None,
        }
    }

    fn failed(&self, command: &String, reason: &str) -> Draft {
        let mut draft = self.decide(&format!("failed {command}"), &no_log());
        draft.status = OutcomeStatus::Failed;
        draft.body = json!({ "failed": reason });
        draft
    }

    fn apply(&mut self, event: &Event, _texts: &TextLookup<'_>) {
        self.applied.push(event.seq);
    }

    fn view(&self) -> Vec<u64> {
        self.applied.clone()
    }

    fn answer(view: &Vec<u64>, _query: ()) -> Vec<u64> {
        view.clone()
    }
}

/// A store whose sync can be made to fail, to exercise fail-stop, and whose replay can be
/// held at its start, to see what a ledger still opening does.
struct Flaky {
    inner: MemStore,
    fail: Arc<AtomicBool>,
    hold: Option<std::sync::Mutex<std::sync::mpsc::Receiver<()>>>,
    /// When set, each sync waits for one message (a slow disk), saying so in `syncing`.
    sync_hold: Option<std::sync::Mutex<std::sync::mpsc::Receiver<()>>>,
    syncing: Arc<AtomicBool>,
}

impl Flaky {
    /// `inner`, whose replay waits until the returned sender sends or is dropped.
    fn held(inner: MemStore) -> (Self, std::sync::mpsc::Sender<()>) {
        let (tx, rx) = std::sync::mpsc::channel();
        let store = Self {
            inner,
            fail: Arc::default(),
            hold: Some(std::sync::Mutex::new(rx)),
            sync_hold: None,
            syncing: Arc::default(),
        };
        (store, tx)
    }

    /// `inner`, each of whose syncs waits until the returned sender sends (or is dropped);
    /// the flag is up while one waits.
    fn slow_sync(inner: MemStore) -> (Self, std::sync::mpsc::Sender<()>, Arc<AtomicBool>) {
        let (tx, rx) = std::sync::mpsc::channel();
        let syncing = Arc::new(AtomicBool::new(false));
        let store = Self {
            inner,
            fail: Arc::default(),
            hold: None,
            sync_hold: Some(std::sync::Mutex::new(rx)),
            syncing: syncing.clone(),
        };
        (store, tx, syncing)
    }
}

impl Store for Flaky {
    fn meta(&self) -> Result<Option<LedgerMeta>, LedgerError> {
        self.inner.meta()
    }
    fn init_meta(&mut self, meta: &LedgerMeta) -> Result<(), LedgerError> {
        self.inner.init_meta(meta)
    }
    fn append_batch(&mut self, batch: &Batch) -> Result<(), LedgerError> {
        self.inner.append_batch(batch)
    }
    fn sync(&mut self) -> Result<(), LedgerError> {
        if self.fail.load(Ordering::SeqCst) {
            return Err(LedgerError::Io(std::io::Error::other("disk on fire")));
        }
        if let Some(hold) = &self.sync_hold {
            self.syncing.store(true, Ordering::SeqCst);
            let _ = hold.lock().unwrap().recv();
            self.syncing.store(false, Ordering::SeqCst);
        }
        self.inner.sync()
    }
    fn last_seq(&self) -> Result<Option<u64>, LedgerError> {
        self.inner.last_seq()
    }
    fn event_bytes(&self, seq: u64) -> Result<Option<Vec<u8>>, LedgerError> {
        self.inner.event_bytes(seq)
    }
    fn events_from(&self, from: u64) -> EventIter<'_> {
        if let Some(hold) = &self.hold {
            let _ = hold.lock().unwrap().recv();
        }
        self.inner.events_from(from)
    }
    fn session_seqs(&self, session: &SessionId) -> Result<Vec<u64>, LedgerError> {
        self.inner.session_seqs(session)
    }
    fn text(&self, commitment: &[u8; 32]) -> Result<Option<TextRecord>, LedgerError> {
        self.inner.text(commitment)
    }
    fn texts_in_file_order(&self) -> Result<crate::ledger::store::TextIter<'_>, LedgerError> {
        self.inner.texts_in_file_order()
    }
    fn erase_texts(&mut self, commitments: &[[u8; 32]]) -> Result<(), LedgerError> {
        self.inner.erase_texts(commitments)
    }
}

#[tokio::test]
async fn concurrent_commands_get_gap_free_seqs_and_a_valid_chain() {
    let dir = tempfile::tempdir().unwrap();
    let store = open_store(dir.path());
    let ledger = open_ledger(store, Echo::default(), WriterConfig::default()).unwrap();
    let tasks: Vec<_> = (0..64)
        .map(|i| {
            let ledger = ledger.clone();
            tokio::spawn(async move { ledger.submit(format!("c{i}")).await.unwrap().seq })
        })
        .collect();
    let mut seqs = Vec::new();
    for t in tasks {
        seqs.push(t.await.unwrap());
    }
    seqs.sort_unstable();
    assert_eq!(seqs, (1..=64).collect::<Vec<u64>>());
    assert_eq!(
        ledger.query(()).await.unwrap(),
        (1..=64).collect::<Vec<u64>>()
    );
    ledger.shutdown().await;
    let report = verify(&open_store(dir.path())).unwrap();
    assert!(report.is_intact(), "{:?}", report.problems);
    assert_eq!(report.events, 64);
}

#[tokio::test]
async fn recorded_time_is_the_prepared_time_and_never_goes_back_in_log_order() {
    let dir = tempfile::tempdir().unwrap();
    let recorded_at = |dir: &std::path::Path| -> Vec<String> {
        let store = open_store(dir);
        (1..=store.last_seq().unwrap().unwrap_or(0))
            .map(|seq| {
                let bytes = store.event_bytes(seq).unwrap().unwrap();
                let event: Value = serde_json::from_slice(&bytes).unwrap();
                event["recordedAt"].as_str().unwrap().to_owned()
            })
            .collect()
    };
    {
        let ledger = open_ledger(
            open_store(dir.path()),
            Echo::default(),
            WriterConfig::default(),
        )
        .unwrap();
        for at in [
            "2026-03-01T10:00:00Z",
            "2026-03-01T09:00:00Z",
            "2026-03-02T00:00:00Z",
        ] {
            ledger.submit(format!("at {at}")).await.unwrap();
        }
        ledger.shutdown().await;
    }
    assert_eq!(
        recorded_at(dir.path()),
        [
            "2026-03-01T10:00:00.000000Z",
            "2026-03-01T10:00:00.000000Z",
            "2026-03-02T00:00:00.000000Z"
        ],
        "a call prepared earlier than the event before it is stamped with that event's time"
    );
    // After a restart the floor is read back from the log.
    let ledger = open_ledger(
        open_store(dir.path()),
        Echo::default(),
        WriterConfig::default(),
    )
    .unwrap();
    ledger
        .submit("at 2026-01-01T00:00:00Z".into())
        .await
        .unwrap();
    ledger.shutdown().await;
    assert_eq!(recorded_at(dir.path())[3], "2026-03-02T00:00:00.000000Z");
}

#[tokio::test]
async fn what_is_admitted_first_takes_effect_first_reads_included() {
    let ledger = open_ledger(
        MemStore::default(),
        Echo::default(),
        WriterConfig::default(),
    )
    .unwrap();
    // Admitted in this order, awaited in the opposite one: the read, made after the first
    // command is admitted but before it is answered, waits for its effect.
    let first = ledger.enqueue("a".into()).await.unwrap();
    let read = ledger.query_after(first.admitted(), ()).await.unwrap();
    let second = ledger.enqueue("b".into()).await.unwrap();
    assert!(second.admitted() > first.admitted());
    assert_eq!(second.wait().await.unwrap().body["after"], 1);
    assert_eq!(read, vec![1], "the read saw the first only");
    assert_eq!(first.wait().await.unwrap().seq, 1);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_query_is_answered_while_the_writer_is_blocked_in_a_sync() {
    let (store, release, syncing) = Flaky::slow_sync(MemStore::default());
    let ledger = open_ledger(store, Echo::default(), WriterConfig::default()).unwrap();
    let first = ledger.enqueue("a".into()).await.unwrap();
    release.send(()).unwrap();
    assert_eq!(first.wait().await.unwrap().seq, 1);
    // The second call's sync hangs: the writer is stuck in it.
    let second = ledger.enqueue("b".into()).await.unwrap();
    while !syncing.load(Ordering::SeqCst) {
        tokio::task::yield_now().await;
    }
    // A query does not wait for the writer (were it queued behind the sync, this would
    // never return): it sees the durable state, without the call still being synced.
    let seen = tokio::time::timeout(Duration::from_secs(30), ledger.query(()))
        .await
        .expect("the query waited for the writer")
        .unwrap();
    assert_eq!(seen, vec![1]);
    assert!(
        syncing.load(Ordering::SeqCst),
        "the writer was still blocked"
    );
    // A read after the second call waits for its effect, and gets it once it is durable.
    let after = second.admitted();
    let reader = ledger.clone();
    let read = tokio::spawn(async move { reader.query_after(after, ()).await });
    tokio::time::sleep(Duration::from_millis(50)).await;
    assert!(!read.is_finished(), "the read did not wait for the call");
    release.send(()).unwrap();
    assert_eq!(read.await.unwrap().unwrap(), vec![1, 2]);
    assert_eq!(second.wait().await.unwrap().seq, 2);
    drop(release);
    ledger.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn queries_never_miss_an_answered_call_while_appends_go_on() {
    const WRITERS: u64 = 16;
    const CALLS: u64 = 40;
    let dir = tempfile::tempdir().unwrap();
    let ledger = open_ledger(
        open_store(dir.path()),
        Echo::default(),
        WriterConfig::default(),
    )
    .unwrap();
    // Highest seq answered to any caller so far.
    let answered = Arc::new(AtomicU64::new(0));
    let done = Arc::new(AtomicBool::new(false));
    let writers: Vec<_> = (0..WRITERS)
        .map(|w| {
            let (ledger, answered) = (ledger.clone(), answered.clone());
            tokio::spawn(async move {
                for i in 0..CALLS {
                    let seq = ledger.submit(format!("w{w}c{i}")).await.unwrap().seq;
                    answered.fetch_max(seq, Ordering::SeqCst);
                    // Append, then at once query from another task: the call is there.
                    let reader = ledger.clone();
                    let seen = tokio::spawn(async move { reader.query(()).await })
                        .await
                        .unwrap()
                        .unwrap();
                    assert!(seen.contains(&seq), "an answered call ({seq}) was not seen");
                }
            })
        })
        .collect();
    let readers: Vec<_> = (0..4)
        .map(|_| {
            let (ledger, answered, done) = (ledger.clone(), answered.clone(), done.clone());
            tokio::spawn(async move {
                let (mut reads, mut last) = (0u64, 0usize);
                while !done.load(Ordering::SeqCst) {
                    let floor = answered.load(Ordering::SeqCst);
                    let seen = ledger.query(()).await.unwrap();
                    // Gap-free seqs: the view holds seqs 1..=len.
                    assert!(
                        seen.len() as u64 >= floor,
                        "a view older than an answered call: {} < {floor}",
                        seen.len()
                    );
                    assert!(seen.len() >= last, "views went back in time");
                    last = seen.len();
                    reads += 1;
                    tokio::task::yield_now().await;
                }
                reads
            })
        })
        .collect();
    for w in writers {
        w.await.unwrap();
    }
    done.store(true, Ordering::SeqCst);
    for r in readers {
        assert!(r.await.unwrap() > 0);
    }
    let all = ledger.query(()).await.unwrap();
    assert_eq!(all, (1..=WRITERS * CALLS).collect::<Vec<_>>());
    ledger.shutdown().await;
}

#[tokio::test]
async fn state_is_rebuilt_from_the_log_on_reopen() {
    let dir = tempfile::tempdir().unwrap();
    {
        let store = open_store(dir.path());
        let ledger = open_ledger(store, Echo::default(), WriterConfig::default()).unwrap();
        for i in 0..3 {
            ledger.submit(format!("c{i}")).await.unwrap();
        }
        ledger.shutdown().await;
    }
    let store = open_store(dir.path());
    let ledger = open_ledger(store, Echo::default(), WriterConfig::default()).unwrap();
    assert_eq!(ledger.query(()).await.unwrap(), vec![1, 2, 3]);
    let next = ledger.submit("again".into()).await.unwrap();
    assert_eq!(next.seq, 4);
    assert_eq!(next.body["after"], 3, "the decision saw the replayed state");
}

#[tokio::test]
async fn a_failed_sync_answers_nobody_and_stops_the_writer() {
    let fail = Arc::new(AtomicBool::new(false));
    let store = Flaky {
        inner: MemStore::default(),
        fail: fail.clone(),
        hold: None,
        sync_hold: None,
        syncing: Arc::default(),
    };
    let ledger = open_ledger(store, Echo::default(), WriterConfig::default()).unwrap();
    assert_eq!(ledger.submit("ok".into()).await.unwrap().seq, 1);
    fail.store(true, Ordering::SeqCst);
    assert!(matches!(
        ledger.submit("lost".into()).await,
        Err(LedgerError::WriterStopped)
    ));
    fail.store(false, Ordering::SeqCst);
    // Fail-stop: even with the disk back, nothing more is recorded or answered from state
    // the disk may lack.
    assert!(matches!(
        ledger.submit("later".into()).await,
        Err(LedgerError::WriterStopped)
    ));
    assert!(matches!(
        ledger.query(()).await,
        Err(LedgerError::WriterStopped)
    ));
}

#[tokio::test]
async fn a_panicking_decision_is_recorded_as_failed_and_the_writer_goes_on() {
    let ledger = open_ledger(
        MemStore::default(),
        Echo::default(),
        WriterConfig::default(),
    )
    .unwrap();
    let failed = ledger.submit("panic".into()).await.unwrap();
    assert_eq!((failed.seq, failed.status), (1, OutcomeStatus::Failed));
    assert_eq!(failed.body["failed"], "decider bug");
    let next = ledger.submit("fine".into()).await.unwrap();
    assert_eq!((next.seq, next.status), (2, OutcomeStatus::Ok));
}

#[tokio::test]
async fn checkpoints_cover_durable_events_and_proofs_verify_against_them() {
    use crate::ledger::checkpoint::open_note;
    use crate::ledger::merkle::{verify_consistency, verify_inclusion};
    let dir = tempfile::tempdir().unwrap();
    let signer = NoteSigner::generate("thinkledger/l").unwrap();
    let verifier = signer.verifier();
    let config = WriterConfig {
        notary: Some(Notary::open(dir.path(), signer).unwrap()),
        ..WriterConfig::default()
    };
    let ledger = open_ledger(MemStore::default(), Echo::default(), config).unwrap();
    for word in ["a", "b", "c"] {
        ledger.submit(word.into()).await.unwrap();
    }
    let first = ledger.checkpoint().await.unwrap();
    assert_eq!(first.checkpoint.size(), 3);
    open_note(&first.note, std::slice::from_ref(&verifier)).unwrap();
    assert_eq!(
        ledger.checkpoint().await.unwrap(),
        first,
        "nothing new: same checkpoint"
    );
    ledger.submit("d".into()).await.unwrap();
    let second = ledger.checkpoint().await.unwrap();
    assert_eq!(second.checkpoint.size(), 4);
    let (leaf, inclusion, consistency) = ledger
        .inspect(|view| {
            let event: Event = serde_json::from_slice(&view.event_bytes(2).unwrap()).unwrap();
            let leaf = Blake3Hasher.hash_leaf(&parse_hex32(&event.hash).unwrap());
            (
                leaf,
                view.inclusion_proof(1, 4).unwrap(),
                view.consistency_proof(3, 4).unwrap(),
            )
        })
        .await
        .unwrap();
    use crate::ledger::merkle::MerkleHasher;
    verify_inclusion(
        &Blake3Hasher,
        &leaf,
        1,
        4,
        &inclusion,
        second.checkpoint.root(),
    )
    .unwrap();
    verify_consistency(
        &Blake3Hasher,
        3,
        4,
        first.checkpoint.root(),
        second.checkpoint.root(),
        &consistency,
    )
    .unwrap();
}

/// A MemStore holding `n` echoed events, as a ledger that was used and shut.
async fn store_with(n: usize) -> MemStore {
    let ledger = open_ledger(
        MemStore::default(),
        Echo::default(),
        WriterConfig::default(),
    )
    .unwrap();
    for i in 0..n {
        ledger.submit(format!("c{i}")).await.unwrap();
    }
    let events: Vec<Vec<u8>> = ledger
        .inspect(move |log| {
            (1..=log.len())
                .map(|s| log.event_bytes(s).unwrap())
                .collect()
        })
        .await
        .unwrap();
    let meta = ledger.meta().expect("open").clone();
    ledger.shutdown().await;
    let mut copy = MemStore::default();
    copy.init_meta(&meta).unwrap();
    for (i, bytes) in events.into_iter().enumerate() {
        copy.append_batch(&Batch {
            events: vec![StagedEvent {
                seq: i as u64 + 1,
                bytes,
                session: None,
            }],
            texts: Vec::new(),
        })
        .unwrap();
    }
    copy
}

#[tokio::test]
async fn a_started_ledger_answers_calls_once_its_replay_is_done() {
    let (store, release) = Flaky::held(store_with(3).await);
    let config = WriterConfig {
        open_wait: Duration::from_millis(50),
        ..WriterConfig::default()
    };
    // Returns while the replay is held.
    let ledger = start_ledger(move || Ok((store, None)), Echo::default(), config).unwrap();
    match ledger.submit("early".into()).await {
        Err(LedgerError::Opening {
            replayed: 0,
            total: 3,
        }) => {}
        other => panic!("expected Opening, got {other:?}"),
    }
    release.send(()).unwrap();
    let deadline = Instant::now() + Duration::from_secs(10);
    while ledger.ready().await.is_err() {
        assert!(Instant::now() < deadline, "never opened");
    }
    let committed = ledger.submit("late".into()).await.unwrap();
    assert_eq!(
        committed.seq, 4,
        "the call refused while opening left no event"
    );
    assert_eq!(ledger.query(()).await.unwrap(), vec![1, 2, 3, 4]);
    ledger.shutdown().await;
}

#[tokio::test]
async fn a_ledger_that_fails_to_open_refuses_every_call_saying_why() {
    let mut inner = store_with(3).await;
    let bytes = inner.event_bytes(2).unwrap().unwrap();
    let altered = String::from_utf8(bytes)
        .unwrap()
        .replace("\"c1\"", "\"cX\"");
    inner.tamper_event_bytes(2, altered.as_bytes());
    let (store, release) = Flaky::held(inner);
    let ledger = start_ledger(
        move || Ok((store, None)),
        Echo::default(),
        WriterConfig::default(),
    )
    .unwrap();
    assert!(
        ledger.open_failure().is_none(),
        "not known before the replay"
    );
    drop(release);
    for _ in 0..2 {
        match ledger.submit("c".into()).await {
            Err(LedgerError::OpenFailed(why)) => assert!(why.contains("event 2"), "{why}"),
            other => panic!("expected OpenFailed, got {other:?}"),
        }
    }
    assert!(
        ledger
            .open_failure()
            .is_some_and(|why| why.to_string().contains("event 2"))
    );
}

#[tokio::test]
async fn a_shutdown_while_opening_stops_the_replay() {
    let (store, release) = Flaky::held(store_with(3).await);
    let ledger = start_ledger(
        move || Ok((store, None)),
        Echo::default(),
        WriterConfig::default(),
    )
    .unwrap();
    let shutdown = tokio::spawn({
        let ledger = ledger.clone();
        async move { ledger.shutdown().await }
    });
    tokio::time::sleep(Duration::from_millis(20)).await;
    release.send(()).unwrap();
    tokio::time::timeout(Duration::from_secs(10), shutdown)
        .await
        .expect("shutdown returns")
        .unwrap();
    assert!(ledger.submit("after".into()).await.is_err());
}

#[test]
fn a_log_whose_chain_is_broken_is_refused_at_open() {
    let mut store = MemStore::default();
    let meta = LedgerMeta {
        ledger_id: "l".into(),
        created_at: "t".into(),
        format: FORMAT.into(),
    };
    store.init_meta(&meta).unwrap();
    let mut prev = GENESIS_PREV_HASH.to_owned();
    for seq in 1..=3 {
        let mut event = Event {
            v: ENVELOPE_VERSION,
            kind: KIND_TOOL_CALL_RECORDED.into(),
            seq,
            ledger_id: "l".into(),
            session_id: None,
            recorded_at: "2026-01-01T00:00:00.000000Z".into(),
            actor: Echo::default().decide(&String::new(), &no_log()).actor,
            call: Call {
                tool: "echo".into(),
                arguments: json!({}),
                idempotency_key: None,
                effects: None,
            },
            facts: Vec::new(),
            outcome: Outcome {
                status: OutcomeStatus::Ok,
                response_digest: "00".into(),
                error: None,
                response_ref: None,
                decide_micros: None,
            },
            provenance: Provenance::rules("test"),
            trace: None,
            prev_hash: prev.clone(),
            hash: String::new(),
        };
        event.hash = crate::ledger::hash::event_hash(&event).unwrap();
        prev = event.hash.clone();
        let mut bytes =
            crate::ledger::canonical::canonical_bytes(&serde_json::to_value(&event).unwrap())
                .unwrap();
        if seq == 2 {
            // Alter the content but keep the recorded hash: the tamperer's best attempt.
            let text = String::from_utf8(bytes)
                .unwrap()
                .replace("\"echo\"", "\"echO\"");
            bytes = text.into_bytes();
        }
        store
            .append_batch(&Batch {
                events: vec![StagedEvent {
                    seq,
                    bytes,
                    session: None,
                }],
                texts: Vec::new(),
            })
            .unwrap();
    }
    match open_ledger(store, Echo::default(), WriterConfig::default()) {
        Err(LedgerError::Corrupt(detail)) => assert!(detail.contains("event 2"), "{detail}"),
        Err(other) => panic!("expected Corrupt, got {other}"),
        Ok(_) => panic!("a broken chain was accepted"),
    }
}
