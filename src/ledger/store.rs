//! Storage behind a small trait: events by seq, a per-session index, the erasable text store and
//! ledger metadata. [`SledStore`] is the embedded on-disk store; [`MemStore`] backs pure tests.
//!
//! A store only keeps bytes. It does not hash, decide, or know what an event means beyond the
//! session id it is indexed under. Durability is explicit: [`Store::append_batch`] stages,
//! [`Store::sync`] makes everything staged durable (for sled: flush, then a real fsync).

use std::collections::{BTreeMap, HashSet};
use std::ffi::OsString;
use std::fs::File;
use std::path::{Path, PathBuf};
use std::sync::{Arc, RwLock};

use serde::{Deserialize, Serialize};

use super::LedgerError;
use super::hash::SALT_LEN;
use super::snapshot::{FileSnapshots, MemSnapshots, SnapshotStore};
use super::textfile::{Slot, TextFile, TextReader};
use super::view::SessionLog;
use crate::events::SessionId;

/// Ledger-wide facts fixed when the ledger is created.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct LedgerMeta {
    /// Random UUID naming this ledger; every event carries it.
    pub ledger_id: String,
    /// When the ledger was created (RFC 3339 UTC).
    pub created_at: String,
    /// Storage format tag, `thinkledger/1`.
    pub format: String,
}

/// One piece of erasable text and the salt of its commitment.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TextRecord {
    pub salt: [u8; SALT_LEN],
    pub text: String,
}

/// An event ready to be stored: its seq, its canonical bytes and the session it indexes under.
#[derive(Debug, Clone)]
pub struct StagedEvent {
    pub seq: u64,
    pub bytes: Vec<u8>,
    pub session: Option<SessionId>,
}

/// Everything one group commit writes.
#[derive(Debug, Default, Clone)]
pub struct Batch {
    pub events: Vec<StagedEvent>,
    /// Text records keyed by their 32-byte commitment.
    pub texts: Vec<([u8; 32], TextRecord)>,
}

/// Stored events in seq order: `(key seq, stored bytes)`.
pub type EventIter<'a> = Box<dyn Iterator<Item = Result<(u64, Vec<u8>), LedgerError>> + 'a>;

/// Stored texts with their commitments: `(commitment, the text as [`Store::text`] gives it)`.
pub type TextIter<'a> =
    Box<dyn Iterator<Item = ([u8; 32], Result<Option<TextRecord>, LedgerError>)> + 'a>;

/// Byte storage for the ledger.
pub trait Store: Send + 'static {
    fn meta(&self) -> Result<Option<LedgerMeta>, LedgerError>;
    /// Writes the ledger metadata durably. Called once, when a ledger is created.
    fn init_meta(&mut self, meta: &LedgerMeta) -> Result<(), LedgerError>;
    /// Stages a batch atomically: after a crash either all of it or none of it is visible.
    fn append_batch(&mut self, batch: &Batch) -> Result<(), LedgerError>;
    /// Makes everything staged durable before returning.
    fn sync(&mut self) -> Result<(), LedgerError>;
    /// The highest stored seq, if any.
    fn last_seq(&self) -> Result<Option<u64>, LedgerError>;
    fn event_bytes(&self, seq: u64) -> Result<Option<Vec<u8>>, LedgerError>;
    /// Events with seq ≥ `from`, in seq order, as stored (key seq, bytes).
    fn events_from(&self, from: u64) -> EventIter<'_>;
    /// Seqs of the events recorded against `session`, ascending.
    fn session_seqs(&self, session: &SessionId) -> Result<Vec<u64>, LedgerError>;
    fn text(&self, commitment: &[u8; 32]) -> Result<Option<TextRecord>, LedgerError>;
    /// Every commitment the store indexes a text under, each with what [`Store::text`] gives
    /// for it, in the order the texts sit on disk: for whole-ledger passes (`verify`), which
    /// would otherwise read them one at a time from scattered places.
    fn texts_in_file_order(&self) -> Result<TextIter<'_>, LedgerError>;
    /// Removes the texts and salts behind `commitments` from disk for good, durably, before
    /// returning. Commitments with no stored text are skipped.
    fn erase_texts(&mut self, commitments: &[[u8; 32]]) -> Result<(), LedgerError>;
    /// Where snapshots of the writer's state are kept beside the log (see
    /// [`crate::ledger::snapshot`]); `None` (the default): opening always replays the whole log.
    fn snapshots(&self) -> Option<Arc<dyn SnapshotStore>> {
        None
    }
    /// Lets go of what the store keeps in memory of the reads so far, once a pass has read
    /// much of the log that the work will not read again (the replay or the check of the log
    /// under a snapshot, at open). Everything staged is durable first. The default keeps
    /// nothing to let go of.
    fn release_reads(&mut self) -> Result<(), LedgerError> {
        Ok(())
    }
    /// The log as any thread may read sessions from it beside the writer; `None` (the
    /// default): the state keeps every session in memory.
    fn session_log(&self) -> Option<Arc<dyn SessionLog>> {
        None
    }
}

