//! Evidence: whether a stretch of a passage cites numbers or observations.
//!
//! Must not know: what a finding or a score makes of it.

use super::concepts::has_digit;
use super::passage::Token;
use crate::app::cognition::argument_words::{EVIDENCE_NOUNS, NUMBER_WORDS};

/// Counts that are exact (a crowd of "twelve labs" is counted, "millions" is not).
pub(in crate::app::cognition) const EXACT_NUMBERS: &[&str] = &[
    "one", "two", "three", "four", "five", "six", "seven", "eight", "nine", "ten", "eleven",
    "twelve", "fifteen", "twenty", "thirty", "forty", "fifty",
];
/// Verbs that report an observation.
pub(in crate::app::cognition) const OBSERVED: &[&str] = &[
    "found",
    "measured",
    "measure",
    "showed",
    "recorded",
    "tested",
    "observed",
    "compared",
    "sampled",
    "surveyed",
    "confirmed",
    "logged",
    "monitored",
    "replicated",
    "analysed",
    "analyzed",
    "counted",
    "audited",
    "inspected",
    "tracked",
    "ran",
    "studied",
    "reported",
];

/// Whether tokens carry evidence: a number, an evidence noun or an observation verb.
pub(in crate::app::cognition) fn evidence(ts: &[Token]) -> bool {
    ts.iter().any(|t| {
        let w = t.word.as_str();
        has_digit(w)
            || NUMBER_WORDS.contains(&w)
            || EVIDENCE_NOUNS.contains(&w)
            || OBSERVED.contains(&w)
    })
}
