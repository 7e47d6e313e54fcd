//! The export's `timestamps` member (docs/ledger-format.md §10.5): which kept time-stamp token
//! an export carries, and its offline check.
//!
//! An export's own checkpoint is usually signed for it, moments before, so its token does not
//! exist yet; the export carries instead the token of the latest stamped checkpoint its
//! checkpoint extends, with the consistency proof between the two trees. A verifier that trusts
//! the TSA's certificate then knows that the first `size` events existed at the token's time.
//! The token's RFC 3161 form is `rfc3161`'s; this module knows what is stamped (the SHA-256 of
//! the checkpoint's signed note) and how the stamp ties to the export. No store, no network.

use crate::audit::problem_code::ExportCode;
use base64::Engine;
use base64::engine::general_purpose::STANDARD;
use serde::Serialize;
use serde_json::Value;
use sha2::{Digest, Sha256};

use super::AuditError;
use super::document::ExportedTimestamp;
use super::rfc3161::{check_token, read_certificates};
use super::verify::ExportProblem;
use crate::ledger::LogView;
use crate::ledger::checkpoint::{Checkpoint, NoteVerifier, open_note};
use crate::ledger::hash::{hex, parse_hex32};
use crate::ledger::merkle::{Blake3Hasher, verify_consistency};
use crate::ledger::notary::parse_signed;
use crate::ledger::timestamps::KeptTimestamp;

/// What a time-stamp token stamps for a checkpoint: the SHA-256 of its signed note's UTF-8
/// bytes, exactly as signed (body, blank line, signature lines).
pub fn checkpoint_digest(note: &str) -> [u8; 32] {
    Sha256::digest(note.as_bytes()).into()
}

/// The `timestamps` member of an export whose checkpoint is `current`: the latest of `kept`
/// whose checkpoint is of this log and extended by `current`, with the consistency proof from
/// it; empty when none fits.
pub fn carried(
    view: &dyn LogView,
    kept: &[KeptTimestamp],
    current: &Checkpoint,
) -> Result<Vec<ExportedTimestamp>, AuditError> {
    for stamp in kept.iter().rev() {
        let Ok(signed) = parse_signed(String::new(), stamp.note.clone()) else {
            continue;
        };
        let stamped = &signed.checkpoint;
        let size = stamped.size();
        if stamped.origin() != current.origin() || size == 0 || size > current.size() {
            continue;
        }
        if view.root_at(size)? != *stamped.root() {
            continue;
        }
        let consistency = if size == current.size() {
            Vec::new()
        } else {
            view.consistency_proof(size, current.size())?
        };
        return Ok(vec![ExportedTimestamp {
            checkpoint: stamp.note.clone(),
            consistency: consistency.iter().map(|node| hex(node)).collect(),
            token: STANDARD.encode(&stamp.token),
        }]);
    }
    Ok(Vec::new())
}

/// A token that held: the first `checkpointSize` events existed by `genTime`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct TimestampSeen {
    pub checkpoint_size: u64,
    /// The TSA's time (RFC 3339 UTC).
    pub gen_time: String,
    /// The subject of the TSA's signing certificate.
    pub signer: String,
}

/// What checking the `timestamps` member found.
#[derive(Debug, Default)]
pub struct TimestampsChecked {
    pub problems: Vec<ExportProblem>,
    pub notes: Vec<String>,
    pub seen: Vec<TimestampSeen>,
}

impl TimestampsChecked {
    fn fail(&mut self, code: ExportCode, path: impl Into<String>, detail: impl Into<String>) {
        self.problems.push(ExportProblem {
            code,
            seq: None,
            path: path.into(),
            detail: detail.into(),
        });
    }
}

