//! The single writer: decides commands in arrival order, chains and stages their events, makes
//! each batch durable with one sync, and only then answers the callers in it (group commit).
//!
//! The writer runs on its own OS thread because sled and fsync block. It owns the [`Store`] and
//! the [`Decider`] (the application state); nobody else mutates either. Queries do not reach
//! it: after every durable batch (and once open) the writer publishes an immutable view of the
//! state ([`Decider::view`]), *before* it answers the batch's callers, and a query is answered
//! on its caller's task from the latest view, concurrently with appends. So a query sees every
//! call answered before it was made, and only durable state. If staging or syncing fails the
//! writer stops for good (fail-stop): every pending and later caller gets
//! [`LedgerError::WriterStopped`] instead of an answer the disk may not back.

use std::collections::HashMap;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::{Duration, Instant};

use chrono::{DateTime, Utc};
use serde::Deserialize;
use serde_json::Value;
use tokio::sync::{mpsc, oneshot, watch};

use super::checkpoint::NoteSigner;
use super::event_check;
use super::gauges::{LedgerGauges, Levels};
use super::hash::{
    GENESIS_PREV_HASH, event_value_hash, parse_hex32, response_digest, sealed_event,
};
use super::merkle::{
    Blake3Hasher, LeafSource as MerkleLeafSource, MerkleError, MerkleHasher, MerkleTree, NodeHash,
    root_from_leaf_hashes,
};
use super::notary::{CHECKPOINT_EVERY_EVENTS, Notary};
use super::snapshot::{self, SnapshotWorker};
use super::store::{Batch, LedgerMeta, StagedEvent, Store, TextRecord};
use super::view::{LogView, SessionLog, SignedCheckpoint, TextState};
use super::{FORMAT, LedgerError, format_timestamp};
use crate::events::{
    Actor, Call, ENVELOPE_VERSION, ErrorRecord, Event, Fact, KIND_TOOL_CALL_RECORDED, Outcome,
    OutcomeStatus, Provenance, SessionId, TextLookup, TextRef, TraceContext,
};

/// New erasable text produced by a decision, to be stored beside its event.
#[derive(Debug, Clone)]
pub struct NewText {
    pub text_ref: TextRef,
    pub record: TextRecord,
}

/// What a decision produced, before the writer gives it a seq, a time and a hash.
#[derive(Debug, Clone)]
pub struct Draft {
    pub session_id: Option<SessionId>,
    pub actor: Actor,
    pub call: Call,
    pub facts: Vec<Fact>,
    pub status: OutcomeStatus,
    pub error: Option<ErrorRecord>,
    /// The response body returned to the client (its digest goes into the event).
    pub body: Value,
    pub provenance: Provenance,
    pub texts: Vec<NewText>,
    /// The stored response body (one of `texts`), for calls with an idempotency key.
    pub response_ref: Option<TextRef>,
    /// Set when the call repeats one already recorded (same idempotency key): the writer answers
    /// with this outcome and appends nothing.
    pub replay_of: Option<Committed>,
    /// The caller's trace context, recorded as the event's `trace` member.
    pub trace: Option<TraceContext>,
}

/// A durable call, as answered to its caller.
#[derive(Debug, Clone)]
pub struct Committed {
    pub seq: u64,
    pub hash: String,
    pub session_id: Option<SessionId>,
    pub status: OutcomeStatus,
    pub error: Option<ErrorRecord>,
    pub body: Value,
    /// True when this is the recorded outcome of an earlier call with the same idempotency key
    /// (nothing was appended for this one).
    pub replayed: bool,
}

/// The application side of the writer: pure decisions and folds over state it owns.
pub trait Decider: Send + 'static {
    type Command: Send + 'static;
    type Query: Send + 'static;
    type Answer: Send + 'static;
    /// An immutable copy of the state, which queries are answered from off the writer thread.
    type View: Send + Sync + 'static;

    /// When `command` was prepared (the clock on the caller's side, before it was sent). The
    /// writer stamps the event with this time, or with the previous event's `recordedAt` if
    /// that is later, and lends the stamp to the decision as its "now"
    /// ([`LogView::decided_at`]): the writer reads no clock for a decision.
    fn prepared_at(&self, command: &Self::Command) -> DateTime<Utc>;
    /// Decides one command against the current state. Must not mutate state: the writer calls
    /// [`Decider::apply`] with the resulting event. Pure: the same state, command and log give
    /// the same draft.
    fn decide(&self, command: &Self::Command, log: &dyn LogView) -> Draft;
    /// The draft to record once the writer has measured that deciding `command` took
    /// `elapsed` (the one measured effect around a decision): a decider with a time limit
    /// refuses here a decision that ran over it. The default keeps `draft`.
    fn over_time(
        &self,
        _command: &Self::Command,
        _log: &dyn LogView,
        _elapsed: Duration,
        draft: Draft,
    ) -> Draft {
        draft
    }
    /// The draft of a command whose decision panicked (a bug): recorded with outcome `failed`
    /// and no facts, so the call is still accounted for and nothing changes.
    fn failed(&self, command: &Self::Command, reason: &str) -> Draft;
    /// Folds one event into state. Cannot fail: a recorded event is a fact.
    fn apply(&mut self, event: &Event, texts: &TextLookup<'_>);
    /// The tool `command`'s event is counted under in the process's metrics
    /// (`thinkledger_calls_total`): its tool's name when the decider has that tool, else
    /// [`crate::metrics::UNKNOWN_TOOL_LABEL`], so that callers naming tools that do not exist
    /// cannot grow the metrics without bound.
    fn counted_as(&self, _command: &Self::Command) -> &'static str {
        crate::metrics::UNKNOWN_TOOL_LABEL
    }
    /// Called once as the ledger shuts down, after its final sync and snapshot: lets go of
    /// what the state holds beside the log (a derived index's files), so the ledger can be
    /// opened again at once, in this process too. The default holds nothing.
    fn close(&mut self) {}
    /// The state as it is now, for queries. The writer takes one after every durable batch, so
    /// it must be cheap at any size: share structure with the state (persistent maps, `Arc`s
    /// copied on write), never copy it whole.
    fn view(&self) -> Self::View;
    /// Answers a read-only query from a view of durable state (on the caller's task).
    fn answer(view: &Self::View, query: Self::Query) -> Self::Answer;
    /// Names the layout and meaning of [`Decider::save_view`]'s bytes: a snapshot saved under
    /// another version is ignored and state is rebuilt from the log. `None` (the default): the
    /// decider keeps no snapshots.
    fn state_version(&self) -> Option<&'static str> {
        None
    }
    /// The whole state a view holds, as bytes [`Decider::load_state`] turns back into it.
    /// Called on the snapshot thread, with a view the writer took when every event it covers
    /// was durable.
    fn save_view(_view: &Self::View) -> Result<Vec<u8>, String> {
        Err("this decider keeps no snapshots".into())
    }
    /// Replaces the state by the one `bytes` hold; on error the state is unchanged.
    fn load_state(&mut self, _bytes: &[u8]) -> Result<(), String> {
        Err("this decider keeps no snapshots".into())
    }
    /// Called once, before any event is folded, when the store can be read beside the writer
    /// ([`Store::session_log`]): a decider may then keep out of memory what it can read again
    /// from the log when asked. The default keeps everything in memory.
    fn attach_log(&mut self, _log: Arc<dyn SessionLog>) {}
}

/// Default least number of events between two snapshots of state.
pub const SNAPSHOT_EVERY_EVENTS: u64 = 10_000;

/// Least number of events since the latest snapshot for shutdown to take a new one.
const FINAL_SNAPSHOT_MIN_EVENTS: u64 = 1_000;

/// Tuning of the writer.
#[derive(Debug)]
pub struct WriterConfig {
    /// Most calls made durable by one sync.
    pub max_batch: usize,
    /// Calls that may wait for the writer before senders are made to wait.
    pub queue_depth: usize,
    /// Signs checkpoints (on session close, every [`CHECKPOINT_EVERY_EVENTS`] events, on
    /// demand and at shutdown). Without one the ledger signs nothing.
    pub notary: Option<Notary>,
    /// Longest a call waits for a ledger still opening (see [`start_ledger`]) before it is
    /// refused with [`LedgerError::Opening`]: below the 60 s request timeout common MCP clients
    /// apply, so the client hears why rather than timing out.
    pub open_wait: Duration,
    /// Least number of events between two snapshots of state (see [`super::snapshot`]); a
    /// snapshot is taken when the writer is idle, at most every tenth of the log, and at
    /// shutdown. 0: never (every open replays the whole log).
    pub snapshot_every: u64,
    /// Up to this many events under a loaded snapshot, a server checks them before its first
    /// call; above, behind, between calls (one-shot commands always check them first).
    pub check_at_open_max: u64,
    /// How long each decision is taken to have lasted (`decideMicros`, the decider's time
    /// limit): measured, or fixed for tests that need byte-identical events.
    pub decide_time: DecideTime,
}

/// How the writer learns how long a decision took: the one effect measured around a decision
/// (the decision itself reads no clock).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub enum DecideTime {
    /// Measured with the monotonic clock around the decision (production).
    #[default]
    Measured,
    /// Taken to be this long, whatever it was: for tests that need byte-identical events (each
    /// records `decideMicros`) or a time limit that trips deterministically.
    Fixed(Duration),
}

impl Default for WriterConfig {
    fn default() -> Self {
        Self {
            max_batch: 512,
            queue_depth: 4096,
            notary: None,
            open_wait: Duration::from_secs(30),
            snapshot_every: SNAPSHOT_EVERY_EVENTS,
            check_at_open_max: 50_000,
            decide_time: DecideTime::Measured,
        }
    }
}

/// The `outcome` label of an event's status in the process's metrics.
fn outcome_label(status: OutcomeStatus) -> &'static str {
    match status {
        OutcomeStatus::Ok => "ok",
        OutcomeStatus::Rejected => "rejected",
        OutcomeStatus::Failed => "failed",
    }
}

/// Work run on the writer thread against the log (see [`LedgerHandle::inspect`]).
type Inspection = Box<dyn FnOnce(&dyn LogView) + Send>;

enum Message<D: Decider> {
    Command(D::Command, oneshot::Sender<Result<Committed, LedgerError>>),
    Inspect(Inspection),
    ReadOnly(oneshot::Sender<Result<Option<Box<dyn Store>>, LedgerError>>),
    Checkpoint(oneshot::Sender<Result<SignedCheckpoint, LedgerError>>),
    Shutdown(oneshot::Sender<()>),
    /// Fold what other writers of a shared store appended ([`Store::shared`]), if anything.
    Tail,
}

