//! The ledger on PostgreSQL: [`PgStore`] keeps the same bytes as the embedded store — events
//! by seq, the session index, the erasable texts, the metadata and the signed checkpoints — in
//! tables a versioned migration creates (docs/scaling.md, "Tables"); beside them every node's
//! bearer tokens ([`PgTokens`]) and the checkpoints' time-stamp tokens ([`PgTimestamps`]).
//!
//! The [`Store`] trait is synchronous (the writer owns an OS thread); this store drives
//! tokio-postgres on a small runtime of its own and waits for each answer, so it may be called
//! from any thread, inside another runtime or not. Connections come from a deadpool pool.
//!
//! Many writers, one chain: any number of servers may write one database's ledger. A writer
//! begins each batch by locking the head row (`SELECT … FOR UPDATE` in a transaction of its
//! own connection, [`Store::begin_batch`]); it then folds what the others appended since its
//! head, decides, and [`Store::sync`] inserts the batch's events and texts, moves the head and
//! commits. The commit returns once PostgreSQL has made it durable (its WAL flush, and a
//! synchronous standby's when `synchronous_standby_names` is set). The row lock orders the
//! batches of every writer into one gap-free, hash-chained sequence; the head row also refuses
//! a write that does not start where it ends, so no seq is written twice.
//!
//! Without a begun batch (`migrate`), [`Store::sync`] writes what is staged in one
//! transaction that moves the head from where this store last saw it.

use std::collections::BTreeMap;
use std::future::Future;
use std::str::FromStr;
use std::sync::Arc;

use deadpool_postgres::{Manager, ManagerConfig, Pool, RecyclingMethod};
use tokio_postgres::NoTls;
use tokio_postgres::types::ToSql;

use super::LedgerError;
use super::notary::{CheckpointLog, parse_signed};
use super::store::{Batch, EventIter, LedgerMeta, Store, TextIter, TextRecord};
use super::view::SignedCheckpoint;
use crate::events::SessionId;

/// Rows read per round trip by whole-log passes (replay at open, verify, migrate).
const PAGE: i64 = 2_000;

/// The advisory lock key under which migrations run: "thinkledger" folded into an i64.
const MIGRATION_LOCK: i64 = 0x7468_696e_6b6c_6467;

/// Whether this build can keep a ledger in PostgreSQL: it can (`pg_absent.rs` is the build
/// that cannot).
pub fn check_built() -> Result<(), LedgerError> {
    Ok(())
}

/// `url` as messages show it: without its password (the URL itself if it does not parse).
pub fn shown(url: &str) -> String {
    tokio_postgres::Config::from_str(url)
        .map(|c| shown_url(&c))
        .unwrap_or_else(|_| "an unreadable PostgreSQL URL".into())
}

/// The schema, one migration per version, applied in order inside one transaction each. A
/// version once released is never edited: a change is a new version.
pub const MIGRATIONS: &[&str] = &[
    // 1: the ledger.
    "CREATE TABLE thinkledger_meta (
        id integer PRIMARY KEY CHECK (id = 1),
        ledger_id text NOT NULL,
        created_at text NOT NULL,
        format text NOT NULL
     );
     CREATE TABLE thinkledger_head (
        id integer PRIMARY KEY CHECK (id = 1),
        last_seq bigint
     );
     INSERT INTO thinkledger_head (id, last_seq) VALUES (1, NULL);
     CREATE TABLE thinkledger_events (
        seq bigint PRIMARY KEY,
        session text,
        bytes bytea NOT NULL
     );
     CREATE INDEX thinkledger_events_by_session ON thinkledger_events (session, seq);
     CREATE TABLE thinkledger_texts (
        commitment bytea PRIMARY KEY,
        salt bytea NOT NULL,
        text text NOT NULL,
        batch_seq bigint
     );
     CREATE INDEX thinkledger_texts_by_batch ON thinkledger_texts (batch_seq);
     CREATE TABLE thinkledger_checkpoints (
        size bigint PRIMARY KEY,
        signed_at text NOT NULL,
        note text NOT NULL
     );",
    // 2: bearer tokens shared by every node (`thinkledger token` with `--store`): each row
    // one token's record as JSON (`server::auth::TokenRecord`: never the token, its hash).
    "CREATE TABLE thinkledger_tokens (
        id text PRIMARY KEY,
        hash text NOT NULL UNIQUE,
        record text NOT NULL
     );",
    // 3: the RFC 3161 time-stamp tokens of signed checkpoints (`serve --timestamp-authority`),
    // one row a stamped checkpoint: its note as in thinkledger_checkpoints, its size, the DER
    // token (`ledger::timestamps`), written by the node that stamped it.
    "CREATE TABLE thinkledger_timestamps (
        note text PRIMARY KEY,
        size bigint NOT NULL,
        token bytea NOT NULL
     );
     CREATE INDEX thinkledger_timestamps_by_size ON thinkledger_timestamps (size);",
];

