//! The ledger: canonical JSON, the BLAKE3 hash chain, the store, the single writer with group
//! commit, and verification.
//!
//! Owns every byte of the log that reaches disk and is the only module that knows sled (blake3
//! also hashes model exchanges, in `model/exchange.rs`). It does
//! not know what a tool or a thought is: business decisions come in through the [`Decider`]
//! trait, which the application layer implements.

pub mod canonical;
mod canonical_scan;
pub(crate) mod chain;
pub mod checkpoint;
mod event_check;
mod eventindex;
mod gauges;
pub mod hash;
pub mod keyfile;
mod logfile;
pub mod merkle;
pub mod migrate;
pub mod notary;
#[cfg(feature = "postgres")]
pub mod pg;
// The PostgreSQL store's names without PostgreSQL (the `postgres` feature off): every open
// refuses with `LedgerError::PostgresNotBuilt`.
#[cfg(not(feature = "postgres"))]
#[path = "pg_absent.rs"]
pub mod pg;
pub mod private;
pub mod problem_code;
pub mod snapshot;
pub mod store;
#[cfg(test)]
pub(crate) mod testlog;
pub mod timestamps;
pub mod verify;
pub mod view;
mod writer;

use std::path::PathBuf;

pub use gauges::LedgerGauges;
pub use pg::PgStore;
pub use store::{Batch, LedgerMeta, MemStore, SledStore, StagedEvent, Store, TextRecord};
pub use verify::{Problem, VerifyReport, verify, verify_with_checkpoints, verify_with_progress};
pub use view::{LogView, SessionLog, SignedCheckpoint, TextState};
pub use writer::{
    Admitted, Committed, DecideTime, Decider, Draft, LedgerHandle, NewText, Pending, WriterConfig,
    ensure_meta, open_ledger, start_ledger,
};

/// Whether `location` names a PostgreSQL database rather than a directory (in every build: a
/// build without PostgreSQL support must still tell a URL from a directory, to refuse it).
pub fn is_postgres_url(location: &str) -> bool {
    location.starts_with("postgres://") || location.starts_with("postgresql://")
}

/// Errors of the ledger layer. Each reaches a client as a tool error saying the server cannot
/// record calls (never as a silent success), or the CLI as a message and non-zero exit.
#[derive(Debug, thiserror::Error)]
pub enum LedgerError {
    #[error("I/O error on the ledger: {0}")]
    Io(#[from] std::io::Error),
    #[error("storage engine error: {0}")]
    Sled(String),
    #[error(
        "the ledger at {path} is in use by another thinkledger process. Several clients can share \
         one ledger through one server: start it once with `thinkledger serve --http 127.0.0.1:8750` \
         and point every client at http://127.0.0.1:8750/mcp"
    )]
    Locked { path: PathBuf },
    #[error("database error: {0}")]
    Database(String),
    #[error(
        "this server has read the ledger up to seq {head}, not seq {wanted}: retry in a moment \
         (another server wrote it and this one has not read it yet), or check the seq"
    )]
    Behind { wanted: u64, head: u64 },
    #[error("value cannot be hashed portably: {0}")]
    NotCanonicalizable(String),
    #[error("the ledger is corrupt: {0}; run `thinkledger verify` for details")]
    Corrupt(String),
    #[error(
        "the ledger writer stopped after a storage failure and records nothing more; restart the \
         server (acknowledged calls are safe on disk)"
    )]
    WriterStopped,
    #[error(
        "the ledger is still opening ({replayed} of {total} events replayed); the call was not \
         recorded: retry in a few seconds"
    )]
    Opening { replayed: u64, total: u64 },
    #[error(
        "the ledger could not be opened: {0}. The server records nothing until it is restarted"
    )]
    OpenFailed(String),
    /// Opening was given up because the ledger was shut down first.
    #[error("the ledger was shut down while it was opening")]
    OpenAborted,
    /// A PostgreSQL ledger was asked of a build without the `postgres` feature
    /// (`--no-default-features`): refused before anything is opened or written.
    #[error(
        "this build of thinkledger has no PostgreSQL support (it was built without the \
         `postgres` feature); install the full build (`pipx install thinkledger`, `npx -y \
         thinkledger`, or `cargo install` without `--no-default-features`) to keep the ledger \
         in PostgreSQL, or leave out --store to keep it in the data directory"
    )]
    PostgresNotBuilt,
}

/// Format tag stored in [`LedgerMeta::format`].
pub const FORMAT: &str = "thinkledger/1";

/// Formats a UTC time the way every ledger timestamp is written: RFC 3339, microseconds, `Z`.
pub fn format_timestamp(t: chrono::DateTime<chrono::Utc>) -> String {
    t.format("%Y-%m-%dT%H:%M:%S%.6fZ").to_string()
}
