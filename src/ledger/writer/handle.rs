//! What callers hold: the cheap, cloneable [`LedgerHandle`] (submit, enqueue, query, inspect,
//! checkpoint, shutdown, readiness and gauges), the [`Pending`] answer of an admitted command,
//! and the open gate every call passes while the ledger is still opening. Talks to the writer
//! thread only through its queue and the published views.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::Duration;

use tokio::sync::{oneshot, watch};

use super::decider::{Committed, Decider};
use super::{AFTER_SEQ_WAIT, Inspection, LedgerHandle, Message, OpenGate, OpenState, Published};
use crate::ledger::LedgerError;
use crate::ledger::gauges::{LedgerGauges, Levels};
use crate::ledger::store::{LedgerMeta, Store};
use crate::ledger::view::{LogView, SessionLog, SignedCheckpoint};

/// A command's place in the order commands were admitted into the writer's queue (the n-th
/// command admitted is `n`; [`Admitted::default`] is before the first). A query made with
/// [`LedgerHandle::query_after`] sees the state after every command up to it.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, PartialOrd, Ord)]
pub struct Admitted(u64);

/// A command admitted into the writer's queue, whose answer is still to come.
#[must_use = "an admitted call is answered through its Pending"]
pub struct Pending<T> {
    rx: oneshot::Receiver<Result<T, LedgerError>>,
    admitted: Admitted,
}

impl<T> Pending<T> {
    /// The answer, once the command's batch is durable.
    pub async fn wait(self) -> Result<T, LedgerError> {
        self.rx.await.map_err(|_| LedgerError::WriterStopped)?
    }

    /// Where the command stands in the order of admission.
    pub fn admitted(&self) -> Admitted {
        self.admitted
    }
}

impl OpenGate {
    pub(super) fn new(state: OpenState, wait: Duration) -> Self {
        Self {
            state: watch::Sender::new(state),
            replayed: AtomicU64::new(0),
            total: AtomicU64::new(0),
            abort: AtomicBool::new(false),
            from_snapshot: AtomicU64::new(0),
            shared: AtomicBool::new(false),
            levels: Levels::default(),
            log: std::sync::OnceLock::new(),
            wait,
        }
    }

    fn is_opening(&self) -> bool {
        matches!(*self.state.borrow(), OpenState::Opening)
    }

    /// Returns once the ledger is open, or why a call cannot go in: it failed to open, it was
    /// shut, or it is still opening after [`WriterConfig::open_wait`].
    async fn ready(&self) -> Result<(), LedgerError> {
        if matches!(*self.state.borrow(), OpenState::Open) {
            return Ok(());
        }
        let mut rx = self.state.subscribe();
        let settled =
            tokio::time::timeout(self.wait, rx.wait_for(|s| !matches!(s, OpenState::Opening)))
                .await;
        let state = match settled {
            Err(_) => {
                return Err(LedgerError::Opening {
                    replayed: self.replayed.load(Ordering::Relaxed),
                    total: self.total.load(Ordering::Relaxed),
                });
            }
            Ok(Err(_)) => return Err(LedgerError::WriterStopped),
            Ok(Ok(state)) => state.clone(),
        };
        match state {
            OpenState::Open => Ok(()),
            OpenState::Failed(error) => Err(LedgerError::OpenFailed(error.to_string())),
            OpenState::Opening | OpenState::Closed => Err(LedgerError::WriterStopped),
        }
    }
}

impl<D: Decider> LedgerHandle<D> {
    /// Decides, records and durably stores one command; returns once it is on disk.
    pub async fn submit(&self, command: D::Command) -> Result<Committed, LedgerError> {
        self.enqueue(command).await?.wait().await
    }

