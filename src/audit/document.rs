//! The audit export document, `thinkledger-audit/1`: its members, its canonical bytes and the
//! exact text its export signature signs.
//!
//! Owns the shape of the document and nothing about how it is filled (`build`) or checked
//! (`verify`). Every member is plain JSON so that an independent verifier needs no thinkledger
//! code: see docs/ledger-format.md §9.

use std::collections::BTreeMap;

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::events::SessionId;
use crate::ledger::LedgerError;
use crate::ledger::canonical::canonical_bytes;
use crate::ledger::hash::audit_export_digest;

/// The `format` member of every export this build writes and reads.
pub const FORMAT: &str = "thinkledger-audit/1";

/// The member that holds the export signature; the digest it signs covers every other member.
pub const SIGNATURE_MEMBER: &str = "exportSignature";

/// Which events an export was asked for.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(untagged)]
pub enum Selection {
    /// Every event recorded against one session. Proves nothing about events of that session
    /// that are left out (see docs/audit.md); a seq range does.
    Session {
        #[serde(rename = "sessionId")]
        #[schemars(with = "String")]
        session_id: SessionId,
    },
    /// Every event with `fromSeq ≤ seq ≤ toSeq`, without gaps.
    Range {
        #[serde(rename = "fromSeq")]
        from_seq: u64,
        #[serde(rename = "toSeq")]
        to_seq: u64,
    },
}

impl Selection {
    /// Whether the event at `seq`, recorded against `session`, belongs to this selection.
    pub fn selects(&self, seq: u64, session: Option<&str>) -> bool {
        match self {
            Selection::Session { session_id } => session == Some(session_id.as_str()),
            Selection::Range { from_seq, to_seq } => (*from_seq..=*to_seq).contains(&seq),
        }
    }
}

/// One exported event: the stored event object, unchanged, beside its inclusion proof. The
/// event is kept apart from the proof so that its canonical bytes, which the document embeds
/// verbatim, are exactly the bytes that were hashed and stored.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct ExportedEvent {
    /// The event as stored (docs/ledger-format.md §3), `hash` included.
    #[schemars(with = "serde_json::Map<String, Value>")]
    pub event: Value,
    /// RFC 9162 inclusion proof of leaf `seq − 1` in the tree of the checkpoint, lowest node
    /// first, as 64 hex digits each.
    pub inclusion_proof: Vec<String>,
}

/// What the export holds for one text commitment referenced by an exported event.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(untagged)]
pub enum ExportedText {
    /// The text and its salt: the commitment can be re-derived.
    Present {
        /// The 32-byte salt, 64 hex digits.
        salt: String,
        text: String,
    },
    /// The text was erased by the event at this seq, which the export includes (with its
    /// proof) and whose `TextsErased` fact names the commitment.
    Erased {
        #[serde(rename = "erasedBySeq")]
        erased_by_seq: u64,
    },
}

/// Proof that the tree of an earlier checkpoint is a prefix of the export's checkpoint tree.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct ConsistencyProof {
    /// Tree size of the earlier checkpoint.
    pub from_size: u64,
    /// Its root hash, 64 hex digits.
    pub from_root: String,
    /// RFC 9162 consistency proof from `fromSize` to the checkpoint's size, lowest node first.
    pub proof: Vec<String>,
}

/// An offline-verifiable audit export (`thinkledger-audit/1`), written in RFC 8785 form.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct AuditExport {
    /// Always [`FORMAT`].
    pub format: String,
    /// The ledger every event belongs to.
    pub ledger_id: String,
    /// When the export was made (the server's claim, like every timestamp it writes).
    pub generated_at: String,
    /// What was asked for.
    pub selection: Selection,
    /// The ledger's C2SP verifier key, `thinkledger/<ledgerId>+<key id>+<base64>`. A reviewer
    /// should pin the key obtained out of band instead of trusting this member.
    pub public_key: String,
    /// The signed checkpoint (C2SP signed note) every inclusion proof leads to.
    pub checkpoint: String,
    /// The selected events, plus any erasure event a text mark relies on, ascending by seq.
    pub events: Vec<ExportedEvent>,
    /// Every text commitment the events reference, by commitment.
    pub texts: BTreeMap<String, ExportedText>,
    /// Present when the export was asked to prove it extends an earlier checkpoint.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub consistency: Option<ConsistencyProof>,
    /// C2SP signed note by the ledger key over [`signed_body`] of this document.
    pub export_signature: String,
    /// RFC 3161 time-stamp tokens of earlier checkpoints of this log, when the ledger kept any.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub timestamps: Vec<ExportedTimestamp>,
}

/// A time-stamp token of a checkpoint the export's checkpoint extends: proof that the first
/// `size` events existed by the token's time (docs/ledger-format.md §10.5).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct ExportedTimestamp {
    /// The stamped checkpoint's signed note (C2SP), as signed; the token stamps the SHA-256 of
    /// its UTF-8 bytes.
    pub checkpoint: String,
    /// RFC 9162 consistency proof from the stamped checkpoint's tree to the export's
    /// checkpoint's tree, lowest node first, 64 hex digits each (empty when they are one).
    pub consistency: Vec<String>,
    /// The RFC 3161 `TimeStampToken` (DER `ContentInfo`), in standard base64 with padding.
    pub token: String,
}

impl AuditExport {
    /// The document as JSON.
    pub fn to_value(&self) -> Result<Value, LedgerError> {
        serde_json::to_value(self)
            .map_err(|e| LedgerError::NotCanonicalizable(format!("export does not serialize: {e}")))
    }

    /// The document in RFC 8785 form: the bytes to write to a file.
    pub fn to_canonical_bytes(&self) -> Result<Vec<u8>, LedgerError> {
        canonical_bytes(&self.to_value()?)
    }
}

/// Digest the export signature covers: of the canonical bytes of the document without its
/// [`SIGNATURE_MEMBER`] (whether or not the given value has one).
pub fn document_digest(document: &Value) -> Result<String, LedgerError> {
    let bytes = match document {
        Value::Object(map) if map.contains_key(SIGNATURE_MEMBER) => {
            let mut map = map.clone();
            map.remove(SIGNATURE_MEMBER);
            canonical_bytes(&Value::Object(map))?
        }
        other => canonical_bytes(other)?,
    };
    Ok(audit_export_digest(&bytes))
}

/// The note text the export signature signs: the format, the ledger's origin and the digest,
/// one per line. Its second line is not a decimal number, so it can never parse as a checkpoint.
pub fn signed_body(origin: &str, digest: &str) -> String {
    format!("{FORMAT}\n{origin}\n{digest}\n")
}
