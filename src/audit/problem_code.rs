//! The stable codes of the export verifier's problems ([`ExportCode`]), one variant per code
//! docs/ledger-format.md §10.4 lists. Their wire strings are a persisted contract (reports in
//! JSON, reviewers' scripts): a variant may be added, never renamed.
//!
//! Knows nothing but the names.

use crate::ledger::problem_code::wire_codes;

wire_codes! {
    /// What `thinkledger verify-export` found wrong with an export (docs/ledger-format.md §10.4).
    ExportCode {
        BadPinnedKey => "bad_pinned_key",
        BadPublicKey => "bad_public_key",
        BadTsaCert => "bad_tsa_cert",
        BrokenLink => "broken_link",
        CheckpointSignature => "checkpoint_signature",
        CheckpointUnparseable => "checkpoint_unparseable",
        ConsistencyFailed => "consistency_failed",
        ConsistencyMissing => "consistency_missing",
        EmptySelection => "empty_selection",
        ErasureUnbacked => "erasure_unbacked",
        EventMalformed => "event_malformed",
        EventNotCanonical => "event_not_canonical",
        ExportDigestMismatch => "export_digest_mismatch",
        ExportSignature => "export_signature",
        ForeignLedger => "foreign_ledger",
        Fork => "fork",
        Gap => "gap",
        HashMismatch => "hash_mismatch",
        InclusionFailed => "inclusion_failed",
        KeyMismatch => "key_mismatch",
        Malformed => "malformed",
        NotCanonical => "not_canonical",
        NotSelected => "not_selected",
        OriginMismatch => "origin_mismatch",
        OutsideCheckpoint => "outside_checkpoint",
        Rollback => "rollback",
        SeqOrder => "seq_order",
        SinceCheckpointInvalid => "since_checkpoint_invalid",
        TextMalformed => "text_malformed",
        TextMismatch => "text_mismatch",
        TextMissing => "text_missing",
        TextUnreferenced => "text_unreferenced",
        TimestampCheckpoint => "timestamp_checkpoint",
        TimestampImprint => "timestamp_imprint",
        TimestampMalformed => "timestamp_malformed",
        TimestampSignature => "timestamp_signature",
        TimestampUntrusted => "timestamp_untrusted",
        TimestampsMissing => "timestamps_missing",
        UnknownFormat => "unknown_format",
        UnknownMember => "unknown_member",
        UnknownVersion => "unknown_version",
        Unparseable => "unparseable",
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_code_has_one_wire_string_and_serializes_as_it() {
        let mut seen = std::collections::BTreeSet::new();
        for code in ExportCode::ALL {
            assert!(seen.insert(code.as_str()), "{code} twice");
            assert_eq!(code.to_string(), code.as_str());
            assert_eq!(
                serde_json::to_value(code).ok(),
                Some(serde_json::json!(code.as_str()))
            );
        }
    }

    /// §10.4 lists exactly the codes the verifier can report: one variant per listed code.
    #[test]
    fn the_codes_are_the_ones_the_ledger_format_lists() {
        let doc = include_str!("../../docs/ledger-format.md");
        let start = doc.find("### 10.4 Problem codes").expect("§10.4");
        let end = start + doc[start..].find("### 10.5").expect("§10.5");
        let listed: std::collections::BTreeSet<&str> = doc[start..end]
            .split('`')
            .skip(1)
            .step_by(2)
            .filter(|w| !w.is_empty() && w.chars().all(|c| c.is_ascii_lowercase() || c == '_'))
            .collect();
        let ours: std::collections::BTreeSet<&str> =
            ExportCode::ALL.iter().map(|c| c.as_str()).collect();
        assert_eq!(listed, ours);
    }
}