/// How long a read that names a seq ([`LedgerHandle::view_after_seq`]) waits for this node
/// to have read it.
pub const AFTER_SEQ_WAIT: Duration = Duration::from_secs(5);

/// How often an idle writer of a shared store looks for events other writers appended, so
/// that queries on this node trail theirs by no more than this.
pub const TAIL_EVERY: Duration = Duration::from_millis(50);

/// Sends [`Message::Tail`] every [`TAIL_EVERY`] while the ledger is up (a weak sender: the
/// ticker never keeps the queue open).
fn spawn_tail_ticker<D: Decider>(tx: &mpsc::Sender<Message<D>>) -> std::io::Result<()> {
    let weak = tx.downgrade();
    std::thread::Builder::new()
        .name("thinkledger-tail".into())
        .spawn(move || {
            loop {
                std::thread::sleep(TAIL_EVERY);
                let Some(tx) = weak.upgrade() else { return };
                // A full queue already wakes the writer; a closed one ends the ticker.
                if let Err(mpsc::error::TrySendError::Closed(_)) = tx.try_send(Message::Tail) {
                    return;
                }
            }
        })
        .map(drop)
}

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

/// What the writer last published for queries.
struct Published<V> {
    /// The state after every durable batch so far; `None` until the ledger is open.
    view: Option<Arc<V>>,
    /// How many commands the writer had taken from its queue when it took `view`: every one is
    /// in it (or was refused and changed nothing).
    covers: u64,
    /// The seq of the last event folded into `view`.
    head: u64,
    /// Set when the writer stopped (a failed write, a shutdown): queries are then refused, as
    /// commands are.
    stopped: bool,
}

/// Where the writer publishes its views and every handle reads them.
type Publication<V> = watch::Sender<Published<V>>;

/// A cheap, cloneable handle to the writer thread.
pub struct LedgerHandle<D: Decider> {
    tx: mpsc::Sender<Message<D>>,
    /// Set once the store is open (at once for [`open_ledger`]).
    meta: Arc<std::sync::OnceLock<LedgerMeta>>,
    gate: Arc<OpenGate>,
    /// The latest view of state, for queries.
    published: Arc<Publication<D::View>>,
    /// Commands admitted so far: counted under this lock as each is put in the queue, so that
    /// the count is the command's place in the queue ([`Admitted`]).
    admissions: Arc<std::sync::Mutex<u64>>,
}

impl<D: Decider> Clone for LedgerHandle<D> {
    fn clone(&self) -> Self {
        Self {
            tx: self.tx.clone(),
            meta: self.meta.clone(),
            gate: self.gate.clone(),
            published: self.published.clone(),
            admissions: self.admissions.clone(),
        }
    }
}

fn publication<V>() -> Arc<Publication<V>> {
    Arc::new(watch::Sender::new(Published {
        view: None,
        covers: 0,
        head: 0,
        stopped: false,
    }))
}

/// Where opening stands. Replaying the log runs on the writer thread while the transports
/// already answer what needs no ledger (`initialize`, the lists); every call into the ledger
/// passes [`OpenGate::ready`] first.
#[derive(Debug, Clone)]
enum OpenState {
    Opening,
    Open,
    /// Opening failed; why. The ledger records nothing until the server is restarted.
    Failed(Arc<LedgerError>),
    /// Shut down while opening.
    Closed,
}

/// Shared by the writer thread and every handle: the open state, how far replay has come, and
/// the request to give up replaying (a shutdown while opening).
struct OpenGate {
    state: watch::Sender<OpenState>,
    replayed: AtomicU64,
    /// Events in the log when the replay began.
    total: AtomicU64,
    abort: AtomicBool,
    /// Seq of the snapshot the state was loaded from (0: replayed from the first event).
    from_snapshot: AtomicU64,
    /// Whether the store is shared with other writers ([`Store::shared`]), once open.
    shared: AtomicBool,
    /// The log's size and latest checkpoint, left by the writer for metrics scrapes.
    levels: Levels,
    /// The log as any thread may read it beside the writer ([`Store::session_log`]), once the
    /// store is open and when it can be read so.
    log: std::sync::OnceLock<Arc<dyn SessionLog>>,
    wait: Duration,
}

