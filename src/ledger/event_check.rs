//! The half of verification that concerns one stored event alone: parse, canonical form, the
//! typed envelope, the recomputed hash, its text references and erasure marks, its Merkle leaf
//! hash. Pure and independent of every other event, so `verify` runs it on all cores in any
//! order; what depends on the events around it (gaps, links, the ledger id, stored texts, the
//! tree) stays with `verify`.
//!
//! Two paths give the same answer. The common one never builds a `serde_json::Value`: the
//! scanner of [`canonical_scan`](super::canonical_scan) checks the stored bytes are canonical
//! and finds the `hash` member and the text references in them, the envelope is deserialized
//! straight from the bytes, and the hash is taken over the bytes with `hash` cut out. Whenever
//! that path cannot vouch for an event (bytes the scanner declines, or that are not an event),
//! the general one decides: parse into a `Value`, canonicalize it, deserialize from it. A
//! property test holds the two to the same answers on valid and damaged events.

use serde::Deserialize;
use serde_json::Value;

use super::canonical::canonical_bytes;
use super::canonical_scan::scan_canonical;
use super::hash::{event_hash_of_canonical, event_value_hash, hex, parse_hex32};
use super::merkle::{Blake3Hasher, MerkleHasher, NodeHash};
use super::verify::text_refs;
use crate::events::{Event, Fact};

/// What one stored event says about itself.
#[derive(Debug, PartialEq)]
pub(crate) struct CheckedEvent {
    /// Why its bytes are not canonical, if they are not.
    pub not_canonical: Option<String>,
    pub body: Body,
}

/// The event as far as it could be read.
#[derive(Debug, PartialEq)]
pub(crate) enum Body {
    /// Not JSON: why.
    NotJson(String),
    /// JSON but not an event: why, and its `hash` member if it names one.
    NotEvent {
        detail: String,
        hash: Option<String>,
    },
    Event(Box<Envelope>),
}

/// The members of a readable event that verification needs.
#[derive(Debug, PartialEq)]
pub(crate) struct Envelope {
    pub seq: u64,
    pub v: u32,
    pub ledger_id: String,
    pub prev_hash: String,
    pub hash: String,
    /// Why the recomputed hash is not `hash`, if it is not.
    pub hash_mismatch: Option<String>,
    pub text_refs: Vec<TextRefFound>,
    /// Commitments its `TextsErased` facts name, those that are 64 lowercase hex digits (no
    /// other can be the commitment of a text reference).
    pub erased: Vec<[u8; 32]>,
    /// The Merkle leaf hash of its stored hash; `None` if that is not 64 hex digits.
    pub leaf: Option<NodeHash>,
}

/// A text reference as an event holds it.
#[derive(Debug, PartialEq)]
pub(crate) enum TextRefFound {
    /// 64 lowercase hex digits, as bytes.
    Commitment([u8; 32]),
    /// Anything else, as written.
    Malformed(String),
}

impl TextRefFound {
    fn new(commitment: &str) -> Self {
        match parse_hex32(commitment) {
            Some(key) => Self::Commitment(key),
            None => Self::Malformed(commitment.to_owned()),
        }
    }
}

/// Checks one event's stored `bytes`.
pub(crate) fn check_event(bytes: &[u8]) -> CheckedEvent {
    check_canonical_event(bytes).unwrap_or_else(|| check_parsed(bytes))
}

/// The common case: canonical bytes, as the scanner sees them, of a readable event. `None`
/// for anything else, which [`check_parsed`] judges.
fn check_canonical_event(bytes: &[u8]) -> Option<CheckedEvent> {
    let text = std::str::from_utf8(bytes).ok()?;
    let scan = scan_canonical(text, "hash", "textCommitment")?;
    let event: Event = serde_json::from_str(text).ok()?;
    // Over the stored object itself, every member (known or not) but `hash`: a member slipped
    // in that `Event` would ignore still changes the hash.
    let recomputed = match &scan.skip {
        Some(span) => event_hash_of_canonical(&[bytes.get(..span.start)?, bytes.get(span.end..)?]),
        None => event_hash_of_canonical(&[bytes]),
    };
    let stored = parse_hex32(&event.hash);
    let hash_mismatch = (stored != Some(recomputed)).then(|| {
        format!(
            "content hashes to {}, event says {}",
            hex(&recomputed),
            event.hash
        )
    });
    let text_refs = scan
        .lone_strings
        .into_iter()
        .map(|range| text.get(range).map(TextRefFound::new))
        .collect::<Option<_>>()?;
    Some(CheckedEvent {
        not_canonical: None,
        body: Body::Event(Box::new(envelope(event, hash_mismatch, text_refs, stored))),
    })
}

/// Any stored bytes, through a parsed `Value` and the general serializer.
fn check_parsed(bytes: &[u8]) -> CheckedEvent {
    let value: Value = match serde_json::from_slice(bytes) {
        Ok(v) => v,
        Err(e) => {
            return CheckedEvent {
                not_canonical: None,
                body: Body::NotJson(format!("not JSON: {e}")),
            };
        }
    };
    let not_canonical = match canonical_bytes(&value) {
        Ok(canonical) if canonical == bytes => None,
        Ok(_) => Some("stored bytes are not in RFC 8785 form".to_owned()),
        Err(e) => Some(e.to_string()),
    };
    let event = match Event::deserialize(&value) {
        Ok(e) => e,
        Err(e) => {
            return CheckedEvent {
                not_canonical,
                body: Body::NotEvent {
                    detail: format!("not an event: {e}"),
                    hash: value.get("hash").and_then(Value::as_str).map(str::to_owned),
                },
            };
        }
    };
    let hash_mismatch = match event_value_hash(&value) {
        Ok(h) if h == event.hash => None,
        Ok(h) => Some(format!("content hashes to {h}, event says {}", event.hash)),
        Err(e) => Some(e.to_string()),
    };
    let text_refs = text_refs(&value)
        .iter()
        .map(|c| TextRefFound::new(c))
        .collect();
    let stored = parse_hex32(&event.hash);
    CheckedEvent {
        not_canonical,
        body: Body::Event(Box::new(envelope(event, hash_mismatch, text_refs, stored))),
    }
}