fn db(e: impl std::fmt::Display) -> LedgerError {
    LedgerError::Database(e.to_string())
}

fn pg_error(e: tokio_postgres::Error) -> LedgerError {
    match e.as_db_error() {
        Some(d) => LedgerError::Database(format!("{}: {}", d.code().code(), d.message())),
        None => db(e),
    }
}

/// A pool and the runtime its connections live on.
struct Conn {
    runtime: Option<tokio::runtime::Runtime>,
    pool: Pool,
    /// Where the database is, without the password, for messages.
    shown: String,
}

impl Conn {
    fn open(url: &str) -> Result<Self, LedgerError> {
        let config = tokio_postgres::Config::from_str(url)
            .map_err(|e| LedgerError::Database(format!("not a PostgreSQL URL ({e})")))?;
        let shown = shown_url(&config);
        let runtime = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(2)
            .thread_name("thinkledger-pg")
            .enable_all()
            .build()?;
        let manager_config = ManagerConfig {
            recycling_method: RecyclingMethod::Fast,
        };
        // TLS when the URL asks for it (`sslmode=require`), checked against the system's trust
        // store (and `SSL_CERT_FILE`); otherwise none, as `sslmode=prefer` falls back to.
        let manager = if config.get_ssl_mode() == tokio_postgres::config::SslMode::Require {
            Manager::from_config(config, tls()?, manager_config)
        } else {
            Manager::from_config(config, NoTls, manager_config)
        };
        let pool = Pool::builder(manager)
            .max_size(8)
            .runtime(deadpool_postgres::Runtime::Tokio1)
            .build()
            .map_err(db)?;
        Ok(Self {
            runtime: Some(runtime),
            pool,
            shown,
        })
    }

    /// Runs `work` with a pooled connection on the store's runtime and waits for it.
    fn run<T, F, Fut>(&self, work: F) -> Result<T, LedgerError>
    where
        T: Send + 'static,
        F: FnOnce(deadpool_postgres::Object) -> Fut + Send + 'static,
        Fut: Future<Output = Result<T, tokio_postgres::Error>> + Send,
    {
        let pool = self.pool.clone();
        let shown = self.shown.clone();
        self.block(async move {
            let client = pool
                .get()
                .await
                .map_err(|e| LedgerError::Database(format!("cannot reach {shown}: {e}")))?;
            work(client).await.map_err(pg_error)
        })
    }

    fn block<T: Send + 'static>(
        &self,
        work: impl Future<Output = Result<T, LedgerError>> + Send + 'static,
    ) -> Result<T, LedgerError> {
        let (tx, rx) = std::sync::mpsc::sync_channel(1);
        let runtime = self.runtime.as_ref().expect("runtime present until drop");
        runtime.spawn(async move {
            let _ = tx.send(work.await);
        });
        rx.recv().map_err(|_| {
            LedgerError::Database("the database task ended without an answer".into())
        })?
    }
}

impl Drop for Conn {
    fn drop(&mut self) {
        if let Some(runtime) = self.runtime.take() {
            runtime.shutdown_background();
        }
    }
}

/// A TLS connector trusting the system's certificate store (`SSL_CERT_FILE` and
/// `SSL_CERT_DIR` name others).
fn tls() -> Result<tokio_postgres_rustls::MakeRustlsConnect, LedgerError> {
    let found = rustls_native_certs::load_native_certs();
    let mut roots = rustls::RootCertStore::empty();
    let (added, _ignored) = roots.add_parsable_certificates(found.certs);
    if added == 0 {
        return Err(LedgerError::Database(format!(
            "sslmode=require, but no trusted certificate was found ({} errors reading the \
             system's store); set SSL_CERT_FILE to the server's CA certificate",
            found.errors.len()
        )));
    }
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let config = rustls::ClientConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()
        .map_err(|e| LedgerError::Database(format!("TLS: {e}")))?
        .with_root_certificates(roots)
        .with_no_client_auth();
    Ok(tokio_postgres_rustls::MakeRustlsConnect::new(config))
}

