//! Snapshots: the writer's state (the decider's projections, the Merkle tree's stored nodes,
//! the erased commitments) saved at one point of the log, so that opening a ledger loads them
//! and folds only the events recorded since, instead of every event ever recorded.
//!
//! A snapshot is never the truth, only a shortcut to it. It is anchored to `(seq, hash)` of the
//! event it was taken after and carries a BLAKE3 digest of its own bytes. At open it is used only
//! when its digest holds, it was saved by this ledger, under the decider's current
//! [`Decider::state_version`](super::Decider::state_version), its anchor is an event of the log
//! whose recomputed hash is the anchor's, and its tree ends in that event's leaf; anything else
//! (missing, stale, corrupt, older version) is logged and state is rebuilt from the log. The
//! signed checkpoints are then checked against the loaded tree as after a full replay, and
//! `thinkledger verify` stays a full check of every event.
//!
//! Snapshots hold texts (the projections show them), so an erasure removes every snapshot taken
//! before it, before the erasing call is answered (see [`SnapshotWorker::invalidate`]); a crash
//! in between is caught at open, which drops a snapshot older than an erasure it replays.
//!
//! File layout (little-endian, all of it covered by the trailing digest):
//!
//! ```text
//! "thinkledger-snapshot/1\n"
//! header: one line of JSON, then "\n" (see `Header`)
//! tree:   the tree's stored nodes, level 0 (the leaf hashes) first, 32 bytes each
//! erased: JSON array of [commitment hex, seq]
//! state:  the decider's bytes
//! digest: 32 bytes, BLAKE3 of everything before it
//! ```

use std::collections::HashMap;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};

use serde::{Deserialize, Serialize};

use super::hash::{hex, parse_hex32};
use super::merkle::{Blake3Hasher, MerkleTree, NodeHash, kept_level_lens};

/// The first line of every snapshot.
const MAGIC: &[u8] = b"thinkledger-snapshot/1\n";

/// Where a store keeps its snapshots. Implementations save atomically and durably: after a
/// crash, [`SnapshotStore::load`] returns the old snapshot or the new one, never a mix.
pub trait SnapshotStore: Send + Sync + 'static {
    /// The newest saved snapshot of `state_version`, if any (a store that keeps one snapshot
    /// returns it whatever its version: [`decode`] refuses another version).
    fn load(&self, state_version: &str) -> std::io::Result<Option<Vec<u8>>>;
    /// Saves `bytes`, a snapshot made by [`encode`] (a store that keeps one replaces it).
    fn save(&self, bytes: &[u8]) -> std::io::Result<()>;
    /// Removes every saved snapshot anchored before `seq` (an erasure's; a store that keeps
    /// one removes it), and refuses any later save anchored before it.
    fn clear(&self, seq: u64) -> std::io::Result<()>;
    /// Whether a snapshot of `state_version` anchored at `seq` or later is saved already (by
    /// another process sharing the store), so that one more is not worth making. The default
    /// (a store of one process): never.
    fn holds_from(&self, _seq: u64, _state_version: &str) -> std::io::Result<bool> {
        Ok(false)
    }
}

/// A snapshot kept as one file in a directory (the sled store's).
#[derive(Debug)]
pub struct FileSnapshots {
    path: PathBuf,
    temp: PathBuf,
    dir: PathBuf,
}

impl FileSnapshots {
    /// The file name of the snapshot inside the store's directory.
    pub const FILE_NAME: &'static str = "projections.snapshot";

    pub fn new(dir: &Path) -> Self {
        Self {
            path: dir.join(Self::FILE_NAME),
            temp: dir.join(format!("{}.tmp", Self::FILE_NAME)),
            dir: dir.to_path_buf(),
        }
    }

    fn sync_dir(&self) -> std::io::Result<()> {
        std::fs::File::open(&self.dir)?.sync_all()
    }
}

impl SnapshotStore for FileSnapshots {
    fn load(&self, _state_version: &str) -> std::io::Result<Option<Vec<u8>>> {
        match std::fs::read(&self.path) {
            Ok(bytes) => Ok(Some(bytes)),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(None),
            Err(e) => Err(e),
        }
    }

    fn save(&self, bytes: &[u8]) -> std::io::Result<()> {
        let mut file = super::private::options()
            .write(true)
            .create(true)
            .truncate(true)
            .open(&self.temp)?;
        file.write_all(bytes)?;
        file.sync_all()?;
        drop(file);
        std::fs::rename(&self.temp, &self.path)?;
        self.sync_dir()
    }

