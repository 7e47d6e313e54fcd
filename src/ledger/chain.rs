//! The chain link, judged one way by everyone who reads a log: the writer (replay at open, the
//! check under a snapshot, other writers' events), the stored-ledger verifier
//! ([`super::verify`]) and the export verifier (`audit::verify`). An event links when it names,
//! as its `prevHash`, the stored hash of the event before it, or [`GENESIS_PREV_HASH`] if it is
//! the first. Whether its own hash is right is [`super::event_check`]'s to say (the writer and
//! the stored-ledger verifier take it from there; an export's events are hashed as values).
//! Pure: no store, no I/O.

use super::LedgerError;
use super::event_check::Envelope;
use super::hash::GENESIS_PREV_HASH;

/// The `prevHash` event `seq` must name: [`GENESIS_PREV_HASH`] for the first event, else the
/// stored hash of event `seq - 1` when `before` is that event (its seq and its stored hash, if
/// it named one). `None`: the link cannot be judged (the event before was not read, or named
/// no hash), and is not blamed.
pub(crate) fn expected_prev_hash(seq: u64, before: Option<(u64, Option<&str>)>) -> Option<&str> {
    if seq == 1 {
        return Some(GENESIS_PREV_HASH);
    }
    before
        .filter(|(at, _)| at.checked_add(1) == Some(seq))
        .and_then(|(_, hash)| hash)
}

/// Whether an event naming `prev_hash` links to the event before it, whose stored hash is
/// `expected` (from [`expected_prev_hash`], or a reader's running head); an unknown `expected`
/// is not judged.
pub(crate) fn links(expected: Option<&str>, prev_hash: Option<&str>) -> bool {
    expected.is_none_or(|expected| prev_hash == Some(expected))
}

/// The writer's check of a stored event before it is folded or vouched for: stored under the
/// seq after `head_seq` and saying so, of ledger `ledger_id`, linked to `head_hash`, and
/// matching its own hash. A log that fails it is refused ([`LedgerError::Corrupt`]).
pub(crate) fn check_next(
    head_seq: u64,
    head_hash: &str,
    ledger_id: &str,
    key_seq: u64,
    event: &Envelope,
) -> Result<(), LedgerError> {
    let expected = head_seq + 1;
    if key_seq != expected || event.seq != key_seq {
        return Err(LedgerError::Corrupt(format!(
            "expected event {expected}, found key {key_seq} holding event {}",
            event.seq
        )));
    }
    if event.ledger_id != ledger_id || !links(Some(head_hash), Some(&event.prev_hash)) {
        return Err(LedgerError::Corrupt(format!(
            "event {key_seq} does not chain to {head_seq}"
        )));
    }
    if event.hash_mismatch.is_some() {
        return Err(LedgerError::Corrupt(format!(
            "event {key_seq} does not match its hash"
        )));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_first_event_links_to_genesis_and_the_others_to_the_event_before() {
        assert_eq!(expected_prev_hash(1, None), Some(GENESIS_PREV_HASH));
        assert_eq!(
            expected_prev_hash(1, Some((7, Some("h")))),
            Some(GENESIS_PREV_HASH)
        );
        assert_eq!(expected_prev_hash(8, Some((7, Some("h")))), Some("h"));
        // The event before unread, not adjacent or naming no hash: not judged.
        assert_eq!(expected_prev_hash(8, None), None);
        assert_eq!(expected_prev_hash(9, Some((7, Some("h")))), None);
        assert_eq!(expected_prev_hash(8, Some((7, None))), None);
        assert_eq!(expected_prev_hash(0, Some((u64::MAX, Some("h")))), None);
    }

    #[test]
    fn a_link_holds_when_it_names_the_hash_before_or_cannot_be_judged() {
        assert!(links(Some("a"), Some("a")));
        assert!(!links(Some("a"), Some("b")));
        assert!(!links(Some("a"), None));
        assert!(links(None, Some("b")));
        assert!(links(None, None));
    }

    fn envelope(seq: u64, ledger_id: &str, prev_hash: &str) -> Envelope {
        Envelope {
            seq,
            v: 1,
            ledger_id: ledger_id.into(),
            prev_hash: prev_hash.into(),
            hash: "h".into(),
            hash_mismatch: None,
            text_refs: Vec::new(),
            erased: Vec::new(),
            leaf: None,
        }
    }

    fn refusal(result: Result<(), LedgerError>) -> String {
        match result {
            Err(LedgerError::Corrupt(why)) => why,
            other => format!("{other:?}"),
        }
    }

    #[test]
    fn the_writer_refuses_every_way_an_event_can_fail_to_follow_its_head() {
        assert!(check_next(4, "p", "L", 5, &envelope(5, "L", "p")).is_ok());
        assert_eq!(
            refusal(check_next(4, "p", "L", 6, &envelope(6, "L", "p"))),
            "expected event 5, found key 6 holding event 6"
        );
        assert_eq!(
            refusal(check_next(4, "p", "L", 5, &envelope(9, "L", "p"))),
            "expected event 5, found key 5 holding event 9"
        );
        assert_eq!(
            refusal(check_next(4, "p", "L", 5, &envelope(5, "M", "p"))),
            "event 5 does not chain to 4"
        );
        assert_eq!(
            refusal(check_next(4, "p", "L", 5, &envelope(5, "L", "q"))),
            "event 5 does not chain to 4"
        );
        let mut altered = envelope(5, "L", "p");
        altered.hash_mismatch = Some("recomputed differs".into());
        assert_eq!(
            refusal(check_next(4, "p", "L", 5, &altered)),
            "event 5 does not match its hash"
        );
    }
}
