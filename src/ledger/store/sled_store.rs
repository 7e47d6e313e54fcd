//! [`SledStore`], the embedded on-disk store: the log file, the flat event index, and a sled
//! database indexing sessions and texts; reads beside the writer ([`SledReads`]) and the
//! read-only copy lent beside a serving writer. Ledgers of earlier layouts are brought over in
//! `older_layouts`.

use std::fs::File;
use std::path::{Path, PathBuf};
use std::sync::{Arc, RwLock};

use super::{Batch, EventIter, LedgerMeta, StagedEvent, Store, TextIter, TextRecord};
use crate::events::SessionId;
use crate::ledger::LedgerError;
use crate::ledger::eventindex::{EVENT_INDEX_FILE, EventIndex, EventIndexReader};
#[cfg(debug_assertions)]
use crate::ledger::logfile::crash_drill;
use crate::ledger::logfile::{Framed, LOG_FILE, LogFile, LogReader, Slot};
use crate::ledger::snapshot::{FileSnapshots, SnapshotStore};
use crate::ledger::view::SessionLog;

mod older_layouts;
#[cfg(test)]
mod tests;

/// The embedded on-disk store, in one directory: the log file ([`LogFile`]: every event and
/// every erasable text, one frame per batch), a flat index of the events in it
/// ([`EventIndex`]) and a sled database indexing sessions and texts.
///
/// One `fdatasync` makes a batch durable: its frame's. The indexes are written after it and
/// made durable lazily: every [`MARK_EVERY`], before an erasure and at shutdown, the index
/// mark moves to what they hold once that is durable. At open, every frame past the durable
/// mark is read again and indexed, and a frame that never became durable is cut off
/// (docs/calls.md, "How one call flows", step 4).
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
        crate::ledger::private::dir(dir)?;
        let sled = Sled::open(dir, cache_bytes)?;
        let log = LogFile::open(&dir.join(LOG_FILE))?;
        let reader = Arc::new(LogReader::open(&dir.join(LOG_FILE))?);
        let index = EventIndex::open(&dir.join(EVENT_INDEX_FILE))?;
        let sled_log = File::open(dir.join("db"))?;
        // Every file here holds callers' texts: none readable by others, whatever made it
        // (sled's own files, a ledger written before files were made private).
        crate::ledger::private::tighten_tree(dir)?;
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

/// The texts `index` names before offset `end`, read through `log` in file order. sled's walk
/// of the index starts now on a thread of its own and is waited for at the first text: at a
/// million events it takes seconds (two million entries, pages read from disk), so a pass that
/// asks for the texts first and reads them last (`verify`) walks it beside its other work. A
/// failed walk is one item with no commitment (zeros), as a failed read in
/// [`LogReader::in_order`] is.
fn texts_walked_ahead<'a>(index: &sled::Tree, log: &'a LogReader, end: u64) -> TextIter<'a> {
    let index = index.clone();
    let walk = std::thread::spawn(move || {
        let mut slots = slots_in_file_order(&index)?;
        slots.retain(|(_, slot)| slot.offset < end);
        Ok::<_, LedgerError>(slots)
    });
    Box::new(std::iter::once(walk).flat_map(move |walk| -> TextIter<'a> {
        let walked = walk.join().unwrap_or_else(|_| {
            Err(LedgerError::Io(std::io::Error::other(
                "the walk of the text index failed",
            )))
        });
        match walked {
            Ok(slots) => Box::new(log.texts_in_order(slots)),
            Err(e) => Box::new(std::iter::once(([0; 32], Err(e)))),
        }
    }))
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
        Ok(texts_walked_ahead(
            &self.sled()?.texts,
            &self.reader,
            u64::MAX,
        ))
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
        Ok(texts_walked_ahead(
            &self.parts.texts,
            &self.parts.log,
            self.end,
        ))
    }
    fn erase_texts(&mut self, _: &[[u8; 32]]) -> Result<(), LedgerError> {
        Err(read_only_refusal())
    }
}
