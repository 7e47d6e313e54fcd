//! The argument rules `thinkledger.cognition.argument/2`: where a passage infers something (its
//! inference markers and the conclusion each introduces), whether it argues at all, and the
//! fallacies [`super::fallacies`] finds in it; then the seed's four quality measures, lowered
//! by the findings, and the strengths and weaknesses that follow from them (docs/cognition.md
//! gives every rule and its figures).
//!
//! **Measured, not adopted.** On the second held-out set (its first run) argument/2 as a whole
//! ([`quality`], [`judge`]) ordered sound above fallacious passages no better than features/1,
//! found fewer than half the fallacies and flagged three sound passages, so `analyze_reasoning`
//! does not answer with it: it answers with features/2 ([`super::features2`]), which takes only
//! [`assess`]'s circular and hasty-generalisation findings. The rest is kept, tested and
//! measured by `argument_evaluation`, for the next attempt.
//!
//! The premises of a conclusion are the whole passage around it, not only the clause beside
//! "because" or "so". Words are compared as concepts: lower-cased, lightly stemmed, and mapped
//! to a few synonym groups (reliable/dependable/trust, fair/just, lower/less/drop, …), with a
//! negation in the three words before a grouped word turning it into the group's opposite
//! ("doesn't break" is reliable).
//!
//! Pure (the non-sequitur test compares potion-base-2M vectors, a table lookup compiled into
//! the binary). Must not know MCP or the ledger.
//!
//! The passage is read by `passage` (tokens, sentences, clauses, inference links), `concepts`
//! (stemmed words and synonym groups) and `evidence`; the findings are [`super::fallacies`]';
//! the measures `scores`'.

use schemars::JsonSchema;
use serde::Serialize;

use super::bias::Span;
use super::fallacies;

mod concepts;
mod evidence;
mod passage;
mod scores;

pub(super) use concepts::{PRONOUNS, STOP, concept_set, concepts, has_digit, polarity};
pub(super) use evidence::{EXACT_NUMBERS, OBSERVED, evidence};
pub(super) use passage::{Passage, Token, clauses, compile, judges, tokens};
pub(super) use scores::round2;
pub use scores::{NEUTRAL, judge, overall, quality};

/// The rule set and version every answer made by these rules names.
pub const RULES: &str = "thinkledger.cognition.argument/2";

/// The fallacies the rules name.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum Fallacy {
    /// The conclusion restates what the premises already say.
    Circular,
    /// A general or absolute claim resting on a few cases, or on none.
    HastyGeneralisation,
    /// Two options (or one) offered as the only ones.
    FalseDilemma,
    /// A person's standing given as the reason, without evidence for the claim.
    AppealToAuthority,
    /// A conclusion unrelated to everything before it.
    NonSequitur,
    /// What many do or believe given as the reason it is right.
    Bandwagon,
}

impl Fallacy {
    /// The label used in answers, events and the labelled sets.
    pub fn label(self) -> &'static str {
        match self {
            Self::Circular => "circular",
            Self::HastyGeneralisation => "hasty_generalisation",
            Self::FalseDilemma => "false_dilemma",
            Self::AppealToAuthority => "appeal_to_authority",
            Self::NonSequitur => "non_sequitur",
            Self::Bandwagon => "bandwagon",
        }
    }

    /// The quality measure the fallacy lowers.
    pub fn lowered(self) -> Measure {
        self.lowers().0
    }

    /// The quality measure the fallacy lowers, and by how much at full confidence.
    pub(super) fn lowers(self) -> (Measure, f64) {
        match self {
            Self::Circular | Self::NonSequitur => (Measure::LogicalValidity, 0.6),
            Self::FalseDilemma => (Measure::LogicalValidity, 0.5),
            Self::HastyGeneralisation | Self::AppealToAuthority | Self::Bandwagon => {
                (Measure::EvidenceSupport, 0.5)
            }
        }
    }

    pub(super) fn name(self) -> &'static str {
        match self {
            Self::Circular => "Circular reasoning",
            Self::HastyGeneralisation => "Hasty generalisation",
            Self::FalseDilemma => "False dilemma",
            Self::AppealToAuthority => "Appeal to authority",
            Self::NonSequitur => "Non sequitur",
            Self::Bandwagon => "Bandwagon",
        }
    }

    pub(super) fn advice(self) -> &'static str {
        match self {
            Self::Circular => "Give a reason that does not already assume the conclusion",
            Self::HastyGeneralisation => {
                "Narrow the claim to the cases observed, or cite enough cases to support it"
            }
            Self::FalseDilemma => "Name the other options and say why they are ruled out",
            Self::AppealToAuthority => "Cite the evidence behind the expert's view, not the expert",
            Self::NonSequitur => "Show the steps that connect the premises to the conclusion",
            Self::Bandwagon => "Give evidence that the choice is right, not that it is popular",
        }
    }
}

/// A quality measure a finding lowers.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Measure {
    LogicalValidity,
    EvidenceSupport,
}

