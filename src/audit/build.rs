//! Building an export from a [`LogView`]: which events go in (the selection, plus the erasure
//! events its text marks rely on), their inclusion proofs to the latest signed checkpoint, their
//! texts, an optional consistency proof from an earlier checkpoint, and the export signature.
//!
//! Reads the log only through `LogView`. Knows nothing of where the view comes from, the CLI or
//! MCP; takes the `generatedAt` time from its caller (or the clock in [`build_export`]).

use std::collections::{BTreeMap, BTreeSet};

use serde_json::Value;

use super::AuditError;
use super::document::{
    AuditExport, ConsistencyProof, ExportedEvent, ExportedText, FORMAT, Selection, document_digest,
    signed_body,
};
use crate::ledger::canonical::canonical_bytes;
use crate::ledger::checkpoint::{Checkpoint, open_note, sign_note};
use crate::ledger::hash::{hex, parse_hex32};
use crate::ledger::keyfile::key_name;
use crate::ledger::merkle::{Blake3Hasher, MerkleHasher};
use crate::ledger::{LedgerError, LogView, TextState, format_timestamp};

/// How to build an export, beyond what to select.
pub struct ExportOptions<'a> {
    /// An earlier signed checkpoint (its note text, as saved) the export must prove it extends.
    pub since_checkpoint: Option<&'a str>,
    /// The `generatedAt` member (RFC 3339 UTC, as [`format_timestamp`] writes it).
    pub generated_at: String,
    /// Called with (events done, events in all) while proofs are gathered.
    pub progress: Option<&'a dyn Fn(u64, u64)>,
}

/// Builds and signs an export of `selection`, stamped with the current time.
pub fn build_export(
    view: &dyn LogView,
    selection: &Selection,
    since_checkpoint: Option<&str>,
) -> Result<AuditExport, AuditError> {
    build_export_with(
        view,
        selection,
        &ExportOptions {
            since_checkpoint,
            generated_at: format_timestamp(chrono::Utc::now()),
            progress: None,
        },
    )
}

/// Builds and signs an export of `selection` as `options` say.
pub fn build_export_with(
    view: &dyn LogView,
    selection: &Selection,
    options: &ExportOptions<'_>,
) -> Result<AuditExport, AuditError> {
    let ledger_id = view.meta().ledger_id.clone();
    let origin = key_name(&ledger_id);
    let signer = view.signer().ok_or(AuditError::NoSigningKey)?;
    let verifier = signer.verifier();

    let selected = selected_seqs(view, selection)?;
    let (events, texts) = gather(view, selected)?;
    let needed = events.keys().next_back().copied().unwrap_or(0);

    let signed = view.latest_checkpoint().ok_or(AuditError::NoCheckpoint {
        needed,
        latest: None,
    })?;
    let checkpoint = &signed.checkpoint;
    let size = checkpoint.size();
    if size < needed {
        return Err(AuditError::NoCheckpoint {
            needed,
            latest: Some(size),
        });
    }
    if checkpoint.origin() != origin || view.root_at(size)? != *checkpoint.root() {
        return Err(LedgerError::Corrupt(format!(
            "the latest checkpoint ({}, size {size}) does not match this log",
            checkpoint.origin()
        ))
        .into());
    }

    let total = u64::try_from(events.len()).unwrap_or(u64::MAX);
    let mut exported = Vec::with_capacity(events.len());
    for (done, (seq, event)) in (1..).zip(events) {
        let proof = view.inclusion_proof(seq - 1, size)?;
        exported.push(ExportedEvent {
            event,
            inclusion_proof: proof.iter().map(|node| hex(node)).collect(),
        });
        if let Some(progress) = options.progress {
            progress(done, total);
        }
    }

    let consistency = match options.since_checkpoint {
        Some(note) => Some(consistency_from(view, note, checkpoint, &verifier)?),
        None => None,
    };

    let mut export = AuditExport {
        format: FORMAT.to_owned(),
        ledger_id,
        generated_at: options.generated_at.clone(),
        selection: selection.clone(),
        public_key: verifier.to_vkey(),
        checkpoint: signed.note.clone(),
        events: exported,
        texts,
        consistency,
        export_signature: String::new(),
    };
    let digest = document_digest(&export.to_value()?)?;
    export.export_signature = sign_note(signer, &signed_body(&origin, &digest))?;
    Ok(export)
}