    /// Puts one command in the writer's queue and returns once it is there (admitted), before
    /// it is decided: whatever is enqueued later is decided after it. Await the [`Pending`] for
    /// the durable outcome. Admission is what a transport orders per connection; the writer
    /// still batches commands of every connection into one sync (group commit).
    pub async fn enqueue(&self, command: D::Command) -> Result<Pending<Committed>, LedgerError> {
        self.gate.ready().await?;
        let permit = self
            .tx
            .reserve()
            .await
            .map_err(|_| LedgerError::WriterStopped)?;
        let (tx, rx) = oneshot::channel();
        // Counted and queued under one lock, so the count is the command's place in the queue.
        let admitted = {
            let mut admissions = self
                .admissions
                .lock()
                .unwrap_or_else(std::sync::PoisonError::into_inner);
            *admissions += 1;
            permit.send(Message::Command(command, tx));
            Admitted(*admissions)
        };
        Ok(Pending { rx, admitted })
    }

    /// Answers a query on the caller's task from the latest published view of durable state,
    /// without waiting for the writer: it sees every call answered before it was made.
    pub async fn query(&self, query: D::Query) -> Result<D::Answer, LedgerError> {
        self.query_after(Admitted::default(), query).await
    }

    /// Answers a query (as [`LedgerHandle::query`]) from a view that holds every command up to
    /// `after`, waiting for the writer only if that command's batch is not yet durable. A
    /// connection that reads after a call it has not yet heard back from reads its effect.
    pub async fn query_after(
        &self,
        after: Admitted,
        query: D::Query,
    ) -> Result<D::Answer, LedgerError> {
        let view = self.view_after(after).await?;
        Ok(D::answer(&view, query))
    }

    /// The latest published view of durable state, once it holds every command up to `after`
    /// (at once when it already does). Refused as a command would be when the writer stopped.
    pub async fn view_after(&self, after: Admitted) -> Result<Arc<D::View>, LedgerError> {
        self.gate.ready().await?;
        let covered =
            |p: &Published<D::View>| p.stopped || (p.view.is_some() && p.covers >= after.0);
        let view = {
            let latest = self.published.borrow();
            covered(&latest).then(|| (latest.stopped, latest.view.clone()))
        };
        let (stopped, view) = match view {
            Some(found) => found,
            None => {
                let mut rx = self.published.subscribe();
                let latest = rx
                    .wait_for(covered)
                    .await
                    .map_err(|_| LedgerError::WriterStopped)?;
                (latest.stopped, latest.view.clone())
            }
        };
        match view {
            Some(view) if !stopped => Ok(view),
            _ => Err(match &*self.gate.state.borrow() {
                OpenState::Failed(e) => LedgerError::OpenFailed(e.to_string()),
                _ => LedgerError::WriterStopped,
            }),
        }
    }

    /// [`LedgerHandle::view_after`], once the view also holds event `seq` (0: any): for a client
    /// that wrote through another node of a shared store and carries the seq of its last
    /// answer. The writer is asked to read what other nodes wrote at once, and waited for up
    /// to [`AFTER_SEQ_WAIT`]; a seq this ledger does not reach by then is refused with
    /// [`LedgerError::Behind`].
    pub async fn view_after_seq(
        &self,
        after: Admitted,
        seq: u64,
    ) -> Result<Arc<D::View>, LedgerError> {
        let view = self.view_after(after).await?;
        if seq == 0 {
            return Ok(view);
        }
        // Publications only grow: one that holds `seq` also holds every command up to `after`.
        // Its head and its view are read from the same publication.
        let holds = |p: &Published<D::View>| p.stopped || p.head >= seq;
        let taken = |p: &Published<D::View>| match &p.view {
            Some(view) if !p.stopped => Ok(view.clone()),
            _ => Err(LedgerError::WriterStopped),
        };
        let head = {
            let latest = self.published.borrow();
            if holds(&latest) {
                return taken(&latest);
            }
            latest.head
        };
        if !self.gate.shared.load(Ordering::Relaxed) {
            return Err(LedgerError::Behind { wanted: seq, head });
        }
        let _ = self.tx.try_send(Message::Tail);
        let mut rx = self.published.subscribe();
        let reached = tokio::time::timeout(AFTER_SEQ_WAIT, async {
            match rx.wait_for(holds).await {
                Ok(latest) => taken(&latest),
                Err(_) => Err(LedgerError::WriterStopped),
            }
        })
        .await;
        reached.unwrap_or_else(|_| {
            let head = self.published.borrow().head;
            Err(LedgerError::Behind { wanted: seq, head })
        })
    }

