//! The memory index as a server keeps it beside its state: derived from what the memory
//! projection folds ([`Source`]), never part of it, and never the truth. The writer feeds it
//! after each event is folded ([`DerivedIndex::feed`], through `Decider::derive`); a decision
//! borrows it read-only ([`DerivedIndex::lend`]), current with the state it decides against.
//!
//! It is built when first lent (an open replays the log without it): reopened from its
//! directory when the last commit there was anchored at the state's anchor (the event whose
//! fold last changed what the index holds), else rebuilt from the state's memories. Fed, it
//! applies the changes the fold journaled since its own anchor; when the state no longer holds
//! them (a snapshot was loaded) it is dropped and built again at the next lend. A lend also
//! catches up on its own, so a driver that folds without feeding (re-execution) is served the
//! same index: a decision never sees an index behind or ahead of its state. Staged text changes
//! are committed when a full-text lend needs them (tantivy shows documents only once
//! committed), when a snapshot is saved and at close, never once per change.
//!
//! Failures are never swallowed: each is logged, counted (`thinkledger_memory_index_failures_total`,
//! `thinkledger_memory_index_failed`) and drops the index, which the next lend rebuilds; a
//! lend that cannot build it answers the error.
//!
//! Shared, behind one lock, by the writer's state and every view published from it (a view
//! computes waypoint hints from it off the writer: [`DerivedIndex::nearest_hint`]).
//!
//! **Architecture Invariant:** only this module decides where the index lives and touches its
//! directory; the folds and the decisions hand it states and take answers.

use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, MutexGuard};

use super::{IndexError, MemoryDocument, MemoryIndex, MemoryIndexConfig, NearestHint};
use crate::embed::Embedding;

/// One change to what the index holds, as a fold journaled it.
#[derive(Debug, Clone)]
pub enum Change {
    /// The memory as it now is (replacing one of the same owner and id).
    Upsert {
        document: MemoryDocument,
        embedding: Embedding,
    },
    /// The memory left the state (erased): it leaves the index and the index's files.
    Erase { owner: String, id: String },
}

/// What the index is derived from: the memories a state holds and the changes its fold made.
pub trait Source {
    /// The seq and hash of the event whose fold last changed what the index holds (`(0, "")`
    /// before any).
    fn anchor(&self) -> (u64, &str);
    /// How many memories the index holds once current.
    fn memories(&self) -> u64;
    /// Hands every memory to `feed`, owner by owner, each owner's in the order they were
    /// stored (each then takes its place in its session at the end).
    fn each(
        &self,
        feed: &mut dyn FnMut(&MemoryDocument, &Embedding) -> Result<(), IndexError>,
    ) -> Result<(), IndexError>;
    /// The changes folded after the index stood at event `seq`, `hash`, in order, each with
    /// the seq and hash of its event; `None` when the state no longer holds them all.
    fn changes_since(&self, seq: u64, hash: &str) -> Option<Vec<(u64, String, Change)>>;
}

/// Where the index lives.
#[derive(Debug, Clone, Default)]
enum Place {
    #[default]
    Ram,
    /// Its full-text half in this directory (emptied and rebuilt when it cannot be reopened).
    Dir(PathBuf),
}

/// The index, when built, and what it is at.
#[derive(Debug, Default)]
struct Kept {
    place: Place,
    index: Option<MemoryIndex>,
    /// The anchor of the state `index` holds ([`Source::anchor`]).
    at: (u64, String),
    /// Text changes staged since the last commit.
    dirty: bool,
    /// Closed with its ledger: never built again (its directory may be another ledger's by
    /// then).
    closed: bool,
}

/// The memory index derived from a state (see the module): cloned, it is the same index.
#[derive(Debug, Clone, Default)]
pub struct DerivedIndex(Arc<Mutex<Kept>>);

/// The index lent to a decision: read-only, current with the state it was lent for.
pub struct Lent<'a>(MutexGuard<'a, Kept>);

impl std::ops::Deref for Lent<'_> {
    type Target = MemoryIndex;

    fn deref(&self) -> &MemoryIndex {
        // A lend is made only of a built index.
        self.0
            .index
            .as_ref()
            .unwrap_or_else(|| unreachable!("a lent index is built"))
    }
}

impl DerivedIndex {
    /// An index held in memory.
    pub fn in_ram() -> Self {
        Self::default()
    }

