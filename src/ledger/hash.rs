//! Hashing: event hashes, text commitments and response digests, each under its own BLAKE3
//! domain-separation context so a digest of one kind can never be passed off as another.
//!
//! Pure functions over bytes and JSON values; no storage, no clock.

use std::sync::LazyLock;

use serde_json::Value;

use super::LedgerError;
use super::canonical::{canonical_bytes, utf16_less};
use crate::events::Event;

/// BLAKE3 `derive_key` context for event hashes.
pub const EVENT_CONTEXT: &str = "thinkledger 2026-11 event v1";
/// BLAKE3 `derive_key` context for text commitments.
pub const TEXT_CONTEXT: &str = "thinkledger 2026-11 text commitment v1";
/// BLAKE3 `derive_key` context for response digests.
pub const RESPONSE_CONTEXT: &str = "thinkledger 2026-11 response v1";
/// BLAKE3 `derive_key` context for the draws of one call (salts, new session ids) from its
/// seed.
pub const CALL_DRAW_CONTEXT: &str = "thinkledger 2026-11 call draw v1";
/// BLAKE3 `derive_key` context for the digest an audit export's signature covers.
pub const AUDIT_EXPORT_CONTEXT: &str = "thinkledger 2026-11 audit export v1";

/// The `prevHash` of the first event.
pub const GENESIS_PREV_HASH: &str =
    "0000000000000000000000000000000000000000000000000000000000000000";

/// Length of a text salt in bytes.
pub const SALT_LEN: usize = 32;

/// Hash of an event: BLAKE3 in derive-key mode over the JCS bytes of the event object with its
/// `hash` member removed. Returns lowercase hex.
pub fn event_hash(event: &Event) -> Result<String, LedgerError> {
    let value = serde_json::to_value(event)
        .map_err(|e| LedgerError::NotCanonicalizable(format!("event does not serialize: {e}")))?;
    event_value_hash(&value)
}

/// An event's hash and its stored bytes (the JCS bytes of the event with that hash), from
/// one serialization: the same as [`event_hash`], then `canonical_bytes` of the event with
/// `hash` set, at about half the cost. A JCS object is its members in key order, so the
/// members sorting before `hash` and those after it are made canonical once each and joined
/// twice, without and with the `hash` member.
pub fn sealed_event(event: &Event) -> Result<(String, Vec<u8>), LedgerError> {
    let value = serde_json::to_value(event)
        .map_err(|e| LedgerError::NotCanonicalizable(format!("event does not serialize: {e}")))?;
    let Value::Object(map) = value else {
        return Err(LedgerError::NotCanonicalizable(
            "an event serializes as a JSON object".into(),
        ));
    };
    let (mut before, mut after) = (serde_json::Map::new(), serde_json::Map::new());
    for (key, member) in map {
        if key == "hash" {
            continue;
        }
        if utf16_less(&key, "hash") {
            before.insert(key, member);
        } else {
            after.insert(key, member);
        }
    }
    // Each part's canonical bytes are `{` its members `}`.
    let before = canonical_bytes(&Value::Object(before))?;
    let after = canonical_bytes(&Value::Object(after))?;
    let (before, after) = (&before[1..before.len() - 1], &after[1..after.len() - 1]);
    let comma: &[u8] = if before.is_empty() || after.is_empty() {
        b""
    } else {
        b","
    };
    let hash = hex(event_hash_of_canonical(&[b"{", before, comma, after, b"}"]).as_slice());
    let member = format!("\"hash\":\"{hash}\"");
    let mut bytes = Vec::with_capacity(before.len() + after.len() + member.len() + 4);
    bytes.push(b'{');
    bytes.extend_from_slice(before);
    if !before.is_empty() {
        bytes.push(b',');
    }
    bytes.extend_from_slice(member.as_bytes());
    if !after.is_empty() {
        bytes.push(b',');
    }
    bytes.extend_from_slice(after);
    bytes.push(b'}');
    Ok((hash, bytes))
}

