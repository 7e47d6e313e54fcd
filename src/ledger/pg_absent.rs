//! The PostgreSQL store of a build without it (the `postgres` feature off, as in `cargo build
//! --no-default-features`): the names `pg.rs` gives the rest of the crate, so the callers are
//! written once for both builds, but nothing here can be opened. Every way in ([`check_built`],
//! [`PgStore::open`], [`PgStore::open_for_reading`], [`PgTokens::open`],
//! [`PgTimestamps::open`]) answers
//! [`LedgerError::PostgresNotBuilt`], which tells the user to install the full build; the types
//! have no values, so nothing past an open is reachable and no method can be called.
//!
//! It knows no database driver: that is the point of the build.

use super::LedgerError;
use super::notary::CheckpointLog;
use super::store::{Batch, EventIter, LedgerMeta, Store, TextIter, TextRecord};
use super::timestamps::{KeptTimestamp, TimestampLog};
use super::view::SignedCheckpoint;
use crate::events::SessionId;

/// Whether this build can keep a ledger in PostgreSQL: it cannot.
pub fn check_built() -> Result<(), LedgerError> {
    Err(LedgerError::PostgresNotBuilt)
}

/// `url` as messages show it. Nothing parses a PostgreSQL URL in this build, so none of it is
/// shown (it may hold a password).
pub fn shown(_url: &str) -> String {
    "a PostgreSQL database".into()
}

/// The ledger in a PostgreSQL database: there is none in this build.
#[derive(Debug)]
pub struct PgStore(Absent);

impl PgStore {
    /// Refuses: this build has no PostgreSQL support.
    pub fn open(_url: &str) -> Result<Self, LedgerError> {
        Err(LedgerError::PostgresNotBuilt)
    }

    /// Refuses: this build has no PostgreSQL support.
    pub fn open_for_reading(_url: &str) -> Result<Self, LedgerError> {
        Err(LedgerError::PostgresNotBuilt)
    }

    /// Unreachable: no store exists.
    pub fn checkpoint_log(&self) -> PgCheckpoints {
        match self.0 {}
    }

    /// Unreachable: no store exists.
    pub fn empty_out(&self) -> Result<(), LedgerError> {
        match self.0 {}
    }

    /// Unreachable: no store exists.
    pub fn token_table(&self) -> PgTokens {
        match self.0 {}
    }
}

impl Store for PgStore {
    fn meta(&self) -> Result<Option<LedgerMeta>, LedgerError> {
        match self.0 {}
    }

    fn init_meta(&mut self, _meta: &LedgerMeta) -> Result<(), LedgerError> {
        match self.0 {}
    }

    fn append_batch(&mut self, _batch: &Batch) -> Result<(), LedgerError> {
        match self.0 {}
    }

    fn sync(&mut self) -> Result<(), LedgerError> {
        match self.0 {}
    }

    fn last_seq(&self) -> Result<Option<u64>, LedgerError> {
        match self.0 {}
    }

    fn event_bytes(&self, _seq: u64) -> Result<Option<Vec<u8>>, LedgerError> {
        match self.0 {}
    }

    fn events_from(&self, _from: u64) -> EventIter<'_> {
        match self.0 {}
    }

    fn session_seqs(&self, _session: &SessionId) -> Result<Vec<u64>, LedgerError> {
        match self.0 {}
    }

    fn text(&self, _commitment: &[u8; 32]) -> Result<Option<TextRecord>, LedgerError> {
        match self.0 {}
    }

    fn texts_in_file_order(&self) -> Result<TextIter<'_>, LedgerError> {
        match self.0 {}
    }

    fn erase_texts(&mut self, _commitments: &[[u8; 32]]) -> Result<(), LedgerError> {
        match self.0 {}
    }
}

/// The signed checkpoints of a ledger on PostgreSQL: none in this build.
#[derive(Debug, Clone)]
pub struct PgCheckpoints(Absent);

impl CheckpointLog for PgCheckpoints {
    fn read(&self) -> Result<Vec<SignedCheckpoint>, LedgerError> {
        match self.0 {}
    }

    fn append(&mut self, _signed: &SignedCheckpoint) -> Result<(), LedgerError> {
        match self.0 {}
    }
}

/// The bearer tokens of a database's nodes: none in this build.
#[derive(Debug, Clone)]
pub struct PgTokens(Absent);

/// The checkpoints' time-stamp tokens of a database: none in this build.
#[derive(Debug, Clone)]
pub struct PgTimestamps(Absent);

impl PgTimestamps {
    /// Refuses: this build has no PostgreSQL support.
    pub fn open(_url: &str) -> Result<Self, LedgerError> {
        Err(LedgerError::PostgresNotBuilt)
    }
}

impl TimestampLog for PgTimestamps {
    fn recent(&self) -> Result<Vec<KeptTimestamp>, LedgerError> {
        match self.0 {}
    }

    fn all(&self) -> Result<Vec<KeptTimestamp>, LedgerError> {
        match self.0 {}
    }

    fn append(&self, _kept: &KeptTimestamp) -> Result<(), LedgerError> {
        match self.0 {}
    }
}

/// No value: what [`PgStore`], [`PgCheckpoints`], [`PgTokens`] and [`PgTimestamps`] hold, so none of them can be
/// made. Private, and wrapped in structs rather than being the types themselves: the callers,
/// written once for both builds, then see ordinary types (an empty enum of their own would make
/// the compiler flag every line after a `store.checkpoint_log()` as unreachable code).
#[derive(Debug, Clone, Copy)]
enum Absent {}

impl PgTokens {
    /// Refuses: this build has no PostgreSQL support.
    pub fn open(_url: &str) -> Result<Self, LedgerError> {
        Err(LedgerError::PostgresNotBuilt)
    }

    /// Unreachable: no table exists.
    pub fn shown(&self) -> &str {
        match self.0 {}
    }

    /// Unreachable: no table exists.
    pub fn all(&self) -> Result<Vec<String>, LedgerError> {
        match self.0 {}
    }

    /// Unreachable: no table exists.
    pub fn by_hash(&self, _hash: &str) -> Result<Option<String>, LedgerError> {
        match self.0 {}
    }

    /// Unreachable: no table exists.
    pub fn insert(&self, _id: &str, _hash: &str, _record: &str) -> Result<bool, LedgerError> {
        match self.0 {}
    }

    /// Unreachable: no table exists.
    pub fn update(
        &self,
        _id: &str,
        _change: impl FnOnce(String) -> Result<String, String> + Send + 'static,
    ) -> Result<Option<String>, LedgerError> {
        match self.0 {}
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_way_in_says_this_build_has_no_postgresql() {
        let url = "postgres://thinkledger:secret@db.internal/thinkledger";
        let refusals = [
            check_built().err(),
            PgStore::open(url).err(),
            PgStore::open_for_reading(url).err(),
            PgTokens::open(url).err(),
            PgTimestamps::open(url).err(),
        ];
        for refusal in refusals {
            let message = refusal.expect("refused").to_string();
            assert!(
                message.contains("no PostgreSQL support") && message.contains("full build"),
                "{message}"
            );
        }
        assert!(!shown(url).contains("secret"));
    }
}