    fn clear(&self, _seq: u64) -> std::io::Result<()> {
        for path in [&self.path, &self.temp] {
            match std::fs::remove_file(path) {
                Ok(()) => {}
                Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
                Err(e) => return Err(e),
            }
        }
        self.sync_dir()
    }
}

/// A snapshot kept in memory (for [`super::MemStore`]).
#[derive(Debug, Default)]
pub struct MemSnapshots {
    bytes: Mutex<Option<Vec<u8>>>,
}

impl SnapshotStore for MemSnapshots {
    fn load(&self, _state_version: &str) -> std::io::Result<Option<Vec<u8>>> {
        Ok(self.bytes.lock().unwrap_or_else(|p| p.into_inner()).clone())
    }

    fn save(&self, bytes: &[u8]) -> std::io::Result<()> {
        *self.bytes.lock().unwrap_or_else(|p| p.into_inner()) = Some(bytes.to_vec());
        Ok(())
    }

    fn clear(&self, _seq: u64) -> std::io::Result<()> {
        *self.bytes.lock().unwrap_or_else(|p| p.into_inner()) = None;
        Ok(())
    }
}

/// The header line of a snapshot.
#[derive(Debug, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
struct Header {
    ledger_id: String,
    state_version: String,
    /// The anchor: the last event folded into this state, and its hash.
    seq: u64,
    hash: String,
    /// The tree's floor: below it, only the nodes of the last block of `2^treeFloor` leaves are
    /// in the tree section (0, or absent: every node).
    #[serde(default, skip_serializing_if = "is_zero")]
    tree_floor: u32,
    /// The leaves whose nodes below the floor are not in the tree section (whole blocks of
    /// `2^treeFloor` from the first; absent: none).
    #[serde(default, skip_serializing_if = "is_zero_u64")]
    tree_pruned: u64,
    tree_bytes: u64,
    erased_bytes: u64,
    state_bytes: u64,
}

fn is_zero(n: &u32) -> bool {
    *n == 0
}

fn is_zero_u64(n: &u64) -> bool {
    *n == 0
}

/// What a snapshot restores besides the decider's state.
pub(crate) struct Image {
    pub seq: u64,
    pub hash: String,
    pub tree: MerkleTree<Blake3Hasher>,
    pub erased: HashMap<[u8; 32], u64>,
    /// The snapshot's bytes, kept whole so the decider's state (most of them) is not copied.
    bytes: Vec<u8>,
    state_at: usize,
}

impl Image {
    /// The decider's bytes.
    pub fn state(&self) -> &[u8] {
        &self.bytes[self.state_at..]
    }
}

/// The bytes of a snapshot of the writer's state after event `seq` (whose hash is `hash`): the
/// decider's `state` bytes, with the header, tree and erased list put in front of them in
/// place (the state, most of the bytes, is not copied into a second buffer).
pub(crate) fn encode(
    ledger_id: &str,
    state_version: &str,
    seq: u64,
    hash: &str,
    tree: &MerkleTree<Blake3Hasher>,
    erased: &HashMap<[u8; 32], u64>,
    state: Vec<u8>,
) -> Result<Vec<u8>, String> {
    let mut erased: Vec<(String, u64)> = erased.iter().map(|(c, s)| (hex(c), *s)).collect();
    erased.sort_by(|a, b| a.1.cmp(&b.1).then_with(|| a.0.cmp(&b.0)));
    let erased = serde_json::to_vec(&erased).map_err(|e| e.to_string())?;
    let nodes: usize = tree.levels().iter().map(Vec::len).sum();
    let header = Header {
        ledger_id: ledger_id.to_owned(),
        state_version: state_version.to_owned(),
        seq,
        hash: hash.to_owned(),
        tree_floor: tree.floor(),
        tree_pruned: tree.pruned(),
        tree_bytes: (nodes * 32) as u64,
        erased_bytes: erased.len() as u64,
        state_bytes: state.len() as u64,
    };
    let header = serde_json::to_vec(&header).map_err(|e| e.to_string())?;
    let mut prefix = Vec::with_capacity(MAGIC.len() + header.len() + 1 + nodes * 32 + erased.len());
    prefix.extend_from_slice(MAGIC);
    prefix.extend_from_slice(&header);
    prefix.push(b'\n');
    for level in tree.levels() {
        for node in level {
            prefix.extend_from_slice(node);
        }
    }
    prefix.extend_from_slice(&erased);
    let mut out = state;
    out.reserve_exact(prefix.len() + 32);
    out.splice(0..0, prefix);
    let digest = blake3::hash(&out);
    out.extend_from_slice(digest.as_bytes());
    Ok(out)
}