/// [`event_hash`] of an event given as JSON, as read back from storage or an export: the
/// `hash` member (if any) is left out and every other member, known or not, is hashed.
pub fn event_value_hash(value: &Value) -> Result<String, LedgerError> {
    let bytes = match value {
        Value::Object(map) if map.contains_key("hash") => {
            let mut map = map.clone();
            map.remove("hash");
            canonical_bytes(&Value::Object(map))?
        }
        other => canonical_bytes(other)?,
    };
    Ok(hex(blake3::Hasher::new_derive_key(EVENT_CONTEXT)
        .update(&bytes)
        .finalize()
        .as_bytes()))
}

/// [`event_value_hash`] given the canonical bytes it hashes, in pieces (their concatenation is
/// hashed), as bytes: for `verify`, which has the stored canonical bytes at hand and cuts the
/// `hash` member out of them rather than rebuilding the object without it.
pub fn event_hash_of_canonical(pieces: &[&[u8]]) -> [u8; 32] {
    static EVENT: LazyLock<blake3::Hasher> =
        LazyLock::new(|| blake3::Hasher::new_derive_key(EVENT_CONTEXT));
    let mut hasher = EVENT.clone();
    for piece in pieces {
        hasher.update(piece);
    }
    *hasher.finalize().as_bytes()
}

/// Digest of an audit export document: BLAKE3 derive-key over the given (canonical) bytes.
pub fn audit_export_digest(canonical: &[u8]) -> String {
    let mut hasher = AuditExportHasher::new();
    hasher.update(canonical);
    hasher.finalize()
}

/// [`audit_export_digest`] fed piece by piece, for documents too large to hold at once: the
/// digest of the concatenation of every `update` is the digest of those bytes in one piece.
pub struct AuditExportHasher(blake3::Hasher);

impl AuditExportHasher {
    pub fn new() -> Self {
        Self(blake3::Hasher::new_derive_key(AUDIT_EXPORT_CONTEXT))
    }

    pub fn update(&mut self, bytes: &[u8]) {
        self.0.update(bytes);
    }

    /// The digest, lowercase hex.
    pub fn finalize(&self) -> String {
        hex(self.0.finalize().as_bytes())
    }
}

impl Default for AuditExportHasher {
    fn default() -> Self {
        Self::new()
    }
}

/// Commitment to one piece of free text: BLAKE3 derive-key over `salt ‖ UTF-8 text`.
pub fn text_commitment(salt: &[u8; SALT_LEN], text: &str) -> String {
    hex(&text_commitment_bytes(salt, text))
}

/// [`text_commitment`] as bytes: for `verify`, which re-hashes every stored text and compares
/// bytes. The hasher keyed by the context is derived once and copied for each text, rather
/// than derived again from the context string every time.
pub fn text_commitment_bytes(salt: &[u8; SALT_LEN], text: &str) -> [u8; 32] {
    static TEXT: LazyLock<blake3::Hasher> =
        LazyLock::new(|| blake3::Hasher::new_derive_key(TEXT_CONTEXT));
    let mut hasher = TEXT.clone();
    hasher.update(salt);
    hasher.update(text.as_bytes());
    *hasher.finalize().as_bytes()
}

/// Digest of a response body (any JSON value) as the client received it.
pub fn response_digest(body: &Value) -> Result<String, LedgerError> {
    let bytes = canonical_bytes(body)?;
    Ok(hex(blake3::Hasher::new_derive_key(RESPONSE_CONTEXT)
        .update(&bytes)
        .finalize()
        .as_bytes()))
}

/// The `index`-th draw for `purpose` from a call's 32-byte `seed`: BLAKE3 derive-key over
/// `seed ‖ purpose ‖ 0x00 ‖ index (u64, little-endian)`. Draws for different purposes or
/// indexes are independent, and none reveals the seed or another draw, so a salt stored
/// beside a text and a session id in an event say nothing about each other.
pub fn call_draw(seed: &[u8; 32], purpose: &str, index: u64) -> [u8; 32] {
    static DRAW: LazyLock<blake3::Hasher> =
        LazyLock::new(|| blake3::Hasher::new_derive_key(CALL_DRAW_CONTEXT));
    let mut hasher = DRAW.clone();
    hasher.update(seed);
    hasher.update(purpose.as_bytes());
    hasher.update(&[0]);
    hasher.update(&index.to_le_bytes());
    *hasher.finalize().as_bytes()
}

/// The context of memory ids (never checked by a verifier: an id is a name).
const MEMORY_ID_CONTEXT: &str = "thinkledger 2026-11 memory id v1";

