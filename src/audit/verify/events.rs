//! Every event of the export: its form against the event schema, canonical bytes, hash, ledger,
//! chain link to the event before it, and its inclusion proof against the signed checkpoint.

use crate::audit::problem_code::ExportCode;
use std::collections::BTreeMap;

use serde_json::value::RawValue;
use serde_json::{Map, Value};

use super::{
    Check, EventSeen, References, VerifyOptions, erased_commitments, member, offset_in, shown,
    text_refs_at,
};
use crate::audit::document::Selection;
use crate::audit::json_schema::event_v1;
use crate::events::ENVELOPE_VERSION;
use crate::ledger::canonical::canonical_bytes;
use crate::ledger::chain;
use crate::ledger::checkpoint::Checkpoint;
use crate::ledger::hash::{event_value_hash, parse_hex32};
use crate::ledger::merkle::{Blake3Hasher, MerkleHasher, NodeHash, verify_inclusion};

impl Check {
    #[allow(clippy::too_many_arguments)]
    pub(super) fn events(
        &mut self,
        doc: &Map<String, Value>,
        bytes: &[u8],
        raw: Option<&RawValue>,
        ledger_id: Option<&str>,
        checkpoint: Option<&Checkpoint>,
        selection: Option<&Selection>,
        options: &VerifyOptions<'_>,
    ) -> BTreeMap<u64, EventSeen> {
        let mut seen: BTreeMap<u64, EventSeen> = BTreeMap::new();
        let mut references = References::new();
        let items: Vec<&RawValue> = match raw {
            Some(raw) => match serde_json::from_str::<Vec<&RawValue>>(raw.get()) {
                Ok(items) => {
                    self.array_layout(bytes, raw, &items);
                    items
                }
                Err(_) => {
                    self.fail(ExportCode::Malformed, None, "$.events", "must be an array");
                    Vec::new()
                }
            },
            None => {
                self.fail(ExportCode::Malformed, None, "$.events", "missing");
                Vec::new()
            }
        };
        let total = u64::try_from(items.len()).unwrap_or(u64::MAX);
        self.summary.events = total;
        // The previous event in the array: its seq and stated hash.
        let mut previous: Option<(u64, Option<String>)> = None;
        for (index, raw_item) in items.iter().enumerate() {
            let at = format!("$.events[{index}]");
            let item: Value = match serde_json::from_str(raw_item.get()) {
                Ok(item) => item,
                Err(e) => {
                    self.fail(
                        ExportCode::Unparseable,
                        None,
                        "$",
                        format!("not JSON at {at}: {e}"),
                    );
                    continue;
                }
            };
            let offset = offset_in(bytes, raw_item.get());
            match canonical_bytes(&item) {
                Ok(canonical) => {
                    self.compare_canonical(&canonical, raw_item.get().as_bytes(), offset);
                }
                Err(e) => self.not_canonical_at(offset, e.to_string()),
            }
            if let Some((seq, hash)) =
                self.event(&item, &at, ledger_id, checkpoint, previous.as_ref())
            {
                let event = item.get("event").unwrap_or(&Value::Null);
                let session = event.get("sessionId").and_then(Value::as_str);
                // Without a valid selection (already reported) membership cannot be judged.
                let selected = selection.is_none_or(|s| s.selects(seq, session));
                let mut places = Vec::new();
                text_refs_at(event, &mut format!("{at}.event"), &mut places);
                for (commitment, path) in places {
                    references.entry(commitment).or_default().push((seq, path));
                }
                // A repeated seq is reported (`seq_order`) and otherwise ignored.
                seen.entry(seq).or_insert_with(|| EventSeen {
                    index,
                    selected,
                    erases: erased_commitments(event),
                });
                previous = Some((seq, hash));
            }
            if let Some(progress) = options.progress {
                progress(
                    u64::try_from(index).unwrap_or(u64::MAX).saturating_add(1),
                    total,
                );
            }
        }
        self.texts(doc, &seen, &references);
        seen
    }