/// The embedded on-disk store: one sled database in a directory.
pub struct SledStore {
    /// `None` only after [`Store::release_reads`] failed to open the database again.
    sled: Option<Sled>,
    /// Bytes of sled's page cache this store was opened with.
    cache_bytes: u64,
    /// The erasable texts, outside sled (see [`TextFile`]).
    text_file: TextFile,
    /// sled's log file; `fdatasync` on it is what makes a flushed batch survive power loss,
    /// because sled's own `flush` only calls `sync_file_range` on Linux.
    log_file: File,
    dir: PathBuf,
    /// Blob files (sled's out-of-line values) already fsynced.
    synced_blobs: HashSet<OsString>,
    /// Whether a value staged since the last sync may have gone to a blob file, so the next
    /// sync must look for new ones (most batches hold only small values and skip the scan).
    blob_possible: bool,
    /// What readers beside the writer read sessions through (see [`SledReads`]).
    reads: Arc<SledReads>,
}

/// Reads of sessions by any thread, through handles of the store's trees and a read-only
/// handle of its text file. They are let go of while the store opens sled again
/// ([`Store::release_reads`]; a read waits for it) and when the store is dropped (later reads
/// fail): a handle left with a reader would keep sled's file lock held.
pub struct SledReads {
    parts: RwLock<Option<ReadParts>>,
}

struct ReadParts {
    events: sled::Tree,
    sessions: sled::Tree,
    text_index: sled::Tree,
    texts: TextReader,
}

impl ReadParts {
    fn of(sled: &Sled, dir: &Path) -> Result<Self, LedgerError> {
        Ok(Self {
            events: sled.events.clone(),
            sessions: sled.sessions.clone(),
            text_index: sled.text_index.clone(),
            texts: TextReader::open(&dir.join(TEXT_FILE))?,
        })
    }
}

impl SledReads {
    fn with<T>(
        &self,
        read: impl FnOnce(&ReadParts) -> Result<T, LedgerError>,
    ) -> Result<T, LedgerError> {
        let parts = self.parts.read().unwrap_or_else(|e| e.into_inner());
        match &*parts {
            Some(parts) => read(parts),
            None => Err(LedgerError::Sled("the ledger is closed".into())),
        }
    }
}

impl SessionLog for SledReads {
    fn session_seqs(&self, session: &SessionId) -> Result<Vec<u64>, LedgerError> {
        self.with(|p| seqs_of(&p.sessions, session))
    }

    fn event_bytes(&self, seq: u64) -> Result<Option<Vec<u8>>, LedgerError> {
        self.with(|p| {
            Ok(p.events
                .get(seq.to_be_bytes())
                .map_err(sled_err)?
                .map(|v| v.to_vec()))
        })
    }

    fn text(&self, commitment: &[u8; 32]) -> Result<Option<TextRecord>, LedgerError> {
        self.with(|p| match slot_in(&p.text_index, commitment)? {
            None => Ok(None),
            Some(slot) => p.texts.read(slot, commitment),
        })
    }
}

impl Drop for SledStore {
    fn drop(&mut self) {
        *self.reads.parts.write().unwrap_or_else(|e| e.into_inner()) = None;
    }
}

/// The sled database of a [`SledStore`] and its trees.
struct Sled {
    db: sled::Db,
    events: sled::Tree,
    sessions: sled::Tree,
    /// Text commitment → where its record sits in `text_file`.
    text_index: sled::Tree,
    meta: sled::Tree,
}

impl Sled {
    fn open(dir: &Path, cache_bytes: u64) -> Result<Self, LedgerError> {
        let db = sled::Config::new()
            .path(dir)
            .cache_capacity(cache_bytes)
            .open()
            .map_err(|e| match e {
                sled::Error::Io(io) if io.to_string().contains("could not acquire lock") => {
                    LedgerError::Locked {
                        path: dir.to_path_buf(),
                    }
                }
                other => LedgerError::Sled(other.to_string()),
            })?;
        let tree = |name: &str| {
            db.open_tree(name)
                .map_err(|e| LedgerError::Sled(e.to_string()))
        };
        Ok(Self {
            events: tree("events")?,
            sessions: tree("session_events")?,
            text_index: tree("text_index")?,
            meta: tree("meta")?,
            db,
        })
    }
}

/// The erasable text file inside the store's directory.
pub const TEXT_FILE: &str = "texts.dat";

/// Values at least this large may be written by sled 0.34 as separate blob files (its
/// threshold is a quarter of its 512 KiB segment); smaller ones always sit in its log.
const BLOB_CANDIDATE_BYTES: usize = 64 * 1024;

