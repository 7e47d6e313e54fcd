//! [`PgReads`]: the log read beside the writer by any thread (the [`SessionLog`] a server folds a
//! session's body from, and the Merkle tree reads its dropped leaves from), one query a read
//! on the store's pool, each statement prepared once per pooled connection. A start from a
//! snapshot checks every signed checkpoint against leaves read back from here, so round trips
//! are what it costs: a block of leaves is one ranged query, and no read is prepared twice. It reads what is committed: a batch's own events are had from the
//! writer's state until its commit (docs/invariants.md, "A session's body is what its own events
//! fold to").
//!
//! Must not know: batches, the head row or how rows are written (`store`).

use std::sync::Arc;

use super::conn::Conn;
use super::store::{seq_param, text_record};
use crate::events::SessionId;
use crate::ledger::LedgerError;
use crate::ledger::store::TextRecord;
use crate::ledger::view::SessionLog;

/// Reads of the ledger's committed events and texts.
pub(super) struct PgReads {
    pub(super) conn: Arc<Conn>,
}

impl SessionLog for PgReads {
    fn session_seqs(&self, session: &SessionId) -> Result<Vec<u64>, LedgerError> {
        let name = session.as_str().to_owned();
        self.conn.run(move |client| async move {
            let statement = client
                .prepare_cached(
                    "SELECT seq FROM thinkledger_events WHERE session = $1 ORDER BY seq",
                )
                .await?;
            Ok(client
                .query(&statement, &[&name])
                .await?
                .into_iter()
                .map(|r| r.get::<_, i64>(0).unsigned_abs())
                .collect())
        })
    }

    fn event_bytes(&self, seq: u64) -> Result<Option<Vec<u8>>, LedgerError> {
        let seq = seq_param(seq)?;
        self.conn.run(move |client| async move {
            let statement = client
                .prepare_cached("SELECT bytes FROM thinkledger_events WHERE seq = $1")
                .await?;
            Ok(client
                .query_opt(&statement, &[&seq])
                .await?
                .map(|row| row.get(0)))
        })
    }

    fn events_bytes(&self, first: u64, last: u64) -> Result<Vec<(u64, Vec<u8>)>, LedgerError> {
        // The seqs listed, not a range: each is one row of the primary key whatever the table's
        // statistics say (a range on a table not yet analysed, e.g. just after `migrate`, is
        // estimated at thousands of rows and planned as a bitmap scan with JIT: 2 s at a start).
        let seqs = (first..=last)
            .map(seq_param)
            .collect::<Result<Vec<i64>, _>>()?;
        self.conn.run(move |client| async move {
            let statement = client
                .prepare_cached(
                    "SELECT seq, bytes FROM thinkledger_events WHERE seq = ANY($1) ORDER BY seq",
                )
                .await?;
            Ok(client
                .query(&statement, &[&seqs])
                .await?
                .into_iter()
                .map(|r| (r.get::<_, i64>(0).unsigned_abs(), r.get(1)))
                .collect())
        })
    }

    fn text(&self, commitment: &[u8; 32]) -> Result<Option<TextRecord>, LedgerError> {
        let key = commitment.to_vec();
        let row = self.conn.run(move |client| async move {
            let statement = client
                .prepare_cached("SELECT salt, text FROM thinkledger_texts WHERE commitment = $1")
                .await?;
            client
                .query_opt(&statement, &[&key])
                .await
                .map(|row| row.map(|r| (r.get::<_, Vec<u8>>(0), r.get::<_, String>(1))))
        })?;
        row.map(|(salt, text)| text_record(commitment, salt, text))
            .transpose()
    }
}
