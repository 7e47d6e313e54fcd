//! Storage behind a small trait: events by seq, a per-session index, the erasable texts and
//! ledger metadata. [`SledStore`] is the embedded on-disk store (a log file indexed by sled);
//! [`MemStore`] backs pure tests.
//!
//! A store only keeps bytes. It does not hash, decide, or know what an event means beyond the
//! session id it is indexed under. Durability is explicit: [`Store::append_batch`] stages,
//! [`Store::sync`] makes everything staged durable (for [`SledStore`]: one `fdatasync` of its
//! log file).

use std::collections::BTreeMap;
use std::fs::File;
use std::path::{Path, PathBuf};
use std::sync::{Arc, RwLock};

use serde::{Deserialize, Serialize};

use super::LedgerError;
use super::eventindex::{EVENT_INDEX_FILE, EventIndex, EventIndexReader};
use super::hash::SALT_LEN;
#[cfg(debug_assertions)]
use super::logfile::crash_drill;
use super::logfile::{Framed, LOG_FILE, LogFile, LogReader, Slot};
use super::snapshot::{FileSnapshots, MemSnapshots, SnapshotStore};
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
    /// The log as it stands now, to be read whole beside the writer (`verify` through a
    /// running server): events up to the current last seq, the texts indexed now. Writes to it
    /// fail. `None` (the default): the store cannot be read beside its writer.
    fn read_only(&self) -> Result<Option<Box<dyn Store>>, LedgerError> {
        Ok(None)
    }
    /// Whether other processes append to this log too (a shared database). The writer then
    /// brackets each batch with [`Store::begin_batch`] and [`Store::sync`] (or
    /// [`Store::abandon_batch`]) and folds the events read past its head after the first.
    fn shared(&self) -> bool {
        false
    }
    /// Takes the log's head for one batch: until this batch's [`Store::sync`] or
    /// [`Store::abandon_batch`], no other writer appends, and [`Store::events_from`] reads
    /// everything they appended before. The default (a store of its own) holds nothing.
    fn begin_batch(&mut self) -> Result<(), LedgerError> {
        Ok(())
    }
    /// Lets go of a batch begun and found to have nothing to write.
    fn abandon_batch(&mut self) -> Result<(), LedgerError> {
        Ok(())
    }
    /// How many bytes the log holds (events and texts as stored), when the store can tell
    /// without reading anything (for metrics); `None` (the default): it cannot.
    fn log_bytes(&self) -> Option<u64> {
        None
    }
}

/// A store chosen when the process starts (the embedded one or a database's).
impl Store for Box<dyn Store> {
    fn meta(&self) -> Result<Option<LedgerMeta>, LedgerError> {
        (**self).meta()
    }
    fn init_meta(&mut self, meta: &LedgerMeta) -> Result<(), LedgerError> {
        (**self).init_meta(meta)
    }
    fn append_batch(&mut self, batch: &Batch) -> Result<(), LedgerError> {
        (**self).append_batch(batch)
    }
    fn sync(&mut self) -> Result<(), LedgerError> {
        (**self).sync()
    }
    fn last_seq(&self) -> Result<Option<u64>, LedgerError> {
        (**self).last_seq()
    }
    fn event_bytes(&self, seq: u64) -> Result<Option<Vec<u8>>, LedgerError> {
        (**self).event_bytes(seq)
    }
    fn events_from(&self, from: u64) -> EventIter<'_> {
        (**self).events_from(from)
    }
    fn session_seqs(&self, session: &SessionId) -> Result<Vec<u64>, LedgerError> {
        (**self).session_seqs(session)
    }
    fn text(&self, commitment: &[u8; 32]) -> Result<Option<TextRecord>, LedgerError> {
        (**self).text(commitment)
    }
    fn texts_in_file_order(&self) -> Result<TextIter<'_>, LedgerError> {
        (**self).texts_in_file_order()
    }
    fn erase_texts(&mut self, commitments: &[[u8; 32]]) -> Result<(), LedgerError> {
        (**self).erase_texts(commitments)
    }
    fn snapshots(&self) -> Option<Arc<dyn SnapshotStore>> {
        (**self).snapshots()
    }
    fn release_reads(&mut self) -> Result<(), LedgerError> {
        (**self).release_reads()
    }
    fn session_log(&self) -> Option<Arc<dyn SessionLog>> {
        (**self).session_log()
    }
    fn read_only(&self) -> Result<Option<Box<dyn Store>>, LedgerError> {
        (**self).read_only()
    }
    fn shared(&self) -> bool {
        (**self).shared()
    }
    fn begin_batch(&mut self) -> Result<(), LedgerError> {
        (**self).begin_batch()
    }
    fn abandon_batch(&mut self) -> Result<(), LedgerError> {
        (**self).abandon_batch()
    }
    fn log_bytes(&self) -> Option<u64> {
        (**self).log_bytes()
    }
}

