//! Building an export from a [`LogView`]: which events go in (the selection, plus the erasure
//! events its text marks rely on), their inclusion proofs to the latest signed checkpoint, their
//! texts, an optional consistency proof from an earlier checkpoint, and the export signature.
//!
//! Reads the log only through `LogView`. Knows nothing of where the view comes from, the CLI or
//! MCP; takes the `generatedAt` time from its caller (it reads no clock).

use std::collections::{BTreeMap, BTreeSet};
use std::io::{BufWriter, Write};

use serde_json::Value;

use super::AuditError;
use super::document::{
    AuditExport, ConsistencyProof, ExportedText, FORMAT, Selection, signed_body,
};
use crate::ledger::canonical::canonical_bytes;
use crate::ledger::checkpoint::{Checkpoint, kept_note, open_note, sign_note};
use crate::ledger::hash::{AuditExportHasher, hex, parse_hex32};
use crate::ledger::keyfile::key_name;
use crate::ledger::merkle::{Blake3Hasher, MerkleHasher};
use crate::ledger::timestamps::KeptTimestamp;
use crate::ledger::{LedgerError, LogView, SignedCheckpoint, TextState};

/// How to build an export, beyond what to select.
pub struct ExportOptions<'a> {
    /// An earlier signed checkpoint (its note text, as saved) the export must prove it extends.
    pub since_checkpoint: Option<&'a str>,
    /// The `generatedAt` member (RFC 3339 UTC, as [`crate::ledger::format_timestamp`] writes it).
    pub generated_at: String,
    /// Called with (events done, events in all) while proofs are gathered.
    pub progress: Option<&'a dyn Fn(u64, u64)>,
    /// Asked before each event: whether the caller has given up (the build then stops with
    /// [`AuditError::Cancelled`]).
    pub cancelled: Option<&'a dyn Fn() -> bool>,
    /// The time-stamp tokens the ledger kept (`ledger::timestamps`); the export carries the
    /// latest its checkpoint extends (docs/ledger-format.md §10.5).
    pub timestamps: &'a [KeptTimestamp],
}

/// Builds and signs an export of `selection` as `options` say, held whole in memory: for the
/// small exports an MCP client receives. Large exports go through [`write_export`].
pub fn build_export_with(
    view: &dyn LogView,
    selection: &Selection,
    options: &ExportOptions<'_>,
) -> Result<AuditExport, AuditError> {
    let mut bytes = Vec::new();
    write_export(view, selection, options, &mut bytes)?;
    serde_json::from_slice(&bytes).map_err(|e| {
        LedgerError::NotCanonicalizable(format!("the export does not read back: {e}")).into()
    })
}

/// What [`write_export`] wrote.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ExportWritten {
    /// Events in the export (the selection plus the erasure events its texts rely on).
    pub events: u64,
    /// Length of the document in bytes.
    pub bytes: u64,
}

