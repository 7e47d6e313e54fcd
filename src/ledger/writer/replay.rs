//! Folding and checking the stored log: replay at open (from a loaded snapshot when one checks
//! out), the check of the events under that snapshot (`PrefixCheck`, at open or between
//! calls), the events other writers of a shared store appended, and the Merkle leaves read back
//! from stored events for the nodes the tree no longer keeps.

use std::collections::HashMap;
use std::sync::Arc;
use std::sync::atomic::Ordering;

use chrono::{DateTime, Utc};
use serde::Deserialize;
use serde_json::Value;

use super::decider::Decider;
use super::{Head, OpenGate, OpenState, Replayed, Writer};
use crate::events::{Event, Fact, TextRef};
use crate::ledger::LedgerError;
use crate::ledger::hash::{GENESIS_PREV_HASH, event_value_hash, parse_hex32};
use crate::ledger::merkle::{
    Blake3Hasher, LeafSource as MerkleLeafSource, MerkleHasher, MerkleTree, NodeHash,
    root_from_leaf_hashes,
};
use crate::ledger::snapshot::{self, SnapshotWorker};
use crate::ledger::store::{LedgerMeta, Store};
use crate::ledger::view::SessionLog;
use crate::ledger::{chain, event_check};

impl Replayed {
    /// Nothing replayed yet: the state of an empty log.
    pub(super) fn genesis() -> Self {
        Self {
            head: Head {
                seq: 0,
                hash: GENESIS_PREV_HASH.to_owned(),
            },
            tree: MerkleTree::new(Blake3Hasher),
            erased: HashMap::new(),
        }
    }
}

/// Events checked under the snapshot each time the writer finds itself idle, and after each
/// batch while it is busy.
pub(super) const PREFIX_CHECK_IDLE_STEP: u64 = 2_000;
pub(super) const PREFIX_CHECK_BUSY_STEP: u64 = 200;

/// Events read at open (replayed, or checked under a snapshot) from which the store is asked to
/// let go of those reads ([`Store::release_reads`]).
pub(super) const RELEASE_READS_AFTER: u64 = 10_000;

/// The check of the events a loaded snapshot stands for: what a replay would have refused (a
/// gap, a broken link, an event that does not match its hash, another ledger's event) and
/// that the snapshot's Merkle tree and erased commitments are the log's. It reads each event
/// once and folds nothing.
pub(super) struct PrefixCheck {
    next: u64,
    upto: u64,
    prev_hash: String,
    /// The leaves read so far of a block whose lower nodes the tree no longer keeps: once the
    /// block is whole, their root must be the tree's node at its floor.
    block: Vec<NodeHash>,
}

impl PrefixCheck {
    pub(super) fn new(upto: u64) -> Self {
        Self {
            next: 1,
            upto,
            prev_hash: GENESIS_PREV_HASH.to_owned(),
            block: Vec::new(),
        }
    }

    /// Whether `leaf`, the leaf of event `seq`, is the tree's: compared with the kept leaf at
    /// once, and, where the tree keeps only its floor's node (its lower nodes may be dropped
    /// while this check goes on), the whole block's root with that node.
    pub(super) fn leaf_holds(
        &mut self,
        tree: &MerkleTree<Blake3Hasher>,
        seq: u64,
        leaf: NodeHash,
    ) -> bool {
        let index = seq - 1;
        let floor = tree.floor();
        let width = 1u64 << floor;
        if floor > 0 {
            if index.is_multiple_of(width) {
                self.block.clear();
            }
            self.block.push(leaf);
        }
        match tree.kept_node(0, index) {
            Some(kept) => kept == leaf,
            None if floor > 0 && index < tree.len() => {
                if !(index + 1).is_multiple_of(width) {
                    // Judged with the whole block.
                    return true;
                }
                self.block.len() as u64 == width
                    && tree.kept_node(floor, index >> floor)
                        == Some(root_from_leaf_hashes(
                            &Blake3Hasher,
                            self.block.iter().copied(),
                        ))
            }
            None => false,
        }
    }