    /// An index whose full-text half lives in `dir` (reopened, or emptied and rebuilt, when
    /// first lent).
    pub fn in_dir(dir: PathBuf) -> Self {
        let kept = Kept {
            place: Place::Dir(dir),
            ..Kept::default()
        };
        Self(Arc::new(Mutex::new(kept)))
    }

    fn lock(&self) -> MutexGuard<'_, Kept> {
        self.0.lock().unwrap_or_else(|poisoned| {
            // A panic while it was changed may have left it half changed: build it again.
            self.0.clear_poison();
            let mut kept = poisoned.into_inner();
            kept.index = None;
            kept
        })
    }

    /// Brings a built index up to `source` (the writer, after each fold). An index not built
    /// stays so: the next lend builds it from the state then.
    pub fn feed(&self, source: &dyn Source) {
        let mut kept = self.lock();
        if kept.index.is_some()
            && !kept.closed
            && let Err(e) = kept.catch_up(source)
        {
            kept.failed("feed", &e);
        }
    }

    /// The index, current with `source` (built or caught up first if need be), for full-text
    /// queries: staged text changes are committed.
    pub fn lend(&self, source: &dyn Source) -> Result<Lent<'_>, IndexError> {
        self.lend_with(source, true)
    }

    /// [`DerivedIndex::lend`] without committing staged text changes: for vector queries,
    /// which see every change at once (a store's waypoints need no commit).
    pub fn lend_vectors(&self, source: &dyn Source) -> Result<Lent<'_>, IndexError> {
        self.lend_with(source, false)
    }

    fn lend_with(&self, source: &dyn Source, commit: bool) -> Result<Lent<'_>, IndexError> {
        let mut kept = self.lock();
        if kept.closed {
            return Err(IndexError::Closed);
        }
        if kept.index.is_some()
            && let Err(e) = kept.catch_up(source)
        {
            kept.failed("feed", &e);
        }
        if kept.index.is_none() {
            match build(&kept.place, source) {
                Ok(index) => {
                    kept.index = Some(index);
                    kept.at = owned(source.anchor());
                    kept.dirty = false;
                    crate::metrics::process().memory_index_built();
                }
                Err(e) => {
                    kept.failed("build", &e);
                    return Err(e);
                }
            }
        }
        if commit && kept.dirty {
            kept.commit()
                .map_err(|e| IndexError::Dropped(Box::new(e)))?;
        }
        Ok(Lent(kept))
    }

    /// The owner's `k` nearest memories to `embedding` as the index has them now, for a
    /// decision to check ([`MemoryIndex::nearest_after`]): `None` when the index is not built
    /// (the decision builds it), the owner has no vectors, or they are of another model. The
    /// lock is held only to copy the owner's rows (a pointer per chunk of them); the search
    /// runs after, beside the writer.
    pub fn nearest_hint(
        &self,
        owner: &str,
        embedding: &Embedding,
        k: usize,
    ) -> Option<NearestHint> {
        let rows = {
            let kept = self.lock();
            kept.index.as_ref()?.rows_for(owner, embedding).ok()??
        };
        Some(rows.hint(embedding, k))
    }

    /// Commits staged text changes, so that a directory index on disk is as current as it can
    /// be (when a snapshot is saved: the next open then reopens it instead of rebuilding). An
    /// index not built is left so.
    pub fn commit(&self) {
        // A failure is logged, counted and drops the index (rebuilt at the next lend).
        let _ = self.lock().commit();
    }

    /// Commits and lets go of the index (and of its directory's lock), for good: the ledger is
    /// shutting down. Later lends fail.
    pub fn close(&self) {
        let mut kept = self.lock();
        let _ = kept.commit();
        kept.index = None;
        kept.closed = true;
    }
}

impl Kept {
    /// Applies the changes `source` journaled since this index's anchor; drops the index when
    /// the source no longer holds them (it is built again at the next lend).
    fn catch_up(&mut self, source: &dyn Source) -> Result<(), IndexError> {
        let (seq, hash) = source.anchor();
        if self.at.0 == seq && self.at.1 == hash {
            return Ok(());
        }
        let Some(changes) = source.changes_since(self.at.0, &self.at.1) else {
            tracing::info!(
                at = self.at.0,
                seq,
                "the memory index is not at a state this one follows from; it is rebuilt"
            );
            self.index = None;
            return Ok(());
        };
        let Some(index) = self.index.as_mut() else {
            return Ok(());
        };
        for (seq, hash, change) in changes {
            index.anchor_at(seq, &hash);
            match change {
                Change::Upsert {
                    document,
                    embedding,
                } => {
                    index.upsert(&document, Some(&embedding))?;
                    self.dirty = true;
                }
                Change::Erase { owner, id } => {
                    index.delete(&owner, &id);
                    index.purge_deleted()?;
                    self.dirty = false;
                }
            }
        }
        self.at = owned(source.anchor());
        Ok(())
    }

