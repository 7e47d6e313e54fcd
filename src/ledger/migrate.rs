//! Copying a ledger from one store to another (`thinkledger migrate`): the metadata, every
//! event's bytes as stored, the texts not erased and the signed checkpoints. Nothing is
//! decided or re-hashed: the copy is the same log, so every checkpoint's root holds on it and
//! `verify` passes on both.

use super::LedgerError;
use super::notary::CheckpointLog;
use super::store::{Batch, StagedEvent, Store, TextRecord};
use super::view::SignedCheckpoint;
use crate::events::SessionId;

/// Events written per batch (and per sync) of the copy.
const BATCH: usize = 1_000;

/// What a copy wrote.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Copied {
    pub events: u64,
    pub texts: u64,
    pub checkpoints: u64,
}

/// Copies the ledger in `from` (with its `checkpoints`) into the empty store `to` and its
/// checkpoint log. `progress` is told (events copied, events in all) as the copy goes.
pub fn copy_ledger(
    from: &dyn Store,
    checkpoints: &[SignedCheckpoint],
    to: &mut dyn Store,
    to_checkpoints: &mut dyn CheckpointLog,
    progress: &dyn Fn(u64, u64),
) -> Result<Copied, LedgerError> {
    let meta = from
        .meta()?
        .ok_or_else(|| LedgerError::Corrupt("the source holds no ledger".into()))?;
    if to.meta()?.is_some() || to.last_seq()?.is_some() || !to_checkpoints.read()?.is_empty() {
        return Err(LedgerError::Database(
            "the destination already holds a ledger; migrate copies into an empty one".into(),
        ));
    }
    to.init_meta(&meta)?;
    let total = from.last_seq()?.unwrap_or(0);
    // The texts still stored (erased ones have none), spread over the batches of events.
    let mut texts: Vec<([u8; 32], TextRecord)> = Vec::new();
    for (commitment, record) in from.texts_in_file_order()? {
        if let Some(record) = record? {
            texts.push((commitment, record));
        }
    }
    let batches = (total as usize).div_ceil(BATCH).max(1);
    let per_batch = texts.len().div_ceil(batches);
    let mut texts = texts.into_iter();
    let mut copied = Copied {
        events: 0,
        texts: 0,
        checkpoints: 0,
    };
    let mut batch = Batch::default();
    let mut events = from.events_from(0);
    loop {
        let next = events.next().transpose()?;
        let last = next.is_none();
        if let Some((seq, bytes)) = next {
            let session = session_of(&bytes)
                .map_err(|e| LedgerError::Corrupt(format!("event {seq}: {e}")))?;
            batch.events.push(StagedEvent {
                seq,
                bytes,
                session,
            });
        }
        if batch.events.len() == BATCH || (last && !batch.events.is_empty()) {
            batch.texts = if last {
                texts.by_ref().collect()
            } else {
                texts.by_ref().take(per_batch).collect()
            };
            copied.events += batch.events.len() as u64;
            copied.texts += batch.texts.len() as u64;
            to.append_batch(&batch)?;
            to.sync()?;
            progress(copied.events, total);
            batch = Batch::default();
        }
        if last {
            break;
        }
    }
    for checkpoint in checkpoints {
        to_checkpoints.append(checkpoint)?;
        copied.checkpoints += 1;
    }
    Ok(copied)
}

/// The session an event is indexed under: its `sessionId`, when it has one.
fn session_of(bytes: &[u8]) -> Result<Option<SessionId>, String> {
    #[derive(serde::Deserialize)]
    struct Envelope {
        #[serde(rename = "sessionId", default)]
        session_id: Option<String>,
    }
    let envelope: Envelope = serde_json::from_slice(bytes).map_err(|e| e.to_string())?;
    envelope
        .session_id
        .map(|raw| SessionId::parse(&raw).ok_or_else(|| format!("session id {raw:?}")))
        .transpose()
}