/// What a snapshot's header says it is, read without checking its digest (a store files the
/// snapshot under it; [`decode`] checks everything when it is loaded). Only the PostgreSQL
/// store files snapshots so.
#[derive(Debug, Clone, PartialEq, Eq)]
#[cfg_attr(not(feature = "postgres"), allow(dead_code))]
pub(crate) struct Anchor {
    pub seq: u64,
    pub hash: String,
    pub state_version: String,
}

/// The [`Anchor`] in the header of `bytes`.
#[cfg_attr(not(feature = "postgres"), allow(dead_code))]
pub(crate) fn anchor_of(bytes: &[u8]) -> Result<Anchor, String> {
    let (header, _) = header_of(bytes)?;
    Ok(Anchor {
        seq: header.seq,
        hash: header.hash,
        state_version: header.state_version,
    })
}

/// The header of a snapshot's `bytes` (after the magic line), and the sections after it.
fn header_of(bytes: &[u8]) -> Result<(Header, &[u8]), String> {
    let rest = bytes
        .strip_prefix(MAGIC)
        .ok_or("it does not start with thinkledger-snapshot/1")?;
    let newline = rest
        .iter()
        .position(|b| *b == b'\n')
        .ok_or("it has no header line")?;
    let header: Header = serde_json::from_slice(&rest[..newline])
        .map_err(|e| format!("its header does not parse: {e}"))?;
    Ok((header, &rest[newline + 1..]))
}

/// Reads a snapshot, checking its digest, its ledger and its state version; the anchor is the
/// caller's to check against the log.
pub(crate) fn decode(
    mut bytes: Vec<u8>,
    ledger_id: &str,
    state_version: &str,
) -> Result<Image, String> {
    let body_len = bytes
        .len()
        .checked_sub(32)
        .ok_or("the file is shorter than its digest")?;
    if blake3::hash(&bytes[..body_len]).as_bytes() != &bytes[body_len..] {
        return Err("its digest does not match its bytes".into());
    }
    bytes.truncate(body_len);
    let (header, body) = header_of(&bytes)?;
    if header.ledger_id != ledger_id {
        return Err(format!(
            "it was saved by ledger {}, not this one ({ledger_id})",
            header.ledger_id
        ));
    }
    if header.state_version != state_version {
        return Err(format!(
            "it holds state version {}, this build reads {state_version}",
            header.state_version
        ));
    }
    let sizes = [header.tree_bytes, header.erased_bytes, header.state_bytes];
    let total = sizes
        .iter()
        .try_fold(0u64, |sum, s| sum.checked_add(*s))
        .ok_or("its section sizes overflow")?;
    if total != body.len() as u64 {
        return Err(format!(
            "its sections add up to {total} bytes, the file holds {}",
            body.len()
        ));
    }
    let (tree_bytes, rest) = body.split_at(header.tree_bytes as usize);
    let (erased_bytes, state) = rest.split_at(header.erased_bytes as usize);
    let state_at = body_len - state.len();
    let tree = tree_from_nodes(
        header.seq,
        header.tree_floor,
        header.tree_pruned,
        tree_bytes,
    )?;
    let erased: Vec<(String, u64)> = serde_json::from_slice(erased_bytes)
        .map_err(|e| format!("its erased list does not parse: {e}"))?;
    let erased = erased
        .into_iter()
        .map(|(c, s)| parse_hex32(&c).map(|c| (c, s)))
        .collect::<Option<HashMap<_, _>>>()
        .ok_or("its erased list holds a commitment that is not 64 hex digits")?;
    Ok(Image {
        seq: header.seq,
        hash: header.hash,
        tree,
        erased,
        bytes,
        state_at,
    })
}

