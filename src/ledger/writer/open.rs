//! Opening a ledger: the store's metadata (created the first time), the writer thread started
//! with the log replayed on the caller's thread ([`open_ledger`]) or on the writer's behind the
//! open gate ([`start_ledger`]), and `Writer::open`: snapshot or replay, the notary's check,
//! erasures finished before anyone is served.

use std::sync::Arc;
use std::sync::atomic::Ordering;
use std::time::Instant;

use chrono::Utc;
use tokio::sync::mpsc;

use super::decider::Decider;
use super::replay::{LogLeaves, PrefixCheck, RELEASE_READS_AFTER, TREE_FLOOR, replay, restore};
use super::{
    LedgerHandle, OpenGate, OpenState, Publication, Replayed, Writer, WriterConfig, publication,
    spawn_tail_ticker,
};
use crate::ledger::notary::Notary;
use crate::ledger::snapshot::SnapshotWorker;
use crate::ledger::store::{LedgerMeta, Store};
use crate::ledger::{FORMAT, LedgerError, format_timestamp};

/// Opens a ledger on `store`: creates its metadata if new, replays every event into `decider`
/// (checking the chain as it goes) and starts the writer thread. Returns once the ledger is
/// open; a log that does not hold is refused here. Offline commands and tests open this way.
pub fn open_ledger<S: Store, D: Decider>(
    mut store: S,
    decider: D,
    config: WriterConfig,
) -> Result<LedgerHandle<D>, LedgerError> {
    let meta = ensure_meta(&mut store)?;
    let gate = Arc::new(OpenGate::new(OpenState::Open, config.open_wait));
    let published = publication();
    let (tx, rx) = mpsc::channel(config.queue_depth.max(1));
    let shared = store.shared();
    gate.shared.store(shared, Ordering::Relaxed);
    let writer = Writer::open(
        store,
        decider,
        meta.clone(),
        config,
        &gate,
        &published,
        false,
    )?;
    if shared {
        spawn_tail_ticker(&tx)?;
    }
    std::thread::Builder::new()
        .name("thinkledger-writer".into())
        .spawn(move || writer.run(rx))?;
    Ok(LedgerHandle {
        tx,
        meta: Arc::new(std::sync::OnceLock::from(meta)),
        gate,
        published,
        admissions: Arc::default(),
    })
}

/// Starts a ledger and returns at once: `open` (which opens the store and makes its notary)
/// and the replay both run on the writer thread, so a server can answer what needs no ledger
/// while a long history loads. Calls wait for them (bounded by [`WriterConfig::open_wait`]);
/// if opening fails they are refused with [`LedgerError::OpenFailed`], saying why, and
/// [`LedgerHandle::opened`] hands the error itself to whoever started the ledger. The notary,
/// if any, is the one `open` returns.
pub fn start_ledger<S, D, F>(
    open: F,
    decider: D,
    config: WriterConfig,
) -> Result<LedgerHandle<D>, LedgerError>
where
    S: Store,
    D: Decider,
    F: FnOnce() -> Result<(S, Option<Notary>), LedgerError> + Send + 'static,
{
    let gate = Arc::new(OpenGate::new(OpenState::Opening, config.open_wait));
    let published = publication();
    let (tx, rx) = mpsc::channel(config.queue_depth.max(1));
    let meta = Arc::new(std::sync::OnceLock::new());
    let (thread_gate, thread_meta, thread_published) =
        (gate.clone(), meta.clone(), published.clone());
    let ticker_tx = tx.downgrade();
    std::thread::Builder::new()
        .name("thinkledger-writer".into())
        .spawn(move || {
            let started = Instant::now();
            let opened = open().and_then(|(mut store, notary)| {
                let meta = ensure_meta(&mut store)?;
                thread_gate.shared.store(store.shared(), Ordering::Relaxed);
                if store.shared()
                    && let Some(tx) = ticker_tx.upgrade()
                {
                    spawn_tail_ticker(&tx)?;
                }
                thread_gate
                    .total
                    .store(store.last_seq()?.unwrap_or(0), Ordering::Relaxed);
                let _ = thread_meta.set(meta.clone());
                let config = WriterConfig {
                    notary: notary.or(config.notary),
                    ..config
                };
                Writer::open(
                    store,
                    decider,
                    meta,
                    config,
                    &thread_gate,
                    &thread_published,
                    true,
                )
            });
            match opened {
                Ok(writer) => {
                    tracing::info!(
                        ledger_id = writer.meta.ledger_id,
                        events = writer.head.seq,
                        took_ms = started.elapsed().as_millis() as u64,
                        "ledger open"
                    );
                    thread_gate.state.send_replace(OpenState::Open);
                    writer.run(rx);
                }
                Err(LedgerError::OpenAborted) => {
                    // The store is closed (its lock released) before the shutdown hears so.
                    thread_gate.state.send_replace(OpenState::Closed);
                    drop(rx);
                }
                Err(e) => {
                    tracing::error!(
                        error = %e,
                        took_ms = started.elapsed().as_millis() as u64,
                        "the ledger could not be opened; calls are refused"
                    );
                    thread_gate
                        .state
                        .send_replace(OpenState::Failed(Arc::new(e)));
                    drop(rx);
                }
            }
        })?;
    Ok(LedgerHandle {
        tx,
        meta,
        gate,
        published,
        admissions: Arc::default(),
    })
}