/// Builds and signs an export of `selection` as `options` say, writing its RFC 8785 bytes to
/// `sink` as they are made: memory stays bounded by the selected seqs and the texts, not by
/// the events. The stored event bytes (checked canonical) are copied verbatim; the signature,
/// which signs the digest of the document without it, is spliced in before `format` (its
/// canonical place), the small members after it being held until then. Nothing is written
/// when the export is refused before its events; a failure while writing leaves `sink` partial.
pub fn write_export(
    view: &dyn LogView,
    selection: &Selection,
    options: &ExportOptions<'_>,
    sink: &mut dyn Write,
) -> Result<ExportWritten, AuditError> {
    let ledger_id = view.meta().ledger_id.clone();
    let origin = key_name(&ledger_id);
    let signer = view.signer().ok_or(AuditError::NoSigningKey)?;
    let verifier = signer.verifier();

    let selected = selected_seqs(view, selection)?;
    let (seqs, texts) = gather(view, selected)?;
    let needed = seqs.last().copied().unwrap_or(0);

    let signed = covering_checkpoint(view, needed, &origin)?;
    let checkpoint = &signed.checkpoint;
    let size = checkpoint.size();
    let consistency = match options.since_checkpoint {
        Some(note) => Some(consistency_from(view, note, checkpoint, &verifier)?),
        None => None,
    };

    // Members in canonical (sorted) order: checkpoint, consistency, events, exportSignature,
    // format, generatedAt, ledgerId, publicKey, selection, texts, timestamps.
    let mut out = Digesting {
        sink: BufWriter::with_capacity(1 << 20, sink),
        hasher: AuditExportHasher::new(),
        written: 0,
    };
    out.put(b"{\"checkpoint\":")?;
    out.put(&canonical_string(&signed.note)?)?;
    if let Some(consistency) = &consistency {
        out.put(b",\"consistency\":")?;
        out.put(&canonical_value(consistency)?)?;
    }
    out.put(b",\"events\":[")?;
    let total = write_events(&mut out, view, &seqs, size, options)?;
    out.put(b"]")?;

    let tail = tail(
        view,
        selection,
        options,
        &ledger_id,
        &verifier.to_vkey(),
        &texts,
        checkpoint,
    )?;
    out.hasher.update(&tail);
    let digest = out.hasher.finalize();
    let signature = sign_note(signer, &signed_body(&origin, &digest))?;
    out.write(b",\"exportSignature\":")?;
    out.write(&canonical_string(&signature)?)?;
    out.write(&tail)?;
    out.sink.flush().map_err(LedgerError::Io)?;
    Ok(ExportWritten {
        events: total,
        bytes: out.written,
    })
}

/// The latest signed checkpoint, which must cover the export's last event (`needed`) and be
/// this log's: its origin, and the log's root at its size.
fn covering_checkpoint<'v>(
    view: &'v dyn LogView,
    needed: u64,
    origin: &str,
) -> Result<&'v SignedCheckpoint, AuditError> {
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
    Ok(signed)
}

/// The `events` array's elements, each event's stored bytes verbatim with its inclusion proof
/// to the checkpoint of `size`, reporting progress and stopping when the caller gives up. How
/// many were written.
fn write_events<W: Write>(
    out: &mut Digesting<W>,
    view: &dyn LogView,
    seqs: &[u64],
    size: u64,
    options: &ExportOptions<'_>,
) -> Result<u64, AuditError> {
    let total = u64::try_from(seqs.len()).unwrap_or(u64::MAX);
    let mut element = Vec::new();
    for (done, seq) in (1..).zip(seqs) {
        element.clear();
        if done > 1 {
            element.push(b',');
        }
        element.extend_from_slice(b"{\"event\":");
        element.extend_from_slice(&view.event_bytes(*seq)?);
        element.extend_from_slice(b",\"inclusionProof\":[");
        for (i, node) in view.inclusion_proof(seq - 1, size)?.iter().enumerate() {
            if i > 0 {
                element.push(b',');
            }
            element.push(b'"');
            element.extend_from_slice(hex(node).as_bytes());
            element.push(b'"');
        }
        element.extend_from_slice(b"]}");
        out.put(&element)?;
        if let Some(progress) = options.progress {
            progress(done, total);
        }
        if options.cancelled.is_some_and(|cancelled| cancelled()) {
            return Err(AuditError::Cancelled { done, total });
        }
    }
    Ok(total)
}