/// The tree of `leaves` leaves whose kept nodes (below `floor`, those after the first `dropped`
/// leaves) are `bytes` (level by level, leaves first).
fn tree_from_nodes(
    leaves: u64,
    floor: u32,
    dropped: u64,
    bytes: &[u8],
) -> Result<MerkleTree<Blake3Hasher>, String> {
    let lens = kept_level_lens(floor, leaves, dropped).map_err(|e| format!("its tree: {e}"))?;
    if lens.iter().sum::<usize>().checked_mul(32) != Some(bytes.len()) {
        return Err("its tree section is not the size its anchor says".into());
    }
    let mut nodes = bytes.chunks_exact(32).map(|c| {
        let mut node: NodeHash = [0; 32];
        node.copy_from_slice(c);
        node
    });
    let levels = lens
        .into_iter()
        .map(|len| nodes.by_ref().take(len).collect())
        .collect();
    MerkleTree::from_kept_levels(Blake3Hasher, floor, leaves, dropped, levels)
        .map_err(|e| format!("its tree: {e}"))
}

/// How much the snapshot thread raises its nice value: a snapshot is a cache, and making one
/// (serializing the whole state: seconds of CPU at 100,000 memories) should take the cores
/// calls leave idle, not the ones they wait for. At +10 the kernel gives a thread a tenth of
/// the share of a thread at the default, so a snapshot still finishes under sustained load.
const SNAPSHOT_NICE: i32 = 10;

/// Lowers the calling thread's CPU priority by [`SNAPSHOT_NICE`] (Linux keeps a nice value per
/// thread). Elsewhere, or if the kernel refuses, the thread runs at the default priority.
fn yield_to_calls() {
    #[cfg(target_os = "linux")]
    {
        let me = Some(rustix::thread::gettid());
        let now = rustix::process::getpriority_process(me).unwrap_or(0);
        if let Err(e) = rustix::process::setpriority_process(me, (now + SNAPSHOT_NICE).min(19)) {
            tracing::debug!(error = %e, "the snapshot thread keeps the default priority");
        }
    }
}

/// A snapshot to be made: its bytes, built on the snapshot thread (from a view of state that
/// the writer no longer changes).
pub(crate) type SnapshotJob = Box<dyn FnOnce() -> Result<Vec<u8>, String> + Send>;

/// Makes and saves snapshots on a thread of its own: the writer only hands over a view of its
/// state, and serializing, hashing and writing happen here.
///
/// Saves and erasures are ordered by one lock: [`SnapshotWorker::invalidate`] waits for a save
/// in progress, removes the saved snapshot and raises a watermark below which queued saves are
/// dropped, so no snapshot older than an erasure survives the erasing call's answer.
pub(crate) struct SnapshotWorker {
    store: Arc<dyn SnapshotStore>,
    /// The decider's state version, whose snapshots this worker saves and loads.
    state_version: &'static str,
    /// Snapshots anchored below this seq are never saved (an erasure came after them).
    watermark: Arc<Mutex<u64>>,
    busy: Arc<AtomicBool>,
    tx: Option<std::sync::mpsc::Sender<Queued>>,
    thread: Option<std::thread::JoinHandle<()>>,
}

/// A save handed to the snapshot thread.
struct Queued {
    /// The seq the snapshot is anchored at.
    seq: u64,
    /// A snapshot saved (by another process) anchored at this seq or later makes this one
    /// not worth making.
    fresh_from: u64,
    job: SnapshotJob,
}

impl SnapshotWorker {
    pub fn start(
        store: Arc<dyn SnapshotStore>,
        state_version: &'static str,
    ) -> std::io::Result<Self> {
        let (tx, rx) = std::sync::mpsc::channel::<Queued>();
        let watermark = Arc::new(Mutex::new(0u64));
        let busy = Arc::new(AtomicBool::new(false));
        let (thread_store, thread_watermark, thread_busy) =
            (store.clone(), watermark.clone(), busy.clone());
        let thread = std::thread::Builder::new()
            .name("thinkledger-snapshot".into())
            .spawn(move || {
                yield_to_calls();
                for queued in rx {
                    make_and_save(&*thread_store, state_version, &thread_watermark, queued);
                    thread_busy.store(false, Ordering::Release);
                }
            })?;
        Ok(Self {
            store,
            state_version,
            watermark,
            busy,
            tx: Some(tx),
            thread: Some(thread),
        })
    }

    /// Whether a save is queued or in progress.
    pub fn busy(&self) -> bool {
        self.busy.load(Ordering::Acquire)
    }

