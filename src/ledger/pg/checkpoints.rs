//! [`PgCheckpoints`]: the ledger's signed checkpoints in its database.
//!
//! Must not know: how a checkpoint is signed or checked (`notary`, `checkpoint`).

use std::sync::Arc;

use super::conn::Conn;
use super::store::seq_param;
use crate::ledger::LedgerError;
use crate::ledger::notary::{CheckpointLog, parse_signed};
use crate::ledger::view::SignedCheckpoint;

/// The signed checkpoints of a ledger on PostgreSQL.
#[derive(Clone)]
pub struct PgCheckpoints {
    pub(super) conn: Arc<Conn>,
}

impl std::fmt::Debug for PgCheckpoints {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("PgCheckpoints")
            .field("database", &self.conn.shown)
            .finish()
    }
}

impl CheckpointLog for PgCheckpoints {
    fn read(&self) -> Result<Vec<SignedCheckpoint>, LedgerError> {
        let rows: Vec<(String, String)> = self.conn.run(|client| async move {
            Ok(client
                .query(
                    "SELECT signed_at, note FROM thinkledger_checkpoints ORDER BY size",
                    &[],
                )
                .await?
                .into_iter()
                .map(|r| (r.get(0), r.get(1)))
                .collect())
        })?;
        rows.into_iter()
            .map(|(signed_at, note)| {
                parse_signed(signed_at, note).map_err(|e| {
                    LedgerError::Corrupt(format!(
                        "a row of thinkledger_checkpoints is not a signed checkpoint: {e}"
                    ))
                })
            })
            .collect()
    }

    fn append(&mut self, signed: &SignedCheckpoint) -> Result<(), LedgerError> {
        let size = seq_param(signed.checkpoint.size())?;
        let (signed_at, note) = (signed.signed_at.clone(), signed.note.clone());
        self.conn.run(move |client| async move {
            client
                .execute(
                    "INSERT INTO thinkledger_checkpoints (size, signed_at, note) \
                     VALUES ($1, $2, $3) ON CONFLICT (size) DO NOTHING",
                    &[&size, &signed_at, &note],
                )
                .await
                .map(|_| ())
        })
    }
}
