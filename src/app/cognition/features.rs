//! The features `assess_confidence` and `analyze_reasoning` are computed from (docs/cognition.md
//! gives each formula): evidence count and quality, hedges, unsupported absolutes,
//! contradictions, connectives, and how much of the context the reasoning covers.
//!
//! Pure. Must not know MCP or the ledger.

use std::collections::BTreeSet;

use schemars::JsonSchema;
use serde::Serialize;

use super::bias;
use super::emotion::words;

/// The rule set and version every answer names.
pub const RULES: &str = "thinkledger.cognition.features/1";

const HEDGES: &[&str] = &[
    "might",
    "may",
    "maybe",
    "perhaps",
    "possibly",
    "probably",
    "likely",
    "unlikely",
    "could",
    "seems",
    "seem",
    "appears",
    "appear",
    "suggests",
    "suggest",
    "assume",
    "assuming",
    "unclear",
    "uncertain",
    "guess",
    "roughly",
    "approximately",
    "estimate",
    "believe",
    "think",
];

const ABSOLUTES: &[&str] = &[
    "always",
    "never",
    "all",
    "none",
    "every",
    "everyone",
    "nobody",
    "certainly",
    "definitely",
    "undoubtedly",
    "guaranteed",
    "proves",
    "proven",
    "obviously",
    "clearly",
    "impossible",
    "optimal",
    "perfect",
];

const CONNECTIVES: &[&str] = &[
    "because",
    "therefore",
    "thus",
    "hence",
    "since",
    "consequently",
    "so",
    "implies",
    "given",
    "accordingly",
    "due",
];

const SOURCES: &[&str] = &[
    "study",
    "studies",
    "benchmark",
    "benchmarks",
    "data",
    "test",
    "tests",
    "measured",
    "measurement",
    "report",
    "survey",
    "metrics",
    "metric",
    "logs",
    "experiment",
    "results",
    "analysis",
    "according",
    "source",
    "paper",
    "production",
    "trial",
    "audit",
    "sample",
];

const ALTERNATIVES: &[&str] = &[
    "however",
    "although",
    "alternatively",
    "alternative",
    "alternatives",
    "risk",
    "risks",
    "limitation",
    "limitations",
    "counterargument",
    "unless",
    "tradeoff",
    "trade-off",
    "downside",
    "caveat",
    "edge",
];

const NEGATIONS: &[&str] = &[
    "not", "no", "never", "cannot", "cant", "wont", "isnt", "doesnt", "dont",
];

const STOP: &[&str] = &[
    "the", "and", "for", "that", "this", "with", "from", "are", "was", "were", "will", "have",
    "has", "had", "but", "not", "our", "their", "its", "into", "than", "then", "they", "them",
    "what", "which", "when", "where", "would", "should", "could", "been", "being", "also", "more",
    "most", "very", "some", "such", "only", "over", "about", "there", "these", "those",
];

/// What was counted in a text.
#[derive(Debug, Clone, PartialEq, Serialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct Features {
    pub sentences: usize,
    pub evidence_count: usize,
    /// Evidence items with a number in them.
    pub quantified_evidence: usize,
    /// Evidence items naming a source (study, benchmark, data, …).
    pub sourced_evidence: usize,
    pub hedges: usize,
    pub unsupported_absolutes: usize,
    /// Pairs of sentences sharing two content words where only one is negated.
    pub contradictions: usize,
    pub connectives: usize,
    /// Words acknowledging alternatives, risks or limits.
    pub alternatives: usize,
    /// Share of the context's content words the reasoning and evidence use; null without a
    /// context.
    pub context_coverage: Option<f64>,
    /// The highest severity of a bias `detect_bias`'s rules find, 0 without one.
    pub max_bias_severity: f64,
}

fn content(words: &[String]) -> BTreeSet<String> {
    words
        .iter()
        .filter(|w| w.len() > 3 && !STOP.contains(&w.as_str()))
        .cloned()
        .collect()
}

fn count_in(words: &[String], list: &[&str]) -> usize {
    words.iter().filter(|w| list.contains(&w.as_str())).count()
}

fn sentences(text: &str) -> Vec<&str> {
    text.split(['.', '!', '?', ';', '\n'])
        .map(str::trim)
        .filter(|s| !s.is_empty())
        .collect()
}

