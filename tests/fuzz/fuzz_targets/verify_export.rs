//! Fuzzes the audit export verifier with arbitrary bytes: it must never panic, and whatever it
//! is given it must either pass or name at least one problem with a reason.
//!
//! The first byte chooses whether a key is pinned (the rest of the input is the document), so
//! both the pinned and the unpinned paths are explored.
#![no_main]

use libfuzzer_sys::fuzz_target;
use thinkledger::audit::verify_export;

/// The key of the ledger that made the seed exports in `corpus/verify_export/` (each seed starts
/// with its flag byte), so mutations of a valid, pinned export are explored.
const PINNED: &str = "thinkledger/02d6a34c-2991-43ba-9edc-257bf334c99b+87ac4dca+AfqmlfojZCSAhNJRb0zS1aKSI2sOfzcxfxJHnzRxkX5m";

fuzz_target!(|data: &[u8]| {
    let (pinned, document) = match data.split_first() {
        Some((flag, rest)) => (flag & 1 == 1, rest),
        None => (false, data),
    };
    let report = verify_export(document, pinned.then_some(PINNED), None);
    assert_eq!(report.passed, report.problems.is_empty());
    assert!(report.problems.iter().all(|p| !p.detail.is_empty() && !p.path.is_empty()));
});