    /// Checks one exported event; returns its seq and stated hash when it has a usable seq.
    fn event(
        &mut self,
        item: &Value,
        at: &str,
        ledger_id: Option<&str>,
        checkpoint: Option<&Checkpoint>,
        previous: Option<&(u64, Option<String>)>,
    ) -> Option<(u64, Option<String>)> {
        let (object, event, seq) = self.event_shape(item, at)?;
        let event_path = format!("{at}.event");
        let seq_at = Some(seq);
        if let Some((prev, _)) = previous
            && seq <= *prev
        {
            self.fail(
                ExportCode::SeqOrder,
                seq_at,
                format!("{event_path}.seq"),
                format!("events must be in ascending seq order without repeats; seq {seq} follows seq {prev}"),
            );
        }
        if let Err(e) = canonical_bytes(event) {
            self.fail(
                ExportCode::EventNotCanonical,
                seq_at,
                &event_path,
                e.to_string(),
            );
        }
        self.event_version(event, &event_path, seq_at);
        self.event_ledger(event, &event_path, seq_at, ledger_id);
        let (stated, leaf) = self.event_hash(event, &event_path, seq_at);
        self.event_link(event, &event_path, seq, previous);
        self.inclusion(
            object.get("inclusionProof"),
            &format!("{at}.inclusionProof"),
            seq,
            leaf,
            checkpoint,
        );
        Some((seq, stated.filter(|_| leaf.is_some()).map(str::to_owned)))
    }