/// Counts the features of reasoning, its evidence and its context.
pub fn count(reasoning: &str, evidence: &[String], context: Option<&str>) -> Features {
    let tokens = words(reasoning);
    let parts = sentences(reasoning);
    let mut contradictions = 0;
    let split: Vec<(BTreeSet<String>, bool)> = parts
        .iter()
        .map(|s| {
            let w = words(s);
            let negated = w.iter().any(|x| NEGATIONS.contains(&x.as_str()));
            (content(&w), negated)
        })
        .collect();
    for (i, (a, na)) in split.iter().enumerate() {
        for (b, nb) in &split[i + 1..] {
            if na != nb && a.intersection(b).count() >= 2 {
                contradictions += 1;
            }
        }
    }
    let has_number = |s: &str| s.chars().any(|c| c.is_ascii_digit());
    let quantified = evidence.iter().filter(|e| has_number(e)).count();
    let sourced = evidence
        .iter()
        .filter(|e| words(e).iter().any(|w| SOURCES.contains(&w.as_str())))
        .count();
    let context_coverage = context.filter(|c| !c.trim().is_empty()).map(|c| {
        let wanted = content(&words(c));
        let mut have = content(&tokens);
        for e in evidence {
            have.extend(content(&words(e)));
        }
        if wanted.is_empty() {
            1.0
        } else {
            #[allow(clippy::cast_precision_loss)] // word counts
            let share = wanted.intersection(&have).count() as f64 / wanted.len() as f64;
            share
        }
    });
    let max_bias_severity = bias::detect(reasoning)
        .iter()
        .map(|f| f.severity)
        .fold(0.0, f64::max);
    Features {
        sentences: parts.len(),
        evidence_count: evidence.iter().filter(|e| !e.trim().is_empty()).count(),
        quantified_evidence: quantified,
        sourced_evidence: sourced,
        hedges: count_in(&tokens, HEDGES),
        unsupported_absolutes: if evidence.is_empty() {
            count_in(&tokens, ABSOLUTES)
        } else {
            0
        },
        contradictions,
        connectives: count_in(&tokens, CONNECTIVES),
        alternatives: count_in(&tokens, ALTERNATIVES),
        context_coverage,
        max_bias_severity,
    }
}

fn round2(x: f64) -> f64 {
    (x * 100.0).round() / 100.0
}

#[allow(clippy::cast_precision_loss)] // small counts
fn f(n: usize) -> f64 {
    n as f64
}

/// The seed's five confidence dimensions.
#[derive(Debug, Clone, PartialEq, Serialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct Dimensions {
    pub evidence_quality: f64,
    pub reasoning_coherence: f64,
    pub completeness: f64,
    pub uncertainty_level: f64,
    pub bias_freedom: f64,
}

/// The dimensions from the features (formulas in docs/cognition.md).
pub fn dimensions(x: &Features) -> Dimensions {
    let n = f(x.evidence_count);
    let per_item = if x.evidence_count == 0 {
        0.0
    } else {
        0.4 + 0.3 * f(x.quantified_evidence) / n + 0.3 * f(x.sourced_evidence) / n
    };
    let evidence_quality = per_item * (1.0 - (-n / 2.0).exp());
    let sentences = f(x.sentences.max(1));
    let coherence = 0.5 + 0.3 * (f(x.connectives) / sentences).min(1.0) - 0.2 * f(x.contradictions)
        + if x.sentences > 1 { 0.2 } else { 0.0 };
    let coverage = x.context_coverage.unwrap_or(0.5);
    let completeness = 0.5 * coverage
        + 0.25 * if x.connectives > 0 { 1.0 } else { 0.0 }
        + 0.25 * if x.alternatives > 0 { 1.0 } else { 0.0 };
    let uncertainty = ((f(x.hedges) + f(x.contradictions)) / sentences).min(1.0);
    Dimensions {
        evidence_quality: round2(evidence_quality.clamp(0.0, 1.0)),
        reasoning_coherence: round2(coherence.clamp(0.0, 1.0)),
        completeness: round2(completeness.clamp(0.0, 1.0)),
        uncertainty_level: round2(uncertainty),
        bias_freedom: round2((1.0 - x.max_bias_severity).clamp(0.0, 1.0)),
    }
}

/// The weighted mean of the dimensions: 0.3 evidence, 0.25 coherence, 0.2 completeness, 0.15
/// bias freedom, 0.1 certainty (1 − uncertainty).
pub fn overall(d: &Dimensions) -> f64 {
    round2(
        0.3 * d.evidence_quality
            + 0.25 * d.reasoning_coherence
            + 0.2 * d.completeness
            + 0.15 * d.bias_freedom
            + 0.1 * (1.0 - d.uncertainty_level),
    )
}

/// The seed's interpretation bands.
pub fn interpretation(overall: f64) -> &'static str {
    if overall >= 0.75 {
        "High confidence - reasoning is well-supported"
    } else if overall >= 0.5 {
        "Moderate confidence - reasoning is partly supported"
    } else if overall >= 0.3 {
        "Low confidence - reasoning needs more support"
    } else {
        "Very low confidence - reasoning is largely unsupported"
    }
}