impl OpenGate {
    fn new(state: OpenState, wait: Duration) -> Self {
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

/// What replaying the log rebuilt besides the decider's state.
struct Replayed {
    head: Head,
    tree: MerkleTree<Blake3Hasher>,
    erased: HashMap<[u8; 32], u64>,
}

/// The last durable event: the point the next event chains to.
#[derive(Debug, Clone)]
struct Head {
    seq: u64,
    hash: String,
}

impl Replayed {
    /// Nothing replayed yet: the state of an empty log.
    fn genesis() -> Self {
        Self {
            head: Head {
                seq: 0,
                hash: GENESIS_PREV_HASH.to_owned(),
            },
            tree: MerkleTree::new(Blake3Hasher),
            erased: HashMap::new(),
        }
    }
}

/// Events checked under the snapshot each time the writer finds itself idle, and after each
/// batch while it is busy.
const PREFIX_CHECK_IDLE_STEP: u64 = 2_000;
const PREFIX_CHECK_BUSY_STEP: u64 = 200;
/// Events read at open (replayed, or checked under a snapshot) from which the store is asked to
/// let go of those reads ([`Store::release_reads`]).
const RELEASE_READS_AFTER: u64 = 10_000;

/// The check of the events a loaded snapshot stands for: what a replay would have refused (a
/// gap, a broken link, an event that does not match its hash, another ledger's event) and
/// that the snapshot's Merkle tree and erased commitments are the log's. It reads each event
/// once and folds nothing.
struct PrefixCheck {
    next: u64,
    upto: u64,
    prev_hash: String,
    /// The leaves read so far of a block whose lower nodes the tree no longer keeps: once the
    /// block is whole, their root must be the tree's node at its floor.
    block: Vec<NodeHash>,
}

impl PrefixCheck {
    fn new(upto: u64) -> Self {
        Self {
            next: 1,
            upto,
            prev_hash: GENESIS_PREV_HASH.to_owned(),
            block: Vec::new(),
        }
    }

    /// Whether `leaf`, the leaf of event `seq`, is the tree's: compared with the kept leaf at
    /// once, and, where the tree keeps only its floor's node (its lower nodes may be dropped
    /// while this check goes on), the whole block's root with that node.
    fn leaf_holds(&mut self, tree: &MerkleTree<Blake3Hasher>, seq: u64, leaf: NodeHash) -> bool {
        let index = seq - 1;
        let floor = tree.floor();
        let width = 1u64 << floor;
        if floor > 0 {
            if index.is_multiple_of(width) {
                self.block.clear();
            }
            self.block.push(leaf);
        }
        match tree.kept_node(0, index) {
            Some(kept) => kept == leaf,
            None if floor > 0 && index < tree.len() => {
                if !(index + 1).is_multiple_of(width) {
                    // Judged with the whole block.
                    return true;
                }
                self.block.len() as u64 == width
                    && tree.kept_node(floor, index >> floor)
                        == Some(root_from_leaf_hashes(
                            &Blake3Hasher,
                            self.block.iter().copied(),
                        ))
            }
            None => false,
        }
    }

    /// Checks up to `max` more events; true once every one is checked.
    fn step<S: Store>(
        &mut self,
        store: &S,
        meta: &LedgerMeta,
        tree: &MerkleTree<Blake3Hasher>,
        erased: &HashMap<[u8; 32], u64>,
        max: u64,
    ) -> Result<bool, LedgerError> {
        let upto = self.target(tree);
        let left = (upto + 1).saturating_sub(self.next);
        let count = left.min(max);
        let end = self.next + count;
        for item in store
            .events_from(self.next)
            .take(usize::try_from(count).unwrap_or(usize::MAX))
        {
            let (seq, bytes) = item?;
            let expected = self.next;
            let checked = event_check::check_event(&bytes);
            let event_check::Body::Event(event) = checked.body else {
                return Err(LedgerError::Corrupt(format!("event {seq} does not parse")));
            };
            if seq != expected || event.seq != seq {
                return Err(LedgerError::Corrupt(format!(
                    "expected event {expected}, found key {seq} holding event {}",
                    event.seq
                )));
            }
            if event.ledger_id != meta.ledger_id || event.prev_hash != self.prev_hash {
                return Err(LedgerError::Corrupt(format!(
                    "event {seq} does not chain to {}",
                    seq - 1
                )));
            }
            if event.hash_mismatch.is_some() {
                return Err(LedgerError::Corrupt(format!(
                    "event {seq} does not match its hash"
                )));
            }
            if !event
                .leaf
                .is_some_and(|leaf| self.leaf_holds(tree, seq, leaf))
            {
                return Err(LedgerError::Corrupt(format!(
                    "event {seq} is not the one the snapshot's Merkle tree holds"
                )));
            }
            if event.erased.iter().any(|c| !erased.contains_key(c)) {
                return Err(LedgerError::Corrupt(format!(
                    "event {seq} erased texts the snapshot does not know of"
                )));
            }
            self.prev_hash = event.hash;
            self.next += 1;
        }
        if self.next < end {
            return Err(LedgerError::Corrupt(format!(
                "event {} is not in the log",
                self.next
            )));
        }
        Ok(self.next > upto)
    }

    /// The last event to check: the snapshot's anchor, or, when the tree may drop the lower
    /// nodes of the anchor's block, the end of that block (events after the anchor are the
    /// log's own, folded since; checking them too lets the block be judged whole).
    fn target(&self, tree: &MerkleTree<Blake3Hasher>) -> u64 {
        let floor = tree.floor();
        if floor == 0 {
            return self.upto;
        }
        let block_end = self.upto.div_ceil(1 << floor) << floor;
        self.upto.max(block_end.min(tree.len()))
    }
}

/// Loads the saved snapshot into `decider` when it is usable, and says why not otherwise.
/// Everything is checked before the decider's state is replaced (see [`super::snapshot`]).
fn restore<S: Store, D: Decider>(
    store: &S,
    meta: &LedgerMeta,
    decider: &mut D,
    snapshots: &SnapshotWorker,
) -> Result<Option<Replayed>, String> {
    let Some(version) = decider.state_version() else {
        return Ok(None);
    };
    let Some(bytes) = snapshots
        .load()
        .map_err(|e| format!("it cannot be read: {e}"))?
    else {
        return Ok(None);
    };
    let image = snapshot::decode(bytes, &meta.ledger_id, version)?;
    let stored = store
        .event_bytes(image.seq)
        .map_err(|e| format!("its anchor, event {}, cannot be read: {e}", image.seq))?
        .ok_or_else(|| format!("its anchor, event {}, is not in the log", image.seq))?;
    let value: Value = serde_json::from_slice(&stored)
        .map_err(|e| format!("its anchor, event {}, does not parse: {e}", image.seq))?;
    let hash = event_value_hash(&value)
        .map_err(|e| format!("its anchor, event {}, cannot be hashed: {e}", image.seq))?;
    if hash != image.hash || value.get("hash").and_then(Value::as_str) != Some(&hash) {
        return Err(format!(
            "event {} of the log is not the event it was taken after",
            image.seq
        ));
    }
    let last_leaf = image
        .seq
        .checked_sub(1)
        .and_then(|i| image.tree.leaf_hash(i).ok());
    let anchor_leaf = leaf_data(&hash).map(|d| Blake3Hasher.hash_leaf(&d)).ok();
    if last_leaf.is_none() || last_leaf != anchor_leaf {
        return Err("its Merkle tree does not end in its anchor's leaf".into());
    }
    decider.load_state(image.state())?;
    Ok(Some(Replayed {
        head: Head {
            seq: image.seq,
            hash,
        },
        tree: image.tree,
        erased: image.erased,
    }))
}

/// Folds the events after `start` into state, refusing a log whose chain does not hold.
fn replay<S: Store, D: Decider>(
    store: &S,
    meta: &LedgerMeta,
    decider: &mut D,
    gate: &OpenGate,
    start: Replayed,
) -> Result<Replayed, LedgerError> {
    let Replayed {
        mut head,
        mut tree,
        mut erased,
    } = start;
    gate.replayed.store(head.seq, Ordering::Relaxed);
    for item in store.events_from(head.seq + 1) {
        if gate.abort.load(Ordering::Relaxed) {
            return Err(LedgerError::OpenAborted);
        }
        let (seq, bytes) = item?;
        fold_stored(
            store,
            meta,
            decider,
            (&mut head, &mut tree, &mut erased),
            seq,
            &bytes,
        )?;
        gate.replayed.store(seq, Ordering::Relaxed);
    }
    Ok(Replayed { head, tree, erased })
}

/// Folds the stored event `seq` into state after `head`, refusing one that does not chain to it
/// (replay at open, and a shared store's events from other writers). Returns the event.
fn fold_stored<S: Store, D: Decider>(
    store: &S,
    meta: &LedgerMeta,
    decider: &mut D,
    (head, tree, erased): (
        &mut Head,
        &mut MerkleTree<Blake3Hasher>,
        &mut HashMap<[u8; 32], u64>,
    ),
    seq: u64,
    bytes: &[u8],
) -> Result<Event, LedgerError> {
    let value: serde_json::Value = serde_json::from_slice(bytes)
        .map_err(|e| LedgerError::Corrupt(format!("event {seq} does not parse: {e}")))?;
    let event = Event::deserialize(&value)
        .map_err(|e| LedgerError::Corrupt(format!("event {seq} does not parse: {e}")))?;
    let expected_seq = head.seq + 1;
    if seq != expected_seq || event.seq != seq {
        return Err(LedgerError::Corrupt(format!(
            "expected event {expected_seq}, found key {seq} holding event {}",
            event.seq
        )));
    }
    if event.ledger_id != meta.ledger_id || event.prev_hash != head.hash {
        return Err(LedgerError::Corrupt(format!(
            "event {seq} does not chain to {}",
            head.seq
        )));
    }
    // Hashed as stored: a member `Event` does not know still counts.
    if event_value_hash(&value)? != event.hash {
        return Err(LedgerError::Corrupt(format!(
            "event {seq} does not match its hash"
        )));
    }
    let lookup = |r: &TextRef| -> Option<Arc<str>> {
        let key = parse_hex32(&r.commitment)?;
        store
            .text(&key)
            .ok()
            .flatten()
            .map(|rec| Arc::from(rec.text))
    };
    decider.apply(&event, &lookup);
    tree.push_leaf(&leaf_data(&event.hash)?);
    note_erasures(&event, erased);
    *head = Head {
        seq,
        hash: event.hash.clone(),
    };
    Ok(event)
}

/// The Merkle leaf data of an event: the 32 bytes of its hash.
fn leaf_data(hash: &str) -> Result<[u8; 32], LedgerError> {
    parse_hex32(hash).ok_or_else(|| LedgerError::Corrupt(format!("event hash {hash} is not hex")))
}

/// Below this height the writer's Merkle tree keeps only the nodes of its last block of
/// `2^TREE_FLOOR` leaves; the others are read back from the stored events when a proof or an
/// old root needs them (at most `2^TREE_FLOOR` events per node). At 1,000,000 events the tree
/// then holds 8 MB instead of 64 MB. Nodes are dropped only over durable events (after each
/// sync): a decision may ask about events of its own batch, which the store does not hold yet.
const TREE_FLOOR: u32 = 3;

/// Leaf hashes read back from the stored events (`H(0x00 ‖ hash)` of each event's recorded
/// hash, as the writer appended them), a whole block of `2^TREE_FLOOR` at a time. The last
/// block read is kept: proofs for neighbouring leaves (an export of a range) need the same one,
/// and a stored event's hash never changes.
struct LogLeaves {
    log: Arc<dyn SessionLog>,
    last: std::sync::Mutex<Option<(u64, Vec<NodeHash>)>>,
}

impl LogLeaves {
    fn new(log: Arc<dyn SessionLog>) -> Self {
        Self {
            log,
            last: std::sync::Mutex::new(None),
        }
    }

    fn read(&self, start: u64, end: u64) -> Result<Vec<NodeHash>, String> {
        (start + 1..=end)
            .map(|seq| {
                let bytes = self
                    .log
                    .event_bytes(seq)
                    .map_err(|e| e.to_string())?
                    .ok_or_else(|| format!("event {seq} is not in the log"))?;
                let hash: EventHash = serde_json::from_slice(&bytes)
                    .map_err(|e| format!("event {seq} does not parse: {e}"))?;
                let data = leaf_data(&hash.hash).map_err(|e| e.to_string())?;
                Ok(Blake3Hasher.hash_leaf(&data))
            })
            .collect()
    }
}

impl MerkleLeafSource for LogLeaves {
    fn leaf_hashes(&self, start: u64, end: u64) -> Result<Vec<NodeHash>, String> {
        let width = 1u64 << TREE_FLOOR;
        let block = start - start % width;
        if end > block + width {
            // Not within one block (the tree never asks for that): read as asked.
            return self.read(start, end);
        }
        let mut last = self.last.lock().unwrap_or_else(|e| e.into_inner());
        if last.as_ref().is_none_or(|(at, _)| *at != block) {
            *last = Some((block, self.read(block, block + width)?));
        }
        let leaves = last
            .as_ref()
            .map(|(_, leaves)| leaves.as_slice())
            .unwrap_or(&[]);
        let from = usize::try_from(start - block).map_err(|e| e.to_string())?;
        let to = usize::try_from(end - block).map_err(|e| e.to_string())?;
        leaves
            .get(from..to)
            .map(<[NodeHash]>::to_vec)
            .ok_or_else(|| format!("leaves {start}..{end} are not in block {block}"))
    }
}

/// The one field of a stored event that its leaf is made from.
#[derive(Deserialize)]
struct EventHash {
    hash: String,
}

/// Adds the commitments an event erased to `erased` (commitment → seq of the erasure).
fn note_erasures(event: &Event, erased: &mut HashMap<[u8; 32], u64>) -> Vec<[u8; 32]> {
    let mut now = Vec::new();
    for fact in &event.facts {
        if let Fact::TextsErased { commitments, .. } = fact {
            for c in commitments.iter().filter_map(|c| parse_hex32(c)) {
                erased.entry(c).or_insert(event.seq);
                now.push(c);
            }
        }
    }
    now
}

/// The log as the writer holds it, lent to decisions and inspections.
struct WriterView<'a, S: Store> {
    store: &'a S,
    meta: &'a LedgerMeta,
    tree: &'a MerkleTree<Blake3Hasher>,
    erased: &'a HashMap<[u8; 32], u64>,
    notary: Option<&'a Notary>,
    /// The time the event being decided will carry, when a decision is being taken.
    decided_at: Option<&'a str>,
}

impl<S: Store> LogView for WriterView<'_, S> {
    fn meta(&self) -> &LedgerMeta {
        self.meta
    }

    fn decided_at(&self) -> Option<&str> {
        self.decided_at
    }

    fn len(&self) -> u64 {
        self.tree.len()
    }

    fn event_bytes(&self, seq: u64) -> Result<Vec<u8>, LedgerError> {
        self.store
            .event_bytes(seq)?
            .ok_or_else(|| LedgerError::Corrupt(format!("event {seq} is not in the log")))
    }

    fn session_seqs(&self, session: &SessionId) -> Result<Vec<u64>, LedgerError> {
        self.store.session_seqs(session)
    }

    fn text(&self, commitment: &[u8; 32]) -> Result<TextState, LedgerError> {
        if let Some(seq) = self.erased.get(commitment) {
            return Ok(TextState::Erased { seq: *seq });
        }
        Ok(match self.store.text(commitment)? {
            Some(record) => TextState::Present(record),
            None => TextState::Missing,
        })
    }

    fn root_at(&self, size: u64) -> Result<NodeHash, MerkleError> {
        self.tree.root_at(size)
    }

    fn inclusion_proof(&self, index: u64, size: u64) -> Result<Vec<NodeHash>, MerkleError> {
        self.tree.inclusion_proof(index, size)
    }

    fn consistency_proof(
        &self,
        old_size: u64,
        new_size: u64,
    ) -> Result<Vec<NodeHash>, MerkleError> {
        self.tree.consistency_proof(old_size, new_size)
    }

    fn latest_checkpoint(&self) -> Option<&SignedCheckpoint> {
        self.notary.and_then(Notary::latest)
    }

    fn signer(&self) -> Option<&NoteSigner> {
        self.notary.map(Notary::signer)
    }
}

