//! The writer's upkeep between calls: snapshots of state when due (handed to the snapshot
//! thread) and at shutdown, and signed checkpoints of the durable log.

use chrono::Utc;

use super::decider::Decider;
use super::{FINAL_SNAPSHOT_MIN_EVENTS, Writer};
use crate::ledger::snapshot::{self};
use crate::ledger::store::Store;
use crate::ledger::view::SignedCheckpoint;
use crate::ledger::{LedgerError, format_timestamp};

impl<S: Store, D: Decider> Writer<S, D> {
    /// Whether a snapshot of state should be taken now: enough events since the last one (at
    /// least [`WriterConfig::snapshot_every`] and a tenth of the log), and either the writer is
    /// idle or twice that many have passed. Only called when every staged event is durable.
    pub(super) fn snapshot_due(&self, idle: bool) -> bool {
        let Some(worker) = &self.snapshots else {
            return false;
        };
        if worker.busy() {
            return false;
        }
        let since = self.head.seq.saturating_sub(self.snapshot_seq);
        let due = self.snapshot_interval();
        since >= due && (idle || since >= due.saturating_mul(2))
    }

    /// Events between snapshots: [`WriterConfig::snapshot_every`], or a tenth of the log.
    pub(super) fn snapshot_interval(&self) -> u64 {
        self.snapshot_every.max(self.head.seq / 10)
    }

    /// Hands a view of state (shared with the writer's, which goes on changing its own copy)
    /// with a copy of the tree and the erased list to the snapshot thread, which serializes,
    /// hashes and saves them: the writer pays for copying the tree's nodes, not for the state.
    /// A snapshot another writer of a shared store saved meanwhile, anchored fewer than `slack`
    /// events back, makes this one not worth its cost: it is not made.
    pub(super) fn take_snapshot(&mut self, slack: u64) {
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
        let fresh_from = seq.saturating_sub(slack);
        worker.save(
            seq,
            fresh_from,
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
    pub(super) fn final_snapshot(&mut self) {
        let since = self.head.seq.saturating_sub(self.snapshot_seq);
        let none = self.snapshot_seq == 0 && self.head.seq > 0;
        if self.snapshots.is_some() && (none || since >= FINAL_SNAPSHOT_MIN_EVENTS) {
            self.take_snapshot(FINAL_SNAPSHOT_MIN_EVENTS);
        }
        if let Some(worker) = &mut self.snapshots {
            worker.finish();
        }
    }

    /// Signs a checkpoint of every durable event unless the latest covers them.
    pub(super) fn sign_checkpoint(&mut self) -> Result<SignedCheckpoint, LedgerError> {
        let notary = self.notary.as_mut().ok_or_else(|| {
            LedgerError::Corrupt("this ledger was opened without its signing key".into())
        })?;
        let signed = notary.sign_head(&self.tree, format_timestamp(Utc::now()))?;
        self.checkpointed = signed.checkpoint.size();
        self.gate.levels.set_checkpoint(Some(&signed));
        Ok(signed)
    }
}