impl Measure {
    /// The measure's field name in `quality`.
    pub fn field(self) -> &'static str {
        match self {
            Self::LogicalValidity => "logicalValidity",
            Self::EvidenceSupport => "evidenceSupport",
        }
    }
}

/// One fallacy found.
#[derive(Debug, Clone, PartialEq)]
pub struct Finding {
    pub fallacy: Fallacy,
    /// Where the offending clause or sentence is (byte offsets into the text).
    pub span: Span,
    /// 0–1: how sure the rule is (it scales how much the measure is lowered).
    pub confidence: f64,
    /// Why, in the rules' words (never the caller's).
    pub reason: &'static str,
}

/// What the rules make of a passage.
#[derive(Debug, Clone, PartialEq)]
pub struct Assessment {
    /// False when the text states no argument (no inference, no claim with support): nothing
    /// is scored then.
    pub assessed: bool,
    /// The inference markers found (because, so, therefore, it follows that, …).
    pub inferences: usize,
    pub findings: Vec<Finding>,
}

/// Finds the passage's inferences and fallacies.
pub fn assess(text: &str) -> Assessment {
    let p = Passage::new(text);
    let mut findings = Vec::new();
    findings.extend(fallacies::hasty(&p));
    findings.extend(fallacies::bandwagon(&p));
    findings.extend(fallacies::authority(&p));
    findings.extend(fallacies::dilemma(&p));
    // A restatement with its scope widened (a few cases → all) or its subject swapped (others
    // → us) is that fallacy, not circularity.
    let widened = findings.iter().any(|f| {
        f.fallacy == Fallacy::Bandwagon
            || (f.fallacy == Fallacy::HastyGeneralisation && f.reason == fallacies::FEW_CASES)
    });
    if !widened {
        findings.extend(fallacies::circular(&p));
    }
    findings.extend(fallacies::non_sequitur(&p));
    let assessed = !p.links.is_empty() || !findings.is_empty() || p.claims_with_support();
    Assessment {
        assessed,
        inferences: p.links.len(),
        findings,
    }
}

#[cfg(test)]
mod tests {
    use super::super::features;
    use super::concepts::stem;
    use super::passage::sentences;
    use super::*;

    fn kinds(text: &str) -> Vec<&'static str> {
        assess(text)
            .findings
            .iter()
            .map(|f| f.fallacy.label())
            .collect()
    }

    #[test]
    fn the_issue_examples_are_findings_not_strengths() {
        let text = "The sky is blue because it is blue.";
        let a = assess(text);
        assert_eq!(kinds(text), ["circular"]);
        let x = features::count(text, &[], None);
        let d = features::dimensions(&x);
        let q = quality(text, &x, &d, &a);
        assert!(q.logical_validity < 0.7, "{q:?}");
        let (strengths, weaknesses, _) = judge(&x, &q, &a);
        assert!(
            !strengths
                .iter()
                .any(|s| s.starts_with("Premises are linked")),
            "{strengths:?}"
        );
        assert!(
            weaknesses
                .iter()
                .any(|w| w.starts_with("Circular reasoning (bytes 0–")),
            "{weaknesses:?}"
        );

        let text = "All users hate the new UI. Therefore we must roll it back.";
        let a = assess(text);
        assert_eq!(kinds(text), ["hasty_generalisation"]);
        let x = features::count(text, &[], None);
        let q = quality(text, &x, &features::dimensions(&x), &a);
        let (strengths, _, _) = judge(&x, &q, &a);
        assert!(
            !strengths
                .iter()
                .any(|s| s == "No unsupported absolute claims"),
            "{strengths:?}"
        );
    }

    #[test]
    fn text_without_an_argument_is_not_assessed() {
        for text in [
            "The meeting has been moved to Thursday at ten in the small conference room.",
            "Since moving to Berlin last spring, I have been taking German lessons twice a week.",
            "What time does the library open on Sundays?",
        ] {
            let a = assess(text);
            assert!(!a.assessed, "{text}: {a:?}");
            let x = features::count(text, &[], None);
            let q = quality(text, &x, &features::dimensions(&x), &a);
            assert_eq!(overall(&q), NEUTRAL);
            let (s, w, r) = judge(&x, &q, &a);
            assert!(s.is_empty() && w.is_empty() && r[0].starts_with("Not assessed"));
        }
    }

    #[test]
    fn structure_reads_markers_sentences_and_concepts() {
        assert_eq!(
            sentences("Dr. Patel says so. Then we go."),
            [(0, 17), (18, 29)]
        );
        let p = Passage::new("Since it doesn't break, we can count on it.");
        assert_eq!(p.links.len(), 1);
        assert_eq!(
            &p.text[p.links[0].conclusion.0..p.links[0].conclusion.1],
            " we can count on it"
        );
        assert_eq!(concepts(&tokens("it doesn't break")), ["RELIABLE"]);
        assert_eq!(stem("dependencies"), "dependency");
        assert_eq!(stem("boxes"), "box");
        assert_eq!(stem("makes"), "make");
    }
}
