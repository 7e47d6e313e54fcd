//! [`PgStore`]: the ledger's events, session index, erasable texts and metadata in PostgreSQL,
//! a batch's rows written in the transaction that holds the head row (see the module above).
//!
//! Must not know: checkpoints' signatures, bearer or time-stamp tokens (their own modules).

use std::collections::BTreeMap;
use std::sync::Arc;

use tokio_postgres::types::ToSql;

use super::checkpoints::PgCheckpoints;
use super::conn::Conn;
use super::pg_error;
use super::reads::PgReads;
use super::schema::migrate;
use super::snapshots::PgSnapshots;
use super::tokens::PgTokens;
use crate::events::SessionId;
use crate::ledger::LedgerError;
use crate::ledger::snapshot::SnapshotStore;
use crate::ledger::store::{Batch, EventIter, LedgerMeta, Store, TextIter, TextRecord};
use crate::ledger::view::SessionLog;

/// Rows read per round trip by whole-log passes (replay at open, verify, migrate).
const PAGE: i64 = 2_000;
/// A text row as read: commitment, salt, text.
type StoredText = (Vec<u8>, Vec<u8>, String);

/// The ledger in a PostgreSQL database (see the module docs).
pub struct PgStore {
    pub(super) conn: Arc<Conn>,
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
                "TRUNCATE thinkledger_events, thinkledger_texts, thinkledger_checkpoints, \
                 thinkledger_snapshots;
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

    fn staged_event(&self, seq: u64) -> Option<&crate::ledger::store::StagedEvent> {
        let batch = *self.staged_events.get(&seq)?;
        self.staged[batch].events.iter().find(|e| e.seq == seq)
    }
}

pub(super) fn seq_param(seq: u64) -> Result<i64, LedgerError> {
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

    fn snapshots(&self) -> Option<Arc<dyn SnapshotStore>> {
        Some(Arc::new(PgSnapshots {
            conn: self.conn.clone(),
        }))
    }

    fn session_log(&self) -> Option<Arc<dyn SessionLog>> {
        Some(Arc::new(PgReads {
            conn: self.conn.clone(),
        }))
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

pub(super) fn text_record(
    commitment: &[u8; 32],
    salt: Vec<u8>,
    text: String,
) -> Result<TextRecord, LedgerError> {
    let salt = <[u8; crate::ledger::hash::SALT_LEN]>::try_from(salt.as_slice()).map_err(|_| {
        LedgerError::Corrupt(format!(
            "the salt of text {} is not {} bytes",
            crate::ledger::hash::hex(commitment),
            crate::ledger::hash::SALT_LEN
        ))
    })?;
    Ok(TextRecord { salt, text })
}