/// The digest a memory id is made from: BLAKE3 `derive_key` over `owner ‖ 0x1f ‖ ordinal
/// (u64, big-endian)`, where `ordinal` counts the memories the owner stored before. Derived
/// from state, so a re-execution derives the same id; two owners' ids differ.
pub fn memory_id_digest(owner: &str, ordinal: u64) -> [u8; 32] {
    let mut hasher = blake3::Hasher::new_derive_key(MEMORY_ID_CONTEXT);
    hasher.update(owner.as_bytes());
    hasher.update(&[0x1f]);
    hasher.update(&ordinal.to_be_bytes());
    *hasher.finalize().as_bytes()
}

/// The digest a bearer token is kept as (`server::auth`): BLAKE3 of its UTF-8 bytes. Equal
/// digests of a 256-bit secret are the token itself.
pub fn token_digest(token: &str) -> [u8; 32] {
    *blake3::hash(token.as_bytes()).as_bytes()
}

/// Lowercase hex of `bytes`.
pub fn hex(bytes: &[u8]) -> String {
    const DIGITS: &[u8; 16] = b"0123456789abcdef";
    let mut out = String::with_capacity(bytes.len() * 2);
    for b in bytes {
        out.push(char::from(DIGITS[usize::from(b >> 4)]));
        out.push(char::from(DIGITS[usize::from(b & 0x0f)]));
    }
    out
}

/// Parses 64 lowercase hex digits into 32 bytes.
pub fn parse_hex32(s: &str) -> Option<[u8; 32]> {
    let digits: &[u8; 64] = s.as_bytes().try_into().ok()?;
    let mut out = [0u8; 32];
    // Invalid digits are marked, not returned on: `verify` parses several per event and this
    // keeps the loop free of branches.
    let mut invalid = 0;
    for (byte, pair) in out.iter_mut().zip(digits.chunks_exact(2)) {
        let (hi, lo) = (
            HEX_VALUE[usize::from(pair[0])],
            HEX_VALUE[usize::from(pair[1])],
        );
        invalid |= hi | lo;
        *byte = (hi << 4) | (lo & 0x0f);
    }
    (invalid & NOT_HEX == 0).then_some(out)
}

/// Marks a byte that is not a lowercase hex digit in [`HEX_VALUE`].
const NOT_HEX: u8 = 0x80;

