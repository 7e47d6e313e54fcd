//! The consistency proof from an earlier checkpoint to the export's.

use crate::audit::problem_code::ExportCode;
use serde_json::{Map, Value};

use super::{Check, VerifyOptions, member};
use crate::ledger::checkpoint::{Checkpoint, NoteVerifier, kept_note};
use crate::ledger::hash::parse_hex32;
use crate::ledger::merkle::{Blake3Hasher, MerkleHasher, NodeHash, verify_consistency};

impl Check {
    pub(super) fn consistency(
        &mut self,
        doc: &Map<String, Value>,
        checkpoint: Option<&Checkpoint>,
        trusted: Option<&NoteVerifier>,
        origin: Option<&str>,
        options: &VerifyOptions<'_>,
    ) {
        let claimed = doc
            .get("consistency")
            .and_then(|value| self.consistency_proof(value, checkpoint));
        let Some(note) = options.since_checkpoint else {
            if let Some((size, _, true)) = claimed {
                self.notes.push(format!(
                    "the export proves its log extends a tree of {size} events, but no earlier \
                     checkpoint was given to anchor it (--since-checkpoint)"
                ));
            }
            return;
        };
        let path = "--since-checkpoint";
        let before = self.problems.len();
        let note = kept_note(note);
        let earlier = self.signed_checkpoint(&note, trusted, origin, "earlier checkpoint", path);
        // An earlier checkpoint that is not this ledger's says nothing about this export.
        let Some(earlier) = earlier.filter(|_| self.problems.len() == before) else {
            return;
        };
        let Some(checkpoint) = checkpoint else {
            return;
        };
        let (size, root) = (earlier.size(), *earlier.root());
        if size > checkpoint.size() {
            self.fail(
                ExportCode::Rollback,
                None,
                "$.checkpoint",
                format!(
                    "the earlier checkpoint covers {size} events, the export's only {}: the log was \
                     rolled back or replaced",
                    checkpoint.size()
                ),
            );
            return;
        }
        let fork = |size: u64| {
            format!(
                "the earlier checkpoint's root for {size} events differs from the root this log \
                 had at that size: the log was rewritten (forked) since"
            )
        };
        if size == checkpoint.size() {
            if root == *checkpoint.root() {
                self.summary.extends_checkpoint = Some(size);
            } else {
                self.fail(ExportCode::Fork, None, "$.checkpoint", fork(size));
            }
            return;
        }
        if size == 0 {
            if root == Blake3Hasher.empty_root() {
                self.summary.extends_checkpoint = Some(0);
            } else {
                self.fail(ExportCode::Fork, None, path, fork(0));
            }
            return;
        }
        // Judged on what the proof claims even when it failed (`consistency_failed`, already
        // reported), so that a proof from the wrong tree is named as such too.
        match (doc.get("consistency"), claimed) {
            (None, _) => self.fail(
                ExportCode::ConsistencyMissing,
                None,
                "$.consistency",
                format!("the export carries no consistency proof; export again with --since-checkpoint (from size {size})"),
            ),
            (Some(_), Some((from, _, _))) if from != size => self.fail(
                ExportCode::ConsistencyMissing,
                None,
                "$.consistency.fromSize",
                format!("the export proves consistency from size {from}, not from size {size} of the given checkpoint"),
            ),
            (Some(_), Some((_, from_root, _))) if from_root != root => {
                self.fail(ExportCode::Fork, None, "$.consistency.fromRoot", fork(size));
            }
            (Some(_), Some((_, _, holds))) => {
                if holds {
                    self.summary.extends_checkpoint = Some(size);
                }
            }
            // Not a proof at all; already reported as malformed.
            (Some(_), None) => {}
        }
    }

    /// Checks the `consistency` member against the checkpoint; returns (fromSize, fromRoot,
    /// whether the proof holds) when the member is well formed.
    fn consistency_proof(
        &mut self,
        value: &Value,
        checkpoint: Option<&Checkpoint>,
    ) -> Option<(u64, NodeHash, bool)> {
        let at = "$.consistency";
        let Some(object) = value.as_object() else {
            self.fail(
                ExportCode::Malformed,
                None,
                at,
                "must be {\"fromSize\", \"fromRoot\", \"proof\"}",
            );
            return None;
        };
        for name in object.keys() {
            if !["fromSize", "fromRoot", "proof"].contains(&name.as_str()) {
                self.fail(
                    ExportCode::UnknownMember,
                    None,
                    member(at, name),
                    "not a member of a consistency proof",
                );
            }
        }
        let from_size = object.get("fromSize").and_then(Value::as_u64);
        let from_root = object
            .get("fromRoot")
            .and_then(Value::as_str)
            .and_then(parse_hex32);
        let proof = self.hashes(object.get("proof"), "$.consistency.proof", None);
        let (Some(from_size), Some(from_root)) = (from_size, from_root) else {
            self.fail(
                ExportCode::Malformed,
                None,
                at,
                "fromSize must be an integer and fromRoot 64 hex digits",
            );
            return None;
        };
        let (Some(proof), Some(checkpoint)) = (proof, checkpoint) else {
            return Some((from_size, from_root, false));
        };
        let hasher = Blake3Hasher;
        let verdict = if from_size == 0 {
            (from_root == hasher.empty_root() && proof.is_empty())
                .then_some(())
                .ok_or_else(|| {
                    "from the empty tree the root is H() and the proof is empty".to_owned()
                })
        } else {
            // m = n included: the proof is empty and the roots are equal (§10.3 step 7).
            verify_consistency(
                &hasher,
                from_size,
                checkpoint.size(),
                &from_root,
                checkpoint.root(),
                &proof,
            )
            .map_err(|e| e.to_string())
        };
        match verdict {
            Ok(()) => Some((from_size, from_root, true)),
            Err(e) => {
                self.fail(
                    ExportCode::ConsistencyFailed,
                    None,
                    "$.consistency.proof",
                    format!(
                        "the checkpoint's tree does not extend the tree of {from_size} events: {e}"
                    ),
                );
                Some((from_size, from_root, false))
            }
        }
    }
}