struct Writer<S: Store, D: Decider> {
    store: S,
    decider: D,
    meta: LedgerMeta,
    head: Head,
    /// Merkle tree over every staged event's hash.
    tree: MerkleTree<Blake3Hasher>,
    /// Erased text commitments → seq of the event that erased them.
    erased: HashMap<[u8; 32], u64>,
    notary: Option<Notary>,
    /// Tree size of the latest signed checkpoint.
    checkpointed: u64,
    /// Texts erased by events of the batch being built, to remove once it is durable.
    pending_erasures: Vec<[u8; 32]>,
    /// Whether an event of the batch being built closed a session (a checkpoint is then due).
    session_closed: bool,
    max_batch: usize,
    /// Saves snapshots of state; `None` when the store or the decider keeps none.
    snapshots: Option<SnapshotWorker>,
    /// Seq of the latest snapshot taken, loaded or still valid (0: none).
    snapshot_seq: u64,
    snapshot_every: u64,
    /// The check of the events under the loaded snapshot, while it is still going on.
    prefix_check: Option<PrefixCheck>,
    /// Told when that check fails: calls are then refused, as for a ledger that failed to open.
    gate: Arc<OpenGate>,
    /// The `recordedAt` of the latest event, once known (read from the log at the first call):
    /// no event is stamped earlier.
    last_recorded_at: Option<DateTime<Utc>>,
    decide_time: DecideTime,
    /// Where views of the state are published for queries.
    published: Arc<Publication<D::View>>,
    /// Commands taken from the queue so far (what a published view covers).
    taken: u64,
}

