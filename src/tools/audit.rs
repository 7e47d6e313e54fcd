//! The `export_reasoning_audit` tool of the `audit` family: its MCP definition and its text
//! block, which is the export file itself.

use serde_json::Value;

use super::catalog::{CallerEffect, Effect, ToolEntry, entry};
use crate::app::AuditExportArgs;
use crate::app::EXPORT_REASONING_AUDIT_TOOL;
use crate::audit::AuditExport;
use crate::ledger::canonical::canonical_bytes;

/// The text block: the export in RFC 8785 form, without the call's receipt (`seq`,
/// `eventHash`), byte for byte the file `thinkledger verify-export` checks.
fn export_file(body: &Value) -> String {
    let mut document = body.clone();
    if let Value::Object(map) = &mut document {
        for receipt in ["seq", "eventHash", "idempotentReplay"] {
            map.remove(receipt);
        }
    }
    canonical_bytes(&document)
        .ok()
        .and_then(|bytes| String::from_utf8(bytes).ok())
        .unwrap_or_default()
}

pub(super) fn entries() -> Vec<ToolEntry> {
    vec![entry::<AuditExportArgs, AuditExport>(
        EXPORT_REASONING_AUDIT_TOOL,
        "Export Reasoning Audit",
        "Export a session as an offline-verifiable audit file (thinkledger-audit/1): every event \
         of the session exactly as stored, with a Merkle inclusion proof to the ledger's latest \
         signed checkpoint, the texts behind their commitments (or proof of their erasure), \
         optionally a consistency proof from an earlier checkpoint you kept (since_checkpoint), \
         and a signature by the ledger key over the whole file. The text content is the file: \
         save it byte for byte and check it with `thinkledger verify-export FILE --pubkey KEY`.",
        Effect::Reads,
        export_file,
    )
    .with_caller(CallerEffect::SignsCheckpointFirst)]
}