    /// Commits staged text changes, if the index is built and has any.
    fn commit(&mut self) -> Result<(), IndexError> {
        if !self.dirty {
            return Ok(());
        }
        let Some(index) = self.index.as_mut() else {
            return Ok(());
        };
        match index.commit() {
            Ok(()) => {
                self.dirty = false;
                Ok(())
            }
            Err(e) => {
                self.failed("commit", &e);
                Err(e)
            }
        }
    }

    /// Reports `e` (logged and counted) and drops the index: it is rebuilt at the next lend.
    fn failed(&mut self, stage: &'static str, e: &IndexError) {
        tracing::error!(error = %e, stage, "the memory index failed; it is rebuilt from the state at its next use");
        crate::metrics::process().memory_index_failed(stage);
        self.index = None;
        self.dirty = false;
    }
}

fn owned((seq, hash): (u64, &str)) -> (u64, String) {
    (seq, hash.to_owned())
}

/// The index of `source`'s memories: reopened from its directory when it holds them, else
/// built afresh (a directory emptied first: it is a cache of the state).
fn build(place: &Place, source: &dyn Source) -> Result<MemoryIndex, IndexError> {
    let config = MemoryIndexConfig::default();
    if let Place::Dir(dir) = place
        && let Some(index) = reopen(dir, config, source)
    {
        return Ok(index);
    }
    let mut index = match place {
        Place::Dir(dir) => {
            empty_private_dir(dir).map_err(|e| IndexError::Directory(e.to_string()))?;
            MemoryIndex::in_dir(dir, config)?
        }
        Place::Ram => MemoryIndex::in_ram(config)?,
    };
    source.each(&mut |document, embedding| index.upsert(document, Some(embedding)))?;
    let (seq, hash) = source.anchor();
    index.anchor_at(seq, hash);
    index.commit()?;
    Ok(index)
}

/// Removes whatever `dir` holds and makes it again, a directory only its owner may enter
/// (it holds memories in clear).
fn empty_private_dir(dir: &Path) -> std::io::Result<()> {
    match std::fs::remove_dir_all(dir) {
        Err(e) if e.kind() != std::io::ErrorKind::NotFound => return Err(e),
        _ => {}
    }
    let mut builder = std::fs::DirBuilder::new();
    builder.recursive(true);
    #[cfg(unix)]
    {
        use std::os::unix::fs::DirBuilderExt;
        builder.mode(0o700);
    }
    builder.create(dir)
}

/// The index in `dir` as its last commit left it, when that was anchored at `source`'s anchor
/// and holds as many documents as it has memories: only the vectors and sessions are fed (in
/// memory), not the text. `None` (logged) otherwise: rebuild.
fn reopen(dir: &Path, config: MemoryIndexConfig, source: &dyn Source) -> Option<MemoryIndex> {
    let (seq, hash) = source.anchor();
    if seq == 0 || !dir.exists() {
        return None;
    }
    let started = std::time::Instant::now();
    let mut index = match MemoryIndex::reopen(dir, config, seq, hash) {
        Ok(Some(index)) => index,
        Ok(None) => {
            tracing::info!(
                seq,
                "memory index on disk is not at this state's seq; rebuilding it"
            );
            return None;
        }
        Err(e) => {
            tracing::warn!(error = %e, "memory index on disk does not open; rebuilding it");
            return None;
        }
    };
    let memories = source.memories();
    if index.live_documents() != memories {
        tracing::warn!(
            documents = index.live_documents(),
            memories,
            "memory index on disk holds another set of memories; rebuilding it"
        );
        return None;
    }
    if let Err(e) = source.each(&mut |document, embedding| index.adopt(document, Some(embedding))) {
        tracing::warn!(error = %e, "memory index on disk not adopted; rebuilding it");
        return None;
    }
    tracing::info!(
        seq,
        memories,
        ms = started.elapsed().as_millis(),
        "memory index reopened from disk"
    );
    Some(index)
}
