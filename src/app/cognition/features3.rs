//! `thinkledger.cognition.features/3`, the rules `analyze_reasoning` answers with: features/1's
//! four quality measures (src/app/cognition/features.rs) with argument/3's findings applied —
//! circular reasoning and false dilemmas lower logical validity; hasty generalisations and
//! unsupported absolutes, appeals to authority and bandwagons lower evidence support — strengths
//! that agree with them, and a neutral answer for a text that states no argument. argument/3's
//! non-sequitur test is not applied: it judges relatedness with a 2M-parameter static embedding,
//! which flagged everyday inferences ("The roads are icy, so I'll take the train") on held-out
//! passages (docs/cognition.md).
//!
//! Pure. Must not know MCP or the ledger.

use super::argument::{Assessment, Fallacy, Finding, Measure, NEUTRAL, NOT_ASSESSED, round2};
use super::features::{self, Dimensions, Features, Quality};

/// The rule set and version `analyze_reasoning` names.
pub const RULES: &str = "thinkledger.cognition.features/3";

/// The findings of argument/3 that features/3 takes: all but the non sequitur.
pub fn taken(a: &Assessment) -> Vec<&Finding> {
    a.findings
        .iter()
        .filter(|f| f.fallacy != Fallacy::NonSequitur)
        .collect()
}

/// features/1's measures, each finding lowering its measure by its weight × confidence
/// (circular 0.6 and false dilemma 0.5 of logical validity; hasty generalisation, appeal to
/// authority and bandwagon 0.5 of evidence support). A text that states no argument gets the
/// neutral 0.5 for each.
pub fn quality(text: &str, x: &Features, d: &Dimensions, a: &Assessment) -> Quality {
    if !a.assessed {
        return Quality {
            coherence: NEUTRAL,
            completeness: NEUTRAL,
            logical_validity: NEUTRAL,
            evidence_support: NEUTRAL,
        };
    }
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
/// the measure it lowers) and no strength a finding contradicts; for a text that states no
/// argument, nothing but the recommendation saying so.
pub fn judge(x: &Features, q: &Quality, a: &Assessment) -> (Vec<String>, Vec<String>, Vec<String>) {
    if !a.assessed {
        return (Vec::new(), Vec::new(), vec![NOT_ASSESSED.to_owned()]);
    }
    let found = taken(a);
    let circular = found.iter().any(|f| f.fallacy == Fallacy::Circular);
    let absolute = found
        .iter()
        .any(|f| f.fallacy == Fallacy::HastyGeneralisation);
    let unsupported = found.iter().any(|f| {
        matches!(
            f.fallacy,
            Fallacy::AppealToAuthority | Fallacy::Bandwagon | Fallacy::HastyGeneralisation
        )
    });
    let (strengths, mut weaknesses, mut recommendations) = features::judge(x, q);
    let mut strengths: Vec<String> = strengths
        .into_iter()
        .filter(|s| {
            let contradicted = (circular && s.starts_with("Premises are linked"))
                || (absolute && s == "No unsupported absolute claims")
                || (unsupported && s == "Claims cite figures or sources");
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

    /// The four shapes features/3 adds to features/2, each named as a weakness with its
    /// measure lowered below features/1's, and no strength left that the finding contradicts.
    #[test]
    fn dilemmas_authorities_and_crowds_are_named() {
        for (text, name, lowered) in [
            (
                "You back the new surveillance bill or you're comfortable with criminals walking \
                 free. There's no middle ground here.",
                "False dilemma",
                Measure::LogicalValidity,
            ),
            (
                "The style guide was written by our most senior engineers, so there's no point \
                 questioning its rule that every function must be under twenty lines.",
                "Appeal to authority",
                Measure::EvidenceSupport,
            ),
            (
                "Nearly everyone in the neighbourhood group says the new cycle lane is \
                 dangerous, so it is.",
                "Bandwagon",
                Measure::EvidenceSupport,
            ),
            (
                "Why should we trust the audit? The audit report itself states that its \
                 methodology is rigorous, and a rigorous audit is one you can trust.",
                "Circular reasoning",
                Measure::LogicalValidity,
            ),
        ] {
            let x = features::count(text, &[], None);
            let before = features::quality(text, &x, &features::dimensions(&x));
            let (q, strengths, weaknesses) = answer(text);
            assert!(
                weaknesses.iter().any(|w| w.starts_with(name)),
                "{text}: {weaknesses:?}"
            );
            let (now, then) = match lowered {
                Measure::LogicalValidity => (q.logical_validity, before.logical_validity),
                Measure::EvidenceSupport => (q.evidence_support, before.evidence_support),
            };
            assert!(now < then, "{text}: {q:?} vs {before:?}");
            if lowered == Measure::EvidenceSupport {
                assert!(
                    !strengths
                        .iter()
                        .any(|s| s == "Claims cite figures or sources"),
                    "{text}: {strengths:?}"
                );
            }
        }
    }

    /// A description, a narrative "so" and a "since" of time state no argument: neutral
    /// measures, no strength or weakness, and the recommendation saying why.
    #[test]
    fn text_without_an_argument_gets_the_neutral_answer() {
        for text in [
            "The old mill sits at the bend in the river, its brick chimney half-covered in ivy \
             and its windows boarded up since the eighties.",
            "When I got to the station the platform was empty, so I sat on a bench and watched \
             the pigeons for twenty minutes until the next train pulled in.",
            "The meeting moved to Thursday. Bring the Q3 figures.",
        ] {
            let (q, strengths, weaknesses) = answer(text);
            assert_eq!(
                [
                    q.coherence,
                    q.completeness,
                    q.logical_validity,
                    q.evidence_support
                ],
                [NEUTRAL; 4],
                "{text}"
            );
            assert!(strengths.is_empty() && weaknesses.is_empty(), "{text}");
            let x = features::count(text, &[], None);
            let a = assess(text);
            let (_, _, r) = judge(&x, &q, &a);
            assert_eq!(r, [NOT_ASSESSED]);
        }
        // Advice with its reason is an argument.
        assert!(
            assess(
                "Don't leave the spare batteries in the car over summer; heat speeds up the \
                 chemical reactions that degrade them."
            )
            .assessed
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