/// The embedded on-disk store, in one directory: the log file ([`LogFile`]: every event and
/// every erasable text, one frame per batch), a flat index of the events in it
/// ([`EventIndex`]) and a sled database indexing sessions and texts.
///
/// One `fdatasync` makes a batch durable: its frame's. The indexes are written after it and
/// made durable lazily: every [`MARK_EVERY`], before an erasure and at shutdown, the index
/// mark moves to what they hold once that is durable. At open, every frame past the durable
/// mark is read again and indexed, and a frame that never became durable is cut off
/// (docs/ARCHITECTURE.md, "How one call flows", step 4).
pub struct SledStore {
    /// `None` only after [`Store::release_reads`] failed to open the database again.
    sled: Option<Sled>,
    /// Bytes of sled's page cache this store was opened with.
    cache_bytes: u64,
    log: LogFile,
    /// Reads of the log file, shared with [`SledReads`].
    reader: Arc<LogReader>,
    /// Seq → where the event sits in the log file.
    index: EventIndex,
    /// The end of the last frame indexed: where the mark moves to when it next moves.
    indexed_end: u64,
    /// When the mark last moved.
    marked_at: std::time::Instant,
    /// Whether opening finished: until then the mark read at open is the truth, and dropping
    /// the store (an open that failed) must not move it to what was only partly read.
    opened: bool,
    /// Where the frames appended since the last sync put their entries: indexed once the
    /// frames are durable.
    unindexed: Vec<Framed>,
    /// sled's log file; `fdatasync` on it makes the index durable, because sled's own `flush`
    /// only calls `sync_file_range` on Linux.
    sled_log: File,
    dir: PathBuf,
    /// What readers beside the writer read sessions through (see [`SledReads`]).
    reads: Arc<SledReads>,
}

/// Reads of sessions by any thread, through handles of the store's trees and a read-only
/// handle of its log file. They are let go of while the store opens sled again
/// ([`Store::release_reads`]; a read waits for it) and when the store is dropped (later reads
/// fail): a handle left with a reader would keep sled's file lock held.
pub struct SledReads {
    parts: RwLock<Option<ReadParts>>,
}

struct ReadParts {
    events: Arc<EventIndexReader>,
    sessions: sled::Tree,
    texts: sled::Tree,
    log: Arc<LogReader>,
}

impl ReadParts {
    fn of(sled: &Sled, log: &Arc<LogReader>, events: Arc<EventIndexReader>) -> Self {
        Self {
            events,
            sessions: sled.sessions.clone(),
            texts: sled.texts.clone(),
            log: log.clone(),
        }
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
        self.with(|p| match p.events.slot(seq)? {
            None => Ok(None),
            Some(slot) => p.log.event(slot).map(Some),
        })
    }

    fn text(&self, commitment: &[u8; 32]) -> Result<Option<TextRecord>, LedgerError> {
        self.with(|p| match slot_in(&p.texts, commitment)? {
            None => Ok(None),
            Some(slot) => p.log.text(slot, commitment),
        })
    }
}

impl Drop for SledStore {
    fn drop(&mut self) {
        *self.reads.parts.write().unwrap_or_else(|e| e.into_inner()) = None;
        // The next open then reads no frame again; nothing is lost without it.
        if self.opened
            && self.sled.is_some()
            && let Err(e) = self.make_index_durable(false)
        {
            tracing::warn!(error = %e, "making the index durable at shutdown failed");
        }
    }
}

/// The sled database of a [`SledStore`] and its trees.
struct Sled {
    db: sled::Db,
    sessions: sled::Tree,
    /// Text commitment → where its record sits in the log file.
    texts: sled::Tree,
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
            sessions: tree("session_events")?,
            texts: tree("log_texts")?,
            meta: tree("meta")?,
            db,
        })
    }

    /// Indexes what `frames` hold: events in `events`, sessions and texts in sled (not yet
    /// durable; the mark does not move). Plain inserts: the mark, not sled's batches, says
    /// what is whole after a crash, and each sled batch writes a manifest to sled's log.
    fn index(&self, events: &mut EventIndex, frames: &[Framed]) -> Result<(), LedgerError> {
        let mut slots = Vec::new();
        for framed in frames {
            for (seq, session, slot) in &framed.events {
                if let Some(session) = session {
                    self.sessions
                        .insert(session_key(session, *seq), &[][..])
                        .map_err(sled_err)?;
                }
                slots.push((*seq, *slot));
            }
            for (commitment, slot) in &framed.texts {
                self.texts
                    .insert(&commitment[..], &slot.encode()[..])
                    .map_err(sled_err)?;
            }
        }
        events.put(&slots)
    }
}

/// Key in `meta` of the index mark: where the last frame the durable indexes hold ends in the
/// log file, then how many records of the event index are durable (8 bytes BE each).
const MARK_KEY: &str = "index_mark";
/// How often the writer moves the mark: what a crash costs is reading again at most this much
/// of the log at the next open.
const MARK_EVERY: std::time::Duration = std::time::Duration::from_secs(2);
/// Key in `meta` of the store's layout; [`LAYOUT`] once the event index is a file of its own.
const LAYOUT_KEY: &str = "layout";
const LAYOUT: &[u8] = b"log/2";

/// The layout of 26 Nov 2026: the log file, with events indexed in this sled tree and the mark
/// (the log file's end only) under this `meta` key.
const LOG1: &[u8] = b"log/1";
const LOG1_EVENTS: &str = "log_events";
const LOG1_END: &str = "log_end";

/// The layout before the log file (up to 26 Nov 2026): events as values of this sled tree...
const OLD_EVENTS: &str = "events";
/// ...texts in this file, found through this tree, which ended at this `meta` key.
const OLD_TEXT_FILE: &str = "texts.dat";
const OLD_TEXT_INDEX: &str = "text_index";
const OLD_TEXTS_END: &str = "texts_end";