/// `postgres://user@host:port/db`, without a password.
fn shown_url(config: &tokio_postgres::Config) -> String {
    let host = config
        .get_hosts()
        .first()
        .map(|h| match h {
            tokio_postgres::config::Host::Tcp(name) => name.clone(),
            tokio_postgres::config::Host::Unix(path) => path.display().to_string(),
        })
        .unwrap_or_default();
    let port = config.get_ports().first().copied().unwrap_or(5432);
    format!(
        "postgres://{}@{host}:{port}/{}",
        config.get_user().unwrap_or(""),
        config.get_dbname().unwrap_or("")
    )
}

/// Applies the migrations the database lacks, one transaction each, under a transaction-level
/// advisory lock so that nodes starting together migrate once.
async fn migrate(client: &mut deadpool_postgres::Object) -> Result<(), tokio_postgres::Error> {
    // The schema table too is made under the lock: two nodes creating it at once would race.
    let tx = client.transaction().await?;
    tx.execute("SELECT pg_advisory_xact_lock($1)", &[&MIGRATION_LOCK])
        .await?;
    let exists: bool = tx
        .query_one("SELECT to_regclass('thinkledger_schema') IS NOT NULL", &[])
        .await?
        .get(0);
    if !exists {
        tx.batch_execute(
            "CREATE TABLE thinkledger_schema (
                version integer PRIMARY KEY,
                applied_at timestamptz NOT NULL DEFAULT now()
             )",
        )
        .await?;
    }
    tx.commit().await?;
    for (i, sql) in MIGRATIONS.iter().enumerate() {
        let version = i as i32 + 1;
        let tx = client.transaction().await?;
        tx.execute("SELECT pg_advisory_xact_lock($1)", &[&MIGRATION_LOCK])
            .await?;
        let done = tx
            .query_opt(
                "SELECT 1 FROM thinkledger_schema WHERE version = $1",
                &[&version],
            )
            .await?
            .is_some();
        if !done {
            tx.batch_execute(sql).await?;
            tx.execute(
                "INSERT INTO thinkledger_schema (version) VALUES ($1)",
                &[&version],
            )
            .await?;
        }
        tx.commit().await?;
    }
    Ok(())
}

/// A text row as read: commitment, salt, text.
type StoredText = (Vec<u8>, Vec<u8>, String);

/// The ledger in a PostgreSQL database (see the module docs).
pub struct PgStore {
    conn: Arc<Conn>,
    /// Whether this store writes (else it only reads: verify, migrate's source).
    writes: bool,
    /// The writer's own connection, in which a batch's transaction runs (taken from the pool
    /// when first needed, and again after a failure).
    writer: Option<deadpool_postgres::Object>,
    /// Whether a batch is begun: the writer's connection is in a transaction holding the
    /// head row.
    in_batch: bool,
    /// The head as this store last saw or moved it: the highest stored seq.
    head: Option<u64>,
    /// Batches appended since the last sync, in order.
    staged: Vec<Batch>,
    /// Staged events by seq, for reads before the sync.
    staged_events: BTreeMap<u64, usize>,
    /// Texts read ahead with the page of events that uses them ([`Store::events_from`]), so
    /// that folding a page (replay, or other writers' events) asks for its texts in one round
    /// trip rather than one each. Taken out as they are read.
    read_ahead: std::sync::Mutex<std::collections::HashMap<[u8; 32], TextRecord>>,
    /// How long this writer waited for the head row and held it, logged when it closes.
    hold: HoldStats,
}

/// What a writer's batches cost the ledger's head row: the time spent waiting for it (other
/// writers' batches) and holding it (folding theirs, deciding, writing and committing its
/// own), logged when the store closes — the figures docs/scaling.md reads the bottleneck from.
#[derive(Debug, Default)]
struct HoldStats {
    batches: u64,
    events: u64,
    waited: std::time::Duration,
    held: std::time::Duration,
    longest: std::time::Duration,
    /// When the head row was taken, while a batch is begun.
    taken_at: Option<std::time::Instant>,
}