/// Bytes of pages sled keeps in memory in a long-running server (see
/// [`SledStore::open_for_serving`]). Its default (1 GiB) fills with every page the replay at
/// open reads once and never again, so a server's resident memory grew with the log (233 MB
/// at 100,000 events); reads after open touch the newest pages and the session index only.
/// 16 MiB: a server's state is in its projections, so the pages are read again only by
/// exports, replays and session reads (docs/benchmarks.md, "The waypoint search off the
/// writer, shared texts").
pub const SERVING_CACHE_BYTES: u64 = 16 * 1024 * 1024;

/// sled's own default, kept for one-shot commands: `verify` runs 7–12% faster with it.
const ONE_SHOT_CACHE_BYTES: u64 = 1024 * 1024 * 1024;

impl SledStore {
    /// Tests: opens the store in `dir`, waiting up to 10 s for a ledger that was just shut down
    /// (on another thread) to release its lock.
    #[cfg(test)]
    pub(crate) fn reopen(dir: &Path) -> Self {
        when_unlocked(|| Self::open(dir)).unwrap_or_else(|e| panic!("cannot open the store: {e}"))
    }

    /// Tests: [`SledStore::reopen`] as a server opens it ([`SledStore::open_for_serving`]).
    #[cfg(test)]
    pub(crate) fn reopen_for_serving(dir: &Path) -> Self {
        when_unlocked(|| Self::open_for_serving(dir))
            .unwrap_or_else(|e| panic!("cannot open the store: {e}"))
    }
}

/// `open()`, tried again while it fails because the database is still locked, for up to 10 s:
/// sled's threads let go of the file lock a moment after the last handle is dropped.
fn when_unlocked<T>(mut open: impl FnMut() -> Result<T, LedgerError>) -> Result<T, LedgerError> {
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(10);
    loop {
        match open() {
            Err(LedgerError::Locked { .. }) if std::time::Instant::now() < deadline => {
                std::thread::sleep(std::time::Duration::from_millis(5));
            }
            other => return other,
        }
    }
}

impl SledStore {
    /// Opens (or creates) the store in `dir` for a one-shot command (sled's default page
    /// cache). Fails with [`LedgerError::Locked`] when another process has it open.
    pub fn open(dir: &Path) -> Result<Self, LedgerError> {
        Self::open_with_cache(dir, ONE_SHOT_CACHE_BYTES)
    }

    /// Opens the store in `dir` for a server: memory bounded by the work, not by the log
    /// ([`SERVING_CACHE_BYTES`] of pages).
    pub fn open_for_serving(dir: &Path) -> Result<Self, LedgerError> {
        Self::open_with_cache(dir, SERVING_CACHE_BYTES)
    }

    fn open_with_cache(dir: &Path, cache_bytes: u64) -> Result<Self, LedgerError> {
        std::fs::create_dir_all(dir)?;
        let sled = Sled::open(dir, cache_bytes)?;
        let end = texts_end(&sled.meta, &sled.text_index)?;
        // Records past `texts_end` that the index knows of were written by a build that did
        // not keep `texts_end` (a downgrade, then an upgrade): kept.
        let known = |commitment: &[u8; 32], slot: Slot| -> Result<bool, LedgerError> {
            let indexed = sled.text_index.get(&commitment[..]).map_err(sled_err)?;
            Ok(indexed.is_some_and(|value| Slot::decode(&value) == Some(slot)))
        };
        let text_file = TextFile::open(&dir.join(TEXT_FILE), end, &known)?;
        let log_file = File::open(dir.join("db"))?;
        // The directory entry of a new database must be durable too.
        File::open(dir)?.sync_all()?;
        let reads = Arc::new(SledReads {
            parts: RwLock::new(Some(ReadParts::of(&sled, dir)?)),
        });
        Ok(Self {
            reads,
            sled: Some(sled),
            cache_bytes,
            text_file,
            log_file,
            dir: dir.to_path_buf(),
            synced_blobs: HashSet::new(),
            // Blobs written before a crash may never have been fsynced: check once.
            blob_possible: true,
        })
    }

    /// The database, unless a [`Store::release_reads`] could not open it again.
    fn sled(&self) -> Result<&Sled, LedgerError> {
        self.sled.as_ref().ok_or_else(|| {
            LedgerError::Sled("the database is closed: opening it again failed".into())
        })
    }

    /// Overwrites the stored bytes of one event, bypassing the writer and every check. This
    /// exists for tamper drills and tests of `verify`; nothing in the server calls it.
    pub fn tamper_event_bytes(&mut self, seq: u64, bytes: &[u8]) -> Result<(), LedgerError> {
        self.sled()?
            .events
            .insert(seq.to_be_bytes(), bytes)
            .map_err(sled_err)?;
        self.sync()
    }

    /// Removes one stored event (and nothing else), bypassing the writer and every check. For
    /// tamper drills and tests of `verify` only, like [`SledStore::tamper_event_bytes`].
    pub fn tamper_remove_event(&mut self, seq: u64) -> Result<(), LedgerError> {
        self.sled()?
            .events
            .remove(seq.to_be_bytes())
            .map_err(sled_err)?;
        self.sync()
    }