/// Bytes of events (or texts) per frame when an older ledger's are copied into the log file.
const MIGRATION_FRAME_BYTES: usize = 1 << 20;

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
        super::private::dir(dir)?;
        let sled = Sled::open(dir, cache_bytes)?;
        let log = LogFile::open(&dir.join(LOG_FILE))?;
        let reader = Arc::new(LogReader::open(&dir.join(LOG_FILE))?);
        let index = EventIndex::open(&dir.join(EVENT_INDEX_FILE))?;
        let sled_log = File::open(dir.join("db"))?;
        // Every file here holds callers' texts: none readable by others, whatever made it
        // (sled's own files, a ledger written before files were made private).
        super::private::tighten_tree(dir)?;
        // The directory entries of a new database and files must be durable too.
        File::open(dir)?.sync_all()?;
        let reads = Arc::new(SledReads {
            parts: RwLock::new(Some(ReadParts::of(&sled, &reader, index.reader()))),
        });
        let mut store = Self {
            sled: Some(sled),
            cache_bytes,
            log,
            reader,
            index,
            indexed_end: LogFile::start(),
            marked_at: std::time::Instant::now(),
            opened: false,
            unindexed: Vec::new(),
            sled_log,
            dir: dir.to_path_buf(),
            reads,
        };
        store.settle_layout()?;
        store.recover()?;
        store.opened = true;
        Ok(store)
    }

    /// Brings a ledger of an earlier layout over to this one, or finishes doing so.
    fn settle_layout(&mut self) -> Result<(), LedgerError> {
        let sled = self.sled()?;
        match sled.meta.get(LAYOUT_KEY).map_err(sled_err)? {
            Some(layout) if layout == LAYOUT => self.drop_old_layout(),
            Some(layout) if layout == LOG1 => self.index_events_in_a_file(),
            Some(other) => Err(LedgerError::Corrupt(format!(
                "the store's layout is {:?}, which this build does not know: a later thinkledger \
                 wrote it",
                String::from_utf8_lossy(&other)
            ))),
            None => {
                let old = sled
                    .db
                    .tree_names()
                    .iter()
                    .any(|name| name == OLD_EVENTS.as_bytes())
                    || self.dir.join(OLD_TEXT_FILE).exists();
                if old {
                    self.migrate()
                } else {
                    self.index.keep(0)?;
                    self.make_index_durable(true)
                }
            }
        }
    }

    /// Moves the event index of a `log/1` ledger out of sled into its file. Until the layout
    /// key is durable, the old tree and mark stay untouched: a crash here only means starting
    /// over at the next open.
    fn index_events_in_a_file(&mut self) -> Result<(), LedgerError> {
        let started = std::time::Instant::now();
        let sled = self.sled.as_ref().ok_or_else(closed)?;
        self.indexed_end =
            match sled.meta.get(LOG1_END).map_err(sled_err)? {
                None => LogFile::start(),
                Some(raw) => u64::from_be_bytes(raw.as_ref().try_into().map_err(|_| {
                    LedgerError::Corrupt(format!("{LOG1_END} of {} bytes", raw.len()))
                })?),
            };
        self.index.keep(0)?;
        let old = sled.db.open_tree(LOG1_EVENTS).map_err(sled_err)?;
        let mut slots = Vec::new();
        for item in old.iter() {
            let (key, value) = item.map_err(sled_err)?;
            let slot =
                Slot::decode(&value).ok_or_else(|| LedgerError::Corrupt("index entry".into()))?;
            slots.push((seq_of(&key)?, slot));
            if slots.len() == 1 << 16 {
                self.index.put(&slots)?;
                slots.clear();
            }
        }
        self.index.put(&slots)?;
        self.make_index_durable(true)?;
        tracing::info!(
            events = self.index.count(),
            took_ms = started.elapsed().as_millis() as u64,
            "the event index was moved out of sled into {EVENT_INDEX_FILE}"
        );
        self.drop_old_layout()
    }

    /// Copies the events and texts of the layout before the log file into it. Until the layout
    /// key is durable the old trees and file stay untouched, so a crash here only means
    /// starting over at the next open.
    fn migrate(&mut self) -> Result<(), LedgerError> {
        let started = std::time::Instant::now();
        self.log.reset()?;
        self.index.keep(0)?;
        let sled = self.sled.as_ref().ok_or_else(closed)?;
        sled.texts.clear().map_err(sled_err)?;
        let tree = |name: &str| sled.db.open_tree(name).map_err(sled_err);
        let (old_events, old_text_index) = (tree(OLD_EVENTS)?, tree(OLD_TEXT_INDEX)?);
        // Which session each event is indexed under: the frames carry it.
        let mut names: Vec<SessionId> = Vec::new();
        let mut session_of: std::collections::HashMap<u64, usize> =
            std::collections::HashMap::new();
        for item in sled.sessions.iter() {
            let (key, _) = item.map_err(sled_err)?;
            let split = key.len().saturating_sub(8);
            let session = std::str::from_utf8(&key[..split])
                .ok()
                .and_then(SessionId::parse)
                .ok_or_else(|| LedgerError::Corrupt("session index key".into()))?;
            if names.last() != Some(&session) {
                names.push(session);
            }
            session_of.insert(seq_of(&key[split..])?, names.len() - 1);
        }
        let (mut events, mut texts, mut bytes) = (Vec::new(), Vec::new(), 0usize);
        let mut copied = (0u64, 0u64);
        let index = &mut self.index;
        let indexed_end = &mut self.indexed_end;
        let mut frame = |log: &mut LogFile,
                         events: &mut Vec<StagedEvent>,
                         texts: &mut Vec<([u8; 32], TextRecord)>|
         -> Result<(), LedgerError> {
            copied.0 += events.len() as u64;
            copied.1 += texts.len() as u64;
            let framed = log.append(events, texts)?;
            events.clear();
            texts.clear();
            *indexed_end = framed.end;
            sled.index(index, &[framed])
        };
        for item in old_events.iter() {
            let (key, value) = item.map_err(sled_err)?;
            let seq = seq_of(&key)?;
            bytes += value.len();
            events.push(StagedEvent {
                seq,
                bytes: value.to_vec(),
                session: session_of.get(&seq).map(|i| names[*i].clone()),
            });
            if bytes >= MIGRATION_FRAME_BYTES {
                frame(&mut self.log, &mut events, &mut texts)?;
                bytes = 0;
            }
        }
        let old_texts = self.dir.join(OLD_TEXT_FILE);
        if old_texts.exists() {
            let reader = LogReader::open(&old_texts)?;
            for (commitment, record) in reader.texts_in_order(slots_in_file_order(&old_text_index)?)
            {
                // Erased, or never made durable (past where the index ended): not copied.
                let Some(record) = record? else { continue };
                bytes += record.text.len();
                texts.push((commitment, record));
                if bytes >= MIGRATION_FRAME_BYTES {
                    frame(&mut self.log, &mut events, &mut texts)?;
                    bytes = 0;
                }
            }
        }
        if !events.is_empty() || !texts.is_empty() {
            frame(&mut self.log, &mut events, &mut texts)?;
        }
        self.log.sync()?;
        self.make_index_durable(true)?;
        tracing::info!(
            events = copied.0,
            texts = copied.1,
            took_ms = started.elapsed().as_millis() as u64,
            "the ledger's events and texts were copied into its log file ({LOG_FILE})"
        );
        self.drop_old_layout()
    }

    /// Removes what earlier layouts left, once the log file and the event index hold it all.
    fn drop_old_layout(&mut self) -> Result<(), LedgerError> {
        let sled = self.sled()?;
        let names = sled.db.tree_names();
        let mut any = false;
        for old in [OLD_EVENTS, OLD_TEXT_INDEX, LOG1_EVENTS] {
            if names.iter().any(|name| name == old.as_bytes()) {
                sled.db.drop_tree(old).map_err(sled_err)?;
                any = true;
            }
        }
        for key in [OLD_TEXTS_END, LOG1_END] {
            any |= sled.meta.remove(key).map_err(sled_err)?.is_some();
        }
        if any {
            self.make_index_durable(false)?;
        }
        let old_texts = self.dir.join(OLD_TEXT_FILE);
        if old_texts.exists() {
            std::fs::remove_file(&old_texts)?;
            File::open(&self.dir)?.sync_all()?;
        }
        Ok(())
    }

    /// Keeps the event records the durable mark covers, then indexes every frame past the
    /// mark; cuts off one that never became durable.
    fn recover(&mut self) -> Result<(), LedgerError> {
        let sled = self.sled.as_ref().ok_or_else(closed)?;
        let raw = sled
            .meta
            .get(MARK_KEY)
            .map_err(sled_err)?
            .ok_or_else(|| LedgerError::Corrupt(format!("no {MARK_KEY} in the store")))?;
        let mark: [u8; 16] = raw
            .as_ref()
            .try_into()
            .map_err(|_| LedgerError::Corrupt(format!("{MARK_KEY} of {} bytes", raw.len())))?;
        let (from, records) = (
            u64::from_be_bytes(mark[..8].try_into().unwrap_or_default()),
            u64::from_be_bytes(mark[8..].try_into().unwrap_or_default()),
        );
        self.index.keep(records)?;
        self.indexed_end = from;
        let index = &mut self.index;
        let indexed_end = &mut self.indexed_end;
        let frames = self.log.recover(from, &mut |framed| {
            *indexed_end = framed.end;
            sled.index(index, &[framed])
        })?;
        if frames > 0 {
            tracing::info!(
                frames,
                "indexed the log's frames the index did not hold yet"
            );
            self.make_index_durable(false)?;
        }
        Ok(())
    }

    /// The database, unless a [`Store::release_reads`] could not open it again.
    fn sled(&self) -> Result<&Sled, LedgerError> {
        self.sled.as_ref().ok_or_else(closed)
    }

    /// Makes everything written to the indexes durable (sled's flush, then `fdatasync` of its
    /// log file and of the event index), then moves the mark to what they hold and makes it
    /// durable the same way. `layout`: the layout key is written with the mark.
    fn make_index_durable(&mut self, layout: bool) -> Result<(), LedgerError> {
        let sled = self.sled()?;
        sled.db.flush().map_err(sled_err)?;
        self.sled_log.sync_data()?;
        self.index.sync()?;
        let mut mark = [0u8; 16];
        mark[..8].copy_from_slice(&self.indexed_end.to_be_bytes());
        mark[8..].copy_from_slice(&self.index.count().to_be_bytes());
        let mut batch = sled::Batch::default();
        batch.insert(MARK_KEY, &mark[..]);
        if layout {
            batch.insert(LAYOUT_KEY, LAYOUT);
        }
        sled.meta.apply_batch(batch).map_err(sled_err)?;
        sled.db.flush().map_err(sled_err)?;
        self.sled_log.sync_data()?;
        self.marked_at = std::time::Instant::now();
        Ok(())
    }

    /// Points the index at other bytes for one event, bypassing the writer and every check.
    /// This exists for tamper drills and tests of `verify`; nothing in the server calls it.
    pub fn tamper_event_bytes(&mut self, seq: u64, bytes: &[u8]) -> Result<(), LedgerError> {
        let event = StagedEvent {
            seq,
            bytes: bytes.to_vec(),
            session: None,
        };
        let framed = self.log.append(&[event], &[])?;
        self.unindexed.push(framed);
        self.sync()?;
        self.make_index_durable(false)
    }

    /// Removes one event from the index (and nothing else), bypassing the writer and every
    /// check. For tamper drills and tests of `verify` only, like
    /// [`SledStore::tamper_event_bytes`].
    pub fn tamper_remove_event(&mut self, seq: u64) -> Result<(), LedgerError> {
        self.index.remove(seq)?;
        self.make_index_durable(false)
    }
}

