//! The PostgreSQL schema: one migration per version, and their application under an advisory
//! lock so that nodes starting together migrate once.
//!
//! Must not know: what the rows mean to the store (that is `store`, `checkpoints`, `tokens`,
//! `timestamps`).

/// The advisory lock key under which migrations run: "thinkledger" folded into an i64.
const MIGRATION_LOCK: i64 = 0x7468_696e_6b6c_6467;
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
    // 4: snapshots of a node's state (`ledger::snapshot`), saved by whichever node is due and
    // loaded by any node of the same state version: one row a snapshot, keyed by the seq it is
    // anchored at and the state version it holds, with that event's hash; the newest few are
    // kept. Below `thinkledger_snapshot_floor.seq` (the last erasure's) none is saved again.
    "CREATE TABLE thinkledger_snapshots (
        seq bigint NOT NULL,
        state_version text NOT NULL,
        hash text NOT NULL,
        bytes bytea NOT NULL,
        saved_at timestamptz NOT NULL DEFAULT now(),
        PRIMARY KEY (state_version, seq)
     );
     ALTER TABLE thinkledger_snapshots ALTER COLUMN bytes SET STORAGE EXTERNAL;
     CREATE TABLE thinkledger_snapshot_floor (
        id integer PRIMARY KEY CHECK (id = 1),
        seq bigint NOT NULL
     );
     INSERT INTO thinkledger_snapshot_floor (id, seq) VALUES (1, 0);",
];

/// Applies the migrations the database lacks, one transaction each, under a transaction-level
/// advisory lock so that nodes starting together migrate once.
pub(super) async fn migrate(
    client: &mut deadpool_postgres::Object,
) -> Result<(), tokio_postgres::Error> {
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