impl HoldStats {
    fn released(&mut self, events: usize) {
        if let Some(taken) = self.taken_at.take() {
            let held = taken.elapsed();
            self.batches += 1;
            self.events += events as u64;
            self.held += held;
            self.longest = self.longest.max(held);
        }
    }
}

impl Drop for PgStore {
    fn drop(&mut self) {
        let h = &self.hold;
        if h.batches > 0 {
            let mean = |d: std::time::Duration| d.as_micros() as u64 / h.batches;
            tracing::info!(
                batches = h.batches,
                events = h.events,
                mean_wait_us = mean(h.waited),
                mean_hold_us = mean(h.held),
                longest_hold_us = h.longest.as_micros() as u64,
                "head row: time waited for it and held per batch"
            );
        }
    }
}

impl std::fmt::Debug for PgStore {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("PgStore")
            .field("database", &self.conn.shown)
            .field("head", &self.head)
            .finish()
    }
}

impl PgStore {
    /// Opens the ledger at `url` for writing beside any other server writing it, migrating
    /// the schema if needed.
    pub fn open(url: &str) -> Result<Self, LedgerError> {
        let mut store = Self::open_for_reading(url)?;
        store.writes = true;
        Ok(store)
    }

    /// Opens the ledger at `url` to read it (migrating an empty database first), beside any
    /// server writing to it.
    pub fn open_for_reading(url: &str) -> Result<Self, LedgerError> {
        let conn = Arc::new(Conn::open(url)?);
        conn.run(|mut client| async move { migrate(&mut client).await })?;
        let mut store = Self {
            conn,
            writes: false,
            writer: None,
            in_batch: false,
            read_ahead: Default::default(),
            hold: HoldStats::default(),
            head: None,
            staged: Vec::new(),
            staged_events: BTreeMap::new(),
        };
        store.head = store.read_head()?;
        Ok(store)
    }

    /// Runs `work` on the writer's connection and waits for it.
    fn on_writer<T, F>(&mut self, work: F) -> Result<T, LedgerError>
    where
        T: Send + 'static,
        F: for<'c> FnOnce(
                &'c tokio_postgres::Client,
            ) -> std::pin::Pin<
                Box<dyn Future<Output = Result<T, tokio_postgres::Error>> + Send + 'c>,
            > + Send
            + 'static,
    {
        if !self.writes {
            return Err(LedgerError::Database(
                "this store was opened for reading and writes nothing".into(),
            ));
        }
        let client = self.writer.take();
        let pool = self.conn.pool.clone();
        let shown = self.conn.shown.clone();
        let (client, result) = self.conn.block(async move {
            let client = match client {
                Some(client) => client,
                None => pool
                    .get()
                    .await
                    .map_err(|e| LedgerError::Database(format!("cannot reach {shown}: {e}")))?,
            };
            let result = work(&client).await;
            Ok((client, result))
        })?;
        self.writer = Some(client);
        result.map_err(pg_error)
    }

    fn read_head(&self) -> Result<Option<u64>, LedgerError> {
        let last: Option<i64> = self.conn.run(|client| async move {
            Ok(client
                .query_one("SELECT last_seq FROM thinkledger_head WHERE id = 1", &[])
                .await?
                .get(0))
        })?;
        Ok(last.map(|s| s as u64))
    }

    /// The signed checkpoints' table, for the notary and for verify.
    pub fn checkpoint_log(&self) -> PgCheckpoints {
        PgCheckpoints {
            conn: self.conn.clone(),
        }
    }

    /// Takes back what a copy into this (empty) database wrote: events, texts, checkpoints and
    /// the ledger's metadata, in one transaction, leaving the schema as migrations made it.
    pub fn empty_out(&self) -> Result<(), LedgerError> {
        self.conn.run(|mut client| async move {
            let tx = client.transaction().await?;
            tx.batch_execute(
                "TRUNCATE thinkledger_events, thinkledger_texts, thinkledger_checkpoints;
                 DELETE FROM thinkledger_meta;
                 UPDATE thinkledger_head SET last_seq = NULL;",
            )
            .await?;
            tx.commit().await
        })
    }

    /// The bearer tokens' table, shared by every node of this database.
    pub fn token_table(&self) -> PgTokens {
        PgTokens {
            conn: self.conn.clone(),
        }
    }

    /// Lets go of the writer's connection after a failure left it in an unknown state (a
    /// transaction half done, or the connection lost): the next batch takes a fresh one.
    fn reconnect_writer(&mut self) {
        self.in_batch = false;
        if let Some(client) = self.writer.take() {
            // Closed rather than returned to the pool.
            drop(deadpool_postgres::Object::take(client));
        }
    }

    fn staged_event(&self, seq: u64) -> Option<&super::store::StagedEvent> {
        let batch = *self.staged_events.get(&seq)?;
        self.staged[batch].events.iter().find(|e| e.seq == seq)
    }
}