fn closed() -> LedgerError {
    LedgerError::Sled("the database is closed: opening it again failed".into())
}

/// The slot an index tree holds under `key`.
fn slot_in(tree: &sled::Tree, key: &[u8]) -> Result<Option<Slot>, LedgerError> {
    match tree.get(key).map_err(sled_err)? {
        None => Ok(None),
        Some(bytes) => Slot::decode(&bytes)
            .map(Some)
            .ok_or_else(|| LedgerError::Corrupt("index entry".into())),
    }
}

/// Every commitment a text index holds with its slot, in the order the records sit on disk.
fn slots_in_file_order(index: &sled::Tree) -> Result<Vec<([u8; 32], Slot)>, LedgerError> {
    let mut slots = Vec::new();
    for item in index.iter() {
        let (key, value) = item.map_err(sled_err)?;
        let commitment: [u8; 32] = key
            .as_ref()
            .try_into()
            .map_err(|_| LedgerError::Corrupt("text index key".into()))?;
        let slot =
            Slot::decode(&value).ok_or_else(|| LedgerError::Corrupt("text index entry".into()))?;
        slots.push((commitment, slot));
    }
    slots.sort_by_key(|(_, slot)| slot.offset);
    Ok(slots)
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
        self.make_index_durable(false)
    }

    /// Writes the batch's frame to the log file; its index entries wait for [`Store::sync`].
    fn append_batch(&mut self, batch: &Batch) -> Result<(), LedgerError> {
        let framed = self.log.append(&batch.events, &batch.texts)?;
        self.unindexed.push(framed);
        Ok(())
    }

    /// One `fdatasync` of the log file, then the index entries of what it made durable. A
    /// crash between the two loses nothing: the next open indexes the frame again. Every
    /// [`MARK_EVERY`], the indexes are then made durable and the mark moved.
    fn sync(&mut self) -> Result<(), LedgerError> {
        if self.unindexed.is_empty() {
            return Ok(());
        }
        self.log.sync()?;
        #[cfg(debug_assertions)]
        if crash_drill::between_the_two_writes() {
            crash_drill::abort("between the log file's sync and the index's write");
        }
        let frames = std::mem::take(&mut self.unindexed);
        self.sled
            .as_ref()
            .ok_or_else(closed)?
            .index(&mut self.index, &frames)?;
        if let Some(last) = frames.last() {
            self.indexed_end = last.end;
        }
        if self.marked_at.elapsed() >= MARK_EVERY {
            self.make_index_durable(false)?;
        }
        Ok(())
    }

    fn last_seq(&self) -> Result<Option<u64>, LedgerError> {
        self.index.reads().last_seq()
    }

    fn event_bytes(&self, seq: u64) -> Result<Option<Vec<u8>>, LedgerError> {
        match self.index.reads().slot(seq)? {
            None => Ok(None),
            Some(slot) => self.reader.event(slot).map(Some),
        }
    }

    fn events_from(&self, from: u64) -> EventIter<'_> {
        Box::new(self.reader.in_order(self.index.reads().slots_from(from)))
    }

    fn session_seqs(&self, session: &SessionId) -> Result<Vec<u64>, LedgerError> {
        seqs_of(&self.sled()?.sessions, session)
    }

    fn text(&self, commitment: &[u8; 32]) -> Result<Option<TextRecord>, LedgerError> {
        match slot_in(&self.sled()?.texts, commitment)? {
            None => Ok(None),
            Some(slot) => self.reader.text(slot, commitment),
        }
    }

    fn texts_in_file_order(&self) -> Result<TextIter<'_>, LedgerError> {
        let slots = slots_in_file_order(&self.sled()?.texts)?;
        Ok(Box::new(self.reader.texts_in_order(slots)))
    }

    /// Overwrites the texts in the log file. The index is made durable first: a frame whose
    /// text was overwritten no longer matches its checksum, so it must never be judged again
    /// at open, and only frames past the durable index's mark are.
    fn erase_texts(&mut self, commitments: &[[u8; 32]]) -> Result<(), LedgerError> {
        self.sync()?;
        let mut slots = Vec::new();
        for c in commitments {
            if let Some(slot) = slot_in(&self.sled()?.texts, c)?
                && self.reader.text(slot, c)?.is_some()
            {
                slots.push(slot);
            }
        }
        if slots.is_empty() {
            return Ok(());
        }
        self.make_index_durable(false)?;
        for slot in slots {
            self.log.erase(slot)?;
        }
        self.log.sync()
    }

    fn snapshots(&self) -> Option<Arc<dyn SnapshotStore>> {
        Some(Arc::new(FileSnapshots::new(&self.dir)))
    }

    /// sled's page cache evicts a page only once 64 more reads have been queued in its shard
    /// (one of 256), so a pass over the whole index keeps up to 16,384 pages in memory whatever
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
        *reads = Some(ReadParts::of(&sled, &self.reader, self.index.reader()));
        self.sled = Some(sled);
        Ok(())
    }

    fn session_log(&self) -> Option<Arc<dyn SessionLog>> {
        Some(self.reads.clone())
    }

    /// The log file up to the end of its last frame (not the zeros written ahead of it).
    fn log_bytes(&self) -> Option<u64> {
        Some(self.log.end())
    }

    fn read_only(&self) -> Result<Option<Box<dyn Store>>, LedgerError> {
        let parts = self.reads.with(|p| {
            Ok(ReadParts {
                events: p.events.clone(),
                sessions: p.sessions.clone(),
                texts: p.texts.clone(),
                log: p.log.clone(),
            })
        })?;
        Ok(Some(Box::new(SledReadOnly {
            meta: self.meta()?,
            last: self.last_seq()?,
            end: self.log.end(),
            parts,
        })))
    }
}

