//! [`PgSnapshots`]: snapshots of a node's state in the ledger's database, shared by every node
//! of it (`thinkledger_snapshots`, migration 4): whichever node is due saves one, any node of the
//! same state version loads the newest. Each row is keyed by the seq its snapshot is anchored
//! at and the state version it holds, so two nodes saving at once write one row or two, never
//! a mix; a node saves nothing when a fresh enough one is there already, and the newest
//! [`KEPT`] rows are kept. An erasure raises `thinkledger_snapshot_floor` and removes every row
//! below it in one transaction; a save takes the floor row's share lock first, so no snapshot
//! older than an erasure is saved after it, whichever node erased.
//!
//! Must not know: what a snapshot holds or how it is checked (`ledger::snapshot`, replay).

use std::sync::Arc;

use super::conn::Conn;
use super::store::seq_param;
use crate::ledger::LedgerError;
use crate::ledger::snapshot::{SnapshotStore, anchor_of};

/// Snapshots kept in the table, whatever their version: the newest first.
const KEPT: i64 = 3;

/// The snapshots of a ledger on PostgreSQL.
#[derive(Clone)]
pub(super) struct PgSnapshots {
    pub(super) conn: Arc<Conn>,
}

impl std::fmt::Debug for PgSnapshots {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("PgSnapshots")
            .field("database", &self.conn.shown)
            .finish()
    }
}

fn io(e: LedgerError) -> std::io::Error {
    std::io::Error::other(e.to_string())
}

impl SnapshotStore for PgSnapshots {
    fn load(&self, state_version: &str) -> std::io::Result<Option<Vec<u8>>> {
        let version = state_version.to_owned();
        self.conn
            .run(move |client| async move {
                Ok(client
                    .query_opt(
                        "SELECT bytes FROM thinkledger_snapshots WHERE state_version = $1 \
                         ORDER BY seq DESC LIMIT 1",
                        &[&version],
                    )
                    .await?
                    .map(|row| row.get(0)))
            })
            .map_err(io)
    }

    fn save(&self, bytes: &[u8]) -> std::io::Result<()> {
        let anchor = anchor_of(bytes).map_err(std::io::Error::other)?;
        let seq = seq_param(anchor.seq).map_err(io)?;
        let bytes = bytes.to_vec();
        let saved = self.conn.run(move |mut client| async move {
            let tx = client.transaction().await?;
            let floor: i64 = tx
                .query_one(
                    "SELECT seq FROM thinkledger_snapshot_floor WHERE id = 1 FOR SHARE",
                    &[],
                )
                .await?
                .get(0);
            if seq < floor {
                tx.rollback().await?;
                return Ok(false);
            }
            // Nothing when another node saved one as new or newer meanwhile.
            let inserted = tx
                .execute(
                    "INSERT INTO thinkledger_snapshots (seq, state_version, hash, bytes) \
                     SELECT $1, $2, $3, $4 WHERE NOT EXISTS (SELECT 1 FROM \
                     thinkledger_snapshots WHERE state_version = $2 AND seq >= $1) \
                     ON CONFLICT DO NOTHING",
                    &[&seq, &anchor.state_version, &anchor.hash, &bytes],
                )
                .await?;
            tx.execute(
                "DELETE FROM thinkledger_snapshots WHERE (state_version, seq) NOT IN \
                 (SELECT state_version, seq FROM thinkledger_snapshots \
                  ORDER BY seq DESC, saved_at DESC LIMIT $1)",
                &[&KEPT],
            )
            .await?;
            tx.commit().await?;
            Ok(inserted == 1)
        });
        match saved.map_err(io)? {
            true => Ok(()),
            false => {
                tracing::debug!(
                    seq,
                    "the snapshot is not kept: an erasure or a newer snapshot came first"
                );
                Ok(())
            }
        }
    }

    fn clear(&self, seq: u64) -> std::io::Result<()> {
        let seq = seq_param(seq).map_err(io)?;
        self.conn
            .run(move |mut client| async move {
                let tx = client.transaction().await?;
                tx.execute(
                    "UPDATE thinkledger_snapshot_floor SET seq = greatest(seq, $1) WHERE id = 1",
                    &[&seq],
                )
                .await?;
                tx.execute("DELETE FROM thinkledger_snapshots WHERE seq < $1", &[&seq])
                    .await?;
                tx.commit().await
            })
            .map_err(io)
    }

    fn holds_from(&self, seq: u64, state_version: &str) -> std::io::Result<bool> {
        let seq = seq_param(seq).map_err(io)?;
        let version = state_version.to_owned();
        self.conn
            .run(move |client| async move {
                Ok(client
                    .query_opt(
                        "SELECT 1 FROM thinkledger_snapshots \
                         WHERE state_version = $1 AND seq >= $2 LIMIT 1",
                        &[&version, &seq],
                    )
                    .await?
                    .is_some())
            })
            .map_err(io)
    }
}