    /// Checks up to `max` more events; true once every one is checked.
    pub(super) fn step<S: Store>(
        &mut self,
        store: &S,
        meta: &LedgerMeta,
        tree: &MerkleTree<Blake3Hasher>,
        erased: &HashMap<[u8; 32], u64>,
        max: u64,
    ) -> Result<bool, LedgerError> {
        let upto = self.target(tree);
        let left = (upto + 1).saturating_sub(self.next);
        let count = left.min(max);
        let end = self.next + count;
        for item in store
            .events_from(self.next)
            .take(usize::try_from(count).unwrap_or(usize::MAX))
        {
            let (seq, bytes) = item?;
            let checked = event_check::check_event(&bytes);
            let event_check::Body::Event(event) = checked.body else {
                return Err(LedgerError::Corrupt(format!("event {seq} does not parse")));
            };
            chain::check_next(self.next - 1, &self.prev_hash, &meta.ledger_id, seq, &event)?;
            if !event
                .leaf
                .is_some_and(|leaf| self.leaf_holds(tree, seq, leaf))
            {
                return Err(LedgerError::Corrupt(format!(
                    "event {seq} is not the one the snapshot's Merkle tree holds"
                )));
            }
            if event.erased.iter().any(|c| !erased.contains_key(c)) {
                return Err(LedgerError::Corrupt(format!(
                    "event {seq} erased texts the snapshot does not know of"
                )));
            }
            self.prev_hash = event.hash;
            self.next += 1;
        }
        if self.next < end {
            return Err(LedgerError::Corrupt(format!(
                "event {} is not in the log",
                self.next
            )));
        }
        Ok(self.next > upto)
    }

    /// The last event to check: the snapshot's anchor, or, when the tree may drop the lower
    /// nodes of the anchor's block, the end of that block (events after the anchor are the
    /// log's own, folded since; checking them too lets the block be judged whole).
    pub(super) fn target(&self, tree: &MerkleTree<Blake3Hasher>) -> u64 {
        let floor = tree.floor();
        if floor == 0 {
            return self.upto;
        }
        let block_end = self.upto.div_ceil(1 << floor) << floor;
        self.upto.max(block_end.min(tree.len()))
    }
}

/// Loads the saved snapshot into `decider` when it is usable, and says why not otherwise.
/// Everything is checked before the decider's state is replaced (see [`super::snapshot`]).
pub(super) fn restore<S: Store, D: Decider>(
    store: &S,
    meta: &LedgerMeta,
    decider: &mut D,
    snapshots: &SnapshotWorker,
) -> Result<Option<Replayed>, String> {
    let Some(version) = decider.state_version() else {
        return Ok(None);
    };
    let Some(bytes) = snapshots
        .load()
        .map_err(|e| format!("it cannot be read: {e}"))?
    else {
        return Ok(None);
    };
    let image = snapshot::decode(bytes, &meta.ledger_id, version)?;
    let stored = store
        .event_bytes(image.seq)
        .map_err(|e| format!("its anchor, event {}, cannot be read: {e}", image.seq))?
        .ok_or_else(|| format!("its anchor, event {}, is not in the log", image.seq))?;
    let value: Value = serde_json::from_slice(&stored)
        .map_err(|e| format!("its anchor, event {}, does not parse: {e}", image.seq))?;
    let hash = event_value_hash(&value)
        .map_err(|e| format!("its anchor, event {}, cannot be hashed: {e}", image.seq))?;
    if hash != image.hash || value.get("hash").and_then(Value::as_str) != Some(&hash) {
        return Err(format!(
            "event {} of the log is not the event it was taken after",
            image.seq
        ));
    }
    let last_leaf = image
        .seq
        .checked_sub(1)
        .and_then(|i| image.tree.leaf_hash(i).ok());
    let anchor_leaf = leaf_data(&hash).map(|d| Blake3Hasher.hash_leaf(&d)).ok();
    if last_leaf.is_none() || last_leaf != anchor_leaf {
        return Err("its Merkle tree does not end in its anchor's leaf".into());
    }
    decider.load_state(image.state())?;
    Ok(Some(Replayed {
        head: Head {
            seq: image.seq,
            hash,
        },
        tree: image.tree,
        erased: image.erased,
    }))
}