/// The embedded log as it stood when [`Store::read_only`] was called, read beside its writer
/// through handles of its own (the index file's reader, sled's trees, the log file read by
/// `pread`): events up to that seq, and the texts of the frames up to there (a text erased
/// since reads as erased). Holding it keeps sled's trees open.
struct SledReadOnly {
    meta: Option<LedgerMeta>,
    last: Option<u64>,
    /// Where the log's last frame ended then: a text past it came with a later event.
    end: u64,
    parts: ReadParts,
}

fn read_only_refusal() -> LedgerError {
    LedgerError::Io(std::io::Error::other(
        "a read-only view of the log takes no writes",
    ))
}

impl Store for SledReadOnly {
    fn meta(&self) -> Result<Option<LedgerMeta>, LedgerError> {
        Ok(self.meta.clone())
    }
    fn init_meta(&mut self, _: &LedgerMeta) -> Result<(), LedgerError> {
        Err(read_only_refusal())
    }
    fn append_batch(&mut self, _: &Batch) -> Result<(), LedgerError> {
        Err(read_only_refusal())
    }
    fn sync(&mut self) -> Result<(), LedgerError> {
        Ok(())
    }
    fn last_seq(&self) -> Result<Option<u64>, LedgerError> {
        Ok(self.last)
    }
    fn event_bytes(&self, seq: u64) -> Result<Option<Vec<u8>>, LedgerError> {
        if self.last.is_none_or(|last| seq > last) {
            return Ok(None);
        }
        match self.parts.events.slot(seq)? {
            None => Ok(None),
            Some(slot) => self.parts.log.event(slot).map(Some),
        }
    }
    fn events_from(&self, from: u64) -> EventIter<'_> {
        let last = self.last.unwrap_or(0);
        let slots = self
            .parts
            .events
            .slots_from(from)
            .take_while(move |slot| slot.as_ref().map_or(true, |(seq, _, _)| *seq <= last));
        Box::new(self.parts.log.in_order(slots))
    }
    fn session_seqs(&self, session: &SessionId) -> Result<Vec<u64>, LedgerError> {
        let last = self.last.unwrap_or(0);
        let mut seqs = seqs_of(&self.parts.sessions, session)?;
        seqs.retain(|seq| *seq <= last);
        Ok(seqs)
    }
    fn text(&self, commitment: &[u8; 32]) -> Result<Option<TextRecord>, LedgerError> {
        match slot_in(&self.parts.texts, commitment)? {
            Some(slot) if slot.offset < self.end => self.parts.log.text(slot, commitment),
            _ => Ok(None),
        }
    }
    fn texts_in_file_order(&self) -> Result<TextIter<'_>, LedgerError> {
        let mut slots = slots_in_file_order(&self.parts.texts)?;
        slots.retain(|(_, slot)| slot.offset < self.end);
        Ok(Box::new(self.parts.log.texts_in_order(slots)))
    }
    fn erase_texts(&mut self, _: &[[u8; 32]]) -> Result<(), LedgerError> {
        Err(read_only_refusal())
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

    /// A read-only view holds the log as it stood: later events are not in it, nor the
    /// texts that came with them (a backup taken from it holds no text without its event).
    #[test]
    fn a_read_only_view_holds_neither_the_events_nor_the_texts_written_after_it() {
        let dir = tempfile::tempdir().unwrap();
        let session = SessionId::random();
        let mut store = SledStore::reopen(dir.path());
        store.append_batch(&batch(1, &session)).unwrap();
        store.sync().unwrap();
        let view = store.read_only().unwrap().unwrap();
        store.append_batch(&batch(2, &session)).unwrap();
        store.sync().unwrap();
        assert_eq!(view.last_seq().unwrap(), Some(1));
        let all: Vec<u64> = view.events_from(1).map(|r| r.unwrap().0).collect();
        assert_eq!(all, vec![1]);
        assert_eq!(view.session_seqs(&session).unwrap(), vec![1]);
        assert_eq!(view.text(&[1; 32]).unwrap().unwrap().text, "text 1");
        assert_eq!(view.text(&[2; 32]).unwrap(), None);
        let texts: Vec<[u8; 32]> = view
            .texts_in_file_order()
            .unwrap()
            .map(|(c, _)| c)
            .collect();
        assert_eq!(texts, vec![[1; 32]]);
        assert_eq!(store.texts_in_file_order().unwrap().count(), 2);
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

    /// A frame made durable whose index entries never were (a crash between the two writes)
    /// is indexed at the next open; a frame that never became whole (a torn write) is cut off.
    #[test]
    fn frames_past_the_index_are_indexed_at_open_and_a_torn_one_is_cut_off() {
        let dir = tempfile::tempdir().unwrap();
        let session = SessionId::random();
        let log = dir.path().join(LOG_FILE);
        let whole = {
            let mut store = SledStore::reopen(dir.path());
            store.append_batch(&batch(1, &session)).unwrap();
            store.sync().unwrap();
            // Durable in the log, never indexed.
            store.append_batch(&batch(2, &session)).unwrap();
            store.log.sync().unwrap();
            store.unindexed.clear();
            assert_eq!(store.last_seq().unwrap(), Some(1));
            // A third frame, written only in part.
            store.append_batch(&batch(3, &session)).unwrap();
            store.log.sync().unwrap();
            let whole = store.unindexed[0].end;
            store.unindexed.clear();
            whole
        };
        let torn = whole - 5;
        File::options()
            .write(true)
            .open(&log)
            .unwrap()
            .set_len(torn)
            .unwrap();
        let mut store = SledStore::reopen(dir.path());
        assert_eq!(store.last_seq().unwrap(), Some(2));
        assert_eq!(store.session_seqs(&session).unwrap(), vec![1, 2]);
        assert_eq!(store.text(&[2; 32]).unwrap().unwrap().text, "text 2");
        assert_eq!(store.text(&[3; 32]).unwrap(), None);
        let cut = std::fs::metadata(&log).unwrap().len();
        assert!(cut < torn, "the torn frame is cut off ({torn} -> {cut})");
        // The next batch goes where the torn one was.
        store.append_batch(&batch(3, &session)).unwrap();
        store.sync().unwrap();
        drop(store);
        let store = SledStore::reopen(dir.path());
        let all: Vec<u64> = store.events_from(1).map(|r| r.unwrap().0).collect();
        assert_eq!(all, vec![1, 2, 3]);
        assert_eq!(store.text(&[3; 32]).unwrap().unwrap().text, "text 3");
    }

    /// A crash before the mark moves: the event records past it may hold anything (they were
    /// never made durable); the next open drops them and indexes those frames again.
    #[test]
    fn event_records_past_the_mark_are_written_again_from_the_log_at_open() {
        let dir = tempfile::tempdir().unwrap();
        let session = SessionId::random();
        {
            let mut store = SledStore::reopen(dir.path());
            store.append_batch(&batch(1, &session)).unwrap();
            store.sync().unwrap();
        }
        {
            let mut store = SledStore::reopen(dir.path());
            for seq in 2..=3 {
                store.append_batch(&batch(seq, &session)).unwrap();
                store.sync().unwrap();
            }
            assert_eq!(store.last_seq().unwrap(), Some(3));
            // A crash: sled goes without the mark moving past event 1.
            store.sled = None;
        }
        let idx = dir.path().join(EVENT_INDEX_FILE);
        let file = File::options().write(true).open(&idx).unwrap();
        use std::os::unix::fs::FileExt;
        file.write_all_at(&[0xAB; 12 * 4], 12 * 2).unwrap();
        drop(file);
        let store = SledStore::reopen(dir.path());
        let all: Vec<u64> = store.events_from(0).map(|r| r.unwrap().0).collect();
        assert_eq!(all, vec![1, 2, 3]);
        assert_eq!(store.event_bytes(3).unwrap(), Some(b"{\"seq\":3}".to_vec()));
        assert_eq!(store.session_seqs(&session).unwrap(), vec![1, 2, 3]);
        assert_eq!(std::fs::metadata(&idx).unwrap().len(), 12 * 4);
    }

    /// An event index cut shorter than the mark: the store refuses to open, and a refused open
    /// leaves the mark where it was (it does not fall back to indexing from the start of the
    /// log, whose erased frames no longer match their checksums).
    #[test]
    fn a_cut_event_index_is_refused_every_time_and_the_mark_stays() {
        let dir = tempfile::tempdir().unwrap();
        let session = SessionId::random();
        {
            let mut store = SledStore::reopen(dir.path());
            for seq in 1..=3 {
                store.append_batch(&batch(seq, &session)).unwrap();
                store.sync().unwrap();
            }
        }
        let idx = dir.path().join(EVENT_INDEX_FILE);
        let full = std::fs::read(&idx).unwrap();
        File::options()
            .write(true)
            .open(&idx)
            .unwrap()
            .set_len(12)
            .unwrap();
        for _ in 0..2 {
            match when_unlocked(|| SledStore::open(dir.path())) {
                Err(LedgerError::Corrupt(why)) => assert!(why.contains("restore"), "{why}"),
                Err(other) => panic!("{other}"),
                Ok(_) => panic!("a cut event index was accepted"),
            }
        }
        std::fs::write(&idx, full).unwrap();
        let store = SledStore::reopen(dir.path());
        let all: Vec<u64> = store.events_from(0).map(|r| r.unwrap().0).collect();
        assert_eq!(all, vec![1, 2, 3]);
    }

    /// A ledger of 26 Nov 2026 (`log/1`: the event index in sled's `log_events` tree) has it
    /// moved into `events.idx` at its first open, then the tree dropped.
    #[test]
    fn a_log1_ledger_has_its_event_index_moved_into_a_file() {
        let dir = tempfile::tempdir().unwrap();
        let session = SessionId::random();
        let mut slots = Vec::new();
        {
            let mut store = SledStore::reopen(dir.path());
            for seq in 1..=3 {
                store.append_batch(&batch(seq, &session)).unwrap();
                store.sync().unwrap();
            }
            for seq in 1..=3 {
                slots.push((seq, store.index.reads().slot(seq).unwrap().unwrap()));
            }
        }
        {
            // As the build of 26 Nov 2026 left it: no event index file, the entries and the
            // mark (the log's end only) in sled.
            let db = sled::open(dir.path()).unwrap();
            let meta = db.open_tree("meta").unwrap();
            let mark = meta.remove(MARK_KEY).unwrap().unwrap();
            meta.insert(LOG1_END, &mark[..8]).unwrap();
            meta.insert(LAYOUT_KEY, LOG1).unwrap();
            let events = db.open_tree(LOG1_EVENTS).unwrap();
            for (seq, slot) in &slots {
                events
                    .insert(seq.to_be_bytes(), &slot.encode()[..])
                    .unwrap();
            }
            db.flush().unwrap();
            std::fs::remove_file(dir.path().join(EVENT_INDEX_FILE)).unwrap();
        }
        let store = SledStore::reopen(dir.path());
        let all: Vec<u64> = store.events_from(0).map(|r| r.unwrap().0).collect();
        assert_eq!(all, vec![1, 2, 3]);
        assert_eq!(store.last_seq().unwrap(), Some(3));
        assert_eq!(store.text(&[2; 32]).unwrap().unwrap().text, "text 2");
        let sled = store.sled().unwrap();
        assert!(
            !sled
                .db
                .tree_names()
                .iter()
                .any(|n| n == LOG1_EVENTS.as_bytes())
        );
        assert_eq!(sled.meta.get(LAYOUT_KEY).unwrap().unwrap(), LAYOUT);
        assert_eq!(sled.meta.get(LOG1_END).unwrap(), None);
    }

    /// A ledger of the layout before the log file (events in sled's `events` tree, texts in
    /// `texts.dat`) is copied into the log file at its first open: every event, session entry
    /// and text the old index named, no erased or torn text, nothing of the old layout left.
    #[test]
    fn a_ledger_of_the_layout_before_the_log_file_is_copied_into_it() {
        let dir = tempfile::tempdir().unwrap();
        let session = SessionId::random();
        let len_prefix = |text: &str| {
            let mut bytes = Vec::new();
            bytes.extend_from_slice(&u32::try_from(32 + text.len()).unwrap().to_le_bytes());
            bytes
        };
        {
            let db = sled::open(dir.path()).unwrap();
            let events = db.open_tree(OLD_EVENTS).unwrap();
            let sessions = db.open_tree("session_events").unwrap();
            let index = db.open_tree(OLD_TEXT_INDEX).unwrap();
            let meta = db.open_tree("meta").unwrap();
            meta.insert(
                "ledger",
                &br#"{"ledgerId":"l","createdAt":"t","format":"thinkledger/1"}"#[..],
            )
            .unwrap();
            for seq in 1..=3u64 {
                events
                    .insert(seq.to_be_bytes(), format!("{{\"seq\":{seq}}}").as_bytes())
                    .unwrap();
            }
            sessions.insert(session_key(&session, 1), &[][..]).unwrap();
            sessions.insert(session_key(&session, 3), &[][..]).unwrap();
            // Three records: kept, erased, and one past where the old index ended (torn).
            let mut file = b"thinkledger texts v1\n".to_vec();
            for (c, text, erased) in [(1u8, "kept text", false), (2, "gone text", true)] {
                let offset = file.len() as u64;
                file.extend(len_prefix(text));
                file.extend_from_slice(&[c; 32]);
                if erased {
                    file.extend(vec![0; 32 + text.len()]);
                } else {
                    file.extend_from_slice(&[9; 32]);
                    file.extend_from_slice(text.as_bytes());
                }
                let slot = Slot {
                    offset,
                    len: u32::try_from(32 + text.len()).unwrap(),
                };
                index.insert(&[c; 32][..], &slot.encode()[..]).unwrap();
            }
            meta.insert(OLD_TEXTS_END, &(file.len() as u64).to_be_bytes()[..])
                .unwrap();
            file.extend(len_prefix("torn"));
            std::fs::write(dir.path().join(OLD_TEXT_FILE), file).unwrap();
            db.flush().unwrap();
        }
        let store = SledStore::reopen(dir.path());
        assert_eq!(store.meta().unwrap().unwrap().ledger_id, "l");
        let all: Vec<(u64, Vec<u8>)> = store.events_from(1).map(|r| r.unwrap()).collect();
        assert_eq!(
            all,
            (1..=3u64)
                .map(|s| (s, format!("{{\"seq\":{s}}}").into_bytes()))
                .collect::<Vec<_>>()
        );
        assert_eq!(store.session_seqs(&session).unwrap(), vec![1, 3]);
        let kept = store.text(&[1; 32]).unwrap().unwrap();
        assert_eq!((kept.salt, kept.text.as_str()), ([9; 32], "kept text"));
        assert_eq!(store.text(&[2; 32]).unwrap(), None);
        assert!(!dir.path().join(OLD_TEXT_FILE).exists());
        let names = store.sled().unwrap().db.tree_names();
        assert!(!names.iter().any(|n| n == OLD_EVENTS.as_bytes()));
        assert!(!names.iter().any(|n| n == OLD_TEXT_INDEX.as_bytes()));
        drop(store);
        // Opened again: as it was, nothing copied twice.
        let store = SledStore::reopen(dir.path());
        assert_eq!(store.events_from(1).count(), 3);
        assert_eq!(store.texts_in_file_order().unwrap().count(), 1);
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
    fn a_large_event_survives_reopen() {
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
            store.sync().unwrap();
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
