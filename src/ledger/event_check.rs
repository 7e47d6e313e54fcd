//! The half of verification that concerns one stored event alone: parse, canonical form, the
//! typed envelope, the recomputed hash, its text references and erasure marks, its Merkle leaf
//! hash. Pure and independent of every other event, so `verify` runs it on all cores in any
//! order; what depends on the events around it (gaps, links, the ledger id, stored texts, the
//! tree) stays with `verify`.
//!
//! The event is parsed once. Its canonical form is checked with the plain writer of
//! [`canonical`](super::canonical) and its hash taken over the stored bytes with the `hash`
//! member cut out; whenever the plain writer cannot vouch for the bytes, the general
//! serializer decides, exactly as it always has.

use serde::Deserialize;
use serde_json::Value;

use super::canonical::{canonical_bytes, write_plain_canonical};
use super::hash::{event_hash_of_canonical, event_value_hash, parse_hex32};
use super::merkle::{Blake3Hasher, MerkleHasher, NodeHash};
use super::verify::text_refs;
use crate::events::{Event, Fact};

/// What one stored event says about itself.
pub(crate) struct CheckedEvent {
    /// Why its bytes are not canonical, if they are not.
    pub not_canonical: Option<String>,
    pub body: Body,
}

/// The event as far as it could be read.
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
pub(crate) struct Envelope {
    pub seq: u64,
    pub v: u32,
    pub ledger_id: String,
    pub prev_hash: String,
    pub hash: String,
    /// Why the recomputed hash is not `hash`, if it is not.
    pub hash_mismatch: Option<String>,
    pub text_refs: Vec<String>,
    /// Commitments its `TextsErased` facts name.
    pub erased: Vec<String>,
    /// The Merkle leaf hash of its stored hash; `None` if that is not 64 hex digits.
    pub leaf: Option<NodeHash>,
}

/// Checks one event's stored `bytes`; `scratch` is a buffer reused across calls.
pub(crate) fn check_event(bytes: &[u8], scratch: &mut Vec<u8>) -> CheckedEvent {
    let value: Value = match serde_json::from_slice(bytes) {
        Ok(v) => v,
        Err(e) => {
            return CheckedEvent {
                not_canonical: None,
                body: Body::NotJson(format!("not JSON: {e}")),
            };
        }
    };
    // The hash member's place in the bytes, when the plain writer vouches for them.
    let plain = match write_plain_canonical(&value, "hash", scratch) {
        Some(span) if scratch.as_slice() == bytes => Some(span),
        _ => None,
    };
    let not_canonical = match plain {
        Some(_) => None,
        None => match canonical_bytes(&value) {
            Ok(canonical) if canonical == bytes => None,
            Ok(_) => Some("stored bytes are not in RFC 8785 form".to_owned()),
            Err(e) => Some(e.to_string()),
        },
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
    // Over the stored object itself, every member (known or not) but `hash`: a member slipped
    // in that `Event` would ignore still changes the hash.
    let recomputed = match plain {
        Some(Some(span)) => Ok(event_hash_of_canonical(&[
            bytes.get(..span.start).unwrap_or_default(),
            bytes.get(span.end..).unwrap_or_default(),
        ])),
        Some(None) => Ok(event_hash_of_canonical(&[bytes])),
        None => event_value_hash(&value),
    };
    let hash_mismatch = match recomputed {
        Ok(h) if h == event.hash => None,
        Ok(h) => Some(format!("content hashes to {h}, event says {}", event.hash)),
        Err(e) => Some(e.to_string()),
    };
    let erased = event
        .facts
        .iter()
        .filter_map(|fact| match fact {
            Fact::TextsErased { commitments, .. } => Some(commitments.iter().cloned()),
            _ => None,
        })
        .flatten()
        .collect();
    let leaf = parse_hex32(&event.hash).map(|h| Blake3Hasher.hash_leaf(&h));
    CheckedEvent {
        not_canonical,
        body: Body::Event(Box::new(Envelope {
            seq: event.seq,
            v: event.v,
            ledger_id: event.ledger_id,
            prev_hash: event.prev_hash,
            hash: event.hash,
            hash_mismatch,
            text_refs: text_refs(&value),
            erased,
            leaf,
        })),
    }
}