    /// Runs `f` on the writer thread with a read-only view of the log (events, texts, tree,
    /// checkpoints), between batches. Long work here delays every caller: keep it to exports
    /// and offline tools.
    pub async fn inspect<R, F>(&self, f: F) -> Result<R, LedgerError>
    where
        R: Send + 'static,
        F: FnOnce(&dyn LogView) -> R + Send + 'static,
    {
        self.gate.ready().await?;
        let (tx, rx) = oneshot::channel();
        let job: Inspection = Box::new(move |view| {
            let _ = tx.send(f(view));
        });
        self.tx
            .send(Message::Inspect(job))
            .await
            .map_err(|_| LedgerError::WriterStopped)?;
        rx.await.map_err(|_| LedgerError::WriterStopped)
    }

    /// The log as it stands after the batches before this call, to be read whole on the
    /// caller's thread beside the writer ([`Store::read_only`]); `None` when the store cannot
    /// be read that way.
    pub async fn read_only(&self) -> Result<Option<Box<dyn Store>>, LedgerError> {
        self.gate.ready().await?;
        let (tx, rx) = oneshot::channel();
        self.tx
            .send(Message::ReadOnly(tx))
            .await
            .map_err(|_| LedgerError::WriterStopped)?;
        rx.await.map_err(|_| LedgerError::WriterStopped)?
    }

    /// Signs a checkpoint of the log now, unless the latest one already covers every event,
    /// and returns the latest checkpoint.
    pub async fn checkpoint(&self) -> Result<SignedCheckpoint, LedgerError> {
        self.gate.ready().await?;
        let (tx, rx) = oneshot::channel();
        self.tx
            .send(Message::Checkpoint(tx))
            .await
            .map_err(|_| LedgerError::WriterStopped)?;
        rx.await.map_err(|_| LedgerError::WriterStopped)?
    }

    /// Syncs and stops the writer; later calls get [`LedgerError::WriterStopped`]. A ledger
    /// still opening stops replaying (it has written nothing yet). Returns once the store is
    /// closed.
    pub async fn shutdown(&self) {
        if self.gate.is_opening() {
            self.gate.abort.store(true, Ordering::Relaxed);
        }
        let (tx, rx) = oneshot::channel();
        if self.tx.send(Message::Shutdown(tx)).await.is_ok() {
            let _ = rx.await;
        }
    }

    /// The seq of the last event in the latest published view: every event up to it is
    /// durable and answered (0 before the ledger is open, or while it is empty).
    pub fn head(&self) -> u64 {
        self.published.borrow().head
    }

    /// Returns the published head once it is past `seq` (at once when it already is), or
    /// [`LedgerError::WriterStopped`] once the writer stopped: what a follower of the log (the
    /// audit stream) waits on, without a message to the writer.
    pub async fn head_past(&self, seq: u64) -> Result<u64, LedgerError> {
        let past = |p: &Published<D::View>| p.stopped || p.head > seq;
        let mut rx = self.published.subscribe();
        let latest = rx
            .wait_for(past)
            .await
            .map_err(|_| LedgerError::WriterStopped)?;
        if latest.head > seq {
            Ok(latest.head)
        } else {
            Err(LedgerError::WriterStopped)
        }
    }

    /// The log as any thread may read it beside the writer, by seq ([`SessionLog`]): every
    /// event up to [`LedgerHandle::head`] can be read from it. `None` while the ledger is
    /// opening, and for a store that cannot be read so (a shared database). Reads fail once
    /// the ledger is shut down.
    pub fn log_reader(&self) -> Option<Arc<dyn SessionLog>> {
        self.gate.log.get().cloned()
    }