type Reply = oneshot::Sender<Result<Committed, LedgerError>>;

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
        let snapshots = (config.snapshot_every > 0 && decider.state_version().is_some())
            .then(|| store.snapshots())
            .flatten()
            .and_then(|store| {
                SnapshotWorker::start(store)
                    .map_err(
                        |e| tracing::warn!(error = %e, "snapshots are off: no thread for them"),
                    )
                    .ok()
            });
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

    /// Publishes a view of the current state for queries. Called only when every event folded
    /// into the state is durable, and before the callers of those events are answered.
    fn publish(&self) {
        let view = Arc::new(self.decider.view());
        let covers = self.taken;
        // The replaced view is dropped here, outside the channel's lock.
        let _replaced = self.published.send_replace(Published {
            view: Some(view),
            covers,
            head: self.head.seq,
            stopped: false,
        });
    }

    /// Refuses every later query (the writer stopped).
    fn stop_publishing(&self) {
        self.published.send_modify(|p| p.stopped = true);
    }

    fn run(mut self, mut rx: mpsc::Receiver<Message<D>>) {
        let mut stopped = false;
        if self.snapshot_due(rx.is_empty()) {
            self.take_snapshot();
        }
        // A message that ended the previous batch early (a query or a shutdown).
        let mut carried: Option<Message<D>> = None;
        loop {
            let first = match carried.take() {
                Some(m) => m,
                None if self.prefix_check.is_some() && !stopped => match rx.try_recv() {
                    Ok(m) => m,
                    Err(mpsc::error::TryRecvError::Empty) => {
                        stopped = !self.check_prefix(PREFIX_CHECK_IDLE_STEP);
                        continue;
                    }
                    Err(mpsc::error::TryRecvError::Disconnected) => break,
                },
                None => match rx.blocking_recv() {
                    Some(m) => m,
                    None => break,
                },
            };
            let mut commands = Vec::new();
            let mut next = Some(first);
            while let Some(message) = next.take() {
                match message {
                    Message::Command(cmd, reply) => {
                        commands.push((cmd, reply));
                        if commands.len() < self.max_batch {
                            next = rx.try_recv().ok();
                        }
                    }
                    other => {
                        carried = Some(other);
                    }
                }
            }
            // A shared store's head is waited for while other writers hold it: the calls that
            // arrive meanwhile join this batch, so busy writers commit fewer, larger batches.
            // (Should taking it fail, `commit_batch` tries again and refuses the calls.)
            if !stopped
                && !commands.is_empty()
                && carried.is_none()
                && commands.len() < self.max_batch
                && self.store.shared()
                && self.store.begin_batch().is_ok()
            {
                while commands.len() < self.max_batch {
                    match rx.try_recv() {
                        Ok(Message::Command(cmd, reply)) => commands.push((cmd, reply)),
                        Ok(other) => {
                            carried = Some(other);
                            break;
                        }
                        Err(_) => break,
                    }
                }
            }
            if !commands.is_empty() {
                if stopped {
                    self.taken += commands.len() as u64;
                    for (_, reply) in commands {
                        let _ = reply.send(Err(self.refusal()));
                    }
                } else if let Err(e) = self.commit_batch(commands) {
                    tracing::error!(error = %e, "ledger write failed; the writer stops");
                    stopped = true;
                    self.stop_publishing();
                } else if self.prefix_check.is_some() {
                    stopped = !self.check_prefix(PREFIX_CHECK_BUSY_STEP);
                } else if self.snapshot_due(carried.is_none() && rx.is_empty()) {
                    self.take_snapshot();
                }
            }
            match carried.take() {
                // A stopped writer may hold staged events that never became durable: it shows
                // nothing (the job is dropped and its caller told the writer stopped).
                Some(Message::Inspect(job)) if !stopped => job(&self.view()),
                Some(Message::Inspect(_)) => {}
                Some(Message::ReadOnly(reply)) => {
                    let answer = if stopped {
                        Err(self.refusal())
                    } else {
                        self.store.read_only()
                    };
                    let _ = reply.send(answer);
                }
                Some(Message::Checkpoint(reply)) => {
                    let answer = if stopped {
                        Err(self.refusal())
                    } else {
                        self.sign_checkpoint()
                    };
                    let _ = reply.send(answer);
                }
                Some(Message::Shutdown(done)) => {
                    self.stop_publishing();
                    if !stopped {
                        if let Err(e) = self.store.sync() {
                            tracing::error!(error = %e, "final ledger sync failed");
                        } else if self.notary.is_some()
                            && let Err(e) = self.sign_checkpoint()
                        {
                            tracing::error!(error = %e, "final checkpoint failed");
                        }
                    }
                    if !stopped {
                        self.final_snapshot();
                    }
                    self.decider.close();
                    // Close the store (and release its file lock) before the caller hears that
                    // the ledger is shut, so it may be reopened at once.
                    drop(self);
                    let _ = done.send(());
                    return;
                }
                Some(Message::Tail) if !stopped => match self.catch_up() {
                    Ok(0) => {}
                    Ok(_) => self.publish(),
                    Err(e) => {
                        tracing::error!(error = %e, "folding other writers' events failed; the writer stops");
                        stopped = true;
                        self.stop_publishing();
                    }
                },
                Some(Message::Tail) => {}
                Some(command @ Message::Command(..)) => carried = Some(command),
                None => {}
            }
        }
        // Every sender is gone: everything staged was made durable by its batch.
        if !stopped {
            self.final_snapshot();
        }
        self.decider.close();
    }

    /// What a stopped writer answers: why the log cannot be served when its check failed,
    /// else that a write failed.
    fn refusal(&self) -> LedgerError {
        match &*self.gate.state.borrow() {
            OpenState::Failed(e) => LedgerError::OpenFailed(e.to_string()),
            _ => LedgerError::WriterStopped,
        }
    }

    /// Checks up to `max` more events under the loaded snapshot. On a log that does not hold,
    /// the ledger stops taking calls, saying why, and false is returned.
    fn check_prefix(&mut self, max: u64) -> bool {
        let Some(check) = &mut self.prefix_check else {
            return true;
        };
        match check.step(&self.store, &self.meta, &self.tree, &self.erased, max) {
            Ok(false) => true,
            Ok(true) => {
                tracing::info!(
                    events = check.upto,
                    "the events under the snapshot are checked"
                );
                self.prefix_check = None;
                let started = std::time::Instant::now();
                match self.store.release_reads() {
                    Ok(()) => {
                        tracing::debug!(took = ?started.elapsed(), "the check's reads let go");
                        true
                    }
                    Err(e) => {
                        tracing::error!(error = %e, "the store cannot be used; calls are refused");
                        self.gate.state.send_replace(OpenState::Failed(Arc::new(e)));
                        self.stop_publishing();
                        false
                    }
                }
            }
            Err(e) => {
                tracing::error!(
                    error = %e,
                    "the log does not hold under its snapshot; calls are refused"
                );
                self.prefix_check = None;
                self.gate.state.send_replace(OpenState::Failed(Arc::new(e)));
                self.stop_publishing();
                false
            }
        }
    }

    /// Whether a snapshot of state should be taken now: enough events since the last one (at
    /// least [`WriterConfig::snapshot_every`] and a tenth of the log), and either the writer is
    /// idle or twice that many have passed. Only called when every staged event is durable.
    fn snapshot_due(&self, idle: bool) -> bool {
        let Some(worker) = &self.snapshots else {
            return false;
        };
        if worker.busy() {
            return false;
        }
        let since = self.head.seq.saturating_sub(self.snapshot_seq);
        let due = self.snapshot_every.max(self.head.seq / 10);
        since >= due && (idle || since >= due.saturating_mul(2))
    }

    /// Hands a view of state (shared with the writer's, which goes on changing its own copy)
    /// with a copy of the tree and the erased list to the snapshot thread, which serializes,
    /// hashes and saves them: the writer pays for copying the tree's nodes, not for the state.
    fn take_snapshot(&mut self) {
        let (Some(worker), Some(version)) = (&self.snapshots, self.decider.state_version()) else {
            return;
        };
        let view = self.decider.view();
        let (ledger_id, seq, hash) = (
            self.meta.ledger_id.clone(),
            self.head.seq,
            self.head.hash.clone(),
        );
        let (tree, erased) = (self.tree.clone(), self.erased.clone());
        worker.save(
            seq,
            Box::new(move || {
                let state = D::save_view(&view)?;
                snapshot::encode(&ledger_id, version, seq, &hash, &tree, &erased, state)
            }),
        );
        self.snapshot_seq = self.head.seq;
    }

    /// At shutdown: a snapshot of every event, saved before returning, when there is none or
    /// the latest leaves at least [`FINAL_SNAPSHOT_MIN_EVENTS`] to fold at the next open (fewer
    /// take less time to fold than a large snapshot takes to write).
    fn final_snapshot(&mut self) {
        let since = self.head.seq.saturating_sub(self.snapshot_seq);
        let none = self.snapshot_seq == 0 && self.head.seq > 0;
        if self.snapshots.is_some() && (none || since >= FINAL_SNAPSHOT_MIN_EVENTS) {
            self.take_snapshot();
        }
        if let Some(worker) = &mut self.snapshots {
            worker.finish();
        }
    }

    /// Decides and stages one batch, syncs it, publishes the state for queries, then answers
    /// its callers. A command whose event cannot be built is answered with its error alone; a
    /// failed stage or sync answers every caller in the batch with
    /// [`LedgerError::WriterStopped`] and is returned (fail-stop), publishing nothing.
    /// Folds the events other writers of a shared store appended since this writer's head
    /// (none for a store of its own); returns how many.
    fn catch_up(&mut self) -> Result<u64, LedgerError> {
        if !self.store.shared() {
            return Ok(0);
        }
        let mut folded = 0;
        let from = self.head.seq + 1;
        let events: Vec<_> = self.store.events_from(from).collect();
        for item in events {
            let (seq, bytes) = item?;
            let event = fold_stored(
                &self.store,
                &self.meta,
                &mut self.decider,
                (&mut self.head, &mut self.tree, &mut self.erased),
                seq,
                &bytes,
            )?;
            self.last_recorded_at = DateTime::parse_from_rfc3339(&event.recorded_at)
                .ok()
                .map(|at| at.with_timezone(&Utc));
            folded += 1;
        }
        Ok(folded)
    }

    fn commit_batch(&mut self, commands: Vec<(D::Command, Reply)>) -> Result<(), LedgerError> {
        self.taken += commands.len() as u64;
        // A shared store orders this batch among other writers' (its head is held until the
        // sync) and their events are folded first, so every decision sees the whole log.
        if let Err(e) = self.store.begin_batch().and_then(|()| self.catch_up()) {
            for (_, reply) in commands {
                let _ = reply.send(Err(LedgerError::WriterStopped));
            }
            return Err(e);
        }
        let mut batch = Batch::default();
        let mut answers: Vec<(Reply, Committed)> = Vec::with_capacity(commands.len());
        // Each appended event's tool and outcome, counted once the batch is durable.
        let mut counted: Vec<(&'static str, &'static str)> = Vec::with_capacity(commands.len());
        for (command, reply) in commands {
            let tool = self.decider.counted_as(&command);
            match self.record(command, &mut batch) {
                Ok(committed) => {
                    if !committed.replayed {
                        counted.push((tool, outcome_label(committed.status)));
                    }
                    answers.push((reply, committed));
                }
                Err(e) => {
                    let _ = reply.send(Err(e));
                }
            }
        }
        if batch.events.is_empty() {
            // Only repeats of calls recorded in earlier (durable) batches: the state is as
            // published (with other writers' events), but the view now covers these commands.
            if let Err(e) = self.store.abandon_batch() {
                for (reply, _) in answers {
                    let _ = reply.send(Err(LedgerError::WriterStopped));
                }
                return Err(e);
            }
            self.publish();
            for (reply, committed) in answers {
                let _ = reply.send(Ok(committed));
            }
            return Ok(());
        }
        let synced = self.store.append_batch(&batch).and_then(|()| {
            let started = Instant::now();
            self.store.sync().map(|()| started.elapsed())
        });
        match synced {
            Ok(sync_took) => {
                // Counted before anyone in the batch hears back, so that a scrape made after an
                // answer counts its call.
                crate::metrics::process().batch_durable(&counted, sync_took);
                // Every leaf is durable now, so the tree may read any of them back.
                self.tree.drop_lower_nodes(self.tree.len());
                // Erasures are carried out once their events are durable and before anyone
                // hears of them; a crash in between is finished when the ledger reopens.
                let erasures = std::mem::take(&mut self.pending_erasures);
                let erased = self.store.erase_texts(&erasures).and_then(|()| {
                    // Snapshots taken before the erasure hold its texts too.
                    match &self.snapshots {
                        Some(worker) if !erasures.is_empty() => {
                            self.snapshot_seq = 0;
                            Ok(worker.invalidate(self.head.seq)?)
                        }
                        _ => Ok(()),
                    }
                });
                if let Err(e) = erased {
                    for (reply, _) in answers {
                        let _ = reply.send(Err(LedgerError::WriterStopped));
                    }
                    return Err(e);
                }
                self.gate.levels.set_log_bytes(self.store.log_bytes());
                // Read-your-writes: the view is published before anyone in the batch is
                // answered, so a query made after an answer sees its call.
                self.publish();
                for (reply, committed) in answers {
                    let _ = reply.send(Ok(committed));
                }
                let closed = std::mem::take(&mut self.session_closed);
                let due = closed || self.tree.len() >= self.checkpointed + CHECKPOINT_EVERY_EVENTS;
                if due
                    && self.notary.is_some()
                    && let Err(e) = self.sign_checkpoint()
                {
                    tracing::error!(error = %e, "signing a checkpoint failed; recording goes on");
                }
                Ok(())
            }
            Err(e) => {
                for (reply, _) in answers {
                    let _ = reply.send(Err(LedgerError::WriterStopped));
                }
                Err(e)
            }
        }
    }

    fn view(&self) -> WriterView<'_, S> {
        WriterView {
            store: &self.store,
            meta: &self.meta,
            tree: &self.tree,
            erased: &self.erased,
            notary: self.notary.as_ref(),
            decided_at: None,
        }
    }

    /// Signs a checkpoint of every durable event unless the latest covers them.
    fn sign_checkpoint(&mut self) -> Result<SignedCheckpoint, LedgerError> {
        let notary = self.notary.as_mut().ok_or_else(|| {
            LedgerError::Corrupt("this ledger was opened without its signing key".into())
        })?;
        let signed = notary.sign_head(&self.tree, format_timestamp(Utc::now()))?;
        self.checkpointed = signed.checkpoint.size();
        self.gate.levels.set_checkpoint(Some(&signed));
        Ok(signed)
    }

    /// The time the next event is stamped with: the time its call was prepared, or the latest
    /// event's `recordedAt` when that is later (calls are prepared concurrently and may reach
    /// the writer out of their clock order), so recorded time never goes back in log order.
    fn decision_time(&mut self, prepared: DateTime<Utc>) -> DateTime<Utc> {
        #[derive(Deserialize)]
        struct Stamped {
            #[serde(rename = "recordedAt")]
            recorded_at: String,
        }
        if self.last_recorded_at.is_none() && self.head.seq > 0 {
            self.last_recorded_at = self
                .store
                .event_bytes(self.head.seq)
                .ok()
                .flatten()
                .and_then(|bytes| serde_json::from_slice::<Stamped>(&bytes).ok())
                .and_then(|e| DateTime::parse_from_rfc3339(&e.recorded_at).ok())
                .map(|at| at.with_timezone(&Utc));
        }
        let at = self
            .last_recorded_at
            .map_or(prepared, |last| last.max(prepared));
        self.last_recorded_at = Some(at);
        at
    }

    /// Decides one command, builds its event and folds it into state. Everything fallible
    /// happens before state changes, so a command that fails here leaves no trace. The event is
    /// staged in `batch`, not yet durable.
    fn record(&mut self, command: D::Command, batch: &mut Batch) -> Result<Committed, LedgerError> {
        // The event's time is fixed before the decision, so that what the decision derives from
        // "now" (analysis timestamps) is the event's own `recordedAt` and replays exactly. It
        // comes from the call's prepared time, never from the clock here.
        let prepared_at = self.decider.prepared_at(&command);
        let recorded_at = format_timestamp(self.decision_time(prepared_at));
        // The one effect measured around a decision: how long it took (`decideMicros`, and the
        // decider's time limit through `over_time`). The decision itself reads no clock.
        let started = Instant::now();
        let took = |started: Instant| match self.decide_time {
            DecideTime::Measured => started.elapsed(),
            DecideTime::Fixed(fixed) => fixed,
        };
        let decided = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
            let view = WriterView {
                decided_at: Some(&recorded_at),
                ..self.view()
            };
            let draft = self.decider.decide(&command, &view);
            self.decider
                .over_time(&command, &view, took(started), draft)
        }));
        let decide_micros = u64::try_from(took(started).as_micros()).unwrap_or(u64::MAX);
        let draft = decided.unwrap_or_else(|panic| {
            let reason = panic
                .downcast_ref::<&str>()
                .map(|s| (*s).to_owned())
                .or_else(|| panic.downcast_ref::<String>().cloned())
                .unwrap_or_else(|| "unknown panic".to_owned());
            tracing::error!(%reason, "deciding a call panicked; it is recorded as failed");
            self.decider.failed(&command, &reason)
        });
        if let Some(recorded) = draft.replay_of {
            return Ok(Committed {
                replayed: true,
                ..recorded
            });
        }
        let seq = self.head.seq + 1;
        let mut event = Event {
            v: ENVELOPE_VERSION,
            kind: KIND_TOOL_CALL_RECORDED.to_owned(),
            seq,
            ledger_id: self.meta.ledger_id.clone(),
            session_id: draft.session_id.clone(),
            recorded_at,
            actor: draft.actor,
            call: draft.call,
            facts: draft.facts,
            outcome: Outcome {
                status: draft.status,
                response_digest: response_digest(&draft.body)?,
                error: draft.error.clone(),
                response_ref: draft.response_ref,
                decide_micros: Some(decide_micros),
            },
            provenance: draft.provenance,
            trace: draft.trace,
            prev_hash: self.head.hash.clone(),
            hash: String::new(),
        };
        let (hash, bytes) = sealed_event(&event)?;
        event.hash = hash;
        let leaf = leaf_data(&event.hash)?;
        let mut texts = Vec::with_capacity(draft.texts.len());
        let mut pending: Vec<(String, Arc<str>)> = Vec::with_capacity(draft.texts.len());
        for text in draft.texts {
            let key = parse_hex32(&text.text_ref.commitment).ok_or_else(|| {
                LedgerError::NotCanonicalizable("text commitment is not 64 hex digits".into())
            })?;
            pending.push((
                text.text_ref.commitment,
                Arc::from(text.record.text.as_str()),
            ));
            texts.push((key, text.record));
        }
        // Nothing below can fail.
        let lookup = |r: &TextRef| -> Option<Arc<str>> {
            pending
                .iter()
                .find(|(c, _)| *c == r.commitment)
                .map(|(_, t)| t.clone())
        };
        self.decider.apply(&event, &lookup);
        self.tree.push_leaf(&leaf);
        let erasing = note_erasures(&event, &mut self.erased);
        self.pending_erasures.extend(erasing);
        self.session_closed |= event
            .facts
            .iter()
            .any(|f| matches!(f, Fact::SessionClosed { .. }));
        batch.texts.extend(texts);
        batch.events.push(StagedEvent {
            seq,
            bytes,
            session: event.session_id.clone(),
        });
        self.head = Head {
            seq,
            hash: event.hash.clone(),
        };
        Ok(Committed {
            seq,
            hash: event.hash,
            session_id: event.session_id,
            status: event.outcome.status,
            error: draft.error,
            body: draft.body,
            replayed: false,
        })
    }
}

