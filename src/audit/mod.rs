//! Offline-verifiable audit exports: the `thinkledger-audit/1` document, its builder (from a
//! [`LogView`](crate::ledger::LogView)) and its verifier (from the file's bytes alone).
//!
//! An export carries the selected events exactly as stored, an RFC 9162 inclusion proof for each
//! to a signed checkpoint, the texts behind their commitments (or the proof of their erasure),
//! optionally a consistency proof from an earlier checkpoint, and a signature by the ledger key
//! over the whole document. docs/ledger-format.md §9 specifies it; docs/audit.md is the
//! reviewer's guide.
//!
//! This module reads the log only through `LogView` and never writes it; it knows nothing of
//! sled, MCP, the CLI or the clock beyond the `generatedAt` string it is handed. The verifier
//! needs no store and no network: everything it trusts is the document and, ideally, a key the
//! reviewer pinned.

mod build;
mod document;
pub mod json_schema;
pub mod problem_code;
pub mod rfc3161;
mod timestamps;
mod verify;

#[cfg(test)]
mod tests;

pub use build::{ExportOptions, ExportWritten, build_export_with, write_export};
pub use document::{
    AuditExport, ConsistencyProof, ExportedEvent, ExportedText, ExportedTimestamp, FORMAT,
    SIGNATURE_MEMBER, Selection, document_digest, signed_body,
};
pub use timestamps::{TimestampSeen, checkpoint_digest};
pub use verify::{
    ExportProblem, ExportReport, ExportSummary, VerifyOptions, verify_export, verify_export_with,
};

use crate::ledger::LedgerError;
use crate::ledger::checkpoint::CheckpointError;
use crate::ledger::merkle::MerkleError;

/// Why an export could not be built. Each reaches the CLI as a message with its suggestion
/// (exit 1) and an MCP client as a rejected call with [`AuditError::code`] and
/// [`AuditError::suggestion`]; none leaves anything half-written.
#[derive(Debug, thiserror::Error)]
pub enum AuditError {
    #[error(
        "no signed checkpoint covers the exported events (they reach seq {needed}; {})",
        match latest { Some(size) => format!("the latest checkpoint covers {size}"), None => "the ledger has signed none yet".to_owned() }
    )]
    NoCheckpoint { needed: u64, latest: Option<u64> },
    #[error("session {session} has no events in this ledger")]
    EmptySession { session: String },
    #[error("the seq range {from}..={to} is not inside this ledger's {len} events")]
    InvalidRange { from: u64, to: u64, len: u64 },
    #[error("this ledger has no signing key, so its exports cannot be signed")]
    NoSigningKey,
    #[error("the earlier checkpoint is not one this ledger signed: {0}")]
    ForeignCheckpoint(String),
    #[error(
        "the earlier checkpoint covers {old_size} events but the ledger's latest checkpoint covers \
         only {new_size}: the log was rolled back or replaced since that checkpoint was signed"
    )]
    Rollback { old_size: u64, new_size: u64 },
    #[error(
        "the earlier checkpoint's root for {size} events differs from this log's root at that size: \
         the log was rewritten (forked) since that checkpoint was signed"
    )]
    Fork { size: u64 },
    #[error(
        "the text of commitment {commitment} (referenced by seq {seq}) is neither stored nor erased"
    )]
    TextMissing { seq: u64, commitment: String },
    #[error("cancelled after {done} of {total} events")]
    Cancelled { done: u64, total: u64 },
    #[error(transparent)]
    Ledger(#[from] LedgerError),
    #[error("Merkle proof: {0}")]
    Merkle(#[from] MerkleError),
    #[error("checkpoint: {0}")]
    Checkpoint(#[from] CheckpointError),
}

impl AuditError {
    /// Stable machine-readable code, as a rejected tool call reports it.
    pub fn code(&self) -> &'static str {
        match self {
            AuditError::NoCheckpoint { .. } => "no_checkpoint",
            AuditError::EmptySession { .. } => "empty_session",
            AuditError::InvalidRange { .. } => "invalid_range",
            AuditError::NoSigningKey => "no_signing_key",
            AuditError::ForeignCheckpoint(_) => "foreign_checkpoint",
            AuditError::Rollback { .. } => "rollback",
            AuditError::Fork { .. } => "fork",
            AuditError::TextMissing { .. } => "text_missing",
            AuditError::Cancelled { .. } => "call_cancelled",
            AuditError::Ledger(_) | AuditError::Merkle(_) | AuditError::Checkpoint(_) => {
                "ledger_corrupt"
            }
        }
    }

    /// What to do about it.
    pub fn suggestion(&self) -> String {
        match self {
            AuditError::NoCheckpoint { .. } => {
                "sign a fresh checkpoint with `thinkledger checkpoint` \
                 (or close the session; checkpoints are also signed on session close and at \
                 shutdown), then export again"
                    .to_owned()
            }
            AuditError::EmptySession { .. } => {
                "check the id with `thinkledger sessions`, or export a seq range".to_owned()
            }
            AuditError::InvalidRange { len, .. } => {
                format!("choose 1 ≤ fromSeq ≤ toSeq ≤ {len}")
            }
            AuditError::NoSigningKey => {
                "open the ledger with `thinkledger key` once to make its signing key".to_owned()
            }
            AuditError::ForeignCheckpoint(_) => "give a checkpoint signed by this ledger's key \
                 (its first line must be thinkledger/<ledgerId>), exactly as saved"
                .to_owned(),
            AuditError::Rollback { .. } | AuditError::Fork { .. } => "treat this ledger as \
                 tampered with: keep the earlier checkpoint as evidence and compare it with \
                 `thinkledger verify` on a trusted copy"
                .to_owned(),
            AuditError::Cancelled { .. } => "export again if the export is still wanted".to_owned(),
            AuditError::TextMissing { .. } | AuditError::Ledger(_) => {
                "run `thinkledger verify` to see what is damaged".to_owned()
            }
            AuditError::Merkle(_) | AuditError::Checkpoint(_) => {
                "run `thinkledger verify`; this is a bug or a damaged ledger".to_owned()
            }
        }
    }
}