/// Checks the `timestamps` member (`value`) of an export whose checkpoint is `current`, signed
/// by `key` under `origin`; the tokens themselves against the certificate(s) in `tsa_cert`
/// (PEM or DER) when given, which also makes a missing member a failure.
pub fn check_timestamps(
    value: Option<&Value>,
    current: Option<&Checkpoint>,
    key: Option<&NoteVerifier>,
    origin: Option<&str>,
    tsa_cert: Option<&[u8]>,
) -> TimestampsChecked {
    let mut out = TimestampsChecked::default();
    let trusted = match tsa_cert.map(read_certificates) {
        Some(Ok(certs)) => Some(certs),
        Some(Err(e)) => {
            out.fail(
                ExportCode::BadTsaCert,
                "--tsa-cert",
                format!("{e}; give the TSA's (or its CA's) certificate, PEM or DER"),
            );
            None
        }
        None => None,
    };
    let entries = match value {
        None => {
            if tsa_cert.is_some() {
                out.fail(
                    ExportCode::TimestampsMissing,
                    "--tsa-cert",
                    "the export carries no time-stamp token (no `timestamps` member): export \
                     again from a ledger served with --timestamp-authority once a checkpoint \
                     was stamped (docs/audit.md, \"Time anchoring\")",
                );
            }
            return out;
        }
        Some(Value::Array(entries)) => entries,
        Some(_) => {
            out.fail(ExportCode::Malformed, "$.timestamps", "must be an array");
            return out;
        }
    };
    if entries.is_empty() && tsa_cert.is_some() {
        out.fail(
            ExportCode::TimestampsMissing,
            "--tsa-cert",
            "the export's `timestamps` member is empty",
        );
    }
    for (i, entry) in entries.iter().enumerate() {
        let at = format!("$.timestamps[{i}]");
        let Some(stamp) = entry_fields(&mut out, entry, &at) else {
            continue;
        };
        let size = stamped_checkpoint(&mut out, &stamp, current, key, origin, &at);
        let Some(trusted) = &trusted else {
            continue;
        };
        let token = match STANDARD.decode(stamp.token) {
            Ok(token) => token,
            Err(e) => {
                out.fail(
                    ExportCode::TimestampMalformed,
                    format!("{at}.token"),
                    format!("not standard base64: {e}"),
                );
                continue;
            }
        };
        match check_token(&token, &checkpoint_digest(stamp.note), trusted) {
            Ok(seen) => {
                if let Some(size) = size {
                    out.seen.push(TimestampSeen {
                        checkpoint_size: size,
                        gen_time: seen.gen_time,
                        signer: seen.signer,
                    });
                }
            }
            Err(e) => out.fail(e.code(), format!("{at}.token"), e.to_string()),
        }
    }
    if trusted.is_none() && tsa_cert.is_none() && !entries.is_empty() {
        out.notes.push(format!(
            "{} time-stamp token(s) not checked: give the TSA's certificate with --tsa-cert",
            entries.len()
        ));
    }
    if let (Some(latest), Some(current)) =
        (out.seen.iter().map(|s| s.checkpoint_size).max(), current)
        && latest < current.size()
    {
        out.notes.push(format!(
            "events after seq {latest} are not covered by a time-stamp (their checkpoint had \
             not been stamped when the export was made)"
        ));
    }
    out
}

/// The members of one entry.
struct Entry<'v> {
    note: &'v str,
    consistency: Vec<[u8; 32]>,
    token: &'v str,
}

fn entry_fields<'v>(out: &mut TimestampsChecked, entry: &'v Value, at: &str) -> Option<Entry<'v>> {
    let Some(object) = entry.as_object() else {
        out.fail(
            ExportCode::Malformed,
            at,
            "must be {\"checkpoint\", \"consistency\", \"token\"}",
        );
        return None;
    };
    for name in object.keys() {
        if !["checkpoint", "consistency", "token"].contains(&name.as_str()) {
            out.fail(
                ExportCode::UnknownMember,
                format!("{at}.{name}"),
                "not a member of a time-stamp entry",
            );
        }
    }
    let note = object.get("checkpoint").and_then(Value::as_str);
    let token = object.get("token").and_then(Value::as_str);
    let consistency = object
        .get("consistency")
        .and_then(Value::as_array)
        .and_then(|nodes| {
            nodes
                .iter()
                .map(|node| node.as_str().and_then(parse_hex32))
                .collect::<Option<Vec<_>>>()
        });
    match (note, consistency, token) {
        (Some(note), Some(consistency), Some(token)) => Some(Entry {
            note,
            consistency,
            token,
        }),
        _ => {
            out.fail(
                ExportCode::Malformed,
                at,
                "checkpoint and token must be strings, consistency an array of 64 hex digits each",
            );
            None
        }
    }
}

/// The stamped checkpoint is signed by the ledger's key and extended by the export's
/// checkpoint (`timestamp_checkpoint` otherwise); its size when it parses.
fn stamped_checkpoint(
    out: &mut TimestampsChecked,
    stamp: &Entry<'_>,
    current: Option<&Checkpoint>,
    key: Option<&NoteVerifier>,
    origin: Option<&str>,
    at: &str,
) -> Option<u64> {
    let path = format!("{at}.checkpoint");
    match key {
        Some(key) => {
            if let Err(e) = open_note(stamp.note, std::slice::from_ref(key)) {
                out.fail(
                    ExportCode::TimestampCheckpoint,
                    &path,
                    format!("the stamped checkpoint's signature does not verify: {e}"),
                );
            }
        }
        None => out.fail(
            ExportCode::TimestampCheckpoint,
            &path,
            "no usable key to check the stamped checkpoint with",
        ),
    }
    let stamped = match parse_signed(String::new(), stamp.note.to_owned()) {
        Ok(signed) => signed.checkpoint,
        Err(e) => {
            out.fail(
                ExportCode::TimestampCheckpoint,
                &path,
                format!("not a signed checkpoint: {e}"),
            );
            return None;
        }
    };
    if let Some(origin) = origin
        && stamped.origin() != origin
    {
        out.fail(
            ExportCode::TimestampCheckpoint,
            &path,
            format!(
                "the stamped checkpoint is for {}, this ledger is {origin}",
                stamped.origin()
            ),
        );
    }
    if let Some(current) = current {
        let verdict = verify_consistency(
            &Blake3Hasher,
            stamped.size(),
            current.size(),
            stamped.root(),
            current.root(),
            &stamp.consistency,
        );
        if let Err(e) = verdict {
            out.fail(
                ExportCode::TimestampCheckpoint,
                format!("{at}.consistency"),
                format!(
                    "the export's checkpoint does not extend the stamped checkpoint of {} \
                     events: {e}",
                    stamped.size()
                ),
            );
        }
    }
    Some(stamped.size())
}

#[cfg(test)]
mod tests;
