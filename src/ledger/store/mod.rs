//! Storage behind a small trait: events by seq, a per-session index, the erasable texts and
//! ledger metadata. [`SledStore`] is the embedded on-disk store (a log file indexed by sled);
//! [`MemStore`] backs pure tests.
//!
//! A store only keeps bytes. It does not hash, decide, or know what an event means beyond the
//! session id it is indexed under. Durability is explicit: [`Store::append_batch`] stages,
//! [`Store::sync`] makes everything staged durable (for [`SledStore`]: one `fdatasync` of its
//! log file).
//!
//! The files: this one the [`Store`] trait and what crosses it; `sled_store.rs` [`SledStore`]
//! (and, under it, `older_layouts.rs`: ledgers written by earlier builds brought over at their
//! first open); `memory.rs` [`MemStore`].

mod memory;
mod sled_store;

pub use memory::MemStore;
pub use sled_store::{SERVING_CACHE_BYTES, SledReads, SledStore};

use std::sync::Arc;

use serde::{Deserialize, Serialize};

use super::LedgerError;
use super::hash::SALT_LEN;
use super::snapshot::SnapshotStore;
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
    /// would otherwise read them one at a time from scattered places. The store may start
    /// the work at the call and finish it beside the caller's, so a pass should ask early and
    /// read late. A failure that names no text is an item with the zero commitment.
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