    /// Queues `job` (which makes a snapshot anchored at `seq`) to be made and saved, unless a
    /// snapshot anchored at `fresh_from` or later is saved by then (another process sharing
    /// the store made it).
    pub fn save(&self, seq: u64, fresh_from: u64, job: SnapshotJob) {
        if let Some(tx) = &self.tx {
            self.busy.store(true, Ordering::Release);
            let queued = Queued {
                seq,
                fresh_from,
                job,
            };
            if tx.send(queued).is_err() {
                self.busy.store(false, Ordering::Release);
            }
        }
    }

    /// Removes every snapshot anchored before `seq` (an erasure's), saved or queued.
    pub fn invalidate(&self, seq: u64) -> std::io::Result<()> {
        let mut floor = self.watermark.lock().unwrap_or_else(|p| p.into_inner());
        *floor = (*floor).max(seq);
        self.store.clear(seq)
    }

    /// The newest saved snapshot's bytes of this worker's state version, if any.
    pub fn load(&self) -> std::io::Result<Option<Vec<u8>>> {
        self.store.load(self.state_version)
    }

    /// Waits until every queued save is done.
    pub fn finish(&mut self) {
        drop(self.tx.take());
        if let Some(thread) = self.thread.take() {
            let _ = thread.join();
        }
    }
}

impl Drop for SnapshotWorker {
    fn drop(&mut self) {
        self.finish();
    }
}