    /// The exported item's shape: `{"event": {...}, "inclusionProof": [...]}` and nothing else,
    /// the event with a seq ≥ 1. The item's members, its event and that seq, when it has them.
    fn event_shape<'v>(
        &mut self,
        item: &'v Value,
        at: &str,
    ) -> Option<(&'v Map<String, Value>, &'v Value, u64)> {
        let Some(object) = item.as_object() else {
            self.fail(
                ExportCode::Malformed,
                None,
                at,
                "must be {\"event\": {...}, \"inclusionProof\": [...]}",
            );
            return None;
        };
        for name in object.keys() {
            if name != "event" && name != "inclusionProof" {
                self.fail(
                    ExportCode::UnknownMember,
                    None,
                    member(at, name),
                    "an exported event has only event and inclusionProof",
                );
            }
        }
        let event_path = format!("{at}.event");
        let Some(event) = object.get("event").filter(|e| e.is_object()) else {
            self.fail(
                ExportCode::Malformed,
                None,
                event_path,
                "missing, or not an object",
            );
            return None;
        };
        let Some(seq) = event.get("seq").and_then(Value::as_u64).filter(|s| *s >= 1) else {
            self.fail(
                ExportCode::Malformed,
                None,
                format!("{event_path}.seq"),
                "missing, or not an integer ≥ 1",
            );
            return None;
        };
        Some((object, event, seq))
    }

    /// The event judged by the rules of its version: v1 against schemas/event.v1.json. An
    /// event of another version is judged by the rules of its own version, which this verifier
    /// does not know: only what every version shares (seq, ledgerId, hash, links, proofs, text
    /// references) is checked.
    fn event_version(&mut self, event: &Value, event_path: &str, seq_at: Option<u64>) {
        match event.get("v") {
            Some(v) if v.as_u64() == Some(u64::from(ENVELOPE_VERSION)) => {
                for violation in event_v1().violations(event) {
                    self.fail(
                        ExportCode::EventMalformed,
                        seq_at,
                        format!("{event_path}{}", violation.path),
                        format!(
                            "not a v{ENVELOPE_VERSION} event (schemas/event.v1.json): {}",
                            violation.message
                        ),
                    );
                }
            }
            v => self.fail(
                ExportCode::UnknownVersion,
                seq_at,
                format!("{event_path}.v"),
                format!(
                    "the envelope version is {}; this verifier reads version {ENVELOPE_VERSION}",
                    shown(v)
                ),
            ),
        }
    }

    /// The event belongs to the export's ledger.
    fn event_ledger(
        &mut self,
        event: &Value,
        event_path: &str,
        seq_at: Option<u64>,
        ledger_id: Option<&str>,
    ) {
        let event_ledger = event.get("ledgerId").and_then(Value::as_str);
        if let Some(ledger_id) = ledger_id
            && event_ledger != Some(ledger_id)
        {
            self.fail(
                ExportCode::ForeignLedger,
                seq_at,
                format!("{event_path}.ledgerId"),
                format!(
                    "the event belongs to ledger {}, the export to {ledger_id}",
                    shown(event.get("ledgerId"))
                ),
            );
        }
    }

    /// The event's stated hash is the hash of its content. The stated hash, and the leaf it
    /// gives the inclusion proof when it is valid hex.
    fn event_hash<'v>(
        &mut self,
        event: &'v Value,
        event_path: &str,
        seq_at: Option<u64>,
    ) -> (Option<&'v str>, Option<[u8; 32]>) {
        let stated = event.get("hash").and_then(Value::as_str);
        let leaf = stated.and_then(parse_hex32);
        match (stated, event_value_hash(event)) {
            (Some(stated), Ok(computed)) if computed == stated => {}
            (_, Ok(computed)) => self.fail(
                ExportCode::HashMismatch,
                seq_at,
                format!("{event_path}.hash"),
                format!(
                    "the event's content hashes to {computed}; it states {}",
                    shown(event.get("hash"))
                ),
            ),
            (_, Err(e)) => self.fail(
                ExportCode::HashMismatch,
                seq_at,
                format!("{event_path}.hash"),
                e.to_string(),
            ),
        }
        (stated, leaf)
    }

    /// The event's prevHash links it to the event before it in the array (or the chain's
    /// start), as [`chain`] says every reader of a log checks it.
    fn event_link(
        &mut self,
        event: &Value,
        event_path: &str,
        seq: u64,
        previous: Option<&(u64, Option<String>)>,
    ) {
        let seq_at = Some(seq);
        let prev_hash = event.get("prevHash").and_then(Value::as_str);
        let expected_prev =
            chain::expected_prev_hash(seq, previous.map(|(p, h)| (*p, h.as_deref())));
        if let Some(expected) = expected_prev
            && !chain::links(Some(expected), prev_hash)
        {
            self.fail(
                ExportCode::BrokenLink,
                seq_at,
                format!("{event_path}.prevHash"),
                format!(
                    "prevHash is {}, but the hash of seq {} is {expected}",
                    shown(event.get("prevHash")),
                    seq - 1
                ),
            );
        }
    }

    fn inclusion(
        &mut self,
        proof: Option<&Value>,
        path: &str,
        seq: u64,
        leaf: Option<[u8; 32]>,
        checkpoint: Option<&Checkpoint>,
    ) {
        let Some(proof) = self.hashes(proof, path, Some(seq)) else {
            return;
        };
        let Some(checkpoint) = checkpoint else {
            return;
        };
        if seq > checkpoint.size() {
            self.fail(
                ExportCode::OutsideCheckpoint,
                Some(seq),
                path,
                format!("the checkpoint covers seqs 1..={} only", checkpoint.size()),
            );
            return;
        }
        let Some(leaf) = leaf else {
            self.fail(
                ExportCode::InclusionFailed,
                Some(seq),
                path,
                "the event states no valid hash to prove",
            );
            return;
        };
        let hasher = Blake3Hasher;
        if let Err(e) = verify_inclusion(
            &hasher,
            &hasher.hash_leaf(&leaf),
            seq - 1,
            checkpoint.size(),
            &proof,
            checkpoint.root(),
        ) {
            self.fail(
                ExportCode::InclusionFailed,
                Some(seq),
                path,
                format!("the event is not in the checkpoint's tree: {e}"),
            );
        }
    }

    /// A list of 64-hex-digit node hashes, or a `malformed` problem.
    pub(super) fn hashes(
        &mut self,
        value: Option<&Value>,
        path: &str,
        seq: Option<u64>,
    ) -> Option<Vec<NodeHash>> {
        let Some(Value::Array(items)) = value else {
            self.fail(
                ExportCode::Malformed,
                seq,
                path,
                "missing, or not an array of hashes",
            );
            return None;
        };
        let mut out = Vec::with_capacity(items.len());
        for (i, item) in items.iter().enumerate() {
            match item.as_str().and_then(parse_hex32) {
                Some(node) => out.push(node),
                None => {
                    self.fail(
                        ExportCode::Malformed,
                        seq,
                        format!("{path}[{i}]"),
                        "not 64 lowercase hex digits",
                    );
                    return None;
                }
            }
        }
        Some(out)
    }
}
