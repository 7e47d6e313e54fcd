//! The ledger on PostgreSQL: [`PgStore`] keeps the same bytes as the embedded store — events
//! by seq, the session index, the erasable texts, the metadata and the signed checkpoints — in
//! tables a versioned migration creates (docs/scaling.md, "Tables"); beside them every node's
//! bearer tokens ([`PgTokens`]) and the checkpoints' time-stamp tokens ([`PgTimestamps`]).
//!
//! The [`Store`](super::Store) trait is synchronous (the writer owns an OS thread); this store drives
//! tokio-postgres on a small runtime of its own and waits for each answer, so it may be called
//! from any thread, inside another runtime or not. Connections come from a deadpool pool.
//!
//! Many writers, one chain: any number of servers may write one database's ledger. A writer
//! begins each batch by locking the head row (`SELECT … FOR UPDATE` in a transaction of its
//! own connection, [`Store::begin_batch`](super::Store::begin_batch)); it then folds what the others appended since its
//! head, decides, and [`Store::sync`](super::Store::sync) inserts the batch's events and texts, moves the head and
//! commits. The commit returns once PostgreSQL has made it durable (its WAL flush, and a
//! synchronous standby's when `synchronous_standby_names` is set). The row lock orders the
//! batches of every writer into one gap-free, hash-chained sequence; the head row also refuses
//! a write that does not start where it ends, so no seq is written twice.
//!
//! Without a begun batch (`migrate`), [`Store::sync`](super::Store::sync) writes what is staged in one
//! transaction that moves the head from where this store last saw it.
//!
//! The connection (pool, runtime, TLS) is `conn`; the schema and its migrations `schema`; the
//! store itself `store`, and its reads beside the writer `reads`; the tables beside it
//! `checkpoints`, `snapshots`, `tokens` and `timestamps`.
//!
//! A node opens from the newest snapshot of its state version in `thinkledger_snapshots`
//! (whichever node saved it) and folds only the events after it; the events under it are
//! checked between calls, as on the embedded store.

use std::str::FromStr;

use super::LedgerError;

mod checkpoints;
mod conn;
mod reads;
mod schema;
mod snapshots;
mod store;
mod timestamps;
mod tokens;

pub use checkpoints::PgCheckpoints;
pub use schema::MIGRATIONS;
pub use store::PgStore;
pub use timestamps::PgTimestamps;
pub use tokens::PgTokens;

/// Whether this build can keep a ledger in PostgreSQL: it can (`pg_absent.rs` is the build
/// that cannot).
pub fn check_built() -> Result<(), LedgerError> {
    Ok(())
}

/// `url` as messages show it: without its password (the URL itself if it does not parse).
pub fn shown(url: &str) -> String {
    tokio_postgres::Config::from_str(url)
        .map(|c| conn::shown_url(&c))
        .unwrap_or_else(|_| "an unreadable PostgreSQL URL".into())
}

/// A database failure as the ledger reports it.
fn db(e: impl std::fmt::Display) -> LedgerError {
    LedgerError::Database(e.to_string())
}

/// A PostgreSQL error as the ledger reports it: the server's code and message when it sent one.
fn pg_error(e: tokio_postgres::Error) -> LedgerError {
    match e.as_db_error() {
        Some(d) => LedgerError::Database(format!("{}: {}", d.code().code(), d.message())),
        None => db(e),
    }
}