fn seq_param(seq: u64) -> Result<i64, LedgerError> {
    i64::try_from(seq).map_err(|_| LedgerError::Corrupt(format!("seq {seq} beyond i64")))
}

impl Store for PgStore {
    fn meta(&self) -> Result<Option<LedgerMeta>, LedgerError> {
        self.conn.run(|client| async move {
            Ok(client
                .query_opt(
                    "SELECT ledger_id, created_at, format FROM thinkledger_meta WHERE id = 1",
                    &[],
                )
                .await?
                .map(|row| LedgerMeta {
                    ledger_id: row.get(0),
                    created_at: row.get(1),
                    format: row.get(2),
                }))
        })
    }

    fn init_meta(&mut self, meta: &LedgerMeta) -> Result<(), LedgerError> {
        let meta = meta.clone();
        // A server starting beside this one may have created the ledger first: its metadata
        // stays ([`crate::ledger::ensure_meta`] reads it back).
        self.conn.run(move |client| async move {
            client
                .execute(
                    "INSERT INTO thinkledger_meta (id, ledger_id, created_at, format) \
                     VALUES (1, $1, $2, $3) ON CONFLICT (id) DO NOTHING",
                    &[&meta.ledger_id, &meta.created_at, &meta.format],
                )
                .await
                .map(drop)
        })
    }

    fn append_batch(&mut self, batch: &Batch) -> Result<(), LedgerError> {
        let index = self.staged.len();
        for event in &batch.events {
            self.staged_events.insert(event.seq, index);
        }
        self.staged.push(batch.clone());
        Ok(())
    }

    fn sync(&mut self) -> Result<(), LedgerError> {
        if self.staged.is_empty() {
            return self.abandon_batch();
        }
        let from = self.head;
        let mut seqs = Vec::new();
        let mut sessions: Vec<Option<String>> = Vec::new();
        let mut bytes: Vec<Vec<u8>> = Vec::new();
        let (mut commitments, mut salts, mut texts) = (Vec::new(), Vec::new(), Vec::new());
        let mut batch_seqs: Vec<Option<i64>> = Vec::new();
        let mut last = from;
        for batch in &self.staged {
            for event in &batch.events {
                if let Some(last) = last
                    && event.seq != last + 1
                {
                    return Err(LedgerError::Corrupt(format!(
                        "event staged at seq {} after seq {last}",
                        event.seq
                    )));
                }
                last = Some(event.seq);
                seqs.push(seq_param(event.seq)?);
                sessions.push(event.session.as_ref().map(|s| s.as_str().to_owned()));
                bytes.push(event.bytes.clone());
            }
            // A text is filed under the last seq of its batch: the events that use it are
            // at or before that seq, and a page of events reads its texts by that range.
            let batch_seq = last.map(seq_param).transpose()?;
            for (commitment, record) in &batch.texts {
                commitments.push(commitment.to_vec());
                salts.push(record.salt.to_vec());
                texts.push(record.text.clone());
                batch_seqs.push(batch_seq);
            }
        }
        let to = last;
        let seqs_len = seqs.len();
        let from_param = from.map(seq_param).transpose()?;
        let to_param = to.map(seq_param).transpose()?;
        let in_batch = self.in_batch;
        self.in_batch = false;
        let moved = self.on_writer(move |client| {
            Box::pin(async move {
                if !in_batch {
                    client.batch_execute("BEGIN").await?;
                }
                // The three statements are sent together (tokio-postgres pipelines what is
                // awaited at once): one round trip, then the commit.
                let head_params: [&(dyn ToSql + Sync); 2] = [&from_param, &to_param];
                let event_params: [&(dyn ToSql + Sync); 3] = [&seqs, &sessions, &bytes];
                let text_params: [&(dyn ToSql + Sync); 4] =
                    [&commitments, &salts, &texts, &batch_seqs];
                let head = client.execute(
                    "UPDATE thinkledger_head SET last_seq = $2 \
                     WHERE id = 1 AND last_seq IS NOT DISTINCT FROM $1",
                    &head_params,
                );
                let events = client.execute(
                    "INSERT INTO thinkledger_events (seq, session, bytes) \
                     SELECT * FROM unnest($1::bigint[], $2::text[], $3::bytea[])",
                    &event_params,
                );
                let texts = client.execute(
                    "INSERT INTO thinkledger_texts (commitment, salt, text, batch_seq) \
                     SELECT * FROM unnest($1::bytea[], $2::bytea[], $3::text[], \
                     $4::bigint[]) ON CONFLICT (commitment) DO NOTHING",
                    &text_params,
                );
                let (moved, _, _) = tokio::try_join!(head, events, texts)?;
                if moved != 1 {
                    client.batch_execute("ROLLBACK").await?;
                    return Ok(false);
                }
                client.batch_execute("COMMIT").await?;
                Ok(true)
            })
        });
        let moved = match moved {
            Ok(moved) => moved,
            Err(e) => {
                // The transaction is gone with its connection or rolled back: nothing of it
                // was written. A fresh connection serves the next batch.
                self.reconnect_writer();
                return Err(e);
            }
        };
        if !moved {
            return Err(LedgerError::Database(format!(
                "another writer moved the ledger's head past seq {}; nothing of this batch \
                 was written",
                from.unwrap_or(0)
            )));
        }
        self.head = to;
        self.hold.released(seqs_len);
        self.staged.clear();
        self.staged_events.clear();
        Ok(())
    }