/// Folds the events after `start` into state, refusing a log whose chain does not hold.
pub(super) fn replay<S: Store, D: Decider>(
    store: &S,
    meta: &LedgerMeta,
    decider: &mut D,
    gate: &OpenGate,
    start: Replayed,
) -> Result<Replayed, LedgerError> {
    let Replayed {
        mut head,
        mut tree,
        mut erased,
    } = start;
    gate.replayed.store(head.seq, Ordering::Relaxed);
    for item in store.events_from(head.seq + 1) {
        if gate.abort.load(Ordering::Relaxed) {
            return Err(LedgerError::OpenAborted);
        }
        let (seq, bytes) = item?;
        fold_stored(
            store,
            meta,
            decider,
            (&mut head, &mut tree, &mut erased),
            seq,
            &bytes,
        )?;
        gate.replayed.store(seq, Ordering::Relaxed);
    }
    Ok(Replayed { head, tree, erased })
}

/// Folds the stored event `seq` into state after `head`, refusing one that does not chain to it
/// (replay at open, and a shared store's events from other writers). Returns the event.
fn fold_stored<S: Store, D: Decider>(
    store: &S,
    meta: &LedgerMeta,
    decider: &mut D,
    (head, tree, erased): (
        &mut Head,
        &mut MerkleTree<Blake3Hasher>,
        &mut HashMap<[u8; 32], u64>,
    ),
    seq: u64,
    bytes: &[u8],
) -> Result<Event, LedgerError> {
    let value: serde_json::Value = serde_json::from_slice(bytes)
        .map_err(|e| LedgerError::Corrupt(format!("event {seq} does not parse: {e}")))?;
    let event = Event::deserialize(&value)
        .map_err(|e| LedgerError::Corrupt(format!("event {seq} does not parse: {e}")))?;
    // Hashed as stored (a member `Event` does not know still counts), as every reader of the
    // log hashes it.
    let event_check::Body::Event(envelope) = event_check::check_event(bytes).body else {
        return Err(LedgerError::Corrupt(format!("event {seq} does not parse")));
    };
    chain::check_next(head.seq, &head.hash, &meta.ledger_id, seq, &envelope)?;
    let lookup = |r: &TextRef| -> Option<Arc<str>> {
        let key = parse_hex32(&r.commitment)?;
        store
            .text(&key)
            .ok()
            .flatten()
            .map(|rec| Arc::from(rec.text))
    };
    decider.apply(&event, &lookup);
    decider.derive();
    tree.push_leaf(&leaf_data(&event.hash)?);
    note_erasures(&event, erased);
    *head = Head {
        seq,
        hash: event.hash.clone(),
    };
    Ok(event)
}

/// The Merkle leaf data of an event: the 32 bytes of its hash.
pub(super) fn leaf_data(hash: &str) -> Result<[u8; 32], LedgerError> {
    parse_hex32(hash).ok_or_else(|| LedgerError::Corrupt(format!("event hash {hash} is not hex")))
}

/// Below this height the writer's Merkle tree keeps only the nodes of its last block of
/// `2^TREE_FLOOR` leaves; the others are read back from the stored events when a proof or an
/// old root needs them (at most `2^TREE_FLOOR` events per node). At 1,000,000 events the tree
/// then holds 8 MB instead of 64 MB. Nodes are dropped only over durable events (after each
/// sync): a decision may ask about events of its own batch, which the store does not hold yet.
pub(super) const TREE_FLOOR: u32 = 3;

/// Leaf hashes read back from the stored events (`H(0x00 ‖ hash)` of each event's recorded
/// hash, as the writer appended them), a whole block of `2^TREE_FLOOR` at a time. The last
/// block read is kept: proofs for neighbouring leaves (an export of a range) need the same one,
/// and a stored event's hash never changes.
pub(super) struct LogLeaves {
    log: Arc<dyn SessionLog>,
    last: std::sync::Mutex<Option<(u64, Vec<NodeHash>)>>,
}

impl LogLeaves {
    pub(super) fn new(log: Arc<dyn SessionLog>) -> Self {
        Self {
            log,
            last: std::sync::Mutex::new(None),
        }
    }

    fn read(&self, start: u64, end: u64) -> Result<Vec<NodeHash>, String> {
        if start >= end {
            return Ok(Vec::new());
        }
        let events = self
            .log
            .events_bytes(start + 1, end)
            .map_err(|e| e.to_string())?;
        let mut expected = start + 1;
        let mut leaves = Vec::with_capacity(events.len());
        for (seq, bytes) in events {
            if seq != expected {
                return Err(format!("event {expected} is not in the log"));
            }
            let hash: EventHash = serde_json::from_slice(&bytes)
                .map_err(|e| format!("event {seq} does not parse: {e}"))?;
            let data = leaf_data(&hash.hash).map_err(|e| e.to_string())?;
            leaves.push(Blake3Hasher.hash_leaf(&data));
            expected += 1;
        }
        if expected <= end {
            return Err(format!("event {expected} is not in the log"));
        }
        Ok(leaves)
    }
}

