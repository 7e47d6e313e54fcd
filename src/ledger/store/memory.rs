//! [`MemStore`]: a store in memory for pure tests (snapshots optional), with the tampering
//! tests need.

use std::collections::BTreeMap;
use std::sync::Arc;

use super::{Batch, EventIter, LedgerMeta, Store, TextIter, TextRecord};
use crate::events::SessionId;
use crate::ledger::LedgerError;
use crate::ledger::snapshot::{MemSnapshots, SnapshotStore};

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