/// On the snapshot thread: makes the snapshot `queued` asks for and saves it, unless an erasure
/// came after its anchor (`watermark`) or a fresh enough one is saved already.
fn make_and_save(
    store: &dyn SnapshotStore,
    state_version: &str,
    watermark: &Mutex<u64>,
    queued: Queued,
) {
    let Queued {
        seq,
        fresh_from,
        job,
    } = queued;
    match store.holds_from(fresh_from, state_version) {
        Ok(true) => {
            tracing::debug!(
                seq,
                fresh_from,
                "a snapshot saved meanwhile is fresh enough"
            );
            return;
        }
        Ok(false) => {}
        Err(e) => tracing::debug!(error = %e, "whether a snapshot is saved already is not known"),
    }
    let started = std::time::Instant::now();
    let made = job();
    let made_ms = started.elapsed().as_millis() as u64;
    let floor = watermark.lock().unwrap_or_else(|p| p.into_inner());
    match made {
        Ok(bytes) if seq >= *floor => match store.save(&bytes) {
            Ok(()) => tracing::info!(
                seq,
                bytes = bytes.len(),
                made_ms,
                took_ms = started.elapsed().as_millis() as u64,
                "snapshot saved"
            ),
            Err(e) => tracing::warn!(
                seq,
                error = %e,
                "saving a snapshot failed; the next open replays more of the log"
            ),
        },
        Ok(_) => {}
        Err(reason) => tracing::warn!(seq, %reason, "no snapshot could be made"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn tree(n: u64) -> MerkleTree<Blake3Hasher> {
        let mut tree = MerkleTree::new(Blake3Hasher);
        for i in 0..n {
            tree.push_leaf(&i.to_be_bytes());
        }
        tree
    }

    #[test]
    fn a_snapshot_decodes_to_what_was_encoded() {
        for n in [0u64, 1, 2, 3, 7, 8, 100] {
            let tree = tree(n);
            let erased = HashMap::from([([7u8; 32], 5u64)]);
            let bytes = encode("L", "v1", n, "h", &tree, &erased, b"{\"x\":1}".to_vec()).unwrap();
            let anchor = Anchor {
                seq: n,
                hash: "h".into(),
                state_version: "v1".into(),
            };
            assert_eq!(anchor_of(&bytes), Ok(anchor));
            let image = decode(bytes, "L", "v1").unwrap();
            assert_eq!(image.seq, n);
            assert_eq!(image.hash, "h");
            assert_eq!(image.tree.len(), n);
            assert_eq!(image.tree.root(), tree.root());
            assert_eq!(image.tree.levels(), tree.levels());
            assert_eq!(image.erased, erased);
            assert_eq!(image.state(), b"{\"x\":1}");
        }
    }

    struct NoLeaves;

    impl crate::ledger::merkle::LeafSource for NoLeaves {
        fn leaf_hashes(&self, _: u64, _: u64) -> Result<Vec<NodeHash>, String> {
            Err("none here".into())
        }
    }

    #[test]
    fn a_tree_that_keeps_only_its_top_decodes_to_the_same_nodes() {
        for n in [1u64, 7, 8, 9, 16, 17, 100] {
            let mut kept = tree(n);
            kept.keep_lower_levels_in(3, std::sync::Arc::new(NoLeaves));
            let bytes = encode("L", "v1", n, "h", &kept, &HashMap::new(), b"{}".to_vec()).unwrap();
            let image = decode(bytes, "L", "v1").unwrap();
            assert_eq!(image.tree.floor(), 3);
            assert_eq!(image.tree.levels(), kept.levels(), "{n} leaves");
            assert_eq!(image.tree.root(), tree(n).root());
            assert_eq!(image.tree.kept_node(0, n - 1), tree(n).kept_node(0, n - 1));
        }
    }

    #[test]
    fn a_damaged_foreign_or_outdated_snapshot_is_refused_with_its_reason() {
        let bytes = encode("L", "v1", 3, "h", &tree(3), &HashMap::new(), b"{}".to_vec()).unwrap();
        for at in [0, MAGIC.len() + 3, bytes.len() - 40, bytes.len() - 1] {
            let mut damaged = bytes.clone();
            damaged[at] ^= 1;
            let why = decode(damaged, "L", "v1").err().unwrap();
            assert!(why.contains("digest"), "{why}");
        }
        let why = decode(bytes[..bytes.len() - 10].to_vec(), "L", "v1")
            .err()
            .unwrap();
        assert!(why.contains("digest"), "{why}");
        let why = decode(bytes.clone(), "M", "v1").err().unwrap();
        assert!(why.contains("ledger"), "{why}");
        let why = decode(bytes, "L", "v2").err().unwrap();
        assert!(why.contains("state version"), "{why}");
    }

    #[test]
    fn an_erasure_drops_older_snapshots_saved_or_queued() {
        let store = Arc::new(MemSnapshots::default());
        let mut worker = SnapshotWorker::start(store.clone(), "v1").unwrap();
        worker.save(5, 0, Box::new(|| Ok(b"five".to_vec())));
        worker.invalidate(6).unwrap();
        worker.save(4, 0, Box::new(|| Ok(b"four".to_vec())));
        worker.finish();
        assert_eq!(store.load("v1").unwrap(), None);
        let mut worker = SnapshotWorker::start(store.clone(), "v1").unwrap();
        worker.save(7, 0, Box::new(|| Ok(b"seven".to_vec())));
        worker.finish();
        assert_eq!(store.load("v1").unwrap().as_deref(), Some(&b"seven"[..]));
    }

    /// Snapshots are made at a nice value [`SNAPSHOT_NICE`] above the threads that queue them
    /// (19 at most), read by the job itself on the snapshot thread.
    #[cfg(target_os = "linux")]
    #[test]
    fn snapshots_are_made_at_a_lower_priority_than_calls() {
        let nice = || rustix::process::getpriority_process(Some(rustix::thread::gettid()));
        let ours = nice().unwrap();
        let (tx, rx) = std::sync::mpsc::channel();
        let mut worker = SnapshotWorker::start(Arc::new(MemSnapshots::default()), "v1").unwrap();
        worker.save(
            1,
            0,
            Box::new(move || {
                tx.send(nice()).map_err(|e| e.to_string())?;
                Ok(b"one".to_vec())
            }),
        );
        worker.finish();
        let theirs = rx.recv().unwrap().unwrap();
        assert_eq!(theirs, (ours + SNAPSHOT_NICE).min(19));
        assert_eq!(
            nice().unwrap(),
            ours,
            "the caller's own priority is unchanged"
        );
    }

    #[test]
    fn a_file_snapshot_is_replaced_whole_and_cleared() {
        let dir = tempfile::tempdir().unwrap();
        let files = FileSnapshots::new(dir.path());
        assert_eq!(files.load("v1").unwrap(), None);
        files.save(b"one").unwrap();
        files.save(b"two").unwrap();
        assert_eq!(files.load("v1").unwrap().as_deref(), Some(&b"two"[..]));
        files.clear(1).unwrap();
        assert_eq!(files.load("v1").unwrap(), None);
        assert!(!dir.path().join("projections.snapshot.tmp").exists());
    }
}
