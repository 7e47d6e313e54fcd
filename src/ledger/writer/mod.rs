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
//!
//! The files follow the writer's seams: `decider` the contract with the application
//! ([`Decider`], what a decision drafts and what a caller is answered); `handle` the
//! [`LedgerHandle`] callers hold and the open gate they wait on; `open` opening a ledger and
//! starting its thread; `replay` folding and checking the stored log (replay, the check under a
//! snapshot, other writers' events, the leaves read back for the Merkle tree); `batch` one
//! group commit (decide, chain, stage, sync, publish, answer); `upkeep` snapshots and
//! checkpoints. This file holds the configuration, the queue's messages, the state shared by
//! those parts and the writer's loop.

mod batch;
mod decider;
mod handle;
mod open;
mod replay;
#[cfg(test)]
mod tests;
mod upkeep;

pub use decider::{Committed, Decider, Draft, NewText};
pub use handle::{Admitted, Pending};
pub use open::{ensure_meta, open_ledger, start_ledger};

use std::collections::HashMap;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64};
use std::time::Duration;

use chrono::{DateTime, Utc};
use tokio::sync::{mpsc, oneshot, watch};

use super::LedgerError;
use super::gauges::Levels;
use super::merkle::{Blake3Hasher, MerkleTree};
use super::notary::Notary;
use super::snapshot::SnapshotWorker;
use super::store::{LedgerMeta, Store};
use super::view::{LogView, SessionLog, SignedCheckpoint};
use replay::{PREFIX_CHECK_BUSY_STEP, PREFIX_CHECK_IDLE_STEP, PrefixCheck};

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

/// A batch's commands, each with the reply its caller waits for.
type Commands<D> = Vec<(<D as Decider>::Command, Reply)>;

impl<S: Store, D: Decider> Writer<S, D> {
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

    /// The writer's loop: takes a batch of commands from the queue (joined by the calls that
    /// arrive while a shared store's head is waited for), commits it, then answers the message
    /// that ended it (a query, an inspection, a checkpoint, a shutdown); between messages, the
    /// check under a loaded snapshot goes on.
    fn run(mut self, mut rx: mpsc::Receiver<Message<D>>) {
        let mut stopped = false;
        if self.snapshot_due(rx.is_empty()) {
            self.take_snapshot(self.snapshot_interval() / 2);
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
            let (commands, ended_by) = self.gather(first, &mut rx, stopped);
            carried = ended_by;
            if !commands.is_empty() {
                self.commit_or_refuse(commands, &mut stopped, carried.is_none(), &rx);
            }
            match carried.take() {
                Some(Message::Shutdown(done)) => {
                    self.shut_down(stopped, done);
                    return;
                }
                Some(message) => carried = self.answer(message, &mut stopped),
                None => {}
            }
        }
        // Every sender is gone: everything staged was made durable by its batch.
        if !stopped {
            self.final_snapshot();
        }
        self.decider.close();
    }

    /// One batch's commands: `first` and those queued behind it, up to the batch's limit, and
    /// the message that ended it early (anything but a command). A shared store's head is
    /// waited for while other writers hold it: the calls that arrive meanwhile join this batch,
    /// so busy writers commit fewer, larger batches. (Should taking it fail, `commit_batch`
    /// tries again and refuses the calls.)
    fn gather(
        &mut self,
        first: Message<D>,
        rx: &mut mpsc::Receiver<Message<D>>,
        stopped: bool,
    ) -> (Commands<D>, Option<Message<D>>) {
        let mut commands = Vec::new();
        let mut carried = None;
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
        (commands, carried)
    }

    /// Commits a batch, or refuses it when the writer stopped; a failed write stops the writer.
    /// After a commit, the check under a loaded snapshot takes a step, or a snapshot is taken
    /// when one is due (`nothing_carried` and an empty queue: the writer is idle).
    fn commit_or_refuse(
        &mut self,
        commands: Commands<D>,
        stopped: &mut bool,
        nothing_carried: bool,
        rx: &mpsc::Receiver<Message<D>>,
    ) {
        if *stopped {
            self.taken += commands.len() as u64;
            for (_, reply) in commands {
                let _ = reply.send(Err(self.refusal()));
            }
        } else if let Err(e) = self.commit_batch(commands) {
            tracing::error!(error = %e, "ledger write failed; the writer stops");
            *stopped = true;
            self.stop_publishing();
        } else if self.prefix_check.is_some() {
            *stopped = !self.check_prefix(PREFIX_CHECK_BUSY_STEP);
        } else if self.snapshot_due(nothing_carried && rx.is_empty()) {
            self.take_snapshot(self.snapshot_interval() / 2);
        }
    }

    /// Answers a message that is not a command: an inspection, a read-only store, a
    /// checkpoint, or other writers' events to fold (a failed fold stops the writer). A command
    /// or a shutdown is handed back, to be carried to the next turn of the loop.
    fn answer(&mut self, message: Message<D>, stopped: &mut bool) -> Option<Message<D>> {
        match message {
            // A stopped writer may hold staged events that never became durable: it shows
            // nothing (the job is dropped and its caller told the writer stopped).
            Message::Inspect(job) if !*stopped => job(&self.view()),
            Message::Inspect(_) => {}
            Message::ReadOnly(reply) => {
                let answer = if *stopped {
                    Err(self.refusal())
                } else {
                    self.store.read_only()
                };
                let _ = reply.send(answer);
            }
            Message::Checkpoint(reply) => {
                let answer = if *stopped {
                    Err(self.refusal())
                } else {
                    self.sign_checkpoint()
                };
                let _ = reply.send(answer);
            }
            Message::Tail if !*stopped => match self.catch_up() {
                Ok(0) => {}
                Ok(_) => self.publish(),
                Err(e) => {
                    tracing::error!(error = %e, "folding other writers' events failed; the writer stops");
                    *stopped = true;
                    self.stop_publishing();
                }
            },
            Message::Tail => {}
            carried @ (Message::Command(..) | Message::Shutdown(_)) => return Some(carried),
        }
        None
    }

    /// Shuts the ledger: stops publishing, makes the last events durable and signs a last
    /// checkpoint (unless the writer stopped), takes a last snapshot, and closes the store
    /// before `done` is told, so the ledger may be reopened at once.
    fn shut_down(mut self, stopped: bool, done: oneshot::Sender<()>) {
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
        // Close the store (and release its file lock) before the caller hears that the ledger
        // is shut, so it may be reopened at once.
        drop(self);
        let _ = done.send(());
    }

    /// What a stopped writer answers: why the log cannot be served when its check failed,
    /// else that a write failed.
    fn refusal(&self) -> LedgerError {
        match &*self.gate.state.borrow() {
            OpenState::Failed(e) => LedgerError::OpenFailed(e.to_string()),
            _ => LedgerError::WriterStopped,
        }
    }
}