    fn last_seq(&self) -> Result<Option<u64>, LedgerError> {
        if let Some((&seq, _)) = self.staged_events.iter().next_back() {
            return Ok(Some(seq));
        }
        Ok(self.head)
    }

    fn event_bytes(&self, seq: u64) -> Result<Option<Vec<u8>>, LedgerError> {
        if let Some(event) = self.staged_event(seq) {
            return Ok(Some(event.bytes.clone()));
        }
        let seq = seq_param(seq)?;
        self.conn.run(move |client| async move {
            Ok(client
                .query_opt(
                    "SELECT bytes FROM thinkledger_events WHERE seq = $1",
                    &[&seq],
                )
                .await?
                .map(|row| row.get(0)))
        })
    }

    fn events_from(&self, from: u64) -> EventIter<'_> {
        let mut next = from;
        let mut page: std::vec::IntoIter<(u64, Vec<u8>)> = Vec::new().into_iter();
        let mut stored_done = false;
        let mut staged = self
            .staged_events
            .range(from..)
            .filter_map(move |(&seq, _)| self.staged_event(seq).map(|e| (seq, e.bytes.clone())));
        Box::new(std::iter::from_fn(move || {
            loop {
                if let Some(item) = page.next() {
                    next = item.0 + 1;
                    return Some(Ok(item));
                }
                if stored_done {
                    return staged.next().map(Ok);
                }
                let start = match seq_param(next) {
                    Ok(s) => s,
                    Err(e) => return Some(Err(e)),
                };
                let rows = self.conn.run(move |client| async move {
                    let rows = client
                        .query(
                            "SELECT seq, bytes FROM thinkledger_events WHERE seq >= $1 \
                             ORDER BY seq LIMIT $2",
                            &[&start, &PAGE],
                        )
                        .await?;
                    let rows: Vec<(u64, Vec<u8>)> = rows
                        .into_iter()
                        .map(|r| (r.get::<_, i64>(0) as u64, r.get::<_, Vec<u8>>(1)))
                        .collect();
                    let texts = match rows.last() {
                        None => Vec::new(),
                        Some((end, _)) => client
                            .query(
                                "SELECT commitment, salt, text FROM thinkledger_texts \
                                 WHERE batch_seq BETWEEN $1 AND $2",
                                &[&start, &(*end as i64)],
                            )
                            .await?
                            .into_iter()
                            .map(|r| (r.get(0), r.get(1), r.get(2)))
                            .collect(),
                    };
                    Ok((rows, texts))
                });
                let rows = rows.map(|(rows, texts): (_, Vec<StoredText>)| {
                    let mut ahead = self.read_ahead.lock().unwrap_or_else(|e| e.into_inner());
                    ahead.clear();
                    for (commitment, salt, text) in texts {
                        if let Ok(key) = <[u8; 32]>::try_from(commitment.as_slice())
                            && let Ok(record) = text_record(&key, salt, text)
                        {
                            ahead.insert(key, record);
                        }
                    }
                    rows
                });
                match rows {
                    Err(e) => {
                        stored_done = true;
                        return Some(Err(e));
                    }
                    Ok(rows) => {
                        if (rows.len() as i64) < PAGE {
                            stored_done = true;
                        }
                        page = rows.into_iter();
                    }
                }
            }
        }))
    }

    fn session_seqs(&self, session: &SessionId) -> Result<Vec<u64>, LedgerError> {
        let name = session.as_str().to_owned();
        let mut seqs: Vec<u64> = self.conn.run(move |client| async move {
            Ok(client
                .query(
                    "SELECT seq FROM thinkledger_events WHERE session = $1 ORDER BY seq",
                    &[&name],
                )
                .await?
                .into_iter()
                .map(|r| r.get::<_, i64>(0) as u64)
                .collect::<Vec<_>>())
        })?;
        for batch in &self.staged {
            for event in &batch.events {
                if event.session.as_ref() == Some(session) {
                    seqs.push(event.seq);
                }
            }
        }
        Ok(seqs)
    }

    fn text(&self, commitment: &[u8; 32]) -> Result<Option<TextRecord>, LedgerError> {
        for batch in self.staged.iter().rev() {
            if let Some((_, record)) = batch.texts.iter().find(|(c, _)| c == commitment) {
                return Ok(Some(record.clone()));
            }
        }
        let ahead = self
            .read_ahead
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .remove(commitment);
        if let Some(record) = ahead {
            return Ok(Some(record));
        }
        let key = commitment.to_vec();
        let row = self.conn.run(move |client| async move {
            client
                .query_opt(
                    "SELECT salt, text FROM thinkledger_texts WHERE commitment = $1",
                    &[&key],
                )
                .await
                .map(|row| row.map(|r| (r.get::<_, Vec<u8>>(0), r.get::<_, String>(1))))
        })?;
        row.map(|(salt, text)| text_record(commitment, salt, text))
            .transpose()
    }

    fn texts_in_file_order(&self) -> Result<TextIter<'_>, LedgerError> {
        let mut after: Vec<u8> = Vec::new();
        let mut page: std::vec::IntoIter<StoredText> = Vec::new().into_iter();
        let mut done = false;
        let staged: Vec<([u8; 32], TextRecord)> = self
            .staged
            .iter()
            .flat_map(|b| b.texts.iter().cloned())
            .collect();
        let mut staged = staged.into_iter();
        Ok(Box::new(std::iter::from_fn(move || {
            loop {
                if let Some((commitment, salt, text)) = page.next() {
                    after = commitment.clone();
                    let Ok(key) = <[u8; 32]>::try_from(commitment.as_slice()) else {
                        return Some((
                            [0; 32],
                            Err(LedgerError::Corrupt(
                                "a stored text's commitment is not 32 bytes".into(),
                            )),
                        ));
                    };
                    return Some((key, text_record(&key, salt, text).map(Some)));
                }
                if done {
                    return staged.next().map(|(c, r)| (c, Ok(Some(r))));
                }
                let start = after.clone();
                let rows = self.conn.run(move |client| async move {
                    let rows = client
                        .query(
                            "SELECT commitment, salt, text FROM thinkledger_texts \
                             WHERE commitment > $1 ORDER BY commitment LIMIT $2",
                            &[&start, &PAGE],
                        )
                        .await?;
                    Ok(rows
                        .into_iter()
                        .map(|r| (r.get(0), r.get(1), r.get(2)))
                        .collect::<Vec<_>>())
                });
                match rows {
                    Err(e) => {
                        done = true;
                        return Some(([0; 32], Err(e)));
                    }
                    Ok(rows) => {
                        done = (rows.len() as i64) < PAGE;
                        page = rows.into_iter();
                    }
                }
            }
        })))
    }

    fn erase_texts(&mut self, commitments: &[[u8; 32]]) -> Result<(), LedgerError> {
        if commitments.is_empty() {
            return Ok(());
        }
        // Whatever is staged is written first, so the erasure covers it.
        self.sync()?;
        {
            let mut ahead = self.read_ahead.lock().unwrap_or_else(|e| e.into_inner());
            for c in commitments {
                ahead.remove(c);
            }
        }
        let keys: Vec<Vec<u8>> = commitments.iter().map(|c| c.to_vec()).collect();
        self.conn.run(move |client| async move {
            let deleted = client
                .execute(
                    "DELETE FROM thinkledger_texts WHERE commitment = ANY($1)",
                    &[&keys],
                )
                .await?;
            if deleted > 0 {
                // Rewrites the table and its TOAST table into new files and unlinks the old
                // ones: the deleted rows' bytes leave the table's files, not only its
                // visibility map (docs/scaling.md, "Erasure").
                client
                    .batch_execute("VACUUM FULL thinkledger_texts")
                    .await?;
            }
            Ok(())
        })
    }

    fn shared(&self) -> bool {
        self.writes
    }

    fn begin_batch(&mut self) -> Result<(), LedgerError> {
        if self.in_batch {
            return Ok(());
        }
        let asked = std::time::Instant::now();
        let head = self.on_writer(|client| {
            Box::pin(async move {
                // One round trip: the simple protocol sends both statements at once.
                let messages = client
                    .simple_query(
                        "BEGIN; SELECT last_seq FROM thinkledger_head WHERE id = 1 FOR UPDATE",
                    )
                    .await?;
                Ok(messages.iter().find_map(|m| match m {
                    tokio_postgres::SimpleQueryMessage::Row(row) => {
                        Some(row.get(0).and_then(|v| v.parse::<i64>().ok()))
                    }
                    _ => None,
                }))
            })
        });
        match head {
            Ok(Some(head)) => {
                self.hold.waited += asked.elapsed();
                self.hold.taken_at = Some(std::time::Instant::now());
                self.in_batch = true;
                self.head = head.map(|s| s as u64);
                Ok(())
            }
            Ok(None) => {
                self.reconnect_writer();
                Err(LedgerError::Corrupt(
                    "the database's ledger has no head row (thinkledger_head)".into(),
                ))
            }
            Err(e) => {
                self.reconnect_writer();
                Err(e)
            }
        }
    }

    fn abandon_batch(&mut self) -> Result<(), LedgerError> {
        if !self.in_batch {
            return Ok(());
        }
        self.in_batch = false;
        let done = self
            .on_writer(|client| Box::pin(async move { client.batch_execute("ROLLBACK").await }));
        self.hold.released(0);
        if done.is_err() {
            self.reconnect_writer();
        }
        done
    }
}

