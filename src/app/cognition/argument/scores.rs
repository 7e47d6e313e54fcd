//! Scores: the seed's four quality measures, lowered by the findings, and the strengths,
//! weaknesses and suggestions that follow from them.
//!
//! Must not know: how a finding was found (that is the passage's and [`super::super::fallacies`]'s).

use super::super::fallacies;
use super::super::features::{self, Dimensions, Features, Quality};
use super::concepts::has_digit;
use super::passage::{sentences, tokens};
use super::{Assessment, Fallacy, Measure};
use crate::app::cognition::argument_words::CERTAINTY;

/// The neutral value of every measure of a text that is not assessed.
pub const NEUTRAL: f64 = 0.5;

/// The seed's quality measures: features/1's coherence and completeness; logical validity
/// from certainty words, universal claims without a figure beside them, contradictions and
/// whether anything is inferred; evidence support from the figures and source words
/// (features/1's); each lowered by the findings that bear on it. A text that is not assessed
/// gets the neutral 0.5 for each.
pub fn quality(text: &str, x: &Features, d: &Dimensions, a: &Assessment) -> Quality {
    if !a.assessed {
        return Quality {
            coherence: NEUTRAL,
            completeness: NEUTRAL,
            logical_validity: NEUTRAL,
            evidence_support: NEUTRAL,
        };
    }
    let base = features::quality(text, x, d);
    let ts = tokens(text);
    let certainty = ts
        .iter()
        .filter(|t| CERTAINTY.contains(&t.word.as_str()))
        .count();
    let lower = text.to_ascii_lowercase();
    let universals: usize = sentences(text)
        .iter()
        .filter(|(s, e)| !has_digit(&text[*s..*e]))
        .map(|(s, e)| fallacies::UNIVERSAL.find_iter(&lower[*s..*e]).count())
        .sum();
    let mut validity = 1.0
        - 0.15 * count(certainty)
        - 0.1 * count(universals)
        - 0.3 * count(x.contradictions)
        - if a.inferences == 0 { 0.1 } else { 0.0 };
    let mut support = base.evidence_support;
    for f in &a.findings {
        let (measure, weight) = f.fallacy.lowers();
        match measure {
            Measure::LogicalValidity => validity -= weight * f.confidence,
            Measure::EvidenceSupport => support -= weight * f.confidence,
        }
    }
    Quality {
        coherence: base.coherence,
        completeness: base.completeness,
        logical_validity: round2(validity.clamp(0.0, 1.0)),
        evidence_support: round2(support.clamp(0.0, 1.0)),
    }
}

/// The mean of the four measures: what the evaluation orders passages by.
pub fn overall(q: &Quality) -> f64 {
    (q.coherence + q.completeness + q.logical_validity + q.evidence_support) / 4.0
}

/// Strengths, weaknesses and recommendations that agree with the measures and findings.
pub fn judge(x: &Features, q: &Quality, a: &Assessment) -> (Vec<String>, Vec<String>, Vec<String>) {
    let mut strengths = Vec::new();
    let mut weaknesses = Vec::new();
    let mut recommendations = Vec::new();
    if !a.assessed {
        recommendations.push(
            "Not assessed: the text states no argument (no inference such as because, so or \
             therefore, and no claim with support). State a conclusion and the grounds for it \
             to have the reasoning assessed"
                .to_owned(),
        );
        return (strengths, weaknesses, recommendations);
    }
    for f in &a.findings {
        let (measure, _) = f.fallacy.lowers();
        weaknesses.push(format!(
            "{} (bytes {}–{}): {}; lowers {}",
            f.fallacy.name(),
            f.span.start,
            f.span.end,
            f.reason,
            measure.field()
        ));
        let advice = f.fallacy.advice().to_owned();
        if !recommendations.contains(&advice) {
            recommendations.push(advice);
        }
    }
    let validity_finding = a
        .findings
        .iter()
        .any(|f| f.fallacy.lowers().0 == Measure::LogicalValidity);
    if a.inferences > 0 && !validity_finding {
        strengths.push("Premises are linked to conclusions (because, therefore, …)".to_owned());
    } else if a.inferences == 0 {
        weaknesses.push("No stated link between premises and conclusion".to_owned());
        recommendations.push("Say why the conclusion follows (because …)".to_owned());
    }
    if q.evidence_support >= 0.6 {
        strengths.push("Claims cite figures or sources".to_owned());
    } else {
        weaknesses.push("Limited evidence".to_owned());
        recommendations.push("Gather more data".to_owned());
    }
    if x.alternatives > 0 {
        strengths.push("Alternatives or risks are considered".to_owned());
    } else {
        weaknesses.push("Missing alternative perspectives".to_owned());
        recommendations.push("Consider counterarguments".to_owned());
    }
    if x.contradictions > 0 {
        weaknesses.push("Statements that may contradict each other".to_owned());
        recommendations.push("Resolve the contradictions".to_owned());
    }
    let absolute = a
        .findings
        .iter()
        .any(|f| f.fallacy == Fallacy::HastyGeneralisation);
    if absolute || q.logical_validity < 0.7 {
        weaknesses.push("Absolute or unsupported claims weaken validity".to_owned());
        recommendations.push("Qualify absolute claims".to_owned());
    } else {
        strengths.push("No unsupported absolute claims".to_owned());
    }
    (strengths, weaknesses, recommendations)
}

#[allow(clippy::cast_precision_loss)] // small counts
fn count(n: usize) -> f64 {
    n as f64
}

pub(in crate::app::cognition) fn round2(x: f64) -> f64 {
    (x * 100.0).round() / 100.0
}