/// The seqs `selection` names, ascending; refused when there are none or they are not all in
/// the log.
fn selected_seqs(view: &dyn LogView, selection: &Selection) -> Result<Vec<u64>, AuditError> {
    match selection {
        Selection::Session { session_id } => {
            let seqs = view.session_seqs(session_id)?;
            if seqs.is_empty() {
                return Err(AuditError::EmptySession {
                    session: session_id.to_string(),
                });
            }
            Ok(seqs)
        }
        Selection::Range { from_seq, to_seq } => {
            let len = view.len();
            if *from_seq == 0 || from_seq > to_seq || *to_seq > len {
                return Err(AuditError::InvalidRange {
                    from: *from_seq,
                    to: *to_seq,
                    len,
                });
            }
            Ok((*from_seq..=*to_seq).collect())
        }
    }
}

/// The events to export (the selection plus the erasure events its texts rely on, which may
/// rely on more) and the texts they reference.
type Gathered = (BTreeMap<u64, Value>, BTreeMap<String, ExportedText>);

fn gather(view: &dyn LogView, selected: Vec<u64>) -> Result<Gathered, AuditError> {
    let mut events = BTreeMap::new();
    let mut texts = BTreeMap::new();
    let mut pending: BTreeSet<u64> = selected.into_iter().collect();
    while let Some(seq) = pending.pop_first() {
        if events.contains_key(&seq) {
            continue;
        }
        let event = stored_event(view, seq)?;
        for commitment in crate::ledger::verify::text_refs(&event) {
            if texts.contains_key(&commitment) {
                continue;
            }
            let key = parse_hex32(&commitment).ok_or_else(|| {
                LedgerError::Corrupt(format!("seq {seq} references a malformed commitment"))
            })?;
            let text = match view.text(&key)? {
                TextState::Present(record) => ExportedText::Present {
                    salt: hex(&record.salt),
                    text: record.text,
                },
                TextState::Erased { seq: by } => {
                    if !events.contains_key(&by) {
                        pending.insert(by);
                    }
                    ExportedText::Erased { erased_by_seq: by }
                }
                TextState::Missing => return Err(AuditError::TextMissing { seq, commitment }),
            };
            texts.insert(commitment, text);
        }
        events.insert(seq, event);
    }
    Ok((events, texts))
}

/// The event at `seq` as stored, checked to be in canonical form so that the document embeds
/// exactly the bytes that were hashed.
fn stored_event(view: &dyn LogView, seq: u64) -> Result<Value, AuditError> {
    let bytes = view.event_bytes(seq)?;
    let event: Value = serde_json::from_slice(&bytes)
        .map_err(|e| LedgerError::Corrupt(format!("event {seq} is not JSON: {e}")))?;
    if canonical_bytes(&event)? != bytes {
        return Err(
            LedgerError::Corrupt(format!("event {seq} is not stored in canonical form")).into(),
        );
    }
    Ok(event)
}

/// The consistency proof from the earlier checkpoint `note` to `current`, after checking that
/// this ledger signed it and that the log still extends it.
fn consistency_from(
    view: &dyn LogView,
    note: &str,
    current: &Checkpoint,
    verifier: &crate::ledger::checkpoint::NoteVerifier,
) -> Result<ConsistencyProof, AuditError> {
    let opened = open_note(note, std::slice::from_ref(verifier))
        .map_err(|e| AuditError::ForeignCheckpoint(e.to_string()))?;
    let earlier = Checkpoint::parse_body(opened.text())
        .map_err(|e| AuditError::ForeignCheckpoint(format!("not a checkpoint: {e}")))?;
    if earlier.origin() != current.origin() {
        return Err(AuditError::ForeignCheckpoint(format!(
            "it is for {}, this ledger is {}",
            earlier.origin(),
            current.origin()
        )));
    }
    let (old_size, new_size) = (earlier.size(), current.size());
    if old_size > new_size {
        return Err(AuditError::Rollback { old_size, new_size });
    }
    let proof = if old_size == 0 {
        if *earlier.root() != Blake3Hasher.empty_root() {
            return Err(AuditError::Fork { size: 0 });
        }
        Vec::new()
    } else {
        if view.root_at(old_size)? != *earlier.root() {
            return Err(AuditError::Fork { size: old_size });
        }
        view.consistency_proof(old_size, new_size)?
    };
    Ok(ConsistencyProof {
        from_size: old_size,
        from_root: hex(earlier.root()),
        proof: proof.iter().map(|node| hex(node)).collect(),
    })
}