    /// fsyncs blob files sled wrote since the last sync (values too large to sit in its log),
    /// then their directory.
    fn sync_new_blobs(&mut self) -> Result<(), LedgerError> {
        let blobs = self.dir.join("blobs");
        let Ok(entries) = std::fs::read_dir(&blobs) else {
            return Ok(());
        };
        let mut any = false;
        for entry in entries {
            let entry = entry?;
            let name = entry.file_name();
            if !self.synced_blobs.contains(&name) {
                File::open(entry.path())?.sync_data()?;
                self.synced_blobs.insert(name);
                any = true;
            }
        }
        if any {
            File::open(&blobs)?.sync_all()?;
        }
        Ok(())
    }
}

impl SledStore {
    fn slot(&self, commitment: &[u8; 32]) -> Result<Option<Slot>, LedgerError> {
        slot_in(&self.sled()?.text_index, commitment)
    }
}

fn slot_in(text_index: &sled::Tree, commitment: &[u8; 32]) -> Result<Option<Slot>, LedgerError> {
    match text_index.get(commitment).map_err(sled_err)? {
        None => Ok(None),
        Some(bytes) => Slot::decode(&bytes)
            .map(Some)
            .ok_or_else(|| LedgerError::Corrupt("text index entry".into())),
    }
}

fn seqs_of(sessions: &sled::Tree, session: &SessionId) -> Result<Vec<u64>, LedgerError> {
    let prefix = session.as_str().as_bytes();
    sessions
        .scan_prefix(prefix)
        .map(|item| {
            let (key, _) = item.map_err(sled_err)?;
            seq_of(&key[prefix.len()..])
        })
        .collect()
}

/// Key in `meta` of where the last record `text_index` knows of ends in `texts.dat` (8 bytes
/// BE), written in the same transaction as the index entries of each batch with texts.
const TEXTS_END_KEY: &str = "texts_end";

/// A crash drill for debug builds (the tests' binary; release builds have none): with
/// `THINKLEDGER_DRILL_CRASH_BETWEEN_WRITES=N` in its environment, the process aborts right after
/// the N-th batch with texts has made them durable and before sled has seen anything of it, the
/// one moment between the two writes a batch makes (tests/it/durability.rs).
#[cfg(debug_assertions)]
mod crash_drill {
    use std::sync::OnceLock;
    use std::sync::atomic::{AtomicU64, Ordering};

    pub(super) fn between_the_two_writes() {
        static AT: OnceLock<Option<u64>> = OnceLock::new();
        static BATCHES: AtomicU64 = AtomicU64::new(0);
        let at = AT.get_or_init(|| {
            std::env::var("THINKLEDGER_DRILL_CRASH_BETWEEN_WRITES")
                .ok()
                .and_then(|v| v.trim().parse().ok())
        });
        if let Some(at) = at
            && BATCHES.fetch_add(1, Ordering::Relaxed) + 1 == *at
        {
            eprintln!("crash drill: aborting between the text file's sync and sled's write");
            std::process::abort();
        }
    }
}

/// Where the last record the index knows of ends: `texts_end`, or, in a ledger written before
/// that key existed (or holding no text yet), the largest end among the index entries.
fn texts_end(meta: &sled::Tree, text_index: &sled::Tree) -> Result<Option<u64>, LedgerError> {
    if let Some(raw) = meta.get(TEXTS_END_KEY).map_err(sled_err)? {
        let bytes: [u8; 8] = raw
            .as_ref()
            .try_into()
            .map_err(|_| LedgerError::Corrupt(format!("{TEXTS_END_KEY} of {} bytes", raw.len())))?;
        return Ok(Some(u64::from_be_bytes(bytes)));
    }
    let mut end = None;
    for item in text_index.iter() {
        let (_, value) = item.map_err(sled_err)?;
        let slot =
            Slot::decode(&value).ok_or_else(|| LedgerError::Corrupt("text index entry".into()))?;
        end = end.max(Some(slot.end()));
    }
    Ok(end)
}

fn sled_err(e: sled::Error) -> LedgerError {
    LedgerError::Sled(e.to_string())
}

fn session_key(session: &SessionId, seq: u64) -> Vec<u8> {
    let mut key = Vec::with_capacity(session.as_str().len() + 8);
    key.extend_from_slice(session.as_str().as_bytes());
    key.extend_from_slice(&seq.to_be_bytes());
    key
}

fn seq_of(key: &[u8]) -> Result<u64, LedgerError> {
    let raw: [u8; 8] = key
        .try_into()
        .map_err(|_| LedgerError::Corrupt(format!("event key of {} bytes", key.len())))?;
    Ok(u64::from_be_bytes(raw))
}