/// Warnings and recommendations, one of each per feature that falls short.
pub fn advice(x: &Features, d: &Dimensions) -> (Vec<String>, Vec<String>) {
    let mut warnings = Vec::new();
    let mut recommendations = Vec::new();
    if x.evidence_count == 0 {
        warnings.push("No evidence was given".to_owned());
        recommendations.push("List the evidence the reasoning rests on".to_owned());
    } else if x.quantified_evidence == 0 {
        warnings.push("No evidence item is quantified".to_owned());
        recommendations.push("Add measurements or figures to the evidence".to_owned());
    }
    if x.unsupported_absolutes > 0 {
        warnings.push(format!(
            "{} absolute claim(s) without evidence",
            x.unsupported_absolutes
        ));
        recommendations.push("Qualify absolute claims or support them".to_owned());
    }
    if x.contradictions > 0 {
        warnings.push(format!(
            "{} possible contradiction(s) between sentences",
            x.contradictions
        ));
        recommendations.push("Resolve or explain the contradicting statements".to_owned());
    }
    if d.uncertainty_level >= 0.5 {
        warnings.push("Heavily hedged reasoning".to_owned());
        recommendations.push("Find what would settle the open questions".to_owned());
    }
    if x.alternatives == 0 {
        warnings.push("No alternatives, risks or limits are considered".to_owned());
        recommendations.push("Consider counterarguments and edge cases".to_owned());
    }
    if x.context_coverage.is_some_and(|c| c < 0.5) {
        warnings.push("The reasoning covers less than half of the context".to_owned());
        recommendations.push("Address the context's points explicitly".to_owned());
    }
    if x.max_bias_severity > 0.0 {
        warnings.push("A cognitive bias pattern was found (see detect_bias)".to_owned());
        recommendations.push("Run detect_bias and apply its corrections".to_owned());
    }
    (warnings, recommendations)
}

/// The seed's reasoning-quality measures (`analyze_reasoning`).
#[derive(Debug, Clone, PartialEq, Serialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct Quality {
    pub coherence: f64,
    pub completeness: f64,
    pub logical_validity: f64,
    pub evidence_support: f64,
}

/// Quality from the features of a reasoning text without separate evidence: evidence support
/// counts the text's own numbers and source words.
pub fn quality(reasoning: &str, x: &Features, d: &Dimensions) -> Quality {
    let tokens = words(reasoning);
    let numbers = tokens
        .iter()
        .filter(|w| w.chars().any(|c| c.is_ascii_digit()))
        .count();
    let sources = count_in(&tokens, SOURCES);
    let support = 1.0 - (-(f(numbers) + f(sources) + 0.5 * f(x.connectives)) / 2.0).exp();
    let validity = 1.0
        - 0.15 * f(count_in(&tokens, ABSOLUTES))
        - 0.3 * f(x.contradictions)
        - if x.connectives == 0 { 0.2 } else { 0.0 };
    Quality {
        coherence: d.reasoning_coherence,
        completeness: d.completeness,
        logical_validity: round2(validity.clamp(0.0, 1.0)),
        evidence_support: round2(support.clamp(0.0, 1.0)),
    }
}

/// Strengths and weaknesses named from the quality measures and features.
pub fn judge(x: &Features, q: &Quality) -> (Vec<String>, Vec<String>, Vec<String>) {
    let mut strengths = Vec::new();
    let mut weaknesses = Vec::new();
    let mut recommendations = Vec::new();
    if x.connectives > 0 {
        strengths.push("Premises are linked to conclusions (because, therefore, …)".to_owned());
    } else {
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
    if q.logical_validity < 0.7 {
        weaknesses.push("Absolute or unsupported claims weaken validity".to_owned());
        recommendations.push("Qualify absolute claims".to_owned());
    } else {
        strengths.push("No unsupported absolute claims".to_owned());
    }
    (strengths, weaknesses, recommendations)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn evidence_raises_and_absolutes_lower_confidence() {
        let reasoning =
            "Based on benchmark results, the optimization will improve throughput by 40%";
        let good = count(
            reasoning,
            &[
                "Benchmark results showing 40% improvement".into(),
                "Load test data".into(),
            ],
            Some("Production deployment decision"),
        );
        let bare = count("This is always the optimal choice, obviously.", &[], None);
        let (dg, db) = (dimensions(&good), dimensions(&bare));
        assert!(dg.evidence_quality > db.evidence_quality);
        assert!(overall(&dg) > overall(&db));
        assert!(bare.unsupported_absolutes >= 2);
    }

    #[test]
    fn a_negated_repeat_is_a_contradiction() {
        let x = count(
            "The cache improves latency. The cache does not improve latency.",
            &[],
            None,
        );
        assert_eq!(x.contradictions, 1);
    }
}