#[cfg(test)]
mod tests {
    use std::sync::atomic::{AtomicBool, Ordering};

    use serde_json::json;

    use super::*;
    use crate::ledger::store::{EventIter, MemStore};
    use crate::ledger::verify;

    struct Leaves(Vec<NodeHash>);

    impl MerkleLeafSource for Leaves {
        fn leaf_hashes(&self, start: u64, end: u64) -> Result<Vec<NodeHash>, String> {
            Ok(self.0[start as usize..end as usize].to_vec())
        }
    }

    fn leaves(n: u8) -> Vec<NodeHash> {
        (0..n).map(|i| Blake3Hasher.hash_leaf(&[i])).collect()
    }

    /// Stored events holding only their hash, counting the reads.
    struct Hashes {
        reads: std::sync::atomic::AtomicU64,
    }

    impl SessionLog for Hashes {
        fn session_seqs(&self, _: &crate::events::SessionId) -> Result<Vec<u64>, LedgerError> {
            Ok(Vec::new())
        }
        fn event_bytes(&self, seq: u64) -> Result<Option<Vec<u8>>, LedgerError> {
            self.reads.fetch_add(1, Ordering::Relaxed);
            Ok(Some(
                json!({ "hash": format!("{seq:064x}") })
                    .to_string()
                    .into_bytes(),
            ))
        }
        fn text(&self, _: &[u8; 32]) -> Result<Option<TextRecord>, LedgerError> {
            Ok(None)
        }
    }

    /// A tree keeping only its top gives the proofs of a full one from the stored events' hashes,
    /// reading each block once for neighbouring leaves.
    #[test]
    fn dropped_tree_nodes_are_read_back_from_the_events_a_block_at_a_time() {
        let log = Arc::new(Hashes {
            reads: Default::default(),
        });
        let leaf = |seq: u64| Blake3Hasher.hash_leaf(&leaf_data(&format!("{seq:064x}")).unwrap());
        let full = MerkleTree::from_leaf_hashes(Blake3Hasher, (1..=50).map(leaf));
        let mut kept = full.clone();
        kept.keep_lower_levels_in(TREE_FLOOR, Arc::new(LogLeaves::new(log.clone())));
        for index in 0..16 {
            assert_eq!(
                kept.inclusion_proof(index, 50),
                full.inclusion_proof(index, 50)
            );
        }
        // Leaves 0..16 are two blocks: each read once.
        assert_eq!(log.reads.load(Ordering::Relaxed), 16);
        assert_eq!(
            kept.consistency_proof(13, 50),
            full.consistency_proof(13, 50)
        );
    }

    /// The check of the log under a snapshot judges leaves the tree no longer keeps by their
    /// block's node, also when the tree drops a block while the check is half-way through it.
    #[test]
    fn the_check_under_a_snapshot_judges_dropped_leaves_by_their_block() {
        let all = leaves(40);
        let source = Arc::new(Leaves(all.clone()));
        let tree_of = |n: usize| {
            let mut tree = MerkleTree::from_leaf_hashes(Blake3Hasher, all[..n].iter().copied());
            tree.keep_lower_levels_in(3, source.clone());
            tree
        };
        // Every leaf right: holds, kept or dropped.
        let tree = tree_of(20);
        let mut check = PrefixCheck::new(20);
        assert_eq!(check.target(&tree), 20);
        assert!((1..=20u64).all(|seq| check.leaf_holds(&tree, seq, all[seq as usize - 1])));
        // A wrong dropped leaf fails its block, at the block's last leaf.
        let mut check = PrefixCheck::new(20);
        let verdicts: Vec<bool> = (1..=8u64)
            .map(|seq| {
                let leaf = if seq == 3 {
                    all[30]
                } else {
                    all[seq as usize - 1]
                };
                check.leaf_holds(&tree, seq, leaf)
            })
            .collect();
        assert_eq!(verdicts, [true, true, true, true, true, true, true, false]);
        // A wrong kept leaf fails at once.
        let mut check = PrefixCheck::new(20);
        assert!((1..=16u64).all(|seq| check.leaf_holds(&tree, seq, all[seq as usize - 1])));
        assert!(!check.leaf_holds(&tree, 17, all[0]));
        // The anchor's block is dropped half-way: the check runs to the block's end and judges
        // it whole; its first leaves were compared while they were kept.
        let mut grown = tree_of(18);
        let mut check = PrefixCheck::new(18);
        assert_eq!(check.target(&grown), 18);
        assert!((1..=17u64).all(|seq| check.leaf_holds(&grown, seq, all[seq as usize - 1])));
        for leaf in &all[18..30] {
            grown.push_leaf_hash(*leaf);
        }
        grown.drop_lower_nodes(30);
        assert_eq!(grown.kept_node(0, 17), None, "the block is dropped now");
        assert_eq!(check.target(&grown), 24);
        assert!((18..=24u64).all(|seq| check.leaf_holds(&grown, seq, all[seq as usize - 1])));
        let mut check = PrefixCheck::new(18);
        assert!((1..=17u64).all(|seq| check.leaf_holds(&grown, seq, all[seq as usize - 1])));
        assert!(!(18..=24u64).all(|seq| {
            let leaf = if seq == 18 {
                all[0]
            } else {
                all[seq as usize - 1]
            };
            check.leaf_holds(&grown, seq, leaf)
        }));
    }

    /// Opens the sled store in `dir`, waiting (up to 10 s) for a just-shut ledger's background
    /// threads to let go of its lock.
    fn open_store(dir: &std::path::Path) -> crate::ledger::SledStore {
        let deadline = std::time::Instant::now() + std::time::Duration::from_secs(10);
        loop {
            match crate::ledger::SledStore::open(dir) {
                Ok(store) => return store,
                Err(LedgerError::Locked { .. }) if std::time::Instant::now() < deadline => {
                    std::thread::sleep(std::time::Duration::from_millis(10));
                }
                Err(e) => panic!("cannot open the store: {e}"),
            }
        }
    }

    /// A log with nothing in it, for deciding outside the writer.
    static NO_META: std::sync::LazyLock<LedgerMeta> = std::sync::LazyLock::new(|| LedgerMeta {
        ledger_id: "none".into(),
        created_at: "t".into(),
        format: FORMAT.into(),
    });

    #[allow(non_upper_case_globals)]
    const NoLog: NoLogView = NoLogView;

    struct NoLogView;

    impl LogView for NoLogView {
        fn meta(&self) -> &LedgerMeta {
            &NO_META
        }
        fn len(&self) -> u64 {
            0
        }
        fn event_bytes(&self, seq: u64) -> Result<Vec<u8>, LedgerError> {
            Err(LedgerError::Corrupt(format!("no event {seq}")))
        }
        fn session_seqs(&self, _: &SessionId) -> Result<Vec<u64>, LedgerError> {
            Ok(Vec::new())
        }
        fn text(&self, _: &[u8; 32]) -> Result<TextState, LedgerError> {
            Ok(TextState::Missing)
        }
        fn root_at(&self, size: u64) -> Result<NodeHash, MerkleError> {
            MerkleTree::new(Blake3Hasher).root_at(size)
        }
        fn inclusion_proof(&self, index: u64, size: u64) -> Result<Vec<NodeHash>, MerkleError> {
            MerkleTree::new(Blake3Hasher).inclusion_proof(index, size)
        }
        fn consistency_proof(&self, old: u64, new: u64) -> Result<Vec<NodeHash>, MerkleError> {
            MerkleTree::new(Blake3Hasher).consistency_proof(old, new)
        }
        fn latest_checkpoint(&self) -> Option<&SignedCheckpoint> {
            None
        }
        fn signer(&self) -> Option<&NoteSigner> {
            None
        }
    }

    /// Echoes its command; counts the events applied.
    #[derive(Default)]
    struct Echo {
        applied: Vec<u64>,
    }

    impl Decider for Echo {
        type Command = String;
        type Query = ();
        type Answer = Vec<u64>;
        type View = Vec<u64>;

        /// `at <RFC 3339>` was prepared then; anything else now.
        fn prepared_at(&self, command: &String) -> DateTime<Utc> {
            command
                .strip_prefix("at ")
                .and_then(|at| DateTime::parse_from_rfc3339(at).ok())
                .map_or_else(Utc::now, |at| at.with_timezone(&Utc))
        }

        fn decide(&self, command: &String, _log: &dyn LogView) -> Draft {
            if command == "panic" {
                panic!("decider bug");
            }
            Draft {
                session_id: None,
                actor: Actor {
                    principal: "test".into(),
                    transport: "none".into(),
                    client_name: None,
                    client_version: None,
                    role: Default::default(),
                    user_ids: Vec::new(),
                },
                call: Call {
                    tool: "echo".into(),
                    arguments: json!({ "say": command }),
                    idempotency_key: None,
                    effects: None,
                },
                facts: Vec::new(),
                status: OutcomeStatus::Ok,
                error: None,
                body: json!({ "echo": command, "after": self.applied.len() }),
                provenance: Provenance::rules("test"),
                texts: Vec::new(),
                response_ref: None,
                replay_of: None,
                trace: None,
            }
        }

        fn failed(&self, command: &String, reason: &str) -> Draft {
            let mut draft = self.decide(&format!("failed {command}"), &NoLog);
            draft.status = OutcomeStatus::Failed;
            draft.body = json!({ "failed": reason });
            draft
        }

        fn apply(&mut self, event: &Event, _texts: &TextLookup<'_>) {
            self.applied.push(event.seq);
        }

        fn view(&self) -> Vec<u64> {
            self.applied.clone()
        }

        fn answer(view: &Vec<u64>, _query: ()) -> Vec<u64> {
            view.clone()
        }
    }

    /// A store whose sync can be made to fail, to exercise fail-stop, and whose replay can be
    /// held at its start, to see what a ledger still opening does.
    struct Flaky {
        inner: MemStore,
        fail: Arc<AtomicBool>,
        hold: Option<std::sync::Mutex<std::sync::mpsc::Receiver<()>>>,
        /// When set, each sync waits for one message (a slow disk), saying so in `syncing`.
        sync_hold: Option<std::sync::Mutex<std::sync::mpsc::Receiver<()>>>,
        syncing: Arc<AtomicBool>,
    }

    impl Flaky {
        /// `inner`, whose replay waits until the returned sender sends or is dropped.
        fn held(inner: MemStore) -> (Self, std::sync::mpsc::Sender<()>) {
            let (tx, rx) = std::sync::mpsc::channel();
            let store = Self {
                inner,
                fail: Arc::default(),
                hold: Some(std::sync::Mutex::new(rx)),
                sync_hold: None,
                syncing: Arc::default(),
            };
            (store, tx)
        }