/// The ledger's metadata, created (with a fresh ledger id) the first time `store` is opened.
pub fn ensure_meta<S: Store>(store: &mut S) -> Result<LedgerMeta, LedgerError> {
    match store.meta()? {
        Some(meta) => Ok(meta),
        None => {
            let meta = LedgerMeta {
                ledger_id: uuid::Uuid::new_v4().to_string(),
                created_at: format_timestamp(Utc::now()),
                format: FORMAT.to_owned(),
            };
            store.init_meta(&meta)?;
            // Another process sharing the store may have created it first: its metadata wins.
            Ok(store.meta()?.unwrap_or(meta))
        }
    }
}

/// The thread that saves snapshots of state where `store` keeps them: none when it keeps none,
/// the decider's state has no version or the configuration asks for none.
fn snapshot_worker<S: Store, D: Decider>(
    store: &S,
    decider: &D,
    config: &WriterConfig,
) -> Option<SnapshotWorker> {
    let version = decider
        .state_version()
        .filter(|_| config.snapshot_every > 0)?;
    SnapshotWorker::start(store.snapshots()?, version)
        .map_err(|e| tracing::warn!(error = %e, "snapshots are off: no thread for them"))
        .ok()
}

impl<S: Store, D: Decider> Writer<S, D> {
    /// Replays the log into `decider`, checks it against the notary's checkpoints and finishes
    /// interrupted erasures: everything before the first call may be decided.
    fn open(
        mut store: S,
        mut decider: D,
        meta: LedgerMeta,
        config: WriterConfig,
        gate: &Arc<OpenGate>,
        published: &Arc<Publication<D::View>>,
        check_behind: bool,
    ) -> Result<Self, LedgerError> {
        if let Some(log) = store.session_log() {
            let _ = gate.log.set(log.clone());
            decider.attach_log(log);
        }
        let snapshots = snapshot_worker(&store, &decider, &config);
        let restored = match &snapshots {
            Some(worker) => match restore(&store, &meta, &mut decider, worker) {
                Ok(restored) => restored,
                Err(reason) => {
                    tracing::warn!(%reason, "the snapshot is not used; state is rebuilt from the log");
                    None
                }
            },
            None => None,
        };
        let restored_seq = restored.as_ref().map_or(0, |r| r.head.seq);
        gate.from_snapshot.store(restored_seq, Ordering::Relaxed);
        let replayed = replay(
            &store,
            &meta,
            &mut decider,
            gate,
            restored.unwrap_or_else(Replayed::genesis),
        )?;
        tracing::info!(
            from_snapshot = restored_seq,
            replayed = replayed.head.seq - restored_seq,
            "state rebuilt"
        );
        let mut replayed = replayed;
        if let Some(log) = store.session_log() {
            replayed
                .tree
                .keep_lower_levels_in(TREE_FLOOR, Arc::new(LogLeaves::new(log)));
        }
        if let Some(notary) = &config.notary {
            // Other writers of a shared store may have signed past what was replayed.
            notary.check_log(&replayed.tree, store.shared())?;
        }
        // A snapshot older than an erasure still holds the erased texts (a crash came between
        // the erasure and its removal): remove it before serving anyone.
        // The events a snapshot stands for are checked as a replay would have: at once for a
        // one-shot command or a short log, else behind, between calls (see `PrefixCheck`).
        let mut prefix_check = (restored_seq > 0).then(|| PrefixCheck::new(restored_seq));
        let mut read_at_open = replayed.head.seq - restored_seq;
        if let Some(check) = &mut prefix_check
            && (!check_behind || restored_seq <= config.check_at_open_max)
        {
            check.step(&store, &meta, &replayed.tree, &replayed.erased, u64::MAX)?;
            prefix_check = None;
            read_at_open += restored_seq;
        }
        if read_at_open >= RELEASE_READS_AFTER {
            store.release_reads()?;
        }
        let mut snapshot_seq = restored_seq;
        if restored_seq > 0 && replayed.erased.values().any(|seq| *seq > restored_seq) {
            if let Some(worker) = &snapshots {
                worker.invalidate(replayed.head.seq)?;
            }
            snapshot_seq = 0;
        }
        // Erasures whose event is durable but whose bytes may still be on disk (a crash between
        // the two): finish them before serving anyone.
        let erased: Vec<[u8; 32]> = replayed.erased.keys().copied().collect();
        if !erased.is_empty() {
            store.erase_texts(&erased)?;
        }
        let checkpointed = config
            .notary
            .as_ref()
            .and_then(|n| n.latest().map(|c| c.checkpoint.size()))
            .unwrap_or(0);
        gate.levels
            .set_checkpoint(config.notary.as_ref().and_then(Notary::latest));
        gate.levels.set_log_bytes(store.log_bytes());
        let writer = Writer {
            store,
            decider,
            meta,
            head: replayed.head,
            tree: replayed.tree,
            erased: replayed.erased,
            notary: config.notary,
            checkpointed,
            pending_erasures: Vec::new(),
            session_closed: false,
            max_batch: config.max_batch.max(1),
            snapshots,
            snapshot_seq,
            snapshot_every: config.snapshot_every,
            prefix_check,
            gate: gate.clone(),
            last_recorded_at: None,
            decide_time: config.decide_time,
            published: published.clone(),
            taken: 0,
        };
        // Queries may be answered from the state as opened before the first call.
        writer.publish();
        Ok(writer)
    }
}