impl Store for SledStore {
    fn meta(&self) -> Result<Option<LedgerMeta>, LedgerError> {
        match self.sled()?.meta.get("ledger").map_err(sled_err)? {
            None => Ok(None),
            Some(bytes) => serde_json::from_slice(&bytes)
                .map(Some)
                .map_err(|e| LedgerError::Corrupt(format!("ledger metadata: {e}"))),
        }
    }

    fn init_meta(&mut self, meta: &LedgerMeta) -> Result<(), LedgerError> {
        let bytes = serde_json::to_vec(meta)
            .map_err(|e| LedgerError::Corrupt(format!("ledger metadata: {e}")))?;
        self.sled()?
            .meta
            .insert("ledger", bytes)
            .map_err(sled_err)?;
        self.sync()
    }

    fn append_batch(&mut self, batch: &Batch) -> Result<(), LedgerError> {
        use sled::Transactional;
        self.blob_possible |= batch
            .events
            .iter()
            .any(|e| e.bytes.len() >= BLOB_CANDIDATE_BYTES);
        // Texts first, durable before sled sees anything of the batch: sled may write staged
        // data at any time, and its index entries must never point at text that could vanish.
        let slots: Vec<_> = batch
            .texts
            .iter()
            .map(|(c, _)| c)
            .zip(self.text_file.append_all(&batch.texts)?)
            .collect();
        self.text_file.sync()?;
        #[cfg(debug_assertions)]
        if !slots.is_empty() {
            crash_drill::between_the_two_writes();
        }
        let texts_end = slots.iter().map(|(_, slot)| slot.end()).max();
        let sled = self.sled()?;
        (&sled.events, &sled.sessions, &sled.text_index, &sled.meta)
            .transaction(|(events, sessions, index, meta)| {
                for (commitment, slot) in &slots {
                    index.insert(&commitment[..], &slot.encode()[..])?;
                }
                if let Some(end) = texts_end {
                    meta.insert(TEXTS_END_KEY, &end.to_be_bytes()[..])?;
                }
                for event in &batch.events {
                    if let Some(session) = &event.session {
                        sessions.insert(session_key(session, event.seq), &[][..])?;
                    }
                    events.insert(&event.seq.to_be_bytes()[..], event.bytes.as_slice())?;
                }
                Ok(())
            })
            .map_err(|e: sled::transaction::TransactionError<()>| {
                LedgerError::Sled(format!("{e:?}"))
            })
    }

    fn sync(&mut self) -> Result<(), LedgerError> {
        self.sled()?.db.flush().map_err(sled_err)?;
        if self.blob_possible {
            self.sync_new_blobs()?;
            self.blob_possible = false;
        }
        self.log_file.sync_data()?;
        Ok(())
    }

    fn last_seq(&self) -> Result<Option<u64>, LedgerError> {
        match self.sled()?.events.last().map_err(sled_err)? {
            None => Ok(None),
            Some((key, _)) => seq_of(&key).map(Some),
        }
    }

    fn event_bytes(&self, seq: u64) -> Result<Option<Vec<u8>>, LedgerError> {
        Ok(self
            .sled()?
            .events
            .get(seq.to_be_bytes())
            .map_err(sled_err)?
            .map(|v| v.to_vec()))
    }

    fn events_from(&self, from: u64) -> EventIter<'_> {
        let sled = match self.sled() {
            Ok(sled) => sled,
            Err(e) => return Box::new(std::iter::once(Err(e))),
        };
        Box::new(sled.events.range(from.to_be_bytes()..).map(|item| {
            let (key, value) = item.map_err(sled_err)?;
            Ok((seq_of(&key)?, value.to_vec()))
        }))
    }

    fn session_seqs(&self, session: &SessionId) -> Result<Vec<u64>, LedgerError> {
        seqs_of(&self.sled()?.sessions, session)
    }

    fn text(&self, commitment: &[u8; 32]) -> Result<Option<TextRecord>, LedgerError> {
        match self.slot(commitment)? {
            None => Ok(None),
            Some(slot) => self.text_file.read(slot, commitment),
        }
    }

    fn texts_in_file_order(&self) -> Result<TextIter<'_>, LedgerError> {
        let mut slots = Vec::new();
        for item in self.sled()?.text_index.iter() {
            let (key, value) = item.map_err(sled_err)?;
            let commitment: [u8; 32] = key
                .as_ref()
                .try_into()
                .map_err(|_| LedgerError::Corrupt("text index key".into()))?;
            let slot = Slot::decode(&value)
                .ok_or_else(|| LedgerError::Corrupt("text index entry".into()))?;
            slots.push((commitment, slot));
        }
        slots.sort_by_key(|(_, slot)| slot.offset);
        Ok(Box::new(self.text_file.read_in_order(slots)))
    }

    fn erase_texts(&mut self, commitments: &[[u8; 32]]) -> Result<(), LedgerError> {
        let mut any = false;
        for c in commitments {
            if let Some(slot) = self.slot(c)?
                && self.text_file.read(slot, c)?.is_some()
            {
                self.text_file.erase(slot)?;
                any = true;
            }
        }
        if any {
            self.text_file.sync()?;
        }
        Ok(())
    }

    fn snapshots(&self) -> Option<Arc<dyn SnapshotStore>> {
        Some(Arc::new(FileSnapshots::new(&self.dir)))
    }

    /// sled's page cache evicts a page only once 64 more reads have been queued in its shard
    /// (one of 256), so a pass over the whole log keeps up to 16,384 pages in memory whatever
    /// its capacity, and reads after it come too seldom to push them out: at 100,000 memories
    /// the check of the log under a snapshot left about 160 MB. Closing the database and
    /// opening it again drops them; it costs one open of sled (271 ms on a 100,000-event ledger,
    /// docs/benchmarks.md, "Scale"). A store opened for a one-shot command keeps its pages (it exits soon).
    fn release_reads(&mut self) -> Result<(), LedgerError> {
        if self.cache_bytes != SERVING_CACHE_BYTES {
            return Ok(());
        }
        self.sync()?;
        // Readers wait while sled is opened again: their handles are let go of first.
        let mut reads = self.reads.parts.write().unwrap_or_else(|e| e.into_inner());
        *reads = None;
        drop(self.sled.take());
        let sled = when_unlocked(|| Sled::open(&self.dir, self.cache_bytes))?;
        *reads = Some(ReadParts::of(&sled, &self.dir)?);
        self.sled = Some(sled);
        Ok(())
    }

    fn session_log(&self) -> Option<Arc<dyn SessionLog>> {
        Some(self.reads.clone())
    }
}