fn text_record(
    commitment: &[u8; 32],
    salt: Vec<u8>,
    text: String,
) -> Result<TextRecord, LedgerError> {
    let salt = <[u8; super::hash::SALT_LEN]>::try_from(salt.as_slice()).map_err(|_| {
        LedgerError::Corrupt(format!(
            "the salt of text {} is not {} bytes",
            super::hash::hex(commitment),
            super::hash::SALT_LEN
        ))
    })?;
    Ok(TextRecord { salt, text })
}

/// The signed checkpoints of a ledger on PostgreSQL.
#[derive(Clone)]
pub struct PgCheckpoints {
    conn: Arc<Conn>,
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

/// The bearer tokens of every node of a database: records as JSON text keyed by id and by
/// the token's hash (what they mean is `server::auth`'s).
#[derive(Clone)]
pub struct PgTokens {
    conn: Arc<Conn>,
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

impl super::timestamps::TimestampLog for PgTimestamps {
    fn recent(&self) -> Result<Vec<super::timestamps::KeptTimestamp>, LedgerError> {
        let limit = i64::try_from(super::timestamps::RECENT_TOKENS).unwrap_or(i64::MAX);
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
            .map(|(note, token)| super::timestamps::KeptTimestamp { note, token })
            .collect())
    }

    fn all(&self) -> Result<Vec<super::timestamps::KeptTimestamp>, LedgerError> {
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
            .map(|(note, token)| super::timestamps::KeptTimestamp { note, token })
            .collect())
    }

    fn append(&self, kept: &super::timestamps::KeptTimestamp) -> Result<(), LedgerError> {
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
