//! One group commit: each command of a batch decided against the log as the writer holds it
//! (`WriterView`), stamped, chained and staged; the batch synced once; the state published
//! for queries; then the callers answered. Erasures are carried out once their event is
//! durable.

use std::collections::HashMap;
use std::sync::Arc;
use std::time::Instant;

use chrono::{DateTime, Utc};
use serde::Deserialize;

use super::decider::{Committed, Decider};
use super::replay::{leaf_data, note_erasures};
use super::{DecideTime, Head, Reply, Writer};
use crate::events::{
    ENVELOPE_VERSION, Event, Fact, KIND_TOOL_CALL_RECORDED, Outcome, OutcomeStatus, SessionId,
    TextRef,
};
use crate::ledger::checkpoint::NoteSigner;
use crate::ledger::hash::{parse_hex32, response_digest, sealed_event};
use crate::ledger::merkle::{Blake3Hasher, MerkleError, MerkleTree, NodeHash};
use crate::ledger::notary::{CHECKPOINT_EVERY_EVENTS, Notary};
use crate::ledger::store::{Batch, LedgerMeta, StagedEvent, Store};
use crate::ledger::view::{LogView, SignedCheckpoint, TextState};
use crate::ledger::{LedgerError, format_timestamp};

/// The `outcome` label of an event's status in the process's metrics.
pub(super) fn outcome_label(status: OutcomeStatus) -> &'static str {
    match status {
        OutcomeStatus::Ok => "ok",
        OutcomeStatus::Rejected => "rejected",
        OutcomeStatus::Failed => "failed",
    }
}

/// The log as the writer holds it, lent to decisions and inspections.
pub(super) struct WriterView<'a, S: Store> {
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

impl<S: Store, D: Decider> Writer<S, D> {
    /// Decides and stages one batch, syncs it, publishes the state for queries, then answers
    /// its callers. A command whose event cannot be built is answered with its error alone; a
    /// failed stage or sync answers every caller in the batch with
    /// [`LedgerError::WriterStopped`] and is returned (fail-stop), publishing nothing.
    pub(super) fn commit_batch(
        &mut self,
        commands: Vec<(D::Command, Reply)>,
    ) -> Result<(), LedgerError> {
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

    pub(super) fn view(&self) -> WriterView<'_, S> {
        WriterView {
            store: &self.store,
            meta: &self.meta,
            tree: &self.tree,
            erased: &self.erased,
            notary: self.notary.as_ref(),
            decided_at: None,
        }
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
        self.decider.derive();
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