    /// Whether the ledger's store is shared with other writers ([`Store::shared`]); known once
    /// it is open.
    pub fn is_shared(&self) -> bool {
        self.gate.shared.load(Ordering::Relaxed)
    }

    /// Waits until the writer has stopped: after a failed write, or a shutdown.
    pub async fn stopped(&self) {
        let mut rx = self.published.subscribe();
        let _ = rx.wait_for(|p| p.stopped).await;
    }

    /// Whether the ledger takes calls now, or why not: still opening, failed to open (the
    /// reason), or its writer stopped (a failed write, a log that did not check out, a
    /// shutdown). For a readiness probe: answered at once, reading nothing.
    pub fn readiness(&self) -> Result<(), String> {
        match &*self.gate.state.borrow() {
            OpenState::Opening => return Err("the ledger is still opening".into()),
            OpenState::Failed(e) => return Err(format!("the ledger could not be opened: {e}")),
            OpenState::Closed => return Err("the ledger is closed".into()),
            OpenState::Open => {}
        }
        if self.published.borrow().stopped {
            return Err(
                "the ledger's writer stopped (a write failed or the log did not check out: see \
                 the server's log); calls are refused"
                    .into(),
            );
        }
        Ok(())
    }

    /// What a metrics scrape reports of the ledger, read at once from what the writer left
    /// (nothing is asked of it): its queue, its events once open, its size, its latest
    /// checkpoint.
    pub fn gauges(&self) -> LedgerGauges {
        let open = matches!(*self.gate.state.borrow(), OpenState::Open);
        let levels = &self.gate.levels;
        LedgerGauges {
            queued: self.tx.max_capacity().saturating_sub(self.tx.capacity()),
            events: open.then(|| self.published.borrow().head),
            log_bytes: levels.log_bytes(),
            checkpoint_signed_at: levels.checkpoint_signed_at(),
        }
    }

    /// Whether a started ledger is still being opened (calls wait for it).
    pub fn is_opening(&self) -> bool {
        self.gate.is_opening()
    }

    /// The ledger's metadata; `None` while a started ledger's store is still being opened.
    pub fn meta(&self) -> Option<&LedgerMeta> {
        self.meta.get()
    }

    /// The seq of the snapshot opening loaded state from: 0 when it replayed the whole log (or
    /// is still opening).
    pub fn opened_from_snapshot(&self) -> u64 {
        self.gate.from_snapshot.load(Ordering::Relaxed)
    }

    /// Why the ledger could not be opened, once that is known.
    pub fn open_failure(&self) -> Option<Arc<LedgerError>> {
        match &*self.gate.state.borrow() {
            OpenState::Failed(error) => Some(error.clone()),
            _ => None,
        }
    }

    /// Waits, without bound, until a started ledger is open (`Ok`), failed to open (its error),
    /// or was shut while opening ([`LedgerError::OpenAborted`]).
    pub async fn opened(&self) -> Result<(), Arc<LedgerError>> {
        let mut rx = self.gate.state.subscribe();
        let state = match rx.wait_for(|s| !matches!(s, OpenState::Opening)).await {
            Ok(state) => state.clone(),
            Err(_) => return Err(Arc::new(LedgerError::WriterStopped)),
        };
        match state {
            OpenState::Open => Ok(()),
            OpenState::Failed(error) => Err(error),
            OpenState::Opening | OpenState::Closed => Err(Arc::new(LedgerError::OpenAborted)),
        }
    }

    /// Returns once the ledger is open and ready for calls, or why it is not (see
    /// [`start_ledger`]); bounded by [`WriterConfig::open_wait`].
    pub async fn ready(&self) -> Result<(), LedgerError> {
        self.gate.ready().await
    }
}
