//! The texts: each against its commitment or its erasure, every reference of an event
//! resolved, and the completeness of the seq range the selection names.

use crate::audit::problem_code::ExportCode;
use std::collections::{BTreeMap, BTreeSet};

use serde_json::{Map, Value};

use super::{Check, EventSeen, References, member};
use crate::audit::document::Selection;
use crate::ledger::hash::{parse_hex32, text_commitment};

impl Check {
    pub(super) fn texts(
        &mut self,
        doc: &Map<String, Value>,
        seen: &BTreeMap<u64, EventSeen>,
        references: &References,
    ) {
        let empty = Map::new();
        let texts = match doc.get("texts") {
            Some(Value::Object(texts)) => texts,
            Some(_) => {
                self.fail(ExportCode::Malformed, None, "$.texts", "must be an object");
                &empty
            }
            None => {
                self.fail(ExportCode::Malformed, None, "$.texts", "missing");
                &empty
            }
        };
        // Erasure events a valid mark relies on.
        let mut backing = BTreeSet::new();
        for (commitment, entry) in texts {
            let path = member("$.texts", commitment);
            let first_seq = references
                .get(commitment)
                .and_then(|places| places.first())
                .map(|(seq, _)| *seq);
            if parse_hex32(commitment).is_none() {
                self.fail(
                    ExportCode::TextMalformed,
                    None,
                    path,
                    "the member name is not a commitment (64 lowercase hex digits)",
                );
                continue;
            }
            if first_seq.is_none() {
                self.fail(
                    ExportCode::TextUnreferenced,
                    None,
                    &path,
                    "no exported event references this commitment",
                );
            }
            let entry = entry.as_object().unwrap_or(&empty);
            let salt = entry.get("salt").and_then(Value::as_str);
            let text = entry.get("text").and_then(Value::as_str);
            let erased_by = entry.get("erasedBySeq").and_then(Value::as_u64);
            match (salt, text, erased_by, entry.len()) {
                (Some(salt), Some(text), None, 2) => {
                    let Some(salt) = parse_hex32(salt) else {
                        self.fail(ExportCode::TextMalformed, first_seq, format!("{path}.salt"), "not 64 lowercase hex digits");
                        continue;
                    };
                    if text_commitment(&salt, text) == *commitment {
                        self.summary.texts_verified += 1;
                    } else {
                        self.fail(
                            ExportCode::TextMismatch,
                            first_seq,
                            path,
                            "salt and text do not re-derive the commitment: the text or its salt was changed",
                        );
                    }
                }
                (None, None, Some(by), 1) => match seen.get(&by) {
                    None => self.fail(
                        ExportCode::ErasureUnbacked,
                        Some(by),
                        format!("{path}.erasedBySeq"),
                        format!("the export does not include event {by}, so this erasure cannot be checked"),
                    ),
                    Some(event) if !event.erases.contains(commitment) => self.fail(
                        ExportCode::ErasureUnbacked,
                        Some(by),
                        format!("{path}.erasedBySeq"),
                        format!("event {by} erases no such commitment"),
                    ),
                    Some(_) => {
                        backing.insert(by);
                        self.summary.texts_erased += 1;
                    }
                },
                _ => self.fail(
                    ExportCode::TextMalformed,
                    first_seq,
                    path,
                    "must be {\"salt\": <64 hex>, \"text\": <string>} or {\"erasedBySeq\": <seq>}",
                ),
            }
        }
        for (commitment, places) in references {
            if !texts.contains_key(commitment) {
                for (seq, path) in places {
                    self.fail(
                        ExportCode::TextMissing,
                        Some(*seq),
                        path.clone(),
                        format!(
                            "the export holds neither the text nor its erasure for {commitment}"
                        ),
                    );
                }
            }
        }
        for (seq, event) in seen.iter() {
            if event.selected {
                self.summary.selected_events += 1;
            } else if backing.contains(seq) {
                self.summary.erasure_events += 1;
            } else {
                self.fail(
                    ExportCode::NotSelected,
                    Some(*seq),
                    format!("$.events[{}]", event.index),
                    "the selection does not name this event, and no text mark relies on it as an erasure",
                );
            }
        }
    }

    /// A seq range must be complete; a session must have at least one event.
    pub(super) fn completeness(&mut self, selection: &Selection, seen: &BTreeMap<u64, EventSeen>) {
        match selection {
            Selection::Range { from_seq, to_seq } => {
                let mut expected = *from_seq;
                let present = seen.range(*from_seq..=*to_seq).map(|(seq, _)| *seq);
                for seq in present.chain(to_seq.checked_add(1)) {
                    if seq > expected {
                        self.fail(
                            ExportCode::Gap,
                            Some(expected),
                            "$.events",
                            format!(
                                "events {expected}..={} of the selected range are missing",
                                seq - 1
                            ),
                        );
                    }
                    expected = seq.saturating_add(1);
                }
            }
            Selection::Session { session_id } => {
                if !seen.values().any(|e| e.selected) {
                    self.fail(
                        ExportCode::EmptySelection,
                        None,
                        "$.events",
                        format!("no event of session {session_id} is included"),
                    );
                }
            }
        }
    }
}