/// An in-memory store with the same contract, for tests of the pure layers.
#[derive(Default)]
pub struct MemStore {
    /// Snapshots, when a test gives it some ([`MemStore::with_snapshots`]).
    snapshots: Option<Arc<MemSnapshots>>,
    meta: Option<LedgerMeta>,
    events: BTreeMap<u64, Vec<u8>>,
    sessions: BTreeMap<(SessionId, u64), ()>,
    texts: BTreeMap<[u8; 32], TextRecord>,
}

impl MemStore {
    /// The store, keeping snapshots in `snapshots` (shared with the test that reopens it).
    pub fn with_snapshots(mut self, snapshots: Arc<MemSnapshots>) -> Self {
        self.snapshots = Some(snapshots);
        self
    }

    /// Replaces one event's bytes, as [`SledStore::tamper_event_bytes`] does.
    pub fn tamper_event_bytes(&mut self, seq: u64, bytes: &[u8]) {
        self.events.insert(seq, bytes.to_vec());
    }

    /// Removes one event, leaving a gap.
    pub fn remove_event(&mut self, seq: u64) {
        self.events.remove(&seq);
    }
}

impl Store for MemStore {
    fn meta(&self) -> Result<Option<LedgerMeta>, LedgerError> {
        Ok(self.meta.clone())
    }

    fn init_meta(&mut self, meta: &LedgerMeta) -> Result<(), LedgerError> {
        self.meta = Some(meta.clone());
        Ok(())
    }

    fn append_batch(&mut self, batch: &Batch) -> Result<(), LedgerError> {
        for (commitment, record) in &batch.texts {
            self.texts.insert(*commitment, record.clone());
        }
        for event in &batch.events {
            if let Some(session) = &event.session {
                self.sessions.insert((session.clone(), event.seq), ());
            }
            self.events.insert(event.seq, event.bytes.clone());
        }
        Ok(())
    }

    fn sync(&mut self) -> Result<(), LedgerError> {
        Ok(())
    }

    fn last_seq(&self) -> Result<Option<u64>, LedgerError> {
        Ok(self.events.keys().next_back().copied())
    }

    fn event_bytes(&self, seq: u64) -> Result<Option<Vec<u8>>, LedgerError> {
        Ok(self.events.get(&seq).cloned())
    }

