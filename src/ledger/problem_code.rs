//! Closed sets of wire codes declared from one table ([`wire_codes`]): the refusals' codes
//! (`app::ErrorCode`), the export verifier's (`audit/`) and here [`LogProblem`], what
//! `thinkledger verify` reports of a stored ledger and its checkpoints. Each code's wire string
//! is a persisted contract (events, JSON reports, scripts, the docs list them): a variant may be
//! added, never renamed.
//!
//! Knows no store and no event: only the names.

/// Declares a closed set of codes from one table: the enum, `ALL`, `as_str`, `Display`,
/// serialization as the wire string, and comparison with a string (for tests and callers that
/// match on the wire form).
macro_rules! wire_codes {
    ($(#[$meta:meta])* $name:ident { $($variant:ident => $wire:literal,)* }) => {
        $(#[$meta])*
        #[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
        pub enum $name {
            $(
                #[doc = concat!("`", $wire, "`")]
                $variant,
            )*
        }

        impl $name {
            /// Every code, in declaration order.
            pub const ALL: &[$name] = &[$($name::$variant,)*];

            /// The code as reports carry it.
            pub const fn as_str(self) -> &'static str {
                match self {
                    $($name::$variant => $wire,)*
                }
            }
        }

        impl std::fmt::Display for $name {
            fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                f.write_str(self.as_str())
            }
        }

        impl serde::Serialize for $name {
            fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
                s.serialize_str(self.as_str())
            }
        }

        impl PartialEq<&str> for $name {
            fn eq(&self, other: &&str) -> bool {
                self.as_str() == *other
            }
        }
    };
}
pub(crate) use wire_codes;

wire_codes! {
    /// What `thinkledger verify` found wrong with a stored ledger (docs/ledger-format.md §7).
    LogProblem {
        Gap => "gap",
        Unparseable => "unparseable",
        SeqMismatch => "seq_mismatch",
        NotCanonical => "not_canonical",
        UnknownVersion => "unknown_version",
        ForeignLedger => "foreign_ledger",
        BrokenLink => "broken_link",
        HashMismatch => "hash_mismatch",
        TextMissing => "text_missing",
        TextMismatch => "text_mismatch",
        TextNotErased => "text_not_erased",
        CheckpointSignature => "checkpoint_signature",
        CheckpointBeyondLog => "checkpoint_beyond_log",
        CheckpointMismatch => "checkpoint_mismatch",
        CheckpointsInconsistent => "checkpoints_inconsistent",
        CheckpointUnchecked => "checkpoint_unchecked",
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_code_has_one_wire_string_and_serializes_as_it() {
        let mut seen = std::collections::BTreeSet::new();
        for code in LogProblem::ALL {
            assert!(seen.insert(code.as_str()), "{code} twice");
            assert_eq!(code.to_string(), code.as_str());
            assert_eq!(
                serde_json::to_value(code).ok(),
                Some(serde_json::json!(code.as_str()))
            );
            assert!(*code == code.as_str());
        }
    }

    /// docs/ledger-format.md names every code `verify` reports.
    #[test]
    fn the_ledger_format_names_every_code() {
        let doc = include_str!("../../docs/ledger-format.md");
        for code in LogProblem::ALL {
            assert!(
                doc.contains(&format!("`{}`", code.as_str())),
                "docs/ledger-format.md does not name `{code}`"
            );
        }
    }
}
