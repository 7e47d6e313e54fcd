//! What the export is signed with: the signed checkpoint (its note against the keys, a kept
//! checkpoint's countersignatures), the export signature over the signed body, and the digest.

use crate::audit::problem_code::ExportCode;
use serde_json::value::RawValue;
use serde_json::{Map, Value};

use super::{Check, offset_in, parse, utf16_order};
use crate::audit::document::{SIGNATURE_MEMBER, signed_body};
use crate::ledger::LedgerError;
use crate::ledger::canonical::canonical_bytes;
use crate::ledger::checkpoint::{Checkpoint, NoteVerifier, open_note};
use crate::ledger::hash::AuditExportHasher;

impl Check {
    /// The signed checkpoint, parsed even when its signature fails so that the proofs can
    /// still be judged against it.
    pub(super) fn checkpoint(
        &mut self,
        doc: &Map<String, Value>,
        trusted: Option<&NoteVerifier>,
        origin: Option<&str>,
    ) -> Option<Checkpoint> {
        let note = self.string(doc, "$", "checkpoint")?;
        let checkpoint =
            self.signed_checkpoint(note, trusted, origin, "checkpoint", "$.checkpoint");
        self.summary.checkpoint_size = checkpoint.as_ref().map(Checkpoint::size);
        checkpoint
    }

    /// Opens a signed checkpoint note; `what` names it in problem codes (`checkpoint_…`).
    pub(super) fn signed_checkpoint(
        &mut self,
        note: &str,
        trusted: Option<&NoteVerifier>,
        origin: Option<&str>,
        what: &'static str,
        path: &str,
    ) -> Option<Checkpoint> {
        let (signature_code, unparseable_code) = match what {
            "checkpoint" => (
                ExportCode::CheckpointSignature,
                ExportCode::CheckpointUnparseable,
            ),
            _ => (
                ExportCode::SinceCheckpointInvalid,
                ExportCode::SinceCheckpointInvalid,
            ),
        };
        match trusted {
            Some(key) => {
                if let Err(e) = open_note(note, std::slice::from_ref(key)) {
                    self.fail(
                        signature_code,
                        None,
                        path,
                        format!("the {what} signature does not verify: {e}"),
                    );
                }
            }
            None => self.fail(
                signature_code,
                None,
                path,
                format!("no usable key to check the {what} with"),
            ),
        }
        let Some(body) = note.rfind("\n\n").and_then(|at| note.get(..=at)) else {
            self.fail(
                unparseable_code,
                None,
                path,
                "not a signed note: no blank line before the signatures",
            );
            return None;
        };
        let checkpoint = match Checkpoint::parse_body(body) {
            Ok(checkpoint) => checkpoint,
            Err(e) => {
                self.fail(
                    unparseable_code,
                    None,
                    path,
                    format!("not a checkpoint: {e}"),
                );
                return None;
            }
        };
        if let Some(origin) = origin
            && checkpoint.origin() != origin
        {
            self.fail(
                ExportCode::OriginMismatch,
                None,
                path,
                format!(
                    "the {what} is for {}, this ledger is {origin}",
                    checkpoint.origin()
                ),
            );
        }
        Some(checkpoint)
    }

    /// The signature must verify (`export_signature`) and sign this document's digest
    /// (`export_digest_mismatch`). Both are judged whatever the other says: the digest is
    /// compared with the note's body even when its signature fails or no key can check it.
    pub(super) fn export_signature(
        &mut self,
        bytes: &[u8],
        members: &[(String, &RawValue)],
        doc: &Map<String, Value>,
        trusted: Option<&NoteVerifier>,
        origin: Option<&str>,
    ) {
        let path = "$.exportSignature";
        let Some(note) = self.string(doc, "$", SIGNATURE_MEMBER) else {
            return;
        };
        match trusted {
            None => self.fail(
                ExportCode::ExportSignature,
                None,
                path,
                "no usable key to check the export signature with",
            ),
            Some(key) => {
                if let Err(e) = open_note(note, std::slice::from_ref(key)) {
                    self.fail(
                        ExportCode::ExportSignature,
                        None,
                        path,
                        format!("the export signature does not verify: {e}"),
                    );
                }
            }
        }
        // The body is the text up to and including the first `\n` of the last `\n\n`.
        let Some(body) = note.rfind("\n\n").and_then(|at| note.get(..=at)) else {
            self.fail(
                ExportCode::ExportDigestMismatch,
                None,
                path,
                "not a signed note: no blank line before the signatures, so no digest is signed",
            );
            return;
        };
        let digest = match self.digest(bytes, members) {
            Ok(digest) => digest,
            Err(e) => {
                self.fail(
                    ExportCode::ExportDigestMismatch,
                    None,
                    path,
                    format!("the document cannot be digested: {e}"),
                );
                return;
            }
        };
        if body != signed_body(origin.unwrap_or_default(), &digest) {
            self.fail(
                ExportCode::ExportDigestMismatch,
                None,
                path,
                format!(
                    "the note signs another document (this one digests to {digest}): the export \
                     was changed after it was signed"
                ),
            );
        }
    }

    /// The digest the export signature covers: of the canonical document without its
    /// signature. A canonical file is hashed as it stands, the signature member cut out; any
    /// other is canonicalized member by member (the events one at a time), never whole.
    fn digest(&self, bytes: &[u8], members: &[(String, &RawValue)]) -> Result<String, LedgerError> {
        let mut hasher = AuditExportHasher::new();
        if self.canonical {
            let Some(i) = members
                .iter()
                .position(|(name, _)| name == SIGNATURE_MEMBER)
            else {
                hasher.update(bytes);
                return Ok(hasher.finalize());
            };
            let raw = members[i].1.get();
            let value_end = offset_in(bytes, raw) + raw.len();
            // `,"exportSignature":…`, or `"exportSignature":…,` when it comes first.
            let key_len = SIGNATURE_MEMBER.len() + 3;
            let (cut_start, cut_end) = if i > 0 {
                (offset_in(bytes, raw) - key_len - 1, value_end)
            } else if members.len() > 1 {
                (1, value_end + 1)
            } else {
                (1, value_end)
            };
            hasher.update(&bytes[..cut_start]);
            hasher.update(&bytes[cut_end..]);
            return Ok(hasher.finalize());
        }
        // Repeated names keep their last value, as a JSON parser does.
        let mut sorted: Vec<&(String, &RawValue)> = Vec::new();
        for member in members.iter().rev() {
            if member.0 != SIGNATURE_MEMBER && !sorted.iter().any(|m| m.0 == member.0) {
                sorted.push(member);
            }
        }
        sorted.sort_by(|a, b| utf16_order(&a.0, &b.0));
        hasher.update(b"{");
        for (i, (name, raw)) in sorted.into_iter().enumerate() {
            if i > 0 {
                hasher.update(b",");
            }
            hasher.update(&canonical_bytes(&Value::String(name.clone()))?);
            hasher.update(b":");
            let items = (name == "events")
                .then(|| serde_json::from_str::<Vec<&RawValue>>(raw.get()).ok())
                .flatten();
            match items {
                Some(items) => {
                    hasher.update(b"[");
                    for (j, item) in items.iter().enumerate() {
                        if j > 0 {
                            hasher.update(b",");
                        }
                        hasher.update(&canonical_bytes(&parse(item)?)?);
                    }
                    hasher.update(b"]");
                }
                None => hasher.update(&canonical_bytes(&parse(raw)?)?),
            }
        }
        hasher.update(b"}");
        Ok(hasher.finalize())
    }
}