/// The envelope of a readable `event` whose stored hash parses to `stored`.
fn envelope(
    event: Event,
    hash_mismatch: Option<String>,
    text_refs: Vec<TextRefFound>,
    stored: Option<[u8; 32]>,
) -> Envelope {
    let erased = event
        .facts
        .iter()
        .filter_map(|fact| match fact {
            Fact::TextsErased { commitments, .. } => Some(commitments.iter()),
            _ => None,
        })
        .flatten()
        .filter_map(|c| parse_hex32(c))
        .collect();
    Envelope {
        seq: event.seq,
        v: event.v,
        ledger_id: event.ledger_id,
        prev_hash: event.prev_hash,
        hash: event.hash,
        hash_mismatch,
        text_refs,
        erased,
        leaf: stored.map(|h| Blake3Hasher.hash_leaf(&h)),
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;
    use crate::ledger::hash::event_hash;

    /// The canonical bytes of events of several kinds, each with its hash set: text references
    /// in the arguments and the facts, an erasure, doubles, escapes, an idempotency key.
    fn events() -> Vec<Vec<u8>> {
        let commitment = |n: u8| hex(&[n; 32]);
        let session = "3f2c1e4a-9b7d-4c2e-8f1a-0d6b5e4c3a21";
        let facts = [
            json!([{"type": "ThoughtRecorded", "sessionId": session,
                "text": {"textCommitment": commitment(1)}, "thoughtNumber": 1,
                "totalThoughts": 3, "nextThoughtNeeded": true, "isRevision": false,
                "revisesThought": null, "branchFromThought": null, "branchId": null,
                "needsMoreThoughts": false, "tags": ["a\tb", "é"]}]),
            json!([{"type": "TextsErased", "commitments": [commitment(1), "not hex"],
                "reason": "asked", "sessionId": session}]),
            json!([{"type": "RubricSet", "sessionId": session,
                "weights": {"depth": 0.25, "novelty": 1.0, "rigor": 1e-7}}]),
            json!([]),
        ];
        facts
            .into_iter()
            .enumerate()
            .map(|(i, facts)| {
                let mut event: Event = serde_json::from_value(json!({
                    "v": 1, "kind": "ToolCallRecorded", "seq": i + 1, "ledgerId": "l",
                    "sessionId": session, "recordedAt": "2026-01-01T00:00:00.000000Z",
                    "actor": {"principal": "local", "transport": "stdio",
                        "clientName": "c\u{1}\"", "clientVersion": null},
                    "call": {"tool": "t", "idempotencyKey": "k",
                        "arguments": {"thought": {"textCommitment": commitment(2)},
                            "n": -3, "nested": [[{"textCommitment": "short"}]]}},
                    "facts": facts,
                    "outcome": {"status": "ok", "responseDigest": "00", "error": null},
                    "provenance": {"kind": "rules", "name": "t", "version": "1"},
                    "prevHash": commitment(0), "hash": ""
                }))
                .unwrap();
                event.hash = event_hash(&event).unwrap();
                canonical_bytes(&serde_json::to_value(&event).unwrap()).unwrap()
            })
            .collect()
    }

    #[test]
    fn canonical_events_take_the_scanning_path_and_check_clean() {
        for bytes in events() {
            let checked = check_canonical_event(&bytes).expect("the scanner vouches");
            assert_eq!(checked, check_parsed(&bytes));
            let Body::Event(envelope) = checked.body else {
                panic!("not read as an event")
            };
            assert_eq!(envelope.hash_mismatch, None);
            assert!(envelope.leaf.is_some());
        }
    }

    /// `bytes` with `with` written over (`how` 0), inserted at (1) or, as many bytes, removed
    /// from (2) position `at`.
    fn damaged(bytes: &[u8], at: usize, how: u8, with: &[u8]) -> Vec<u8> {
        let mut out = bytes.to_vec();
        let at = at % out.len();
        let end = (at + with.len()).min(out.len());
        match how % 3 {
            0 => {
                out.splice(at..end, with.iter().copied());
            }
            1 => {
                out.splice(at..at, with.iter().copied());
            }
            _ => {
                out.drain(at..end);
            }
        }
        out
    }

    proptest::proptest! {
        #[test]
        fn both_paths_say_the_same_of_damaged_events(
            which in 0usize..4,
            at in 0usize..2048,
            how in 0u8..3,
            with in proptest::sample::select(vec![
                &b"0"[..], b"1", b"a", b"\"", b",", b":", b" ", b"{", b"}", b"[", b"]", b"\\",
                b"\\t", b"\\u0009", b".5", b"e1", b"-", b"null", b"\"x\":1,", b"\xc3\xa9",
                b"\"hash\":\"\",", b"{\"textCommitment\":\"ab\"}",
            ]),
        ) {
            let bytes = damaged(&events()[which], at, how, with);
            if let Some(checked) = check_canonical_event(&bytes) {
                proptest::prop_assert_eq!(checked, check_parsed(&bytes));
            }
        }
    }
}
