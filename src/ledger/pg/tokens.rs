//! [`PgTokens`]: every node's bearer tokens in the database, as JSON records keyed by id and by
//! the token's hash.
//!
//! Must not know: what a record means (that is `server::auth`'s).

use std::sync::Arc;

use super::conn::Conn;
use super::store::PgStore;
use super::{db, pg_error};
use crate::ledger::LedgerError;

/// The bearer tokens of every node of a database: records as JSON text keyed by id and by
/// the token's hash (what they mean is `server::auth`'s).
#[derive(Clone)]
pub struct PgTokens {
    pub(super) conn: Arc<Conn>,
}

impl std::fmt::Debug for PgTokens {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("PgTokens")
            .field("database", &self.conn.shown)
            .finish()
    }
}

impl PgTokens {
    /// The tokens' table of the database at `url` (its schema made if need be).
    pub fn open(url: &str) -> Result<Self, LedgerError> {
        Ok(PgStore::open_for_reading(url)?.token_table())
    }

    /// Where the tokens are, without a password, for messages.
    pub fn shown(&self) -> &str {
        &self.conn.shown
    }

    /// Every record, oldest id first.
    pub fn all(&self) -> Result<Vec<String>, LedgerError> {
        self.conn.run(|client| async move {
            Ok(client
                .query("SELECT record FROM thinkledger_tokens ORDER BY id", &[])
                .await?
                .into_iter()
                .map(|r| r.get(0))
                .collect())
        })
    }

    /// The record of the token whose hash is `hash`.
    pub fn by_hash(&self, hash: &str) -> Result<Option<String>, LedgerError> {
        let hash = hash.to_owned();
        self.conn.run(move |client| async move {
            Ok(client
                .query_opt(
                    "SELECT record FROM thinkledger_tokens WHERE hash = $1",
                    &[&hash],
                )
                .await?
                .map(|r| r.get(0)))
        })
    }

    /// Adds a record; false when one with that id or hash is there already.
    pub fn insert(&self, id: &str, hash: &str, record: &str) -> Result<bool, LedgerError> {
        let (id, hash, record) = (id.to_owned(), hash.to_owned(), record.to_owned());
        self.conn.run(move |client| async move {
            Ok(client
                .execute(
                    "INSERT INTO thinkledger_tokens (id, hash, record) VALUES ($1, $2, $3) \
                     ON CONFLICT DO NOTHING",
                    &[&id, &hash, &record],
                )
                .await?
                == 1)
        })
    }

    /// Rewrites the record of `id` with what `change` makes of it, under a row lock (two
    /// revocations at once keep the first time); `None` when there is no such id.
    pub fn update(
        &self,
        id: &str,
        change: impl FnOnce(String) -> Result<String, String> + Send + 'static,
    ) -> Result<Option<String>, LedgerError> {
        let id = id.to_owned();
        let changed = self.conn.block({
            let pool = self.conn.pool.clone();
            async move {
                let mut client = pool.get().await.map_err(db)?;
                let tx = client.transaction().await.map_err(pg_error)?;
                let Some(row) = tx
                    .query_opt(
                        "SELECT record FROM thinkledger_tokens WHERE id = $1 FOR UPDATE",
                        &[&id],
                    )
                    .await
                    .map_err(pg_error)?
                else {
                    return Ok(None);
                };
                let record = change(row.get(0)).map_err(LedgerError::Corrupt)?;
                tx.execute(
                    "UPDATE thinkledger_tokens SET record = $2 WHERE id = $1",
                    &[&id, &record],
                )
                .await
                .map_err(pg_error)?;
                tx.commit().await.map_err(pg_error)?;
                Ok(Some(record))
            }
        })?;
        Ok(changed)
    }
}