    fn events_from(&self, from: u64) -> EventIter<'_> {
        Box::new(self.events.range(from..).map(|(k, v)| Ok((*k, v.clone()))))
    }

    fn session_seqs(&self, session: &SessionId) -> Result<Vec<u64>, LedgerError> {
        Ok(self
            .sessions
            .keys()
            .filter(|(s, _)| s == session)
            .map(|(_, seq)| *seq)
            .collect())
    }

    fn text(&self, commitment: &[u8; 32]) -> Result<Option<TextRecord>, LedgerError> {
        Ok(self.texts.get(commitment).cloned())
    }

    fn texts_in_file_order(&self) -> Result<TextIter<'_>, LedgerError> {
        Ok(Box::new(
            self.texts.iter().map(|(c, r)| (*c, Ok(Some(r.clone())))),
        ))
    }

    fn erase_texts(&mut self, commitments: &[[u8; 32]]) -> Result<(), LedgerError> {
        for c in commitments {
            self.texts.remove(c);
        }
        Ok(())
    }

    fn snapshots(&self) -> Option<Arc<dyn SnapshotStore>> {
        self.snapshots.clone().map(|s| s as Arc<dyn SnapshotStore>)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn batch(seq: u64, session: &SessionId) -> Batch {
        Batch {
            events: vec![StagedEvent {
                seq,
                bytes: format!("{{\"seq\":{seq}}}").into_bytes(),
                session: Some(session.clone()),
            }],
            texts: vec![(
                [u8::try_from(seq).unwrap_or(0); 32],
                TextRecord {
                    salt: [1; 32],
                    text: format!("text {seq}"),
                },
            )],
        }
    }

    #[test]
    fn sled_store_keeps_batches_across_reopen() {
        let dir = tempfile::tempdir().unwrap();
        let session = SessionId::random();
        {
            let mut store = SledStore::reopen(dir.path());
            store
                .init_meta(&LedgerMeta {
                    ledger_id: "l".into(),
                    created_at: "t".into(),
                    format: "thinkledger/1".into(),
                })
                .unwrap();
            store.append_batch(&batch(1, &session)).unwrap();
            store.append_batch(&batch(2, &session)).unwrap();
            store.sync().unwrap();
        }
        let store = SledStore::reopen(dir.path());
        assert_eq!(store.meta().unwrap().unwrap().ledger_id, "l");
        assert_eq!(store.last_seq().unwrap(), Some(2));
        assert_eq!(store.session_seqs(&session).unwrap(), vec![1, 2]);
        assert_eq!(store.text(&[2; 32]).unwrap().unwrap().text, "text 2");
        let texts: Vec<_> = store
            .texts_in_file_order()
            .unwrap()
            .map(|(c, r)| (c, r.unwrap().map(|r| r.text)))
            .collect();
        assert_eq!(
            texts,
            vec![
                ([1; 32], Some("text 1".into())),
                ([2; 32], Some("text 2".into()))
            ]
        );
        let all: Vec<u64> = store.events_from(1).map(|r| r.unwrap().0).collect();
        assert_eq!(all, vec![1, 2]);
    }

    /// A server's store lets go of its reads by opening its database again: what was staged
    /// is durable, and everything reads and appends as before, then and after a reopen.
    #[test]
    fn a_serving_store_that_lets_go_of_its_reads_keeps_everything() {
        let dir = tempfile::tempdir().unwrap();
        let session = SessionId::random();
        let check = |store: &SledStore, last: u64| {
            assert_eq!(store.last_seq().unwrap(), Some(last));
            let seqs: Vec<u64> = (1..=last).collect();
            assert_eq!(store.session_seqs(&session).unwrap(), seqs);
            let all: Vec<u64> = store.events_from(1).map(|r| r.unwrap().0).collect();
            assert_eq!(all, seqs);
            let last_byte = u8::try_from(last).unwrap();
            assert_eq!(
                store.text(&[last_byte; 32]).unwrap().unwrap().text,
                format!("text {last}")
            );
            assert_eq!(store.texts_in_file_order().unwrap().count(), seqs.len());
        };
        {
            let mut store = SledStore::open_for_serving(dir.path()).unwrap();
            store.append_batch(&batch(1, &session)).unwrap();
            store.sync().unwrap();
            // Staged, not yet synced: made durable before the database is closed.
            store.append_batch(&batch(2, &session)).unwrap();
            store.release_reads().unwrap();
            check(&store, 2);
            store.append_batch(&batch(3, &session)).unwrap();
            store.sync().unwrap();
            store.release_reads().unwrap();
            check(&store, 3);
        }
        check(&SledStore::reopen(dir.path()), 3);
    }

    /// A torn append beyond the last durable record is cut off at open, whether the end comes
    /// from `texts_end` or (a ledger written before that key) from scanning the index.
    #[test]
    fn texts_end_is_kept_with_the_index_and_found_without_it() {
        for with_key in [true, false] {
            let dir = tempfile::tempdir().unwrap();
            let session = SessionId::random();
            let end = {
                let mut store = SledStore::reopen(dir.path());
                store.append_batch(&batch(1, &session)).unwrap();
                store.append_batch(&batch(2, &session)).unwrap();
                store.sync().unwrap();
                let end = std::fs::metadata(dir.path().join(TEXT_FILE)).unwrap().len();
                assert_eq!(
                    store
                        .sled()
                        .unwrap()
                        .meta
                        .get(TEXTS_END_KEY)
                        .unwrap()
                        .as_deref(),
                    Some(&end.to_be_bytes()[..]),
                    "each batch with texts records where they end"
                );
                if !with_key {
                    store.sled().unwrap().meta.remove(TEXTS_END_KEY).unwrap();
                    store.sync().unwrap();
                }
                // A batch appended by a build that does not keep `texts_end`: its text and
                // index entry are durable, the key still names the end before it.
                let record = batch(4, &session).texts[0].1.clone();
                let slot = store.text_file.append_all(&[([4; 32], record)]).unwrap()[0];
                store.text_file.sync().unwrap();
                store
                    .sled()
                    .unwrap()
                    .text_index
                    .insert(&[4u8; 32][..], &slot.encode()[..])
                    .unwrap();
                store.sync().unwrap();
                let end = slot.end();
                // A batch whose texts reached the file but whose index entries never did.
                store
                    .text_file
                    .append_all(&[([9; 32], batch(3, &session).texts[0].1.clone())])
                    .unwrap();
                store.text_file.sync().unwrap();
                end
            };
            let path = dir.path().join(TEXT_FILE);
            assert!(std::fs::metadata(&path).unwrap().len() > end);
            let store = SledStore::reopen(dir.path());
            assert_eq!(
                std::fs::metadata(&path).unwrap().len(),
                end,
                "the torn record is cut off (with_key={with_key})"
            );
            assert_eq!(store.text(&[2; 32]).unwrap().unwrap().text, "text 2");
            assert_eq!(
                store.text(&[4; 32]).unwrap().unwrap().text,
                "text 4",
                "a record the index knows of is never cut off (with_key={with_key})"
            );
        }
    }

    #[test]
    fn a_second_open_of_the_same_dir_is_refused_as_locked() {
        let dir = tempfile::tempdir().unwrap();
        let _first = SledStore::open(dir.path()).unwrap();
        // sled's lock is per process (flock on its log); a second open in this process is
        // refused the same way another process would be.
        match SledStore::open(dir.path()) {
            Err(LedgerError::Locked { .. }) => {}
            Err(other) => panic!("expected Locked, got {other}"),
            Ok(_) => panic!("expected Locked, got a second handle"),
        }
    }

    #[test]
    fn values_large_enough_for_sled_blob_files_survive_reopen() {
        let dir = tempfile::tempdir().unwrap();
        let big = "x".repeat(300 * 1024);
        {
            let mut store = SledStore::reopen(dir.path());
            let batch = Batch {
                events: vec![StagedEvent {
                    seq: 1,
                    bytes: big.clone().into_bytes(),
                    session: None,
                }],
                texts: Vec::new(),
            };
            store.append_batch(&batch).unwrap();
            assert!(
                store.blob_possible,
                "a 300 KiB value must trigger the blob scan"
            );
            store.sync().unwrap();
            assert!(!store.blob_possible);
            assert!(
                !store.synced_blobs.is_empty(),
                "sled wrote a blob file and it was fsynced"
            );
        }
        let store = SledStore::reopen(dir.path());
        assert_eq!(store.event_bytes(1).unwrap().unwrap(), big.into_bytes());
    }

    /// Every byte of every file under `dir`.
    fn all_bytes(dir: &Path) -> Vec<u8> {
        let mut out = Vec::new();
        for entry in std::fs::read_dir(dir).unwrap() {
            let path = entry.unwrap().path();
            if path.is_dir() {
                out.extend(all_bytes(&path));
            } else {
                out.extend(std::fs::read(&path).unwrap());
            }
        }
        out
    }

    #[test]
    fn an_erased_text_leaves_no_byte_of_its_plaintext_or_salt_on_disk() {
        let dir = tempfile::tempdir().unwrap();
        let secret = "the launch code is 7741-ALPHA-quasar";
        let salt = [0xA5; 32];
        let session = SessionId::random();
        {
            let mut store = SledStore::reopen(dir.path());
            let mut b = batch(1, &session);
            b.texts = vec![
                (
                    [1; 32],
                    TextRecord {
                        salt,
                        text: secret.into(),
                    },
                ),
                (
                    [2; 32],
                    TextRecord {
                        salt: [3; 32],
                        text: "keep me".into(),
                    },
                ),
            ];
            store.append_batch(&b).unwrap();
            store.sync().unwrap();
        }
        let contains = |hay: &[u8], needle: &[u8]| hay.windows(needle.len()).any(|w| w == needle);
        assert!(
            contains(&all_bytes(dir.path()), secret.as_bytes()),
            "stored before erasure"
        );
        {
            let mut store = SledStore::reopen(dir.path());
            store.erase_texts(&[[1; 32]]).unwrap();
            assert_eq!(store.text(&[1; 32]).unwrap(), None);
            // Erasing again is a no-op.
            store.erase_texts(&[[1; 32]]).unwrap();
        }
        let store = SledStore::reopen(dir.path());
        assert_eq!(store.text(&[1; 32]).unwrap(), None);
        assert_eq!(store.text(&[2; 32]).unwrap().unwrap().text, "keep me");
        let bytes = all_bytes(dir.path());
        assert!(
            !contains(&bytes, secret.as_bytes()),
            "plaintext left on disk"
        );
        assert!(!contains(&bytes, &salt), "salt left on disk");
    }
}