impl MerkleLeafSource for LogLeaves {
    fn leaf_hashes(&self, start: u64, end: u64) -> Result<Vec<NodeHash>, String> {
        let width = 1u64 << TREE_FLOOR;
        let block = start - start % width;
        if end > block + width {
            // Not within one block (the tree never asks for that): read as asked.
            return self.read(start, end);
        }
        let mut last = self.last.lock().unwrap_or_else(|e| e.into_inner());
        if last.as_ref().is_none_or(|(at, _)| *at != block) {
            *last = Some((block, self.read(block, block + width)?));
        }
        let leaves = last
            .as_ref()
            .map(|(_, leaves)| leaves.as_slice())
            .unwrap_or(&[]);
        let from = usize::try_from(start - block).map_err(|e| e.to_string())?;
        let to = usize::try_from(end - block).map_err(|e| e.to_string())?;
        leaves
            .get(from..to)
            .map(<[NodeHash]>::to_vec)
            .ok_or_else(|| format!("leaves {start}..{end} are not in block {block}"))
    }
}

/// The one field of a stored event that its leaf is made from.
#[derive(Deserialize)]
struct EventHash {
    hash: String,
}

/// Adds the commitments an event erased to `erased` (commitment → seq of the erasure).
pub(super) fn note_erasures(event: &Event, erased: &mut HashMap<[u8; 32], u64>) -> Vec<[u8; 32]> {
    let mut now = Vec::new();
    for fact in &event.facts {
        if let Fact::TextsErased { commitments, .. } = fact {
            for c in commitments.iter().filter_map(|c| parse_hex32(c)) {
                erased.entry(c).or_insert(event.seq);
                now.push(c);
            }
        }
    }
    now
}

impl<S: Store, D: Decider> Writer<S, D> {
    /// Checks up to `max` more events under the loaded snapshot. On a log that does not hold,
    /// the ledger stops taking calls, saying why, and false is returned.
    pub(super) fn check_prefix(&mut self, max: u64) -> bool {
        let Some(check) = &mut self.prefix_check else {
            return true;
        };
        match check.step(&self.store, &self.meta, &self.tree, &self.erased, max) {
            Ok(false) => true,
            Ok(true) => {
                tracing::info!(
                    events = check.upto,
                    "the events under the snapshot are checked"
                );
                self.prefix_check = None;
                let started = std::time::Instant::now();
                match self.store.release_reads() {
                    Ok(()) => {
                        tracing::debug!(took = ?started.elapsed(), "the check's reads let go");
                        true
                    }
                    Err(e) => {
                        tracing::error!(error = %e, "the store cannot be used; calls are refused");
                        self.gate.state.send_replace(OpenState::Failed(Arc::new(e)));
                        self.stop_publishing();
                        false
                    }
                }
            }
            Err(e) => {
                tracing::error!(
                    error = %e,
                    "the log does not hold under its snapshot; calls are refused"
                );
                self.prefix_check = None;
                self.gate.state.send_replace(OpenState::Failed(Arc::new(e)));
                self.stop_publishing();
                false
            }
        }
    }

    /// Folds the events other writers of a shared store appended since this writer's head
    /// (none for a store of its own); returns how many.
    pub(super) fn catch_up(&mut self) -> Result<u64, LedgerError> {
        if !self.store.shared() {
            return Ok(0);
        }
        let mut folded = 0;
        let from = self.head.seq + 1;
        let events: Vec<_> = self.store.events_from(from).collect();
        for item in events {
            let (seq, bytes) = item?;
            let event = fold_stored(
                &self.store,
                &self.meta,
                &mut self.decider,
                (&mut self.head, &mut self.tree, &mut self.erased),
                seq,
                &bytes,
            )?;
            self.last_recorded_at = DateTime::parse_from_rfc3339(&event.recorded_at)
                .ok()
                .map(|at| at.with_timezone(&Utc));
            folded += 1;
        }
        Ok(folded)
    }
}
