//! A read-only view of the log as the writer holds it: stored events, their texts (or the mark of
//! their erasure), the Merkle tree over their hashes and the signed checkpoints.
//!
//! Decisions that read the log itself (audit export, replay, erasure) and the CLI's offline work
//! get a [`LogView`]; they never see the store or the tree directly, and nothing through this
//! trait can change them. Everything it shows is what the writer has staged so far: events of
//! the batch being decided are visible, but only durable events are ever covered by a signed
//! checkpoint.

use super::LedgerError;
use super::checkpoint::{Checkpoint, NoteSigner};
use super::merkle::{MerkleError, NodeHash};
use super::store::{LedgerMeta, TextRecord};
use crate::events::SessionId;

/// What became of one piece of committed text.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum TextState {
    /// The text and its salt are stored.
    Present(TextRecord),
    /// Erased by the event at `seq` (its `TextsErased` fact names the commitment).
    Erased { seq: u64 },
    /// Neither stored nor erased: lost or never written. `verify` reports it as `text_missing`.
    Missing,
}

/// A checkpoint the ledger signed, with the exact signed note.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SignedCheckpoint {
    pub checkpoint: Checkpoint,
    /// The C2SP signed note: checkpoint body, blank line, signature line(s).
    pub note: String,
    /// When it was signed (RFC 3339 UTC); the writer's clock, recorded beside the note.
    pub signed_at: String,
}

/// The log as the writer holds it, read-only.
pub trait LogView {
    fn meta(&self) -> &LedgerMeta;
    /// Events in the log (= leaves in the tree); the last seq.
    fn len(&self) -> u64;
    fn is_empty(&self) -> bool {
        self.len() == 0
    }
    /// The stored canonical bytes of the event at `seq` (1-based).
    fn event_bytes(&self, seq: u64) -> Result<Vec<u8>, LedgerError>;
    /// Seqs of the events recorded against `session`, ascending.
    fn session_seqs(&self, session: &SessionId) -> Result<Vec<u64>, LedgerError>;
    /// The text behind a commitment, or why there is none.
    fn text(&self, commitment: &[u8; 32]) -> Result<TextState, LedgerError>;
    /// The Merkle root of the first `size` events (leaf `i` is the event with seq `i + 1`).
    fn root_at(&self, size: u64) -> Result<NodeHash, MerkleError>;
    /// RFC 9162 inclusion proof of leaf `index` (= seq − 1) in the tree of `size` leaves.
    fn inclusion_proof(&self, index: u64, size: u64) -> Result<Vec<NodeHash>, MerkleError>;
    /// RFC 9162 consistency proof from the tree of `old_size` leaves to that of `new_size`.
    fn consistency_proof(&self, old_size: u64, new_size: u64)
    -> Result<Vec<NodeHash>, MerkleError>;
    /// The latest checkpoint the ledger signed, if any.
    fn latest_checkpoint(&self) -> Option<&SignedCheckpoint>;
    /// The C2SP verifier key of the ledger's signing key
    /// (`thinkledger/<ledgerId>+<key id hex>+<base64>`), when the ledger has one.
    fn verifier_key(&self) -> Option<String> {
        self.signer().map(|s| s.verifier().to_vkey())
    }
    /// The ledger's signing key, for signing what a decision hands out (an audit export).
    fn signer(&self) -> Option<&NoteSigner>;
    /// The `recordedAt` of the event being decided (RFC 3339 UTC, microseconds), during a
    /// decision: the writer fixes it before deciding, a re-execution passes the recorded one.
    /// Decisions take "now" from here, never from the clock, so they replay exactly.
    fn decided_at(&self) -> Option<&str> {
        None
    }
}

/// The stored events and texts of sessions, read beside the writer by any thread: what a
/// server folds a session's body from when it is asked for one it does not hold. Reads see
/// what is durable or staged; a reader bounds what it folds by the state it answers from.
pub trait SessionLog: Send + Sync {
    /// Seqs of the events recorded against `session`, ascending.
    fn session_seqs(&self, session: &SessionId) -> Result<Vec<u64>, LedgerError>;
    /// The stored canonical bytes of the event at `seq`.
    fn event_bytes(&self, seq: u64) -> Result<Option<Vec<u8>>, LedgerError>;
    /// The stored bytes of the events `first..=last` there are, ascending by seq. A store that
    /// reads a range in one round trip overrides this (the Merkle tree reads its dropped leaves
    /// a block at a time: a start checks every signed checkpoint that way).
    fn events_bytes(&self, first: u64, last: u64) -> Result<Vec<(u64, Vec<u8>)>, LedgerError> {
        let mut found = Vec::new();
        for seq in first..=last {
            if let Some(bytes) = self.event_bytes(seq)? {
                found.push((seq, bytes));
            }
        }
        Ok(found)
    }
    /// The text behind a commitment; `None` when it was erased or never stored.
    fn text(&self, commitment: &[u8; 32]) -> Result<Option<TextRecord>, LedgerError>;
}