        /// `inner`, each of whose syncs waits until the returned sender sends (or is dropped);
        /// the flag is up while one waits.
        fn slow_sync(inner: MemStore) -> (Self, std::sync::mpsc::Sender<()>, Arc<AtomicBool>) {
            let (tx, rx) = std::sync::mpsc::channel();
            let syncing = Arc::new(AtomicBool::new(false));
            let store = Self {
                inner,
                fail: Arc::default(),
                hold: None,
                sync_hold: Some(std::sync::Mutex::new(rx)),
                syncing: syncing.clone(),
            };
            (store, tx, syncing)
        }
    }

    impl Store for Flaky {
        fn meta(&self) -> Result<Option<LedgerMeta>, LedgerError> {
            self.inner.meta()
        }
        fn init_meta(&mut self, meta: &LedgerMeta) -> Result<(), LedgerError> {
            self.inner.init_meta(meta)
        }
        fn append_batch(&mut self, batch: &Batch) -> Result<(), LedgerError> {
            self.inner.append_batch(batch)
        }
        fn sync(&mut self) -> Result<(), LedgerError> {
            if self.fail.load(Ordering::SeqCst) {
                return Err(LedgerError::Io(std::io::Error::other("disk on fire")));
            }
            if let Some(hold) = &self.sync_hold {
                self.syncing.store(true, Ordering::SeqCst);
                let _ = hold.lock().unwrap().recv();
                self.syncing.store(false, Ordering::SeqCst);
            }
            self.inner.sync()
        }
        fn last_seq(&self) -> Result<Option<u64>, LedgerError> {
            self.inner.last_seq()
        }
        fn event_bytes(&self, seq: u64) -> Result<Option<Vec<u8>>, LedgerError> {
            self.inner.event_bytes(seq)
        }
        fn events_from(&self, from: u64) -> EventIter<'_> {
            if let Some(hold) = &self.hold {
                let _ = hold.lock().unwrap().recv();
            }
            self.inner.events_from(from)
        }
        fn session_seqs(&self, session: &SessionId) -> Result<Vec<u64>, LedgerError> {
            self.inner.session_seqs(session)
        }
        fn text(&self, commitment: &[u8; 32]) -> Result<Option<TextRecord>, LedgerError> {
            self.inner.text(commitment)
        }
        fn texts_in_file_order(&self) -> Result<crate::ledger::store::TextIter<'_>, LedgerError> {
            self.inner.texts_in_file_order()
        }
        fn erase_texts(&mut self, commitments: &[[u8; 32]]) -> Result<(), LedgerError> {
            self.inner.erase_texts(commitments)
        }
    }

    #[tokio::test]
    async fn concurrent_commands_get_gap_free_seqs_and_a_valid_chain() {
        let dir = tempfile::tempdir().unwrap();
        let store = open_store(dir.path());
        let ledger = open_ledger(store, Echo::default(), WriterConfig::default()).unwrap();
        let tasks: Vec<_> = (0..64)
            .map(|i| {
                let ledger = ledger.clone();
                tokio::spawn(async move { ledger.submit(format!("c{i}")).await.unwrap().seq })
            })
            .collect();
        let mut seqs = Vec::new();
        for t in tasks {
            seqs.push(t.await.unwrap());
        }
        seqs.sort_unstable();
        assert_eq!(seqs, (1..=64).collect::<Vec<u64>>());
        assert_eq!(
            ledger.query(()).await.unwrap(),
            (1..=64).collect::<Vec<u64>>()
        );
        ledger.shutdown().await;
        let report = verify(&open_store(dir.path())).unwrap();
        assert!(report.is_intact(), "{:?}", report.problems);
        assert_eq!(report.events, 64);
    }

    #[tokio::test]
    async fn recorded_time_is_the_prepared_time_and_never_goes_back_in_log_order() {
        let dir = tempfile::tempdir().unwrap();
        let recorded_at = |dir: &std::path::Path| -> Vec<String> {
            let store = open_store(dir);
            (1..=store.last_seq().unwrap().unwrap_or(0))
                .map(|seq| {
                    let bytes = store.event_bytes(seq).unwrap().unwrap();
                    let event: Value = serde_json::from_slice(&bytes).unwrap();
                    event["recordedAt"].as_str().unwrap().to_owned()
                })
                .collect()
        };
        {
            let ledger = open_ledger(
                open_store(dir.path()),
                Echo::default(),
                WriterConfig::default(),
            )
            .unwrap();
            for at in [
                "2026-03-01T10:00:00Z",
                "2026-03-01T09:00:00Z",
                "2026-03-02T00:00:00Z",
            ] {
                ledger.submit(format!("at {at}")).await.unwrap();
            }
            ledger.shutdown().await;
        }
        assert_eq!(
            recorded_at(dir.path()),
            [
                "2026-03-01T10:00:00.000000Z",
                "2026-03-01T10:00:00.000000Z",
                "2026-03-02T00:00:00.000000Z"
            ],
            "a call prepared earlier than the event before it is stamped with that event's time"
        );
        // After a restart the floor is read back from the log.
        let ledger = open_ledger(
            open_store(dir.path()),
            Echo::default(),
            WriterConfig::default(),
        )
        .unwrap();
        ledger
            .submit("at 2026-01-01T00:00:00Z".into())
            .await
            .unwrap();
        ledger.shutdown().await;
        assert_eq!(recorded_at(dir.path())[3], "2026-03-02T00:00:00.000000Z");
    }

    #[tokio::test]
    async fn what_is_admitted_first_takes_effect_first_reads_included() {
        let ledger = open_ledger(
            MemStore::default(),
            Echo::default(),
            WriterConfig::default(),
        )
        .unwrap();
        // Admitted in this order, awaited in the opposite one: the read, made after the first
        // command is admitted but before it is answered, waits for its effect.
        let first = ledger.enqueue("a".into()).await.unwrap();
        let read = ledger.query_after(first.admitted(), ()).await.unwrap();
        let second = ledger.enqueue("b".into()).await.unwrap();
        assert!(second.admitted() > first.admitted());
        assert_eq!(second.wait().await.unwrap().body["after"], 1);
        assert_eq!(read, vec![1], "the read saw the first only");
        assert_eq!(first.wait().await.unwrap().seq, 1);
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn a_query_is_answered_while_the_writer_is_blocked_in_a_sync() {
        let (store, release, syncing) = Flaky::slow_sync(MemStore::default());
        let ledger = open_ledger(store, Echo::default(), WriterConfig::default()).unwrap();
        let first = ledger.enqueue("a".into()).await.unwrap();
        release.send(()).unwrap();
        assert_eq!(first.wait().await.unwrap().seq, 1);
        // The second call's sync hangs: the writer is stuck in it.
        let second = ledger.enqueue("b".into()).await.unwrap();
        while !syncing.load(Ordering::SeqCst) {
            tokio::task::yield_now().await;
        }
        // A query does not wait for the writer (were it queued behind the sync, this would
        // never return): it sees the durable state, without the call still being synced.
        let seen = tokio::time::timeout(Duration::from_secs(30), ledger.query(()))
            .await
            .expect("the query waited for the writer")
            .unwrap();
        assert_eq!(seen, vec![1]);
        assert!(
            syncing.load(Ordering::SeqCst),
            "the writer was still blocked"
        );
        // A read after the second call waits for its effect, and gets it once it is durable.
        let after = second.admitted();
        let reader = ledger.clone();
        let read = tokio::spawn(async move { reader.query_after(after, ()).await });
        tokio::time::sleep(Duration::from_millis(50)).await;
        assert!(!read.is_finished(), "the read did not wait for the call");
        release.send(()).unwrap();
        assert_eq!(read.await.unwrap().unwrap(), vec![1, 2]);
        assert_eq!(second.wait().await.unwrap().seq, 2);
        drop(release);
        ledger.shutdown().await;
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 4)]
    async fn queries_never_miss_an_answered_call_while_appends_go_on() {
        const WRITERS: u64 = 16;
        const CALLS: u64 = 40;
        let dir = tempfile::tempdir().unwrap();
        let ledger = open_ledger(
            open_store(dir.path()),
            Echo::default(),
            WriterConfig::default(),
        )
        .unwrap();
        // Highest seq answered to any caller so far.
        let answered = Arc::new(AtomicU64::new(0));
        let done = Arc::new(AtomicBool::new(false));
        let writers: Vec<_> = (0..WRITERS)
            .map(|w| {
                let (ledger, answered) = (ledger.clone(), answered.clone());
                tokio::spawn(async move {
                    for i in 0..CALLS {
                        let seq = ledger.submit(format!("w{w}c{i}")).await.unwrap().seq;
                        answered.fetch_max(seq, Ordering::SeqCst);
                        // Append, then at once query from another task: the call is there.
                        let reader = ledger.clone();
                        let seen = tokio::spawn(async move { reader.query(()).await })
                            .await
                            .unwrap()
                            .unwrap();
                        assert!(seen.contains(&seq), "an answered call ({seq}) was not seen");
                    }
                })
            })
            .collect();
        let readers: Vec<_> = (0..4)
            .map(|_| {
                let (ledger, answered, done) = (ledger.clone(), answered.clone(), done.clone());
                tokio::spawn(async move {
                    let (mut reads, mut last) = (0u64, 0usize);
                    while !done.load(Ordering::SeqCst) {
                        let floor = answered.load(Ordering::SeqCst);
                        let seen = ledger.query(()).await.unwrap();
                        // Gap-free seqs: the view holds seqs 1..=len.
                        assert!(
                            seen.len() as u64 >= floor,
                            "a view older than an answered call: {} < {floor}",
                            seen.len()
                        );
                        assert!(seen.len() >= last, "views went back in time");
                        last = seen.len();
                        reads += 1;
                        tokio::task::yield_now().await;
                    }
                    reads
                })
            })
            .collect();
        for w in writers {
            w.await.unwrap();
        }
        done.store(true, Ordering::SeqCst);
        for r in readers {
            assert!(r.await.unwrap() > 0);
        }
        let all = ledger.query(()).await.unwrap();
        assert_eq!(all, (1..=WRITERS * CALLS).collect::<Vec<_>>());
        ledger.shutdown().await;
    }

    #[tokio::test]
    async fn state_is_rebuilt_from_the_log_on_reopen() {
        let dir = tempfile::tempdir().unwrap();
        {
            let store = open_store(dir.path());
            let ledger = open_ledger(store, Echo::default(), WriterConfig::default()).unwrap();
            for i in 0..3 {
                ledger.submit(format!("c{i}")).await.unwrap();
            }
            ledger.shutdown().await;
        }
        let store = open_store(dir.path());
        let ledger = open_ledger(store, Echo::default(), WriterConfig::default()).unwrap();
        assert_eq!(ledger.query(()).await.unwrap(), vec![1, 2, 3]);
        let next = ledger.submit("again".into()).await.unwrap();
        assert_eq!(next.seq, 4);
        assert_eq!(next.body["after"], 3, "the decision saw the replayed state");
    }

    #[tokio::test]
    async fn a_failed_sync_answers_nobody_and_stops_the_writer() {
        let fail = Arc::new(AtomicBool::new(false));
        let store = Flaky {
            inner: MemStore::default(),
            fail: fail.clone(),
            hold: None,
            sync_hold: None,
            syncing: Arc::default(),
        };
        let ledger = open_ledger(store, Echo::default(), WriterConfig::default()).unwrap();
        assert_eq!(ledger.submit("ok".into()).await.unwrap().seq, 1);
        fail.store(true, Ordering::SeqCst);
        assert!(matches!(
            ledger.submit("lost".into()).await,
            Err(LedgerError::WriterStopped)
        ));
        fail.store(false, Ordering::SeqCst);
        // Fail-stop: even with the disk back, nothing more is recorded or answered from state
        // the disk may lack.
        assert!(matches!(
            ledger.submit("later".into()).await,
            Err(LedgerError::WriterStopped)
        ));
        assert!(matches!(
            ledger.query(()).await,
            Err(LedgerError::WriterStopped)
        ));
    }

    #[tokio::test]
    async fn a_panicking_decision_is_recorded_as_failed_and_the_writer_goes_on() {
        let ledger = open_ledger(
            MemStore::default(),
            Echo::default(),
            WriterConfig::default(),
        )
        .unwrap();
        let failed = ledger.submit("panic".into()).await.unwrap();
        assert_eq!((failed.seq, failed.status), (1, OutcomeStatus::Failed));
        assert_eq!(failed.body["failed"], "decider bug");
        let next = ledger.submit("fine".into()).await.unwrap();
        assert_eq!((next.seq, next.status), (2, OutcomeStatus::Ok));
    }

    #[tokio::test]
    async fn checkpoints_cover_durable_events_and_proofs_verify_against_them() {
        use crate::ledger::checkpoint::open_note;
        use crate::ledger::merkle::{verify_consistency, verify_inclusion};
        let dir = tempfile::tempdir().unwrap();
        let signer = NoteSigner::generate("thinkledger/l").unwrap();
        let verifier = signer.verifier();
        let config = WriterConfig {
            notary: Some(Notary::open(dir.path(), signer).unwrap()),
            ..WriterConfig::default()
        };
        let ledger = open_ledger(MemStore::default(), Echo::default(), config).unwrap();
        for word in ["a", "b", "c"] {
            ledger.submit(word.into()).await.unwrap();
        }
        let first = ledger.checkpoint().await.unwrap();
        assert_eq!(first.checkpoint.size(), 3);
        open_note(&first.note, std::slice::from_ref(&verifier)).unwrap();
        assert_eq!(
            ledger.checkpoint().await.unwrap(),
            first,
            "nothing new: same checkpoint"
        );
        ledger.submit("d".into()).await.unwrap();
        let second = ledger.checkpoint().await.unwrap();
        assert_eq!(second.checkpoint.size(), 4);
        let (leaf, inclusion, consistency) = ledger
            .inspect(|view| {
                let event: Event = serde_json::from_slice(&view.event_bytes(2).unwrap()).unwrap();
                let leaf = Blake3Hasher.hash_leaf(&parse_hex32(&event.hash).unwrap());
                (
                    leaf,
                    view.inclusion_proof(1, 4).unwrap(),
                    view.consistency_proof(3, 4).unwrap(),
                )
            })
            .await
            .unwrap();
        use crate::ledger::merkle::MerkleHasher;
        verify_inclusion(
            &Blake3Hasher,
            &leaf,
            1,
            4,
            &inclusion,
            second.checkpoint.root(),
        )
        .unwrap();
        verify_consistency(
            &Blake3Hasher,
            3,
            4,
            first.checkpoint.root(),
            second.checkpoint.root(),
            &consistency,
        )
        .unwrap();
    }

    /// A MemStore holding `n` echoed events, as a ledger that was used and shut.
    async fn store_with(n: usize) -> MemStore {
        let ledger = open_ledger(
            MemStore::default(),
            Echo::default(),
            WriterConfig::default(),
        )
        .unwrap();
        for i in 0..n {
            ledger.submit(format!("c{i}")).await.unwrap();
        }
        let events: Vec<Vec<u8>> = ledger
            .inspect(move |log| {
                (1..=log.len())
                    .map(|s| log.event_bytes(s).unwrap())
                    .collect()
            })
            .await
            .unwrap();
        let meta = ledger.meta().expect("open").clone();
        ledger.shutdown().await;
        let mut copy = MemStore::default();
        copy.init_meta(&meta).unwrap();
        for (i, bytes) in events.into_iter().enumerate() {
            copy.append_batch(&Batch {
                events: vec![StagedEvent {
                    seq: i as u64 + 1,
                    bytes,
                    session: None,
                }],
                texts: Vec::new(),
            })
            .unwrap();
        }
        copy
    }

    #[tokio::test]
    async fn a_started_ledger_answers_calls_once_its_replay_is_done() {
        let (store, release) = Flaky::held(store_with(3).await);
        let config = WriterConfig {
            open_wait: Duration::from_millis(50),
            ..WriterConfig::default()
        };
        // Returns while the replay is held.
        let ledger = start_ledger(move || Ok((store, None)), Echo::default(), config).unwrap();
        match ledger.submit("early".into()).await {
            Err(LedgerError::Opening {
                replayed: 0,
                total: 3,
            }) => {}
            other => panic!("expected Opening, got {other:?}"),
        }
        release.send(()).unwrap();
        let deadline = Instant::now() + Duration::from_secs(10);
        while ledger.ready().await.is_err() {
            assert!(Instant::now() < deadline, "never opened");
        }
        let committed = ledger.submit("late".into()).await.unwrap();
        assert_eq!(
            committed.seq, 4,
            "the call refused while opening left no event"
        );
        assert_eq!(ledger.query(()).await.unwrap(), vec![1, 2, 3, 4]);
        ledger.shutdown().await;
    }

    #[tokio::test]
    async fn a_ledger_that_fails_to_open_refuses_every_call_saying_why() {
        let mut inner = store_with(3).await;
        let bytes = inner.event_bytes(2).unwrap().unwrap();
        let altered = String::from_utf8(bytes)
            .unwrap()
            .replace("\"c1\"", "\"cX\"");
        inner.tamper_event_bytes(2, altered.as_bytes());
        let (store, release) = Flaky::held(inner);
        let ledger = start_ledger(
            move || Ok((store, None)),
            Echo::default(),
            WriterConfig::default(),
        )
        .unwrap();
        assert!(
            ledger.open_failure().is_none(),
            "not known before the replay"
        );
        drop(release);
        for _ in 0..2 {
            match ledger.submit("c".into()).await {
                Err(LedgerError::OpenFailed(why)) => assert!(why.contains("event 2"), "{why}"),
                other => panic!("expected OpenFailed, got {other:?}"),
            }
        }
        assert!(
            ledger
                .open_failure()
                .is_some_and(|why| why.to_string().contains("event 2"))
        );
    }

    #[tokio::test]
    async fn a_shutdown_while_opening_stops_the_replay() {
        let (store, release) = Flaky::held(store_with(3).await);
        let ledger = start_ledger(
            move || Ok((store, None)),
            Echo::default(),
            WriterConfig::default(),
        )
        .unwrap();
        let shutdown = tokio::spawn({
            let ledger = ledger.clone();
            async move { ledger.shutdown().await }
        });
        tokio::time::sleep(Duration::from_millis(20)).await;
        release.send(()).unwrap();
        tokio::time::timeout(Duration::from_secs(10), shutdown)
            .await
            .expect("shutdown returns")
            .unwrap();
        assert!(ledger.submit("after".into()).await.is_err());
    }

    #[test]
    fn a_log_whose_chain_is_broken_is_refused_at_open() {
        let mut store = MemStore::default();
        let meta = LedgerMeta {
            ledger_id: "l".into(),
            created_at: "t".into(),
            format: FORMAT.into(),
        };
        store.init_meta(&meta).unwrap();
        let mut prev = GENESIS_PREV_HASH.to_owned();
        for seq in 1..=3 {
            let mut event = Event {
                v: ENVELOPE_VERSION,
                kind: KIND_TOOL_CALL_RECORDED.into(),
                seq,
                ledger_id: "l".into(),
                session_id: None,
                recorded_at: "2026-01-01T00:00:00.000000Z".into(),
                actor: Echo::default().decide(&String::new(), &NoLog).actor,
                call: Call {
                    tool: "echo".into(),
                    arguments: json!({}),
                    idempotency_key: None,
                    effects: None,
                },
                facts: Vec::new(),
                outcome: Outcome {
                    status: OutcomeStatus::Ok,
                    response_digest: "00".into(),
                    error: None,
                    response_ref: None,
                    decide_micros: None,
                },
                provenance: Provenance::rules("test"),
                trace: None,
                prev_hash: prev.clone(),
                hash: String::new(),
            };
            event.hash = crate::ledger::hash::event_hash(&event).unwrap();
            prev = event.hash.clone();
            let mut bytes =
                crate::ledger::canonical::canonical_bytes(&serde_json::to_value(&event).unwrap())
                    .unwrap();
            if seq == 2 {
                // Alter the content but keep the recorded hash: the tamperer's best attempt.
                let text = String::from_utf8(bytes)
                    .unwrap()
                    .replace("\"echo\"", "\"echO\"");
                bytes = text.into_bytes();
            }
            store
                .append_batch(&Batch {
                    events: vec![StagedEvent {
                        seq,
                        bytes,
                        session: None,
                    }],
                    texts: Vec::new(),
                })
                .unwrap();
        }
        match open_ledger(store, Echo::default(), WriterConfig::default()) {
            Err(LedgerError::Corrupt(detail)) => assert!(detail.contains("event 2"), "{detail}"),
            Err(other) => panic!("expected Corrupt, got {other}"),
            Ok(_) => panic!("a broken chain was accepted"),
        }
    }
}
