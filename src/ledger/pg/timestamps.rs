//! [`PgTimestamps`]: the RFC 3161 tokens of a ledger's checkpoints in its database, seen by
//! every node.
//!
//! Must not know: how a token is requested or checked (`anchor`, `audit::rfc3161`).

use std::sync::Arc;

use super::conn::Conn;
use super::store::{PgStore, seq_param};
use crate::ledger::LedgerError;
use crate::ledger::notary::parse_signed;

/// The time-stamp tokens of a ledger's checkpoints in its database, seen by every node.
#[derive(Clone)]
pub struct PgTimestamps {
    conn: Arc<Conn>,
}

impl std::fmt::Debug for PgTimestamps {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("PgTimestamps")
            .field("database", &self.conn.shown)
            .finish()
    }
}

impl PgTimestamps {
    /// The tokens' table of the database at `url` (its schema made if need be).
    pub fn open(url: &str) -> Result<Self, LedgerError> {
        Ok(Self {
            conn: PgStore::open_for_reading(url)?.conn.clone(),
        })
    }
}

impl crate::ledger::timestamps::TimestampLog for PgTimestamps {
    fn recent(&self) -> Result<Vec<crate::ledger::timestamps::KeptTimestamp>, LedgerError> {
        let limit = i64::try_from(crate::ledger::timestamps::RECENT_TOKENS).unwrap_or(i64::MAX);
        let mut rows: Vec<(String, Vec<u8>)> = self.conn.run(move |client| async move {
            Ok(client
                .query(
                    "SELECT note, token FROM thinkledger_timestamps ORDER BY size DESC LIMIT $1",
                    &[&limit],
                )
                .await?
                .into_iter()
                .map(|r| (r.get(0), r.get(1)))
                .collect())
        })?;
        rows.reverse();
        Ok(rows
            .into_iter()
            .map(|(note, token)| crate::ledger::timestamps::KeptTimestamp { note, token })
            .collect())
    }

    fn all(&self) -> Result<Vec<crate::ledger::timestamps::KeptTimestamp>, LedgerError> {
        let rows: Vec<(String, Vec<u8>)> = self.conn.run(|client| async move {
            Ok(client
                .query(
                    "SELECT note, token FROM thinkledger_timestamps ORDER BY size",
                    &[],
                )
                .await?
                .into_iter()
                .map(|r| (r.get(0), r.get(1)))
                .collect())
        })?;
        Ok(rows
            .into_iter()
            .map(|(note, token)| crate::ledger::timestamps::KeptTimestamp { note, token })
            .collect())
    }

    fn append(&self, kept: &crate::ledger::timestamps::KeptTimestamp) -> Result<(), LedgerError> {
        let size = parse_signed(String::new(), kept.note.clone())
            .map_err(|e| LedgerError::Corrupt(format!("a stamped note is not a checkpoint: {e}")))?
            .checkpoint
            .size();
        let size = seq_param(size)?;
        let (note, token) = (kept.note.clone(), kept.token.clone());
        self.conn.run(move |client| async move {
            client
                .execute(
                    "INSERT INTO thinkledger_timestamps (note, size, token) VALUES ($1, $2, $3) \
                     ON CONFLICT DO NOTHING",
                    &[&note, &size, &token],
                )
                .await
                .map(|_| ())
        })
    }
}