/// The members after `exportSignature`, in canonical order (`format`, `generatedAt`,
/// `ledgerId`, `publicKey`, `selection`, `texts`, `timestamps`) and the closing brace: held
/// until the signature over everything is made.
fn tail(
    view: &dyn LogView,
    selection: &Selection,
    options: &ExportOptions<'_>,
    ledger_id: &str,
    public_key: &str,
    texts: &BTreeMap<String, ExportedText>,
    checkpoint: &Checkpoint,
) -> Result<Vec<u8>, AuditError> {
    let mut tail = Vec::new();
    for (name, value) in [
        ("format", canonical_string(FORMAT)?),
        ("generatedAt", canonical_string(&options.generated_at)?),
        ("ledgerId", canonical_string(ledger_id)?),
        ("publicKey", canonical_string(public_key)?),
        ("selection", canonical_value(selection)?),
    ] {
        tail.extend_from_slice(format!(",\"{name}\":").as_bytes());
        tail.extend_from_slice(&value);
    }
    // `texts` entry by entry, never as one value: its names are commitments (64 lowercase hex
    // digits, checked in `gather`), whose byte order is their RFC 8785 (UTF-16) order.
    tail.extend_from_slice(b",\"texts\":{");
    for (i, (commitment, text)) in texts.iter().enumerate() {
        if i > 0 {
            tail.push(b',');
        }
        tail.extend_from_slice(&canonical_string(commitment)?);
        tail.push(b':');
        tail.extend_from_slice(&canonical_value(text)?);
    }
    tail.push(b'}');
    let timestamps = super::timestamps::carried(view, options.timestamps, checkpoint)?;
    if !timestamps.is_empty() {
        tail.extend_from_slice(b",\"timestamps\":");
        tail.extend_from_slice(&canonical_value(&timestamps)?);
    }
    tail.push(b'}');
    Ok(tail)
}

/// The document's bytes on their way to the sink, counted, and (through [`Digesting::put`])
/// fed to the digest the export signature covers.
struct Digesting<W: Write> {
    sink: BufWriter<W>,
    hasher: AuditExportHasher,
    written: u64,
}

impl<W: Write> Digesting<W> {
    /// Writes bytes that the export signature covers.
    fn put(&mut self, bytes: &[u8]) -> Result<(), AuditError> {
        self.hasher.update(bytes);
        self.write(bytes)
    }

    /// Writes bytes without digesting them.
    fn write(&mut self, bytes: &[u8]) -> Result<(), AuditError> {
        self.sink.write_all(bytes).map_err(LedgerError::Io)?;
        self.written += u64::try_from(bytes.len()).unwrap_or(u64::MAX);
        Ok(())
    }
}

/// RFC 8785 bytes of a string, escaped exactly as the canonicalizer escapes it.
fn canonical_string(s: &str) -> Result<Vec<u8>, LedgerError> {
    canonical_bytes(&Value::String(s.to_owned()))
}

/// RFC 8785 bytes of a small member.
fn canonical_value(member: &impl serde::Serialize) -> Result<Vec<u8>, LedgerError> {
    let value = serde_json::to_value(member)
        .map_err(|e| LedgerError::NotCanonicalizable(format!("export does not serialize: {e}")))?;
    canonical_bytes(&value)
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

/// The seqs to export (the selection plus the erasure events its texts rely on, which may rely
/// on more), ascending, and the texts they reference. Each event is read and checked here;
/// only its seq is kept, the bytes are read again when written.
type Gathered = (Vec<u64>, BTreeMap<String, ExportedText>);

fn gather(view: &dyn LogView, selected: Vec<u64>) -> Result<Gathered, AuditError> {
    let mut seqs = BTreeSet::new();
    let mut texts = BTreeMap::new();
    let mut pending: BTreeSet<u64> = selected.into_iter().collect();
    while let Some(seq) = pending.pop_first() {
        if seqs.contains(&seq) {
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
                    if !seqs.contains(&by) {
                        pending.insert(by);
                    }
                    ExportedText::Erased { erased_by_seq: by }
                }
                TextState::Missing => return Err(AuditError::TextMissing { seq, commitment }),
            };
            texts.insert(commitment, text);
        }
        seqs.insert(seq);
    }
    Ok((seqs.into_iter().collect(), texts))
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
    let note = kept_note(note);
    let opened = open_note(&note, std::slice::from_ref(verifier))
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
