//! `thinkledger.cognition.features/2`, the rules `analyze_reasoning` answers with: features/1's
//! four quality measures (src/app/cognition/features.rs) with two of argument/2's findings
//! applied — a circular restatement lowers logical validity, a hasty generalisation or
//! unsupported absolute lowers evidence support — and strengths that agree with them ("Premises
//! are linked to conclusions" not for a circular argument, "No unsupported absolute claims" not
//! beside an absolute). argument/2 as a whole was measured on a fresh held-out set and not
//! adopted (docs/cognition.md); these two mechanisms were, as they did not worsen that set's
//! ordering.
//!
//! Pure. Must not know MCP or the ledger.

use super::argument::{Assessment, Fallacy, Finding, Measure, round2};
use super::features::{self, Dimensions, Features, Quality};

/// The rule set and version `analyze_reasoning` names.
pub const RULES: &str = "thinkledger.cognition.features/2";

/// The findings of argument/2 that features/2 takes: circular and hasty generalisation.
pub fn taken(a: &Assessment) -> Vec<&Finding> {
    a.findings
        .iter()
        .filter(|f| matches!(f.fallacy, Fallacy::Circular | Fallacy::HastyGeneralisation))
        .collect()
}

/// features/1's measures, a circular finding lowering logical validity (0.6 × confidence) and a
/// hasty generalisation or unsupported absolute lowering evidence support (0.5 × confidence).
/// Every text is scored.
pub fn quality(text: &str, x: &Features, d: &Dimensions, a: &Assessment) -> Quality {
    let mut q = features::quality(text, x, d);
    for f in taken(a) {
        let (measure, weight) = f.fallacy.lowers();
        match measure {
            Measure::LogicalValidity => {
                q.logical_validity = round2((q.logical_validity - weight * f.confidence).max(0.0));
            }
            Measure::EvidenceSupport => {
                q.evidence_support = round2((q.evidence_support - weight * f.confidence).max(0.0));
            }
        }
    }
    q
}

/// features/1's strengths and weaknesses, with each finding named (type, byte span, reason,
/// the measure it lowers) and no strength a finding contradicts.
pub fn judge(x: &Features, q: &Quality, a: &Assessment) -> (Vec<String>, Vec<String>, Vec<String>) {
    let found = taken(a);
    let circular = found.iter().any(|f| f.fallacy == Fallacy::Circular);
    let absolute = found
        .iter()
        .any(|f| f.fallacy == Fallacy::HastyGeneralisation);
    let (strengths, mut weaknesses, mut recommendations) = features::judge(x, q);
    let mut strengths: Vec<String> = strengths
        .into_iter()
        .filter(|s| {
            let contradicted = (circular && s.starts_with("Premises are linked"))
                || (absolute && s == "No unsupported absolute claims");
            !contradicted
        })
        .collect();
    if absolute
        && !weaknesses
            .iter()
            .any(|w| w.starts_with("Absolute or unsupported"))
    {
        weaknesses.push("Absolute or unsupported claims weaken validity".to_owned());
        recommendations.push("Qualify absolute claims".to_owned());
    }
    for f in found {
        weaknesses.push(format!(
            "{} (bytes {}–{}): {}; lowers {}",
            f.fallacy.name(),
            f.span.start,
            f.span.end,
            f.reason,
            f.fallacy.lowered().field()
        ));
        recommendations.push(f.fallacy.advice().to_owned());
    }
    strengths.dedup();
    (strengths, weaknesses, recommendations)
}

#[cfg(test)]
mod tests {
    use super::super::argument::assess;
    use super::*;

    fn answer(text: &str) -> (Quality, Vec<String>, Vec<String>) {
        let x = features::count(text, &[], None);
        let d = features::dimensions(&x);
        let a = assess(text);
        let q = quality(text, &x, &d, &a);
        let (s, w, _) = judge(&x, &q, &a);
        (q, s, w)
    }

    #[test]
    fn the_issue_examples_get_no_contradicting_strength() {
        let (q, strengths, weaknesses) = answer("The sky is blue because it is blue.");
        assert!(q.logical_validity < 1.0, "{q:?}");
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
        let (_, strengths, weaknesses) =
            answer("All users hate the new UI. Therefore we must roll it back.");
        assert!(
            !strengths
                .iter()
                .any(|s| s == "No unsupported absolute claims"),
            "{strengths:?}"
        );
        assert!(
            weaknesses
                .iter()
                .any(|w| w.starts_with("Hasty generalisation")),
            "{weaknesses:?}"
        );
    }

    #[test]
    fn a_sound_passage_keeps_features_1_answer() {
        let text = "The load tests showed the database saturating at 2,000 requests per second, \
                    and we expect 3,500 at peak, so we should add a read replica before the launch.";
        let x = features::count(text, &[], None);
        let d = features::dimensions(&x);
        let (q, strengths, _) = answer(text);
        assert_eq!(q, features::quality(text, &x, &d));
        assert!(
            strengths
                .iter()
                .any(|s| s.starts_with("Premises are linked"))
        );
    }
}
