//! What the memory projection's folds changed of the memory index, journaled as data, and the
//! index's read of the memories ([`Source`], for `index::memory::DerivedIndex`). Nothing here
//! touches the index: the writer hands the journal over after each fold.

use std::sync::Arc;

use super::{Memory, MemoryState};
use crate::embed::Embedding;
use crate::index::memory::{Change, IndexError, MemoryDocument, Source};

/// The changes to what the memory index holds, in fold order, from a known anchor.
#[derive(Debug, Clone)]
pub(super) struct Journal {
    /// The anchor the state stood at before the first change here; `None` for a state loaded
    /// from a snapshot (an index built before it is built again).
    pub(super) from: Option<(u64, Arc<str>)>,
    pub(super) changes: Vec<Journaled>,
}

impl Default for Journal {
    /// A fresh state's: nothing changed since the empty anchor.
    fn default() -> Self {
        Self {
            from: Some((0, Arc::from(""))),
            changes: Vec::new(),
        }
    }
}

impl Journal {
    pub(super) fn unknown() -> Self {
        Self {
            from: None,
            changes: Vec::new(),
        }
    }
}

/// One change, with the event that made it.
#[derive(Debug, Clone)]
pub(super) struct Journaled {
    pub(super) seq: u64,
    pub(super) hash: Arc<str>,
    pub(super) change: IndexChange,
}

/// What one fold changed of what the index holds.
#[derive(Debug, Clone)]
pub(super) enum IndexChange {
    /// The memory as the fold left it.
    Upsert(Arc<Memory>),
    /// The memory left the state.
    Erase { owner: Arc<str>, id: Arc<str> },
}

impl IndexChange {
    fn to_change(&self) -> Change {
        match self {
            Self::Upsert(memory) => Change::Upsert {
                document: memory.document(),
                embedding: memory.embedding(),
            },
            Self::Erase { owner, id } => Change::Erase {
                owner: owner.to_string(),
                id: id.to_string(),
            },
        }
    }
}

/// The memory index is derived from the memories (`index::memory::DerivedIndex`): it reads
/// them and the journaled changes through this, and the fold never touches it.
impl Source for MemoryState {
    fn anchor(&self) -> (u64, &str) {
        (self.index_seq, &self.index_hash)
    }

    fn memories(&self) -> u64 {
        self.owners.values().map(|o| o.memories.len() as u64).sum()
    }

    fn each(
        &self,
        feed: &mut dyn FnMut(&MemoryDocument, &Embedding) -> Result<(), IndexError>,
    ) -> Result<(), IndexError> {
        for memory in self.in_stored_order() {
            feed(&memory.document(), &memory.embedding())?;
        }
        Ok(())
    }

    fn changes_since(&self, seq: u64, hash: &str) -> Option<Vec<(u64, String, Change)>> {
        let Journal { from, changes } = &self.journal;
        let start = if from
            .as_ref()
            .is_some_and(|(s, h)| *s == seq && **h == *hash)
        {
            0
        } else {
            1 + changes
                .iter()
                .rposition(|c| c.seq == seq && *c.hash == *hash)?
        };
        Some(
            changes[start..]
                .iter()
                .map(|c| (c.seq, c.hash.to_string(), c.change.to_change()))
                .collect(),
        )
    }
}