/// The value of each lowercase hex digit; [`NOT_HEX`] for every other byte.
const HEX_VALUE: [u8; 256] = {
    let mut table = [NOT_HEX; 256];
    let mut value: u8 = 0;
    while value < 16 {
        // Widening casts (`From` is not usable in a constant).
        table[b"0123456789abcdef"[value as usize] as usize] = value;
        value += 1;
    }
    table
};

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn contexts_separate_domains() {
        let salt = [7u8; SALT_LEN];
        let as_text = text_commitment(&salt, "x");
        let mut plain = salt.to_vec();
        plain.push(b'x');
        assert_ne!(as_text, hex(blake3::hash(&plain).as_bytes()));
        assert_ne!(
            response_digest(&Value::String("x".into())).unwrap(),
            hex(blake3::Hasher::new_derive_key(EVENT_CONTEXT)
                .update(b"\"x\"")
                .finalize()
                .as_bytes())
        );
    }

    #[test]
    fn text_commitment_depends_on_salt_and_text() {
        let a = text_commitment(&[1; SALT_LEN], "same");
        assert_eq!(a, text_commitment(&[1; SALT_LEN], "same"));
        assert_ne!(a, text_commitment(&[2; SALT_LEN], "same"));
        assert_ne!(a, text_commitment(&[1; SALT_LEN], "Same"));
        assert_eq!(a.len(), 64);
    }

    #[test]
    fn hex_round_trips() {
        let bytes: [u8; 32] = std::array::from_fn(|i| u8::try_from(i * 7).unwrap_or(0));
        assert_eq!(parse_hex32(&hex(&bytes)), Some(bytes));
        assert_eq!(parse_hex32(&"A".repeat(64)), None);
        assert_eq!(parse_hex32("00"), None);
        // Every ASCII byte, as the high and as the low digit of the last byte.
        for c in (0..128u8).map(char::from) {
            let digit = u8::try_from(c.to_digit(16).unwrap_or(0)).unwrap();
            let hex_digit = c.is_ascii_hexdigit() && !c.is_ascii_uppercase();
            for (text, last) in [(format!("{c}0"), digit << 4), (format!("0{c}"), digit)] {
                let parsed = parse_hex32(&format!("{}{text}", "0".repeat(62)));
                assert_eq!(parsed.map(|p| p[31]), hex_digit.then_some(last), "{c:?}");
            }
        }
        assert_eq!(parse_hex32(&format!("{}é", "0".repeat(62))), None);
    }

    /// The worked example of docs/ledger-format.md §8. The expected digests were computed
    /// independently (Python's `blake3` package and `json.dumps(sort_keys=True)`), not by this
    /// crate, so this test pins the format against a second implementation.
    #[test]
    fn known_answer_vectors_match_an_independent_implementation() {
        use serde_json::json;

        let salt: [u8; SALT_LEN] = std::array::from_fn(|i| u8::try_from(i).unwrap_or(0));
        let commitment = text_commitment(&salt, "Is the cache the bottleneck?");
        assert_eq!(
            commitment,
            "a2fea9299dd419bb409f13e8c167d41247d39dd81afed5b07b963d9f8f43ff51"
        );
        let session = "3f2b8c1e-6a4d-4e2f-9b7a-1c0d2e3f4a5b";
        let body = json!({"branches": [], "nextThoughtNeeded": true, "sessionId": session,
            "thoughtHistoryLength": 1, "thoughtNumber": 1, "totalThoughts": 3});
        let digest = response_digest(&body).unwrap();
        assert_eq!(
            digest,
            "4193be92c85fef1aff7f769cfe237470d02aff5fc2f93c67c29fcf59aee59551"
        );
        let text = json!({ "textCommitment": commitment });
        let event: Event = serde_json::from_value(json!({
            "v": 1, "kind": "ToolCallRecorded", "seq": 1,
            "ledgerId": "9a1c2b3d-4e5f-4a6b-8c7d-0e1f2a3b4c5d", "sessionId": session,
            "recordedAt": "2026-11-21T09:30:00.000000Z",
            "actor": {"principal": "local", "transport": "stdio", "clientName": "claude-code", "clientVersion": "2.1.0"},
            "call": {"tool": "sequentialthinking", "arguments": {"nextThoughtNeeded": true, "thought": text, "thoughtNumber": 1, "totalThoughts": 3}},
            "facts": [
                {"type": "SessionStarted", "sessionId": session},
                {"type": "ThoughtRecorded", "sessionId": session, "text": text, "thoughtNumber": 1,
                 "totalThoughts": 3, "nextThoughtNeeded": true, "isRevision": false, "revisesThought": null,
                 "branchFromThought": null, "branchId": null, "needsMoreThoughts": false, "tags": []}
            ],
            "outcome": {"status": "ok", "responseDigest": digest, "error": null},
            "provenance": {"kind": "rules", "name": "thinkledger.thinking", "version": "0.1.0"},
            "prevHash": GENESIS_PREV_HASH, "hash": ""
        }))
        .unwrap();
        assert_eq!(
            event_hash(&event).unwrap(),
            "e8f0c478f97bfd4162be4fb6c17141abc47493222fdf4c3c85660fd9ebe97dad"
        );
    }

    #[test]
    fn the_incremental_export_digest_matches_the_one_shot_digest() {
        let bytes = b"{\"checkpoint\":\"x\",\"texts\":{}}";
        let mut hasher = AuditExportHasher::new();
        for piece in bytes.chunks(5) {
            hasher.update(piece);
        }
        assert_eq!(hasher.finalize(), audit_export_digest(bytes));
    }

    #[test]
    fn call_draws_differ_by_seed_purpose_and_index_and_repeat_exactly() {
        let seed = [9u8; 32];
        let first = call_draw(&seed, "salt", 0);
        assert_eq!(first, call_draw(&seed, "salt", 0));
        assert_ne!(first, call_draw(&seed, "salt", 1));
        assert_ne!(first, call_draw(&seed, "session id", 0));
        assert_ne!(first, call_draw(&[8u8; 32], "salt", 0));
        assert_ne!(first, seed);
    }
}
